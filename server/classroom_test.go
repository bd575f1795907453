package server

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/gpuplayground/playground/cells"
	"github.com/gpuplayground/playground/machine"
	"github.com/gpuplayground/playground/store"
)

// classConfig is probeConfig with sign-in: class token "class-token", instructor token "teach".
func classConfig(t *testing.T) Config {
	t.Helper()
	cfg := probeConfig(t)
	cfg.Token, cfg.InstructorToken = "class-token", "teach"
	cfg.Devices = noDevice
	return cfg
}

// student is a signed-in browser: an HTTP client with its cookie jar.
type student struct {
	name   string
	base   string
	client *http.Client
}

// join signs name in with token by POST /join and returns the browser; it fails the test unless
// the server redirects (303) with a session cookie.
func join(t *testing.T, base, token, name string) *student {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.PostForm(base+"/join", url.Values{"token": {token}, "name": {name}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("join %s: status %d, want 303", name, resp.StatusCode)
	}
	return &student{name: name, base: base, client: c}
}

func (s *student) get(t *testing.T, path string) (int, string) {
	t.Helper()
	resp, err := s.client.Get(s.base + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func (s *student) post(t *testing.T, path string, form url.Values) int {
	t.Helper()
	resp, err := s.client.PostForm(s.base+path, form)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// dial opens the student's websocket, with their cookie.
func (s *student) dial(t *testing.T) *websocket.Conn {
	t.Helper()
	return s.dialLesson(t, "")
}

// dialLesson opens the websocket as the page of lesson does (?lesson=), or as dial with "".
func (s *student) dialLesson(t *testing.T, lesson string) *websocket.Conn {
	t.Helper()
	path := "/ws"
	if lesson != "" {
		path += "?lesson=" + url.QueryEscape(lesson)
	}
	u, _ := url.Parse(s.base)
	h := http.Header{}
	for _, c := range s.client.Jar.Cookies(u) {
		h.Add("Cookie", c.String())
	}
	h.Set("Origin", s.base)
	ws, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(s.base, "http")+path, h)
	if err != nil {
		t.Fatalf("%s: websocket: %v", s.name, err)
	}
	t.Cleanup(func() { ws.Close() })
	return ws
}

func TestSignIn(t *testing.T) {
	cfg := classConfig(t)
	cfg.DataDir = t.TempDir()
	_, base := startServer(t, cfg)
	status := func(path string) (int, string) {
		t.Helper()
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	// Without a session: a 403 that says what to do, for pages, API and the websocket, even over loopback.
	for _, p := range []string{"/", "/lessons/p", "/api/runs", "/api/devices", "/devices", "/class", "/api/state?lesson=p"} {
		if code, body := status(p); code != http.StatusForbidden || !strings.Contains(body, "join") {
			t.Errorf("GET %s without a session: %d %q, want 403 saying how to join", p, code, body)
		}
	}
	if _, resp, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(base, "http")+"/ws", nil); err == nil || resp.StatusCode != http.StatusForbidden {
		t.Errorf("websocket without a session: %v, want refused with 403", err)
	}
	for _, p := range []string{"/healthz", "/static/app.js", "/join"} {
		if code, _ := status(p); code != http.StatusOK {
			t.Errorf("GET %s: %d, want 200 without a session", p, code)
		}
	}
	// The printed link shows the form with the token filled in; a wrong token is a 403.
	if code, body := status("/?token=class-token"); code != http.StatusOK || !strings.Contains(body, `value="class-token"`) {
		t.Errorf("the link with the token: %d, want the join form with the token in it", code)
	}
	if code, body := status("/?token=guess"); code != http.StatusForbidden || !strings.Contains(body, "not this class") {
		t.Errorf("a wrong token: %d, want 403 saying so", code)
	}
	// Joining: a wrong token, a taken name, a bad name and a cross-site post are refused.
	for _, tt := range []struct {
		form   url.Values
		origin string
		want   int
	}{
		{url.Values{"token": {"guess"}, "name": {"Eve"}}, "", http.StatusForbidden},
		{url.Values{"token": {"class-token"}, "name": {"<b>"}}, "", http.StatusBadRequest},
		{url.Values{"token": {"class-token"}, "name": {"Mallory"}}, "http://evil.example", http.StatusForbidden},
	} {
		req, _ := http.NewRequest("POST", base+"/join", strings.NewReader(tt.form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if tt.origin != "" {
			req.Header.Set("Origin", tt.origin)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tt.want {
			t.Errorf("join %v from %q: %d, want %d", tt.form, tt.origin, resp.StatusCode, tt.want)
		}
	}
	ada := join(t, base, "class-token", "Ada")
	resp, err := http.PostForm(base+"/join", url.Values{"token": {"class-token"}, "name": {"ada"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusConflict {
		t.Errorf("a second Ada: %d, want 409", resp.StatusCode)
	}
	// The cookie: HttpOnly, SameSite=Strict (read from a fresh join's header).
	resp, err = http.PostForm(base+"/join", url.Values{"token": {"class-token"}, "name": {"Grace"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if sc := resp.Request.Response; sc == nil {
		t.Fatal("join did not redirect")
	} else if h := sc.Header.Get("Set-Cookie"); !strings.Contains(h, "HttpOnly") || !strings.Contains(h, "SameSite=Strict") {
		t.Errorf("session cookie %q, want HttpOnly and SameSite=Strict", h)
	}
	if code, _ := ada.get(t, "/"); code != http.StatusOK {
		t.Errorf("Ada's index: %d", code)
	}
	if code, _ := ada.get(t, "/class"); code != http.StatusForbidden {
		t.Errorf("a student opens /class: %d, want 403", code)
	}
	teacher := join(t, base, "teach", "Teacher")
	if code, _ := teacher.get(t, "/class"); code != http.StatusOK {
		t.Errorf("the instructor's /class: %d", code)
	}
	var class struct {
		Students []classStudent `json:"students"`
	}
	_, body := teacher.get(t, "/api/class")
	if err := json.Unmarshal([]byte(body), &class); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range class.Students {
		names = append(names, s.Name)
	}
	if !slices.Contains(names, "Ada") || !slices.Contains(names, "Teacher") {
		t.Errorf("class list %v", names)
	}
}

// Sessions and edits survive a restart on the same data directory.
func TestSessionsSurviveRestart(t *testing.T) {
	cfg := classConfig(t)
	cfg.DataDir = t.TempDir()
	base1, cancel, done := serveUntil(t, cfg)
	ada := join(t, base1, "class-token", "Ada")
	ws := ada.dial(t)
	if err := ws.WriteJSON(Message{Type: TypeSave, RunRequest: &RunRequest{Lesson: "p", Cell: "p-0", Source: "rows: 7"}}); err != nil {
		t.Fatal(err)
	}
	if err := ws.WriteJSON(probeMsg("r", "rows: 3")); err != nil {
		t.Fatal(err)
	}
	collect(t, ws, "r", 30*time.Second)
	if err := ws.WriteJSON(Message{Type: TypeSave, RunRequest: &RunRequest{Lesson: "p", Cell: "p-0", Source: "rows: 7"}}); err != nil {
		t.Fatal(err)
	}
	wl := ada.dialLesson(t, "p") // the lesson last opened: its page's websocket
	if err := wl.WriteJSON(Message{Type: TypeReplay, ID: "nothing", Run: 999}); err != nil {
		t.Fatal(err)
	}
	firstOf(t, wl, "nothing", TypeError) // the lesson is recorded before the connection reads
	time.Sleep(100 * time.Millisecond)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	s2, base2 := startServer(t, cfg)
	ada.base = base2
	code, body := ada.get(t, "/api/state?lesson=p")
	if code != http.StatusOK {
		t.Fatalf("state after restart: %d %s", code, body)
	}
	var st struct {
		Cells map[string]cellState `json:"cells"`
	}
	if err := json.Unmarshal([]byte(body), &st); err != nil {
		t.Fatal(err)
	}
	c := st.Cells["p-0"]
	if c.Source == nil || *c.Source != "rows: 7" || c.Run == nil || c.Run.Status != store.StatusDone || c.Live {
		t.Errorf("after restart: %s, want the edit rows: 7 and the done run", body)
	}
	var runs struct {
		Runs []struct {
			store.Run
			Messages []Message `json:"messages"`
		} `json:"runs"`
	}
	_, body = ada.get(t, "/api/runs")
	if err := json.Unmarshal([]byte(body), &runs); err != nil {
		t.Fatal(err)
	}
	if len(runs.Runs) != 1 || len(rowsOf(t, runs.Runs[0].Messages, "t")) != 3 || runs.Runs[0].Machine == "" || runs.Runs[0].Ended.IsZero() {
		t.Errorf("/api/runs after restart: %s, want the one run with its 3 rows, machine and end", body)
	}
	if _, csv := ada.get(t, "/api/runs.csv"); strings.Count(csv, "\n") != 1+3*2 || !strings.Contains(csv, "Ada,") {
		t.Errorf("Ada's CSV: %q, want a header and 2 values for each of 3 rows", csv)
	}
	if _, idx := ada.get(t, "/"); !strings.Contains(idx, "Continue where you left off") {
		t.Errorf("the index has no continue link")
	}
	// Reset: the lesson's source again forgets the edit.
	ws = ada.dial(t)
	cell, _ := s2.lesson("p").Cell("p-0")
	if err := ws.WriteJSON(Message{Type: TypeSave, RunRequest: &RunRequest{Lesson: "p", Cell: "p-0", Source: cell.Source}}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, body = ada.get(t, "/api/state?lesson=p")
		if !strings.Contains(body, `"p-0":{"source"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the edit is still there after reset: %s", body)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// serveUntil serves cfg on loopback until stop is called; done then receives what Serve returned.
func serveUntil(t *testing.T, cfg Config) (base string, stop func(), done <-chan error) {
	t.Helper()
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, base := listenLocal(t)
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx, ln) }()
	t.Cleanup(stop)
	return base, stop, served
}

func listenLocal(t *testing.T) (net.Listener, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln, "http://" + ln.Addr().String()
}

// startOrder wraps the server's run execution to record the order in which probe runs start (by
// their rows) and whether a shared run ever ran while an exclusive one did.
type startOrder struct {
	mu                  sync.Mutex
	rows                []int
	exclusive, shared   atomic.Int32
	maxShared, overlaps atomic.Int32
}

func (o *startOrder) wrap(q *queue) {
	inner := q.execute
	q.execute = func(ctx context.Context, slot Slot, req Job, run cells.Run, e cells.Emitter) error {
		p, _ := run.(probeRun)
		o.mu.Lock()
		o.rows = append(o.rows, p.Rows)
		o.mu.Unlock()
		if cells.Exclusive(run) {
			if o.exclusive.Add(1) > 1 || o.shared.Load() > 0 {
				o.overlaps.Add(1)
			}
			defer o.exclusive.Add(-1)
		} else {
			n := o.shared.Add(1)
			if o.exclusive.Load() > 0 {
				o.overlaps.Add(1)
			}
			for m := o.maxShared.Load(); n > m && !o.maxShared.CompareAndSwap(m, n); m = o.maxShared.Load() {
			}
			defer o.shared.Add(-1)
		}
		return inner(ctx, slot, req, run, e)
	}
}

func (o *startOrder) order() []int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.rows)
}

// firstOf returns the first message of run id of type typ.
func firstOf(t *testing.T, ws *websocket.Conn, id, typ string) Message {
	t.Helper()
	_ = ws.SetReadDeadline(time.Now().Add(30 * time.Second))
	for {
		var m Message
		if err := ws.ReadJSON(&m); err != nil {
			t.Fatalf("run %s: waiting for %s: %v", id, typ, err)
		}
		if m.ID == id && m.Type == typ {
			return m
		}
	}
}

// Round-robin: a student's second and third runs wait behind other students' first runs, however
// early they were sent, and the queued message carries an estimated wait.
func TestFairQueue(t *testing.T) {
	s, base := startServer(t, classConfig(t))
	var o startOrder
	o.wrap(s.queue)
	a, b, c := join(t, base, "class-token", "A"), join(t, base, "class-token", "B"), join(t, base, "class-token", "C")
	wa, wb, wc := a.dial(t), b.dial(t), c.dial(t)
	if err := wa.WriteJSON(probeMsg("block", "wait: true\nestimate: 10s\nrows: 1")); err != nil {
		t.Fatal(err)
	}
	firstOf(t, wa, "block", TypeStarted)
	for _, r := range []struct {
		ws  *websocket.Conn
		id  string
		src string
	}{{wa, "a2", "rows: 2"}, {wa, "a3", "rows: 3"}, {wb, "b1", "rows: 4\nestimate: 1s"}, {wc, "c1", "rows: 5"}} {
		if err := r.ws.WriteJSON(probeMsg(r.id, r.src)); err != nil {
			t.Fatal(err)
		}
		if q := firstOf(t, r.ws, r.id, TypeQueued); r.id == "c1" && (q.Position != 2 || q.Wait <= 0 || q.Wait > 11.5) {
			t.Errorf("c1 queued %+v, want position 2 (behind b1, before A's second run) and a wait of about 11 s from the estimates", q)
		}
	}
	if err := wa.WriteJSON(Message{Type: TypeCancel, ID: "block"}); err != nil {
		t.Fatal(err)
	}
	for _, r := range []struct {
		ws *websocket.Conn
		id string
	}{{wa, "a3"}, {wb, "b1"}, {wc, "c1"}} {
		if msgs := collect(t, r.ws, r.id, 30*time.Second); msgs[len(msgs)-1].Type != TypeDone {
			t.Errorf("%s ended %+v", r.id, msgs[len(msgs)-1])
		}
	}
	if got, want := fmt.Sprint(o.order()), "[1 4 5 2 3]"; got != want {
		t.Errorf("start order by rows %s, want %s (A's block, B, C, then A's second and third)", got, want)
	}
}

// Runs that time nothing use free slots side by side, never run while a measuring run does, and do
// not wait behind measuring runs that are only queued.
func TestSharedRunsBesideExclusive(t *testing.T) {
	cfg := classConfig(t)
	cfg.Slots = 2
	s, base := startServer(t, cfg)
	var o startOrder
	o.wrap(s.queue)
	a, b := join(t, base, "class-token", "A"), join(t, base, "class-token", "B")
	wa, wb := a.dial(t), b.dial(t)
	if err := wa.WriteJSON(probeMsg("e1", "wait: true\nrows: 1")); err != nil {
		t.Fatal(err)
	}
	firstOf(t, wa, "e1", TypeStarted)
	if err := wa.WriteJSON(probeMsg("e2", "rows: 2")); err != nil {
		t.Fatal(err)
	}
	firstOf(t, wa, "e2", TypeQueued)
	for i, id := range []string{"s1", "s2", "s3"} {
		if err := wb.WriteJSON(probeMsg(id, fmt.Sprintf("shared: true\nsleep: 300ms\nrows: %d", 10+i))); err != nil {
			t.Fatal(err)
		}
		firstOf(t, wb, id, TypeQueued)
	}
	if err := wa.WriteJSON(Message{Type: TypeCancel, ID: "e1"}); err != nil {
		t.Fatal(err)
	}
	for id, msgs := range collectAll(t, wb, "s1", "s2", "s3") {
		if msgs[len(msgs)-1].Type != TypeDone {
			t.Errorf("%s ended %+v", id, msgs[len(msgs)-1])
		}
	}
	if msgs := collect(t, wa, "e2", 30*time.Second); msgs[len(msgs)-1].Type != TypeDone {
		t.Errorf("e2 ended %+v", msgs[len(msgs)-1])
	}
	order := o.order()
	if n := o.overlaps.Load(); n != 0 {
		t.Errorf("%d times a run started while a measuring run ran", n)
	}
	if o.maxShared.Load() != 2 {
		t.Errorf("at most %d shared runs at once, want 2 (the slots)", o.maxShared.Load())
	}
	// After e1, the two free slots take s1 and s2 before e2; s3 (no slot free) waits for e2.
	if got, want := fmt.Sprint(order[:3]), "[1 10 11]"; got != want && fmt.Sprint(order[:3]) != "[1 11 10]" {
		t.Errorf("start order %v, want e1, then s1 and s2 before e2", order)
	}
}

// A run outlives a refresh: the new page replays what it sent and goes on live; another student
// can neither see, replay nor cancel it.
func TestReplayAndPrivacy(t *testing.T) {
	cfg := classConfig(t)
	_, base := startServer(t, cfg)
	ada, bob := join(t, base, "class-token", "Ada"), join(t, base, "class-token", "Bob")
	ws := ada.dial(t)
	if err := ws.WriteJSON(probeMsg("p1", "wait: true\nrows: 1")); err != nil {
		t.Fatal(err)
	}
	firstOf(t, ws, "p1", TypeStarted)
	startedBy := time.Now() // its start is stored before its started is sent
	ws.Close()              // a refresh
	var st struct {
		Cells map[string]cellState `json:"cells"`
	}
	_, body := ada.get(t, "/api/state?lesson=p")
	if err := json.Unmarshal([]byte(body), &st); err != nil {
		t.Fatal(err)
	}
	run := st.Cells["p-0"].Run
	if run == nil || !st.Cells["p-0"].Live {
		t.Fatalf("state %s: want p-0's live run", body)
	}
	// Bob: not in his state or runs; his replay and cancel do nothing to it.
	if _, b := bob.get(t, "/api/state?lesson=p"); strings.Contains(b, `"run"`) {
		t.Errorf("Bob's state shows a run: %s", b)
	}
	if _, b := bob.get(t, "/api/runs"); strings.Contains(b, fmt.Sprintf(`"id":%d`, run.ID)) {
		t.Errorf("Bob's runs show Ada's: %s", b)
	}
	if _, b := bob.get(t, "/api/runs.csv"); strings.Count(b, "\n") != 1 {
		t.Errorf("Bob's CSV has rows: %s", b)
	}
	wb := bob.dial(t)
	if err := wb.WriteJSON(Message{Type: TypeReplay, ID: "steal", Run: run.ID}); err != nil {
		t.Fatal(err)
	}
	if m := firstOf(t, wb, "steal", TypeError); !strings.Contains(m.Message, "you have no run") {
		t.Errorf("Bob's replay: %+v", m)
	}
	if err := wb.WriteJSON(Message{Type: TypeCancel, ID: "p1"}); err != nil {
		t.Fatal(err)
	}
	if code := bob.post(t, "/api/class/cancel", url.Values{"run": {fmt.Sprint(run.ID)}}); code != http.StatusForbidden {
		t.Errorf("Bob cancels through /class: %d, want 403", code)
	}
	// Ada's new page replays it: started again, then it goes on live until she stops it.
	ws2 := ada.dial(t)
	time.Sleep(300 * time.Millisecond)
	asked := time.Now()
	if err := ws2.WriteJSON(Message{Type: TypeReplay, ID: "again", Run: run.ID}); err != nil {
		t.Fatal(err)
	}
	// Its started says when it started and how long ago, so the page's clock goes on from there.
	if m := firstOf(t, ws2, "again", TypeStarted); m.StartedAt.IsZero() || m.StartedAt.After(startedBy) ||
		m.Elapsed < asked.Sub(startedBy).Seconds()-0.002 || m.Elapsed > time.Since(m.StartedAt).Seconds()+0.002 {
		t.Errorf("replayed started %+v (started_at %v, elapsed_s %v): want the stored start, by %v, and the seconds since it (at least %v)",
			m, m.StartedAt, m.Elapsed, startedBy, asked.Sub(startedBy))
	}
	ws3 := ada.dial(t) // a second tab shows it too
	if err := ws3.WriteJSON(Message{Type: TypeReplay, ID: "tab2", Run: run.ID}); err != nil {
		t.Fatal(err)
	}
	firstOf(t, ws3, "tab2", TypeStarted)
	if err := ws2.WriteJSON(Message{Type: TypeCancel, ID: "again"}); err != nil {
		t.Fatal(err)
	}
	if tab2 := collect(t, ws3, "tab2", 30*time.Second); tab2[len(tab2)-1].Type != TypeCancelled || count(tab2, TypeCancelled) != 1 {
		t.Errorf("the second tab: %+v, want one cancelled", tab2)
	}
	msgs := collect(t, ws2, "again", 30*time.Second)
	if last := msgs[len(msgs)-1]; last.Type != TypeCancelled || last.Message != "stopped" {
		t.Errorf("Ada's replayed run ended %+v, want cancelled: stopped (by her, not by Bob)", last)
	}
	// A finished run replays whole, with exactly one terminal message.
	if err := ws2.WriteJSON(probeMsg("p2", "rows: 3")); err != nil {
		t.Fatal(err)
	}
	live := collect(t, ws2, "p2", 30*time.Second)
	_, body = ada.get(t, "/api/state?lesson=p")
	st.Cells = nil
	if err := json.Unmarshal([]byte(body), &st); err != nil {
		t.Fatal(err)
	}
	if err := ws2.WriteJSON(Message{Type: TypeReplay, ID: "old", Run: st.Cells["p-0"].Run.ID}); err != nil {
		t.Fatal(err)
	}
	replayed := collect(t, ws2, "old", 30*time.Second)
	if got, want := len(rowsOf(t, replayed, "t")), len(rowsOf(t, live, "t")); got != want || want != 3 {
		t.Errorf("replayed %d rows, live %d, want 3 both", got, want)
	}
	// Its end carries the stored start and end: the page states when it ran and how long it took.
	stored := st.Cells["p-0"].Run
	if end := replayed[len(replayed)-1]; end.Type != TypeDone || stored.Started.IsZero() || !end.StartedAt.Equal(stored.Started) ||
		!end.EndedAt.Equal(stored.Ended) || end.Elapsed != 0 {
		t.Errorf("replayed end %+v (started_at %v, ended_at %v), want done with the stored start %v and end %v", end, end.StartedAt, end.EndedAt, stored.Started, stored.Ended)
	}
	for _, m := range replayed {
		if m.Type == TypeStarted && (!m.StartedAt.Equal(stored.Started) || m.Elapsed != 0) {
			t.Errorf("a finished run's replayed started %+v: want started_at %v and no elapsed_s", m, stored.Started)
		}
	}
	assertQuiet(t, ws2, "old", 200*time.Millisecond)
}

// A data directory that cannot be written stops start-up with an error that names it.
func TestUnwritableDataDir(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := probeConfig(t)
	cfg.DataDir = filepath.Join(file, "data")
	cfg.Devices = noDevice
	_, err := New(cfg)
	if err == nil || !strings.Contains(err.Error(), cfg.DataDir) || !strings.Contains(err.Error(), "-data") {
		t.Errorf("New: %v, want an error naming %s and -data", err, cfg.DataDir)
	}
}

const serveCommand = "serve-for-test"

// serveForTest is this test binary as a server process: `serve-for-test LESSONS DATA` serves the
// probe lesson on 127.0.0.1:0 with DATA as its data directory and prints its URL.
func serveForTest(args []string) {
	err := Run(context.Background(), Config{Config: machine.Config{Devices: noDevice, Kinds: probeKinds}, Addr: "127.0.0.1:0", LessonsDir: args[0], DataDir: args[1]})
	fmt.Fprintln(os.Stderr, "serve-for-test:", err)
	os.Exit(1)
}

// kill -9 of the server mid-run, then a restart on the same data directory: the database is intact,
// the run that was running says it was interrupted, and the one that was queued is queued again and
// runs (its page picks it up by replaying it).
func TestKill9MidRun(t *testing.T) {
	cfg := probeConfig(t)
	data := t.TempDir()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, serveCommand, cfg.LessonsDir, data)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	sc := bufio.NewScanner(out)
	var base string
	for sc.Scan() {
		if u, ok := strings.CutPrefix(sc.Text(), "GPU Playground: "); ok {
			base = strings.TrimSuffix(u, "/")
			break
		}
	}
	if base == "" {
		t.Fatal("the server printed no URL")
	}
	go io.Copy(io.Discard, out)
	ws := dial(t, base)
	if err := ws.WriteJSON(probeMsg("running", "wait: true")); err != nil {
		t.Fatal(err)
	}
	firstOf(t, ws, "running", TypeStarted)
	if err := ws.WriteJSON(probeMsg("queued", "rows: 1")); err != nil {
		t.Fatal(err)
	}
	firstOf(t, ws, "queued", TypeQueued)
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()

	st, err := store.Open(data)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Check(context.Background()); err != nil {
		t.Errorf("after kill -9: %v", err)
	}
	local, _, _ := st.StudentByName(context.Background(), localName)
	runs, err := st.Runs(context.Background(), local.ID, "")
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 2 || runs[0].Status != store.StatusInterrupted || runs[1].Status != store.StatusQueued {
		t.Fatalf("runs after kill -9: %+v, want the running one interrupted and the queued one still queued", runs)
	}
	// Restarted, the server replays the interrupted run with a terminal message that says so.
	cfg.DataDir, cfg.Devices = data, noDevice
	_, base2 := startServer(t, cfg)
	ws2 := dial(t, base2)
	if err := ws2.WriteJSON(Message{Type: TypeReplay, ID: "was", Run: runs[0].ID}); err != nil {
		t.Fatal(err)
	}
	msgs := collect(t, ws2, "was", 30*time.Second)
	if last := msgs[len(msgs)-1]; last.Type != TypeCancelled || !strings.Contains(last.Message, "interrupted") {
		t.Errorf("replay of the interrupted run ended %+v", last)
	}
	checkRequeued(t, ws2, runs[1].ID, "restarted while this run waited")
}

// checkRequeued replays stored run id, queued again after a restart, and checks that it says why
// and then runs to its end: one table row (the probe's rows: 1) and done.
func checkRequeued(t *testing.T, ws *websocket.Conn, id int64, why string) {
	t.Helper()
	if err := ws.WriteJSON(Message{Type: TypeReplay, ID: "again", Run: id}); err != nil {
		t.Fatal(err)
	}
	msgs := collect(t, ws, "again", 30*time.Second)
	said := false
	for _, m := range msgs {
		said = said || m.Type == TypeNote && strings.Contains(m.Note.Message, why)
	}
	if !said || count(msgs, TypeRow) != 1 || msgs[len(msgs)-1].Type != TypeDone || count(msgs, TypeDone) != 1 {
		t.Errorf("the run queued again: %+v, want a note saying %q, its row and one done", msgs, why)
	}
}

// A clean stop with -data keeps the runs still waiting in the queue: their pages hear a note and the
// connection closing (no terminal message), the store keeps them queued, and the next server on the
// same data directory runs them; the running run is cancelled as always.
func TestQueuedRunsSurviveRestart(t *testing.T) {
	cfg := probeConfig(t)
	cfg.DataDir, cfg.Devices = t.TempDir(), noDevice
	base, stop, done := serveUntil(t, cfg)
	ws := dial(t, base)
	if err := ws.WriteJSON(probeMsg("running", "wait: true")); err != nil {
		t.Fatal(err)
	}
	firstOf(t, ws, "running", TypeStarted)
	for _, id := range []string{"q1", "q2"} {
		if err := ws.WriteJSON(probeMsg(id, "rows: 1")); err != nil {
			t.Fatal(err)
		}
		firstOf(t, ws, id, TypeQueued)
	}
	stop()
	var got []Message
	for {
		var m Message
		if ws.ReadJSON(&m) != nil {
			break
		}
		got = append(got, m)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	for _, m := range got {
		if Terminal(m.Type) && m.ID != "running" {
			t.Errorf("queued run %s ended at the clean stop: %+v", m.ID, m)
		}
	}
	if n := countOf(got, "q1", TypeNote) + countOf(got, "q2", TypeNote); n != 2 {
		t.Errorf("notes to the waiting runs at the stop: %d, want 2 (%+v)", n, got)
	}
	st, err := store.Open(cfg.DataDir)
	if err != nil {
		t.Fatal(err)
	}
	local, _, _ := st.StudentByName(context.Background(), localName)
	runs, err := st.Runs(context.Background(), local.ID, "")
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 3 || runs[0].Status != store.StatusCancelled || runs[1].Status != store.StatusQueued || runs[2].Status != store.StatusQueued {
		t.Fatalf("runs after the stop: %+v, want cancelled, queued, queued", runs)
	}
	_, base2 := startServer(t, cfg)
	ws2 := dial(t, base2)
	checkRequeued(t, ws2, runs[1].ID, "keeps its place in the queue")
	checkRequeued(t, ws2, runs[2].ID, "restarted while this run waited")
}

func countOf(msgs []Message, id, typ string) int {
	n := 0
	for _, m := range msgs {
		if m.ID == id && m.Type == typ {
			n++
		}
	}
	return n
}

// In a class, an unedited cell's run gets the results measured for another student's run within
// the window, labelled; "fresh" measures anyway; an edited cell always runs.
func TestSharedResults(t *testing.T) {
	s, base := startServer(t, classConfig(t))
	cell, _ := s.lesson("p").Cell("p-0")
	ada, bob := join(t, base, "class-token", "Ada"), join(t, base, "class-token", "Bob")
	wa, wb := ada.dial(t), bob.dial(t)
	if err := wa.WriteJSON(probeMsg("a", cell.Source)); err != nil {
		t.Fatal(err)
	}
	measured := collect(t, wa, "a", 30*time.Second)
	if count(measured, TypeStarted) != 1 || count(measured, TypeShared) != 0 {
		t.Fatalf("the first run: %+v, want measured", measured)
	}
	if err := wb.WriteJSON(probeMsg("b", cell.Source)); err != nil {
		t.Fatal(err)
	}
	shared := collect(t, wb, "b", 30*time.Second)
	if shared[0].Type != TypeShared || shared[0].Shared.Machine == "" || shared[0].Shared.Measured.IsZero() || count(shared, TypeStarted) != 0 ||
		len(rowsOf(t, shared, "t")) != 1 || shared[len(shared)-1].Type != TypeDone || !strings.Contains(notesOf(shared)[0], "Shared results") ||
		!strings.Contains(notesOf(shared)[0], "its tables say what was measured, emulated or modelled") || strings.Contains(notesOf(shared)[0], "was measured for") {
		t.Errorf("Bob's run of the unedited cell: %+v, want shared, a note, the row, done", shared)
	}
	fresh := probeMsg("b2", cell.Source)
	fresh.Fresh = true
	edited := probeMsg("b3", cell.Source+"# mine\n")
	for _, m := range []Message{fresh, edited} {
		if err := wb.WriteJSON(m); err != nil {
			t.Fatal(err)
		}
		if got := collect(t, wb, m.ID, 30*time.Second); count(got, TypeStarted) != 1 || count(got, TypeShared) != 0 {
			t.Errorf("run %s: %+v, want measured", m.ID, got)
		}
	}
}

// A run that asked its student's page (a WebGPU measurement in that browser) is never offered to
// another student as shared results: its tables describe the first student's browser and GPU.
func TestBrowserRunsAreNotShared(t *testing.T) {
	cfg := classConfig(t)
	if err := os.WriteFile(filepath.Join(cfg.LessonsDir, "q.md"), []byte("---\ntitle: Q\nsummary: s\norder: 2\n---\n\n```probe\nask: 1\n```\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s, base := startServer(t, cfg)
	cell, _ := s.lesson("q").Cell("q-0")
	ada, bob := join(t, base, "class-token", "Ada"), join(t, base, "class-token", "Bob")
	wa, wb := ada.dial(t), bob.dial(t)
	run := func(ws *websocket.Conn, id string) []Message {
		t.Helper()
		if err := ws.WriteJSON(Message{Type: TypeRun, ID: id, RunRequest: &RunRequest{Lesson: "q", Cell: "q-0", Source: cell.Source}}); err != nil {
			t.Fatal(err)
		}
		var msgs []Message
		for {
			m := nextOf(t, ws, id)
			msgs = append(msgs, m)
			if m.Type == TypeTask {
				if err := ws.WriteJSON(resultMsg(id, `{"adapter":"mine"}`)); err != nil {
					t.Fatal(err)
				}
			}
			if Terminal(m.Type) || m.ID == "" {
				return msgs
			}
		}
	}
	if got := run(wa, "a"); got[len(got)-1].Type != TypeDone || count(got, TypeStarted) != 1 {
		t.Fatalf("Ada's run: %+v, want measured and done", got)
	}
	if got := run(wb, "b"); count(got, TypeShared) != 0 || count(got, TypeStarted) != 1 || count(got, TypeTask) != 1 {
		t.Errorf("Bob's run of the unedited cell: %+v, want his own run that asks his page, not Ada's results", got)
	}
}

// The instructor pauses the queue (nothing new starts, the queue view shows the waiting run),
// cancels a student's run, and resumes.
func TestInstructorPauseAndCancel(t *testing.T) {
	_, base := startServer(t, classConfig(t))
	ada, teacher := join(t, base, "class-token", "Ada"), join(t, base, "teach", "Teacher")
	ws := ada.dial(t)
	if code := teacher.post(t, "/api/class/pause", url.Values{"paused": {"true"}}); code != http.StatusNoContent {
		t.Fatalf("pause: %d", code)
	}
	for _, id := range []string{"one", "two"} {
		if err := ws.WriteJSON(probeMsg(id, "rows: 2")); err != nil {
			t.Fatal(err)
		}
		firstOf(t, ws, id, TypeQueued)
	}
	var class struct {
		Paused  bool       `json:"paused"`
		Waiting []classRun `json:"waiting"`
		Running []classRun `json:"running"`
	}
	_, body := teacher.get(t, "/api/class")
	if err := json.Unmarshal([]byte(body), &class); err != nil {
		t.Fatal(err)
	}
	if !class.Paused || len(class.Waiting) != 2 || len(class.Running) != 0 || class.Waiting[0].Student != "Ada" {
		t.Fatalf("class while paused: %s, want Ada's two runs waiting, none running", body)
	}
	if code := teacher.post(t, "/api/class/cancel", url.Values{"run": {fmt.Sprint(class.Waiting[0].Run)}}); code != http.StatusNoContent {
		t.Errorf("cancel: %d", code)
	}
	if msgs := collect(t, ws, "one", 10*time.Second); msgs[len(msgs)-1].Message != errByInstructor.Error() {
		t.Errorf("the cancelled run ended %+v", msgs[len(msgs)-1])
	}
	if code := teacher.post(t, "/api/class/pause", url.Values{"paused": {"false"}}); code != http.StatusNoContent {
		t.Fatalf("resume: %d", code)
	}
	if msgs := collect(t, ws, "two", 30*time.Second); msgs[len(msgs)-1].Type != TypeDone {
		t.Errorf("after resume: %+v", msgs[len(msgs)-1])
	}
	if _, csv := teacher.get(t, "/api/class/results.csv?lesson=p"); !strings.Contains(csv, "Ada,") || !strings.Contains(csv, ",square,s,") {
		t.Errorf("class CSV lacks Ada's rows: %s", csv)
	}
	var board cellBoard
	_, body = teacher.get(t, "/api/class/cell?lesson=p&cell=p-0")
	if err := json.Unmarshal([]byte(body), &board); err != nil {
		t.Fatal(err)
	}
	if len(board.Rows) != 2 || board.Rows[0].Student != "Ada" || len(board.Columns) != 2 {
		t.Errorf("the cell's board: %s, want Ada's 2 rows under 2 columns", body)
	}
}

// collectAll reads the messages of runs ids, which may interleave, until each has its terminal.
func collectAll(t *testing.T, ws *websocket.Conn, ids ...string) map[string][]Message {
	t.Helper()
	out := map[string][]Message{}
	ended := 0
	_ = ws.SetReadDeadline(time.Now().Add(60 * time.Second))
	for ended < len(ids) {
		var m Message
		if err := ws.ReadJSON(&m); err != nil {
			t.Fatalf("reading after %d of %d runs ended: %v", ended, len(ids), err)
		}
		if !slices.Contains(ids, m.ID) {
			continue
		}
		out[m.ID] = append(out[m.ID], m)
		if Terminal(m.Type) {
			ended++
		}
	}
	return out
}

// Without sign-in the local user is the instructor, so a state-changing request from another
// site's page (a form posting to 127.0.0.1) is refused by its Origin.
func TestCrossSitePostRefused(t *testing.T) {
	s, base := startServer(t, probeConfig(t))
	for _, origin := range []string{"http://evil.example", ""} {
		req, _ := http.NewRequest("POST", base+"/api/class/pause", strings.NewReader("paused=true"))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		want := http.StatusNoContent
		if origin != "" {
			want = http.StatusForbidden
		}
		if resp.StatusCode != want {
			t.Errorf("pause from %q: %d, want %d", origin, resp.StatusCode, want)
		}
	}
	if st := s.queue.state(); !st.Paused {
		t.Error("the same-origin pause did not pause")
	}
}

// A page that reloads while its run waits for a browser task gets the outstanding task again after
// the replay (never one already answered), and its answer from the new connection is the run's;
// another student can neither see the task nor answer it.
func TestAskAcrossReplay(t *testing.T) {
	_, base := startServer(t, classConfig(t))
	ada, bob := join(t, base, "class-token", "Ada"), join(t, base, "class-token", "Bob")
	ws := ada.dial(t)
	if err := ws.WriteJSON(probeMsg("q", "ask: 2")); err != nil {
		t.Fatal(err)
	}
	first := firstOf(t, ws, "q", TypeTask)
	if got, want := string(first.Task), `{"question":0}`; got != want {
		t.Fatalf("first task %s, want %s", got, want)
	}
	if err := ws.WriteJSON(Message{Type: TypeResult, ID: "q", Result: json.RawMessage(`"zero"`)}); err != nil {
		t.Fatal(err)
	}
	if second := firstOf(t, ws, "q", TypeTask); string(second.Task) != `{"question":1}` {
		t.Fatalf("second task %s", second.Task)
	}
	ws.Close() // a reload while the second task is outstanding
	var st struct {
		Cells map[string]cellState `json:"cells"`
	}
	_, body := ada.get(t, "/api/state?lesson=p")
	if err := json.Unmarshal([]byte(body), &st); err != nil {
		t.Fatal(err)
	}
	run := st.Cells["p-0"].Run
	if run == nil {
		t.Fatalf("state %s: want p-0's run", body)
	}
	wb := bob.dial(t)
	if err := wb.WriteJSON(Message{Type: TypeResult, ID: "q", Result: json.RawMessage(`"bob"`)}); err != nil {
		t.Fatal(err)
	}
	if m := firstOf(t, wb, "", TypeError); !strings.Contains(m.Message, "no run") {
		t.Errorf("Bob's result: %+v, want an error", m)
	}
	ws2 := ada.dial(t)
	if err := ws2.WriteJSON(Message{Type: TypeReplay, ID: "q2", Run: run.ID}); err != nil {
		t.Fatal(err)
	}
	var tasks, notes []string
	_ = ws2.SetReadDeadline(time.Now().Add(30 * time.Second))
	for {
		var m Message
		if err := ws2.ReadJSON(&m); err != nil {
			t.Fatalf("waiting for the task again: %v", err)
		}
		if m.ID == "q2" && m.Type == TypeNote {
			notes = append(notes, m.Note.Message)
		}
		if m.ID == "q2" && m.Type == TypeTask {
			tasks = append(tasks, string(m.Task))
			break
		}
	}
	if got, want := fmt.Sprint(tasks), `[{"question":1}]`; got != want {
		t.Errorf("tasks after the replay %s, want %s (only the outstanding one)", got, want)
	}
	if err := ws2.WriteJSON(Message{Type: TypeResult, ID: "q2", Result: json.RawMessage(`"one"`)}); err != nil {
		t.Fatal(err)
	}
	msgs := collect(t, ws2, "q2", 30*time.Second)
	if last := msgs[len(msgs)-1]; last.Type != TypeDone {
		t.Fatalf("the run ended %+v, want done", last)
	}
	for _, m := range msgs {
		if m.Type == TypeNote {
			notes = append(notes, m.Note.Message)
		}
	}
	if got, want := fmt.Sprint(notes), `[answer: "zero" answer: "one"]`; got != want {
		t.Errorf("notes %s, want %s", got, want)
	}
}

// GET never changes state: opening a lesson page does not record it as the student's lesson; the
// websocket the page opens with ?lesson= does.
func TestLessonSeenOnWebsocketNotGET(t *testing.T) {
	s, base := startServer(t, classConfig(t))
	ada := join(t, base, "class-token", "Ada")
	lessonOf := func() string {
		t.Helper()
		sts, err := s.store.Students(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, st := range sts {
			if st.Name == "Ada" {
				return st.Lesson
			}
		}
		t.Fatalf("no Ada in %+v", sts)
		return ""
	}
	if code, _ := ada.get(t, "/lessons/p"); code != http.StatusOK {
		t.Fatalf("GET /lessons/p: %d", code)
	}
	if got := lessonOf(); got != "" {
		t.Errorf("after GET /lessons/p the student's lesson is %q, want none (GET changes nothing)", got)
	}
	ws := ada.dialLesson(t, "p")
	// The lesson is recorded before the connection reads: a reply to a message proves it is done.
	if err := ws.WriteJSON(Message{Type: TypeReplay, ID: "nothing", Run: 999}); err != nil {
		t.Fatal(err)
	}
	_ = ws.SetReadDeadline(time.Now().Add(30 * time.Second))
	var m Message
	if err := ws.ReadJSON(&m); err != nil {
		t.Fatal(err)
	}
	if got := lessonOf(); got != "p" {
		t.Errorf("after the websocket opened with ?lesson=p the student's lesson is %q, want p", got)
	}
}

// Runs left queued in the store are queued again at start: one whose cell is gone ends with an
// error saying why, and those of a student who does not come back within the grace period are
// cancelled as after a disconnect.
func TestRequeueEndsWhatCannotRun(t *testing.T) {
	cfg := probeConfig(t)
	cfg.DataDir, cfg.Devices, cfg.Grace = t.TempDir(), noDevice, -1
	st, err := store.Open(cfg.DataDir)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ada, err := st.AddStudent(ctx, "Ada", "sess", false)
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for _, r := range []store.Run{
		{Student: ada.ID, Lesson: "p", Cell: "p-9", Source: "rows: 1", Owner: "student 1"},
		{Student: ada.ID, Lesson: "p", Cell: "p-0", Source: "wait: true", Owner: "student 1"},
		{Student: ada.ID, Lesson: "p", Cell: "p-0", Source: "wait: true", Owner: "student 1"},
	} {
		rec, err := st.AddRun(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, rec.ID)
	}
	st.Close()
	s, _ := startServer(t, cfg)
	deadline := time.Now().Add(30 * time.Second)
	for {
		runs, err := s.store.Runs(ctx, ada.ID, "")
		if err != nil {
			t.Fatal(err)
		}
		if len(runs) == 3 && runs[0].Status == store.StatusError && runs[1].Status == store.StatusCancelled && runs[2].Status == store.StatusCancelled {
			if !strings.Contains(runs[0].Message, "could not be queued again") || !strings.Contains(runs[0].Message, "p-9") {
				t.Errorf("the run of a cell that is gone ended %q", runs[0].Message)
			}
			for _, r := range runs[1:] {
				if !strings.Contains(r.Message, "grace period") {
					t.Errorf("run %d of a student who did not come back ended %q, want the grace period", r.ID, r.Message)
				}
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("runs %v after the restart: %+v, want error, cancelled, cancelled", ids, runs)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
