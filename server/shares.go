package server

import (
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
)

// Shares: what one client may hold at once, so that one client's flood leaves other clients' runs
// accepted. A client is a remote IP address for now (a student once sign-in exists). Defaults are
// in Config.withDefaults; docs/protocol.md lists them.
type shares struct {
	maxConns, maxConnsPerClient, maxRunsPerClient int

	mu       sync.Mutex
	conns    int
	byClient map[string]*share
}

type share struct{ conns, runs int }

func newShares(cfg Config) *shares {
	return &shares{maxConns: cfg.MaxConns, maxConnsPerClient: cfg.MaxConnsPerClient, maxRunsPerClient: cfg.MaxRunsPerClient,
		byClient: map[string]*share{}}
}

// connect admits a new connection of client, or says which cap it hit.
func (s *shares) connect(client string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
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
	if sh.conns <= 0 && sh.runs <= 0 {
		delete(s.byClient, client)
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
