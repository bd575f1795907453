package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/gpuplayground/playground/estimate"
	"github.com/gpuplayground/playground/gpu/nvidia"
	"github.com/gpuplayground/playground/harness"
	"github.com/gpuplayground/playground/machine"
	"github.com/gpuplayground/playground/server"
	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"
)

// pageRun sends a run of lesson 01-naps's cell over ws and returns the messages of that run as they
// come.
func pageRun(t *testing.T, ws *websocket.Conn, id, cell, source string) <-chan server.Message {
	t.Helper()
	req := &server.RunRequest{Lesson: "01-naps", Cell: cell, Source: source}
	if err := ws.WriteJSON(server.Message{Type: server.TypeRun, ID: id, RunRequest: req}); err != nil {
		t.Fatal(err)
	}
	out := make(chan server.Message, 100)
	go func() {
		defer close(out)
		for {
			var m server.Message
			if err := ws.ReadJSON(&m); err != nil {
				return
			}
			if m.ID == id {
				out <- m
				if server.Terminal(m.Type) {
					return
				}
			}
		}
	}()
	return out
}

// getJSON decodes GET url into v.
func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("GET %s: %s %s", url, resp.Status, b)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatal(err)
	}
}

// A run that no connected machine can take (no local worker, no worker yet) gets a note saying so
// before anything else, keeps its place in the queue, and the operator's terminal and /api/class say
// so too; once a worker joins, the run runs there.
func TestNoMachineSaysSo(t *testing.T) {
	dir := napLessons(t, "ms: 10\n")
	c := startCluster(t, Config{})
	out := &syncBuffer{}
	addr := serveLessons(t, server.Config{Config: machine.Config{Kinds: testKinds, Devices: func(context.Context) nvidia.Report { return fakeReport(false) }}, LessonsDir: dir, Executor: c, Out: out})
	ws, _, err := websocket.DefaultDialer.Dial("ws://"+addr+"/ws", http.Header{"Origin": {"http://" + addr}})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	_ = ws.SetReadDeadline(time.Now().Add(2 * time.Minute))
	msgs := pageRun(t, ws, "r1", "01-naps-0", "ms: 10\n")
	const want = "no machine is connected that can run this: it needs any machine; connected machines: none"
	for m := range msgs {
		if server.Terminal(m.Type) {
			t.Fatalf("the run ended (%s %s) with no machine connected; want it kept waiting", m.Type, m.Message)
		}
		if m.Type == server.TypeNote {
			if !strings.Contains(m.Note.Message, want) || m.Note.Level != "warning" {
				t.Fatalf("the first note: %s %q, want a warning with %q", m.Note.Level, m.Note.Message, want)
			}
			break
		}
	}
	waitUntil(t, "the operator's line", func() bool { return strings.Contains(out.String(), "waits: "+want) })
	var class struct {
		Waiting []struct {
			NoMachine string `json:"no_machine"`
		}
	}
	getJSON(t, "http://"+addr+"/api/class", &class)
	if len(class.Waiting) != 1 || !strings.Contains(class.Waiting[0].NoMachine, want) {
		t.Errorf("/api/class waiting: %+v, want one run with %q", class.Waiting, want)
	}
	startWorker(t, c, "late", false)
	for m := range msgs {
		if server.Terminal(m.Type) && m.Type != server.TypeDone {
			t.Errorf("the run ended %s %q once a worker joined, want done", m.Type, m.Message)
		}
	}
}

// When JetStream refuses a job (here the job stream's limits: at most 1 byte), the run ends with
// an error that says so, and the operator's terminal gets the refusal with what to do, once.
func TestJetStreamRefusalTold(t *testing.T) {
	out := &syncBuffer{}
	c := startCluster(t, Config{Out: out})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	info, err := c.stream.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cfg := info.Config
	cfg.MaxBytes, cfg.Discard = 1, jetstream.DiscardNew
	if _, err := c.js.UpdateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	startWorker(t, c, "w", false)
	for range 2 {
		_, err := execute(ctx, c, "nap", "ms: 10\n")
		if err == nil || !strings.Contains(err.Error(), "the NATS server's JetStream refused it") {
			t.Errorf("a run JetStream refused: %v", err)
		}
	}
	if n := strings.Count(out.String(), "JetStream refused a job: "); n != 1 || !strings.Contains(out.String(), "What to do: the job stream's limits are reached") {
		t.Errorf("the operator got %q, want the refusal once with what to do", out.String())
	}
}

