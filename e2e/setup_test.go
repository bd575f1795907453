package e2e

import (
	"context"
	"net"
	"sync"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/gpuplayground/playground/server"
)

// serve starts a playground server for cfg on a loopback port for the rest of the test and returns
// its base URL.
func serve(t *testing.T, cfg server.Config) string {
	t.Helper()
	base, _ := serveStoppable(t, cfg)
	return base
}

// serveStoppable is serve, with a function that stops the server before the test ends.
func serveStoppable(t *testing.T, cfg server.Config) (base string, stop func()) {
	t.Helper()
	s, err := server.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx, ln) }()
	var once sync.Once
	stopServer := func() { once.Do(func() { cancel(); <-served }) }
	t.Cleanup(stopServer)
	return "http://" + ln.Addr().String(), stopServer
}

// browserOptions are the options every test's chromium (exe) starts with: headless, no sandbox, no
// background traffic, a fresh profile; extra adds to them (a window size, WebGPU's flags).
func browserOptions(t *testing.T, exe string, extra ...chromedp.ExecAllocatorOption) []chromedp.ExecAllocatorOption {
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
	)
	return append(opts, extra...)
}
