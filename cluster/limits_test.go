package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/gpuplayground/playground/cells"
	"github.com/gpuplayground/playground/gpu/nvidia"
	"github.com/gpuplayground/playground/harness"
	"github.com/gpuplayground/playground/machine"
	"github.com/gpuplayground/playground/server"
)

// pricedKind is a test kind whose runs cost what the cell says, without taking it: `seconds: N`
// prices a run at N s and `mib: M` asks for M MiB; a parse refuses a run priced over its
// environment's run time limit, or asking for more than its memory limit, as the built-in kinds
// do. Its runs note "ran" at once.
type pricedKind struct{ env cells.Env }

type pricedSpec struct {
	cells.Common `yaml:",inline"`
	Seconds      int   `yaml:"seconds"`
	MiB          int64 `yaml:"mib"`
}

func (pricedKind) Name() string   { return "priced" }
func (pricedKind) Script() string { return "export default {};\n" }
func (k pricedKind) Parse(c cells.Cell) (cells.Run, error) {
	var s pricedSpec
	if err := cells.Decode(c.Source, &s); err != nil {
		return nil, err
	}
	lim := k.env.Limits
	if d := time.Duration(s.Seconds) * time.Second; d > lim.RunTimeout {
		return nil, fmt.Errorf("this run is estimated to take about %s, over the %s run time limit", d, lim.RunTimeout)
	}
	if s.MiB<<20 > lim.MemoryBytes {
		return nil, fmt.Errorf("this run needs %d MiB, over the %d MiB memory limit", s.MiB, lim.MemoryBytes>>20)
	}
	return pricedRun(s), nil
}

type pricedRun pricedSpec

func (r pricedRun) Estimate() time.Duration { return time.Duration(r.Seconds) * time.Second }
func (r pricedRun) Needs() cells.Needs      { return cells.Needs{Machine: r.Machine} }
func (pricedRun) Run(_ context.Context, e cells.Emitter) error {
	e.Note("info", "ran")
	return nil
}

// pricedKinds are the test kinds with pricedKind.
func pricedKinds(env cells.Env) []cells.Kind { return append(testKinds(env), pricedKind{env}) }