// GET /api/machines lists every machine for the operator: what it is, its slots, the run on it now
// with its student and cell while it runs, its last heartbeat, and its runs done and errors after.
func TestMachinesListedLive(t *testing.T) {
	dir := napLessons(t, "ms: 600000\n")
	c := startCluster(t, Config{})
	addr := serveLessons(t, server.Config{Config: machine.Config{Kinds: testKinds, Devices: func(context.Context) nvidia.Report { return fakeReport(false) }}, LessonsDir: dir, Executor: c, Out: io.Discard})
	startWorker(t, c, "w1", false, envClass+"=lab")
	ws, _, err := websocket.DefaultDialer.Dial("ws://"+addr+"/ws", http.Header{"Origin": {"http://" + addr}})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	_ = ws.SetReadDeadline(time.Now().Add(2 * time.Minute))
	msgs := pageRun(t, ws, "r1", "01-naps-0", "ms: 600000\n")
	var list struct{ Machines []server.MachineInfo }
	waitUntil(t, "the run on w1", func() bool {
		list.Machines = nil
		getJSON(t, "http://"+addr+"/api/machines", &list)
		return len(list.Machines) == 1 && list.Machines[0].Busy == 1
	})
	m := list.Machines[0]
	if m.Name != "w1" || m.Class != "lab" || m.Slots < 1 || len(m.Runs) != 1 || m.Runs[0].Cell != "01-naps-0" || m.Runs[0].Student == "" ||
		m.LastHeartbeat.IsZero() || !strings.Contains(m.Summary, "no GPU") {
		t.Errorf("w1 while it runs: %+v", m)
	}
	if err := ws.WriteJSON(server.Message{Type: server.TypeCancel, ID: "r1"}); err != nil {
		t.Fatal(err)
	}
	for range msgs {
	}
	waitUntil(t, "the run's end on w1", func() bool {
		list.Machines = nil
		getJSON(t, "http://"+addr+"/api/machines", &list)
		return len(list.Machines) == 1 && list.Machines[0].Done == 1
	})
	if m := list.Machines[0]; m.Busy != 0 || len(m.Runs) != 0 || m.Errors != 0 {
		t.Errorf("w1 after its run was cancelled: %+v, want idle, no error", m)
	}
}

// When this server's own connection to the NATS server drops (a relay between them, cut), a run on
// a worker ends with an error that blames the connection, not the worker; the operator's terminal
// says so; the worker, still connected, is not dropped, and runs again once the connection is back.
func TestNATSLossBlamesTheConnection(t *testing.T) {
	t.Parallel()
	opts := &natsserver.Options{Host: "127.0.0.1", Port: natsserver.RANDOM_PORT, JetStream: true, StoreDir: t.TempDir(),
		NoLog: true, NoSigs: true, Users: []*natsserver.User{{Username: WorkerUser, Password: "dept"}}}
	ns, err := natsserver.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	ns.Start()
	t.Cleanup(ns.Shutdown)
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatal("external NATS server not ready")
	}
	relay := newRelay(t, ns.Addr().String())
	out := &syncBuffer{}
	c, err := Start(context.Background(), Config{URL: "nats://" + WorkerUser + ":dept@" + strings.TrimPrefix(relay.URL(), "nats://"),
		Heartbeat: testHeartbeat, Settle: -1, Out: out})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	p := newProbe()
	startInProcessWorkerAt(t, c, "nats://"+WorkerUser+":dept@"+ns.Addr().String(), "direct", 1, p)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ended := make(chan error, 1)
	go func() { ended <- executeProbe(ctx, c, p, "name: long\nhold: true\n") }()
	select {
	case <-p.startedCh("long"):
	case <-ctx.Done():
		t.Fatal("the run did not start")
	}
	relay.cut()
	err = <-ended
	if err == nil || !strings.Contains(err.Error(), "this server lost its connection to the NATS server") || !strings.Contains(err.Error(), "The machine is not to blame") || strings.Contains(err.Error(), "stopped answering") {
		t.Errorf("the run's error: %v, want the NATS connection blamed", err)
	}
	waitUntil(t, "the operator's line", func() bool { return strings.Contains(out.String(), "lost the connection to the NATS server") })
	relay.mend()
	waitUntil(t, "the reconnection", func() bool { return strings.Contains(out.String(), "reconnected to the NATS server after") })
	if len(c.Machines()) != 1 {
		t.Errorf("machines after the reconnection: %+v, want the worker kept", c.Machines())
	}
	if err := executeProbe(ctx, c, p, "name: again\nms: 1\n"); err != nil {
		t.Errorf("a run after the reconnection: %v", err)
	}
}

