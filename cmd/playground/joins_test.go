package main

import "testing"

// By default a class behind one address is never refused for its address: no limit of joins per
// address, the class cap 200, wrong tokens limited at 20; the flags still set a limit.
func TestJoinFlagDefaults(t *testing.T) {
	cfg := serveConfig(nil).Server
	if cfg.JoinsPerAddress != 0 || cfg.MaxStudents != 200 || cfg.JoinAttempts != 20 {
		t.Errorf("defaults: joins per address %d, max students %d, join attempts %d; want 0 (no limit), 200, 20",
			cfg.JoinsPerAddress, cfg.MaxStudents, cfg.JoinAttempts)
	}
	if got := serveConfig([]string{"-joins-per-address", "15"}).Server.JoinsPerAddress; got != 15 {
		t.Errorf("-joins-per-address 15: got %d", got)
	}
}
