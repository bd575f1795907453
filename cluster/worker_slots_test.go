package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/gpuplayground/playground/cells"
	"github.com/gpuplayground/playground/gpu/nvidia"
	"github.com/gpuplayground/playground/machine"
	"github.com/gpuplayground/playground/server"
)

// meetWait bounds how long a probe run waits for the others it must meet: past it the run fails
// (rather than the test hanging) saying how many runs it met.
const meetWait = 20 * time.Second

// probe is a test kind for in-process workers (RunWorker) that watches the one-machine rule: each run
// records a clash when it starts beside a measuring run, or as a measuring run beside any run.
// Spec: `name: N` (required), `light: true` (times nothing), `meet: K` (wait, at most meetWait,
// until K runs with meet have arrived: none leaves before, so K of them ran at once; once per probe),
// `hold: true` (run until stopped) or `ms: M` (then end). `flood: F` sends F progress events at
// once past the worker's pacing, as a hostile worker would; `steps: S` sends S steps of a paced run
// (a progress, a frame and a note each, 2 ProgressEvery apart, or `gap_ms: G` ms).
type probe struct {
	mu       sync.Mutex
	heavy    int
	light    int
	maxLight int
	clashes  []string
	started  map[string]chan struct{} // closed when the named run starts
	ended    map[string]chan error    // the named run's result
	changed  chan struct{}            // closed and replaced whenever a run starts, arrives or ends
	arrived  int                      // runs with meet that arrived
}

func newProbe() *probe {
	return &probe{started: map[string]chan struct{}{}, ended: map[string]chan error{}, changed: make(chan struct{})}
}

// kinds is the probe's kind list for a worker.
func (p *probe) kinds(cells.Env) []cells.Kind { return []cells.Kind{probeKind{p}} }

// startedCh and endedCh return the named run's channels, made on first use.
func (p *probe) startedCh(name string) chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.startedLocked(name)
}

func (p *probe) startedLocked(name string) chan struct{} {
	if p.started[name] == nil {
		p.started[name] = make(chan struct{})
	}
	return p.started[name]
}

// waitStarted waits until the run named name has started, failing the test after a minute (its
// run may have failed before it started, or never been placed).
func (p *probe) waitStarted(t *testing.T, name string) {
	t.Helper()
	select {
	case <-p.startedCh(name):
	case <-time.After(time.Minute):
		t.Fatalf("the run %s did not start within a minute", name)
	}
}

func (p *probe) endedCh(name string) chan error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ended[name] == nil {
		p.ended[name] = make(chan error, 1)
	}
	return p.ended[name]
}

func (p *probe) report() (clashes []string, maxLight int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.clashes...), p.maxLight
}

type probeKind struct{ p *probe }

type probeSpec struct {
	cells.Common `yaml:",inline"`
	Name         string `yaml:"name"`
	Light        bool   `yaml:"light"`
	Meet         int    `yaml:"meet"`
	Hold         bool   `yaml:"hold"`
	MS           int    `yaml:"ms"`
	Flood        int    `yaml:"flood"`
	Steps        int    `yaml:"steps"`
	GapMS        int    `yaml:"gap_ms"` // between steps; default 2 × cells.ProgressEvery
}

func (probeKind) Name() string   { return "probe" }
func (probeKind) Script() string { return "export default {};\n" }
func (k probeKind) Parse(c cells.Cell) (cells.Run, error) {
	var s probeSpec
	if err := cells.Decode(c.Source, &s); err != nil {
		return nil, err
	}
	if s.Name == "" {
		return nil, errors.New("probe: name is required")
	}
	return probeRun{p: k.p, s: s}, nil
}

type probeRun struct {
	p *probe
	s probeSpec
}

func (probeRun) Estimate() time.Duration { return time.Second }
func (r probeRun) Exclusive() bool       { return !r.s.Light }

