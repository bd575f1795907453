package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/gpuplayground/playground/cells"
	"github.com/gpuplayground/playground/machine"
	"github.com/gpuplayground/playground/store"
)

// The abuse suite, continued: what a student can make the server keep (issue 23, item 3). Every
// request for work counts against the student's share of runs and rate, shared results are kept as
// a reference, a student's kept runs have a byte quota, /api/runs pages, and a nearly full disk
// refuses new work with one message while reads go on.

// runOf sends m on ws and returns the run's messages up to its terminal one.
func runOf(t *testing.T, ws *websocket.Conn, m Message) []Message {
	t.Helper()
	if err := ws.WriteJSON(m); err != nil {
		t.Fatal(err)
	}
	return collect(t, ws, m.ID, 30*time.Second)
}

// storedStudentID is the store's id of the student named name.
func storedStudentID(t *testing.T, s *Server, name string) int64 {
	t.Helper()
	st, ok, err := s.store.StudentByName(context.Background(), name)
	if err != nil || !ok {
		t.Fatalf("student %s: %v, %v", name, ok, err)
	}
	return st.ID
}

// usage is what the student named name keeps, in bytes.
func usage(t *testing.T, s *Server, name string) int64 {
	t.Helper()
	n, err := s.store.Usage(context.Background(), storedStudentID(t, s, name))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// Re-sending Run on an unedited cell with shared results takes a token each time: past the burst
// it is refused, and another student is still served. What each shared reply keeps is a reference,
// not a copy of the results, yet /api/runs and a replay show the results.
func TestAbuseSharedRepliesAreRateLimitedAndNotCopied(t *testing.T) {
	cfg := classConfig(t)
	cfg.RunBurst, cfg.RunRate = 4, 1e-6 // no token comes back during the test
	if err := os.WriteFile(filepath.Join(cfg.LessonsDir, "big.md"), []byte("---\ntitle: Big\nsummary: s\norder: 2\n---\n\n```probe\nrows: 300\n```\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s, base := startServer(t, cfg)
	cell, _ := s.lesson("big").Cell("big-0")
	run := func(id string) Message {
		return Message{Type: TypeRun, ID: id, RunRequest: &RunRequest{Lesson: "big", Cell: "big-0", Source: cell.Source}}
	}
	ada, bob, cara := join(t, base, "class-token", "Ada"), join(t, base, "class-token", "Bob"), join(t, base, "class-token", "Cara")
	wa, wb, wc := ada.dial(t), bob.dial(t), cara.dial(t)
	if got := runOf(t, wa, run("a")); got[len(got)-1].Type != TypeDone {
		t.Fatalf("Ada's run: %+v", got[len(got)-1])
	}
	measured := usage(t, s, "Ada")
	refused := 0
	for i := range 10 {
		got := runOf(t, wb, run(fmt.Sprint("b", i)))
		last := got[len(got)-1]
		switch {
		case i < cfg.RunBurst && (got[0].Type != TypeShared || last.Type != TypeDone):
			t.Errorf("Bob's request %d: %+v … %+v, want shared results", i, got[0], last)
		case i >= cfg.RunBurst && (last.Type != TypeError || !strings.Contains(last.Message, "faster than the server allows")):
			t.Errorf("Bob's request %d past the burst: %+v, want refused for the rate", i, last)
		case i >= cfg.RunBurst:
			refused++
		}
	}
	if got, want := refused, 10-cfg.RunBurst; got != want {
		t.Errorf("%d of Bob's requests refused, want %d", got, want)
	}
	if got := runOf(t, wc, run("c")); got[0].Type != TypeShared {
		t.Errorf("Cara's first request: %+v, want shared results", got[0])
	}
	if grew := usage(t, s, "Bob"); grew*2 > measured {
		t.Errorf("Bob keeps %d bytes for %d shared replies of a run that keeps %d: want references, not copies", grew, cfg.RunBurst, measured)
	}
	var runs struct {
		Runs []struct {
			SharedFrom int64             `json:"shared_from"`
			Messages   []json.RawMessage `json:"messages"`
		} `json:"runs"`
	}
	_, body := bob.get(t, "/api/runs")
	if err := json.Unmarshal([]byte(body), &runs); err != nil {
		t.Fatal(err)
	}
	if len(runs.Runs) != cfg.RunBurst || runs.Runs[0].SharedFrom == 0 || len(runs.Runs[0].Messages) < 300 {
		t.Errorf("Bob's /api/runs: %d runs, the first with %d messages, want %d shared runs each showing the 300 rows", len(runs.Runs), len(runs.Runs[0].Messages), cfg.RunBurst)
	}
}

// A shared reply counts against the student's share of queued or running runs: at the cap it is
// refused like any run.
func TestAbuseSharedReplyCountsAgainstTheShare(t *testing.T) {
	cfg := classConfig(t)
	cfg.MaxRunsPerClient = 2
	s, base := startServer(t, cfg)
	src, _ := s.lesson("p").Cell("p-0")
	ada, bob, teacher := join(t, base, "class-token", "Ada"), join(t, base, "class-token", "Bob"), join(t, base, "teach", "Teacher")
	wa, wb := ada.dial(t), bob.dial(t)
	if got := runOf(t, wa, probeMsg("a", src.Source)); got[len(got)-1].Type != TypeDone {
		t.Fatalf("Ada's run: %+v", got[len(got)-1])
	}
	if code := teacher.post(t, "/api/class/pause", url.Values{"paused": {"true"}}); code != http.StatusNoContent {
		t.Fatalf("pause: %d", code)
	}
	for i := range cfg.MaxRunsPerClient {
		id := fmt.Sprint("q", i)
		if err := wb.WriteJSON(probeMsg(id, fmt.Sprintf("rows: %d", i+2))); err != nil {
			t.Fatal(err)
		}
		firstOf(t, wb, id, TypeQueued)
	}
	got := runOf(t, wb, probeMsg("shared", src.Source))
	if last := got[len(got)-1]; last.Type != TypeError || !strings.Contains(last.Message, "2 runs queued or running") {
		t.Errorf("a shared reply with the share full: %+v, want refused naming the limit", got)
	}
	if code := teacher.post(t, "/api/class/pause", url.Values{"paused": {"false"}}); code != http.StatusNoContent {
		t.Fatalf("resume: %d", code)
	}
}

// Run and cancel with the largest source while the queue is paused: the rate refuses the flood,
// and the byte quota refuses what the rate lets through once the student keeps too much.
func TestAbuseRunCancelFloodIsBounded(t *testing.T) {
	cfg := classConfig(t)
	cfg.RunBurst, cfg.RunRate = 6, 1e-6
	cfg.StudentQuota = 64 << 10
	s, base := startServer(t, cfg)
	ada, teacher := join(t, base, "class-token", "Ada"), join(t, base, "teach", "Teacher")
	ws := ada.dial(t)
	if code := teacher.post(t, "/api/class/pause", url.Values{"paused": {"true"}}); code != http.StatusNoContent {
		t.Fatalf("pause: %d", code)
	}
	var queued, overQuota, overRate int
	for i := range 20 {
		id := fmt.Sprint("r", i)
		src := fmt.Sprintf("rows: %d\n# %s\n", i+2, strings.Repeat("x", 15<<10))
		if err := ws.WriteJSON(probeMsg(id, src)); err != nil {
			t.Fatal(err)
		}
		switch first := collectFirst(t, ws, id); {
		case first.Type == TypeQueued:
			queued++
			if err := ws.WriteJSON(Message{Type: TypeCancel, ID: id}); err != nil {
				t.Fatal(err)
			}
			if got := collect(t, ws, id, 10*time.Second); got[len(got)-1].Type != TypeCancelled {
				t.Errorf("run %s: ended %+v, want cancelled", id, got[len(got)-1])
			}
		case first.Type == TypeError && strings.Contains(first.Message, "each student may keep"):
			overQuota++
		case first.Type == TypeError && strings.Contains(first.Message, "faster than the server allows"):
			overRate++
		default:
			t.Fatalf("run %s: %+v, want queued or refused for the quota or the rate", id, first)
		}
	}
	if queued == 0 || overQuota == 0 || overRate != 20-cfg.RunBurst {
		t.Errorf("%d queued, %d refused for the quota, %d for the rate; want some queued, then the quota, and %d for the rate", queued, overQuota, overRate, 20-cfg.RunBurst)
	}
	if used := usage(t, s, "Ada"); used > cfg.StudentQuota+16<<10 {
		t.Errorf("Ada keeps %d bytes, over the quota of %d by more than one run", used, cfg.StudentQuota)
	}
}

// Past the quota, the oldest finished runs' messages are pruned: opening one shows a note that
// says so and its end, not an error; /api/runs marks it pruned; the newest run is whole.
func TestAbuseQuotaPrunesOldestRuns(t *testing.T) {
	cfg := classConfig(t)
	cfg.StudentQuota = 24 << 10
	s, base := startServer(t, cfg)
	ada := join(t, base, "class-token", "Ada")
	ws := ada.dial(t)
	for i := range 6 {
		if got := runOf(t, ws, probeMsg(fmt.Sprint("r", i), fmt.Sprintf("rows: %d", 100+i))); got[len(got)-1].Type != TypeDone {
			t.Fatalf("run %d: %+v", i, got[len(got)-1])
		}
	}
	if used := usage(t, s, "Ada"); used > cfg.StudentQuota {
		t.Errorf("Ada keeps %d bytes, over the quota of %d", used, cfg.StudentQuota)
	}
	var list struct {
		Runs []struct {
			ID       int64             `json:"id"`
			Pruned   bool              `json:"pruned"`
			Messages []json.RawMessage `json:"messages"`
		} `json:"runs"`
	}
	_, body := ada.get(t, "/api/runs")
	if err := json.Unmarshal([]byte(body), &list); err != nil || len(list.Runs) != 6 {
		t.Fatalf("/api/runs: %v, %.200s; want 6 runs", err, body)
	}
	if first, last := list.Runs[0], list.Runs[5]; !first.Pruned || last.Pruned || len(last.Messages) < 105 {
		t.Errorf("oldest run pruned %v, newest pruned %v with %d messages; want the oldest pruned and the newest whole", first.Pruned, last.Pruned, len(last.Messages))
	}
	if err := ws.WriteJSON(Message{Type: TypeReplay, ID: "old", Run: list.Runs[0].ID}); err != nil {
		t.Fatal(err)
	}
	got := collect(t, ws, "old", 10*time.Second)
	if len(got) != 2 || got[0].Type != TypeNote || !strings.Contains(got[0].Note.Message, "results were removed") || got[1].Type != TypeDone {
		t.Errorf("replaying the pruned run: %+v, want the note and done", got)
	}
}

// Below the free space kept, new runs, actions, edits and joins are refused with one message; what
// is kept can still be read and replayed; with room again, runs are accepted.
func TestAbuseDiskNearlyFullRefusesNewWork(t *testing.T) {
	var free atomic.Uint64
	free.Store(50 << 30)
	cfg := classConfig(t)
	cfg.FreeSpace = func(string) (uint64, uint64, error) { return free.Load(), 100 << 30, nil }
	_, base := startServer(t, cfg)
	ada := join(t, base, "class-token", "Ada")
	ws := ada.dial(t)
	if got := runOf(t, ws, probeMsg("before", "rows: 2")); got[len(got)-1].Type != TypeDone {
		t.Fatalf("a run with room: %+v", got[len(got)-1])
	}
	free.Store(512 << 20) // under the 1 GiB kept on a 100 GiB disk (5 %, capped)
	const full = "disk is nearly full"
	shout := probeMsg("shout", "hi")
	shout.Action = "shout"
	for _, m := range []Message{probeMsg("after", "rows: 3"), shout} {
		if got := runOf(t, ws, m); len(got) != 1 || got[0].Type != TypeError || !strings.Contains(got[0].Message, full) {
			t.Errorf("%s with the disk nearly full: %+v, want one error saying so", m.ID, got)
		}
	}
	if err := ws.WriteJSON(Message{Type: TypeSave, RunRequest: &RunRequest{Lesson: "p", Cell: "p-0", Source: "rows: 9"}}); err != nil {
		t.Fatal(err)
	}
	if m := nextOf(t, ws, ""); m.Type != TypeError || !strings.Contains(m.Message, full) {
		t.Errorf("a save with the disk nearly full: %+v", m)
	}
	resp, err := http.PostForm(base+"/join", url.Values{"token": {"class-token"}, "name": {"Bob"}})
	if err != nil {
		t.Fatal(err)
	}
	why, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(why), full) {
		t.Errorf("a join with the disk nearly full: %d %s, want 503 saying so", resp.StatusCode, why)
	}
	join(t, base, "teach", "Teacher") // the instructor still signs in (join fails the test otherwise)
	code, body := ada.get(t, "/api/runs")
	var list struct {
		Runs []store.Run `json:"runs"`
	}
	if err := json.Unmarshal([]byte(body), &list); code != http.StatusOK || err != nil || len(list.Runs) != 1 {
		t.Fatalf("/api/runs with the disk nearly full: %d, %v, %.200s", code, err, body)
	}
	if err := ws.WriteJSON(Message{Type: TypeReplay, ID: "again", Run: list.Runs[0].ID}); err != nil {
		t.Fatal(err)
	}
	if got := collect(t, ws, "again", 10*time.Second); got[len(got)-1].Type != TypeDone || len(rowsOf(t, got, "t")) != 2 {
		t.Errorf("replaying with the disk nearly full: %+v", got)
	}
	free.Store(50 << 30)
	if got := runOf(t, ws, probeMsg("later", "rows: 1")); got[len(got)-1].Type != TypeDone {
		t.Errorf("a run with room again: %+v", got[len(got)-1])
	}
}

// With the default disk guard, joins go on where the free space is small but sane for the disk's
// size: 150 MB free of a 2 GB disk, 2 GiB free of a 1 TB one (0.2 %; the old 5 % rule asked for
// 50 GB); below the floor or the cap they are refused.
func TestDiskGuardDefaultsScaleBothWays(t *testing.T) {
	for _, tc := range []struct {
		name                string
		total, room, refuse uint64
	}{
		{"2 GB", 2e9, 150e6, 60 << 20},
		{"1 TB", 1e12, 2 << 30, 900 << 20},
	} {
		var free atomic.Uint64
		free.Store(tc.room)
		cfg := classConfig(t)
		cfg.FreeSpace = func(string) (uint64, uint64, error) { return free.Load(), tc.total, nil }
		_, base := startServer(t, cfg)
		join(t, base, "class-token", "Ada") // fails the test unless the join gets in
		free.Store(tc.refuse)
		resp, err := http.PostForm(base+"/join", url.Values{"token": {"class-token"}, "name": {"Bob"}})
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if got, want := resp.StatusCode, http.StatusServiceUnavailable; got != want {
			t.Errorf("%s disk, %d bytes free: join answered %d, want %d", tc.name, tc.refuse, got, want)
		}
	}
}

// /api/runs pages: ?limit= runs at most, oldest first, with next for the following page until the
// last; a limit out of range is a 400.
func TestRunsPages(t *testing.T) {
	_, base := startServer(t, probeConfig(t))
	ws := dial(t, base)
	for i := range 5 {
		if got := runOf(t, ws, probeMsg(fmt.Sprint("r", i), fmt.Sprintf("rows: %d", i+1))); got[len(got)-1].Type != TypeDone {
			t.Fatalf("run %d: %+v", i, got[len(got)-1])
		}
	}
	type page struct {
		Runs []store.Run `json:"runs"`
		Next int64       `json:"next"`
	}
	var all page
	if err := getJSON(t, base+"/api/runs", &all); err != nil || len(all.Runs) != 5 || all.Next != 0 {
		t.Fatalf("/api/runs: %+v, %v; want the 5 runs and no next", all, err)
	}
	var ids []int64
	path := "/api/runs?limit=2"
	for range 5 {
		var p page
		if err := getJSON(t, base+path, &p); err != nil {
			t.Fatal(err)
		}
		for _, r := range p.Runs {
			ids = append(ids, r.ID)
		}
		if p.Next == 0 {
			break
		}
		path = fmt.Sprintf("/api/runs?limit=2&after=%d", p.Next)
	}
	var want []int64
	for _, r := range all.Runs {
		want = append(want, r.ID)
	}
	if fmt.Sprint(ids) != fmt.Sprint(want) {
		t.Errorf("paged by 2: %v, want %v", ids, want)
	}
	for _, q := range []string{"limit=0", "limit=1001", "after=x"} {
		resp, err := http.Get(base + "/api/runs?" + q)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("/api/runs?%s: %d, want 400", q, resp.StatusCode)
		}
	}
	if csv := getBody(t, base+"/api/runs.csv"); strings.Count(csv, "\n") != 1+2*(1+2+3+4+5) {
		t.Errorf("/api/runs.csv: %d lines, want a header and 2 per row", strings.Count(csv, "\n"))
	}
}

// A student who keeps a lot (no quota here) cannot make /api/runs hold it all in memory: eight
// parallel reads of 20 MiB of runs each (160 MiB if each were held whole) leave the server's memory
// within 80 MiB, and each read is whole. (40 runs of 512 KiB: with 1 MiB and a bound of 160 MiB
// the server grew by 30 MiB, a message's worth per read, and the test took 10 CPU s, mostly
// encoding and decoding the JSON.)
func TestAbuseRunsListBoundedInMemory(t *testing.T) {
	cfg := probeConfig(t)
	cfg.StudentQuota = -1
	s, base := startServer(t, cfg)
	ctx := context.Background()
	text, _ := json.Marshal(Message{Type: TypeText, Body: machine.Body{Text: &cells.Text{Title: "t", Body: strings.Repeat("x", 1<<19)}}})
	const runs = 40
	for range runs {
		r, err := s.store.AddRun(ctx, store.Run{Student: s.local.ID, Lesson: "p", Cell: "p-0", Source: "rows: 1", Machine: "m"})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.store.AddMessage(ctx, r.ID, 1, TypeText, string(text), false); err != nil {
			t.Fatal(err)
		}
		if err := s.store.Ended(ctx, r.ID, store.StatusDone, ""); err != nil {
			t.Fatal(err)
		}
	}
	runtime.GC()
	rss := rssMiB()
	var wg sync.WaitGroup
	got := make([]int, 8)
	for i := range got {
		wg.Go(func() {
			resp, err := http.Get(base + "/api/runs?limit=1000")
			if err != nil {
				t.Error(err)
				return
			}
			defer resp.Body.Close()
			count := countRuns
			if i == 0 {
				count = decodeRuns // one answer decoded whole, token by token: it is JSON
			}
			n, err := count(resp.Body)
			if err != nil {
				t.Error(err)
			}
			got[i] = n
		})
	}
	wg.Wait()
	for i, n := range got {
		if n != runs {
			t.Errorf("read %d: %d runs, want %d", i, n, runs)
		}
	}
	grew := rssMiB() - rss
	t.Logf("memory grew by %d MiB", grew)
	if grew > 80 {
		t.Errorf("memory grew by %d MiB serving 8 reads of %d MiB each", grew, runs/2)
	}
}

// countRuns reads an /api/runs answer in pieces (never whole: it may be larger than the memory the
// test allows the server; nor decoded: that took most of the test's CPU time, and one answer of the
// test's eight is decoded, decodeRuns) and counts its runs, the objects that start with "id" (each
// message starts with "type"), after checking that the answer came to its end, "]}".
func countRuns(r io.Reader) (int, error) {
	const start, end = `{"id":`, "]}\n"
	buf := make([]byte, 64<<10)
	var tail []byte // the last bytes of the piece before, which may hold the start of a match
	n := 0
	for {
		k, err := r.Read(buf[len(tail):])
		piece := buf[:len(tail)+k]
		n += bytes.Count(piece, []byte(start))
		if err == io.EOF {
			if !bytes.HasSuffix(piece, []byte(end)) {
				return n, fmt.Errorf("the answer ends with %q, want %q", piece[max(0, len(piece)-16):], end)
			}
			return n, nil
		}
		if err != nil {
			return n, err
		}
		keep := min(len(piece), len(start)-1)
		tail = append(buf[:0:0], piece[len(piece)-keep:]...)
		copy(buf, tail)
	}
}

// decodeRuns is countRuns decoding the answer token by token (never whole), so an answer that is
// not JSON (a comma missing between stored messages, a message cut) fails.
func decodeRuns(r io.Reader) (int, error) {
	dec := json.NewDecoder(r)
	depth, n := 0, 0
	key := true // at depth 3 (a run), whether the next string is a key
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			depth++
			if depth == 4 {
				key = true
			}
			continue
		case json.Delim('}'), json.Delim(']'):
			depth--
			if depth == 3 {
				key = true
			}
			continue
		}
		if depth == 3 {
			if key && tok == "id" {
				n++
			}
			key = !key
		}
	}
}

