package cluster

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/gpuplayground/playground/cells"
	"github.com/gpuplayground/playground/cells/builtin"
	"github.com/gpuplayground/playground/cells/shared/webgpu"
	"github.com/gpuplayground/playground/gpu"
	"github.com/gpuplayground/playground/gpu/nvidia"
	"github.com/gpuplayground/playground/harness"
	"github.com/gpuplayground/playground/internal/testparallel"
	"github.com/gpuplayground/playground/kernels"
	"github.com/gpuplayground/playground/machine"
	"github.com/gpuplayground/playground/server"
	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"
)

// Environment of a worker process that this test binary becomes (TestMain).
const (
	envJoin   = "PLAYGROUND_TEST_JOIN"
	envToken  = "PLAYGROUND_TEST_TOKEN"
	envName   = "PLAYGROUND_TEST_NAME"
	envGPU    = "PLAYGROUND_TEST_FAKE_GPU" // "1": announce a (fake) GPU
	envClass  = "PLAYGROUND_TEST_CLASS"
	envFreeze = "PLAYGROUND_TEST_FREEZE"    // "1": stop this process (SIGSTOP) after pulling its first job
	envPrefix = "PLAYGROUND_TEST_PREFIX"    // the deployment's prefix (-nats-prefix)
	envBeat   = "PLAYGROUND_TEST_HEARTBEAT" // the server's heartbeat, which the worker's must match
)

// testHeartbeat is the tests' heartbeat: a worker silent for three (1.5 s) is gone. The tests
// run eight at a time (TestMain), beside whatever else loads the machine; at 200 ms a worker
// starved for 600 ms was dropped under a load average of 30.
const testHeartbeat = 500 * time.Millisecond

// testPing is the NATS ping interval of the tests whose network path goes silent: a connection is
// stale after 1 to 1.5 s rather than StaleAfter; a loaded machine rarely stalls a connection's
// reader for a second.
const testPing = 500 * time.Millisecond

// loadedHeartbeat is the heartbeat of tests whose workers must not be taken for gone on a loaded
// machine (a worker is gone after three silent heartbeats: 600 ms at testHeartbeat, which a busy
// machine can outlast): generous, so that they pass beside CPU-bound processes.
const loadedHeartbeat = 2 * time.Second

