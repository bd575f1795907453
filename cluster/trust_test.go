package cluster

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/gpuplayground/playground/cells"
	"github.com/gpuplayground/playground/gpu/nvidia"
	"github.com/gpuplayground/playground/machine"
	"github.com/gpuplayground/playground/server"
)

// ran records a measuring run of r on the worker id that took factor times its price there, plus
// overrunSlack (what no price counts), as checkPrice is told of it when the run ends.
func (p *placing) ran(id string, r cells.Run, factor float64) {
	p.t.Helper()
	p.c.mu.Lock()
	w := p.c.workers[id]
	d := p.c.prices.of(r)[w].d
	p.c.mu.Unlock()
	p.c.checkPrice(w, r, overrunSlack+time.Duration(factor*float64(d)))
}

// machine is the worker id as ListMachines lists it.
func (p *placing) machine(id string) server.MachineInfo {
	p.t.Helper()
	for _, m := range p.c.ListMachines() {
		if m.Name == id {
			return m
		}
	}
	p.t.Fatalf("no machine %s listed", id)
	return server.MachineInfo{}
}

// restart stands for the worker id restarting: its process leaves, and a new one (a new key, the
// same configured name and rates) joins.
func (p *placing) restart(id, newID string, factor float64) {
	p.t.Helper()
	p.c.mu.Lock()
	p.c.drop(p.c.workers[id], "machine left: "+id)
	p.c.mu.Unlock()
	data, err := json.Marshal(Machine{ID: newID, Name: id, Slots: 2, Rates: scaledRates(factor)})
	if err != nil {
		p.t.Fatal(err)
	}
	p.c.hello(&nats.Msg{Subject: dn.Hello() + newID, Data: data})
}

// An honest worker on a machine loaded all along, whose measuring runs take 2.4 to 9 times their
// price alike (as a class's burst did on a shared host), is not demoted, proven or not: its runs
// agree with each other. It is listed slower than priced, its prices place no runs and price no
// estimate meanwhile, and once the load is gone and its runs are on price again, they do.
func TestHonestWorkerUnderLoadIsNotDemoted(t *testing.T) {
	for _, proven := range []bool{false, true} {
		p := newPlacing(t)
		p.join("honest", scaledRates(1), time.Now())
		if proven {
			p.runsOnPrice("honest", 3)
		}
		for _, load := range []float64{2.4, 9, 3.1, 5, 7.5, 4, 8.2, 2.6, 6, 9} {
			_, r := p.priced("matmul", measuring)
			p.ran("honest", r, load)
		}
		m := p.machine("honest")
		if m.Price != "slower than priced" || m.Demoted != "" || m.PriceRatio < 2.4 || m.PriceRatio > 9 {
			t.Errorf("proven %v: under uniform load listed %q (ratio %.2f, demoted %q), want slower than priced, not demoted",
				proven, m.Price, m.PriceRatio, m.Demoted)
		}
		if strings.Contains(p.out.String(), "demoted") {
			t.Errorf("proven %v: the operator was told %q", proven, p.out.String())
		}
		p.c.mu.Lock()
		trusted := p.c.workers["honest"].trusted()
		p.c.mu.Unlock()
		if trusted {
			t.Errorf("proven %v: its prices are trusted while its runs take several times them", proven)
		}
		p.runsOnPrice("honest", trustWindow)
		if m := p.machine("honest"); m.Price != "on price" {
			t.Errorf("proven %v: after the load, listed %q, want on price", proven, m.Price)
		}
	}
}

