package server

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/gpuplayground/playground/cells"
)

// gatedExecutor is this process's executor plus a machine of class "gpu" that is busy until open
// is called: runs with `machine: gpu` wait for it, others run here.
type gatedExecutor struct {
	*InProcess
	mu   sync.Mutex
	open bool
}

func (g *gatedExecutor) TryAcquire(r cells.Run) (Slot, bool, bool, error) {
	if cells.NeedsOf(r).Machine == "gpu" {
		g.mu.Lock()
		defer g.mu.Unlock()
		if !g.open {
			return nil, false, false, nil
		}
	}
	return g.InProcess.TryAcquire(r)
}

func (g *gatedExecutor) release() {
	g.mu.Lock()
	g.open = true
	g.mu.Unlock()
	// A change, so that the queue looks again: take and free a slot (nothing else runs now).
	if s, ok, _, _ := g.InProcess.TryAcquire(probeRun{Shared: true}); ok {
		s.Release()
	}
}

// A run that waits for a busy machine does not hold up the runs behind it that a free machine can
// take; it starts, in its turn, once its machine is free, and each ends with one terminal message.
func TestQueueSkipsBusyMachine(t *testing.T) {
	cfg := probeConfig(t)
	cfg.Devices = noDevice
	ex := &gatedExecutor{InProcess: NewInProcess(1)}
	cfg.Executor = ex
	_, base := startServer(t, cfg)
	ws := dial(t, base)
	if err := ws.WriteJSON(probeMsg("g", "machine: gpu\nrows: 2")); err != nil {
		t.Fatal(err)
	}
	firstOf(t, ws, "g", TypeQueued)
	if err := ws.WriteJSON(probeMsg("c", "rows: 3")); err != nil {
		t.Fatal(err)
	}
	var gDone bool
	deadline := time.Now().Add(30 * time.Second)
	_ = ws.SetReadDeadline(deadline)
	for {
		var m Message
		if err := ws.ReadJSON(&m); err != nil {
			t.Fatalf("waiting for c to end: %v", err)
		}
		if m.ID == "g" && Terminal(m.Type) {
			gDone = true
		}
		if m.ID == "c" && Terminal(m.Type) {
			if m.Type != TypeDone {
				t.Fatalf("c ended %+v", m)
			}
			break
		}
	}
	if gDone {
		t.Fatal("g ended before its machine was free")
	}
	ex.release()
	msgs := collect(t, ws, "g", 30*time.Second)
	if last := msgs[len(msgs)-1]; last.Type != TypeDone || count(msgs, TypeDone)+count(msgs, TypeError)+count(msgs, TypeCancelled) != 1 {
		t.Errorf("g ended %+v, want one done", msgs)
	}
}

// relayExecutor is a machine elsewhere (package cluster's remote slot): its slot relays events
// that machine already paced, each as it comes, into the run's emitter.
type relayExecutor struct{ *InProcess }

func (x relayExecutor) TryAcquire(r cells.Run) (Slot, bool, bool, error) {
	s, ok, drain, err := x.InProcess.TryAcquire(r)
	if !ok {
		return s, ok, drain, err
	}
	return relaySlot{s}, true, false, nil
}

type relaySlot struct{ Slot }

func (relaySlot) Execute(_ context.Context, _ Job, _ cells.Run, e cells.Emitter) error {
	for i := 1; i <= 5; i++ {
		e.Emit(cells.Event{Type: cells.TypeProgress, Body: cells.Body{Progress: &cells.Progress{Done: i, Total: 10}}})
	}
	return nil
}

// The server paces nothing of a run itself: the machine that runs it does (machine.Paced), so the
// events a machine elsewhere relays reach the page as they come, paced once, not thinned again.
func TestRelayedEventsArePacedOnce(t *testing.T) {
	cfg := probeConfig(t)
	cfg.Devices = noDevice
	cfg.Executor = relayExecutor{NewInProcess(1)}
	_, base := startServer(t, cfg)
	ws := dial(t, base)
	if err := ws.WriteJSON(probeMsg("r", "rows: 1")); err != nil {
		t.Fatal(err)
	}
	msgs := collect(t, ws, "r", 30*time.Second)
	var got []int
	for _, m := range msgs {
		if m.Type == TypeProgress && m.Progress != nil {
			got = append(got, m.Done)
		}
	}
	if want := []int{1, 2, 3, 4, 5}; !slices.Equal(got, want) || msgs[len(msgs)-1].Type != TypeDone {
		t.Errorf("progress relayed %v, want %v, then done: %+v", got, want, msgs)
	}
}
