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
// the caps of connections not signed in: Config.MaxConnsPerAddress per address and
// Config.MaxPreAuthConns in all. At a cap, the oldest such connection that is between requests (new
// or idle) is closed to make room; only when none is, the new connection is closed at once. So idle
// and half-open connections (a slowloris) cannot take the server from anyone else, and /healthz and
// /join keep answering. http.Server's timeouts (Config.ReadTimeout and the rest) end what stays.

// connLimits counts the open connections and those not signed in.
type connLimits struct {
	maxOpen, maxPre, maxPrePerAddr int

	mu     sync.Mutex
	open   int
	pre    map[*limitedConn]struct{}
	byAddr map[string]map[*limitedConn]struct{}
}

func newConnLimits(maxOpen, maxPre, maxPrePerAddr int) *connLimits {
	return &connLimits{maxOpen: maxOpen, maxPre: maxPre, maxPrePerAddr: maxPrePerAddr,
		pre: map[*limitedConn]struct{}{}, byAddr: map[string]map[*limitedConn]struct{}{}}
}

// limitedConn is an accepted connection, counted until it closes.
type limitedConn struct {
	net.Conn
	l        *connLimits
	addr     string
	accepted time.Time
	state    atomic.Int32 // its http.ConnState
	signed   atomic.Bool
	closed   sync.Once
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

// admit counts lc in, making room by closing the oldest connection not signed in that is between
// requests where a cap is reached; false when there is no room.
func (l *connLimits) admit(lc *limitedConn) bool {
	var evict []*limitedConn
	defer func() {
		for _, c := range evict {
			_ = c.Close()
		}
	}()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open >= l.maxOpen {
		return false
	}
	byAddr := l.byAddr[lc.addr]
	if len(byAddr) >= l.maxPrePerAddr {
		c := oldestIdle(byAddr)
		if c == nil {
			return false
		}
		evict = append(evict, c)
		l.forgetLocked(c)
	}
	if len(l.pre) >= l.maxPre {
		c := oldestIdle(l.pre)
		if c == nil {
			return false
		}
		evict = append(evict, c)
		l.forgetLocked(c)
	}
	l.open++
	l.pre[lc] = struct{}{}
	if l.byAddr[lc.addr] == nil {
		l.byAddr[lc.addr] = map[*limitedConn]struct{}{}
	}
	l.byAddr[lc.addr][lc] = struct{}{}
	return true
}

// oldestIdle is the connection of set accepted first that is between requests (new or idle), or nil.
func oldestIdle(set map[*limitedConn]struct{}) *limitedConn {
	var old *limitedConn
	for c := range set {
		st := http.ConnState(c.state.Load())
		if (st == http.StateNew || st == http.StateIdle) && (old == nil || c.accepted.Before(old.accepted)) {
			old = c
		}
	}
	return old
}

// forgetLocked stops counting c as not signed in; l.mu is held.
func (l *connLimits) forgetLocked(c *limitedConn) {
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

// signIn stops counting c against the caps of connections not signed in.
func (c *limitedConn) signIn() {
	if c.signed.Swap(true) {
		return
	}
	c.l.mu.Lock()
	c.l.forgetLocked(c)
	c.l.mu.Unlock()
}

// Close closes the connection and stops counting it.
func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.closed.Do(func() {
		c.l.mu.Lock()
		c.l.forgetLocked(c)
		c.l.open--
		c.l.mu.Unlock()
	})
	return err
}

// counts reports the open connections and those not signed in (tests).
func (l *connLimits) counts() (open, pre int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.open, len(l.pre)
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
	lc.state.Store(int32(st))
	if st == http.StateHijacked {
		lc.signIn()
	}
}

// signedIn marks the connection of r as signed in.
func signedIn(r *http.Request) {
	if lc, ok := r.Context().Value(connKey{}).(*limitedConn); ok {
		lc.signIn()
	}
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
	if c.MaxStudents <= 0 {
		c.MaxStudents = 200
	}
	if c.JoinsPerAddress <= 0 {
		c.JoinsPerAddress = 10
	}
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
	return c
}
