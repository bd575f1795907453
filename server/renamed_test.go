package server

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/gpuplayground/playground/store"
)

// A former lesson URL answers 301 with the current one (a merged lesson's, with the section's
// #fragment), and what the data directory kept under former names (the last lesson opened, an edit,
// a run) is under the current names once the server has started, where the lesson page finds it.
func TestRenamedLessonsRedirectAndKeepWork(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st, err := store.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	me, err := st.AddStudent(ctx, localName, "s", true)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Seen(ctx, me.ID, "14-the-roofline"); err != nil {
		t.Fatal(err)
	}
	if err := st.SaveEdit(ctx, me.ID, "11-moving-data", "11-moving-data-0", "kernels: [gonum]\nsizes: [64]\n"); err != nil {
		t.Fatal(err)
	}
	run, err := st.AddRun(ctx, store.Run{Student: me.ID, Lesson: "02-from-graphics-to-ai", Cell: "02-from-graphics-to-ai-2", Source: "workload: llm-token\n", Machine: "m"})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Ended(ctx, run.ID, store.StatusDone, ""); err != nil {
		t.Fatal(err)
	}
	st.Close()

	s, base := startServer(t, Config{DataDir: dir})
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for old, want := range map[string]string{
		"/lessons/14-the-roofline":    "/lessons/the-roofline",
		"/lessons/11-moving-data":     "/lessons/the-gpu-in-front-of-you#across-the-bus-pcie",
		"/lessons/05-fast-cpu-matmul": "/lessons/fast-cpu-matmul",
	} {
		resp, err := noFollow.Get(base + old)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if got := resp.Header.Get("Location"); resp.StatusCode != http.StatusMovedPermanently || got != want {
			t.Errorf("GET %s: %d to %q, want 301 to %q", old, resp.StatusCode, got, want)
		}
	}
	// The page of a renamed lesson tells the browser which kept answers to move where.
	if page := getBody(t, base+"/lessons/counting-flops"); !strings.Contains(page, `data-renamed-answers="`) || !strings.Contains(page, "04-counting-flops-quiz-0.3") || !strings.Contains(page, "counting-flops-predict-0") {
		t.Errorf("the counting-flops page does not name its answers' former keys")
	}
	if code := getStatus(t, base+"/lessons/99-no-such-lesson"); code != http.StatusNotFound {
		t.Errorf("a slug that was never a lesson: %d, want 404", code)
	}

	if got, _, _ := s.store.StudentByID(ctx, me.ID); got.Lesson != "the-roofline" {
		t.Errorf("last lesson opened: got %q, want the-roofline", got.Lesson)
	}
	edits, err := s.store.Edits(ctx, me.ID, "the-gpu-in-front-of-you")
	if err != nil || edits["the-gpu-in-front-of-you-1"] != "kernels: [gonum]\nsizes: [64]\n" {
		t.Errorf("the edit of Moving data's first cell: got %v (%v), want it as the-gpu-in-front-of-you-1", edits, err)
	}
	runs, err := s.store.Runs(ctx, me.ID, "budgets-and-supercomputers")
	if err != nil || len(runs) != 1 || runs[0].ID != run.ID || runs[0].Cell != "budgets-and-supercomputers-2" {
		t.Errorf("the run of the budget cell: got %+v (%v), want run %d as budgets-and-supercomputers-2", runs, err, run.ID)
	}
	if l := s.lesson("budgets-and-supercomputers"); l == nil {
		t.Fatal("no lesson budgets-and-supercomputers")
	} else if _, ok := l.Cell("budgets-and-supercomputers-2"); !ok {
		t.Error("the lesson has no cell budgets-and-supercomputers-2")
	}
}

func getStatus(t *testing.T, url string) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}
