package cluster

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
)

// startNATSServer starts a NATS server with the configuration file conf on a free loopback port, its
// JetStream store in a temporary folder, until the test ends, and returns its host:port. It runs the
// nats-server binary on PATH as a separate process when there is one (.ci/run builds it from the
// nats-server/v2 module this project depends on; under CI=true a missing one fails the test), and
// otherwise a second nats-server instance in this process, which stands for it.
func startNATSServer(t *testing.T, conf string) string {
	t.Helper()
	store := t.TempDir()
	bin, err := exec.LookPath("nats-server")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("no nats-server on PATH: .ci/run builds it")
		}
		opts, err := natsserver.ProcessConfigFile(conf)
		if err != nil {
			t.Fatal(err)
		}
		opts.Host, opts.Port, opts.StoreDir, opts.NoLog, opts.NoSigs = "127.0.0.1", natsserver.RANDOM_PORT, store, true, true
		ns, err := natsserver.NewServer(opts)
		if err != nil {
			t.Fatal(err)
		}
		ns.Start()
		t.Cleanup(ns.Shutdown)
		if !ns.ReadyForConnections(time.Minute) {
			t.Fatal("the in-process NATS server is not ready")
		}
		t.Log("no nats-server on PATH: an in-process nats-server stands for it")
		return ns.Addr().String()
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	_ = ln.Close()
	// A copy of conf without its listen address and with the temporary store (the binary refuses a
	// store_dir given twice, in its file and as a flag).
	text, err := os.ReadFile(conf)
	if err != nil {
		t.Fatal(err)
	}
	text = regexp.MustCompile(`(?m)^\s*listen:.*$`).ReplaceAllLiteral(text, nil)
	text = regexp.MustCompile(`store_dir:\s*"[^"]*"`).ReplaceAllLiteral(text, []byte("store_dir: "+strconv.Quote(store)))
	copied := filepath.Join(t.TempDir(), "nats.conf")
	if err := os.WriteFile(copied, text, 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{"-c", copied, "-a", "127.0.0.1", "-p", strconv.Itoa(port)}
	if !regexp.MustCompile(`store_dir:`).Match(text) {
		args = append(args, "-sd", store)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{}) // closed once it exited, with waitErr
	var waitErr error
	go func() {
		waitErr = cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		select {
		case <-exited:
			t.Fatalf("%s exited: %v", bin, waitErr)
		default:
		}
		if c, err := net.Dial("tcp", addr); err == nil {
			_ = c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s does not listen on %s after a minute", bin, addr)
		}
	}
	t.Logf("a separate nats-server process: %s", bin)
	return addr
}

// natsConf writes a NATS configuration file with JetStream and the user worker (password dept), and
// returns its path.
func natsConf(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "nats.conf")
	conf := "jetstream {}\nauthorization {\n  users: [{user: " + WorkerUser + ", password: dept}]\n}\n"
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