func (r probeRun) Run(ctx context.Context, e cells.Emitter) (err error) {
	p := r.p
	p.mu.Lock()
	switch {
	case !r.s.Light && p.heavy+p.light > 0:
		p.clashes = append(p.clashes, fmt.Sprintf("measuring run %s started beside %d measuring and %d other runs", r.s.Name, p.heavy, p.light))
	case r.s.Light && p.heavy > 0:
		p.clashes = append(p.clashes, fmt.Sprintf("run %s started beside a measuring run", r.s.Name))
	}
	if r.s.Light {
		p.light++
		p.maxLight = max(p.maxLight, p.light)
	} else {
		p.heavy++
	}
	close(p.startedLocked(r.s.Name))
	close(p.changed)
	p.changed = make(chan struct{})
	p.mu.Unlock()
	ended := p.endedCh(r.s.Name)
	defer func() {
		p.mu.Lock()
		if r.s.Light {
			p.light--
		} else {
			p.heavy--
		}
		close(p.changed)
		p.changed = make(chan struct{})
		p.mu.Unlock()
		ended <- err
	}()
	e.Progress(0, 1)
	if r.s.Flood > 0 {
		flood(e, r.s.Flood)
	}
	gap := 2 * cells.ProgressEvery
	if r.s.GapMS > 0 {
		gap = time.Duration(r.s.GapMS) * time.Millisecond
	}
	for i := range r.s.Steps {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(gap):
		}
		e.Progress(i+1, r.s.Steps+1)
		e.Frames(i)
		e.Note("info", fmt.Sprint("step ", i))
	}
	if r.s.Meet > 0 {
		p.mu.Lock()
		p.arrived++
		close(p.changed)
		p.changed = make(chan struct{})
		p.mu.Unlock()
		deadline := time.After(meetWait)
		for {
			p.mu.Lock()
			n, ch := p.arrived, p.changed
			p.mu.Unlock()
			if n >= r.s.Meet {
				break
			}
			select {
			case <-ch:
			case <-deadline:
				return fmt.Errorf("run %s: %d of %d runs had arrived together after %s", r.s.Name, n, r.s.Meet, meetWait)
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
	wait := time.After(time.Duration(r.s.MS) * time.Millisecond)
	if r.s.Hold {
		wait = nil
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-wait:
	}
	e.Progress(1, 1)
	return nil
}

// flood sends n progress events to the emitter behind e's pacing (the worker's NATS publisher), as
// a worker that does not pace its runs' events would: as fast as the NATS server takes them (a
// flush each 1000, so that the server's own connection, in this process, is not kept from its
// pings behind them under -race).
func flood(e cells.Emitter, n int) {
	if p, ok := e.(*cells.Paced); ok {
		e = p.Out
	}
	for i := range n {
		e.Progress(i, n)
		if pub, ok := e.(*publisher); ok && i%1000 == 999 {
			_ = pub.nc.Flush()
		}
	}
}

// startInProcessWorker runs RunWorker in this process with the probe's kind and slots, joined to
// c over loopback, and waits until c knows it; stop ends it (its ctx) and returns RunWorker's error.
func startInProcessWorker(t *testing.T, c *Cluster, name string, slots int, p *probe) (stop func() error) {
	t.Helper()
	return startInProcessWorkerAt(t, c, c.WorkerURL(), name, slots, p)
}

// startInProcessWorkerAt is startInProcessWorker joining at the URL join (a relay to c's port).
func startInProcessWorkerAt(t *testing.T, c *Cluster, join, name string, slots int, p *probe) (stop func() error) {
	t.Helper()
	return startInProcessWorkerWith(t, c, WorkerConfig{Config: machine.Config{Name: name, Slots: slots, Kinds: p.kinds, Devices: func(context.Context) nvidia.Report { return fakeReport(false) }}, Join: join, Token: c.Token(), Prefix: c.names.Prefix(),
		Heartbeat: c.cfg.Heartbeat, Out: io.Discard})
}

// startInProcessWorkerWith is startInProcessWorker with the worker's configuration cfg.
func startInProcessWorkerWith(t *testing.T, c *Cluster, cfg WorkerConfig) (stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- RunWorker(ctx, cfg) }()
	var once sync.Once
	var err error
	stop = func() error {
		once.Do(func() {
			cancel()
			select {
			case err = <-done:
			case <-time.After(time.Minute):
				err = errors.New("RunWorker did not return a minute after its ctx ended")
			}
		})
		return err
	}
	t.Cleanup(func() { _ = stop() })
	waitMachine(t, c, cfg.Name, true)
	return stop
}

// waitMachine waits until the cluster knows (or, with known false, has forgotten) the named worker.
func waitMachine(t *testing.T, c *Cluster, name string, known bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		has := false
		for _, m := range c.Machines() {
			has = has || m.Name == name
		}
		if has == known {
			return
		}
	}
	t.Fatalf("worker %s: known %v after 30 s, want %v", name, !known, known)
}

