package server

import (
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Shares: what one client may hold at once, and how fast it may ask for work, so that one client's
// flood leaves other clients' runs accepted. A client is the signed-in student, else the remote IP
// address. Defaults are in Config.withDefaults; docs/protocol.md lists them.
type shares struct {
	maxConns, maxConnsPerClient, maxRunsPerClient int
	// rate and burst size each client's token bucket for work (allow); rate < 0: none. saveRate and
	// saveBurst size each of its buckets for saves and for replays (allowMessage).
	rate      float64
	burst     int
	saveRate  float64
	saveBurst int

	mu        sync.Mutex
	conns     int
	byClient  map[string]*share
	lastSweep time.Time
}

// share is one client's: its connections, its queued or running runs, and its bucket of requests
// (nil until its first request). A client with none of these in use is forgotten once its bucket is
// full again (forgetIdle), so that leaving and coming back does not refill it.
type share struct {
	conns, runs    int
	bucket         *rate.Limiter
	saves, replays *rate.Limiter
}

func newShares(cfg Config) *shares {
	return &shares{maxConns: cfg.MaxConns, maxConnsPerClient: cfg.MaxConnsPerClient, maxRunsPerClient: cfg.MaxRunsPerClient,
		rate: cfg.RunRate, burst: cfg.RunBurst, saveRate: cfg.SaveRate, saveBurst: cfg.SaveBurst, byClient: map[string]*share{}}
}

// allowMessage takes one token from client's bucket for saves (what "save") or for replays
// ("replay"), or says that the client sends them too fast.
func (s *shares) allowMessage(client, what string) error {
	if what == "replay" {
		return s.take(client, func(sh *share) **rate.Limiter { return &sh.replays }, s.saveRate, s.saveBurst,
			"you are asking for your earlier runs faster than the server allows", "try again")
	}
	return s.take(client, func(sh *share) **rate.Limiter { return &sh.saves }, s.saveRate, s.saveBurst,
		"you are saving edits faster than the server allows", "try again")
}

// allow takes one token from client's bucket for a request for work (a run, an action, a
// shared-result reply), or says that the client asks too fast.
func (s *shares) allow(client string) error {
	return s.take(client, func(sh *share) **rate.Limiter { return &sh.bucket }, s.rate, s.burst,
		"you are asking for runs faster than the server allows", "press Run again")
}

// take takes one token from the bucket of client's share that which picks (made, with r per
// second and burst, at its first use), or returns an error saying what ("you are … faster than
// the server allows"), the rate, and then what to do. r < 0: no limit.
func (s *shares) take(client string, which func(*share) **rate.Limiter, r float64, burst int, what, then string) error {
	if r < 0 {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sh := s.byClient[client]
	if sh == nil {
		sh = &share{}
		s.byClient[client] = sh
	}
	b := which(sh)
	if *b == nil {
		*b = rate.NewLimiter(rate.Limit(r), burst)
	}
	if !(*b).Allow() {
		return fmt.Errorf("%s (%d at once, then one every %s): wait a moment and %s",
			what, burst, (time.Duration(float64(time.Second) / r)).Round(time.Millisecond), then)
	}
	return nil
}

// rate takes a token from the client's bucket for what ("run", "save" or "replay"), or says that
// it asks too fast. The instructor, trusted (docs/security.md), and the one local user of a server
// without sign-in, who is the instructor, are not rate-limited.
func (c *conn) rate(what string) error {
	switch {
	case c.student.Instructor:
		return nil
	case what == "run":
		return c.s.shares.allow(c.client)
	default:
		return c.s.shares.allowMessage(c.client, what)
	}
}

// connect admits a new connection of client, or says which cap it hit.
func (s *shares) connect(client string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sweepLocked()
	sh := s.byClient[client]
	switch {
	case s.conns >= s.maxConns:
		return fmt.Errorf("the server has %d connections, its limit; try again later", s.maxConns)
	case sh != nil && sh.conns >= s.maxConnsPerClient:
		return fmt.Errorf("your address already has %d connections, the limit per client; close some tabs", s.maxConnsPerClient)
	}
	if sh == nil {
		sh = &share{}
		s.byClient[client] = sh
	}
	sh.conns++
	s.conns++
	return nil
}

func (s *shares) disconnect(client string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.conns--
	if sh := s.byClient[client]; sh != nil {
		sh.conns--
		s.forgetIdle(client, sh)
	}
}

// startRun admits a run (queued or running, actions included) of client, or says it hit the cap.
func (s *shares) startRun(client string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	sh := s.byClient[client]
	if sh == nil {
		sh = &share{}
		s.byClient[client] = sh
	}
	if sh.runs >= s.maxRunsPerClient {
		return fmt.Errorf("your address already has %d runs queued or running, the limit per client; wait for one to end", s.maxRunsPerClient)
	}
	sh.runs++
	return nil
}

func (s *shares) endRun(client string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sh := s.byClient[client]; sh != nil {
		sh.runs--
		s.forgetIdle(client, sh)
	}
}

func (s *shares) forgetIdle(client string, sh *share) {
	full := func(b *rate.Limiter, burst int) bool { return b == nil || b.Tokens() >= float64(burst) }
	if sh.conns <= 0 && sh.runs <= 0 && full(sh.bucket, s.burst) && full(sh.saves, s.saveBurst) && full(sh.replays, s.saveBurst) {
		delete(s.byClient, client)
	}
}

// sweepLocked forgets, at most once a minute, the idle clients whose buckets have filled again
// since they left; s.mu is held.
func (s *shares) sweepLocked() {
	if time.Since(s.lastSweep) < time.Minute {
		return
	}
	s.lastSweep = time.Now()
	for client, sh := range s.byClient {
		s.forgetIdle(client, sh)
	}
}

// clientOf is the share key of a request: its remote IP address.
func clientOf(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// checkHost refuses, when the server is bound to loopback, every request whose Host is not a
// loopback name or address (localhost, 127.0.0.0/8, ::1), as Jupyter and development servers do:
// otherwise a web page the learner visits could reach the playground through a DNS-rebinding domain.
// The websocket's Origin check (same host) then also holds for the websocket.
func (s *Server) checkHost(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.loopbackOnly && !loopbackHost(r.Host) {
			http.Error(w, fmt.Sprintf("Host %q is not a loopback name: this playground listens on loopback only, so open it as http://127.0.0.1 or http://localhost (requests for other host names are refused against DNS rebinding)", r.Host), http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// loopbackHost reports whether a Host header names this machine's loopback.
func loopbackHost(hostport string) bool {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		host = hostport
	}
	host = strings.TrimSuffix(strings.Trim(host, "[]"), ".")
	if strings.EqualFold(host, "localhost") || strings.HasSuffix(strings.ToLower(host), ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
