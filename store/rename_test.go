package store

import (
	"context"
	"testing"
)

// Rename moves a student's last lesson, edits and runs from former names to current ones, keeps the
// newer of two edits of one cell, keeps the quota's count true, and changes nothing the second time.
func TestRenameMovesEditsAndRuns(t *testing.T) {
	ctx := context.Background()
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	a, err := s.AddStudent(ctx, "Ada", "sess-a", false)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Seen(ctx, a.ID, "11-moving-data"); err != nil {
		t.Fatal(err)
	}
	for _, e := range []struct{ lesson, cell, source string }{
		{"11-moving-data", "11-moving-data-1", "old edit of the moved cell"},
		{"14-the-roofline", "14-the-roofline-0", "older edit"},
		{"the-roofline", "the-roofline-0", "newer edit"},
		{"02-from-graphics-to-ai", "02-from-graphics-to-ai-9", "a cell no lesson has now"},
		{"02-from-graphics-to-ai", "pytorch", "older edit of a cell with an id of its own"},
		{"from-graphics-to-ai", "pytorch", "newer edit of a cell with an id of its own"},
	} {
		if err := s.SaveEdit(ctx, a.ID, e.lesson, e.cell, e.source); err != nil {
			t.Fatal(err)
		}
	}
	run, err := s.AddRun(ctx, Run{Student: a.ID, Lesson: "11-moving-data", Cell: "11-moving-data-1", Source: "kernels: [cublas]", Machine: "m"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.AddMessage(ctx, run.ID, 1, "row", `{"n":256}`, false); err != nil {
		t.Fatal(err)
	}
	if err := s.Ended(ctx, run.ID, StatusDone, ""); err != nil {
		t.Fatal(err)
	}
	lessons := map[string]string{"11-moving-data": "the-gpu-in-front-of-you", "14-the-roofline": "the-roofline", "02-from-graphics-to-ai": "from-graphics-to-ai"}
	moves := []CellMove{
		{From: "11-moving-data-1", Lesson: "the-gpu-in-front-of-you", Cell: "the-gpu-in-front-of-you-2"},
		{From: "14-the-roofline-0", Lesson: "the-roofline", Cell: "the-roofline-0"},
	}
	n, err := s.Rename(ctx, lessons, moves)
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Errorf("Rename changed nothing")
	}

	if st, _, _ := s.StudentByID(ctx, a.ID); st.Lesson != "the-gpu-in-front-of-you" {
		t.Errorf("last lesson: got %q, want the-gpu-in-front-of-you", st.Lesson)
	}
	for _, tt := range []struct {
		lesson string
		want   map[string]string
	}{
		{"the-gpu-in-front-of-you", map[string]string{"the-gpu-in-front-of-you-2": "old edit of the moved cell"}},
		{"the-roofline", map[string]string{"the-roofline-0": "newer edit"}},
		{"from-graphics-to-ai", map[string]string{"02-from-graphics-to-ai-9": "a cell no lesson has now", "pytorch": "newer edit of a cell with an id of its own"}},
		{"02-from-graphics-to-ai", map[string]string{}},
		{"11-moving-data", map[string]string{}},
		{"14-the-roofline", map[string]string{}},
	} {
		got, err := s.Edits(ctx, a.ID, tt.lesson)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(tt.want) {
			t.Errorf("edits of %s: got %v, want %v", tt.lesson, got, tt.want)
		}
		for cell, src := range tt.want {
			if got[cell] != src {
				t.Errorf("edit of %s %s: got %q, want %q", tt.lesson, cell, got[cell], src)
			}
		}
	}
	rs, err := s.Runs(ctx, a.ID, "the-gpu-in-front-of-you")
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 1 || rs[0].ID != run.ID || rs[0].Cell != "the-gpu-in-front-of-you-2" || rs[0].Status != StatusDone {
		t.Fatalf("runs of the merged lesson: got %+v, want run %d as the-gpu-in-front-of-you-2", rs, run.ID)
	}
	if msgs, err := s.Messages(ctx, run.ID); err != nil || len(msgs) == 0 {
		t.Errorf("the moved run's messages: %v, %v", msgs, err)
	}
	// Its results are shared under the new id, as a run of the unedited cell there would be.
	if got, ok, err := s.LatestUnedited(ctx, "the-gpu-in-front-of-you", "the-gpu-in-front-of-you-2", "", "kernels: [cublas]", "", rs[0].Created); err != nil || !ok || got.ID != run.ID {
		t.Errorf("shared results under the new id: got %+v %v %v", got, ok, err)
	}

	used, err := s.Usage(ctx, a.ID)
	if err != nil {
		t.Fatal(err)
	}
	if want := recount(t, s, a.ID); used != want {
		t.Errorf("usage after the rename: got %d, want %d (counted from the rows)", used, want)
	}
	if n, err := s.Rename(ctx, lessons, moves); err != nil || n != 0 {
		t.Errorf("a second Rename: changed %d rows (%v), want none", n, err)
	}
}

// recount is a student's usage counted afresh from their runs and messages, as countBytes does.
func recount(t *testing.T, s *Store, student int64) int64 {
	t.Helper()
	var n int64
	err := s.db.QueryRow(`SELECT coalesce(sum(? + length(r.lesson) + length(r.cell) + length(r.action) + length(r.source) + length(r.machine) + length(r.owner) + length(r.class)
		+ (SELECT coalesce(sum(length(m.body)), 0) FROM messages m WHERE m.run = r.id)), 0) FROM runs r WHERE r.student = ?`, runRowBytes, student).Scan(&n)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
