package server

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/gpuplayground/playground/cells"
	"github.com/gpuplayground/playground/gpu/nvidia"
	"github.com/gpuplayground/playground/harness"
	"github.com/gpuplayground/playground/machine"
	"github.com/gpuplayground/playground/store"
)

// getJSON GETs url and decodes its JSON body into v, returning the decoding error; a failed request
// fails the test.
func getJSON(t *testing.T, url string, v any) error {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	return json.NewDecoder(resp.Body).Decode(v)
}

// getBody GETs url and returns its body; a failed request fails the test.
func getBody(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// startServer serves cfg on 127.0.0.1:0 until the test ends; it returns the server and its base URL.
func startServer(t *testing.T, cfg Config) (*Server, string) {
	t.Helper()
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return s, "http://" + ln.Addr().String()
}

// dialFrom opens a websocket to base from the loopback address ip (127.0.0.0/8: each address is
// another client for the server's shares), or returns the error.
func dialFrom(base, ip string) (*websocket.Conn, error) {
	nd := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	d := websocket.Dialer{NetDialContext: nd.DialContext, HandshakeTimeout: 30 * time.Second}
	ws, _, err := d.Dial("ws"+strings.TrimPrefix(base, "http")+"/ws", nil)
	return ws, err
}

func dial(t *testing.T, base string) *websocket.Conn {
	t.Helper()
	ws, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(base, "http")+"/ws", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	return ws
}

func runMsg(id, source string) Message {
	return Message{Type: TypeRun, ID: id, RunRequest: &RunRequest{Lesson: "counting-flops", Cell: "counting-flops-0", Source: source}}
}

// rowsOf returns the rows of table id among msgs, each as a map from column label to value (and
// "bad" to the row's flag), after checking that the table was declared before its first row.
func rowsOf(t *testing.T, msgs []Message, id string) []map[string]any {
	t.Helper()
	var cols []cells.Column
	var out []map[string]any
	for _, m := range msgs {
		if m.Type == TypeTable && m.Table.ID == id {
			cols = m.Table.Columns
		}
		if m.Type == TypeRow && m.Row.Table == id {
			if cols == nil {
				t.Fatalf("a row of table %q before the table", id)
			}
			r := map[string]any{"bad": m.Row.Bad}
			for i, v := range m.Row.Values {
				r[cols[i].Label] = v
			}
			out = append(out, r)
		}
	}
	return out
}

// column returns one column of rows, formatted with %v.
func column(rows []map[string]any, label string) []string {
	var out []string
	for _, r := range rows {
		out = append(out, fmt.Sprint(r[label]))
	}
	return out
}

// notesOf returns the run's notes as "level: message".
func notesOf(msgs []Message) []string {
	var out []string
	for _, m := range msgs {
		if m.Type == TypeNote {
			out = append(out, m.Note.Level+": "+m.Note.Message)
		}
	}
	return out
}

// withoutModelNote returns notes without the cuda cell's note on what its model charges ("info:
// model: the issue and latency terms charge …"), which says SASS or PTX as this machine's ptxas and
// nvdisasm allow, and whether there was one.
func withoutModelNote(notes []string) (rest []string, had bool) {
	for _, n := range notes {
		if strings.HasPrefix(n, "info: model: the issue and latency terms charge ") {
			had = true
			continue
		}
		rest = append(rest, n)
	}
	return rest, had
}

// count returns how many of msgs have type typ.
func count(msgs []Message, typ string) int {
	n := 0
	for _, m := range msgs {
		if m.Type == typ {
			n++
		}
	}
	return n
}

// collect reads messages for run id until its terminal message, failing after limit.
func collect(t *testing.T, ws *websocket.Conn, id string, limit time.Duration) []Message {
	t.Helper()
	var got []Message
	deadline := time.Now().Add(limit)
	for {
		_ = ws.SetReadDeadline(deadline)
		var m Message
		if err := ws.ReadJSON(&m); err != nil {
			t.Fatalf("run %s: reading after %d messages: %v", id, len(got), err)
		}
		if m.ID != id {
			continue
		}
		got = append(got, m)
		if Terminal(m.Type) {
			return got
		}
	}
}

// assertQuiet fails if any message for id arrives within d (nothing may follow a terminal message).
func assertQuiet(t *testing.T, ws *websocket.Conn, id string, d time.Duration) {
	t.Helper()
	_ = ws.SetReadDeadline(time.Now().Add(d))
	for {
		var m Message
		if err := ws.ReadJSON(&m); err != nil {
			return // deadline: quiet
		}
		if m.ID == id {
			t.Fatalf("run %s: got %q after its terminal message", id, m.Type)
		}
	}
}

func TestRunMessageSequence(t *testing.T) {
	_, base := startServer(t, Config{})
	ws := dial(t, base)
	start := time.Now()
	if err := ws.WriteJSON(runMsg("r1", "kernels: [naive, gonum]\nsizes: [16, 32]\nrepeats: 2\n")); err != nil {
		t.Fatal(err)
	}
	var m Message
	if err := ws.ReadJSON(&m); err != nil {
		t.Fatal(err)
	}
	if got := time.Since(start); got > 5*time.Second { // promised ≤ 50 ms on an idle server; 100× margin for a busy one
		t.Errorf("first reply after %v", got)
	}
	if m.Type != TypeQueued || m.ID != "r1" || m.Position != 1 {
		t.Errorf("first message %+v, want queued r1 at position 1", m)
	}
	msgs := append([]Message{m}, collect(t, ws, "r1", 30*time.Second)...)
	var types []string
	for _, m := range msgs {
		types = append(types, m.Type)
		if m.Type == TypeChart && (!strings.HasPrefix(m.SVG, "<svg") || !strings.HasSuffix(strings.TrimSpace(m.SVG), "</svg>")) {
			t.Errorf("chart is not a complete <svg> document")
		}
	}
	rows := rowsOf(t, msgs, "results")
	for _, r := range rows {
		if r["check"] != "ok" || !(r["throughput"].(float64) > 0) || r["dtype"] != "float32" || r["bad"] != false {
			t.Errorf("result %v: want ok, positive GFLOP/s, float32", r)
		}
	}
	charts, terminals := count(msgs, TypeChart), count(msgs, TypeDone)+count(msgs, TypeError)+count(msgs, TypeCancelled)
	if types[1] != TypeStarted || types[len(types)-1] != TypeDone || len(rows) != 4 || charts < 1 || charts > 4 || terminals != 1 {
		t.Errorf("got sequence %v, want queued, started, progress/table/row/chart…, done with 4 rows and 1 to 4 charts", types)
	}
	// The chart of every result comes last, just before done.
	if types[len(types)-2] != TypeChart {
		t.Errorf("the last chart does not end the run: %v", types)
	}
	var lastProg *Progress
	for _, m := range msgs {
		if m.Type == TypeProgress {
			lastProg = m.Progress
		}
	}
	if lastProg == nil || lastProg.Done != lastProg.Total || lastProg.Total != 2*2*3 {
		t.Errorf("last progress %+v, want 12/12", lastProg)
	}
	assertQuiet(t, ws, "r1", 200*time.Millisecond)
}

func TestStopMidKernel(t *testing.T) {
	if testing.Short() {
		t.Skip("multiplies 2048×2048 matrices")
	}
	_, base := startServer(t, Config{})
	ws := dial(t, base)
	if err := ws.WriteJSON(runMsg("long", "kernels: [naive]\nsizes: [1024]\nrepeats: 3\n")); err != nil {
		t.Fatal(err)
	}
	for {
		var m Message
		if err := ws.ReadJSON(&m); err != nil {
			t.Fatal(err)
		}
		if m.Type == TypeStarted {
			break
		}
		if Terminal(m.Type) {
			t.Fatalf("run ended before starting: %+v", m)
		}
	}
	time.Sleep(700 * time.Millisecond) // inputs drawn; the naive kernel (seconds per call) is running
	start := time.Now()
	if err := ws.WriteJSON(Message{Type: TypeCancel, ID: "long"}); err != nil {
		t.Fatal(err)
	}
	msgs := collect(t, ws, "long", 10*time.Second)
	if got := time.Since(start); got > 5*time.Second { // promised ≤ 0.5 s; 10× margin for a busy machine
		t.Errorf("cancelled after %v, want well under the naive calls' tens of seconds", got)
	}
	if last := msgs[len(msgs)-1]; last.Type != TypeCancelled || last.Message != "stopped" {
		t.Errorf("got %+v, want cancelled: stopped", last)
	}
	assertQuiet(t, ws, "long", 200*time.Millisecond)
}

func TestCrossOriginUpgradeRefused(t *testing.T) {
	_, base := startServer(t, Config{})
	h := http.Header{"Origin": []string{"http://evil.example"}}
	_, resp, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(base, "http")+"/ws", h)
	if err == nil {
		t.Fatal("cross-origin upgrade succeeded, want 403")
	}
	if resp == nil || resp.StatusCode != http.StatusForbidden {
		t.Fatalf("got %v, want 403", resp)
	}
	// The same origin is accepted.
	h.Set("Origin", base)
	ws, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(base, "http")+"/ws", h)
	if err != nil {
		t.Fatalf("same-origin upgrade: %v", err)
	}
	ws.Close()
}

