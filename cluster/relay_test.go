package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// tcpRelay is a TCP relay to a NATS port that a test can cut, standing for a network fault between a
// worker and the server: cut closes every connection through it and refuses new ones until mend.
type tcpRelay struct {
	ln     net.Listener
	target string
	joined chan time.Time // when a connection through it was made (while not cut)

	mu    sync.Mutex
	down  bool
	hole  bool // black hole: connections stay open (and are accepted), nothing goes through
	conns []net.Conn
}

// newRelay relays 127.0.0.1:0 to target (host:port) until the test ends.
func newRelay(t *testing.T, target string) *tcpRelay {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &tcpRelay{ln: ln, target: target, joined: make(chan time.Time, 64)}
	go r.accept()
	t.Cleanup(func() {
		_ = ln.Close()
		r.cut()
	})
	return r
}

// URL is the relay's NATS URL.
func (r *tcpRelay) URL() string { return "nats://" + r.ln.Addr().String() }

func (r *tcpRelay) accept() {
	for {
		in, err := r.ln.Accept()
		if err != nil {
			return
		}
		r.mu.Lock()
		if r.down {
			r.mu.Unlock()
			_ = in.Close()
			continue
		}
		out, err := net.Dial("tcp", r.target)
		if err != nil {
			r.mu.Unlock()
			_ = in.Close()
			continue
		}
		r.conns = append(r.conns, in, out)
		r.mu.Unlock()
		select {
		case r.joined <- time.Now():
		default:
		}
		go func() { r.pipe(out, in); _ = out.Close() }()
		go func() { r.pipe(in, out); _ = in.Close() }()
	}
}

// pipe copies from src to dst until either fails, dropping what it reads while the relay is a
// black hole.
func (r *tcpRelay) pipe(dst io.Writer, src io.Reader) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		r.mu.Lock()
		hole := r.hole
		r.mu.Unlock()
		if n > 0 && !hole {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// blackHole makes the relay a black hole (true) or a relay again (false): its connections, old and
// new, stay open while nothing goes through them, as on a network path that silently drops packets.
func (r *tcpRelay) blackHole(on bool) {
	r.mu.Lock()
	r.hole = on
	r.mu.Unlock()
}

// cut closes every connection through the relay and refuses new ones until mend.
func (r *tcpRelay) cut() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.down = true
	for _, c := range r.conns {
		_ = c.Close()
	}
	r.conns = nil
}

func (r *tcpRelay) mend() {
	r.mu.Lock()
	r.down = false
	r.mu.Unlock()
}

// A worker's connection is cut mid-run: the server stops hearing it and ends the run with an error,
// giving it up while the worker cannot hear. Once the worker reconnects it reads the give-up and
// stops the run at once, and the next run, a measuring one, starts on it without waiting behind the
// orphan.
func TestGiveUpSurvivesACut(t *testing.T) {
	t.Parallel()
	c := startCluster(t, Config{})
	r := newRelay(t, strings.TrimPrefix(c.WorkerURL(), "nats://"))
	p := newProbe()
	startInProcessWorkerAt(t, c, r.URL(), "cut-off", 1, p)
	<-r.joined
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- executeProbe(ctx, c, p, "name: held\nhold: true\n") }()
	select {
	case <-p.startedCh("held"):
	case <-ctx.Done():
		t.Fatal("the run did not start")
	}

	r.cut()
	select {
	case err := <-done:
		var gone goneError
		if !errors.As(err, &gone) {
			t.Fatalf("the cut-off run ended with %v, want the machine gone", err)
		}
	case <-ctx.Done():
		t.Fatal("the run did not end while its worker was cut off")
	}
	waitMachine(t, c, "cut-off", false)
	select {
	case err := <-p.endedCh("held"):
		t.Fatalf("the run stopped (%v) before its worker could hear that the server gave it up", err)
	default: // it runs on: the worker has heard nothing yet
	}

	r.mend()
	var back time.Time
	select {
	case back = <-r.joined:
	case <-ctx.Done():
		t.Fatal("the worker did not reconnect")
	}
	select {
	case err := <-p.endedCh("held"):
		if !errors.Is(err, context.Canceled) {
			t.Errorf("the orphan ended with %v, want stopped", err)
		}
		// how soon is logged, not asserted: a busy machine stretches it (the held run never ends by itself)
		t.Logf("the orphan stopped %v after the worker's connection came back", time.Since(back).Round(time.Millisecond))
	case <-time.After(30 * time.Second):
		t.Fatal("the worker still runs the run the server gave up on, 30 s after it reconnected")
	}
	next, cancelNext := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancelNext()
	start := time.Now()
	if err := executeProbe(next, c, p, "name: next\nms: 1\n"); err != nil {
		t.Fatalf("the next run: %v", err)
	}
	t.Logf("the next run took %v", time.Since(start).Round(time.Millisecond))
	if clashes, _ := p.report(); len(clashes) > 0 {
		t.Errorf("the one-machine rule broken: %q", clashes)
	}
}

