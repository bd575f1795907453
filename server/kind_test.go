package server

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuplayground/playground/cells"
	"github.com/gpuplayground/playground/cells/builtin"
	"github.com/gpuplayground/playground/machine"
)

// probeKind is a test-only cell kind, made and registered the way the real ones are (cells.Define,
// Config.Kinds): its source is YAML with `rows: N` (emit a table of N rows, one chart offer per row), `wait: true`
// (run until cancelled), `fail: text` and `panic: true`, `note: text` (an error note first), `ask: K` (ask the page K tasks, one at a time,
// and note each answer), plus an action "shout" that emits text.
func probeKind(cells.Env) cells.Kind {
	return cells.Define(cells.Def[probeSpec]{Name: "probe", Script: "export default { /* probe */ };\n",
		Parse: func(src string) (probeSpec, error) {
			var s probeSpec
			err := cells.Decode(src, &s)
			return s, err
		},
		Run: func(s probeSpec, _ cells.Cell) cells.Run { return probeRun(s) },
		Actions: []cells.Action{{Name: "shout", Label: "Shout", Parse: func(c cells.Cell) (cells.Run, error) {
			return shoutRun(strings.ToUpper(c.Source)), nil
		}}}})
}

type probeSpec struct {
	cells.Common `yaml:",inline"`
	Rows         int    `yaml:"rows"`
	Wait         bool   `yaml:"wait"`
	Fail         string `yaml:"fail"`
	Panic        bool   `yaml:"panic"`
	Takes        string `yaml:"estimate"`
	Shared       bool   `yaml:"shared"` // times nothing (cells.Exclusive false)
	Sleep        string `yaml:"sleep"`  // sleep this long (or until cancelled) before the rows
	Ask          int    `yaml:"ask"`
	Note         string `yaml:"note"` // an error note first
}

type probeRun probeSpec

func (r probeRun) Estimate() time.Duration {
	d, _ := time.ParseDuration(r.Takes)
	return d
}

func (r probeRun) Exclusive() bool { return !r.Shared }

func (r probeRun) Run(ctx context.Context, e cells.Emitter) error {
	if r.Note != "" {
		e.Note("error", r.Note)
	}
	if d, _ := time.ParseDuration(r.Sleep); d > 0 {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(d):
		}
	}
	switch {
	case r.Panic:
		panic("probe panics")
	case r.Fail != "":
		return fmt.Errorf("%s", r.Fail)
	case r.Wait:
		<-ctx.Done()
		return ctx.Err()
	case r.Ask > 0:
		for i := range r.Ask {
			raw, err := cells.Ask(ctx, e, map[string]int{"question": i})
			if err != nil {
				return err
			}
			e.Note("info", "answer: "+string(raw))
		}
		return nil
	}
	e.Note("info", "probe starts")
	e.Table(cells.Table{ID: "t", Caption: "probe rows, made up", Columns: []cells.Column{{Label: "i"}, {Label: "square", Unit: "s"}}})
	for i := range r.Rows {
		e.Progress(i+1, r.Rows)
		e.Row(cells.Row{Table: "t", Values: []any{i, float64(i * i)}, Bad: i == 2})
		n := i + 1
		e.Chart(func() (string, error) { return fmt.Sprintf("<svg>%d rows</svg>", n), nil })
	}
	e.Frames(1, 2, 3)
	return nil
}

type shoutRun string

func (shoutRun) Estimate() time.Duration { return 0 }
func (s shoutRun) Run(_ context.Context, e cells.Emitter) error {
	e.Text("shouted", string(s))
	return nil
}

// probeConfig serves the default lessons' directory plus a lesson with one probe cell ("p", cell
// "p-0"), with the probe kind beside the built-in ones.
func probeConfig(t *testing.T) Config {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "p.md"), []byte("---\ntitle: P\nsummary: s\norder: 1\n---\n\n```probe\nrows: 1\n```\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return Config{Config: machine.Config{Kinds: probeKinds}, LessonsDir: dir}
}

