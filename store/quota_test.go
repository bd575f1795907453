package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// openMem opens an in-memory store with one student, Ada.
func openMem(t *testing.T) (*Store, Student) {
	t.Helper()
	s, err := Open("")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	a, err := s.AddStudent(context.Background(), "Ada", "sess-a", false)
	if err != nil {
		t.Fatal(err)
	}
	return s, a
}

// addDone records a finished run of student with messages of the given bodies (seq 1…), ended done.
func addDone(t *testing.T, s *Store, student int64, bodies ...string) Run {
	t.Helper()
	ctx := context.Background()
	r, err := s.AddRun(ctx, Run{Student: student, Lesson: "l", Cell: "c", Source: "src", Machine: "m"})
	if err != nil {
		t.Fatal(err)
	}
	for i, b := range bodies {
		if err := s.AddMessage(ctx, r.ID, int64(i+1), "row", b, false); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.AddMessage(ctx, r.ID, int64(len(bodies)+1), StatusDone, `{"type":"done"}`, false); err != nil {
		t.Fatal(err)
	}
	if err := s.Ended(ctx, r.ID, StatusDone, ""); err != nil {
		t.Fatal(err)
	}
	return r
}

func bodiesOf(msgs []Message) string {
	var out []string
	for _, m := range msgs {
		out = append(out, m.Type+":"+m.Body)
	}
	return strings.Join(out, " ")
}

// A reference stands for the referenced run's messages but its start and end, and costs its
// student only the reference.
func TestRefShowsWithoutCopying(t *testing.T) {
	ctx := context.Background()
	s, a := openMem(t)
	b, err := s.AddStudent(ctx, "Bob", "sess-b", false)
	if err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("x", 10000)
	src := addDone(t, s, a.ID, "r1-"+big, "r2")
	before, _ := s.Usage(ctx, b.ID)
	r, err := s.AddRun(ctx, Run{Student: b.ID, Lesson: "l", Cell: "c", Source: "src", Machine: "m", SharedFrom: src.ID})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []struct {
		seq       int64
		typ, body string
	}{{1, "shared", "s"}, {3, StatusDone, "d"}} {
		if err := s.AddMessage(ctx, r.ID, m.seq, m.typ, m.body, false); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.AddRef(ctx, r.ID, 2, src.ID); err != nil {
		t.Fatal(err)
	}
	msgs, err := s.Messages(ctx, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := bodiesOf(msgs), "shared:s row:r1-"+big+" row:r2 done:d"; got != want {
		t.Errorf("the sharing run's messages: %.80s…, want %.80s…", got, want)
	}
	after, _ := s.Usage(ctx, b.ID)
	if grew := after - before; grew > 1000 {
		t.Errorf("Bob's usage grew by %d bytes for a run that shows %d bytes of Ada's: want a reference, not a copy", grew, len(big))
	}
}

// Usage follows what is kept (a replaced chart counts once), and Prune removes the oldest finished
// runs' messages, leaving a note and the end, until the student is within the quota.
func TestUsageAndPrune(t *testing.T) {
	ctx := context.Background()
	s, a := openMem(t)
	kb := strings.Repeat("y", 1024)
	old := addDone(t, s, a.ID, kb, kb, kb)
	mid := addDone(t, s, a.ID, kb, kb, kb)
	live, err := s.AddRun(ctx, Run{Student: a.ID, Lesson: "l", Cell: "c", Source: "src", Machine: "m"})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := s.AddMessage(ctx, live.ID, int64(i+1), "chart", kb, true); err != nil {
			t.Fatal(err)
		}
	}
	used, err := s.Usage(ctx, a.ID)
	if err != nil {
		t.Fatal(err)
	}
	if lo, hi := int64(7*1024), int64(8*1024); used < lo || used > hi {
		t.Fatalf("usage %d bytes, want between %d and %d (6 rows and one chart of 1 KiB, plus the runs)", used, lo, hi)
	}
	note := `{"type":"note","note":{"level":"info","message":"pruned"}}`
	n, after, err := s.Prune(ctx, a.ID, used-1024, note)
	if err != nil {
		t.Fatal(err)
	}
	if n != 1 || after > used-1024 {
		t.Errorf("Prune: %d runs, usage %d after, want 1 run (the oldest) and at most %d", n, after, used-1024)
	}
	if got, _ := s.Usage(ctx, a.ID); got != after {
		t.Errorf("Usage after Prune %d, want %d as Prune said", got, after)
	}
	msgs, _ := s.Messages(ctx, old.ID)
	if got, want := bodiesOf(msgs), "note:"+note+` done:{"type":"done"}`; got != want {
		t.Errorf("the pruned run's messages: %s, want %s", got, want)
	}
	for _, tt := range []struct {
		id     int64
		pruned bool
	}{{old.ID, true}, {mid.ID, false}, {live.ID, false}} {
		if r, _, _ := s.GetRun(ctx, tt.id); r.Pruned != tt.pruned {
			t.Errorf("run %d: pruned %v, want %v", tt.id, r.Pruned, tt.pruned)
		}
	}
	// A quota below what the live run takes prunes every finished run and says what is left.
	n, after, err = s.Prune(ctx, a.ID, 0, note)
	if err != nil || n != 1 || after <= 0 {
		t.Errorf("Prune to 0: %d runs, %d bytes left, %v; want the other finished run and the live run's bytes left", n, after, err)
	}
	if _, ok, _ := s.LatestUnedited(ctx, "l", "c", "", "src", "", old.Ended.Add(-60e9)); ok {
		t.Errorf("a pruned run is offered as shared results")
	}
}

// Room refuses new runs and edits below the free space asked for, reads go on, and a failing
// check never refuses.
func TestRoomRefusesNewWork(t *testing.T) {
	ctx := context.Background()
	s, a := openMem(t)
	r := addDone(t, s, a.ID, "kept")
	free, fail := uint64(10<<30), error(nil)
	s.SetDiskGuard(DiskGuard{Free: func(string) (uint64, uint64, error) { return free, 100 << 30, fail }, MinFreeBytes: 256 << 20, MinFreePercent: 5})
	if err := s.Room(); err != nil {
		t.Fatalf("10 GiB free of 100: %v", err)
	}
	free = 4 << 30 // under 5 %
	if _, err := s.AddRun(ctx, Run{Student: a.ID, Lesson: "l", Cell: "c", Source: "x"}); !errors.Is(err, ErrDiskLow) || !strings.Contains(err.Error(), "4096 MiB free") {
		t.Errorf("AddRun with 4 GiB free of 100: %v, want ErrDiskLow saying what is free", err)
	}
	if err := s.SaveEdit(ctx, a.ID, "l", "c", "e"); !errors.Is(err, ErrDiskLow) {
		t.Errorf("SaveEdit: %v, want ErrDiskLow", err)
	}
	if msgs, err := s.Messages(ctx, r.ID); err != nil || len(msgs) != 2 {
		t.Errorf("reading a run while the disk is full: %d messages, %v", len(msgs), err)
	}
	s.SetDiskGuard(DiskGuard{Free: func(string) (uint64, uint64, error) { return free, 100 << 30, fail }, MinFreeBytes: 256 << 20, MinFreePercent: -1})
	if err := s.Room(); err != nil {
		t.Errorf("4 GiB free, no percentage asked: %v, want room", err)
	}
	fail = fmt.Errorf("statfs failed")
	if err := s.Room(); err != nil {
		t.Errorf("a failing check: %v, want no refusal", err)
	}
}

// The free space kept scales with the disk both ways: on a 2 GB disk 5 % (about 95 MiB, above the
// 64 MiB floor) and on a 1 GB one the floor; on a 1 TB disk the 1 GiB cap, not 50 GB. Room follows
// Need on each.
func TestDiskGuardScalesBothWays(t *testing.T) {
	g := DiskGuard{MinFreeBytes: 64 << 20, MaxFreeBytes: 1 << 30, MinFreePercent: 5}
	for _, tc := range []struct {
		name        string
		total, want uint64
	}{
		{"a 2 GB disk", 2e9, 1e8},
		{"a 1 GB disk", 1e9, 64 << 20},
		{"a 100 MiB disk", 100 << 20, 64 << 20},
		{"a 1 TB disk", 1e12, 1 << 30},
		{"a 10 GiB disk", 10 << 30, 512 << 20},
	} {
		if got := g.Need(tc.total); got != tc.want {
			t.Errorf("%s: Need = %d bytes, want %d", tc.name, got, tc.want)
		}
		s, _ := openMem(t)
		free := tc.want
		s.SetDiskGuard(DiskGuard{Free: func(string) (uint64, uint64, error) { return free, tc.total, nil },
			MinFreeBytes: g.MinFreeBytes, MaxFreeBytes: g.MaxFreeBytes, MinFreePercent: g.MinFreePercent})
		if err := s.Room(); err != nil {
			t.Errorf("%s with %d bytes free: %v, want room", tc.name, free, err)
		}
		free = tc.want - 1
		if err := s.Room(); !errors.Is(err, ErrDiskLow) {
			t.Errorf("%s with %d bytes free: %v, want ErrDiskLow", tc.name, free, err)
		}
	}
	// Without a cap the percentage alone rules; a cap under the floor is the floor.
	if got, want := (DiskGuard{MinFreeBytes: 64 << 20, MinFreePercent: 5}).Need(1e12), uint64(5e10); got != want {
		t.Errorf("no cap, 1 TB: Need = %d, want %d", got, want)
	}
	if got, want := (DiskGuard{MinFreeBytes: 64 << 20, MaxFreeBytes: 1 << 20, MinFreePercent: 5}).Need(1e12), uint64(64<<20); got != want {
		t.Errorf("a cap under the floor, 1 TB: Need = %d, want %d", got, want)
	}
}

// RunsPage pages a student's runs by id, oldest first.
func TestRunsPage(t *testing.T) {
	ctx := context.Background()
	s, a := openMem(t)
	var ids []int64
	for range 5 {
		ids = append(ids, addDone(t, s, a.ID).ID)
	}
	var got []int64
	var after int64
	for range 10 {
		page, err := s.RunsPage(ctx, a.ID, "", after, 2)
		if err != nil {
			t.Fatal(err)
		}
		if len(page) == 0 {
			break
		}
		for _, r := range page {
			got = append(got, r.ID)
		}
		after = page[len(page)-1].ID
	}
	if fmt.Sprint(got) != fmt.Sprint(ids) {
		t.Errorf("paged runs %v, want %v", got, ids)
	}
	latest, err := s.LatestRuns(ctx, a.ID, "l")
	if err != nil || len(latest) != 1 || latest[0].ID != ids[4] {
		t.Errorf("LatestRuns: %+v, %v; want the last run", latest, err)
	}
}

// ClassRunsPage pages every student's runs; LatestDone is each student's latest run ended done
// that is not an action.
func TestClassRunsPageAndLatestDone(t *testing.T) {
	ctx := context.Background()
	s, a := openMem(t)
	b, err := s.AddStudent(ctx, "Bob", "sess-b", false)
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for i := range 5 {
		ids = append(ids, addDone(t, s, []int64{a.ID, b.ID}[i%2]).ID)
	}
	if _, err := s.AddRun(ctx, Run{Student: a.ID, Lesson: "l", Cell: "c", Source: "src", Action: "ptx"}); err != nil {
		t.Fatal(err)
	}
	action, _ := s.AddRun(ctx, Run{Student: b.ID, Lesson: "l", Cell: "c", Source: "src", Action: "ptx"})
	if err := s.Ended(ctx, action.ID, StatusDone, ""); err != nil {
		t.Fatal(err)
	}
	var got []int64
	var after int64
	for range 10 {
		page, err := s.ClassRunsPage(ctx, "l", "c", after, 2)
		if err != nil {
			t.Fatal(err)
		}
		if len(page) == 0 {
			break
		}
		for _, r := range page {
			got = append(got, r.ID)
		}
		after = page[len(page)-1].ID
	}
	if want := append(ids, action.ID-1, action.ID); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("paged class runs: got %v, want %v", got, want)
	}
	latest, err := s.LatestDone(ctx, "l", "c")
	if err != nil {
		t.Fatal(err)
	}
	var latestIDs []int64
	for _, r := range latest {
		latestIDs = append(latestIDs, r.ID)
	}
	if got, want := fmt.Sprint(latestIDs), fmt.Sprint([]int64{ids[3], ids[4]}); got != want {
		t.Errorf("LatestDone: got %v, want %v (Bob's 4th, Ada's 5th; no action, nothing unfinished)", got, want)
	}
}

// A database made before run_bytes existed gets its usage counted when opened.
func TestUsageCountedForOldDatabase(t *testing.T) {
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
	addDone(t, s, a.ID, "one", strings.Repeat("z", 5000))
	want, _ := s.Usage(ctx, a.ID)
	if _, err := s.db.Exec("DROP TABLE run_bytes"); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if s, err = Open(dir); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got, err := s.Usage(ctx, a.ID); got != want || err != nil {
		t.Errorf("usage counted on opening: %d, %v; want %d as kept before", got, err, want)
	}
}
