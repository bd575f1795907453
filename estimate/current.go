package estimate

import "sync/atomic"

// Current holds the rates one machine's estimates use: Defaults until Set installs this machine's
// (package calibrate, at server start-up). The runner makes one per machine and hands it to the
// cell kinds (cells.Env.Rates); a nil *Current is valid and always gives Defaults.
type Current struct{ p atomic.Pointer[Rates] }

// Get returns the installed rates: the last Set, else Defaults.
func (c *Current) Get() *Rates {
	if c != nil {
		if r := c.p.Load(); r != nil {
			return r
		}
	}
	return defaultRates
}

// Set installs r for every estimate from now on; nil goes back to Defaults.
func (c *Current) Set(r *Rates) { c.p.Store(r) }

// Calibrated reports whether rates measured on this machine are installed.
func (c *Current) Calibrated() bool { return c != nil && c.p.Load() != nil }
