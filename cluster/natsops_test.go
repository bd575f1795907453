package cluster

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"

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
	addr := startDeptNATS(t)
	relay := newRelay(t, addr)
	out := &syncBuffer{}
	c, err := Start(context.Background(), Config{URL: "nats://" + WorkerUser + ":dept@" + strings.TrimPrefix(relay.URL(), "nats://"),
		Heartbeat: testHeartbeat, Settle: -1, Out: out})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	p := newProbe()
	startInProcessWorkerAt(t, c, "nats://"+WorkerUser+":dept@"+addr, "wA", 1, p)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ended := make(chan error, 1)
	go func() { ended <- executeProbe(ctx, c, p, "name: long\nhold: true\n") }()
	select {
	case <-p.startedCh("long"):
	case <-ctx.Done():
		t.Fatal("the run did not start")
	}
	silent := time.Now()
	relay.blackHole(true)
	select {
	case err = <-ended:
	case <-ctx.Done():
		t.Fatal("the run did not end while the front's path to NATS was silent")
	}
	t.Logf("the run ended %v after the path went silent (StaleAfter %v): %v", time.Since(silent).Round(time.Millisecond), StaleAfter, err)
	if err == nil || !strings.Contains(err.Error(), "this server lost its connection to the NATS server") || !strings.Contains(err.Error(), "went silent") || strings.Contains(err.Error(), "stopped answering") {
		t.Errorf("the run's error: %v, want the silent NATS connection blamed", err)
	}
	if strings.Contains(out.String(), "machine left") {
		t.Errorf("the front dropped the worker for the silence of its own connection:\n%s", out)
	}
	if !strings.Contains(out.String(), "lost the connection to the NATS server (the NATS server answered none of") {
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
