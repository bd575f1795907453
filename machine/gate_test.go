package machine

import (
	"context"
	"testing"
	"time"
)

// The gate (a worker's own guard, the in-process executor's, each machine's in placement): runs that time nothing enter side by side, a measuring run only alone, and
// nothing beside a measuring run; a measuring run waiting enters when the last other run leaves.
func TestGate(t *testing.T) {
	g := NewGate(2)
	now, cancel := context.WithCancel(context.Background())
	cancel() // enter with now: true only if it may enter at once
	bg := context.Background()
	if g.Enter(bg, false) != nil || g.Enter(bg, false) != nil {
		t.Fatal("two runs that time nothing did not enter an open gate")
	}
	if g.Enter(now, true) == nil {
		t.Fatal("a measuring run entered beside runs that time nothing")
	}
	entered := make(chan error, 1)
	go func() { entered <- g.Enter(bg, true) }()
	g.Leave(false)
	select {
	case err := <-entered:
		t.Fatalf("a measuring run entered beside a run that times nothing: %v", err)
	default:
	}
	g.Leave(false)
	select {
	case err := <-entered:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a waiting measuring run did not enter when the machine was free")
	}
	if g.Enter(now, false) == nil || g.Enter(now, true) == nil {
		t.Fatal("a run entered beside a measuring run")
	}
	g.Leave(true)
	if g.Enter(now, false) != nil {
		t.Fatal("a run that times nothing did not enter once the measuring run left")
	}
}