// startNATS starts a NATS server with JetStream on 127.0.0.1:port (0: any) over the store dir, as a
// department's (-nats URL), and returns its URL with the workers' user.
func startNATS(t *testing.T, port int, dir string) (*natsserver.Server, string) {
	t.Helper()
	opts := &natsserver.Options{Host: "127.0.0.1", Port: port, JetStream: true, StoreDir: dir,
		NoLog: true, NoSigs: true, Users: []*natsserver.User{{Username: WorkerUser, Password: "dept"}}}
	if port == 0 {
		opts.Port = natsserver.RANDOM_PORT
	}
	ns, err := natsserver.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	ns.Start()
	t.Cleanup(ns.Shutdown)
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatal("NATS server not ready")
	}
	return ns, "nats://" + WorkerUser + ":dept@" + ns.Addr().String()
}

// The NATS server restarts mid-run (-nats URL): the server gives the run up while NATS is down (its
// worker stopped answering), and the give-up, recorded once NATS is back, stops the run on the
// worker when it reconnects; the next run starts on it.
func TestGiveUpSurvivesANATSRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ns, url := startNATS(t, 0, dir)
	port := ns.Addr().(*net.TCPAddr).Port
	c, err := Start(context.Background(), Config{URL: url, Heartbeat: testHeartbeat, Settle: -1, Out: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	p := newProbe()
	stop := startInProcessWorkerAt(t, c, url, "dept-box", 1, p) // stopped before NATS, not to wait for it (bye)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- executeProbe(ctx, c, p, "name: held\nhold: true\n") }()
	select {
	case <-p.startedCh("held"):
	case <-ctx.Done():
		t.Fatal("the run did not start")
	}

	down := time.Now()
	ns.Shutdown()
	ns.WaitForShutdown()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("the run ended well while NATS was down")
		}
		t.Logf("the run ended %v after NATS went down: %v", time.Since(down).Round(time.Millisecond), err)
	case <-ctx.Done():
		t.Fatal("the run did not end while NATS was down")
	}
	startNATS(t, port, dir)
	back := time.Now()
	select {
	case err := <-p.endedCh("held"):
		if !errors.Is(err, context.Canceled) {
			t.Errorf("the orphan ended with %v, want stopped", err)
		}
		t.Logf("the orphan stopped %v after NATS came back", time.Since(back).Round(time.Millisecond))
	case <-time.After(20 * time.Second):
		t.Fatal("the worker still runs the run the server gave up on, 20 s after NATS came back")
	}
	next, cancelNext := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancelNext()
	start := time.Now()
	if err := executeProbe(next, c, p, "name: next\nms: 1\n"); err != nil {
		t.Fatalf("the next run: %v", err)
	}
	t.Logf("the next run took %v", time.Since(start).Round(time.Millisecond))
	if err := stop(); err != nil {
		t.Error(err)
	}
}

// count is how many of rec's events start with prefix.
func (r *recorder) count(prefix string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, e := range r.events {
		if strings.HasPrefix(e, prefix) {
			n++
		}
	}
	return n
}

