package server

import (
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
