package cluster

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/gpuplayground/playground/gpu/nvidia"
	"github.com/gpuplayground/playground/machine"
	"github.com/gpuplayground/playground/server"
)

// signIn joins the class at base as name and opens that student's websocket.
func signIn(t *testing.T, base, name string) *websocket.Conn {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	hc := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := hc.PostForm("http://"+base+"/join", url.Values{"token": {"class"}, "name": {name}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("join %s: status %d", name, resp.StatusCode)
	}
	h := http.Header{"Origin": {"http://" + base}}
	for _, c := range jar.Cookies(&url.URL{Scheme: "http", Host: base}) {
		h.Add("Cookie", c.String())
	}
	ws, _, err := websocket.DefaultDialer.Dial("ws://"+base+"/ws", h)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	return ws
}

// The fair queue holds with runs spread over workers: with two worker processes busy with A's two
// long runs, A's next three runs and then B's two wait; once one worker is freed they start one at
// a time there in fair rounds (B's first before A's third, B's second before A's fourth), not in
// the order they were sent, and each ends with exactly one terminal message.
func TestFairQueueOverWorkers(t *testing.T) {
	t.Parallel()
	dir := napLessons(t, "ms: 100\n")
	c := startCluster(t, Config{})
	startWorker(t, c, "w1", false)
	startWorker(t, c, "w2", false)
	base := serveLessons(t, server.Config{Config: machine.Config{Kinds: testKinds, Devices: func(context.Context) nvidia.Report { return fakeReport(false) }}, LessonsDir: dir, Executor: c, Token: "class", InstructorToken: "teach", Out: io.Discard})
	wa, wb := signIn(t, base, "A"), signIn(t, base, "B")

	var mu sync.Mutex
	var started []string
	queued := map[string]bool{}
	terminal := map[string][]string{}
	var readers sync.WaitGroup
	read := func(ws *websocket.Conn, want int) {
		defer readers.Done()
		_ = ws.SetReadDeadline(time.Now().Add(2 * time.Minute))
		for n := 0; n < want; {
			var m server.Message
			if err := ws.ReadJSON(&m); err != nil {
				t.Errorf("after %d terminal messages: %v", n, err)
				return
			}
			mu.Lock()
			switch {
			case m.Type == server.TypeStarted:
				started = append(started, m.ID)
			case m.Type == server.TypeQueued:
				queued[m.ID] = true
			case server.Terminal(m.Type):
				terminal[m.ID] = append(terminal[m.ID], m.Type)
				n++
			}
			mu.Unlock()
		}
	}
	send := func(ws *websocket.Conn, id, src string) {
		t.Helper()
		if err := ws.WriteJSON(server.Message{Type: server.TypeRun, ID: id, RunRequest: &server.RunRequest{Lesson: "01-naps", Cell: "01-naps-0", Source: src}}); err != nil {
			t.Fatal(err)
		}
	}
	wait := func(what string, done func() bool) {
		t.Helper()
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
			mu.Lock()
			ok := done()
			mu.Unlock()
			if ok {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("no %s after a minute", what)
			}
		}
	}
	waitStarted := func(n int) {
		t.Helper()
		wait(fmt.Sprint(n, " runs started"), func() bool { return len(started) >= n })
	}
	waitQueued := func(ids ...string) {
		t.Helper()
		wait(fmt.Sprint(ids, " queued"), func() bool {
			for _, id := range ids {
				if !queued[id] {
					return false
				}
			}
			return true
		})
	}
	readers.Add(2)
	go read(wa, 5)
	go read(wb, 2)
	send(wa, "block1", "ms: 60000\n")
	send(wa, "block2", "ms: 60001\n")
	waitStarted(2) // both workers busy
	for _, id := range []string{"a3", "a4", "a5"} {
		send(wa, id, "ms: 100\n")
	}
	waitQueued("a3", "a4", "a5") // A's runs wait before B's are sent
	send(wb, "b1", "ms: 100\n")
	send(wb, "b2", "ms: 100\n")
	waitQueued("b1", "b2")
	if err := wa.WriteJSON(server.Message{Type: server.TypeCancel, ID: "block1"}); err != nil {
		t.Fatal(err)
	}
	waitStarted(7)
	if err := wa.WriteJSON(server.Message{Type: server.TypeCancel, ID: "block2"}); err != nil {
		t.Fatal(err)
	}
	readers.Wait()
	mu.Lock()
	defer mu.Unlock()
	want := []string{"b1", "a3", "b2", "a4", "a5"}
	if got := started[2:]; !slices.Equal(got, want) {
		t.Errorf("runs started in the order %v after the two blocking ones, want %v (fair rounds)", got, want)
	}
	for id, got := range terminal {
		want := server.TypeDone
		if id == "block1" || id == "block2" {
			want = server.TypeCancelled
		}
		if len(got) != 1 || got[0] != want {
			t.Errorf("run %s ended with %v, want one %s", id, got, want)
		}
	}
	if len(terminal) != 7 {
		t.Errorf("%d runs ended, want 7: %v", len(terminal), terminal)
	}
}
