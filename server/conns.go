package server

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// Connections: every connection the server accepts counts against Config.MaxOpenConns (set below
// the process's open-file limit, so that accept never fails for want of a descriptor), and, until a
// request on it is signed in (a valid session, or any request on a server without sign-in), against
// the caps of connections not signed in: Config.MaxPreAuthPerAddress per address and
// Config.MaxPreAuthConns in all. Once signed in, an HTTP connection (not a websocket: shares count
// those) counts against its student's Config.MaxHTTPConnsPerStudent.
//
// At a cap, the oldest connection that the cap counts and that may be closed makes room: one
// between requests (new or idle, signed in or not), or one not signed in whose request has been
// under way longer than Config.PreAuthRequestTimeout (a body that trickles in). At the cap of all
// connections not signed in, the address holding the most gives up its oldest closable one, or else
// its oldest (if it holds two more than the newcomer's address: beyond a fair share). Where nothing
// may be closed, the new connection is closed at once (at a student's cap, its request is answered
// 429). POST /join's body must arrive within Config.PreAuthRequestTimeout. So idle, half-open and
// half-sent connections (a slowloris), signed in or not, cannot take the server from anyone else,
// and /healthz and /join keep answering. http.Server's timeouts (Config.ReadTimeout and the rest)
// end what stays.

// connLimits counts the open connections, those not signed in, and each student's.
type connLimits struct {
	maxOpen, maxPre, maxPrePerAddr, maxPerStudent int
	// stall is how long a request not signed in may be under way before its connection may be closed.
	stall time.Duration

	mu        sync.Mutex
	all       map[*limitedConn]struct{}
	pre       map[*limitedConn]struct{}
	byAddr    map[string]map[*limitedConn]struct{}
	byStudent map[int64]map[*limitedConn]struct{}
}

func newConnLimits(maxOpen, maxPre, maxPrePerAddr, maxPerStudent int, stall time.Duration) *connLimits {
	return &connLimits{maxOpen: maxOpen, maxPre: maxPre, maxPrePerAddr: maxPrePerAddr, maxPerStudent: maxPerStudent, stall: stall,
		all: map[*limitedConn]struct{}{}, pre: map[*limitedConn]struct{}{}, byAddr: map[string]map[*limitedConn]struct{}{},
		byStudent: map[int64]map[*limitedConn]struct{}{}}
}

// limitedConn is an accepted connection, counted until it closes.
type limitedConn struct {
	net.Conn
	l        *connLimits
	addr     string
	accepted time.Time
	state    atomic.Int32 // its http.ConnState
	active   atomic.Int64 // when its current request began (StateActive), in Unix nanoseconds
	signed   atomic.Bool
	student  int64 // the student it is counted under (l.byStudent), 0 for none; l.mu guards it
	closed   sync.Once
}

// setState records c's http.ConnState at now.
func (c *limitedConn) setState(st http.ConnState, now time.Time) {
	if st == http.StateActive {
		c.active.Store(now.UnixNano())
	}
	c.state.Store(int32(st))
}

// limitListener admits connections under l's caps.
type limitListener struct {
	net.Listener
	l *connLimits
}

// Accept returns the next connection that the caps admit, closing those they do not.
func (ln *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := ln.Listener.Accept()
		if err != nil {
			return nil, err
		}
		lc := &limitedConn{Conn: c, l: ln.l, addr: addrKey(c.RemoteAddr()), accepted: time.Now()}
		if ln.l.admit(lc) {
			return lc, nil
		}
		_ = c.Close()
	}
}

// admit counts lc in, making room where a cap is reached by closing the oldest connection there
// that may be closed (oldestClosable); false when there is no room.
func (l *connLimits) admit(lc *limitedConn) bool {
	var evict []*limitedConn
	defer func() {
		for _, c := range evict {
			_ = c.Close()
		}
	}()
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.roomLocked(l.all, l.maxOpen, now, &evict) || !l.roomLocked(l.byAddr[lc.addr], l.maxPrePerAddr, now, &evict) {
		return false
	}
	if len(l.pre) >= l.maxPre {
		c := l.greediestLocked(lc.addr, now)
		if c == nil {
			c = l.oldestClosable(l.pre, now)
		}
		if c == nil {
			return false
		}
		evict = append(evict, c)
		l.forgetLocked(c)
		delete(l.all, c)
	}
	l.all[lc] = struct{}{}
	l.pre[lc] = struct{}{}
	if l.byAddr[lc.addr] == nil {
		l.byAddr[lc.addr] = map[*limitedConn]struct{}{}
	}
	l.byAddr[lc.addr][lc] = struct{}{}
	return true
}