// probeKinds are the built-in kinds plus the probe.
func probeKinds(env cells.Env) []cells.Kind { return append(builtin.Kinds(env), probeKind(env)) }

func probeMsg(id, source string) Message {
	return Message{Type: TypeRun, ID: id, RunRequest: &RunRequest{Lesson: "p", Cell: "p-0", Source: source}}
}

// A kind the server has never heard of runs end to end over the websocket: its events arrive as the
// generic messages, its module is served, its action button is on the page and its action runs.
func TestTestOnlyKindEndToEnd(t *testing.T) {
	_, base := startServer(t, probeConfig(t))
	if body := getBody(t, base+"/cells/probe.js"); !strings.Contains(body, "/* probe */") {
		t.Errorf("/cells/probe.js: got %q", body)
	}
	if body := getBody(t, base+"/lessons/p"); !strings.Contains(body, `data-kind="probe"`) || !strings.Contains(body, `data-action="shout">Shout</button>`) {
		t.Errorf("the lesson page lacks the probe cell or its action")
	}
	ws := dial(t, base)
	if err := ws.WriteJSON(probeMsg("a", "rows: 4")); err != nil {
		t.Fatal(err)
	}
	msgs := collect(t, ws, "a", 30*time.Second)
	rows := rowsOf(t, msgs, "t")
	if got := fmt.Sprint(column(rows, "square")); got != "[0 1 4 9]" || rows[2]["bad"] != true || rows[1]["bad"] != false {
		t.Errorf("rows %v", rows)
	}
	if notes := notesOf(msgs); len(notes) != 1 || notes[0] != "info: probe starts" {
		t.Errorf("notes %q", notes)
	}
	var frames []any
	lastChart, lastRow := -1, -1
	for i, m := range msgs {
		frames = append(frames, m.Frames...)
		if m.Type == TypeChart {
			lastChart = i
		}
		if m.Type == TypeRow {
			lastRow = i
		}
	}
	n := len(msgs)
	if fmt.Sprint(frames) != "[1 2 3]" || lastChart < lastRow || msgs[lastChart].SVG != "<svg>4 rows</svg>" || msgs[n-1].Type != TypeDone {
		t.Errorf("frames %v, last chart %+v, last %+v; want frames 1 2 3, the chart of all 4 rows after the rows, done", frames, msgs[lastChart], msgs[n-1])
	}
	m := probeMsg("b", "hello")
	m.Action = "shout"
	if err := ws.WriteJSON(m); err != nil {
		t.Fatal(err)
	}
	msgs = collect(t, ws, "b", 30*time.Second)
	if n := len(msgs); msgs[n-2].Type != TypeText || msgs[n-2].Text.Body != "HELLO" || msgs[n-1].Type != TypeDone {
		t.Errorf("shout: got %+v", msgs)
	}
	for id, tt := range map[string]struct{ src, action, want string }{
		"e1": {"fail: it broke", "", "it broke"},
		"e2": {"panic: true", "", "internal error: probe panics"},
		"e3": {"rows: x", "", "line 1: expected a whole number, got x"},
		"e4": {"rows: 1", "whisper", `a probe cell has no action "whisper"`},
		"e5": {"estimate: 1h", "", "estimated to take about 1h0m0s, over the 2m0s run time limit"},
	} {
		m := probeMsg(id, tt.src)
		m.Action = tt.action
		if err := ws.WriteJSON(m); err != nil {
			t.Fatal(err)
		}
		if msgs := collect(t, ws, id, 30*time.Second); msgs[len(msgs)-1].Type != TypeError || !strings.Contains(msgs[len(msgs)-1].Message, tt.want) {
			t.Errorf("%s: got %+v, want an error with %q", id, msgs[len(msgs)-1], tt.want)
		}
	}
}

