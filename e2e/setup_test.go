package e2e

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/gpuplayground/playground/cluster"
	"github.com/gpuplayground/playground/server"
)

// serve starts a playground server for cfg on a loopback port for the rest of the test and returns
// its base URL.
func serve(t *testing.T, cfg server.Config) string {
	t.Helper()
	base, _ := serveStoppable(t, cfg)
	return base
}

// serveStoppable is serve, with a function that stops the server before the test ends. The server
// runs as the playground command runs it (cluster.Serve: this machine's runner built once, the
// embedded NATS server and the cluster's local worker), or, for a cfg with its own Executor (a
// cluster with workers), server.Run with it.
func serveStoppable(t *testing.T, cfg server.Config) (base string, stop func()) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Listener = ln
	if cfg.Out == nil {
		cfg.Out = io.Discard
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() {
		if cfg.Executor != nil {
			served <- server.Run(ctx, cfg)
			return
		}
		served <- cluster.Serve(ctx, cluster.ServeConfig{Server: cfg, Cluster: cluster.Config{LocalWorker: true, Out: io.Discard}})
	}()
	base = "http://" + ln.Addr().String()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		select {
		case err := <-served:
			cancel()
			t.Fatalf("the server stopped at start: %v", err)
		default:
		}
		if resp, err := http.Get(base + "/"); err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the server did not answer within a minute")
		}
	}
	var once sync.Once
	stopServer := func() {
		once.Do(func() {
			cancel()
			if err := <-served; err != nil {
				t.Errorf("the server: %v", err)
			}
		})
	}
	t.Cleanup(stopServer)
	return base, stopServer
}

// browserOptions are the options every chromium (exe) of the tests starts with: headless, no
// sandbox, no background traffic, a fresh profile in the empty directory profile; extra adds to them
// (a window size, WebGPU's flags).
func browserOptions(profile, exe string, extra ...chromedp.ExecAllocatorOption) []chromedp.ExecAllocatorOption {
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(profile),
	)
	return append(opts, extra...)
}

// shared is the package's one chromium, which the browser tests share (but for TestWebGPUInBrowser's,
// which closes pages of its own): the first newTab starts it, with WebGPU on SwiftShader
// (webgpuFlags; newTab hides it from its pages), and TestMain stops it after the last test.
var shared struct {
	once    sync.Once
	ctx     context.Context // the browser's first tab: NewContext of it opens another tab
	profile string
	stop    func()
	err     error
}

// newTab opens a tab for the rest of the test in the package's shared chromium, in a browser
// context of its own (as an incognito window: no cookies, storage or cache shared with other
// tests' tabs), its viewport width×height CSS pixels. Its pages have no WebGPU (navigator.gpu is
// hidden, as in a browser without it), so that a test that does not ask for WebGPU never waits for
// kernels on a software adapter; newWebGPUTab's pages have it.
func newTab(t *testing.T, width, height int64) context.Context {
	t.Helper()
	return openTab(t, width, height, false)
}

// newWebGPUTab is newTab with WebGPU on SwiftShader in its pages.
func newWebGPUTab(t *testing.T, width, height int64) context.Context {
	t.Helper()
	return openTab(t, width, height, true)
}

func openTab(t *testing.T, width, height int64, webgpu bool) context.Context {
	t.Helper()
	exe := chromiumPath(t)
	shared.once.Do(func() {
		shared.profile, shared.err = os.MkdirTemp("", "e2e-chromium-")
		if shared.err != nil {
			return
		}
		actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), browserOptions(shared.profile, exe, append(webgpuFlags(), chromedp.WindowSize(1200, 1000))...)...)
		bctx, cancelBrowser := chromedp.NewContext(actx)
		shared.ctx, shared.stop = bctx, func() { cancelBrowser(); cancelAlloc() }
		shared.err = chromedp.Do(bctx) // starts the browser
	})
	if shared.err != nil {
		t.Fatalf("starting chromium: %v", shared.err)
	}
	ctx, cancel := chromedp.NewContext(shared.ctx, chromedp.WithNewBrowserContext())
	t.Cleanup(cancel)
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(width, height)); err != nil {
		t.Fatalf("opening a tab: %v", err)
	}
	if !webgpu {
		hide := chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := cdp.Call(ctx, tg, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{
				Source: `Object.defineProperty(Navigator.prototype, "gpu", { get: () => undefined });`})
			return err
		})
		if err := chromedp.Do(ctx, hide); err != nil {
			t.Fatalf("hiding WebGPU: %v", err)
		}
	}
	return ctx
}

// stopSharedBrowser stops the shared chromium, if a test started it, and removes its profile.
func stopSharedBrowser() {
	if shared.stop != nil {
		shared.stop()
	}
	if shared.profile != "" {
		_ = os.RemoveAll(shared.profile)
	}
}
