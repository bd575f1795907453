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
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/storage"
	"github.com/chromedp/chromedp"
	"github.com/gpuplayground/playground/cluster"
	"github.com/gpuplayground/playground/cmd/playground/app"
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
// runs as the playground command runs it (app.Serve: this machine's runner built once, the
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
		served <- app.Serve(ctx, app.Config{Server: cfg, Cluster: cluster.Config{LocalWorker: true, Out: io.Discard}})
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
		// Work a test never looks at: sound, browser features that run beside the page
		// (chromedp's own list, Translate and BlinkGenPropertyTrees, plus hints, casting,
		// the back/forward cache that keeps a left page alive, reporting), pings.
		chromedp.Flag("mute-audio", true),
		chromedp.Flag("disable-features", "Translate,BlinkGenPropertyTrees,OptimizationHints,MediaRouter,BackForwardCache,DialMediaRouteProvider,InterestFeedContentSuggestions,CalculateNativeWinOcclusion,AutofillServerCommunication"),
		chromedp.Flag("disable-domain-reliability", true),
		chromedp.Flag("disable-component-extensions-with-background-pages", true),
		chromedp.Flag("no-pings", true),
	)
	return append(opts, extra...)
}

// sharedBrowser is one chromium that the browser tests share, started by the first tab asked of it
// and stopped by TestMain after the last test.
type sharedBrowser struct {
	once    sync.Once
	ctx     context.Context // the browser's first tab: NewContext of it opens another tab
	profile string
	stop    func()
	err     error

	mu   sync.Mutex
	idle *reusedTab // the tab reusableTab hands out, while no test holds it
}

// reusedTab is a tab that tests take one after another (sharedBrowser.reusableTab), in a browser
// context of its own, cleared between them.
type reusedTab struct {
	ctx    context.Context // chromedp.NewContext's: cancelling it closes the tab
	cancel context.CancelFunc

	mu      sync.Mutex
	origins map[string]bool // the origins of the pages loaded since it was last cleared
}

// navigated notes the origin of each page the tab loads (a chromedp listener: it only records).
func (r *reusedTab) navigated(ev any) {
	if ev, ok := ev.(*page.EventFrameNavigated); ok && ev.Frame.SecurityOrigin != "" && ev.Frame.SecurityOrigin != "null" {
		r.mu.Lock()
		r.origins[ev.Frame.SecurityOrigin] = true
		r.mu.Unlock()
	}
}

// plainBrowser is the chromium of newTab's pages, with the GPU disabled as in CI; webgpuBrowser is the one of
// newWebGPUTab's, with WebGPU on SwiftShader (webgpuFlags), started only by the tests that need it
// (a GPU process under a loaded machine has stalled other tests' pages).
var plainBrowser, webgpuBrowser sharedBrowser

// newTab gives the test a tab for the rest of the test in the package's shared chromium, its
// viewport width×height CSS pixels (not mobile, scale 1). Its pages have no WebGPU. The tab is the
// one the tests before it used (sharedBrowser.reusableTab), cleared of their pages, cookies,
// storage and emulated media, or, while another page of the test holds that one, a tab in a browser
// context of its own; either way no cookie or storage of another test's pages is seen (the HTTP
// cache is shared: the server's static files are revalidated by their ETag).
func newTab(t *testing.T, width, height int64) context.Context {
	t.Helper()
	return plainBrowser.reusableTab(t, width, height, chromedp.DisableGPU, chromedp.Flag("disable-software-rasterizer", true))
}

// newWebGPUTab is newTab in the chromium with WebGPU on SwiftShader.
func newWebGPUTab(t *testing.T, width, height int64) context.Context {
	t.Helper()
	return webgpuBrowser.reusableTab(t, width, height, webgpuFlags()...)
}

// closableTab starts b with flags if it has not started and opens a tab in it, in a browser context
// of its own, its viewport width×height CSS pixels, for the rest of the test; the function returned
// closes it before the test ends.
func (b *sharedBrowser) closableTab(t *testing.T, width, height int64, flags ...chromedp.ExecAllocatorOption) (context.Context, context.CancelFunc) {
	t.Helper()
	b.start(t, flags...)
	ctx, cancel := chromedp.NewContext(b.ctx, chromedp.WithNewBrowserContext())
	t.Cleanup(cancel)
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(width, height)); err != nil {
		t.Fatalf("opening a tab: %v", err)
	}
	return ctx, cancel
}