// TestMain lets this test binary serve as the GPU worker process and as a cluster worker process.
func TestMain(m *testing.M) {
	if gpu.ServeChild(os.Args, os.Stdin, os.Stdout) {
		os.Exit(0)
	}
	if join := os.Getenv(envJoin); join != "" {
		cfg := WorkerConfig{Config: machine.Config{Name: os.Getenv(envName), Kinds: testKinds, Devices: func(context.Context) nvidia.Report { return fakeReport(os.Getenv(envGPU) == "1") }}, Join: join, Token: os.Getenv(envToken), Class: os.Getenv(envClass), Prefix: os.Getenv(envPrefix),
			Heartbeat: testHeartbeat}
		if beat, err := time.ParseDuration(os.Getenv(envBeat)); err == nil {
			cfg.Heartbeat = beat
		}
		if os.Getenv(envFreeze) == "1" {
			cfg.pulled = freezeOnce()
		}
		if err := RunWorker(context.Background(), cfg); err != nil {
			fmt.Fprintln(os.Stderr, "worker:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	// The tests wait (heartbeats, reconnects, stale connections, settle and time limits) far
	// more than they compute: up to eight that call t.Parallel run at once.
	testparallel.Default(8)
	os.Exit(m.Run())
}

// fakeReport is a machine with or without a (pretend) GPU; no GPU kernel of the tests runs on it.
func fakeReport(withGPU bool) nvidia.Report {
	if !withGPU {
		return nvidia.Report{Unavailable: "no CUDA device (test)", Compiler: "none"}
	}
	return nvidia.Report{Driver: "13.0", Compiler: "NVRTC 13.0", Devices: []nvidia.Device{{Name: "Fake GPU", ComputeCapability: 90, SMs: 132}}}
}

// testKinds are the built-in kinds plus `nap`: `ms: N` sleeps N ms after a progress event (before
// it with `quiet: true`), or until stopped on the machine named by `hold_on`; `gpu: true` needs a
// GPU; it notes the worker's process id.
func testKinds(env cells.Env) []cells.Kind {
	return append(builtin.Kinds(env), napKind{machine: env.Machine})
}

type napKind struct{ machine string }

type napSpec struct {
	cells.Common `yaml:",inline"`
	MS           int    `yaml:"ms"`
	GPU          bool   `yaml:"gpu"`
	Quiet        bool   `yaml:"quiet"`
	BigKiB       int    `yaml:"big_kib"`
	HoldOn       string `yaml:"hold_on"`
}

func (napKind) Name() string   { return "nap" }
func (napKind) Script() string { return "export default {};\n" }
func (k napKind) Parse(c cells.Cell) (cells.Run, error) {
	var s napSpec
	if err := cells.Decode(c.Source, &s); err != nil {
		return nil, err
	}
	return napRun{napSpec: s, held: s.HoldOn != "" && s.HoldOn == k.machine}, nil
}

type napRun struct {
	napSpec
	held bool // on the machine hold_on names: the nap lasts until stopped
}

func (napRun) Estimate() time.Duration { return time.Second }
func (r napRun) Needs() cells.Needs    { return cells.Needs{GPU: r.GPU} }
func (r napRun) Run(ctx context.Context, e cells.Emitter) error {
	if !r.Quiet {
		e.Progress(0, 1)
	}
	if r.BigKiB > 0 {
		e.Text("big", strings.Repeat("x", r.BigKiB<<10))
	}
	var wake <-chan time.Time
	if !r.held {
		wake = time.After(time.Duration(r.MS) * time.Millisecond)
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-wake:
	}
	e.Note("info", fmt.Sprintf("pid %d", os.Getpid()))
	e.Progress(1, 1)
	return nil
}

// startCluster starts the server side with a port for workers and no local worker.
func startCluster(t *testing.T, cfg Config) *Cluster {
	t.Helper()
	cfg.Listen, cfg.Heartbeat = "127.0.0.1:0", testHeartbeat
	if cfg.Settle == 0 {
		cfg.Settle = -1 // runs for machines nobody has fail (or fall back) at once; TestSettle waits
	}
	if cfg.Out == nil {
		cfg.Out = io.Discard
	}
	c, err := Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// napLessons writes lesson 01-naps, one nap cell per source, into a new folder and returns it.
func napLessons(t *testing.T, sources ...string) string {
	t.Helper()
	dir := t.TempDir()
	lesson := "---\ntitle: Naps\nsummary: naps\norder: 1\n---\n\n# Naps\n"
	for _, src := range sources {
		lesson += "\n```nap\n" + src + "```\n"
	}
	if err := os.WriteFile(dir+"/01-naps.md", []byte(lesson), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// serveLessons serves cfg on 127.0.0.1:0 until the test ends (then Serve must return no error) and
// returns its address.
func serveLessons(t *testing.T, cfg server.Config) string {
	t.Helper()
	s, err := server.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	background(t, "Serve", func(ctx context.Context) error { return s.Serve(ctx, ln) })
	return ln.Addr().String()
}

// background runs f until the test ends, then cancels its context and fails the test if f returns
// an error.
func background(t *testing.T, name string, f func(context.Context) error) {
	t.Helper()
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f(ctx) }()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("%s: %v", name, err)
		}
	})
}

// startWorker starts this test binary as a worker process named name and waits until the cluster
// knows it.
func startWorker(t *testing.T, c *Cluster, name string, withGPU bool, env ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	gpuFlag := "0"
	if withGPU {
		gpuFlag = "1"
	}
	cmd.Env = append(os.Environ(), envJoin+"="+c.WorkerURL(), envToken+"="+c.Token(), envName+"="+name, envGPU+"="+gpuFlag, envPrefix+"="+c.names.Prefix(), envBeat+"="+c.cfg.Heartbeat.String())
	cmd.Env = append(cmd.Env, env...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			t.Log(name + ": " + sc.Text())
		}
	}()
	deadline := time.Now().Add(2 * time.Minute) // generous: a loaded machine starts a process slowly
	for time.Now().Before(deadline) {
		for _, m := range c.Machines() {
			if m.Name == name {
				return cmd
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("worker %s did not join", name)
	return nil
}

// recorder is a cells.Emitter that keeps every event as a line of text.
type recorder struct {
	mu     sync.Mutex
	events []string
}

func (r *recorder) add(s string) {
	r.mu.Lock()
	r.events = append(r.events, s)
	r.mu.Unlock()
}

// Emit keeps an event as its shorthand does; a relayed event comes this way.
func (r *recorder) Emit(ev cells.Event) {
	switch b := ev.Body; {
	case b.Progress != nil:
		r.Progress(b.Done, b.Total)
	case b.Note != nil:
		r.Note(b.Note.Level, b.Note.Message)
	case b.Table != nil:
		r.Table(*b.Table)
	case b.Row != nil:
		r.Row(*b.Row)
	case ev.Type == cells.TypeChart:
		r.Chart(func() (string, error) { return b.SVG, nil })
	case ev.Type == cells.TypeFrames:
		r.Frames(b.Frames...)
	case b.Text != nil:
		r.Text(b.Text.Title, b.Text.Body)
	}
}
func (r *recorder) Progress(done, total int) { r.add(fmt.Sprintf("progress %d/%d", done, total)) }
func (r *recorder) Note(level, text string)  { r.add("note " + level + ": " + text) }
func (r *recorder) Table(t cells.Table)      { r.add("table " + t.ID + " " + t.Caption) }
func (r *recorder) Row(row cells.Row)        { r.add(fmt.Sprintf("row %s %v", row.Table, row.Values)) }
func (r *recorder) Chart(draw func() (string, error)) {
	svg, err := draw()
	r.add(fmt.Sprintf("chart %d bytes %v", len(svg), err))
}
func (r *recorder) Frames(frames ...any)    { r.add(fmt.Sprintf("frames %d", len(frames))) }
func (r *recorder) Text(title, body string) { r.add(fmt.Sprintf("text %s %d", title, len(body))) }

func (r *recorder) has(prefix string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range r.events {
		if strings.HasPrefix(e, prefix) {
			return true
		}
	}
	return false
}

// ranOn is the machine name in the run's "Ran on" note.
func (r *recorder) ranOn() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range r.events {
		if rest, ok := strings.CutPrefix(e, "note info: Ran on "); ok {
			name, _, _ := strings.Cut(rest, " (")
			return name
		}
	}
	return ""
}

// execute runs a cell of kind through the cluster as the server's queue would.
func execute(ctx context.Context, c *Cluster, kind, source string) (*recorder, error) {
	rec := &recorder{}
	return rec, executeTo(ctx, c, kind, source, rec)
}

// executeTo is execute, its events to rec as they arrive.
func executeTo(ctx context.Context, c *Cluster, kind, source string, rec *recorder) error {
	env := cells.Env{Kernels: append(kernels.CPU(), nvidia.GEMMs("no CUDA device (test)")...), Limits: harness.DefaultLimits()}
	k, _ := cells.Lookup(testKinds(env), kind)
	r, err := cells.Parse(k, "", cells.Cell{ID: "c", Source: source})
	if err != nil {
		return err
	}
	slot, err := c.Acquire(ctx, r)
	if err != nil {
		return err
	}
	defer slot.Release()
	return slot.Execute(ctx, server.Job{Kind: kind, Lesson: "l", Cell: cells.Cell{ID: "c", Source: source}}, r, rec)
}

// watchTaken watches the runs of the worker named name: wait returns once it has taken one (its
// first event, "taken"), and fails the test if that does not come within a minute.
func watchTaken(t *testing.T, c *Cluster, name string) (wait func()) {
	t.Helper()
	id := ""
	for _, m := range c.Machines() {
		if m.Name == name {
			id = m.ID
		}
	}
	if id == "" {
		t.Fatalf("no machine %s", name)
	}
	sub, err := c.nc.SubscribeSync(dn.Run(id, "*", "events"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	if err := c.nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return func() {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, err := sub.NextMsgWithContext(ctx); err != nil {
			t.Fatalf("%s did not take the run: %v", name, err)
		}
	}
}

// waitUntil polls cond until it holds, failing the test after a minute.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("waited a minute for %s", what)
		}
	}
}

// Two worker processes join over loopback with the token; real cells run on them end to end, every
// run says which machine ran it, and concurrent runs spread over both.
func TestWorkersRunCells(t *testing.T) {
	t.Parallel()
	c := startCluster(t, Config{})
	startWorker(t, c, "alpha", false)
	startWorker(t, c, "beta", false)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	rec, err := execute(ctx, c, "matmul", "kernels: [ikj, gonum]\nsizes: [16, 32]\nrepeats: 1\n")
	if err != nil {
		t.Fatalf("matmul on a worker: %v", err)
	}
	for _, want := range []string{"table ", "row ", "chart ", "progress "} {
		if !rec.has(want) {
			t.Errorf("matmul events lack %q: %q", want, rec.events)
		}
	}
	if got := rec.ranOn(); got != "alpha" && got != "beta" {
		t.Errorf("ran on %q, want alpha or beta: %q", got, rec.events)
	}
	rec, err = execute(ctx, c, "systolic", "array: 4\nm: 4\nn: 4\nk: 4\n")
	if err != nil || !rec.has("frames ") {
		t.Errorf("systolic on a worker: %v, events %q", err, rec.events)
	}
	if _, err := execute(ctx, c, "matmul", "kernels: [nosuch]\nsizes: [16]\n"); err == nil {
		t.Errorf("an invalid cell ran")
	}

	const runs = 6
	names := make([]string, runs)
	var wg sync.WaitGroup
	for i := range runs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rec, err := execute(ctx, c, "nap", "ms: 300\n")
			if err != nil {
				t.Errorf("nap %d: %v", i, err)
				return
			}
			names[i] = rec.ranOn()
		}()
	}
	wg.Wait()
	count := map[string]int{}
	for _, n := range names {
		count[n]++
	}
	if count["alpha"] == 0 || count["beta"] == 0 || count["alpha"]+count["beta"] != runs {
		t.Errorf("runs per machine %v, want both machines used for %d runs", count, runs)
	}
}

