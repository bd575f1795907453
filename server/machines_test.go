package server

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/gpuplayground/playground/cells"
	"github.com/gpuplayground/playground/store"
)

// classExecutor runs everything in this process, as if on machines of the classes it lists, and
// keeps the class of machine each run asked for (cells.Needs.Machine), in order.
type classExecutor struct {
	*InProcess
	machines []MachineInfo
	mu       sync.Mutex
	asked    []string
}

func (c *classExecutor) TryAcquire(r cells.Run) (Slot, bool, bool, error) {
	c.mu.Lock()
	c.asked = append(c.asked, cells.NeedsOf(r).Machine)
	c.mu.Unlock()
	return c.InProcess.TryAcquire(r)
}

func (c *classExecutor) ListMachines() []MachineInfo { return c.machines }

// last is the class the latest run asked for.
func (c *classExecutor) last() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.asked) == 0 {
		return "(none asked)"
	}
	return c.asked[len(c.asked)-1]
}

func newClassExecutor() *classExecutor {
	return &classExecutor{InProcess: NewInProcess(1), machines: []MachineInfo{
		{Name: "here", Summary: "here (2 cores; no GPU)", Here: true},
		{Name: "box-b", Class: "lab-b", Summary: "box-b (class lab-b; 16 cores; GPU NVIDIA H100)", GPU: true},
	}}
}

// pageMsg is probeMsg with the class of machine the page picked.
func pageMsg(id, source, class string) Message {
	m := probeMsg(id, source)
	m.Machine = class
	return m
}

// The class of machine picked for the page goes with each run to the executor, unless the cell's
// own machine: key names one; a class that cannot be one is refused before the run is queued; GET
// /api/machines lists the executor's machines for the menu.
func TestPageMachine(t *testing.T) {
	cfg := probeConfig(t)
	cfg.Devices = noDevice
	ex := newClassExecutor()
	cfg.Executor = ex
	_, base := startServer(t, cfg)
	ws := dial(t, base)
	for _, tt := range []struct{ id, src, page, want string }{
		{"page", "rows: 1", "lab-b", "lab-b"},
		{"cell-wins", "rows: 1\nmachine: lab-a", "lab-b", "lab-a"},
		{"any", "rows: 1", "", ""},
	} {
		if err := ws.WriteJSON(pageMsg(tt.id, tt.src, tt.page)); err != nil {
			t.Fatal(err)
		}
		if msgs := collect(t, ws, tt.id, 30*time.Second); msgs[len(msgs)-1].Type != TypeDone {
			t.Fatalf("run %s: %+v", tt.id, msgs)
		}
		if got := ex.last(); got != tt.want {
			t.Errorf("run %s (page %q, cell %q) asked for class %q, want %q", tt.id, tt.page, tt.src, got, tt.want)
		}
	}
	if err := ws.WriteJSON(pageMsg("bad", "rows: 1", "Lab B")); err != nil {
		t.Fatal(err)
	}
	if msgs := collect(t, ws, "bad", 30*time.Second); len(msgs) != 1 || msgs[0].Type != TypeError || !strings.Contains(msgs[0].Message, `the page's machine class "Lab B"`) {
		t.Errorf("a page class that cannot be one: %+v, want one error naming it", msgs)
	}
	var got struct{ Machines []MachineInfo }
	if err := json.Unmarshal([]byte(getBody(t, base+"/api/machines")), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Machines) != 2 || !reflect.DeepEqual(got.Machines[1], ex.machines[1]) || !got.Machines[0].Here {
		t.Errorf("/api/machines: %+v, want the executor's %+v", got.Machines, ex.machines)
	}
	if page := getBody(t, base+"/lessons/p"); !strings.Contains(page, `id="machine-pick" hidden`) {
		t.Error("the lesson page has no machine menu (hidden until the page finds classes)")
	}
}

// On a server whose executor lists no machines, GET /api/machines is this server alone.
func TestMachinesOfOneServer(t *testing.T) {
	cfg := probeConfig(t)
	cfg.Devices = noDevice
	s, base := startServer(t, cfg)
	var got struct{ Machines []MachineInfo }
	if err := json.Unmarshal([]byte(getBody(t, base+"/api/machines")), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Machines) != 1 || !got.Machines[0].Here || got.Machines[0].Class != "" || got.Machines[0].GPU || got.Machines[0].Summary != s.where() {
		t.Errorf("/api/machines: %+v, want this server alone, without a GPU", got.Machines)
	}
}

