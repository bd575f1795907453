package cluster

import (
	"bufio"
	"context"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/gpuplayground/playground/gpu/nvidia"
	"github.com/gpuplayground/playground/internal/testcert"
	"github.com/gpuplayground/playground/machine"
	"github.com/gpuplayground/playground/server"
)

// With a certificate and key the embedded server's port requires TLS: it announces tls_required
// to a plain connection, the worker URL is tls://, a worker that trusts the certificate (-ca) joins
// and runs a cell, and one that does not is refused with a certificate error instead of waiting.
func TestWorkersOverTLS(t *testing.T) {
	t.Parallel()
	certFile, keyFile, _ := testcert.SelfSigned(t)
	c := startCluster(t, Config{Token: "tok", TLSCert: certFile, TLSKey: keyFile})
	url := c.WorkerURL()
	if !strings.HasPrefix(url, "tls://127.0.0.1:") {
		t.Fatalf("worker URL %q, want tls://127.0.0.1:PORT", url)
	}
	conn, err := net.Dial("tcp", strings.TrimPrefix(url, "tls://"))
	if err != nil {
		t.Fatal(err)
	}
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	info, err := bufio.NewReader(conn).ReadString('\n')
	conn.Close()
	if err != nil || !strings.Contains(info, `"tls_required":true`) {
		t.Errorf("the port's INFO to a plain connection: %q, %v; want tls_required", info, err)
	}

	worker := func(ctx context.Context, name, ca string, wait time.Duration) error {
		return RunWorker(ctx, WorkerConfig{Config: machine.Config{Name: name, Kinds: testKinds, Devices: func(context.Context) nvidia.Report { return fakeReport(false) }}, Join: url, Token: "tok", CA: ca,
			Heartbeat: testHeartbeat, Out: io.Discard, RequestTimeout: wait})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	// Its first request to the NATS server ends at RequestTimeout (default 5 s), and the join with the
	// certificate error the connection met meanwhile (or with the next try's).
	if err := worker(ctx, "untrusting", "", 300*time.Millisecond); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("a worker that does not trust the certificate: %v, want a certificate error", err)
	}

	wctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- worker(wctx, "trusting", certFile, 0) }()
	defer func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("the worker: %v", err)
		}
	}()
	waitMachine(t, c, "trusting", true)
	rctx, rcancel := context.WithTimeout(context.Background(), time.Minute)
	defer rcancel()
	rec, err := execute(rctx, c, "nap", "ms: 10\n")
	if err != nil || rec.ranOn() != "trusting" {
		t.Errorf("a run over TLS: %v, ran on %q; events %q", err, rec.ranOn(), rec.events)
	}
}

// Front with the web server's certificate requires TLS on the workers' port too and prints a
// tls:// join command that says when -ca is needed.
func TestServeUsesTheWebCertificateForWorkers(t *testing.T) {
	t.Parallel()
	certFile, keyFile, _ := testcert.SelfSigned(t)
	out := &syncBuffer{}
	background(t, "Serve", func(ctx context.Context) error {
		return serve(ctx, server.Config{Config: machine.Config{Kinds: testKinds, Devices: func(context.Context) nvidia.Report { return fakeReport(false) }}, Addr: "127.0.0.1:0", Out: out, TLSCert: certFile, TLSKey: keyFile},
			Config{Listen: "127.0.0.1:0", LocalWorker: true, Heartbeat: testHeartbeat})
	})
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(out.String(), "GPU Playground: https://"); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("Serve printed %q", out.String())
		}
	}
	if got := out.String(); !strings.Contains(got, "workers join with: playground worker -join tls://127.0.0.1:") || !strings.Contains(got, "add -ca FILE") {
		t.Errorf("Serve printed %q, want a tls:// join command with the -ca hint", got)
	}
}

func TestLoopback(t *testing.T) {
	for addr, want := range map[string]bool{"127.0.0.1:4222": true, "[::1]:0": true, "localhost:4222": true,
		"0.0.0.0:4222": false, ":4222": false, "gpu-box:4222": false, "10.0.0.2:4222": false, "nonsense": false} {
		if got := loopback(addr); got != want {
			t.Errorf("loopback(%q) = %v, want %v", addr, got, want)
		}
	}
}