// A run that needs a GPU never goes to the worker without one while one with a GPU is connected;
// runs that need none go to either.
func TestGPURunsGoToGPUWorkers(t *testing.T) {
	t.Parallel()
	c := startCluster(t, Config{})
	startWorker(t, c, "cpu-only", false)
	startWorker(t, c, "gpu-box", true)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	var mu sync.Mutex
	got := map[string]int{}
	for range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rec, err := execute(ctx, c, "nap", "ms: 100\ngpu: true\n")
			if err != nil {
				t.Errorf("GPU nap: %v", err)
				return
			}
			mu.Lock()
			got[rec.ranOn()]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	if got["gpu-box"] != 6 {
		t.Errorf("GPU runs per machine %v, want all 6 on gpu-box", got)
	}
}

// A worker killed mid-run: a run that had streamed ends with one error naming the machine; a run
// that had streamed nothing is retried once on another worker; a new worker process joins.
func TestWorkerKilledMidRun(t *testing.T) {
	t.Parallel()
	c := startCluster(t, Config{})
	doomed := startWorker(t, c, "doomed", true)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	// The only GPU machine: the run goes there, streams progress, and the machine dies.
	done := make(chan error, 1)
	rec := &recorder{}
	go func() { done <- executeTo(ctx, c, "nap", "ms: 60000\ngpu: true\n", rec) }()
	waitUntil(t, "the run's first progress", func() bool { return rec.has("progress 0/1") }) // the worker has taken the run and sent its first progress
	_ = doomed.Process.Kill()
	err := <-done
	var gone goneError
	if !errors.As(err, &gone) || !strings.Contains(err.Error(), "doomed") {
		t.Fatalf("killed worker: err %v, want one naming the machine doomed", err)
	}
	if !rec.has("progress 0/1") {
		t.Errorf("the run streamed nothing before the kill: %q", rec.events)
	}

	// Quiet runs: the first worker dies before streaming anything, the run moves to the other one.
	quiet := startWorker(t, c, "quiet-victim", true)
	quietTook := watchTaken(t, c, "quiet-victim")
	rec = &recorder{}
	go func() {
		done <- executeTo(ctx, c, "nap", "ms: 10\ngpu: true\nquiet: true\nhold_on: quiet-victim\n", rec)
	}()
	quietTook()
	rescuer := startWorker(t, c, "rescuer", true)
	_ = quiet.Process.Kill()
	if err := <-done; err != nil {
		t.Fatalf("retried run: %v", err)
	}
	if got := rec.ranOn(); got != "rescuer" {
		t.Errorf("retried run ran on %q, want rescuer: %q", got, rec.events)
	}
	if !rec.has("note warning: quiet-victim stopped answering before the run started; the run moved to rescuer.") {
		t.Errorf("the retried run does not say why it moved: %q", rec.events)
	}

	// The last machine dies before its run sent anything: no other can take it, so it ends at once.
	rescuerTook := watchTaken(t, c, "rescuer")
	go func() {
		_, err := execute(ctx, c, "nap", "ms: 60000\nquiet: true\n")
		done <- err
	}()
	rescuerTook()
	_ = rescuer.Process.Kill()
	if err := <-done; err == nil || !strings.Contains(err.Error(), "the machine rescuer stopped answering before the run sent anything") {
		t.Errorf("the last machine died: %v", err)
	}
}