// In a class, shared results come only from a run that asked for the same class of machine: a page
// that picked a class does not get the results measured on any machine, and vice versa; for a cell
// whose own machine: key names the class, the page's pick does not matter.
func TestSharedResultsKeepTheirClass(t *testing.T) {
	cfg := classConfig(t)
	cfg.Executor = newClassExecutor()
	if err := os.WriteFile(filepath.Join(cfg.LessonsDir, "k.md"), []byte("---\ntitle: K\nsummary: s\norder: 2\n---\n\n```probe\nrows: 1\nmachine: lab-a\n```\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s, base := startServer(t, cfg)
	ws := map[string]*websocket.Conn{}
	for _, name := range []string{"Ada", "Bob", "Cy", "Di", "Eve", "Fay"} {
		ws[name] = join(t, base, "class-token", name).dial(t)
	}
	for _, tt := range []struct{ who, lesson, page, want string }{
		{"Ada", "p", "", TypeStarted},      // measured on any machine
		{"Bob", "p", "lab-b", TypeStarted}, // not Ada's: she asked for any machine
		{"Cy", "p", "lab-b", TypeShared},   // Bob's
		{"Di", "p", "", TypeShared},        // Ada's
		{"Eve", "k", "lab-b", TypeStarted}, // the cell's own class: lab-a
		{"Fay", "k", "", TypeShared},       // Eve's, also on lab-a
	} {
		c := ws[tt.who]
		l := s.lesson(tt.lesson)
		cell := l.Cells[0]
		m := Message{Type: TypeRun, ID: tt.who, RunRequest: &RunRequest{Lesson: tt.lesson, Cell: cell.ID, Source: cell.Source, Machine: tt.page}}
		if err := c.WriteJSON(m); err != nil {
			t.Fatal(err)
		}
		msgs := collect(t, c, tt.who, 30*time.Second)
		if count(msgs, TypeStarted)+count(msgs, TypeShared) != 1 || count(msgs, tt.want) != 1 || msgs[len(msgs)-1].Type != TypeDone {
			t.Errorf("%s's run with the page's class %q: %+v, want %s", tt.who, tt.page, msgs, tt.want)
		}
	}
}

// A run still waiting when the server stops is queued again by the next server with the class of
// machine its page picked.
func TestRequeueKeepsPageMachine(t *testing.T) {
	cfg := probeConfig(t)
	cfg.DataDir, cfg.Devices = t.TempDir(), noDevice
	base, stop, done := serveUntil(t, cfg)
	ws := dial(t, base)
	if err := ws.WriteJSON(probeMsg("running", "wait: true")); err != nil {
		t.Fatal(err)
	}
	firstOf(t, ws, "running", TypeStarted)
	if err := ws.WriteJSON(pageMsg("waiting", "rows: 1", "lab-b")); err != nil {
		t.Fatal(err)
	}
	firstOf(t, ws, "waiting", TypeQueued)
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(cfg.DataDir)
	if err != nil {
		t.Fatal(err)
	}
	queued, err := st.Queued(context.Background())
	st.Close()
	if err != nil || len(queued) != 1 || queued[0].Class != "lab-b" {
		t.Fatalf("kept queued: %+v, %v; want the waiting run with class lab-b", queued, err)
	}
	ex := newClassExecutor()
	cfg.Executor = ex
	_, base2 := startServer(t, cfg)
	checkRequeued(t, dial(t, base2), queued[0].ID, "restarted while this run waited")
	if got := ex.last(); got != "lab-b" {
		t.Errorf("the run queued again asked for class %q, want lab-b", got)
	}
}

// GET /api/machines gives an instructor each machine's runs (student, lesson, cell), and a learner
// how busy each machine is but never whose runs they are.
func TestMachinesRunsOnlyForTheInstructor(t *testing.T) {
	cfg := classConfig(t)
	ex := newClassExecutor()
	ex.machines[1].Busy = 1
	ex.machines[1].Runs = []MachineRun{{Run: 7, Student: "Ada", Lesson: "p", Cell: "p-0"}}
	cfg.Executor = ex
	_, base := startServer(t, cfg)
	for _, tt := range []struct {
		who, token string
		runs       int
	}{{"Bob", "class-token", 0}, {"Teach", "teach", 1}} {
		code, body := join(t, base, tt.token, tt.who).get(t, "/api/machines")
		var got struct{ Machines []MachineInfo }
		if err := json.Unmarshal([]byte(body), &got); code != http.StatusOK || err != nil {
			t.Fatalf("%s: /api/machines %d %v", tt.who, code, err)
		}
		if m := got.Machines[1]; m.Busy != 1 || len(m.Runs) != tt.runs || strings.Contains(body, "Ada") != (tt.runs > 0) {
			t.Errorf("%s sees %s", tt.who, body)
		}
	}
}
