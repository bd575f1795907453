package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/gpuplayground/playground/cells"
	"github.com/gpuplayground/playground/machine"
)

// pick reserves a free worker for n, not one of except: the whole machine for a run that measures
// (exclusive), one of its slots for one that times nothing; nil when none is free now. drain then
// reports that an able machine is busy only with runs that time nothing. A run that needs a GPU
// goes only to machines with one, unless no machine known has one (then it runs anywhere and says
// why its GPU kernels did not run, as on one machine). A run that asks for a class of machine goes
// only to machines of that class. Among the free machines, a run that measures takes the one
// expected to finish it soonest, by its prices ps (Estimate's, kept in c.prices) when every free
// machine has a current one, and otherwise, or among equal prices, the one free longest; a run that
// times nothing takes a free slot on a machine already running such runs (the fullest) before an
// idle machine, so that idle machines stay free for measuring runs. c.mu is held.
func (c *Cluster) pick(n cells.Needs, exclusive bool, except map[string]bool, ps map[*worker]price) (best *worker, drain bool) {
	able := func(w *worker) bool { return w.m.Meets(n) }
	if !c.able(n, except) {
		able = func(w *worker) bool { return n.Machine == "" || w.m.Class == n.Machine }
	}
	down := !c.downSince.IsZero()
	var free []*worker
	for _, w := range c.workers {
		if except[w.m.ID] || !able(w) || down && !w.local { // a worker cannot be reached while NATS is down
			continue
		}
		if ok, d := w.gate.Free(exclusive); !ok {
			drain = drain || d
			continue
		}
		free = append(free, w)
	}
	if !exclusive || !soonest(ps, free) {
		ps = nil
	}
	for _, w := range free {
		if best == nil || better(w, best, exclusive, ps) {
			best = w
		}
	}
	if best != nil {
		best.gate.TryEnter(exclusive) // free, and c.mu is held: it enters
		drain = false
	}
	return best, drain
}

// better reports whether the free machine a suits a run (exclusive: one that measures) better than
// the free machine b (pick): for a run that times nothing, the one with more such runs; for one
// that measures, the one with the lower price in ps (nil: not placed by price); then the one free
// longest. c.mu is held.
func better(a, b *worker, exclusive bool, ps map[*worker]price) bool {
	if la, lb := a.gate.Light(), b.gate.Light(); !exclusive && la != lb {
		return la > lb
	}
	if pa, pb := ps[a].d, ps[b].d; ps != nil && pa != pb {
		return pa < pb
	}
	return a.freed.Before(b.freed)
}

// tryAcquire reserves a worker for r, of needs n, if one is free now (pick, by r's prices if it
// measures); err when none can ever take it.
func (c *Cluster) tryAcquire(r cells.Run, n cells.Needs, exclusive bool, except map[string]bool) (w *worker, drain bool, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, false, errors.New("the cluster is shutting down")
	}
	if time.Now().Before(c.settled) && !c.able(n, except) {
		return nil, false, nil // its machine may be rejoining after a restart (Config.Settle)
	}
	if n.Machine != "" && !c.hasClass(n.Machine, except) {
		return nil, false, fmt.Errorf("no machine of class %q is connected (classes now: %s): pick another in the page's machine menu, or change or remove the cell's machine: key", n.Machine, c.classes())
	}
	var ps map[*worker]price
	if exclusive {
		ps = c.prices.of(r)
	}
	w, drain = c.pick(n, exclusive, except, ps)
	return w, drain, nil
}

// acquire waits until pick finds a worker for r, or ctx ends.
func (c *Cluster) acquire(ctx context.Context, r cells.Run, n cells.Needs, exclusive bool, except map[string]bool) (*worker, error) {
	for {
		ch := c.Changed()
		w, _, err := c.tryAcquire(r, n, exclusive, except)
		if err != nil || w != nil {
			return w, err
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	}
}

// Changed returns a channel closed when a worker comes, goes or is freed (machine.Runner).
func (c *Cluster) Changed() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.changed
}

// another reports whether a machine not in except that may run a run with needs n is connected
// (busy or free). c.mu is not held.
func (c *Cluster) another(n cells.Needs, except map[string]bool) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, w := range c.workers {
		if !except[w.m.ID] && (n.Machine == "" || w.m.Class == n.Machine) {
			return true
		}
	}
	return false
}

// able reports whether a machine with what n asks for is connected, not one of except; c.mu is held.
func (c *Cluster) able(n cells.Needs, except map[string]bool) bool {
	for _, w := range c.workers {
		if w.m.Meets(n) && !except[w.m.ID] {
			return true
		}
	}
	return false
}

// hasClass reports whether a machine of class is connected, not one of except; c.mu is held.
func (c *Cluster) hasClass(class string, except map[string]bool) bool {
	for _, w := range c.workers {
		if w.m.Class == class && !except[w.m.ID] {
			return true
		}
	}
	return false
}

// classes lists the classes of the machines connected, or says there are none; c.mu is held.
func (c *Cluster) classes() string {
	var cs []string
	for _, w := range c.workers {
		if w.m.Class != "" && !slices.Contains(cs, w.m.Class) {
			cs = append(cs, w.m.Class)
		}
	}
	if len(cs) == 0 {
		return "none"
	}
	slices.Sort(cs)
	return strings.Join(cs, ", ")
}