// A cancelled run ends at once and its worker stops it and takes the next.
func TestCancelledRunFreesWorker(t *testing.T) {
	t.Parallel()
	c := startCluster(t, Config{})
	startWorker(t, c, "only", false)
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	_, err := execute(ctx, c, "nap", "ms: 60000\n")
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("cancelled run: %v, want the deadline", err)
	}
	ctx, cancel = context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := execute(ctx, c, "nap", "ms: 10\n"); err != nil {
		t.Fatalf("the next run: %v", err)
	}
}

// A job left in the stream by a server that stopped is not run after a restart: nobody waits for its
// events (the server's run store marked the run interrupted; queued runs survive a restart there, not
// in the job stream), and a rejoining worker would otherwise measure for no one on a machine the new
// server thinks is free. The JetStream store still lives under the data directory.
func TestRestartPurgesJobs(t *testing.T) {
	dir := t.TempDir()
	c, err := Start(context.Background(), Config{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.js.Publish(context.Background(), dn.Jobs()+"absent-worker", []byte(`{"id":"x"}`)); err != nil {
		t.Fatal(err)
	}
	c.Close()
	if _, err := os.Stat(dir + "/nats/jetstream"); err != nil {
		t.Fatalf("no JetStream store under the data directory: %v", err)
	}
	c, err = Start(context.Background(), Config{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	info, err := c.stream.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got := info.State.Msgs; got != 0 {
		t.Errorf("after a restart the stream holds %d jobs, want 0", got)
	}
}

// A job stamped with another server's epoch (a server before a restart) is acknowledged and dropped
// by the worker without running it or sending any event, though its time limit is far off: the
// server's stamp decides, not a clock; the next job, of this server's epoch, runs.
func TestStaleJobNotRun(t *testing.T) {
	c := startCluster(t, Config{})
	startWorker(t, c, "only", false)
	id := c.Machines()[0].ID
	staleEvents, err := c.nc.SubscribeSync(dn.Run(id, "stale1", "events"))
	if err != nil {
		t.Fatal(err)
	}
	freshEvents, err := c.nc.SubscribeSync(dn.Run(id, "fresh1", "events"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, j := range []job{
		{ID: "stale1", Kind: "nap", Cell: "c", Source: "ms: 60000\n", TimeoutNS: int64(time.Hour), Epoch: "a-server-before", Seq: 1},
		{ID: "fresh1", Kind: "nap", Cell: "c", Source: "ms: 10\n", TimeoutNS: int64(time.Minute), Epoch: c.epoch, Seq: 1},
	} {
		data, _ := json.Marshal(j)
		if _, err := c.js.Publish(ctx, dn.Jobs()+id, data); err != nil {
			t.Fatal(err)
		}
	}
	// The worker's fetch loop reads jobs in stream order and drops a stale one there, before it
	// fetches the next: once the fresh job ended, the stale one was already handled.
	for {
		m, err := freshEvents.NextMsgWithContext(ctx)
		if err != nil {
			t.Fatalf("the job after the stale one did not end: %v", err)
		}
		var ev event
		if json.Unmarshal(m.Data, &ev) == nil && ev.Type == evEnd {
			if ev.Error != "" {
				t.Errorf("the fresh job: %s", ev.Error)
			}
			break
		}
	}
	if n, _, _ := staleEvents.Pending(); n != 0 {
		m, _ := staleEvents.NextMsg(0)
		t.Errorf("the stale job sent %d events, want none; first: %s", n, m.Data)
	}
}

// Through the server's websocket with two workers and the local one: every run of a burst ends with
// exactly one terminal message, in order after its other messages, and a cancelled one is cancelled.
func TestServerExactlyOneTerminal(t *testing.T) {
	t.Parallel()
	dir := napLessons(t, "ms: 150\n", "ms: 60000\n")
	c := startCluster(t, Config{LocalWorker: true, Local: fakeReport(false)})
	startWorker(t, c, "w1", false)
	startWorker(t, c, "w2", false)
	addr := serveLessons(t, server.Config{Config: machine.Config{Kinds: testKinds, Devices: func(context.Context) nvidia.Report { return fakeReport(false) }}, LessonsDir: dir, Executor: c, MaxRunsPerClient: 100, Out: io.Discard})
	ws, _, err := websocket.DefaultDialer.Dial("ws://"+addr+"/ws", http.Header{"Origin": {"http://" + addr}})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	const runs = 12
	for i := range runs {
		cell := "01-naps-0"
		if i == 0 {
			cell = "01-naps-1" // runs until cancelled
		}
		src := map[bool]string{true: "ms: 60000\n", false: "ms: 150\n"}[i == 0]
		if err := ws.WriteJSON(server.Message{Type: server.TypeRun, ID: fmt.Sprint("r", i), RunRequest: &server.RunRequest{Lesson: "01-naps", Cell: cell, Source: src}}); err != nil {
			t.Fatal(err)
		}
	}
	terminal := map[string][]string{}
	machines := map[string]bool{}
	_ = ws.SetReadDeadline(time.Now().Add(time.Minute))
	for len(terminal) < runs {
		var m server.Message
		if err := ws.ReadJSON(&m); err != nil {
			t.Fatalf("after %d terminal messages: %v", len(terminal), err)
		}
		if m.Type == server.TypeNote && strings.HasPrefix(m.Note.Message, "Ran on ") {
			name, _, _ := strings.Cut(strings.TrimPrefix(m.Note.Message, "Ran on "), " (")
			machines[name] = true
		}
		if server.Terminal(m.Type) {
			terminal[m.ID] = append(terminal[m.ID], m.Type)
		}
		if len(terminal) == runs-1 && terminal["r0"] == nil {
			if err := ws.WriteJSON(server.Message{Type: server.TypeCancel, ID: "r0"}); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Any late second terminal message would arrive within the time another run takes.
	_ = ws.SetReadDeadline(time.Now().Add(time.Second))
	for {
		var m server.Message
		if ws.ReadJSON(&m) != nil {
			break
		}
		if server.Terminal(m.Type) {
			terminal[m.ID] = append(terminal[m.ID], m.Type)
		}
	}
	for id, got := range terminal {
		want := server.TypeDone
		if id == "r0" {
			want = server.TypeCancelled
		}
		if len(got) != 1 || got[0] != want {
			t.Errorf("run %s ended with %v, want one %s", id, got, want)
		}
	}
	if len(machines) < 2 {
		t.Errorf("runs ran on %v, want several machines", machines)
	}
	// The runs a worker ran are kept with that worker as their machine.
	resp, err := http.Get("http://" + addr + "/api/runs")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var kept struct {
		Runs []struct {
			Machine string `json:"machine"`
		} `json:"runs"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&kept); err != nil {
		t.Fatal(err)
	}
	onWorkers := 0
	for _, r := range kept.Runs {
		if strings.HasPrefix(r.Machine, "w1 (") || strings.HasPrefix(r.Machine, "w2 (") {
			onWorkers++
		}
	}
	if len(kept.Runs) != runs || onWorkers == 0 {
		t.Errorf("%d runs kept, %d of them with a worker as their machine; want %d, some", len(kept.Runs), onWorkers, runs)
	}
}

// The server restarts on the same port, with or without a data directory: its worker reconnects by
// itself, announces itself again and runs the next run.
func TestWorkerRejoinsAfterServerRestart(t *testing.T) {
	t.Parallel()
	for name, dir := range map[string]string{"data directory": t.TempDir(), "in memory": ""} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cfg := Config{Listen: restartableAddr(t), Token: "tok", DataDir: dir, Heartbeat: loadedHeartbeat}
			c, err := Start(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			startWorker(t, c, "faithful", false)
			c.Close()

			// The worker rejoins after a reconnect and a heartbeat: on a loaded machine that may take
			// longer than the default settle time, so the run waits for it up to a generous deadline
			// (it starts as soon as the worker is back).
			cfg.Settle = time.Minute
			c, err = Start(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			rec, err := execute(ctx, c, "nap", "ms: 10\n")
			if err != nil {
				t.Fatalf("after the restart: %v", err)
			}
			if got := rec.ranOn(); got != "faithful" {
				t.Errorf("ran on %q, want faithful", got)
			}
		})
	}
}

// restartableAddr is a loopback address, on a free port below the ephemeral ports, for a server that
// a test restarts on the same port: a port of the ephemeral range (127.0.0.1:0 picks one) freed by
// the first server may be taken, before the second listens, as the local port of any connection
// the tests open, and the second server is then never ready.
func restartableAddr(t *testing.T) string {
	t.Helper()
	low := 32768 // Linux's default first ephemeral port
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if n, err := strconv.Atoi(f[0]); err == nil && n > 2048 {
				low = n
			}
		}
	}
	for range 100 {
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(1024+rand.IntN(low-1024)))
		if ln, err := net.Listen("tcp", addr); err == nil {
			ln.Close()
			return addr
		}
	}
	t.Fatal("no free port below the ephemeral ones")
	return ""
}

// A worker makes its consumer again on a server restarted without its store (a new job stream) and
// runs the new server's run, however long its RequestTimeout: the first request after the reconnect
// may never be answered, and with a timeout of an hour the worker waited that long for it.
func TestWorkerRemakesItsConsumerAfterARestart(t *testing.T) {
	t.Parallel()
	cfg := Config{Listen: restartableAddr(t), Token: "tok", Heartbeat: loadedHeartbeat, Settle: time.Minute, Out: io.Discard}
	c, err := Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	p := newProbe()
	stop := startInProcessWorkerWith(t, c, WorkerConfig{Config: machine.Config{Name: "patient", Slots: 1, Kinds: p.kinds, Devices: func(context.Context) nvidia.Report { return fakeReport(false) }},
		Join: c.WorkerURL(), Token: c.Token(), Prefix: c.names.Prefix(), Heartbeat: loadedHeartbeat, RequestTimeout: time.Hour, Out: io.Discard})
	c.Close()
	if c, err = Start(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := executeProbe(ctx, c, p, "name: first\nms: 1\n"); err != nil {
		t.Errorf("the first run after the restart: %v", err)
	}
	if err := stop(); err != nil { // while its server is up, which it says bye to
		t.Errorf("RunWorker: %v", err)
	}
}

// An event over the cap of a worker's message becomes a note saying what was left out; one under it
// arrives whole.
func TestEventSizeCap(t *testing.T) {
	t.Parallel()
	c := startCluster(t, Config{})
	startWorker(t, c, "chatty", false)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rec, err := execute(ctx, c, "nap", "ms: 1\nbig_kib: 3072\n")
	if err != nil {
		t.Fatal(err)
	}
	if rec.has("text big") || !rec.has("note warning: a text of 3072 KiB was left out: over the 2048 KiB cap") {
		t.Errorf("a 3 MiB text: events %q", rec.events)
	}
	rec, err = execute(ctx, c, "nap", "ms: 1\nbig_kib: 1024\n")
	if err != nil || !rec.has(fmt.Sprint("text big ", 1024<<10)) {
		t.Errorf("a 1 MiB text: %v, events %q", err, rec.events)
	}
}

// A cell that asks for a class of machine runs only on a machine of that class; a class no machine
// has is an error at once, naming the classes there are.
func TestMachineClass(t *testing.T) {
	t.Parallel()
	c := startCluster(t, Config{LocalWorker: true, Local: fakeReport(false)})
	startWorker(t, c, "lab-a-1", false, envClass+"=lab-a")
	startWorker(t, c, "lab-b-1", true, envClass+"=lab-b")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, tt := range []struct{ src, want string }{
		{"ms: 10\nmachine: lab-a\n", "lab-a-1"},
		{"ms: 10\nmachine: lab-b\n", "lab-b-1"},
		{"ms: 10\nmachine: lab-a\ngpu: true\n", "lab-a-1"}, // the class first; it has no GPU, so it runs as on one machine
		{"ms: 10\ngpu: true\n", "lab-b-1"},
	} {
		for range 3 {
			rec, err := execute(ctx, c, "nap", tt.src)
			if err != nil {
				t.Fatalf("%q: %v", tt.src, err)
			}
			if got := rec.ranOn(); got != tt.want {
				t.Errorf("%q ran on %q, want %s", tt.src, got, tt.want)
			}
		}
	}
	_, err := execute(ctx, c, "nap", "ms: 10\nmachine: h100\n")
	if err == nil || !strings.Contains(err.Error(), `no machine of class "h100" is connected (classes now: lab-a, lab-b)`) {
		t.Errorf("a class nobody has: %v", err)
	}
}

// A class picked for the whole page (the run request's machine) routes every cell of the page there,
// a cell's own machine: key still wins, a class nobody has is an error naming the classes there
// are, and GET /api/machines lists the machines connected, with their classes, for the page's menu.
func TestPageMachineClass(t *testing.T) {
	t.Parallel()
	dir := napLessons(t, "ms: 10\n", "ms: 10\nmachine: lab-a\n")
	c := startCluster(t, Config{LocalWorker: true, Local: fakeReport(false)})
	startWorker(t, c, "lab-a-1", false, envClass+"=lab-a")
	startWorker(t, c, "lab-b-1", true, envClass+"=lab-b")
	addr := serveLessons(t, server.Config{Config: machine.Config{Kinds: testKinds, Devices: func(context.Context) nvidia.Report { return fakeReport(false) }}, LessonsDir: dir, Executor: c, Out: io.Discard})
	resp, err := http.Get("http://" + addr + "/api/machines")
	if err != nil {
		t.Fatal(err)
	}
	var list struct{ Machines []server.MachineInfo }
	err = json.NewDecoder(resp.Body).Decode(&list)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range list.Machines {
		got = append(got, fmt.Sprintf("%s/%s/gpu=%v/here=%v", m.Name, m.Class, m.GPU, m.Here))
	}
	if want := []string{"lab-a-1/lab-a/gpu=false/here=false", "lab-b-1/lab-b/gpu=true/here=false"}; len(got) != 3 || !list.Machines[0].Here || got[1] != want[0] || got[2] != want[1] {
		t.Errorf("/api/machines: %q, want this server's machine, then %q", got, want)
	}
	ws, _, err := websocket.DefaultDialer.Dial("ws://"+addr+"/ws", http.Header{"Origin": {"http://" + addr}})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	_ = ws.SetReadDeadline(time.Now().Add(time.Minute))
	run := func(id, cell, source, class string) (ranOn, end string) {
		t.Helper()
		req := &server.RunRequest{Lesson: "01-naps", Cell: cell, Source: source, Machine: class}
		if err := ws.WriteJSON(server.Message{Type: server.TypeRun, ID: id, RunRequest: req}); err != nil {
			t.Fatal(err)
		}
		for {
			var m server.Message
			if err := ws.ReadJSON(&m); err != nil {
				t.Fatal(err)
			}
			if m.ID != id {
				continue
			}
			if m.Type == server.TypeNote && strings.HasPrefix(m.Note.Message, "Ran on ") {
				ranOn = m.RanOn // the page names the machine from it
				if name, _, _ := strings.Cut(strings.TrimPrefix(m.Note.Message, "Ran on "), " ("); name != ranOn {
					t.Errorf("the note %q has ran_on %q", m.Note.Message, ranOn)
				}
			}
			if server.Terminal(m.Type) {
				return ranOn, strings.TrimSpace(m.Type + " " + m.Message)
			}
		}
	}
	for i, tt := range []struct{ cell, src, class, want string }{
		{"01-naps-0", "ms: 10\n", "lab-b", "lab-b-1"},
		{"01-naps-0", "ms: 10\n", "lab-a", "lab-a-1"},
		{"01-naps-1", "ms: 10\nmachine: lab-a\n", "lab-b", "lab-a-1"}, // the cell's key wins
	} {
		for j := range 3 {
			if ranOn, end := run(fmt.Sprint("r", i, j), tt.cell, tt.src, tt.class); ranOn != tt.want || end != "done" {
				t.Errorf("%q with the page's class %s ran on %q and ended %q, want %s and done", tt.src, tt.class, ranOn, end, tt.want)
			}
		}
	}
	if _, end := run("nobody", "01-naps-0", "ms: 10\n", "h100"); !strings.Contains(end, `no machine of class "h100" is connected (classes now: lab-a, lab-b): pick another in the page's machine menu`) {
		t.Errorf("a page class nobody has ended %q", end)
	}
}

// Just after the server starts (Config.Settle), a run for a class no machine has yet, or one that
// needs a GPU while no GPU machine is connected, waits for one to join instead of failing or running
// elsewhere: after a restart, the runs queued again find the workers that served before as they
// rejoin.
func TestSettle(t *testing.T) {
	t.Parallel()
	c := startCluster(t, Config{LocalWorker: true, Local: fakeReport(false), Settle: 10 * time.Minute})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	type result struct {
		ranOn string
		err   error
	}
	results := make(chan result, 2)
	for _, src := range []string{"ms: 10\nmachine: lab\n", "ms: 10\ngpu: true\n"} {
		go func() {
			rec, err := execute(ctx, c, "nap", src)
			if err != nil {
				results <- result{"", err}
				return
			}
			results <- result{rec.ranOn(), nil}
		}()
	}
	startWorker(t, c, "late", true, envClass+"=lab") // both waited for it
	for range 2 {
		if r := <-results; r.err != nil || r.ranOn != "late" {
			t.Errorf("a run asked for before its machine joined: ran on %q, %v; want late", r.ranOn, r.err)
		}
	}
	// The local machine's runs never wait.
	if rec, err := execute(ctx, c, "nap", "ms: 10\n"); err != nil || rec.ranOn() == "" {
		t.Errorf("a run any machine may take: %v", err)
	}

	// When the settling ends with no such machine, the runs waiting are looked at again: the class
	// is an error, the GPU run goes to the machine there is.
	c2 := startCluster(t, Config{LocalWorker: true, Local: fakeReport(false), Settle: 300 * time.Millisecond})
	startWorker(t, c2, "cpu", false, envClass+"=lab")
	if _, err := execute(ctx, c2, "nap", "ms: 10\nmachine: h100\n"); err == nil || !strings.Contains(err.Error(), `no machine of class "h100"`) {
		t.Errorf("a class nobody has, after settling: %v", err)
	}
	if rec, err := execute(ctx, c2, "nap", "ms: 10\ngpu: true\n"); err != nil || rec.ranOn() == "" {
		t.Errorf("a GPU run with no GPU machine, after settling: %v", err)
	}
	// A server no worker can join (no Listen, no URL) does not settle at all.
	c3, err := Start(context.Background(), Config{LocalWorker: true, Local: fakeReport(false), Settle: 10 * time.Minute, Heartbeat: testHeartbeat})
	if err != nil {
		t.Fatal(err)
	}
	defer c3.Close()
	if _, err := execute(ctx, c3, "nap", "ms: 10\nmachine: h100\n"); err == nil || !strings.Contains(err.Error(), `no machine of class "h100" is connected (classes now: none)`) {
		t.Errorf("a class nobody has on a server of one machine: %v", err)
	}
}

// syncBuffer is an io.Writer safe for a server and a test reading it.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// serve runs the server srv in front of the cluster cfg on this machine's runner, built once, as
// cmd/playground does (app.Serve, which imports this package: its tests cannot).
func serve(ctx context.Context, srv server.Config, cfg Config) error {
	if err := cfg.Runnable(); err != nil {
		return err
	}
	srv.Machine = machine.New(ctx, srv.MachineConfig())
	cfg.Machine, cfg.TLSCert, cfg.TLSKey, cfg.Out = srv.Machine, srv.TLSCert, srv.TLSKey, srv.Out
	return Front(ctx, cfg, func(ctx context.Context, r machine.Runner) error {
		srv.Executor = r
		return server.Run(ctx, srv)
	})
}

// Front, as cmd/playground calls it: with -nats-listen it prints the worker command with a generated
// token; a worker started with exactly that command's URL and token joins, and a lesson cell asked
// for over the websocket with `machine:` its class runs there; -no-local-worker with no way for a
// worker to join is refused.
func TestServePrintsWorkerCommand(t *testing.T) {
	if err := serve(context.Background(), server.Config{}, Config{}); err == nil || !strings.Contains(err.Error(), "-no-local-worker needs -nats-listen or -nats") {
		t.Errorf("no local worker and no port: %v", err)
	}
	dir := napLessons(t, "ms: 10\n")
	out := &syncBuffer{}
	background(t, "Serve", func(ctx context.Context) error {
		return serve(ctx, server.Config{Config: machine.Config{Kinds: testKinds, Devices: func(context.Context) nvidia.Report { return fakeReport(false) }}, Addr: "127.0.0.1:0", LessonsDir: dir, Out: out},
			Config{Listen: "127.0.0.1:0", LocalWorker: true, Heartbeat: testHeartbeat})
	})
	var join, token, addr string
	for deadline := time.Now().Add(30 * time.Second); addr == "" || join == ""; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("Serve printed %q", out.String())
		}
		for _, line := range strings.Split(out.String(), "\n") {
			if rest, ok := strings.CutPrefix(line, "workers join with: playground worker -join "); ok {
				join, token, _ = strings.Cut(rest, " -token ")
			}
			if rest, ok := strings.CutPrefix(line, "GPU Playground: http://"); ok {
				addr = strings.TrimSuffix(rest, "/")
			}
		}
	}
	if len(token) < 32 {
		t.Fatalf("generated token %q: want at least 128 random bits", token)
	}
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), envJoin+"="+join, envToken+"="+token, envName+"=joiner", envClass+"=lab")
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}()
	ws, _, err := websocket.DefaultDialer.Dial("ws://"+addr+"/ws", http.Header{"Origin": {"http://" + addr}})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	// Until the worker has joined, a run that asks for its class is an error naming the classes.
	_ = ws.SetReadDeadline(time.Now().Add(time.Minute))
	for i := 0; ; i++ {
		id := fmt.Sprint("r", i)
		if err := ws.WriteJSON(server.Message{Type: server.TypeRun, ID: id, RunRequest: &server.RunRequest{Lesson: "01-naps", Cell: "01-naps-0", Source: "ms: 10\nmachine: lab\n"}}); err != nil {
			t.Fatal(err)
		}
		var ranOn, end string
		for end == "" {
			var m server.Message
			if err := ws.ReadJSON(&m); err != nil {
				t.Fatal(err)
			}
			if m.Type == server.TypeNote && strings.HasPrefix(m.Note.Message, "Ran on ") {
				ranOn = m.Note.Message
			}
			if server.Terminal(m.Type) {
				end = m.Type + " " + m.Message
			}
		}
		if end == "done " {
			if !strings.HasPrefix(ranOn, "Ran on joiner (class lab;") {
				t.Errorf("the run's machine note: %q", ranOn)
			}
			if !strings.Contains(out.String(), "machine joined: joiner (class lab;") {
				t.Errorf("the server did not say the worker joined: %q", out.String())
			}
			return
		}
		if !strings.Contains(end, `no machine of class "lab" is connected`) || i > 500 {
			t.Fatalf("run %s ended %q", id, end)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// With -nats URL the cluster uses an external NATS server (here one started by the test, with
// JetStream and a user of its own): no embedded server, the job stream on file storage there, and a
// worker joining the same URL with that server's credentials runs the cells.
func TestExternalNATS(t *testing.T) {
	t.Parallel()
	opts := &natsserver.Options{Host: "127.0.0.1", Port: natsserver.RANDOM_PORT, JetStream: true, StoreDir: t.TempDir(),
		NoLog: true, NoSigs: true, Users: []*natsserver.User{{Username: WorkerUser, Password: "dept"}}}
	ns, err := natsserver.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	ns.Start()
	defer ns.Shutdown()
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatal("external NATS server not ready")
	}
	url := "nats://" + WorkerUser + ":dept@" + ns.Addr().String()
	c, err := Start(context.Background(), Config{URL: url, Heartbeat: testHeartbeat})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.ns != nil || c.WorkerURL() != url {
		t.Errorf("embedded server %v, worker URL %q: want none and %q", c.ns, c.WorkerURL(), url)
	}
	startWorker(t, c, "dept-box", false)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rec, err := execute(ctx, c, "matmul", "kernels: [ikj]\nsizes: [16]\nrepeats: 1\n")
	if err != nil || rec.ranOn() != "dept-box" || !rec.has("row ") {
		t.Errorf("on the external server: %v, events %q", err, rec.events)
	}
	info, err := c.stream.Info(ctx)
	if err != nil || info.Config.Storage != jetstream.FileStorage {
		t.Errorf("job stream on the external server: %v, %+v", err, info)
	}
}

func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"nats://h:4222":                   "nats://h:4222",
		"nats://worker:secret@h:4222":     "nats://worker:xxxxx@h:4222",
		"nats://a:s@h1:1,nats://b:t@h2:2": "nats://a:xxxxx@h1:1,nats://b:xxxxx@h2:2",
	} {
		if got := redact(in); got != want {
			t.Errorf("redact(%q) = %q, want %q", in, got, want)
		}
	}
}

// asker is a recorder with a browser page behind it: it answers the adapter task, and every matmul
// task takes 10 ms per repeat.
type asker struct {
	recorder
	tasks int
}

func (a *asker) Ask(_ context.Context, task any) (json.RawMessage, error) {
	a.tasks++
	var t webgpu.Task
	if err := json.Unmarshal(task.(json.RawMessage), &t); err != nil {
		return nil, err
	}
	const adapter = `{"vendor":"apple","architecture":"metal-3","fallback":false,"f16":false,"timestamps":true}`
	if t.Op == "adapter" {
		return json.RawMessage(`{"adapter":` + adapter + `}`), nil
	}
	secs := strings.TrimSuffix(strings.Repeat("0.01,", t.Repeats), ",")
	return json.RawMessage(fmt.Sprintf(`{"adapter":%s,"results":[{"kernel":%q,"n":%d,"method":"timestamp-query","batch":1,"seconds":[%s],"rel_error":1e-7,"checked":%d}]}`,
		adapter, t.Kernels[0].Name, t.N, secs, t.N*t.N)), nil
}

// A run on a worker hands its browser tasks to the page behind it through the server (the job's ask
// subject), so a webgpu kernel runs in the learner's browser wherever the run's CPU part ran; without
// a page it gets the same note as on the server's own machine.
func TestWorkerAsksThePage(t *testing.T) {
	c := startCluster(t, Config{})
	startWorker(t, c, "alpha", false)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	src := "kernels: [ikj, webgpu-tiled]\nsizes: [16]\nrepeats: 2\n"
	env := cells.Env{Kernels: kernels.CPU(), Limits: harness.DefaultLimits()}
	k, _ := cells.Lookup(testKinds(env), "matmul")
	r, err := cells.Parse(k, "", cells.Cell{ID: "c", Source: src})
	if err != nil {
		t.Fatal(err)
	}
	slot, err := c.Acquire(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	page := &asker{}
	err = slot.Execute(ctx, server.Job{Kind: "matmul", Lesson: "l", Cell: cells.Cell{ID: "c", Source: src}}, r, page)
	slot.Release()
	if err != nil {
		t.Fatal(err)
	}
	if page.tasks != 2 || page.ranOn() != "alpha" || !page.has("row browser [webgpu-tiled 16") || !page.has("row results [ikj 16") ||
		!page.has("table results Measured on the machine alpha just now") {
		t.Errorf("%d tasks, events %q", page.tasks, page.events)
	}

	rec, err := execute(ctx, c, "matmul", src)
	if err != nil || !rec.has("note warning: webgpu-tiled: not run: this run has no browser page") {
		t.Errorf("without a page: %v, events %q", err, rec.events)
	}
}

// dn are the names of the tests' deployments (the embedded server's default).
var dn = Names{prefix: DefaultPrefix}