func TestHundredConcurrentClients(t *testing.T) {
	t.Parallel()
	_, base := startServer(t, Config{})
	const clients = 100
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for i := range clients {
		wg.Go(func() {
			ws, err := dialFrom(base, fmt.Sprintf("127.0.1.%d", i+1)) // a hundred learners: a hundred addresses
			if err != nil {
				errs <- err
				return
			}
			defer ws.Close()
			id := fmt.Sprintf("c%d", i)
			if err := ws.WriteJSON(runMsg(id, "kernels: [ikj]\nsizes: [8]\nrepeats: 1")); err != nil {
				errs <- err
				return
			}
			terminals, last := 0, ""
			_ = ws.SetReadDeadline(time.Now().Add(60 * time.Second))
			for terminals == 0 {
				var m Message
				if err := ws.ReadJSON(&m); err != nil {
					errs <- fmt.Errorf("%s: %v", id, err)
					return
				}
				if Terminal(m.Type) {
					terminals++
					last = m.Type
				}
			}
			// Nothing after the terminal message.
			_ = ws.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
			var m Message
			if err := ws.ReadJSON(&m); err == nil {
				errs <- fmt.Errorf("%s: got %q after the terminal message", id, m.Type)
				return
			}
			if last != TypeDone {
				errs <- fmt.Errorf("%s: ended with %s, want done", id, last)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestBadInputGetsErrorAndConnectionStays(t *testing.T) {
	_, base := startServer(t, Config{})
	ws := dial(t, base)
	big := strings.Repeat("x", 70<<10)
	tests := []struct {
		name, frame, id string
		want            []string
	}{
		{"malformed JSON", `{"type":"run",`, "", []string{"malformed JSON"}},
		{"unknown type", `{"type":"launch","id":"a"}`, "a", []string{`unknown message type "launch"`}},
		{"no id", `{"type":"run","lesson":"counting-flops","cell":"counting-flops-0","source":"x"}`, "", []string{"needs an id"}},
		{"unknown lesson", `{"type":"run","id":"b","lesson":"99-nope","cell":"x","source":""}`, "b", []string{`unknown lesson "99-nope"`}},
		{"unknown cell", `{"type":"run","id":"c","lesson":"counting-flops","cell":"counting-flops-99","source":""}`, "c", []string{`no cell "counting-flops-99"`}},
		{"bad yaml", `{"type":"run","id":"d","lesson":"counting-flops","cell":"counting-flops-0","source":"kernels: [naive\n"}`, "d", []string{"YAML"}},
		{"unknown kernel", `{"type":"run","id":"e","lesson":"counting-flops","cell":"counting-flops-0","source":"kernels: [cutlass]\nsizes: [8]"}`, "e", []string{`unknown kernel "cutlass"`, "naive, ikj, tiled, parallel, gonum, packed, simd, simd-parallel, cublas"}},
		{"unknown dtype", `{"type":"run","id":"f","lesson":"counting-flops","cell":"counting-flops-0","source":"kernels: [ikj]\nsizes: [8]\ndtype: half"}`, "f", []string{`unknown dtype "half"`}},
		{"n < 1", `{"type":"run","id":"g","lesson":"counting-flops","cell":"counting-flops-0","source":"kernels: [ikj]\nsizes: [0]"}`, "g", []string{"at least 1"}},
		{"n over limit", `{"type":"run","id":"h","lesson":"counting-flops","cell":"counting-flops-0","source":"kernels: [ikj]\nsizes: [8192]"}`, "h", []string{"over the limit of 4096"}},
		{"too slow", `{"type":"run","id":"i","lesson":"counting-flops","cell":"counting-flops-0","source":"kernels: [naive]\nsizes: [4096]"}`, "i", []string{"estimated", "time limit"}},
		{"over 64 KiB", `{"type":"run","id":"j","source":"` + big + `"}`, "", []string{"64 KiB"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := ws.WriteMessage(websocket.TextMessage, []byte(tt.frame)); err != nil {
				t.Fatal(err)
			}
			_ = ws.SetReadDeadline(time.Now().Add(5 * time.Second))
			var m Message
			if err := ws.ReadJSON(&m); err != nil {
				t.Fatal(err)
			}
			if m.Type != TypeError || m.ID != tt.id {
				t.Fatalf("got %+v, want an error for id %q", m, tt.id)
			}
			for _, w := range tt.want {
				if !strings.Contains(m.Message, w) {
					t.Errorf("error %q does not mention %q", m.Message, w)
				}
			}
		})
	}
	// The connection still runs experiments.
	if err := ws.WriteJSON(runMsg("after", "kernels: [ikj]\nsizes: [8]\nrepeats: 1")); err != nil {
		t.Fatal(err)
	}
	if msgs := collect(t, ws, "after", 10*time.Second); msgs[len(msgs)-1].Type != TypeDone {
		t.Errorf("run after bad input ended with %+v", msgs[len(msgs)-1])
	}
}

func TestMemoryBudgetFromConfig(t *testing.T) {
	_, base := startServer(t, Config{Config: machine.Config{Limits: harness.Limits{MemoryBytes: 1 << 20}}})
	ws := dial(t, base)
	if err := ws.WriteJSON(runMsg("m", "kernels: [ikj]\nsizes: [512]")); err != nil {
		t.Fatal(err)
	}
	msgs := collect(t, ws, "m", 5*time.Second)
	if m := msgs[0]; m.Type != TypeError || !strings.Contains(m.Message, "memory budget of 1 MiB") {
		t.Errorf("got %+v, want a memory budget error", m)
	}
}

func TestRunTimeLimit(t *testing.T) {
	s, base := startServer(t, probeConfig(t))
	s.queue.timeout = 200 * time.Millisecond
	ws := dial(t, base)
	if err := ws.WriteJSON(probeMsg("slow", "wait: true")); err != nil {
		t.Fatal(err)
	}
	msgs := collect(t, ws, "slow", 30*time.Second)
	if last := msgs[len(msgs)-1]; last.Type != TypeError || !strings.Contains(last.Message, "200ms time limit") {
		t.Errorf("got %+v, want an error naming the 200ms limit", last)
	}
}

func TestQueuePositionsAndCancelWhileQueued(t *testing.T) {
	_, base := startServer(t, Config{})
	ws := dial(t, base)
	if err := ws.WriteJSON(runMsg("first", "kernels: [naive]\nsizes: [1024]\nrepeats: 1")); err != nil {
		t.Fatal(err)
	}
	collectUntil(t, ws, TypeStarted)
	if err := ws.WriteJSON(runMsg("second", "kernels: [ikj]\nsizes: [8]\nrepeats: 1")); err != nil {
		t.Fatal(err)
	}
	// second waits behind first.
	_ = ws.SetReadDeadline(time.Now().Add(5 * time.Second))
	for {
		var m Message
		if err := ws.ReadJSON(&m); err != nil {
			t.Fatal(err)
		}
		if m.ID == "second" {
			if m.Type != TypeQueued || m.Position != 1 {
				t.Fatalf("got %+v, want second queued at position 1 behind the running first", m)
			}
			break
		}
	}
	if err := ws.WriteJSON(Message{Type: TypeCancel, ID: "second"}); err != nil {
		t.Fatal(err)
	}
	if msgs := collect(t, ws, "second", 5*time.Second); msgs[len(msgs)-1].Type != TypeCancelled {
		t.Errorf("queued run ended with %+v, want cancelled", msgs[len(msgs)-1])
	}
	if err := ws.WriteJSON(Message{Type: TypeCancel, ID: "first"}); err != nil {
		t.Fatal(err)
	}
	if msgs := collect(t, ws, "first", 5*time.Second); msgs[len(msgs)-1].Type != TypeCancelled {
		t.Errorf("running run ended with %+v, want cancelled", msgs[len(msgs)-1])
	}
}

// A client that disconnects and stays away past the grace period has its run cancelled: the next
// client's run, queued behind a run that never ends by itself, gets the machine.
func TestAwayPastGraceCancelsRun(t *testing.T) {
	cfg := probeConfig(t)
	cfg.Grace = 200 * time.Millisecond
	_, base := startServer(t, cfg)
	ws := dial(t, base)
	if err := ws.WriteJSON(probeMsg("gone", "wait: true")); err != nil {
		t.Fatal(err)
	}
	collectUntil(t, ws, TypeStarted)
	ws.Close()
	ws2, err := dialFrom(base, "127.0.0.2") // another client: the first one's address has no connection
	if err != nil {
		t.Fatal(err)
	}
	defer ws2.Close()
	if err := ws2.WriteJSON(probeMsg("next", "rows: 1")); err != nil {
		t.Fatal(err)
	}
	if msgs := collect(t, ws2, "next", 30*time.Second); msgs[len(msgs)-1].Type != TypeDone {
		t.Fatalf("got %+v", msgs[len(msgs)-1])
	}
}

func collectUntil(t *testing.T, ws *websocket.Conn, typ string) {
	t.Helper()
	_ = ws.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		var m Message
		if err := ws.ReadJSON(&m); err != nil {
			t.Fatal(err)
		}
		if m.Type == typ {
			return
		}
	}
}

// A client that stops reading is dropped by send, which never blocks the run that calls it.
func TestSlowClientDroppedWithoutBlocking(t *testing.T) {
	srvConn := make(chan *websocket.Conn, 1)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := upgrader.Upgrade(w, r, nil)
		if err != nil {
			t.Error(err)
			return
		}
		srvConn <- ws
	}))
	defer hs.Close()
	client, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(hs.URL, "http")+"/", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	ws := <-srvConn
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	c := &conn{ws: ws, out: make(chan Message, 2), ctx: ctx, cancel: cancel, jobs: map[string]*job{}}
	// No writer runs: the client is "slow". The third send overflows the buffer.
	start := time.Now()
	for range 3 {
		c.send(Message{Type: TypeProgress, ID: "x", Body: machine.Body{Progress: &Progress{Done: 1, Total: 2}}})
	}
	if time.Since(start) > 5*time.Second { // send never blocks; a blocked send would hang here
		t.Errorf("send blocked for %v", time.Since(start))
	}
	if cause := context.Cause(ctx); cause == nil || !strings.Contains(cause.Error(), "too far behind") {
		t.Errorf("connection cause %v, want dropped as too far behind", cause)
	}
	_ = client.SetReadDeadline(time.Now().Add(2 * time.Second))
	for {
		_, _, err := client.ReadMessage()
		if err == nil {
			continue
		}
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Errorf("the server did not close the slow client's connection")
		}
		break
	}
}