// errorsOn reads n messages from ws and returns those that are errors.
func errorsOn(t *testing.T, ws *websocket.Conn, n int) []Message {
	t.Helper()
	_ = ws.SetReadDeadline(time.Now().Add(30 * time.Second))
	var errs []Message
	for range n {
		var m Message
		if err := ws.ReadJSON(&m); err != nil {
			t.Fatalf("reading message: %v", err)
		}
		if m.Type == TypeError {
			errs = append(errs, m)
		}
	}
	return errs
}

// Saves and replays are rate-limited per student, each in a bucket of its own: past the burst they
// are refused with a message saying so (the edit is not kept), and another student still saves.
func TestAbuseSavesAndReplaysRateLimited(t *testing.T) {
	cfg := classConfig(t)
	cfg.SaveBurst, cfg.SaveRate = 5, 1e-6 // no token comes back during the test
	_, base := startServer(t, cfg)
	ada, bob := join(t, base, "class-token", "Ada"), join(t, base, "class-token", "Bob")
	wa, wb := ada.dial(t), bob.dial(t)
	for i := range 12 {
		if err := wa.WriteJSON(Message{Type: TypeSave, RunRequest: &RunRequest{Lesson: "p", Cell: "p-0", Source: fmt.Sprintf("rows: %d", i+1)}}); err != nil {
			t.Fatal(err)
		}
	}
	// A replay of a run Ada does not have answers an error: the first 5 say so, the rest are refused
	// (the saves' refusals come first, in order).
	for i := range 8 {
		if err := wa.WriteJSON(Message{Type: TypeReplay, ID: fmt.Sprint("r", i), Run: 999}); err != nil {
			t.Fatal(err)
		}
	}
	errs := errorsOn(t, wa, 12-cfg.SaveBurst+8)
	var saves, replays, noRun int
	for _, m := range errs {
		switch {
		case m.ID == "" && strings.Contains(m.Message, "saving edits faster than the server allows"):
			saves++
		case m.ID != "" && strings.Contains(m.Message, "faster than the server allows"):
			replays++
		case m.ID != "" && strings.Contains(m.Message, "you have no run"):
			noRun++
		default:
			t.Errorf("unexpected error: %+v", m)
		}
	}
	if saves != 12-cfg.SaveBurst || replays != 8-cfg.SaveBurst || noRun != cfg.SaveBurst {
		t.Errorf("refused: got %d saves and %d replays (%d replays answered), want %d, %d (%d)", saves, replays, noRun, 12-cfg.SaveBurst, 8-cfg.SaveBurst, cfg.SaveBurst)
	}
	code, body := ada.get(t, "/api/state?lesson=p")
	if want := fmt.Sprintf("rows: %d", cfg.SaveBurst); code != http.StatusOK || !strings.Contains(body, strconv.Quote(want)) {
		t.Errorf("Ada's kept edit: got %d %s, want the last one allowed, %q", code, body, want)
	}
	if err := wb.WriteJSON(Message{Type: TypeSave, RunRequest: &RunRequest{Lesson: "p", Cell: "p-0", Source: "rows: 42"}}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, body := bob.get(t, "/api/state?lesson=p"); strings.Contains(body, `"rows: 42"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("Bob's save was not kept")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// addClassRuns stores n finished runs of the local student, each with a source of srcBytes and a
// table of one row whose one value is a string of valBytes (distinct per run: "runN").
func addClassRuns(t *testing.T, s *Server, n, srcBytes, valBytes int) {
	t.Helper()
	ctx := context.Background()
	table, _ := json.Marshal(Message{Type: TypeTable, Body: machine.Body{Table: &cells.Table{ID: "t", Caption: "c", Columns: []cells.Column{{Label: "v"}}}}})
	src := strings.Repeat("#", srcBytes)
	for i := range n {
		r, err := s.store.AddRun(ctx, store.Run{Student: s.local.ID, Lesson: "p", Cell: "p-0", Source: src, Machine: "m"})
		if err != nil {
			t.Fatal(err)
		}
		row, _ := json.Marshal(Message{Type: TypeRow, Body: machine.Body{Row: &cells.Row{Table: "t", Values: []any{fmt.Sprintf("run%d", i) + strings.Repeat("x", valBytes)}}}})
		if err := s.store.AddMessage(ctx, r.ID, 1, TypeTable, string(table), false); err != nil {
			t.Fatal(err)
		}
		if err := s.store.AddMessage(ctx, r.ID, 2, TypeRow, string(row), false); err != nil {
			t.Fatal(err)
		}
		if err := s.store.Ended(ctx, r.ID, store.StatusDone, ""); err != nil {
			t.Fatal(err)
		}
	}
}

// The class CSV and a cell's board never hold the class's runs in memory whole: eight parallel
// downloads of a class of 400 runs with 60 KiB sources (23 MiB; 188 MiB for the eight, held whole)
// leave the server's memory growth under half that, each CSV is whole, and the board shows each
// student's latest run only.
func TestAbuseClassDownloadsBoundedInMemory(t *testing.T) {
	cfg := probeConfig(t)
	cfg.StudentQuota = -1
	s, base := startServer(t, cfg)
	const runs, maxGrowthMiB = 400, 90
	addClassRuns(t, s, runs, 60<<10, 16)
	runtime.GC()
	rss := rssMiB()
	var wg sync.WaitGroup
	lines := make([]int, 8)
	for i := range lines {
		path := "/api/class/results.csv?lesson=p"
		if i%2 == 1 {
			path = "/api/class/cell?lesson=p&cell=p-0"
		}
		wg.Go(func() {
			resp, err := http.Get(base + path)
			if err != nil {
				t.Error(err)
				return
			}
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Error(err)
			}
			if i%2 == 0 {
				lines[i] = strings.Count(string(b), "\n")
				return
			}
			var board cellBoard
			if err := json.Unmarshal(b, &board); err != nil {
				t.Errorf("%s: %v", path, err)
			}
			if len(board.Rows) != 1 || len(board.Rows[0].Values) != 1 || !strings.HasPrefix(fmt.Sprint(board.Rows[0].Values[0]), fmt.Sprint("run", runs-1, "x")) {
				t.Errorf("the board: got %d rows, want the one of the latest run, run%d", len(board.Rows), runs-1)
			}
		})
	}
	wg.Wait()
	for i := 0; i < len(lines); i += 2 {
		if got, want := lines[i], runs+1; got != want {
			t.Errorf("CSV %d: got %d lines, want %d (a header and a line per run)", i, got, want)
		}
	}
	grew := rssMiB() - rss
	t.Logf("memory grew by %d MiB", grew)
	if grew > maxGrowthMiB {
		t.Errorf("memory grew by %d MiB serving 8 reads of a class of %d MiB", grew, runs*60>>10)
	}
}

// A class CSV longer to download than the write timeout is not cut while it is being read: the
// deadline moves with each run written. The timeout is 2 s, the reader's pauses 100 ms: a loaded
// machine that stalls either end for 2 s is rare, one that stalls it for 300 ms or a second not
// (both seen beside the parallel tests, so this one runs alone).
func TestClassCSVOutlivesWriteTimeout(t *testing.T) {
	cfg := probeConfig(t)
	cfg.StudentQuota = -1
	cfg.WriteTimeout = 2 * time.Second
	s, base := startServer(t, cfg)
	const runs = 400
	addClassRuns(t, s, runs, 10, 32<<10) // 12.5 MiB of CSV: more than the socket buffers hold
	resp, err := http.Get(base + "/api/class/results.csv")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	start, n, buf := time.Now(), 0, make([]byte, 256<<10)
	var last []byte
	for range 100000 { // a slow reader: 256 KiB, then a pause
		k, err := resp.Body.Read(buf)
		n += k
		if k > 0 {
			last = append(last[:0], buf[max(0, k-64):k]...)
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("after %d bytes and %v: %v", n, time.Since(start), err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if took := time.Since(start); took < 2*cfg.WriteTimeout {
		t.Skipf("the download took %v, less than twice the write timeout: nothing tested", took) // never seen: 50 pauses of 100 ms
	}
	if want := fmt.Sprint("run", runs-1); !strings.Contains(string(last), "false\n") || n < runs*(32<<10) {
		t.Errorf("the download ended after %d bytes with %q, want all %d runs through %s", n, last, runs, want)
	}
}