// A worker that floods a run with events past its pacing gets a bounded number of them relayed
// (paced here), and past maxRunEvents the run ends with one error naming it and the worker's job is
// stopped.
func TestRelayCapsAFlood(t *testing.T) {
	t.Parallel()
	c := startCluster(t, Config{})
	p := newProbe()
	startInProcessWorker(t, c, "hostile", 1, p)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rec := &recorder{}
	err := executeProbeTo(ctx, c, p, "name: flood\nflood: 100000\nhold: true\n", rec)
	if err == nil || !strings.Contains(err.Error(), "the machine hostile sent too many events") {
		t.Fatalf("the flooded run ended with %v, want too many events", err)
	}
	got := rec.count("progress ")
	t.Logf("%d progress events relayed of 100001", got)
	if got > maxRunEvents/10 {
		t.Errorf("%d progress events relayed, want them paced (at most %d)", got, maxRunEvents/10)
	}
	select {
	case err := <-p.endedCh("flood"):
		if !errors.Is(err, context.Canceled) {
			t.Errorf("the worker's run ended with %v, want stopped", err)
		}
	case <-time.After(30 * time.Second):
		t.Error("the worker still runs the job 30 s after the server ended it")
	}
}

// An honest worker's paced events all arrive, none throttled again by the relay's pacing. The steps
// are 400 ms apart: a loaded machine that delays one event by the relay's slack of the pacing
// interval (25 ms) would have it coalesced with the next; by 375 ms, rarely.
func TestRelayPassesPacedEvents(t *testing.T) {
	t.Parallel()
	c := startCluster(t, Config{})
	p := newProbe()
	startInProcessWorker(t, c, "honest", 1, p)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rec := &recorder{}
	const steps = 6
	if err := executeProbeTo(ctx, c, p, fmt.Sprintf("name: steps\nsteps: %d\ngap_ms: 400\n", steps), rec); err != nil {
		t.Fatal(err)
	}
	if got, want := rec.count("progress "), steps+2; got != want {
		t.Errorf("%d progress events, want %d: %q", got, want, rec.events)
	}
	if got := rec.count("frames 1"); got != steps {
		t.Errorf("%d frames, want %d", got, steps)
	}
	if got := rec.count("note info: step "); got != steps {
		t.Errorf("%d notes, want %d", got, steps)
	}
}

// Past its cap of bytes a job's events end the run, whatever their count.
func TestRelayCapsBytes(t *testing.T) {
	rec := &recorder{}
	r := &relayer{w: &worker{m: Machine{Name: "big"}}, e: rec, maxEvents: maxRunEvents, maxBytes: 3 << 10}
	note, err := json.Marshal(noteEvent("info", strings.Repeat("x", 1000)))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		end, err := r.handle(context.Background(), &nats.Msg{Data: note})
		if end {
			if got := i * len(note); got < 2<<10 || err == nil || !strings.Contains(err.Error(), "the machine big sent too many events") {
				t.Errorf("ended after %d bytes with %v", got, err)
			}
			return
		}
	}
	t.Errorf("10 KiB of events relayed under a 3 KiB cap: %d notes", rec.count("note info: x"))
}

// A subscription that overflowed (a burst faster than the relay) is a flood when what the worker sent,
// relayed, waiting and dropped, is over the run's cap; an overflow under the cap is not.
func TestRelayFloodedOverflow(t *testing.T) {
	c := startCluster(t, Config{})
	sub, err := c.nc.SubscribeSync("test.flood")
	if err != nil {
		t.Fatal(err)
	}
	if err := sub.SetPendingLimits(10, -1); err != nil {
		t.Fatal(err)
	}
	for range 50 {
		if err := c.nc.Publish("test.flood", []byte("{}")); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.nc.Flush(); err != nil {
		t.Fatal(err)
	}
	if _, err := sub.NextMsg(time.Second); !errors.Is(err, nats.ErrSlowConsumer) {
		t.Fatalf("NextMsg after a burst over the limits: %v, want a slow consumer", err)
	}
	for _, tt := range []struct {
		maxEvents int
		want      bool
	}{{20, true}, {100, false}} {
		r := &relayer{w: &worker{m: Machine{Name: "w"}}, maxEvents: tt.maxEvents, maxBytes: maxRunBytes}
		if got := r.flooded(sub); got != tt.want {
			t.Errorf("50 events sent, cap %d: flooded %v, want %v", tt.maxEvents, got, tt.want)
		}
	}
}
