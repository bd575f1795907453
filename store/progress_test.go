package store

import (
	"context"
	"fmt"
	"testing"
)

// CellsDone counts each student's distinct cells with a run that ended done (not actions, not
// other statuses); RightAnswers lists the questions whose latest answer was right.
func TestProgressCounts(t *testing.T) {
	ctx := context.Background()
	s, err := Open("")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ada, err := s.AddStudent(ctx, "Ada", "sess-a", false)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []struct{ cell, action, status string }{
		{"c0", "", StatusDone}, {"c0", "", StatusDone}, {"c1", "", StatusDone},
		{"c2", "", StatusError}, {"c3", "ptx", StatusDone},
	} {
		run, err := s.AddRun(ctx, Run{Student: ada.ID, Lesson: "l", Cell: r.cell, Action: r.action, Source: "x", Machine: "CPU"})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Ended(ctx, run.ID, r.status, ""); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.CellsDone(ctx)
	if want := fmt.Sprint([]LessonCount{{ada.ID, "l", 2}}); err != nil || fmt.Sprint(got) != want {
		t.Errorf("CellsDone: got %v %v, want %s (c0 and c1)", got, err, want)
	}
	for _, a := range []struct {
		key   string
		right bool
	}{{"l-quiz-0.1", false}, {"l-quiz-0.1", true}, {"l-quiz-0.2", true}, {"l-quiz-0.3", true}, {"l-quiz-0.3", false}} {
		if err := s.SaveAnswer(ctx, ada.ID, "l", a.key, a.right); err != nil {
			t.Fatal(err)
		}
	}
	right, err := s.RightAnswers(ctx)
	if want := fmt.Sprint([]Answer{{ada.ID, "l", "l-quiz-0.1"}, {ada.ID, "l", "l-quiz-0.2"}}); err != nil || fmt.Sprint(right) != want {
		t.Errorf("RightAnswers: got %v %v, want %s (questions 1 and 2: the latest answers)", right, err, want)
	}
}
