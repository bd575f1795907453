package cluster

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/gpuplayground/playground/cells"
	"github.com/gpuplayground/playground/estimate"
	"github.com/gpuplayground/playground/gpu/nvidia"
	"github.com/gpuplayground/playground/machine"
	"github.com/gpuplayground/playground/server"
)

// placing is a cluster whose workers are announced by hand (never stale), with a machine to price
// runs with (Config.Machine), for placement tests.
type placing struct {
	t     *testing.T
	c     *Cluster
	front *machine.Machine
	out   *syncBuffer // the operator's terminal
}

func newPlacing(t *testing.T) *placing {
	t.Helper()
	devices := func(context.Context) nvidia.Report { return fakeReport(false) }
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	front := machine.New(ctx, machine.Config{Kinds: testKinds, Devices: devices})
	out := &syncBuffer{}
	c, err := Start(context.Background(), Config{Heartbeat: time.Hour, Machine: front, Out: out})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return &placing{t: t, c: c, front: front, out: out}
}

// join announces a worker named id with rates (nil: none) that was last freed at freed.
func (p *placing) join(id string, rates *estimate.Rates, freed time.Time) {
	p.t.Helper()
	data, err := json.Marshal(Machine{ID: id, Name: id, Slots: 2, Rates: rates})
	if err != nil {
		p.t.Fatal(err)
	}
	p.c.hello(&nats.Msg{Subject: dn.Hello() + id, Data: data})
	p.c.mu.Lock()
	defer p.c.mu.Unlock()
	w := p.c.workers[id]
	if w == nil {
		p.t.Fatalf("worker %s did not join", id)
	}
	w.freed = freed
}

// priced parses a run of kind from src with the front's kinds, as the server does, and prices it on
// the machines (Estimate), as the server does before queueing it.
func (p *placing) priced(kind, src string) (server.Job, cells.Run) {
	p.t.Helper()
	j := server.Job{Kind: kind, Cell: cells.Cell{ID: "c", Source: src}}
	r, err := p.front.Parse(j.Kind, j.Action, j.Cell)
	if err != nil {
		p.t.Fatal(err)
	}
	if _, ok := p.c.Estimate(j, r); !ok {
		p.t.Fatalf("no estimate for %s", src)
	}
	return j, r
}

// place reserves a machine for r (TryAcquire) and names it; "" when none was free.
func (p *placing) place(r cells.Run) (string, server.Slot) {
	p.t.Helper()
	s, ok, _, err := p.c.TryAcquire(r)
	if err != nil {
		p.t.Fatal(err)
	}
	if !ok {
		return "", nil
	}
	return s.(*slot).w.m.ID, s
}

// runsOnPrice records n measuring runs on the worker id that took their price there (checkPrice):
// the evidence that its prices hold (trust.go).
func (p *placing) runsOnPrice(id string, n int) {
	p.t.Helper()
	for range n {
		_, r := p.priced("matmul", measuring)
		p.c.mu.Lock()
		w := p.c.workers[id]
		d := p.c.prices.of(r)[w].d
		p.c.mu.Unlock()
		p.c.checkPrice(w, r, d)
	}
}

const measuring = "kernels: [naive]\nsizes: [512]\nrepeats: 1\n"

// A run that measures goes to the free machine expected to finish it soonest, priced as Estimate
// prices it, even when a slower one has been free longer; with that machine busy it goes to the
// slower one at once rather than wait.
func TestMeasuringRunGoesToTheFastestFreeMachine(t *testing.T) {
	p := newPlacing(t)
	long := time.Now().Add(-time.Hour)
	p.join("slow", scaledRates(10), long)
	p.join("fast", scaledRates(1), time.Now())
	p.runsOnPrice("slow", 1)
	p.runsOnPrice("fast", 1)
	j, r := p.priced("matmul", measuring)
	fastest, _ := p.c.Estimate(j, r)
	p.c.mu.Lock()
	ps := p.c.prices.of(r)
	slowD, fastD := ps[p.c.workers["slow"]].d, ps[p.c.workers["fast"]].d
	p.c.mu.Unlock()
	if fastD != fastest || !(fastD < slowD) {
		t.Fatalf("prices: fast %v, slow %v, Estimate %v; want fast the lower and Estimate's", fastD, slowD, fastest)
	}
	got, s := p.place(r)
	if got != "fast" {
		t.Fatalf("a measuring run went to %q, want fast (estimated %v against %v), though slow was free longer", got, fastD, slowD)
	}
	_, r2 := p.priced("matmul", measuring)
	if got, _ := p.place(r2); got != "slow" {
		t.Errorf("with fast busy, a measuring run went to %q, want slow at once", got)
	}
	s.Release()
}

