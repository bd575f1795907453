package machine

import (
	"context"
	"runtime"
	"sync"
)

// Gate is the one-machine rule, for one machine: a run that measures (cells.Exclusive) has the
// machine to itself; runs that time nothing share its cores, at most its slots side by side, and
// never run beside a measuring one. The in-process executor, the cluster's placement (one Gate per
// machine it knows) and a worker's own guard all keep the rule through it.
type Gate struct {
	slots int

	mu      sync.Mutex
	heavy   bool          // a run that measures holds the machine
	light   int           // runs that time nothing, running
	changed chan struct{} // closed and replaced on every Leave
}

// NewGate returns an open gate for runs that time nothing on slots slots (slots ≤ 0: GOMAXPROCS).
func NewGate(slots int) *Gate {
	if slots <= 0 {
		slots = runtime.GOMAXPROCS(0)
	}
	return &Gate{slots: slots, changed: make(chan struct{})}
}

// Slots is how many runs that time nothing may run side by side.
func (g *Gate) Slots() int { return g.slots }

// free is Free with g.mu held.
func (g *Gate) free(exclusive bool) (ok, drain bool) {
	switch {
	case g.heavy:
		return false, false
	case exclusive:
		return g.light == 0, g.light > 0
	default:
		return g.light < g.slots, false
	}
}

// Free reports whether a run (exclusive: one that measures) may enter now; drain, when it may not,
// that only runs that time nothing hold the machine (a measuring run gets it once they end).
func (g *Gate) Free(exclusive bool) (ok, drain bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.free(exclusive)
}

// TryEnter enters a run (exclusive: one that measures) if it may enter now (Free), without waiting.
func (g *Gate) TryEnter(exclusive bool) (ok, drain bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if ok, drain = g.free(exclusive); ok {
		if exclusive {
			g.heavy = true
		} else {
			g.light++
		}
	}
	return ok, drain
}

// Enter waits until a run (exclusive: one that measures) may enter, and enters it; err is ctx's
// cause if ctx ends first.
func (g *Gate) Enter(ctx context.Context, exclusive bool) error {
	for {
		ch := g.Changed()
		if ok, _ := g.TryEnter(exclusive); ok {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
}

// Leave records that a run entered with exclusive ended.
func (g *Gate) Leave(exclusive bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if exclusive {
		g.heavy = false
	} else if g.light > 0 {
		g.light--
	}
	close(g.changed)
	g.changed = make(chan struct{})
}

// Changed returns a channel closed at the next Leave. Take it before TryEnter so that none is missed.
func (g *Gate) Changed() <-chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.changed
}

// Light is how many runs that time nothing are inside.
func (g *Gate) Light() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.light
}

// Measuring reports whether a run that measures holds the machine now.
func (g *Gate) Measuring() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.heavy
}
