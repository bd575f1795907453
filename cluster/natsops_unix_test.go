//go:build unix

package cluster

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// workerProcess starts this test binary as a worker process named name joining c (as startWorker),
// its standard error kept; exited has its exit once it exits.
func workerProcess(t *testing.T, c *Cluster, name string) (cmd *exec.Cmd, stderr *syncBuffer, exited chan error) {
	t.Helper()
	cmd = exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), envJoin+"="+c.WorkerURL(), envToken+"="+c.Token(), envName+"="+name, envGPU+"=0", envPrefix+"="+c.names.Prefix())
	stderr = &syncBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited = make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGCONT)
		_ = cmd.Process.Kill()
	})
	return cmd, stderr, exited
}

// On an external NATS server (where the front cannot see a worker's address), a worker restarted
// while its old process is frozen, not dead (SIGSTOP: silent, its connection open) keeps its name:
// the new one replaces the old entry, silent for over a heartbeat and a half, from the same host
// and with the same name, rather than being listed as "wA [ID…]" beside its dead self. The old
// process, thawed, hears that it was replaced and exits 1 saying so. The frozen worker is silent
// for two of its heartbeats (no announcement of it still on its way); the rest of its silence is
// its last announcement moved 8 s back, rather than 8 s waited out.
func TestRestartOnExternalNATSKeepsTheNameAndTheReplacedExits(t *testing.T) {
	t.Parallel()
	url := "nats://" + WorkerUser + ":dept@" + startNATSServer(t, natsConf(t))
	out := &syncBuffer{}
	// A long heartbeat on the front: the old entry is replaced after 7.5 s of silence, and would be
	// dropped after 15 s, which leaves the new process 7 s to join once the entry is 8 s silent.
	c, err := Start(context.Background(), Config{URL: url, Heartbeat: 5 * time.Second, Settle: -1, Out: out})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	old, oldErr, oldExited := workerProcess(t, c, "wA")
	waitMachine(t, c, "wA", true)
	oldID := c.Machines()[0].ID
	if err := old.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the frozen worker's silence", func() bool {
		ms := c.ListMachines()
		return len(ms) == 1 && time.Since(ms[0].LastHeartbeat) > 2*testHeartbeat
	})
	c.mu.Lock()
	c.workers[oldID].seen = time.Now().Add(-8 * time.Second)
	c.mu.Unlock()
	workerProcess(t, c, "wA")
	waitUntil(t, "the restarted worker", func() bool {
		ms := c.Machines()
		return len(ms) == 1 && ms[0].ID != oldID
	})
	if ms := c.Machines(); ms[0].Name != "wA" {
		t.Errorf("the restarted worker is listed as %q, want wA", ms[0].Name)
	}
	if !strings.Contains(out.String(), "machine restarted: wA (worker ") {
		t.Errorf("the operator's terminal: %q, want the restart told", out)
	}
	if err := old.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-oldExited:
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.Contains(oldErr.String(), "replaced this worker") {
			t.Errorf("the replaced worker exited with %v, saying %q; want 1, saying it was replaced", err, oldErr)
		}
	case <-time.After(time.Minute):
		t.Fatal("the replaced worker still runs a minute after it was thawed")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := execute(ctx, c, "nap", "ms: 10\n"); err != nil {
		t.Errorf("a run on the restarted worker: %v", err)
	}
}