// Equal prices, or a free machine that cannot be priced (it reported no rates), leave a measuring
// run to the machine free longest.
func TestPlacementTiesFallBackToFreeLongest(t *testing.T) {
	for _, tt := range []struct {
		name          string
		older, recent *estimate.Rates
	}{
		{"equal rates", scaledRates(1), scaledRates(1)},
		{"the fast one reported no rates", scaledRates(10), nil},
		{"the slow one reported no rates", nil, scaledRates(1)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := newPlacing(t)
			p.join("older", tt.older, time.Now().Add(-time.Hour))
			p.join("recent", tt.recent, time.Now())
			p.runsOnPrice("older", 1)
			p.runsOnPrice("recent", 1)
			_, r := p.priced("matmul", measuring)
			if got, _ := p.place(r); got != "older" {
				t.Errorf("a measuring run went to %q, want older (free longest)", got)
			}
		})
	}
}

// A worker that reports its rates again (a server restart) is priced anew: prices kept with its
// old rates no longer place runs, and the machine free longest takes the run until it is priced
// again.
func TestPricesWithOldRatesDoNotPlace(t *testing.T) {
	p := newPlacing(t)
	p.join("slow", scaledRates(10), time.Now().Add(-time.Hour))
	p.join("fast", scaledRates(1), time.Now())
	p.runsOnPrice("slow", 1)
	p.runsOnPrice("fast", 1)
	_, r := p.priced("matmul", measuring)
	p.join("fast", scaledRates(100), time.Now()) // its announcement again, now slower than slow
	p.runsOnPrice("fast", 1)                     // and on price with them
	if got, s := p.place(r); got != "slow" {
		t.Errorf("a run priced with fast's old rates went to %q, want slow (free longest)", got)
	} else {
		s.Release()
	}
	_, r2 := p.priced("matmul", measuring)
	p.c.mu.Lock()
	p.c.workers["slow"].freed = time.Now().Add(-time.Hour)
	p.c.mu.Unlock()
	if got, _ := p.place(r2); got != "slow" {
		t.Errorf("priced again, a measuring run went to %q, want slow (now the faster)", got)
	}
}

// A run that times nothing still takes a slot on the machine already running such runs (the
// fullest), even where another machine is priced to run it sooner.
func TestLightRunsFillTheFullestMachineWhateverThePrice(t *testing.T) {
	p := newPlacing(t)
	p.join("slow", scaledRates(10), time.Now().Add(-time.Hour))
	p.join("fast", scaledRates(1), time.Now())
	const light = "kernels: [naive]\nn: 32\n"
	_, r := p.priced("simt", light)
	if cells.Exclusive(r) {
		t.Fatal("the virtual GPU without a GPU measures; want a run that times nothing")
	}
	p.c.mu.Lock()
	ps := p.c.prices.of(r)
	slowD, fastD := ps[p.c.workers["slow"]].d, ps[p.c.workers["fast"]].d
	p.c.mu.Unlock()
	if !(fastD < slowD) {
		t.Fatalf("prices: fast %v, slow %v; want fast the lower", fastD, slowD)
	}
	if got, _ := p.place(r); got != "slow" {
		t.Fatalf("the first run that times nothing went to %q, want slow (free longest, both idle)", got)
	}
	_, r2 := p.priced("simt", light)
	if got, _ := p.place(r2); got != "slow" {
		t.Errorf("a second run that times nothing went to %q, want slow (already running one)", got)
	}
}
