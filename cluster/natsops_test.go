package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	"github.com/gpuplayground/playground/gpu/nvidia"
	"github.com/gpuplayground/playground/machine"
	"github.com/gpuplayground/playground/server"
)

// startDeptNATS starts an in-process NATS server with JetStream on a loopback port, standing for a
// department's (-nats URL), with the user worker (password dept); it returns its host:port.
func startDeptNATS(t *testing.T) string {
	t.Helper()
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
	return ns.Addr().String()
}

// The front's path to the NATS server goes silent (a relay between them turns black hole: its TCP
// connections stay open, nothing goes through): the front hears no worker, yet drops none and blames
// none. Its pings go unanswered, its connection closes as stale, and the run on the worker ends
// blaming the connection, as a hard cut does; the machine's error count stays 0. Once the path is
// back the worker is still listed and runs again.
func TestSilentNATSLossBlamesTheConnection(t *testing.T) {
	t.Parallel()
	relay, out, c, p := frontBehindRelay(t, testPing)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ended := make(chan error, 1)
	rec := &recorder{}
	go func() { ended <- executeProbeTo(ctx, c, p, "name: long\nhold: true\n", rec) }()
	// Its first event at the front: the front has its job's acknowledgement, and follows it.
	waitUntil(t, "the run's first event at the front", func() bool { return rec.has("progress 0/1") })
	silent := time.Now()
	relay.blackHole(true)
	var err error
	select {
	case err = <-ended:
	case <-ctx.Done():
		t.Fatal("the run did not end while the front's path to NATS was silent")
	}
	t.Logf("the run ended %v after the path went silent (pings every %v): %v", time.Since(silent).Round(time.Millisecond), testPing, err)
	if err == nil || !strings.Contains(err.Error(), "this server lost its connection to the NATS server") || !strings.Contains(err.Error(), "went silent") || strings.Contains(err.Error(), "stopped answering") {
		t.Errorf("the run's error: %v, want the silent NATS connection blamed", err)
	}
	if strings.Contains(out.String(), "machine left") {
		t.Errorf("the front dropped the worker for the silence of its own connection:\n%s", out)
	}
	if !strings.Contains(out.String(), fmt.Sprintf("lost the connection to the NATS server (the NATS server answered none of %d pings %s apart", MaxPingsOut+1, testPing)) {
		t.Errorf("the operator's terminal does not blame the silent connection:\n%s", out)
	}
	relay.blackHole(false)
	waitUntil(t, "the reconnection", func() bool { return strings.Contains(out.String(), "reconnected to the NATS server after") })
	if ms := c.Machines(); len(ms) != 1 || ms[0].Name != "wA" {
		t.Errorf("machines after the reconnection: %+v, want wA kept", ms)
	}
	if err := executeProbe(ctx, c, p, "name: again\nms: 1\n"); err != nil {
		t.Errorf("a run after the reconnection: %v", err)
	}
	if ms := c.ListMachines(); len(ms) != 1 || ms[0].Done != 2 || ms[0].Errors != 0 {
		t.Errorf("the machine's counts: %+v, want 2 runs done and no error of the machine's", ms)
	}
}

