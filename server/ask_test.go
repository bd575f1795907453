package server

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/gpuplayground/playground/store"
)

// nextOf reads until a message of run id (or an error with no id) arrives.
func nextOf(t *testing.T, ws *websocket.Conn, id string) Message {
	t.Helper()
	_ = ws.SetReadDeadline(time.Now().Add(30 * time.Second))
	for {
		var m Message
		if err := ws.ReadJSON(&m); err != nil {
			t.Fatalf("waiting for a message of run %q: %v", id, err)
		}
		if m.ID == id || (m.Type == TypeError && m.ID == "") {
			return m
		}
	}
}

// nextTask reads run id's messages up to its task.
func nextTask(t *testing.T, ws *websocket.Conn, id string) Message {
	t.Helper()
	for {
		m := nextOf(t, ws, id)
		if m.Type == TypeTask {
			return m
		}
		if Terminal(m.Type) || m.ID == "" {
			t.Fatalf("run %q: got %+v, want a task", id, m)
		}
	}
}

func resultMsg(id, result string) Message {
	return Message{Type: TypeResult, ID: id, Result: json.RawMessage(result)}
}

// A kind asks the page: the server sends the task with the run's id, routes the page's result back to
// the run, one task at a time, and the run ends as usual.
func TestAskRoundTrip(t *testing.T) {
	_, base := startServer(t, probeConfig(t))
	ws := dial(t, base)
	if err := ws.WriteJSON(probeMsg("q", "ask: 2")); err != nil {
		t.Fatal(err)
	}
	var msgs []Message
	tasks := 0
	for {
		m := nextOf(t, ws, "q")
		msgs = append(msgs, m)
		if m.Type == TypeTask {
			if got, want := string(m.Task), fmt.Sprintf(`{"question":%d}`, tasks); got != want {
				t.Errorf("task %d: got %s, want %s", tasks, got, want)
			}
			if err := ws.WriteJSON(resultMsg("q", fmt.Sprintf(`{"answer":%d}`, 40+tasks))); err != nil {
				t.Fatal(err)
			}
			tasks++
		}
		if Terminal(m.Type) {
			break
		}
	}
	if got := strings.Join(notesOf(msgs), "|"); got != `info: answer: {"answer":40}|info: answer: {"answer":41}` || tasks != 2 {
		t.Errorf("%d tasks, notes %q", tasks, got)
	}
	if last := msgs[len(msgs)-1]; last.Type != TypeDone {
		t.Errorf("ended with %+v", last)
	}
}

// A page that answers {"page_error": …} ends the run with that error.
func TestAskPageError(t *testing.T) {
	_, base := startServer(t, probeConfig(t))
	ws := dial(t, base)
	if err := ws.WriteJSON(probeMsg("q", "ask: 1")); err != nil {
		t.Fatal(err)
	}
	nextTask(t, ws, "q")
	if err := ws.WriteJSON(resultMsg("q", `{"page_error":"no WebGPU module"}`)); err != nil {
		t.Fatal(err)
	}
	msgs := collect(t, ws, "q", 30*time.Second)
	if last := msgs[len(msgs)-1]; last.Type != TypeError || !strings.Contains(last.Message, "no WebGPU module") {
		t.Errorf("ended with %+v", last)
	}
}

// Results that answer nothing are refused with an error that names no run (so no page ends a run by
// it), and the run that waits goes on waiting for its own page's proper answer: a result for another
// connection's run, for an unknown id, for a run with no task outstanding, an oversized one and an
// empty one. A second result to one task is refused too.
func TestAbuseResults(t *testing.T) {
	_, base := startServer(t, probeConfig(t))
	owner, other := dial(t, base), dial(t, base)
	if err := owner.WriteJSON(probeMsg("mine", "ask: 1")); err != nil {
		t.Fatal(err)
	}
	nextTask(t, owner, "mine")
	if err := other.WriteJSON(probeMsg("busy", "wait: true")); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		m    Message
		want string
	}{
		{"someone else's run", resultMsg("mine", `{"x":1}`), `no run "mine" of this connection`},
		{"unknown id", resultMsg("nobody", `{"x":1}`), `no run "nobody"`},
		{"no id", resultMsg("", `{"x":1}`), "needs the id"},
		{"empty", Message{Type: TypeResult, ID: "busy"}, "is empty"},
		{"null", resultMsg("busy", "null"), "is empty"},
		{"oversized", resultMsg("busy", `"`+strings.Repeat("x", maxResult)+`"`), "over the"},
		{"no task outstanding", resultMsg("busy", `{"x":1}`), `run "busy" has no task waiting`},
	} {
		if err := other.WriteJSON(tt.m); err != nil {
			t.Fatal(err)
		}
		if m := nextOf(t, other, ""); m.Type != TypeError || m.ID != "" || !strings.Contains(m.Message, tt.want) {
			t.Errorf("%s: got %+v, want an error with no id saying %q", tt.name, m, tt.want)
		}
	}
	// The owner's run still waits for its own answer, and takes it.
	if err := owner.WriteJSON(resultMsg("mine", `{"ok":true}`)); err != nil {
		t.Fatal(err)
	}
	if err := owner.WriteJSON(resultMsg("mine", `{"again":true}`)); err != nil {
		t.Fatal(err)
	}
	var notes []string
	var errs []string
	_ = owner.SetReadDeadline(time.Now().Add(30 * time.Second))
	for done := false; !done || len(errs) == 0; {
		var m Message
		if err := owner.ReadJSON(&m); err != nil {
			t.Fatalf("owner: %v (notes %q, errors %q)", err, notes, errs)
		}
		switch {
		case m.Type == TypeNote:
			notes = append(notes, m.Note.Message)
		case m.Type == TypeError && m.ID == "":
			errs = append(errs, m.Message)
		case m.ID == "mine" && Terminal(m.Type):
			if m.Type != TypeDone {
				t.Errorf("the owner's run ended with %+v", m)
			}
			done = true
		}
	}
	if len(notes) != 1 || notes[0] != `answer: {"ok":true}` {
		t.Errorf("owner's notes %q", notes)
	}
	if len(errs) != 1 || !strings.Contains(errs[0], `no run "mine"`) && !strings.Contains(errs[0], "no task waiting") {
		t.Errorf("a second result to one task: errors %q", errs)
	}
	if err := other.WriteJSON(Message{Type: TypeCancel, ID: "busy"}); err != nil {
		t.Fatal(err)
	}
}