// A worker that heartbeats keeps the job it runs however long it runs (in-progress acknowledgements
// every heartbeat), well past the consumer's ackWait: the job is neither delivered again nor lost.
// The worker beats every 400 ms, the most at which ackWait is its least, 2 s (five beats, as at
// any heartbeat): the test waits three of them, 6 s, not 7.5 s as at testHeartbeat.
func TestLiveWorkerKeepsItsJob(t *testing.T) {
	t.Parallel()
	c := startCluster(t, Config{})
	p := newProbe()
	const beat = 400 * time.Millisecond
	startInProcessWorkerWith(t, c, WorkerConfig{Config: machine.Config{Name: "alive", Slots: 1, Kinds: p.kinds, Devices: func(context.Context) nvidia.Report { return fakeReport(false) }},
		Join: c.WorkerURL(), Token: c.Token(), Prefix: c.names.Prefix(), Heartbeat: beat, Out: io.Discard})
	id := c.Machines()[0].ID
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ended := make(chan error, 1)
	go func() { ended <- executeProbe(ctx, c, p, "name: long\nhold: true\n") }()
	p.waitStarted(t, "long")
	cons, err := c.js.Consumer(ctx, dn.Stream(), consumerName(id))
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * ackWait(beat)) // three times as long as a silent worker keeps a job
	info, err := cons.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.NumAckPending != 1 || info.NumRedelivered != 0 {
		t.Errorf("after 3 × ackWait the running job: %d pending, %d redelivered; want it still the worker's", info.NumAckPending, info.NumRedelivered)
	}
	cancel()
	<-ended
}

// A worker restarted on the same machine (killed, started again with the same name) replaces its
// old entry at once, before the old one could fall silent for three heartbeats (here: never, the
// server's heartbeat being an hour), keeps its name, and the old worker's consumer is deleted.
func TestRestartedWorkerReplacesItsEntry(t *testing.T) {
	t.Parallel()
	out := &syncBuffer{}
	c, err := Start(context.Background(), Config{Listen: "127.0.0.1:0", Heartbeat: time.Hour, Settle: -1, Out: out})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	first := startWorker(t, c, "phoenix", false)
	old := c.Machines()[0].ID
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := c.js.Consumer(ctx, dn.Stream(), consumerName(old)); err != nil {
		t.Fatalf("the first worker's consumer: %v", err)
	}
	_ = first.Process.Kill()
	_ = first.Wait()
	startWorker(t, c, "phoenix", false)
	waitUntil(t, "the restarted worker", func() bool {
		ms := c.Machines()
		return len(ms) == 1 && ms[0].ID != old
	})
	if ms := c.Machines(); ms[0].Name != "phoenix" {
		t.Errorf("the restarted worker is named %q, want phoenix", ms[0].Name)
	}
	waitUntil(t, "the old consumer's deletion", func() bool {
		_, err := c.js.Consumer(ctx, dn.Stream(), consumerName(old))
		return errors.Is(err, jetstream.ErrConsumerNotFound)
	})
	if !strings.Contains(out.String(), "machine restarted: phoenix (worker ") {
		t.Errorf("the operator got %q, want the restart told", out.String())
	}
	if _, err := execute(ctx, c, "nap", "ms: 10\n"); err != nil {
		t.Errorf("a run on the restarted worker: %v", err)
	}
}

