package store

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// A store closed and opened again keeps its students, edits, runs (a running one becomes
// interrupted, a queued one stays queued with its owner and class) and messages (only a chart's
// latest), and shares a done run's results only with a page that asked for the same class.
func TestRoundTripAndReopen(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	f := fillForReopen(ctx, t, s)
	s.Close()

	s, err = Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Check(ctx); err != nil {
		t.Fatal(err)
	}
	checkReopened(ctx, t, s, f)
	checkSharedByClass(ctx, t, s, f)
	if err := s.DeleteEdit(ctx, f.a.ID, "l", "c"); err != nil {
		t.Fatal(err)
	}
	if e, _ := s.Edits(ctx, f.a.ID, "l"); len(e) != 0 {
		t.Errorf("edits after reset %v", e)
	}
}

// reopenFixture is what fillForReopen wrote that the checks read: student Ada and her done and
// waiting runs.
type reopenFixture struct {
	a             Student
	done, waiting Run
}

// fillForReopen adds Ada (and a refused second "ada"), an edit, a done run with a row and two charts,
// a running run sent to a worker, and a queued run with an owner and class.
func fillForReopen(ctx context.Context, t *testing.T, s *Store) reopenFixture {
	t.Helper()
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
	waiting, err := s.AddRun(ctx, Run{Student: a.ID, Lesson: "l", Cell: "c", Action: "ptx", Source: "z", Machine: "m", Owner: "student 1", Class: "lab-b"})
	if err != nil {
		t.Fatal(err)
	}
	return reopenFixture{a: a, done: done, waiting: waiting}
}

// checkReopened checks what the reopened store reads back of f: Ada's session (and no session for
// the refused join), her edit, her three runs' statuses and machine, the queue, and the done run's
// messages.
func checkReopened(ctx context.Context, t *testing.T, s *Store, f reopenFixture) {
	t.Helper()
	a, done, waiting := f.a, f.done, f.waiting
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
	if len(queued) != 1 || queued[0].ID != waiting.ID || queued[0].Owner != "student 1" || queued[0].Action != "ptx" || queued[0].Source != "z" || queued[0].Class != "lab-b" {
		t.Errorf("queued after reopen: %+v, want the waiting run with its owner and class", queued)
	}
	msgs, _ := s.Messages(ctx, done.ID)
	if len(msgs) != 2 || msgs[0].Type != "row" || msgs[1].Body != "<svg>2" {
		t.Errorf("messages %+v; want the row and the latest chart only", msgs)
	}
}

// checkSharedByClass checks that the done run's results are shared with a page that asked for any
// machine, not with one that asked for class h100, and that a run of class h100 is shared with the
// latter only.
func checkSharedByClass(ctx context.Context, t *testing.T, s *Store, f reopenFixture) {
	t.Helper()
	a, done := f.a, f.done
	if r, ok, _ := s.LatestUnedited(ctx, "l", "c", "", "x", "", time.Now().Add(-time.Hour)); !ok || r.ID != done.ID {
		t.Errorf("latest unedited: %+v %v", r, ok)
	}
	// Only a run that asked for the same class of machine shares its results.
	if r, ok, _ := s.LatestUnedited(ctx, "l", "c", "", "x", "h100", time.Now().Add(-time.Hour)); ok {
		t.Errorf("a run on any machine is shared with a page that asked for class h100: %+v", r)
	}
	onH100, _ := s.AddRun(ctx, Run{Student: a.ID, Lesson: "l", Cell: "c", Source: "x", Machine: "m", Class: "h100"})
	if err := s.Ended(ctx, onH100.ID, StatusDone, ""); err != nil {
		t.Fatal(err)
	}
	if r, ok, _ := s.LatestUnedited(ctx, "l", "c", "", "x", "h100", time.Now().Add(-time.Hour)); !ok || r.ID != onH100.ID {
		t.Errorf("latest unedited of class h100: %+v %v, want run %d", r, ok, onH100.ID)
	}
	if r, ok, _ := s.LatestUnedited(ctx, "l", "c", "", "x", "", time.Now().Add(-time.Hour)); !ok || r.ID != done.ID {
		t.Errorf("latest unedited of any machine: %+v %v, want run %d, not the h100 one", r, ok, done.ID)
	}
}

// A database made before runs had their later columns (browser, owner, class) gets them when opened,
// and its runs read back with their defaults.
func TestOldDatabaseGainsColumns(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, FileName))
	if err != nil {
		t.Fatal(err)
	}
	old := `CREATE TABLE students (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE COLLATE NOCASE, session TEXT NOT NULL UNIQUE,
		instructor INTEGER NOT NULL DEFAULT 0, created INTEGER NOT NULL, last_seen INTEGER NOT NULL, lesson TEXT NOT NULL DEFAULT '');
	CREATE TABLE runs (id INTEGER PRIMARY KEY, student INTEGER NOT NULL REFERENCES students(id), lesson TEXT NOT NULL, cell TEXT NOT NULL,
		action TEXT NOT NULL DEFAULT '', source TEXT NOT NULL, edited INTEGER NOT NULL, status TEXT NOT NULL, message TEXT NOT NULL DEFAULT '',
		machine TEXT NOT NULL, created INTEGER NOT NULL, started INTEGER NOT NULL DEFAULT 0, ended INTEGER NOT NULL DEFAULT 0,
		shared_from INTEGER NOT NULL DEFAULT 0);
	INSERT INTO students VALUES (1, 'Ada', 'x', 0, 1, 1, '');
	INSERT INTO runs(id, student, lesson, cell, source, edited, status, machine, created) VALUES (7, 1, 'l', 'c', 's', 0, 'queued', 'm', 1);`
	if _, err := db.Exec(old); err != nil {
		t.Fatal(err)
	}
	db.Close()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	queued, err := s.Queued(ctx)
	if err != nil || len(queued) != 1 || queued[0].ID != 7 || queued[0].Class != "" || queued[0].Owner != "" || queued[0].Browser {
		t.Fatalf("the old queued run: %+v, %v", queued, err)
	}
	r, err := s.AddRun(ctx, Run{Student: 1, Lesson: "l", Cell: "c", Source: "s", Machine: "m", Class: "lab"})
	if err != nil {
		t.Fatal(err)
	}
	if got, ok, err := s.GetRun(ctx, r.ID); err != nil || !ok || got.Class != "lab" {
		t.Errorf("a new run in the old database: %+v %v %v", got, ok, err)
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