// A run waiting for a page that went away never holds the queue: closing the connection (once no
// page shows the run for PageGone), Stop and the time limit each end the wait, and the next run
// starts.
func TestAskEndsWithThePage(t *testing.T) {
	t.Parallel()
	cfg := probeConfig(t)
	cfg.Limits.RunTimeout = 2 * time.Second
	cfg.PageGone = time.Millisecond // else the time limit, not the closed page, ends the first wait
	_, base := startServer(t, cfg)
	gone := dial(t, base)
	if err := gone.WriteJSON(probeMsg("q", "ask: 1")); err != nil {
		t.Fatal(err)
	}
	nextTask(t, gone, "q")
	next := dial(t, base)
	if err := next.WriteJSON(probeMsg("after", "ask: 1")); err != nil {
		t.Fatal(err)
	}
	if m := nextOf(t, next, "after"); m.Type != TypeQueued {
		t.Fatalf("the second run: %+v, want queued behind the first", m)
	}
	_ = gone.Close() // the page goes away mid-task
	nextTask(t, next, "after")
	// Stop ends the wait.
	if err := next.WriteJSON(Message{Type: TypeCancel, ID: "after"}); err != nil {
		t.Fatal(err)
	}
	msgs := collect(t, next, "after", 30*time.Second)
	if last := msgs[len(msgs)-1]; last.Type != TypeCancelled {
		t.Errorf("after Stop: %+v", last)
	}
	// The time limit ends the wait.
	if err := next.WriteJSON(probeMsg("slow", "ask: 1")); err != nil {
		t.Fatal(err)
	}
	nextTask(t, next, "slow")
	msgs = collect(t, next, "slow", 30*time.Second)
	if last := msgs[len(msgs)-1]; last.Type != TypeError || !strings.Contains(last.Message, "time limit") {
		t.Errorf("a page that never answers: %+v, want the time limit's error", last)
	}
}

// A browser task whose page closes (and no page attaches within Config.PageGone) ends the run with
// a page error instead of holding the machine until the grace period or the time limit.
func TestAskPageGone(t *testing.T) {
	cfg := classConfig(t)
	cfg.PageGone = time.Millisecond // Grace stays 60 s: only the page-gone wait can end the run
	s, base := startServer(t, cfg)
	ada := join(t, base, "class-token", "Ada")
	ws := ada.dial(t)
	if err := ws.WriteJSON(probeMsg("q", "ask: 1")); err != nil {
		t.Fatal(err)
	}
	nextTask(t, ws, "q")
	ws.Close()
	var run store.Run
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		runs, err := s.store.ClassRunsPage(context.Background(), "p", "p-0", 0, 10)
		if err != nil || len(runs) != 1 {
			t.Fatalf("runs %+v, %v", runs, err)
		}
		if run = runs[0]; Terminal(run.Status) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the run is still %s after its page closed", run.Status)
		}
	}
	ws2 := ada.dial(t)
	if err := ws2.WriteJSON(Message{Type: TypeReplay, ID: "r", Run: run.ID}); err != nil {
		t.Fatal(err)
	}
	msgs := collect(t, ws2, "r", 30*time.Second)
	if last := msgs[len(msgs)-1]; last.Type != TypeError || !strings.Contains(last.Message, "the page that was running this closed") {
		t.Errorf("the run ended %+v, want the page-gone error", last)
	}
}