// Two fronts, each with its own data directory and worker, share one NATS server (a nats-server
// started by the test: startNATSServer): each has its own names
// (derived from its data directory's id, kept across restarts), the second's start neither purges
// nor stops the first's running job, each lists only its own worker, and a run on the second goes
// to its own worker.
func TestTwoFrontsShareOneNATSServer(t *testing.T) {
	t.Parallel()
	url := "nats://" + WorkerUser + ":dept@" + startNATSServer(t, natsConf(t))
	front := func(dir string) *Cluster {
		t.Helper()
		c, err := Start(context.Background(), Config{URL: url, DataDir: dir, Heartbeat: testHeartbeat, Settle: -1, Out: io.Discard})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		return c
	}
	dirA, dirB := t.TempDir(), t.TempDir()
	if again, err := derivedPrefix(dirA); err != nil || !strings.HasPrefix(again, "pg-") {
		t.Fatalf("the derived prefix: %q, %v", again, err)
	}
	a := front(dirA)
	if again, _ := derivedPrefix(dirA); again != a.names.Prefix() {
		t.Errorf("the prefix of one data directory changed: %q, then %q", a.names.Prefix(), again)
	}
	pa, pb := newProbe(), newProbe()
	startInProcessWorkerAt(t, a, url, "wa", 1, pa)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	actx, stopA := context.WithCancel(ctx)
	ended := make(chan error, 1)
	go func() { ended <- executeProbe(actx, a, pa, "name: long\nhold: true\n") }()
	pa.waitStarted(t, "long")

	b := front(dirB)
	if a.names.Prefix() == b.names.Prefix() || a.names.Stream() == b.names.Stream() {
		t.Fatalf("two data directories share the names %q", a.names.Prefix())
	}
	startInProcessWorkerAt(t, b, url, "wb", 1, pb)
	if err := executeProbe(ctx, b, pb, "name: b1\nms: 1\n"); err != nil {
		t.Errorf("a run on the second front: %v", err)
	}
	select {
	case err := <-ended:
		t.Fatalf("the first front's run ended when the second started: %v", err) // nothing left to stop
	default:
	}
	for _, tt := range []struct {
		c    *Cluster
		want string
	}{{a, "wa"}, {b, "wb"}} {
		if ms := tt.c.Machines(); len(ms) != 1 || ms[0].Name != tt.want {
			t.Errorf("front %s lists %+v, want only %s", tt.c.names.Prefix(), ms, tt.want)
		}
	}
	info, err := a.stream.Info(ctx)
	if err != nil || info.Config.Name != a.names.Stream() {
		t.Errorf("the first front's stream: %v, %+v", err, info)
	}
	stopA()
	if err := <-ended; !errors.Is(err, context.Canceled) {
		t.Errorf("the first front's run, stopped: %v", err)
	}
}

// The sample configuration docs/nats-classes.conf (docs/several-machines.md, "Several classes on one NATS server")
// starts a nats-server (startNATSServer: on a free port and a temporary store): each class's front
// starts with its account's user and its prefix, each class's worker joins with its limited user,
// and a run of each class runs on its own worker.
func TestNATSClassesConf(t *testing.T) {
	t.Parallel()
	addr := startNATSServer(t, "../docs/nats-classes.conf")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, class := range []string{"a", "b"} {
		url := func(user string) string {
			return "nats://" + user + "-" + class + ":change-me-" + user + "-" + class + "@" + addr
		}
		c, err := Start(context.Background(), Config{URL: url("front"), Prefix: "class-" + class, Heartbeat: testHeartbeat, Settle: -1, Out: io.Discard})
		if err != nil {
			t.Fatalf("class %s's front: %v", class, err)
		}
		t.Cleanup(c.Close)
		info, err := c.js.AccountInfo(ctx)
		if err != nil || info.Limits.MaxStore != 1<<30 || info.Limits.MaxMemory != 64<<20 || info.Limits.MaxConsumers != 1010 || info.Streams != 2 {
			t.Errorf("class %s's account: %v, %+v; want the sample's limits and its two streams", class, err, info)
		}
		p := newProbe()
		startInProcessWorkerAt(t, c, url("worker"), "w-"+class, 1, p)
		if err := executeProbe(ctx, c, p, "name: r\nms: 1\n"); err != nil {
			t.Errorf("class %s's run: %v", class, err)
		}
	}
}