// A machine's counts on /class count its own faults only, and survive its rejoin: a run that ended
// for this server's lost NATS connection is no error of the machine's, and a worker that left and
// joined again (a restart: a new id, the same name, host and address) keeps its counts.
func TestMachineCountsSurviveARejoin(t *testing.T) {
	t.Parallel()
	c := startCluster(t, Config{})
	p := newProbe()
	stop := startInProcessWorker(t, c, "wA", 1, p)
	c.mu.Lock()
	var w *worker
	for _, x := range c.workers {
		w = x
	}
	c.mu.Unlock()
	ctx := context.Background()
	c.tracking(ctx, w, server.Job{Run: 1})(errors.New("the machine's compiler crashed"))
	c.tracking(ctx, w, server.Job{Run: 2})(natsLostError{machine: "wA", since: time.Now()})
	c.tracking(ctx, w, server.Job{Run: 3})(nil)
	if ms := c.ListMachines(); len(ms) != 1 || ms[0].Done != 3 || ms[0].Errors != 1 {
		t.Fatalf("the counts: %+v, want 3 runs done, 1 error of the machine's", ms)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	waitMachine(t, c, "wA", false)
	startInProcessWorker(t, c, "wA", 1, p)
	if ms := c.ListMachines(); len(ms) != 1 || ms[0].Name != "wA" || ms[0].Done != 3 || ms[0].Errors != 1 {
		t.Errorf("the counts after the rejoin: %+v, want wA's 3 runs done and 1 error kept", ms)
	}
}

// A holder of the worker token floods the embedded server's port with connections, each with a new
// key, that never join (200, at once, none reconnecting): the connections not joined are cut back
// to maxPendingConns, the oldest closed first, and a real worker still joins and runs a run.
func TestWorkerConnectionFlood(t *testing.T) {
	t.Parallel()
	c := startCluster(t, Config{Token: "tok"})
	const flood = 200
	var closed atomic.Int32
	for range flood {
		kp, id := newKey(t)
		nc, err := nats.Connect(c.WorkerURL(), nats.UserInfo(WorkerUser, "tok"), nats.Nkey(id, kp.Sign), nats.NoReconnect(),
			nats.ClosedHandler(func(*nats.Conn) { closed.Add(1) }))
		if err != nil {
			continue // refused at once: as good
		}
		t.Cleanup(nc.Close)
	}
	waitUntil(t, "the flood cut back", func() bool { return c.ns.NumClients() <= maxPendingConns+1 }) // and this server's own
	t.Logf("%d of %d flooding connections closed; %d clients left", closed.Load(), flood, c.ns.NumClients())
	p := newProbe()
	startInProcessWorker(t, c, "real", 1, p)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := executeProbe(ctx, c, p, "name: r\nms: 1\n"); err != nil {
		t.Errorf("a run on the real worker after the flood: %v", err)
	}
	if got := len(c.Machines()); got != 1 {
		t.Errorf("%d machines, want the real worker alone", got)
	}
}

// A connection to the workers' port that never authenticates is closed after AuthTimeout, with
// NATS's "Authentication Timeout"; the embedded server pings its clients as the clients ping it.
func TestUnauthenticatedConnectionDropped(t *testing.T) {
	t.Parallel()
	c := startCluster(t, Config{})
	conn, err := net.Dial("tcp", strings.TrimPrefix(c.WorkerURL(), "nats://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	start := time.Now()
	_ = conn.SetReadDeadline(time.Now().Add(time.Minute)) // generous: the server closes it long before
	got, err := io.ReadAll(conn)
	t.Logf("closed after %v (AuthTimeout %v s)", time.Since(start).Round(time.Millisecond), AuthTimeout)
	if err != nil || !strings.Contains(string(got), "Authentication Timeout") {
		t.Errorf("the server sent %q (%v), want it to close the connection for an authentication timeout", got, err)
	}
	cfg, err := Config{Listen: "127.0.0.1:0"}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	o, err := (&Cluster{cfg: cfg, names: dn}).embeddedOptions("x")
	if err != nil {
		t.Fatal(err)
	}
	_ = os.RemoveAll(o.StoreDir)
	if o.AuthTimeout != AuthTimeout || o.PingInterval != PingInterval || o.MaxPingsOut != MaxPingsOut || o.MaxConn != MaxNATSConns {
		t.Errorf("the embedded server's auth timeout %v s, pings every %v, %d out, %d connections; want %v s, %v, %d, %d",
			o.AuthTimeout, o.PingInterval, o.MaxPingsOut, o.MaxConn, AuthTimeout, PingInterval, MaxPingsOut, MaxNATSConns)
	}
}

// A front keeps the prefix it was given in its data directory: started again without
// -nats-prefix, it uses the same names (and says so), so its workers are not stranded; a prefix
// given again replaces the kept one.
func TestFrontKeepsItsPrefix(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	start := func(prefix string) (string, string) {
		t.Helper()
		out := &syncBuffer{}
		c, err := Start(context.Background(), Config{DataDir: dir, Prefix: prefix, Heartbeat: testHeartbeat, Out: out})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		return c.names.Prefix(), out.String()
	}
	if got, _ := start("dept-a"); got != "dept-a" {
		t.Fatalf("given dept-a, the prefix is %q", got)
	}
	got, out := start("")
	if got != "dept-a" || !strings.Contains(out, "the NATS names' prefix is dept-a, kept in") {
		t.Errorf("restarted without -nats-prefix: %q, told %q; want dept-a kept, and said", got, out)
	}
	if got, _ := start("dept-b"); got != "dept-b" {
		t.Errorf("given dept-b: %q", got)
	}
	if got, _ := start(""); got != "dept-b" {
		t.Errorf("restarted again without -nats-prefix: %q, want dept-b", got)
	}
	dir = t.TempDir()
	if got, _ := start(""); got != DefaultPrefix {
		t.Errorf("a new data directory's prefix: %q, want %q", got, DefaultPrefix)
	}
}

// On a NATS server whose worker users may use their class's names only (docs/nats-classes.conf), a
// worker started without -nats-prefix, or with another class's, stops with an error that says what
// to pass, rather than printing permissions violations for ever.
func TestRefusedPrefixStopsTheWorker(t *testing.T) {
	addr := startNATSServer(t, "../docs/nats-classes.conf")
	for _, prefix := range []string{"", "class-b"} {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		out := &syncBuffer{}
		err := RunWorker(ctx, WorkerConfig{Config: machine.Config{Name: "wa", Slots: 1, Kinds: testKinds, Devices: func(context.Context) nvidia.Report { return fakeReport(false) }}, Join: "nats://worker-a:change-me-worker-a@" + addr, Prefix: prefix, Heartbeat: testHeartbeat, Out: out})
		cancel()
		if err == nil || !strings.Contains(err.Error(), "refuses this worker the names of the prefix") || !strings.Contains(err.Error(), "give -nats-prefix") {
			t.Errorf("a worker of prefix %q on class a's user: %v, want it stopped saying which -nats-prefix to give", prefix, err)
		}
		if strings.Contains(out.String(), "worker wa joined") {
			t.Errorf("the worker of prefix %q says it joined: %s", prefix, out)
		}
	}
}

// A worker's path to the NATS server goes silent (a black-hole relay): the worker's pings go
// unanswered and it says it lost the connection, naming the silence, then reconnects by itself once
// the path is back, and joins again.
func TestWorkerNoticesASilentPath(t *testing.T) {
	t.Parallel()
	// The embedded server pings at the default, slower than the worker: the worker notices the
	// silence first, rather than hearing its connection closed by a server that noticed it.
	c := startCluster(t, Config{})
	relay := newRelay(t, strings.TrimPrefix(c.WorkerURL(), "nats://"))
	out := &syncBuffer{}
	p := newProbe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- RunWorker(ctx, WorkerConfig{Config: machine.Config{Name: "wB", Slots: 1, Kinds: p.kinds, Devices: func(context.Context) nvidia.Report { return fakeReport(false) }}, Join: relay.URL(), Token: c.Token(), Heartbeat: testHeartbeat,
			PingInterval: testPing, Out: out})
	}()
	defer func() {
		cancel()
		<-done
	}()
	waitMachine(t, c, "wB", true)
	silent := time.Now()
	relay.blackHole(true)
	waitUntil(t, "the worker's notice of the silence", func() bool {
		return strings.Contains(out.String(), "worker wB: lost the connection to the NATS server (the NATS server answered none of")
	})
	t.Logf("the worker noticed %v after its path went silent (pings every %v)", time.Since(silent).Round(time.Millisecond), testPing)
	relay.blackHole(false)
	waitMachine(t, c, "wB", true)
	waitUntil(t, "the worker back", func() bool {
		ms := c.ListMachines() // one list for both checks: the worker may drop between two
		return len(ms) == 1 && ms[0].Name == "wB" && time.Since(ms[0].LastHeartbeat) < time.Second
	})
}

// A worker connection that does not join (announce a machine and be admitted) is closed once it
// has been seen not joined for joinWithin (the guard's clock, injected here), and one key holds at
// most maxConnsPerWorker connections, the older closed.
func TestWorkerConnectionsNotJoinedAreClosed(t *testing.T) {
	c := startCluster(t, Config{Token: "tok"})
	dial := func(kp nkeys.KeyPair, id string) chan struct{} {
		t.Helper()
		closed := make(chan struct{})
		nc, err := nats.Connect(c.WorkerURL(), nats.UserInfo(WorkerUser, "tok"), nats.Nkey(id, kp.Sign), nats.NoReconnect(),
			nats.ClosedHandler(func(*nats.Conn) { close(closed) }))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		return closed
	}
	isClosed := func(ch chan struct{}) bool {
		select {
		case <-ch:
			return true
		default:
			return false
		}
	}
	kp, id := newKey(t)
	first := dial(kp, id)
	second := dial(kp, id)
	third := dial(kp, id)
	waitUntil(t, "the oldest of one key's three connections closed", func() bool { return isClosed(first) })
	if isClosed(second) || isClosed(third) {
		t.Fatal("a key's newer connections were closed")
	}
	// A connection's time to join counts from when a sweep first saw it not joined, not from when
	// it connected: the first sweep, long after, closes nothing; one joinWithin later closes both.
	since := map[uint64]time.Time{}
	first0 := time.Now().Add(2 * joinWithin)
	c.sweepConns(first0, since)
	time.Sleep(100 * time.Millisecond) // a close, had there been one, reaches the client
	if isClosed(second) || isClosed(third) {
		t.Fatal("connections not joined were closed at the first sweep that saw them")
	}
	c.sweepConns(first0.Add(joinWithin+time.Second), since)
	waitUntil(t, "the connections not joined closed", func() bool { return isClosed(second) && isClosed(third) })
}

// A worker started with a prefix no front uses (on a NATS server that lets it use any name) says
// once that it waits for that prefix's job stream, naming the flag.
func TestWorkerWaitsForItsPrefixsStream(t *testing.T) {
	url := "nats://" + WorkerUser + ":dept@" + startDeptNATS(t)
	out := &syncBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- RunWorker(ctx, WorkerConfig{Config: machine.Config{Name: "wc", Slots: 1, Kinds: testKinds, Devices: func(context.Context) nvidia.Report { return fakeReport(false) }}, Join: url, Prefix: "nobody", Heartbeat: testHeartbeat,
			Out: out})
	}()
	waitUntil(t, "the worker's line", func() bool {
		return strings.Contains(out.String(), "waiting for the job stream NOBODY_JOBS") && strings.Contains(out.String(), "is nobody its prefix (-nats-prefix")
	})
	cancel()
	if err := <-done; err != nil {
		t.Errorf("the waiting worker stopped with %v, want nil", err)
	}
	if n := strings.Count(out.String(), "waiting for the job stream"); n != 1 {
		t.Errorf("told %d times, want once", n)
	}
}

// A run placed on a worker after the front's path to NATS went silent but before the connection is
// known to be stale (its job written into the black hole, never acknowledged) ends once the
// connection is lost, blaming it, rather than waiting for the acknowledgement until its time
// limit; after the path is back the next run runs.
func TestRunQueuedIntoASilentPathEnds(t *testing.T) {
	t.Parallel()
	// Pings every second, half the default: the run must be placed after the worker (beating every
	// second) falls silent to the front, within a second of the black hole, and before the front's
	// connection is known to be stale, two to three pings after it, a window of a second or more.
	relay, out, c, p := frontBehindRelay(t, time.Second)
	relay.blackHole(true)
	waitUntil(t, "the worker silent to the front", func() bool {
		ms := c.ListMachines()
		return len(ms) == 1 && time.Since(ms[0].LastHeartbeat) > 2*testHeartbeat
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // far past StaleAfter
	defer cancel()
	start := time.Now()
	err := executeProbe(ctx, c, p, "name: late\nms: 1\n")
	t.Logf("the run ended after %v: %v", time.Since(start).Round(time.Millisecond), err)
	if err == nil || ctx.Err() != nil || !strings.Contains(err.Error(), "lost its connection to the NATS server") || strings.Contains(err.Error(), "stopped answering") {
		t.Errorf("the run queued into the silent path: %v, want it ended blaming the lost connection", err)
	}
	relay.blackHole(false)
	waitUntil(t, "the reconnection", func() bool { return strings.Contains(out.String(), "reconnected to the NATS server after") })
	if err := executeProbe(ctx, c, p, "name: next\nms: 1\n"); err != nil {
		t.Errorf("the next run: %v", err)
	}
	if ms := c.ListMachines(); len(ms) != 1 || ms[0].Errors != 0 {
		t.Errorf("the machine's counts: %+v, want no error of the machine's", ms)
	}
}

// A live worker is not evicted by a newcomer from its address that reports its name and host (any
// worker-token holder can): its connection is open and it is not silent, so the newcomer joins
// beside it under a name of its own, and the live one is neither dropped nor told it was replaced.
// (A worker killed and started again, its connection closed, is replaced at once:
// TestRestartedWorkerReplacesItsEntry.)
func TestLiveWorkerNotReplacedByANamesake(t *testing.T) {
	t.Parallel()
	out := &syncBuffer{}
	c, err := Start(context.Background(), Config{Listen: "127.0.0.1:0", Heartbeat: time.Hour, Settle: -1, Out: out})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	p := newProbe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	// The worker beats every second, so that the server hears it again if its first hello was not
	// heard (the server's own heartbeat is an hour: the newcomer below, which never beats, stays).
	workerOut := &syncBuffer{}
	go func() {
		done <- RunWorker(ctx, WorkerConfig{Config: machine.Config{Name: "phoenix", Slots: 1, Kinds: p.kinds, Devices: func(context.Context) nvidia.Report { return fakeReport(false) }}, Join: c.WorkerURL(), Token: c.Token(), Prefix: c.names.Prefix(),
			Heartbeat: time.Second, Out: workerOut})
	}()
	defer func() {
		cancel()
		<-done
	}()
	waitJoined(t, c, "phoenix", done, out, workerOut)
	live := c.Machines()[0].ID

	kp, id := newKey(t)
	nc, err := nats.Connect(c.WorkerURL(), nats.UserInfo(WorkerUser, c.Token()), nats.Nkey(id, kp.Sign), nats.NoReconnect())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	data, err := json.Marshal(Machine{ID: id, Name: "phoenix", Host: machine.HostName(""), Slots: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.Publish(c.names.Hello()+id, data); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	waitUntil(t, "the newcomer listed", func() bool {
		clear(got)
		for _, m := range c.Machines() {
			got[m.ID] = m.Name
		}
		return got[id] != ""
	})
	if got[live] != "phoenix" || got[id] != "phoenix ["+shortID(id)+"]" {
		t.Errorf("machines %v, want the live worker %s still phoenix and the newcomer beside it", got, shortID(live))
	}
	c.mu.Lock()
	replaced := c.replaced[live]
	c.mu.Unlock()
	if replaced != "" || strings.Contains(out.String(), "machine restarted") {
		t.Errorf("the live worker was replaced (%q); the operator got %q", replaced, out.String())
	}
}

// waitJoined waits until c lists a machine named name, failing t at once if its worker ended first
// (done gives its RunWorker's error, put back for the caller) or after 30 s, with what the server and the worker said.
func waitJoined(t *testing.T, c *Cluster, name string, done chan error, server, worker *syncBuffer) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		for _, m := range c.Machines() {
			if m.Name == name {
				return
			}
		}
		select {
		case err := <-done:
			done <- err // back for the test's own wait for the worker
			t.Fatalf("worker %s ended before it was listed: %v\nthe server said:\n%s\nthe worker said:\n%s", name, err, server.String(), worker.String())
		default:
		}
	}
	t.Fatalf("worker %s not listed after 30 s\nthe server said:\n%s\nthe worker said:\n%s", name, server.String(), worker.String())
}

// frontBehindRelay starts a NATS server, a front that reaches it through a relay the test can turn
// into a black hole, its connection pinging every ping, and one worker "wA" (slot probe p) that
// reaches it directly. The workers beat every testHeartbeat; the front drops one only after three
// of its own longer heartbeats, so that a loaded test machine's late beats drop nobody before the
// path goes silent.
func frontBehindRelay(t *testing.T, ping time.Duration) (*tcpRelay, *syncBuffer, *Cluster, *probe) {
	t.Helper()
	addr := startDeptNATS(t)
	relay := newRelay(t, addr)
	out := &syncBuffer{}
	c, err := Start(context.Background(), Config{URL: "nats://" + WorkerUser + ":dept@" + strings.TrimPrefix(relay.URL(), "nats://"),
		Heartbeat: time.Second, PingInterval: ping, Settle: -1, Out: out})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	p := newProbe()
	startInProcessWorkerAt(t, c, "nats://"+WorkerUser+":dept@"+addr, "wA", 1, p)
	return relay, out, c, p
}