// Charts are drawn lazily and throttled: of many offered at the same instant (a fake clock), the
// first is drawn and sent, the rest wait, and the end of the run draws only the last one offered.
func TestChartsAreThrottled(t *testing.T) {
	c, out := testConn()
	at := time.Unix(1e9, 0)
	e := &cells.Paced{Out: newEmitter(&job{views: map[*conn]string{c: "x"}}, nil), Now: func() time.Time { return at }}
	drawn := 0
	for i := range 10 {
		e.Chart(func() (string, error) { drawn++; return fmt.Sprintf("<svg>%d</svg>", i), nil })
	}
	e.Flush()
	close(out)
	var svgs []string
	for m := range out {
		svgs = append(svgs, m.SVG)
	}
	if drawn != 2 || fmt.Sprint(svgs) != "[<svg>0</svg> <svg>9</svg>]" {
		t.Errorf("drew %d charts and sent %v; want the first and the last only", drawn, svgs)
	}
}

// testConn is a connection with no socket whose sent messages land in the returned channel.
func testConn() (*conn, chan Message) {
	ctx, cancel := context.WithCancelCause(context.Background())
	out := make(chan Message, 100)
	return &conn{out: out, ctx: ctx, cancel: cancel, jobs: map[string]*job{}}, out
}

// The server knows no cell kind by name: no built-in kind's name is a word in its non-test sources.
func TestServerNamesNoKind(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	templates, _ := filepath.Glob("templates/*.html")
	for _, f := range append(files, templates...) {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range builtin.Kinds(cells.Env{}) {
			for _, quoted := range []string{`"` + k.Name() + `"`, "`" + k.Name() + "`", " " + k.Name() + " cell"} {
				if strings.Contains(string(b), quoted) {
					t.Errorf("%s names the %s kind (%s)", f, k.Name(), quoted)
				}
			}
		}
	}
}

// A run that bursts far more messages than the client's send buffer holds is paced, not dropped:
// a client that reads normally gets every row and the terminal message. PaceWait is generous: a
// loaded machine (or -race) may keep the test's reader from draining the buffer for seconds.
func TestBurstIsPacedNotDropped(t *testing.T) {
	cfg := probeConfig(t)
	cfg.PaceWait = time.Minute
	cfg.Limits.RunTimeout = 5 * time.Minute // a second idle; over 2 minutes with -race beside two CPU hogs
	_, base := startServer(t, cfg)
	ws := dial(t, base)
	if err := ws.WriteJSON(probeMsg("burst", fmt.Sprintf("rows: %d", 4*sendBuffer))); err != nil {
		t.Fatal(err)
	}
	msgs := collect(t, ws, "burst", 6*time.Minute)
	if rows := rowsOf(t, msgs, "t"); len(rows) != 4*sendBuffer || msgs[len(msgs)-1].Type != TypeDone {
		t.Errorf("got %d rows ending %+v, want %d and done", len(rows), msgs[len(msgs)-1], 4*sendBuffer)
	}
}

// A client whose buffer stays half full longer than the default pace wait is not dropped while
// within its connection's (Config.PaceWait); one that stays so past it is.
func TestPaceWaitIsTheConnections(t *testing.T) {
	t.Parallel()
	c, out := testConn()
	c.paceWait = time.Minute
	for range cap(out) / 2 {
		out <- Message{Type: TypeText}
	}
	go func() {
		time.Sleep(defaultPaceWait + 500*time.Millisecond)
		<-out
	}()
	c.sendPaced(context.Background(), Message{Type: TypeDone})
	if err := context.Cause(c.ctx); err != nil {
		t.Fatalf("dropped while within its pace wait: %v", err)
	}
	c.paceWait = time.Millisecond
	for len(out) < cap(out)/2 {
		out <- Message{Type: TypeText}
	}
	c.sendPaced(context.Background(), Message{Type: TypeDone})
	if err := context.Cause(c.ctx); err == nil {
		t.Error("not dropped past its pace wait")
	}
}