// Shutdown: the running and the queued run each get their `cancelled` ("the server is shutting
// down") before the socket closes with 1001, and Serve returns nil.
func TestShutdownCancelsRunsAndClosesSockets(t *testing.T) {
	s, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()
	ws := dial(t, "http://"+ln.Addr().String())
	if err := ws.WriteJSON(runMsg("busy", "kernels: [naive]\nsizes: [1024]\nrepeats: 1")); err != nil {
		t.Fatal(err)
	}
	collectUntil(t, ws, TypeStarted)
	if err := ws.WriteJSON(runMsg("waiting", "kernels: [ikj]\nsizes: [8]\nrepeats: 1")); err != nil {
		t.Fatal(err)
	}
	collectUntil(t, ws, TypeQueued) // "waiting" is in the line behind "busy"
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Serve returned %v, want nil", err)
		}
	case <-time.After(30 * time.Second): // promised: a few seconds; 10× margin
		t.Fatal("Serve did not return within 30 s of shutdown")
	}
	terminal := map[string]Message{}
	_ = ws.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		var m Message
		err := ws.ReadJSON(&m)
		if err == nil {
			if Terminal(m.Type) {
				if _, dup := terminal[m.ID]; dup {
					t.Errorf("a second terminal message for %s: %+v", m.ID, m)
				}
				terminal[m.ID] = m
			}
			continue
		}
		var ce *websocket.CloseError
		if !errors.As(err, &ce) || ce.Code != websocket.CloseGoingAway {
			t.Errorf("socket ended with %v, want close 1001 (going away)", err)
		}
		break
	}
	for _, id := range []string{"busy", "waiting"} {
		if m := terminal[id]; m.Type != TypeCancelled || m.Message != "the server is shutting down" {
			t.Errorf("run %s ended with %+v, want cancelled: the server is shutting down", id, m)
		}
	}
}

