package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// acceptFixture is a student over a quota of quota bytes: one finished run (old) with 4 KiB of
// messages, and an edit of cell "c" of lesson "l" ("mine, before").
type acceptFixture struct {
	s     *Store
	a     Student
	old   Run
	quota int64
}

func newAcceptFixture(t *testing.T) acceptFixture {
	t.Helper()
	s, a := openMem(t)
	kb := strings.Repeat("y", 1024)
	old := addDone(t, s, a.ID, kb, kb, kb, kb)
	if err := s.SaveEdit(context.Background(), a.ID, "l", "c", "mine, before"); err != nil {
		t.Fatal(err)
	}
	used, err := s.Usage(context.Background(), a.ID)
	if err != nil {
		t.Fatal(err)
	}
	return acceptFixture{s: s, a: a, old: old, quota: used - 1024}
}

// request asks for a run of the edited cell with source "mine, now", admit counting its calls.
func (f acceptFixture) request(admits *int, admitErr error) Request {
	return Request{Student: f.a.ID, Lesson: "l", Cell: "c", Source: "mine, now", Edited: true,
		Run:   &Run{Student: f.a.ID, Lesson: "l", Cell: "c", Source: "mine, now", Edited: true, Machine: "m", Owner: "o"},
		Quota: f.quota, PrunedNote: `{"type":"note"}`,
		Admit: func() error { *admits++; return admitErr }}
}

// state is what the fixture's student has in the store: their edit, their runs (id:status:pruned)
// and their usage.
func (f acceptFixture) state(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	edits, err := f.s.Edits(ctx, f.a.ID, "l")
	if err != nil {
		t.Fatal(err)
	}
	runs, err := f.s.Runs(ctx, f.a.ID, "")
	if err != nil {
		t.Fatal(err)
	}
	used, err := f.s.Usage(ctx, f.a.ID)
	if err != nil {
		t.Fatal(err)
	}
	msgs, err := f.s.Messages(ctx, f.old.ID)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	b.WriteString("edit=" + edits["c"])
	for _, r := range runs {
		b.WriteString(" run=" + r.Source + ":" + r.Status)
		if r.Pruned {
			b.WriteString(":pruned")
		}
	}
	fmt.Fprintf(&b, " old-messages=%d used=%d", len(msgs), used)
	return b.String()
}

// Accept records the edit, the pruning, and the run with its bytes in one transaction.
func TestAcceptRecordsARunInOneTransaction(t *testing.T) {
	f := newAcceptFixture(t)
	admits := 0
	before := f.s.Commits()
	r, err := f.s.Accept(context.Background(), f.request(&admits, nil))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := f.s.Commits()-before, int64(1); got != want {
		t.Errorf("Accept committed %d transactions, want %d", got, want)
	}
	if admits != 1 {
		t.Errorf("Admit called %d times, want 1", admits)
	}
	got, _, err := f.s.GetRun(context.Background(), r.ID)
	if err != nil || got.Status != StatusQueued || got.Source != "mine, now" || got.Owner != "o" || !got.Edited {
		t.Errorf("the recorded run: %+v, %v; want it queued with its source, owner and edited", got, err)
	}
	if st := f.state(t); !strings.HasPrefix(st, "edit=mine, now run=src:done:pruned run=mine, now:queued old-messages=2") {
		t.Errorf("after Accept: %s; want the new edit, the old run pruned (a note and its end) and the new run queued", st)
	}
}

// A failure part way (the run's row cannot be written) leaves nothing of the request: not the
// edit, not the pruning, no run, the usage as it was; Admit, called, is the caller's to undo.
func TestAcceptFailurePartWayLeavesNoPartialRows(t *testing.T) {
	f := newAcceptFixture(t)
	ctx := context.Background()
	want := f.state(t)
	if _, err := f.s.db.ExecContext(ctx, `CREATE TEMP TRIGGER fail_run BEFORE INSERT ON runs
		BEGIN SELECT RAISE(ABORT, 'injected failure'); END`); err != nil {
		t.Fatal(err)
	}
	admits := 0
	before := f.s.Commits()
	_, err := f.s.Accept(ctx, f.request(&admits, nil))
	if err == nil || !strings.Contains(err.Error(), "injected failure") {
		t.Fatalf("Accept with the run's row failing: %v, want the injected failure", err)
	}
	if got := f.s.Commits() - before; got != 0 {
		t.Errorf("a failed Accept committed %d transactions, want none", got)
	}
	if admits != 1 {
		t.Errorf("Admit called %d times, want once (the failure came after it)", admits)
	}
	if got := f.state(t); got != want {
		t.Errorf("after a failed Accept: %s\nwant as before:        %s", got, want)
	}
	// The same request without the failure goes through.
	if _, err := f.s.db.ExecContext(ctx, "DROP TRIGGER fail_run"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.s.Accept(ctx, f.request(&admits, nil)); err != nil {
		t.Errorf("Accept after the failure: %v", err)
	}
}

// A refused run (over the quota even after pruning, or refused by Admit) is not recorded; the edit
// and the pruning are, as for a request refused before (no Run), whose edit alone is kept.
func TestAcceptRefusalsKeepTheEditOnly(t *testing.T) {
	ctx := context.Background()
	t.Run("over quota", func(t *testing.T) {
		f := newAcceptFixture(t)
		admits := 0
		req := f.request(&admits, nil)
		req.Quota = 1 // below the run's own bytes: nothing prunes it to fit
		_, err := f.s.Accept(ctx, req)
		var over *OverQuotaError
		if !errors.As(err, &over) || over.Quota != 1 || over.Used <= 1 {
			t.Fatalf("Accept over the quota: %v, want an *OverQuotaError", err)
		}
		if admits != 0 {
			t.Errorf("Admit called %d times for a run over the quota, want 0", admits)
		}
		if st := f.state(t); !strings.HasPrefix(st, "edit=mine, now run=src:done:pruned old-messages=2") {
			t.Errorf("after the refusal: %s; want the edit kept, the old run pruned, no new run", st)
		}
	})
	t.Run("admit refuses", func(t *testing.T) {
		f := newAcceptFixture(t)
		admits, no := 0, errors.New("no room in your share")
		if _, err := f.s.Accept(ctx, f.request(&admits, no)); !errors.Is(err, no) {
			t.Fatalf("Accept with Admit refusing: %v, want Admit's error", err)
		}
		if st := f.state(t); !strings.HasPrefix(st, "edit=mine, now run=src:done:pruned old-messages=2") {
			t.Errorf("after the refusal: %s; want the edit kept, no new run", st)
		}
	})
	t.Run("no run", func(t *testing.T) {
		f := newAcceptFixture(t)
		want := strings.Replace(f.state(t), "edit=mine, before", "edit=", 1)
		if _, err := f.s.Accept(ctx, Request{Student: f.a.ID, Lesson: "l", Cell: "c", Source: "the lesson's", Quota: 0}); err != nil {
			t.Fatal(err)
		}
		if got := f.state(t); got != want {
			t.Errorf("after a request without a run of the lesson's source: %s, want %s (the edit forgotten, nothing pruned)", got, want)
		}
	})
}
