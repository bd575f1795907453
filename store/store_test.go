package store

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

func TestRoundTripAndReopen(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	a, err := s.AddStudent(ctx, "Ada", "sess-a", false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.AddStudent(ctx, "ada", "sess-b", false); !errors.Is(err, ErrNameTaken) {
		t.Errorf("second Ada: got %v, want ErrNameTaken", err)
	}
	if err := s.SaveEdit(ctx, a.ID, "l", "c", "edited"); err != nil {
		t.Fatal(err)
	}
	done, err := s.AddRun(ctx, Run{Student: a.ID, Lesson: "l", Cell: "c", Source: "x", Machine: "m"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.AddMessage(ctx, done.ID, 1, "row", `{"a":1}`, false); err != nil {
		t.Fatal(err)
	}
	for seq, body := range []string{"<svg>1", "<svg>2"} {
		if err := s.AddMessage(ctx, done.ID, int64(seq+2), "chart", body, true); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Ended(ctx, done.ID, StatusDone, ""); err != nil {
		t.Fatal(err)
	}
	live, _ := s.AddRun(ctx, Run{Student: a.ID, Lesson: "l", Cell: "c", Source: "y", Machine: "m"})
	if err := s.Started(ctx, live.ID); err != nil {
		t.Fatal(err)
	}
	if err := s.RanOn(ctx, live.ID, "gpu-box (GPU NVIDIA H100)"); err != nil {
		t.Fatal(err)
	}
	waiting, err := s.AddRun(ctx, Run{Student: a.ID, Lesson: "l", Cell: "c", Action: "ptx", Source: "z", Machine: "m", Owner: "student 1"})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()

	s, err = Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Check(ctx); err != nil {
		t.Fatal(err)
	}
	got, ok, err := s.StudentBySession(ctx, "sess-a")
	if err != nil || !ok || got.Name != "Ada" {
		t.Errorf("session: got %+v %v %v", got, ok, err)
	}
	if _, ok, _ := s.StudentBySession(ctx, "sess-b"); ok {
		t.Error("a refused join signs in")
	}
	if e, _ := s.Edits(ctx, a.ID, "l"); e["c"] != "edited" {
		t.Errorf("edits %v", e)
	}
	runs, _ := s.Runs(ctx, a.ID, "")
	if len(runs) != 3 || runs[0].Status != StatusDone || runs[1].Status != StatusInterrupted || runs[2].Status != StatusQueued {
		t.Errorf("runs after reopen: %+v; want done, interrupted (it was running), queued", runs)
	} else if got, want := runs[1].Machine, "gpu-box (GPU NVIDIA H100)"; got != want {
		t.Errorf("machine of the run sent to a worker %q, want %q", got, want)
	}
	queued, err := s.Queued(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(queued) != 1 || queued[0].ID != waiting.ID || queued[0].Owner != "student 1" || queued[0].Action != "ptx" || queued[0].Source != "z" {
		t.Errorf("queued after reopen: %+v, want the waiting run with its owner", queued)
	}
	msgs, _ := s.Messages(ctx, done.ID)
	if len(msgs) != 2 || msgs[0].Type != "row" || msgs[1].Body != "<svg>2" {
		t.Errorf("messages %+v; want the row and the latest chart only", msgs)
	}
	if r, ok, _ := s.LatestUnedited(ctx, "l", "c", "", "x", time.Now().Add(-time.Hour)); !ok || r.ID != done.ID {
		t.Errorf("latest unedited: %+v %v", r, ok)
	}
	if err := s.DeleteEdit(ctx, a.ID, "l", "c"); err != nil {
		t.Fatal(err)
	}
	if e, _ := s.Edits(ctx, a.ID, "l"); len(e) != 0 {
		t.Errorf("edits after reset %v", e)
	}
}

func TestUnwritableDirIsAClearError(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	under := filepath.Join(file, "data") // even root cannot make a directory under a file
	if _, err := Open(under); err == nil || !strings.Contains(err.Error(), under) || !strings.Contains(err.Error(), "cannot be created") {
		t.Errorf("got %v, want an error naming %s that says it cannot be created", err, under)
	}
	if runtime.GOOS == "windows" || os.Geteuid() == 0 {
		t.Skip("needs a non-root Unix user: root writes anywhere")
	}
	dir := filepath.Join(t.TempDir(), "ro")
	if err := os.Mkdir(dir, 0o500); err != nil {
		t.Fatal(err)
	}
	_, err := Open(dir)
	if err == nil || !strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), "cannot be written") {
		t.Errorf("got %v, want an error naming %s that says it cannot be written", err, dir)
	}
}

func TestInMemory(t *testing.T) {
	s, err := Open("")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.AddStudent(context.Background(), "x", "y", false); err != nil {
		t.Fatal(err)
	}
	if s.Path() != "" {
		t.Errorf("path %q", s.Path())
	}
}