// roomLocked makes room for one more connection in set, capped at limit, by uncounting its oldest
// closable connection and adding it to evict (to be closed once l.mu is released); false when set
// is full and none may be closed. l.mu is held.
func (l *connLimits) roomLocked(set map[*limitedConn]struct{}, limit int, now time.Time, evict *[]*limitedConn) bool {
	if len(set) < limit {
		return true
	}
	c := l.oldestClosable(set, now)
	if c == nil {
		return false
	}
	*evict = append(*evict, c)
	l.forgetLocked(c)
	delete(l.all, c)
	return true
}

// greediestLocked makes room among the connections not signed in at their cap: if the address that
// holds the most of them holds at least two more than addr (beyond a fair share), its oldest
// closable connection, else its oldest whatever its state (so that a few addresses' slow requests
// cannot keep out others); else nil. l.mu is held.
func (l *connLimits) greediestLocked(addr string, now time.Time) *limitedConn {
	var most map[*limitedConn]struct{}
	for _, set := range l.byAddr {
		if len(set) > len(most) {
			most = set
		}
	}
	if len(most) < len(l.byAddr[addr])+2 {
		return nil
	}
	if c := l.oldestClosable(most, now); c != nil {
		return c
	}
	var old *limitedConn
	for c := range most {
		if old == nil || c.accepted.Before(old.accepted) {
			old = c
		}
	}
	return old
}

// oldestClosable is the connection of set accepted first that may be closed to make room: one
// between requests (new or idle), or one not signed in whose request began more than l.stall
// before now; nil if none may.
func (l *connLimits) oldestClosable(set map[*limitedConn]struct{}, now time.Time) *limitedConn {
	var old *limitedConn
	for c := range set {
		if (old == nil || c.accepted.Before(old.accepted)) && l.closable(c, now) {
			old = c
		}
	}
	return old
}

// closable reports whether c may be closed to make room (oldestClosable).
func (l *connLimits) closable(c *limitedConn, now time.Time) bool {
	switch http.ConnState(c.state.Load()) {
	case http.StateNew, http.StateIdle:
		return true
	case http.StateActive:
		return !c.signed.Load() && now.Sub(time.Unix(0, c.active.Load())) > l.stall
	}
	return false
}

// forgetLocked stops counting c against the caps of connections not signed in and of its student;
// l.mu is held. It stays in l.all until it is closed.
func (l *connLimits) forgetLocked(c *limitedConn) {
	l.leaveStudentLocked(c)
	l.forgetPreLocked(c)
}

// forgetPreLocked stops counting c against the caps of connections not signed in; l.mu is held.
func (l *connLimits) forgetPreLocked(c *limitedConn) {
	if _, ok := l.pre[c]; !ok {
		return
	}
	delete(l.pre, c)
	if m := l.byAddr[c.addr]; m != nil {
		delete(m, c)
		if len(m) == 0 {
			delete(l.byAddr, c.addr)
		}
	}
}

// leaveStudentLocked stops counting c against its student's cap; l.mu is held.
func (l *connLimits) leaveStudentLocked(c *limitedConn) {
	if c.student == 0 {
		return
	}
	if m := l.byStudent[c.student]; m != nil {
		delete(m, c)
		if len(m) == 0 {
			delete(l.byStudent, c.student)
		}
	}
	c.student = 0
}

// signIn stops counting c against the caps of connections not signed in and, for student (0: none,
// a server without sign-in), counts it against the student's cap of HTTP connections, making room
// by closing the student's oldest idle one; false when the student is at the cap with every
// connection in a request (the caller refuses the request and closes c).
func (c *limitedConn) signIn(student int64) bool {
	var evict *limitedConn
	defer func() {
		if evict != nil {
			_ = evict.Close()
		}
	}()
	l := c.l
	l.mu.Lock()
	defer l.mu.Unlock()
	c.signed.Store(true)
	l.forgetPreLocked(c)
	if c.student == student || http.ConnState(c.state.Load()) == http.StateHijacked {
		return true
	}
	l.leaveStudentLocked(c) // another student's cookie on the same connection
	if student == 0 {
		return true
	}
	set := l.byStudent[student]
	if set == nil {
		set = map[*limitedConn]struct{}{}
		l.byStudent[student] = set
	}
	if len(set) >= l.maxPerStudent {
		old := l.oldestClosable(set, time.Now())
		if old == nil {
			return false
		}
		l.leaveStudentLocked(old)
		delete(l.all, old)
		evict = old
	}
	set[c] = struct{}{}
	c.student = student
	return true
}

// hijacked stops counting c against its student's cap of HTTP connections: it became a websocket
// (counted by shares) after a request that signed in.
func (c *limitedConn) hijacked() {
	c.l.mu.Lock()
	defer c.l.mu.Unlock()
	c.signed.Store(true)
	c.l.forgetLocked(c)
}

// Close closes the connection and stops counting it.
func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.closed.Do(func() {
		c.l.mu.Lock()
		c.l.forgetLocked(c)
		delete(c.l.all, c)
		c.l.mu.Unlock()
	})
	return err
}