// release frees what a run held of w.
func (c *Cluster) release(w *worker, exclusive bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	w.gate.Leave(exclusive)
	w.freed = time.Now()
	c.broadcast()
}

// TryAcquire reserves a free machine able to run r, if there is one now (machine.Runner): one
// with a GPU for a run that needs one, whenever the cluster has such a machine; the whole machine
// for a run that measures, one of its slots for one that times nothing.
func (c *Cluster) TryAcquire(r cells.Run) (machine.Slot, bool, bool, error) {
	n, ex := cells.NeedsOf(r), cells.Exclusive(r)
	w, drain, err := c.tryAcquire(r, n, ex, nil)
	if err != nil || w == nil {
		return nil, false, drain, err
	}
	return &slot{c: c, w: w, needs: n, exclusive: ex}, true, false, nil
}

// ListMachines lists the machines connected now for the page's machine menu (machine.Lister):
// this server's own first, if it runs runs, then the workers by class and name.
func (c *Cluster) ListMachines() []machine.MachineInfo {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := []machine.MachineInfo{}
	for _, w := range c.workers {
		out = append(out, w.info())
	}
	slices.SortFunc(out, func(a, b machine.MachineInfo) int {
		switch {
		case a.Here != b.Here:
			if a.Here {
				return -1
			}
			return 1
		case a.Class != b.Class:
			return strings.Compare(a.Class, b.Class)
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out
}

// info is w as ListMachines lists it: what it is, how busy, its runs now (newest last), its
// counts, and how its runs bear out its prices (trust.go); c.mu is held.
func (w *worker) info() machine.MachineInfo {
	m := machine.MachineInfo{Name: w.m.Name, Class: w.m.Class, Summary: w.m.Summary(), GPU: w.m.HasGPU(), Here: w.local,
		Slots: w.gate.Slots(), Busy: len(w.runs), Measuring: w.gate.Measuring(), Runs: []machine.MachineRun{},
		Done: w.done, Errors: w.errors}
	if !w.local {
		m.LastHeartbeat = w.seen
	}
	if t := w.trust; t != nil && (w.rates != nil || t.demoted != "") {
		m.Price, m.PriceRatio, m.Demoted, m.DemotedAt = t.state(), median(t.ratios), t.demoted, t.demotedAt
	}
	for r := range w.runs {
		m.Runs = append(m.Runs, *r)
	}
	slices.SortFunc(m.Runs, func(a, b machine.MachineRun) int { return a.Started.Compare(b.Started) })
	return m
}

// Acquire waits until a machine able to run r is free and reserves it (machine.Acquire).
func (c *Cluster) Acquire(ctx context.Context, r cells.Run) (machine.Slot, error) {
	return machine.Acquire(ctx, c, r)
}

// NoMachine says why no machine connected now, busy or free, could take r (machine.Unplaced), or ""
// when one could: a run goes to any machine unless it asks for a class (then only to machines of
// that class); one that needs a GPU waits for a GPU machine only while the server settles
// (Config.Settle), and otherwise runs on a machine without one and says so.
func (c *Cluster) NoMachine(r cells.Run) string {
	n := cells.NeedsOf(r)
	c.mu.Lock()
	defer c.mu.Unlock()
	settling := time.Now().Before(c.settled)
	need := ""
	switch {
	case !c.downSince.IsZero() && (c.local == nil || n.Machine != "" && c.local.m.Class != n.Machine):
		return fmt.Sprintf("no machine can be reached that can run this: this server lost its connection to the NATS server at %s%s; the run waits until it is back; machines connected before: %s",
			c.downSince.Format(time.TimeOnly), lossReason(c.downErr, c.cfg.PingInterval), c.connected())
	case n.Machine != "" && !c.hasClass(n.Machine, nil):
		need = "it asks for a machine of class " + n.Machine
	case n.Machine == "" && len(c.workers) == 0:
		need = "it needs any machine"
	case settling && !c.able(n, nil):
		need = "it needs a machine with a GPU"
	default:
		return ""
	}
	if settling {
		// a time, not a countdown: the reason stays the same text while it holds, so the queue
		// (which tells a run again whenever its reason changes) says it once
		need += fmt.Sprintf(" (machines that served before a restart may still be rejoining, until %s)", c.settled.Format(time.TimeOnly))
	}
	return "no machine is connected that can run this: " + need + "; connected machines: " + c.connected()
}

// connected lists the machines connected, by name with their classes, or says there are none;
// c.mu is held.
func (c *Cluster) connected() string {
	var names []string
	for _, w := range c.workers {
		name := w.m.Name
		if w.m.Class != "" {
			name += " (class " + w.m.Class + ")"
		}
		names = append(names, name)
	}
	if len(names) == 0 {
		return "none"
	}
	slices.Sort(names)
	const most = 10
	if len(names) > most {
		return strings.Join(names[:most], ", ") + fmt.Sprintf(" and %d more", len(names)-most)
	}
	return strings.Join(names, ", ")
}