// executeProbe runs a probe cell through the cluster as the server's queue would.
func executeProbe(ctx context.Context, c *Cluster, p *probe, src string) error {
	return executeProbeTo(ctx, c, p, src, &recorder{})
}

// executeProbeTo is executeProbe, its events to rec.
func executeProbeTo(ctx context.Context, c *Cluster, p *probe, src string, rec *recorder) error {
	r, err := probeKind{p}.Parse(cells.Cell{ID: "c", Source: src})
	if err != nil {
		return err
	}
	slot, err := c.Acquire(ctx, r)
	if err != nil {
		return err
	}
	defer slot.Release()
	return slot.Execute(ctx, server.Job{Kind: "probe", Lesson: "l", Cell: cells.Cell{ID: "c", Source: src}}, r, rec)
}

// ends counts the end events of every job, from the server's side of NATS.
type ends struct {
	mu  sync.Mutex
	n   map[string]int    // job id → end events
	err map[string]string // job id → the last end's error
	sub *nats.Subscription
}

func countEnds(t *testing.T, c *Cluster) *ends {
	t.Helper()
	e := &ends{n: map[string]int{}, err: map[string]string{}}
	sub, err := c.nc.Subscribe(dn.Run("*", "*", "events"), func(m *nats.Msg) {
		var ev event
		if json.Unmarshal(m.Data, &ev) != nil || ev.Type != evEnd {
			return
		}
		id := strings.Split(m.Subject, ".")[3] // playground.run.WORKER.JOB.events
		e.mu.Lock()
		e.n[id]++
		e.err[id] = ev.Error
		e.mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	e.sub = sub
	return e
}

// check reports every job that did not end exactly once, and how many jobs ended.
func (e *ends) check(t *testing.T, c *Cluster, jobs int) {
	t.Helper()
	_ = c.nc.Flush()
	time.Sleep(100 * time.Millisecond) // a late second end would be in flight behind the first
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.n) != jobs {
		t.Errorf("%d jobs sent an end event, want %d", len(e.n), jobs)
	}
	for id, n := range e.n {
		if n != 1 {
			t.Errorf("job %s sent %d end events, want 1", id, n)
		}
	}
}

// waitEnd waits (bounded) until the job with id has sent its end event, and returns its error.
func (e *ends) waitEnd(t *testing.T, id string) string {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		e.mu.Lock()
		n, msg := e.n[id], e.err[id]
		e.mu.Unlock()
		if n > 0 {
			return msg
		}
	}
	t.Fatalf("job %s sent no end event in 30 s", id)
	return ""
}