// A front with a 5-minute run time limit and a worker with the default limits (2 minutes): a run
// priced over 2 minutes but under 5 is accepted by the front and run by the worker, under the
// front's limit; a run asking for more memory than the worker allows (64 MiB, where the front allows
// 1 GiB) is refused by the worker, with its reason.
func TestRunLimitTravelsWithTheJob(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	lesson := "---\ntitle: P\nsummary: p\norder: 1\n---\n\n# P\n\n```priced\nseconds: 1\n```\n"
	if err := os.WriteFile(dir+"/01-naps.md", []byte(lesson), 0o644); err != nil {
		t.Fatal(err)
	}
	devices := func(context.Context) nvidia.Report { return fakeReport(false) }
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const limit = 5 * time.Minute
	front := machine.New(ctx, machine.Config{Kinds: pricedKinds, Devices: devices, Limits: harness.Limits{RunTimeout: limit}})
	c := startCluster(t, Config{Machine: front})
	wctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- RunWorker(wctx, WorkerConfig{Config: machine.Config{Name: "wA", Kinds: pricedKinds, Devices: devices, Limits: harness.Limits{MemoryBytes: 64 << 20}}, Join: c.WorkerURL(), Token: c.Token(), Prefix: c.names.Prefix(),
			Heartbeat: testHeartbeat, Out: io.Discard}) // 2 minutes: harness.DefaultLimits
	}()
	t.Cleanup(func() { stop(); <-done })
	waitMachine(t, c, "wA", true)
	jobs, err := c.nc.SubscribeSync(c.names.Jobs() + ">")
	if err != nil {
		t.Fatal(err)
	}
	addr := serveLessons(t, server.Config{Config: machine.Config{Kinds: pricedKinds, Limits: harness.Limits{RunTimeout: limit}}, LessonsDir: dir, Executor: c, Machine: front, Out: io.Discard})
	ws, _, err := websocket.DefaultDialer.Dial("ws://"+addr+"/ws", http.Header{"Origin": {"http://" + addr}})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	_ = ws.SetReadDeadline(time.Now().Add(2 * time.Minute))
	for _, tt := range []struct{ src, want string }{
		{"seconds: 180\n", "done"},
		{"seconds: 1\nmib: 512\n", "error on wA: this run needs 512 MiB, over the 64 MiB memory limit"},
	} {
		var end string
		ran := false
		for m := range pageRun(t, ws, "r", "01-naps-0", tt.src) {
			ran = ran || m.Type == server.TypeNote && m.Note != nil && m.Note.Message == "ran"
			if server.Terminal(m.Type) {
				end = m.Type + " " + m.Message
			}
		}
		if !strings.HasPrefix(end, tt.want) || ran != (tt.want == "done") {
			t.Errorf("%q: ended %q (ran: %v), want %q…", tt.src, end, ran, tt.want)
		}
		msg, err := jobs.NextMsg(10 * time.Second)
		if err != nil {
			t.Fatalf("%q: no job seen: %v", tt.src, err)
		}
		var j job
		if err := json.Unmarshal(msg.Data, &j); err != nil {
			t.Fatal(err)
		}
		if got, want := time.Duration(j.LimitNS), limit; got != want {
			t.Errorf("%q: the job's limit %v, want the front's %v", tt.src, got, want)
		}
		if got, want := time.Duration(j.PriceNS), pricedRun(pricedSpec{Seconds: 1}).Estimate(); tt.want != "done" && got != want {
			t.Errorf("%q: the job's price %v, want %v", tt.src, got, want)
		}
		if got, want := time.Duration(j.PriceNS), 180*time.Second; tt.want == "done" && got != want {
			t.Errorf("%q: the job's price %v, want %v", tt.src, got, want)
		}
	}
}

// A run stopped at its time limit on a worker says the limit and the price it was accepted at.
func TestTimeLimitNamesThePrice(t *testing.T) {
	w := &runner{me: Machine{Name: "wA"}}
	rctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	ev := w.end(context.Background(), rctx, 5*time.Minute, 3*time.Minute, nil)
	if want := "the run hit the 5m0s time limit on wA and was stopped (it was accepted at an estimate of 3m0s there)"; ev.Error != want || !ev.Cancelled {
		t.Errorf("end %q (cancelled %v), want %q", ev.Error, ev.Cancelled, want)
	}
}

// A worker parses a job under the limit the job carries, or, from a server that sends none, under
// the time the job left the run; it refuses a run asking for a class of machine it is not, saying
// so.
func TestWorkerParsesUnderTheJobsLimit(t *testing.T) {
	m := machine.New(context.Background(), machine.Config{Name: "wA", Kinds: pricedKinds,
		Devices: func(context.Context) nvidia.Report { return fakeReport(false) }})
	defer m.Close()
	w := &runner{m: m, me: Machine{Name: "wA", Class: "lab"}}
	for _, tt := range []struct {
		src            string
		limit, timeout time.Duration
		want           string
	}{
		{"seconds: 180\n", 5 * time.Minute, 4 * time.Minute, ""},
		{"seconds: 180\n", 0, 4 * time.Minute, ""},
		{"seconds: 180\n", 0, time.Minute, "over the 1m0s run time limit"},
		{"seconds: 1\nmachine: lab\n", 0, time.Minute, ""},
		{"seconds: 1\nmachine: h100\n", 0, time.Minute, "the machine wA is of class lab, and the run asks for one of class h100"},
	} {
		_, err := w.parse(job{Kind: "priced", Source: tt.src, LimitNS: int64(tt.limit)}, tt.timeout)
		if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("%q, limit %v, time left %v: %v, want %q", tt.src, tt.limit, tt.timeout, err, tt.want)
		}
	}
}