// counts reports the open connections and those not signed in (tests).
func (l *connLimits) counts() (open, pre int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.all), len(l.pre)
}

type connKey struct{}

// connOf is the counted connection under c (under TLS too), or nil.
func connOf(c net.Conn) *limitedConn {
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	lc, _ := c.(*limitedConn)
	return lc
}

// connContext puts the request's counted connection in its context (http.Server.ConnContext).
func connContext(ctx context.Context, c net.Conn) context.Context {
	if lc := connOf(c); lc != nil {
		ctx = context.WithValue(ctx, connKey{}, lc)
	}
	return ctx
}

// trackState records each connection's state (http.Server.ConnState); a websocket (hijacked)
// passed sign-in.
func trackState(c net.Conn, st http.ConnState) {
	lc := connOf(c)
	if lc == nil {
		return
	}
	lc.setState(st, time.Now())
	if st == http.StateHijacked {
		lc.hijacked()
	}
}

// signedIn marks the connection of r as signed in, for student (0 on a server without sign-in):
// false when the student is at their cap of HTTP connections (connLimits.signIn), and then the
// caller answers tooManyConns.
func signedIn(r *http.Request, student int64) bool {
	if lc, ok := r.Context().Value(connKey{}).(*limitedConn); ok {
		return lc.signIn(student)
	}
	return true
}

// tooManyConns answers a request of a student at their cap of HTTP connections, with 429, and
// closes its connection.
func tooManyConns(w http.ResponseWriter) {
	w.Header().Set("Connection", "close")
	tooMany(w, time.Second, "you have too many connections open with requests under way: close some tabs, or wait for downloads to end")
}

// addrKey is the address a connection is counted under: its IP, or for IPv6 its /64 (one
// machine's network).
func addrKey(a net.Addr) string {
	ta, ok := a.(*net.TCPAddr)
	if !ok {
		host, _, err := net.SplitHostPort(a.String())
		if err != nil {
			return a.String()
		}
		return host
	}
	return ipKey(ta.IP)
}

// ipKey is an IPv4 address, or an IPv6 address's /64.
func ipKey(ip net.IP) string {
	if ip.To4() != nil {
		return ip.To4().String()
	}
	return ip.Mask(net.CIDRMask(64, 128)).String() + "/64"
}

// requestAddr is addrKey of a request's remote address.
func requestAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	if ip := net.ParseIP(host); ip != nil {
		return ipKey(ip)
	}
	return host
}

// maxAddrLimits bounds how many addresses the join and attempt limits keep.
const maxAddrLimits = 10000

// identityDefaults fills the sign-in and connection limits left zero.
func (c Config) identityDefaults() Config {
	def := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&c.SessionTTL, 7*24*time.Hour)
	def(&c.JoinWindow, 10*time.Minute)
	def(&c.ReadHeaderTimeout, 10*time.Second)
	def(&c.ReadTimeout, 30*time.Second)
	def(&c.WriteTimeout, 2*time.Minute)
	def(&c.IdleTimeout, 60*time.Second)
	def(&c.PaceWait, defaultPaceWait)
	if c.MaxStudents <= 0 {
		c.MaxStudents = 200
	}
	c.JoinsPerAddress = max(c.JoinsPerAddress, 0)
	if c.JoinAttempts <= 0 {
		c.JoinAttempts = 20
	}
	if c.MaxOpenConns <= 0 {
		c.MaxOpenConns = 4096
		if lim := raiseFileLimit(); lim > 0 {
			c.MaxOpenConns = int(min(max(lim, 192)-128, 1<<20))
		}
	}
	if c.MaxPreAuthConns <= 0 {
		c.MaxPreAuthConns = min(512, max(c.MaxOpenConns/2, 1))
	}
	if c.MaxPreAuthPerAddress <= 0 {
		c.MaxPreAuthPerAddress = 64
	}
	if c.MaxHTTPConnsPerStudent <= 0 {
		c.MaxHTTPConnsPerStudent = 16
	}
	def(&c.PreAuthRequestTimeout, 5*time.Second)
	return c
}

// sockets counts the websockets being served, so that shutdown can wait for them. Shutdown closes
// it first: a socket upgraded after that is refused rather than added to a count already waited on
// (a sync.WaitGroup's Add must not race its Wait).
type sockets struct {
	mu     sync.Mutex
	closed bool
	wg     sync.WaitGroup
}

// enter counts one more socket, or returns false once closeAndWait has begun.
func (k *sockets) enter() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.closed {
		return false
	}
	k.wg.Add(1)
	return true
}

// leave uncounts a socket that entered.
func (k *sockets) leave() { k.wg.Done() }

// closeAndWait refuses every later socket and returns when every counted one has left.
func (k *sockets) closeAndWait() {
	k.mu.Lock()
	k.closed = true
	k.mu.Unlock()
	k.wg.Wait()
}