// A worker's announced slots set how many runs that time nothing the server sends it at once; a
// worker from before the field counts as 1, an announcement over MaxSlots as MaxSlots. The server
// keeps a remote worker to the one-machine rule as its own, and puts runs that time nothing on a
// machine already running some before an idle one, which stays free for measuring runs.
func TestWorkerSlotsAccounting(t *testing.T) {
	c, err := Start(context.Background(), Config{Heartbeat: time.Hour}) // announcements by hand, never stale
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	hello := func(m Machine) {
		data, _ := json.Marshal(m)
		c.hello(&nats.Msg{Subject: dn.Hello() + m.ID, Data: data})
	}
	// A class no page or cell could name (a worker on an external server, say) is dropped.
	hello(Machine{ID: "odd", Name: "odd", Class: "Lab <b>"})
	hello(Machine{ID: "even", Name: "even", Class: "lab-2"})
	if got := c.ListMachines(); len(got) != 2 || got[0].Name != "odd" || got[0].Class != "" || got[1].Class != "lab-2" {
		t.Errorf("machines %+v, want odd without a class and even of class lab-2", got)
	}
	for _, tt := range []struct{ announced, want int }{{0, 1}, {-4, 1}, {1, 1}, {3, 3}, {MaxSlots, MaxSlots}, {1 << 30, MaxSlots}} {
		id := fmt.Sprint("cap-", tt.announced)
		hello(Machine{ID: id, Name: id, Slots: tt.announced})
		c.mu.Lock()
		got := c.workers[id].gate.Slots()
		c.mu.Unlock()
		if got != tt.want {
			t.Errorf("a worker announcing %d slots gets %d, want %d", tt.announced, got, tt.want)
		}
	}
	c.mu.Lock()
	for id := range c.workers {
		delete(c.workers, id)
	}
	c.mu.Unlock()

	hello(Machine{ID: "a", Name: "a", Slots: 2})
	hello(Machine{ID: "b", Name: "b", Slots: 2})
	on := func(s server.Slot) string { return s.(*slot).w.m.ID }
	l1, ok1, _, _ := c.TryAcquire(lightRun{})
	l2, ok2, _, _ := c.TryAcquire(lightRun{})
	if !ok1 || !ok2 {
		t.Fatalf("two runs that time nothing on two workers of 2 slots: %v %v", ok1, ok2)
	}
	if on(l1) != on(l2) {
		t.Errorf("two runs that time nothing went to %s and %s, want the same machine (it had a free slot)", on(l1), on(l2))
	}
	h, ok, _, _ := c.TryAcquire(heavyRun{})
	if !ok || on(h) == on(l1) {
		t.Fatalf("a measuring run with one idle worker: ok %v", ok)
	}
	if _, ok, drain, _ := c.TryAcquire(lightRun{}); ok || drain {
		t.Errorf("a third run that times nothing (slots full, the other worker measuring): ok %v, drain %v; want false, false", ok, drain)
	}
	if _, ok, drain, _ := c.TryAcquire(heavyRun{}); ok || !drain {
		t.Errorf("a second measuring run: ok %v, drain %v; want false, true (a worker busy only with runs that time nothing)", ok, drain)
	}
	h.Release()
	l1.Release()
	if _, ok, _, _ := c.TryAcquire(heavyRun{}); !ok {
		t.Error("a measuring run did not get the idle worker")
	}
	if _, ok, _, _ := c.TryAcquire(heavyRun{}); ok {
		t.Error("a measuring run started beside a run that times nothing")
	}
	l2.Release()
	if _, ok, _, _ := c.TryAcquire(heavyRun{}); !ok {
		t.Error("a measuring run did not get the worker its last run that times nothing left")
	}
}

// A worker with 2 slots runs two runs that time nothing at the same time (each waits until both run,
// failing rather than hanging if they never do) and never a measuring run beside another run, in a
// burst of both; every job ends with exactly one end event.
func TestWorkerRunsLightRunsTogether(t *testing.T) {
	t.Parallel()
	c := startCluster(t, Config{})
	p := newProbe()
	startInProcessWorker(t, c, "two-slots", 2, p)
	ends := countEnds(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	run := func(src string) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := executeProbe(ctx, c, p, src); err != nil {
				t.Errorf("%q: %v", src, err)
			}
		}()
	}
	run("name: a\nlight: true\nmeet: 2\n")
	run("name: b\nlight: true\nmeet: 2\n")
	wg.Wait()
	jobs := 2
	for i := range 4 {
		run(fmt.Sprintf("name: m%d\nms: 20\n", i))
		run(fmt.Sprintf("name: l%d\nlight: true\nms: 20\n", i))
		jobs += 2
	}
	wg.Wait()
	clashes, maxLight := p.report()
	if len(clashes) > 0 {
		t.Errorf("the one-machine rule broken: %q", clashes)
	}
	if maxLight < 2 {
		t.Errorf("at most %d runs that time nothing ran at once, want 2", maxLight)
	}
	ends.check(t, c, jobs)
}

