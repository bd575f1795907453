package cluster

import (
	"context"
	"testing"
	"time"

	"github.com/gpuplayground/playground/cells"
)

// lightRun times nothing (cells.Exclusive false); heavyRun measures.
type lightRun struct{}

func (lightRun) Estimate() time.Duration                  { return 0 }
func (lightRun) Run(context.Context, cells.Emitter) error { return nil }
func (lightRun) Exclusive() bool                          { return false }

type heavyRun struct{}

func (heavyRun) Estimate() time.Duration                  { return 0 }
func (heavyRun) Run(context.Context, cells.Emitter) error { return nil }

// This server's machine keeps the one-machine rule: runs that time nothing share its slots, a
// measuring run waits for them (drain) and then has the machine alone.
func TestLocalSlots(t *testing.T) {
	c := startCluster(t, Config{LocalWorker: true, Slots: 2})
	a, ok1, _, err1 := c.TryAcquire(lightRun{})
	b, ok2, _, err2 := c.TryAcquire(lightRun{})
	if !ok1 || !ok2 || err1 != nil || err2 != nil {
		t.Fatalf("two runs that time nothing on 2 slots: %v %v %v %v", ok1, ok2, err1, err2)
	}
	if _, ok, _, _ := c.TryAcquire(lightRun{}); ok {
		t.Error("a third run that times nothing got a slot of 2")
	}
	if _, ok, drain, _ := c.TryAcquire(heavyRun{}); ok || !drain {
		t.Errorf("a measuring run beside runs that time nothing: ok %v, drain %v; want false, true", ok, drain)
	}
	changed := c.Changed()
	a.Release()
	<-changed // a freed slot is a change
	if _, ok, _, _ := c.TryAcquire(heavyRun{}); ok {
		t.Error("a measuring run started while a run that times nothing runs")
	}
	b.Release()
	h, ok, _, _ := c.TryAcquire(heavyRun{})
	if !ok {
		t.Fatal("a measuring run on a free machine did not start")
	}
	if _, ok, drain, _ := c.TryAcquire(lightRun{}); ok || drain {
		t.Errorf("a run that times nothing beside a measuring run: ok %v, drain %v; want false, false", ok, drain)
	}
	h.Release()
	if s, ok, _, _ := c.TryAcquire(lightRun{}); !ok {
		t.Error("no slot after the measuring run ended")
	} else {
		s.Release()
	}
}