func TestPages(t *testing.T) {
	_, base := startServer(t, Config{})
	get := func(path string) (int, string) {
		t.Helper()
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	code, body := get("/")
	if code != 200 {
		t.Fatalf("/: %d", code)
	}
	i1, i2, i3 := strings.Index(body, "Why GPUs?"), strings.Index(body, "Counting FLOPs"), strings.Index(body, "A fast CPU matmul")
	if i1 < 0 || !(i1 < i2 && i2 < i3) {
		t.Errorf("index does not list the lessons in order")
	}
	code, body = get("/lessons/fast-cpu-matmul")
	if code != 200 || !strings.Contains(body, `rel="prev" href="/lessons/counting-flops"`) || !strings.Contains(body, `rel="next" href="/lessons/simd-and-registers"`) {
		t.Errorf("lesson page %d lacks prev/next links", code)
	}
	if !strings.Contains(body, `data-cell="fast-cpu-matmul-0"`) || !strings.Contains(body, "<textarea") {
		t.Errorf("lesson page lacks its cells")
	}
	if code, body = get("/lessons/no-such-lesson"); code != 404 || !strings.Contains(body, "Not found") {
		t.Errorf("unknown slug: %d", code)
	}
	if code, _ = get("/nowhere"); code != 404 {
		t.Errorf("unknown path: %d", code)
	}
	if code, body = get("/healthz"); code != 200 || body != "ok\n" {
		t.Errorf("/healthz: %d %q", code, body)
	}
	if code, body = get("/static/app.js"); code != 200 || !strings.Contains(body, "WebSocket") {
		t.Errorf("/static/app.js: %d", code)
	}
	// Directories list nothing: 404, not a listing of their files.
	for _, dir := range []string{"/static/", "/static/webgpu/", "/static/webgpu", "/static/editor/"} {
		if code, body = get(dir); code != http.StatusNotFound || strings.Contains(body, "app.js") || strings.Contains(body, "<a href") {
			t.Errorf("%s: got %d, want 404 without a listing", dir, code)
		}
	}
}

func TestLessonsDirReloadsAndShowsErrors(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "10-mine.md")
	write := func(s string) {
		t.Helper()
		if err := os.WriteFile(file, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		// Make sure the modification time moves even on coarse clocks.
		future := time.Now().Add(time.Duration(len(s)) * time.Second)
		_ = os.Chtimes(file, future, future)
	}
	write("---\ntitle: Mine\nsummary: s\norder: 1\n---\n# First version\n")
	_, base := startServer(t, Config{LessonsDir: dir})
	get := func() (int, string) {
		resp, err := http.Get(base + "/lessons/10-mine")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if _, body := get(); !strings.Contains(body, "First version") {
		t.Fatalf("first version not served")
	}
	write("---\ntitle: Mine\nsummary: s\norder: 1\n---\n# Second version, longer\n\n```matmul\nkernels: [naive]\nsizes: [-4]\n```\n")
	code, body := get()
	if code != 500 || !strings.Contains(body, "10-mine.md:10:") || !strings.Contains(body, "at least 1") {
		t.Errorf("broken lesson page: %d, want its file:line error (10-mine.md:10)\n%s", code, body)
	}
	write("---\ntitle: Mine\nsummary: s\norder: 1\n---\n# Third version, fixed again and longer\n")
	if _, body := get(); !strings.Contains(body, "Third version") {
		t.Errorf("fixed lesson not re-read")
	}
}

func TestBrokenLessonStopsStartup(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.md"), []byte("---\ntitle: A\nsummary: s\norder: 1\n---\n\n```matmul\nkernels: [warp]\nsizes: [8]\n```\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := New(Config{LessonsDir: dir})
	if err == nil || !strings.Contains(err.Error(), "a.md:8:") || !strings.Contains(err.Error(), `unknown kernel "warp"`) {
		t.Errorf("got %v, want an error at a.md:8 naming the kernel", err)
	}
}

func TestMessageJSON(t *testing.T) {
	b, err := json.Marshal(Message{Type: TypeQueued, ID: "x", Position: 2})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(b), `{"type":"queued","id":"x","position":2}`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	var m Message
	if err := json.Unmarshal([]byte(`{"type":"run","id":"r","lesson":"l","cell":"c","source":"s"}`), &m); err != nil {
		t.Fatal(err)
	}
	if m.RunRequest == nil || m.Lesson != "l" || m.Cell != "c" || m.Source != "s" {
		t.Errorf("got %+v", m)
	}
}

func TestDevicesReportAndHeader(t *testing.T) {
	report := nvidia.Report{Driver: "13.0", Devices: []nvidia.Device{{Name: "Test GPU", ComputeCapability: 90, SMs: 132, MemoryBytes: 80 << 30, ClockKHz: 1980000}},
		Libraries: []nvidia.Loaded{{Name: "libcuda.so.1", Path: "/usr/lib/x86_64-linux-gnu/libcuda.so.1", Via: "loader path"}}}
	_, base := startServer(t, Config{Config: machine.Config{Devices: func(context.Context) nvidia.Report { return report }}})
	var got nvidia.Report
	err := getJSON(t, base+"/api/devices", &got)
	if err != nil || len(got.Devices) != 1 || got.Devices[0].SMs != 132 || got.Libraries[0].Path != report.Libraries[0].Path {
		t.Errorf("/api/devices: %+v, %v", got, err)
	}
	if !strings.Contains(getBody(t, base+"/"), "GPU: Test GPU (sm_90, 132 SMs, 80 GiB, 1980 MHz), driver CUDA 13.0") {
		t.Errorf("header lacks the GPU summary")
	}
	// The header's link opens a readable page (the JSON stays for scripts).
	page := getBody(t, base+"/devices")
	for _, want := range []string{"<td>Test GPU</td>", "9.0 (sm_90)", "80.0 GiB", "1980 MHz", "CUDA 13.0", "<code>/usr/lib/x86_64-linux-gnu/libcuda.so.1</code>", `href="/api/devices"`} {
		if !strings.Contains(page, want) {
			t.Errorf("/devices lacks %q", want)
		}
	}

	_, base = startServer(t, Config{Config: machine.Config{Devices: func(context.Context) nvidia.Report {
		return nvidia.Report{Unavailable: "no CUDA device: libcuda.so.1 not found"}
	}}})
	if body := getBody(t, base+"/lessons/why-gpus"); !strings.Contains(body, `GPU: no NVIDIA GPU on this server (<a href="/devices" title="no CUDA device: libcuda.so.1 not found">details</a>)`) {
		t.Errorf("lesson header lacks the one friendly line with the reason behind its link")
	}
	if page := getBody(t, base+"/devices"); !strings.Contains(page, "no NVIDIA GPU on this server.</strong> no CUDA device: libcuda.so.1 not found") {
		t.Errorf("/devices without a GPU: %s", page)
	}
}

// Without a GPU a cell naming GPU kernels still runs its CPU kernels, runs the project's own CUDA
// kernels in the virtual GPU, and one friendly error-level note names the closed-source GPU kernels
// that did not run and why (the loader's details are behind the header's link).
func TestGPUKernelsWithoutGPUGetNotes(t *testing.T) {
	_, base := startServer(t, Config{Config: machine.Config{Devices: func(context.Context) nvidia.Report {
		return nvidia.Report{Unavailable: "no CUDA device: libcuda.so.1 not found"}
	}}})
	ws := dial(t, base)
	if err := ws.WriteJSON(runMsg("g", "kernels: [gonum, cublas, cuda-regblock]\nsizes: [16]\nrepeats: 1")); err != nil {
		t.Fatal(err)
	}
	msgs := collect(t, ws, "g", 30*time.Second)
	notes := notesOf(msgs)
	want := []string{"error: cublas: not run, no NVIDIA GPU on this server (the page header links the details)"}
	if rows := rowsOf(t, msgs, "results"); fmt.Sprint(notes) != fmt.Sprint(want) || len(rows) != 1 || msgs[len(msgs)-1].Type != TypeDone {
		t.Errorf("got notes %q, %d results, last %q; want %q, 1 result (gonum), done", notes, len(rows), msgs[len(msgs)-1].Type, want)
	}
	// The kernel whose PTX the project has runs in the virtual GPU instead, labelled emulated.
	emulated := rowsOf(t, msgs, "emulated")
	if len(emulated) != 1 || emulated[0]["kernel"] != "cuda-regblock" || emulated[0]["check"] != "ok" {
		t.Errorf("emulated rows %v, want cuda-regblock, ok", emulated)
	}
	for _, m := range msgs {
		if m.Type == TypeTable && m.Table.ID == "emulated" && !strings.Contains(m.Table.Caption, "Emulated in the virtual GPU") {
			t.Errorf("emulated table caption %q", m.Table.Caption)
		}
	}
}

// The results CSVs cannot smuggle spreadsheet formulas: text that starts with = + - @ (or a tab or
// CR) gets a leading quote, while numbers, negative ones included, stay numbers.
func TestResultsCSVNeutralisesFormulas(t *testing.T) {
	st, err := store.Open("")
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	who, err := st.AddStudent(ctx, "=cmd|'/c calc'!A1", "s", false)
	if err != nil {
		t.Fatal(err)
	}
	r, err := st.AddRun(ctx, store.Run{Student: who.ID, Lesson: "p", Cell: "p-0", Source: "x", Machine: "@machine"})
	if err != nil {
		t.Fatal(err)
	}
	for i, m := range []string{
		`{"type":"table","table":{"id":"t","caption":"+caption","columns":[{"label":"-label"},{"label":"n","unit":"@unit"},{"label":"tab"},{"label":"plain"}]}}`,
		`{"type":"row","row":{"table":"t","values":["=1+1",-1.5,"\tx","a-b"]}}`,
	} {
		typ := TypeTable
		if i == 1 {
			typ = TypeRow
		}
		if err := st.AddMessage(ctx, r.ID, int64(i+1), typ, m, false); err != nil {
			t.Fatal(err)
		}
	}
	s := &Server{store: st}
	var buf bytes.Buffer
	cw := csv.NewWriter(&buf)
	if err := s.writeResultsCSV(httptest.NewRequest(http.MethodGet, "/", nil), cw, map[int64]string{who.ID: who.Name}, []store.Run{r}); err != nil {
		t.Fatal(err)
	}
	cw.Flush()
	recs, err := csv.NewReader(&buf).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, rec := range recs {
		got = append(got, rec[0]+" "+rec[8]+" "+rec[10]+" "+rec[12]+" "+rec[13]+" "+rec[14])
	}
	want := []string{
		"'=cmd|'/c calc'!A1 '@machine '+caption '-label  '=1+1",
		"'=cmd|'/c calc'!A1 '@machine '+caption n '@unit -1.5",
		"'=cmd|'/c calc'!A1 '@machine '+caption tab  '\tx",
		"'=cmd|'/c calc'!A1 '@machine '+caption plain  a-b",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("CSV fields:\n%q\nwant\n%q", got, want)
	}
}

// docs/protocol.md documents every /api route the server registers ("`METHOD /api/…").
func TestProtocolDocumentsEveryAPIRoute(t *testing.T) {
	src, err := os.ReadFile("server.go")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join("..", "docs", "protocol.md"))
	if err != nil {
		t.Fatal(err)
	}
	routes := regexp.MustCompile(`mux\.Handle(?:Func)?\("([A-Z]+ /api/[^"]*)"`).FindAllStringSubmatch(string(src), -1)
	if len(routes) < 5 {
		t.Fatalf("found %d /api routes in server.go, want the registered ones", len(routes))
	}
	for _, r := range routes {
		if !strings.Contains(string(doc), "`"+r[1]) {
			t.Errorf("docs/protocol.md lacks %s", r[1])
		}
	}
}