// giveUpJob gives the job on the worker id up as the server does when a run ends without its end
// (Cluster.giveUp): a put of its key in the bucket of given-up runs.
func giveUpJob(t *testing.T, c *Cluster, id, job string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := c.givenUp.Put(ctx, givenUpKey(id, job), []byte("given up")); err != nil {
		t.Fatal(err)
	}
}

// The worker holds itself to the rule even when sent a measuring job beside a running one, as after a
// server restart (here: both published to its subject by hand): the measuring job waits, then runs.
// The same worker stops a job at its server's cancel and at its own time limit while another runs,
// each with exactly one end event.
func TestWorkerGuardsItself(t *testing.T) {
	t.Parallel()
	c := startCluster(t, Config{})
	p := newProbe()
	startInProcessWorker(t, c, "guarded", 2, p)
	id := c.Machines()[0].ID
	ends := countEnds(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	taken, err := c.nc.SubscribeSync(dn.Run(id, "heavy1", "events"))
	if err != nil {
		t.Fatal(err)
	}
	publish := func(j job) {
		t.Helper()
		data, _ := json.Marshal(j)
		if _, err := c.js.Publish(ctx, dn.Jobs()+id, data); err != nil {
			t.Fatal(err)
		}
	}
	publish(job{ID: "light1", Kind: "probe", Cell: "c", Source: "name: light1\nlight: true\nhold: true\n", TimeoutNS: int64(time.Minute)})
	p.waitStarted(t, "light1")
	publish(job{ID: "heavy1", Kind: "probe", Cell: "c", Source: "name: heavy1\nms: 1\n", TimeoutNS: int64(time.Minute)})
	if _, err := taken.NextMsgWithContext(ctx); err != nil { // taken: the worker has it, beside light1
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond) // time for a worker without the guard to start it (and clash)
	select {
	case <-p.startedCh("heavy1"):
		t.Fatal("the measuring job started while a job that times nothing ran")
	default:
	}
	giveUpJob(t, c, id, "light1")
	if msg := ends.waitEnd(t, "heavy1"); msg != "" {
		t.Errorf("the measuring job after the other ended: %s", msg)
	}
	if msg := ends.waitEnd(t, "light1"); msg != "the run was stopped on guarded" {
		t.Errorf("the cancelled job ended with %q", msg)
	}

	// Two jobs that time nothing: one hits its own time limit, the other is cancelled after it.
	publish(job{ID: "keep", Kind: "probe", Cell: "c", Source: "name: keep\nlight: true\nhold: true\n", TimeoutNS: int64(time.Minute)})
	publish(job{ID: "short", Kind: "probe", Cell: "c", Source: "name: short\nlight: true\nhold: true\n", TimeoutNS: int64(time.Second)})
	if msg := ends.waitEnd(t, "short"); !strings.HasPrefix(msg, "the run hit the 1s time limit on guarded") {
		t.Errorf("the job past its time limit ended with %q", msg)
	}
	select {
	case err := <-p.endedCh("keep"):
		t.Fatalf("the other job ended with it: %v", err)
	default:
	}
	giveUpJob(t, c, id, "keep")
	if msg := ends.waitEnd(t, "keep"); msg != "the run was stopped on guarded" {
		t.Errorf("the cancelled job ended with %q", msg)
	}
	if clashes, _ := p.report(); len(clashes) > 0 {
		t.Errorf("the one-machine rule broken: %q", clashes)
	}
	ends.check(t, c, 4)
}

// A worker that stops (its ctx ends) with two runs going stops both, reports each with one end
// event, says bye and returns; the server's runs end with the worker's error.
func TestWorkerStopsWithSeveralRuns(t *testing.T) {
	c := startCluster(t, Config{})
	p := newProbe()
	stop := startInProcessWorker(t, c, "leaving", 2, p)
	ends := countEnds(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	errs := make(chan error, 2)
	for _, name := range []string{"x", "y"} {
		go func() { errs <- executeProbe(ctx, c, p, "name: "+name+"\nlight: true\nhold: true\n") }()
	}
	p.waitStarted(t, "x")
	p.waitStarted(t, "y")
	if err := stop(); err != nil {
		t.Fatalf("RunWorker: %v", err)
	}
	for range 2 {
		if err := <-errs; err == nil || err.Error() != "the worker on leaving was stopped during the run" {
			t.Errorf("a run on a stopping worker: %v", err)
		}
	}
	waitMachine(t, c, "leaving", false) // its bye
	ends.check(t, c, 2)
}

// When the server restarts, a worker stops the jobs it still runs for the server before (nobody waits
// for their events) once it hears the new one, and runs the new server's measuring run.
func TestWorkerStopsJobsOfServerBeforeRestart(t *testing.T) {
	t.Parallel()
	cfg := Config{Listen: restartableAddr(t), Token: "tok", Heartbeat: loadedHeartbeat}
	c, err := Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	p := newProbe()
	stop := startInProcessWorker(t, c, "survivor", 2, p)
	data, _ := json.Marshal(job{ID: "old", Kind: "probe", Cell: "c", Source: "name: old\nlight: true\nhold: true\n",
		TimeoutNS: int64(10 * time.Minute), Epoch: c.epoch})
	if _, err := c.js.Publish(context.Background(), dn.Jobs()+c.Machines()[0].ID, data); err != nil {
		t.Fatal(err)
	}
	p.waitStarted(t, "old")
	c.Close()

	// The worker rejoins after a reconnect and a heartbeat, which on a loaded machine may take longer
	// than the default settle time: the new server's run waits for it up to a generous deadline.
	cfg.Settle = time.Minute
	c, err = Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	select {
	case err := <-p.endedCh("old"):
		if !errors.Is(err, context.Canceled) {
			t.Errorf("the old server's job ended with %v, want stopped", err)
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("the old server's job still runs two minutes after the new server started")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := executeProbe(ctx, c, p, "name: new\nms: 1\n"); err != nil {
		t.Fatalf("the new server's run: %v", err)
	}
	if clashes, _ := p.report(); len(clashes) > 0 {
		t.Errorf("the one-machine rule broken: %q", clashes)
	}
	// Stopped while its server is up: a worker stopped while its server is gone tries to report
	// its runs and say bye for seconds before it gives up.
	if err := stop(); err != nil {
		t.Errorf("RunWorker: %v", err)
	}
}

// Stopping a worker ends its pending pull for jobs at once, however long the pull may wait (a
// minute here, PullWait): RunWorker returns well within it.
func TestWorkerStopEndsItsPull(t *testing.T) {
	t.Parallel()
	c := startCluster(t, Config{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- RunWorker(ctx, WorkerConfig{Config: machine.Config{Name: "puller", Slots: 1, Kinds: testKinds, Devices: func(context.Context) nvidia.Report { return fakeReport(false) }},
			Join: c.WorkerURL(), Token: c.Token(), Prefix: c.names.Prefix(), Heartbeat: c.cfg.Heartbeat, PullWait: time.Minute, Out: io.Discard})
	}()
	waitMachine(t, c, "puller", true)
	cons, err := c.js.Consumer(ctx, dn.Stream(), consumerName(c.Machines()[0].ID))
	if err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the worker's pull waiting", func() bool {
		info, err := cons.Info(ctx)
		return err == nil && info.NumWaiting == 1
	})
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("RunWorker: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the worker still runs 30 s after it was stopped: it waits out its pull")
	}
}