// A worker that claims to be 10,000 times as fast as it is: unproven, its price shortens no
// learner's estimate; its second measuring run demotes it, with the reason listed and told; a
// restart with a new key and other rates (the same configured name) leaves it demoted, its price
// still out of estimates; healRuns runs on price lift the demotion, and its prices place runs
// again.
func TestLyingWorkerIsDemotedUntilItRunsOnPrice(t *testing.T) {
	p := newPlacing(t)
	p.join("honest", scaledRates(1), time.Now().Add(-time.Hour))
	p.runsOnPrice("honest", 1)
	honestOnly, _ := p.c.Estimate(p.priced("matmul", measuring))
	p.join("liar", scaledRates(1e-4), time.Now())
	j, r := p.priced("matmul", measuring)
	if est, _ := p.c.Estimate(j, r); est != honestOnly {
		t.Errorf("with an unproven liar, the estimate is %v, want the honest one's %v (its rates are unproven)", est, honestOnly)
	}
	p.ran("liar", r, 1e4) // its run took what it takes: 10,000 times its price
	if m := p.machine("liar"); m.Demoted != "" || m.Price != "slower than priced" {
		t.Fatalf("after one run 10,000 times its price: %+v, want slower than priced, not yet demoted", m)
	}
	p.ran("liar", r, 1e4)
	m := p.machine("liar")
	if m.Price != "demoted" || !strings.Contains(m.Demoted, "took a median 10000 times what the rates it reported priced them at") ||
		!strings.Contains(m.Demoted, "reports itself faster than it runs") || m.DemotedAt.IsZero() {
		t.Fatalf("after two runs 10,000 times their price: %+v, want demoted with its reason", m)
	}
	if out := p.out.String(); !strings.Contains(out, "machine liar demoted: ") {
		t.Errorf("the operator was told %q, want the demotion", out)
	}
	p.restart("liar", "liar-2", 1e-3) // and other rates: a new window, the demotion kept
	if m := p.machine("liar"); m.Demoted == "" {
		t.Fatalf("after a restart with a new key: %+v, want still demoted", m)
	}
	p.c.mu.Lock()
	p.c.workers["honest"].freed = time.Now() // the liar is free longest: placed by price, it would not be
	p.c.mu.Unlock()
	j, r = p.priced("matmul", measuring)
	if est, _ := p.c.Estimate(j, r); est != honestOnly {
		t.Errorf("with the liar demoted, the estimate is %v, want the honest one's %v", est, honestOnly)
	}
	for i := range healRuns {
		if i == healRuns-1 && p.machine("liar").Demoted == "" {
			t.Fatalf("demotion lifted after %d runs on price, want %d", i, healRuns)
		}
		_, r := p.priced("matmul", measuring)
		p.ran("liar-2", r, 0.5)
	}
	if m := p.machine("liar"); m.Demoted != "" || m.Price != "on price" {
		t.Errorf("after %d runs on price: %+v, want on price, not demoted", healRuns, m)
	}
	if out := p.out.String(); !strings.Contains(out, "machine liar no longer demoted") {
		t.Errorf("the operator was told %q, want the demotion's end", out)
	}
	_, r = p.priced("matmul", measuring)
	if got, _ := p.place(r); got != "liar-2" {
		t.Errorf("healed, a measuring run went to %q, want liar-2 (now on price, and the fastest)", got)
	}
}

// A new worker, however fast it says it is, gets at most its share of measuring runs (the machine
// free longest takes the next) until it has run on price.
func TestNewWorkerGetsItsShareUntilOnPrice(t *testing.T) {
	p := newPlacing(t)
	p.join("a", scaledRates(1), time.Now().Add(-2*time.Hour))
	p.join("b", scaledRates(1), time.Now().Add(-time.Hour))
	p.runsOnPrice("a", 1)
	p.runsOnPrice("b", 1)
	p.join("new", scaledRates(1e-4), time.Now())
	const runs = 6
	got := map[string]int{}
	for range runs {
		_, r := p.priced("matmul", measuring)
		id, s := p.place(r)
		got[id]++
		s.Release()
	}
	if share := (runs + 2) / 3; got["new"] > share {
		t.Errorf("runs per machine %v: the new worker took %d of %d, want at most its share %d", got, got["new"], runs, share)
	}
}