// scaledRates are estimate.Defaults with every CPU kernel f times slower.
func scaledRates(f float64) *estimate.Rates {
	r := *estimate.Defaults()
	r.Source, r.Kernels = "calibrated", map[string][]estimate.Point{}
	for k, pts := range estimate.Defaults().Kernels {
		for _, p := range pts {
			r.Kernels[k] = append(r.Kernels[k], estimate.Point{N: p.N, SPF: p.SPF * f})
		}
	}
	return &r
}

// Estimates come from the machines that can take the run: a worker reports its rates when it joins,
// and a run over the time limit on the only machine of its class (a slow one) is refused up front,
// while the same run on a class whose machine is fast is not.
// The front itself runs nothing and its own rates play no part.
func TestEstimateOnTheMachinesThatCanTakeIt(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	lesson := "---\ntitle: M\nsummary: m\norder: 1\n---\n\n# M\n\n```matmul\nkernels: [naive]\nsizes: [256]\nrepeats: 1\n```\n"
	if err := os.WriteFile(dir+"/01-naps.md", []byte(lesson), 0o644); err != nil {
		t.Fatal(err)
	}
	devices := func(context.Context) nvidia.Report { return fakeReport(false) }
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	front := machine.New(ctx, machine.Config{Kinds: testKinds, Devices: devices})
	front.Env.Rates.Set(scaledRates(1e9)) // the cluster's own machine: its rates price no worker's run
	c := startCluster(t, Config{Machine: front})
	// The server's own rates, slow enough that the run would be refused on them (over 30 s), not so
	// slow that the lesson's cell fails its check at load (against the default 120 s).
	slowServer := scaledRates(1e3)
	for _, w := range []struct {
		name  string
		speed float64
	}{{"slow", 1e6}, {"fast", 1}} {
		wctx, stop := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			done <- RunWorker(wctx, WorkerConfig{Config: machine.Config{Name: w.name, Kinds: testKinds, Devices: devices}, Join: c.WorkerURL(), Token: c.Token(), Class: w.name,
				Heartbeat: testHeartbeat, Out: io.Discard, rates: scaledRates(w.speed)})
		}()
		t.Cleanup(func() { stop(); <-done })
		waitMachine(t, c, w.name, true)
	}
	own := machine.New(ctx, machine.Config{Kinds: testKinds, Devices: devices})
	own.Env.Rates.Set(slowServer)
	addr := serveLessons(t, server.Config{Config: machine.Config{Kinds: testKinds, Limits: harness.Limits{RunTimeout: 30 * time.Second}}, LessonsDir: dir, Executor: c, Machine: own, Out: io.Discard})
	ws, _, err := websocket.DefaultDialer.Dial("ws://"+addr+"/ws", http.Header{"Origin": {"http://" + addr}})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	_ = ws.SetReadDeadline(time.Now().Add(2 * time.Minute))
	src := "kernels: [naive]\nsizes: [256]\nrepeats: 1\n"
	for _, tt := range []struct{ class, want string }{
		{"slow", "error this run is estimated to take about"},
		{"fast", "done"},
	} {
		var end string
		for m := range pageRun(t, ws, "r-"+tt.class, "01-naps-0", src+classKey(tt.class)) {
			if server.Terminal(m.Type) {
				end = m.Type + " " + m.Message
			}
		}
		if !strings.HasPrefix(end, tt.want) {
			t.Errorf("on class %q: %q, want %q…", tt.class, end, tt.want)
		}
		// A refused run's prices, and those of the smaller runs priced to offer instead, are not
		// kept: they would push queued runs' out of the book.
		c.mu.Lock()
		kept := len(c.prices.runs)
		c.mu.Unlock()
		if tt.class == "slow" && kept != 0 {
			t.Errorf("after the refused run the cluster keeps the prices of %d runs, want none", kept)
		}
	}
}

// classKey is a cell's machine: line for class, or nothing for "".
func classKey(class string) string {
	if class == "" {
		return ""
	}
	return "machine: " + class + "\n"
}
