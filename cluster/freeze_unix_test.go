//go:build unix

package cluster

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// freezeOnce stops this process (SIGSTOP) when it is first called, as the worker's hook between
// pulling a job and starting it (WorkerConfig.pulled): the worker is frozen holding the job, its
// heartbeats stop with it, until the test sends SIGCONT. The hook returns only once SIGCONT came, so
// that the job cannot go on in the moment before the stop takes hold of every thread.
func freezeOnce() func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			resumed := make(chan os.Signal, 1)
			signal.Notify(resumed, syscall.SIGCONT)
			defer signal.Stop(resumed)
			_ = syscall.Kill(os.Getpid(), syscall.SIGSTOP)
			<-resumed
		})
	}
}

// A worker process frozen (SIGSTOP) right after it pulled a job: the server stops hearing it, gives
// the run up and moves it to another worker, where it runs. Resumed, the frozen worker never starts
// the job it held (its acknowledgement says it pulled it): it acknowledges it without sending a
// single event. Dropped, it no longer holds the job: its consumer is deleted.
func TestFrozenWorkerNeverStartsMovedRun(t *testing.T) {
	t.Parallel()
	c := startCluster(t, Config{})
	frozen := startWorker(t, c, "frozen", true, envFreeze+"=1") // the GPU: the run goes there first
	startWorker(t, c, "rescuer", false)
	id := ""
	for _, m := range c.Machines() {
		if m.Name == "frozen" {
			id = m.ID
		}
	}
	events, err := c.nc.SubscribeSync(dn.Run(id, "*", "events"))
	if err != nil {
		t.Fatal(err)
	}
	// The worker's acknowledgements, heard as they cross the server (a job's events come before).
	acks, err := c.nc.SubscribeSync("$JS.ACK." + dn.Stream() + "." + consumerName(id) + ".>")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.nc.Flush(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rec := &recorder{}
	if err := executeTo(ctx, c, "nap", "ms: 10\ngpu: true\n", rec); err != nil {
		t.Fatalf("the moved run: %v", err)
	}
	if got := rec.ranOn(); got != "rescuer" {
		t.Errorf("the run ran on %q, want rescuer: %q", got, rec.events)
	}
	if !rec.has("note warning: frozen stopped answering before the run started; the run moved to rescuer.") {
		t.Errorf("the run does not say it moved: %q", rec.events)
	}
	if n, _, _ := acks.Pending(); n != 0 {
		t.Fatalf("the frozen worker acknowledged %d jobs before it was resumed", n)
	}
	// Dropped as silent, it loses the job it held at once: the server deletes its consumer (had it
	// not, JetStream would take the job back after ackWait, not after an hour).
	waitUntil(t, "the frozen worker's consumer to be deleted", func() bool {
		_, err := c.js.Consumer(ctx, dn.Stream(), consumerName(id))
		return errors.Is(err, jetstream.ErrConsumerNotFound)
	})

	if err := frozen.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	if _, err := acks.NextMsgWithContext(ctx); err != nil {
		t.Fatalf("the resumed worker did not acknowledge the job it held: %v", err)
	}
	waitMachine(t, c, "frozen", true) // it announces itself again: it runs, and read the job
	if err := c.nc.Flush(); err != nil {
		t.Fatal(err)
	}
	if n, _, _ := events.Pending(); n != 0 {
		m, _ := events.NextMsg(0)
		t.Errorf("the resumed worker sent %d events of the run the server moved, want none; first: %s", n, m.Data)
	}
	if n := strings.Count(strings.Join(rec.events, "\n"), "pid "); n != 1 {
		t.Errorf("the run ran %d times, want once: %q", n, rec.events)
	}
}