// reusableTab is closableTab, but the tab, cleared when the test ends (reusedTab.clear), is handed
// to the next test that asks, rather than closed: a new browser context and tab cost chromium about
// 1 CPU s, clearing one about a tenth of that. A test asking for a second tab while it holds this
// one gets a new tab (closed at its end). The context returned is the test's: the listeners a test
// adds with it (chromedp.Listen) end with it.
func (b *sharedBrowser) reusableTab(t *testing.T, width, height int64, flags ...chromedp.ExecAllocatorOption) context.Context {
	t.Helper()
	b.start(t, flags...)
	b.mu.Lock()
	r := b.idle
	b.idle = nil
	b.mu.Unlock()
	if r == nil {
		r = &reusedTab{origins: map[string]bool{}}
		r.ctx, r.cancel = chromedp.NewContext(b.ctx, chromedp.WithNewBrowserContext())
		if err := chromedp.Listen(r.ctx, r.navigated); err != nil {
			r.cancel()
			t.Fatalf("opening a tab: %v", err)
		}
	}
	ctx, cancel := context.WithCancel(r.ctx)
	t.Cleanup(func() {
		cancel()
		if err := r.clear(); err != nil {
			r.cancel() // the next test opens a new one
			return
		}
		b.mu.Lock()
		defer b.mu.Unlock()
		if b.idle == nil {
			b.idle = r
		} else {
			r.cancel()
		}
	})
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(width, height)); err != nil {
		t.Fatalf("opening a tab: %v", err)
	}
	return ctx
}

// clear leaves r as a new tab is for the next test: on a blank page, without emulated media (dark
// mode, reduced motion), and without the cookies and storage (local and session storage, IndexedDB,
// caches) of the origins its pages came from.
func (r *reusedTab) clear() error {
	ctx, cancel := context.WithTimeout(r.ctx, time.Minute)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
		return err
	}
	r.mu.Lock()
	origins := r.origins
	r.origins = map[string]bool{}
	r.mu.Unlock()
	return chromedp.Do(ctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		if _, err := cdp.Call(ctx, tg, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{}); err != nil {
			return err
		}
		for o := range origins {
			if _, err := cdp.Call(ctx, tg, storage.ClearDataForOrigin, storage.ClearDataForOriginParams{Origin: o, StorageTypes: "all"}); err != nil {
				return err
			}
		}
		_, err := cdp.Call(ctx, tg, network.ClearBrowserCookies, cdp.Empty{})
		return err
	}))
}

// start starts b with flags if it has not started.
func (b *sharedBrowser) start(t *testing.T, flags ...chromedp.ExecAllocatorOption) {
	t.Helper()
	exe := chromiumPath(t)
	b.once.Do(func() {
		b.profile, b.err = os.MkdirTemp("", "e2e-chromium-")
		if b.err != nil {
			return
		}
		actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), browserOptions(b.profile, exe, append(flags, chromedp.WindowSize(1200, 1000))...)...)
		bctx, cancelBrowser := chromedp.NewContext(actx)
		b.ctx, b.stop = bctx, func() { cancelBrowser(); cancelAlloc() }
		b.err = chromedp.Do(bctx) // starts the browser
	})
	if b.err != nil {
		t.Fatalf("starting chromium: %v", b.err)
	}
}

// stopSharedBrowser stops the shared chromiums that tests started and removes their profiles.
func stopSharedBrowser() {
	for _, b := range []*sharedBrowser{&plainBrowser, &webgpuBrowser} {
		if b.stop != nil {
			b.stop()
		}
		if b.profile != "" {
			_ = os.RemoveAll(b.profile)
		}
	}
}

// pageReady is the selector of a lesson page ready for a click: its socket open and every cell's
// editor in place (static/app.js sets data-settled), so that no editor loading late moves a button
// between chromedp finding it and clicking where it was.
const pageReady = `body[data-ws="open"][data-settled="true"]`

// queryEvery is how often a waiting query (waitVisible, waitReady) looks for its node again.
// chromedp's default, 5 ms, is 200 DOM queries a second, each a round trip to the page's renderer
// and, for visibility, a script run there: over a suite of waits of seconds, chromium's CPU, not the
// page's. 50 ms is far below the time any awaited state lasts (a run, a player paused on its frame).
const queryEvery = 50 * time.Millisecond

// waitVisible is chromedp.WaitVisible, looking again every queryEvery.
func waitVisible[S chromedp.Selectable](sel S, opts ...chromedp.QueryOption) chromedp.Action[chromedp.Void] {
	return chromedp.WaitVisible(sel, append(opts, chromedp.RetryInterval(queryEvery))...)
}

// waitReady is chromedp.WaitReady, looking again every queryEvery.
func waitReady[S chromedp.Selectable](sel S, opts ...chromedp.QueryOption) chromedp.Action[chromedp.Void] {
	return chromedp.WaitReady(sel, append(opts, chromedp.RetryInterval(queryEvery))...)
}

// pollUntil waits until the script expr is true in the page, testing it again on each change to
// the page's DOM (chromedp.Poll's default tests it on every animation frame, which keeps chromium
// drawing frames at 60 a second while it waits).
func pollUntil(expr string) chromedp.Action[chromedp.Void] {
	return chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingMutation())
}
