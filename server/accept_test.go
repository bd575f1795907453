package server

import (
	"context"
	"strings"
	"testing"
)

// Accepting a run writes the store once: one transaction keeps the student's edit and records the
// run (the quota and the admission checked inside it) before the run is queued, whether the source
// is the lesson's or edited. (It was a write for the edit, a write for the run, and a walk between
// the websocket code and the store in between.)
func TestAcceptingARunCommitsOnce(t *testing.T) {
	s, base := startServer(t, classConfig(t))
	cell, _ := s.lesson("p").Cell("p-0")
	ws := join(t, base, "class-token", "Ada").dial(t)
	s.queue.setPaused(true) // nothing starts: what the store records until `queued` is the acceptance
	lessons := probeMsg("lessons", cell.Source)
	lessons.Fresh = true
	for _, m := range []Message{lessons, probeMsg("edited", "rows: 3")} {
		before := s.store.Commits()
		if err := ws.WriteJSON(m); err != nil {
			t.Fatal(err)
		}
		firstOf(t, ws, m.ID, TypeQueued)
		if got, want := s.store.Commits()-before, int64(1); got != want {
			t.Errorf("run %s: %d store transactions before it was queued, want %d", m.ID, got, want)
		}
	}
}

// A run refused where it is recorded (its id in use, the client's share full) is not recorded, and
// the request keeps its edit, as one refused earlier does; the refusal names the reason.
func TestRefusedRunKeepsTheEditOnly(t *testing.T) {
	cfg := classConfig(t)
	cfg.MaxRunsPerClient = 1
	s, base := startServer(t, cfg)
	ws := join(t, base, "class-token", "Ada").dial(t)
	ada := storedStudentID(t, s, "Ada")
	s.queue.setPaused(true)
	if err := ws.WriteJSON(probeMsg("a", "rows: 2")); err != nil {
		t.Fatal(err)
	}
	firstOf(t, ws, "a", TypeQueued)
	for _, tt := range []struct {
		m    Message
		want string
	}{
		{probeMsg("a", "rows: 3"), `run id "a" is already in use`},
		{probeMsg("b", "rows: 4"), "1 runs queued or running, the limit per client"},
	} {
		if err := ws.WriteJSON(tt.m); err != nil {
			t.Fatal(err)
		}
		got := firstOf(t, ws, tt.m.ID, TypeError)
		if !strings.Contains(got.Message, tt.want) {
			t.Errorf("run %s: refused with %q, want %q", tt.m.ID, got.Message, tt.want)
		}
		edits, err := s.store.Edits(context.Background(), ada, "p")
		if err != nil {
			t.Fatal(err)
		}
		if edits["p-0"] != tt.m.Source {
			t.Errorf("run %s refused: the kept edit is %q, want the request's %q", tt.m.ID, edits["p-0"], tt.m.Source)
		}
		runs, err := s.store.Runs(context.Background(), ada, "")
		if err != nil {
			t.Fatal(err)
		}
		if len(runs) != 1 {
			t.Errorf("run %s refused: %d runs recorded, want only the first", tt.m.ID, len(runs))
		}
	}
}