// The median of a worker's recent runs judges it, not one run: a worker on price whose one run is
// slowed far past its price (a moment's load) is not demoted, nor a new one whose first run was
// (its GPU worker starting) and whose next is on price.
func TestOneSlowRunDemotesNobody(t *testing.T) {
	p := newPlacing(t)
	p.join("w", scaledRates(1), time.Now())
	p.runsOnPrice("w", 3)
	_, r := p.priced("matmul", measuring)
	p.ran("w", r, 100)
	if m := p.machine("w"); m.Demoted != "" || m.Price != "on price" {
		t.Errorf("after one run 100 times its price: %+v, want on price", m)
	}
	p.join("new", scaledRates(1), time.Now())
	_, r = p.priced("matmul", measuring)
	p.ran("new", r, 100)
	if m := p.machine("new"); m.PriceRatio < 90 {
		t.Fatalf("a new worker after a first run 100 times its price: %+v, want its ratio near 100", m)
	}
	p.runsOnPrice("new", 1)
	if m := p.machine("new"); m.Demoted != "" || m.Price != "on price" {
		t.Errorf("a new worker after a first run 100 times its price, then one on price: %+v, want on price", m)
	}
}

// GET /api/machines lists a demoted worker with its standing and the reason.
func TestAPIMachinesShowsTheDemotion(t *testing.T) {
	p := newPlacing(t)
	p.join("liar", scaledRates(1e-4), time.Now())
	_, r := p.priced("matmul", measuring)
	p.ran("liar", r, 1e4)
	p.ran("liar", r, 1e4)
	addr := serveLessons(t, server.Config{Config: machine.Config{Kinds: testKinds, Devices: func(context.Context) nvidia.Report { return fakeReport(false) }}, LessonsDir: napLessons(t, "ms: 1\n"), Executor: p.c, Machine: p.front, Out: io.Discard})
	var list struct{ Machines []server.MachineInfo }
	getJSON(t, "http://"+addr+"/api/machines", &list)
	if len(list.Machines) != 1 {
		t.Fatalf("machines %+v, want the liar", list.Machines)
	}
	if m := list.Machines[0]; m.Price != "demoted" || !strings.Contains(m.Demoted, "reports itself faster than it runs") || m.PriceRatio < 1000 {
		t.Errorf("/api/machines: %+v, want demoted with its reason", m)
	}
}

// announce has the worker m say hello, as its first announcement reaches the server.
func (p *placing) announce(m Machine) {
	p.t.Helper()
	data, err := json.Marshal(m)
	if err != nil {
		p.t.Fatal(err)
	}
	p.c.hello(&nats.Msg{Subject: dn.Hello() + m.ID, Data: data})
	p.c.mu.Lock()
	defer p.c.mu.Unlock()
	if p.c.workers[m.ID] == nil {
		p.t.Fatalf("worker %s did not join", m.ID)
	}
}

// A second live worker that reports the name and host of a live one (what an external NATS
// server's workers do: no address tells them apart) is not a restart of it, and does not share its
// record: its runs 10,000 times their price demote it, not the honest one, which stays on price
// and placed; and when both have left and the honest one is started again, it gets its own counts
// back, not the impostor's.
func TestSameNameAndHostShareNoTrustRecord(t *testing.T) {
	p := newPlacing(t)
	p.announce(Machine{ID: "wA-1", Name: "wA", Host: "h", Slots: 2, Rates: scaledRates(1)})
	p.runsOnPrice("wA-1", 3)
	p.announce(Machine{ID: "wA-2", Name: "wA", Host: "h", Slots: 2, Rates: scaledRates(1e-4)})
	_, r := p.priced("matmul", measuring)
	p.ran("wA-2", r, 1e4)
	p.ran("wA-2", r, 1e4)
	if m := p.machine("wA [wA-2]"); m.Price != "demoted" {
		t.Errorf("the impostor after two runs 10,000 times their price: %+v, want demoted", m)
	}
	if m := p.machine("wA"); m.Price != "on price" || m.Demoted != "" {
		t.Errorf("the honest worker after the impostor's overruns: %+v, want on price, not demoted", m)
	}
	p.c.mu.Lock()
	p.c.workers["wA-1"].done, p.c.workers["wA-2"].done = 3, 50
	p.c.drop(p.c.workers["wA-2"], "machine left: impostor")
	p.c.drop(p.c.workers["wA-1"], "machine left: wA")
	p.c.mu.Unlock()
	p.announce(Machine{ID: "wA-3", Name: "wA", Host: "h", Slots: 2, Rates: scaledRates(1)})
	if m := p.machine("wA"); m.Price != "on price" || m.Done != 3 {
		t.Errorf("the honest worker started again: %+v, want on price with its own 3 runs done", m)
	}
}
