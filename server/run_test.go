package server

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpuplayground/playground/calibrate"
	"github.com/gpuplayground/playground/estimate"
	"github.com/gpuplayground/playground/store"
)

// Run is what cmd/playground calls: it prints the URL, serves, and returns nil on shutdown.
func TestRunPrintsURLAndShutsDown(t *testing.T) {
	pr, pw := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Run(ctx, Config{Addr: "127.0.0.1:0", Out: pw}) }()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	go io.Copy(io.Discard, pr)
	url, ok := strings.CutPrefix(strings.TrimSpace(line), "GPU Playground: ")
	if !ok || !strings.HasPrefix(url, "http://127.0.0.1:") {
		t.Fatalf("got first line %q, want the URL", line)
	}
	resp, err := http.Get(url + "healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("/healthz: %d", resp.StatusCode)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run returned %v, want nil", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
	pw.Close()
}

func TestRunFailsOnBusyAddress(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if err := Run(context.Background(), Config{Addr: ln.Addr().String(), Out: io.Discard}); err == nil {
		t.Error("Run on a busy address returned nil")
	}
}

func TestLoopback(t *testing.T) {
	for _, tt := range []struct {
		addr string
		want bool
	}{{"127.0.0.1:8080", true}, {"[::1]:80", true}, {"0.0.0.0:8080", false}, {"192.0.2.7:80", false}} {
		a, err := net.ResolveTCPAddr("tcp", tt.addr)
		if err != nil {
			t.Fatal(err)
		}
		if got := loopback(a); got != tt.want {
			t.Errorf("loopback(%s) = %v, want %v", tt.addr, got, tt.want)
		}
	}
}

// With Calibrate, the run queue's first job installs this machine's rates: here the ones kept in the
// user cache (a fresh measurement takes seconds and is calibrate's own test).
func TestCalibrationIsTheFirstJob(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	path, err := calibrate.CachePath()
	if err != nil {
		t.Fatal(err)
	}
	kept := *estimate.Defaults()
	kept.Source, kept.Measured = "calibrated", time.Date(2026, 11, 22, 3, 0, 0, 0, time.UTC)
	if err := calibrate.Save(path, &kept); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	var mu sync.Mutex
	cfg := probeConfig(t)
	cfg.Calibrate, cfg.Out = true, writerFunc(func(b []byte) (int, error) { mu.Lock(); defer mu.Unlock(); return out.Write(b) })
	srv, base := startServer(t, cfg)
	ws := dial(t, base)
	if err := ws.WriteJSON(probeMsg("after", "rows: 1")); err != nil {
		t.Fatal(err)
	}
	collect(t, ws, "after", 30*time.Second) // runs only after the calibration job
	mu.Lock()
	got := out.String()
	mu.Unlock()
	if !strings.Contains(got, "run estimates use this machine's rates measured 2026-11-22T03:00:00Z") || srv.rates.Get().Source != "calibrated" {
		t.Errorf("output %q, rates %q; want the kept rates installed", got, srv.rates.Get().Source)
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }

// A replay never attaches a connection that closed meanwhile (here: dropped for not draining its
// buffer while the replay was sent): the run would be shown on it, and kept from the page-gone
// check, for good.
func TestAttachSkipsClosedConn(t *testing.T) {
	t.Parallel()
	st, err := store.Open("")
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	who, err := st.AddStudent(ctx, "Ada", "s", false)
	if err != nil {
		t.Fatal(err)
	}
	r, err := st.AddRun(ctx, store.Run{Student: who.ID, Lesson: "p", Cell: "p-0", Source: "x", Machine: "m"})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.AddMessage(ctx, r.ID, 1, TypeStarted, `{"type":"started"}`, false); err != nil {
		t.Fatal(err)
	}
	c, _ := testConn()
	c.out = make(chan Message, 2)
	c.out <- Message{Type: TypeNote} // half full, and nobody drains it: the replay's send drops c
	j := &job{s: &Server{store: st}, runID: r.ID, views: map[*conn]string{}}
	if attached, err := j.attach(c, "x"); !attached || err == nil {
		t.Errorf("attach: %v, %v; want true and the connection's error", attached, err)
	}
	if c.ctx.Err() == nil || len(j.views) != 0 {
		t.Errorf("connection error %v, views %v; want the closed connection not attached", c.ctx.Err(), j.views)
	}
}

// A replay to a slow client does not hold the run's lock while it sends (the queue emits positions
// under its own lock): a live message emitted meanwhile returns at once, and reaches the client
// after the replayed ones.
func TestAttachSendsOutsideTheLock(t *testing.T) {
	st, err := store.Open("")
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	who, err := st.AddStudent(ctx, "Ada", "s", false)
	if err != nil {
		t.Fatal(err)
	}
	r, err := st.AddRun(ctx, store.Run{Student: who.ID, Lesson: "p", Cell: "p-0", Source: "x", Machine: "m"})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.AddMessage(ctx, r.ID, 1, TypeStarted, `{"type":"started"}`, false); err != nil {
		t.Fatal(err)
	}
	c, _ := testConn()
	c.out = make(chan Message, 4)
	c.out <- Message{Type: TypeNote}
	c.out <- Message{Type: TypeNote} // half full: the replay waits for the client to drain it
	j := &job{s: &Server{store: st}, runID: r.ID, views: map[*conn]string{}}
	attached := make(chan error, 1)
	go func() { _, err := j.attach(c, "x"); attached <- err }()
	for { // the view is added before the replay is sent
		j.mu.Lock()
		_, ok := j.views[c]
		j.mu.Unlock()
		if ok {
			break
		}
		time.Sleep(time.Millisecond)
	}
	j.emit(nil, Message{Type: TypeQueued, Position: 1}) // as the queue does, under its lock
	if err := c.ctx.Err(); err != nil {
		t.Fatalf("the emit waited for the replay until the client was dropped (%v)", err)
	}
	<-c.out
	<-c.out // the client drains
	if err := <-attached; err != nil {
		t.Fatal(err)
	}
	var got []string
	for len(c.out) > 0 {
		got = append(got, (<-c.out).Type)
	}
	if want := []string{TypeStarted, TypeQueued}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("sent %v, want %v (the replay, then the live message)", got, want)
	}
}
