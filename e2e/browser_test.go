// Package e2e drives the playground in a real browser (Debian's chromium through chromedp).
package e2e

import (
	"context"
	"flag"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/gpuplayground/playground/kernels/cuda"
	"github.com/gpuplayground/playground/server"
)

var screenshot = flag.String("screenshot", "", "write a PNG of a lesson cell after its run to this path (the README's picture: -screenshot ../docs/screenshot.png)")

func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("chromium is not installed; CI must install it (.ci/run does: apt-get install chromium)")
	}
	t.Skip("skipping the browser test: chromium is not installed (Debian: apt-get install chromium)")
	return ""
}

func TestLessonRunInBrowser(t *testing.T) {
	exe := chromiumPath(t)
	s, err := server.New(server.Config{})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srvCtx, stopServer := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- s.Serve(srvCtx, ln) }()
	defer func() {
		stopServer()
		<-served
	}()
	base := "http://" + ln.Addr().String()

	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1200, 1000),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	ctx, cancelTab := chromedp.NewContext(actx)
	defer cancelTab()
	ctx, cancelTimeout := context.WithTimeout(ctx, 90*time.Second)
	defer cancelTimeout()

	const cell = "#\\30 3-fast-cpu-matmul-0" // CSS escape: an id may not start with a digit
	const second = "#\\30 3-fast-cpu-matmul-1"
	css := func(sel string) chromedp.CSS { return chromedp.CSS(sel) }
	count := func(sel string) string {
		t.Helper()
		n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll(`+strconv.Quote(sel)+`).length`))
		if err != nil {
			t.Fatalf("counting %s: %v", sel, err)
		}
		return strconv.Itoa(n)
	}
	text := func(sel string) string {
		t.Helper()
		s, err := chromedp.Run(ctx, chromedp.Text(css(sel)))
		if err != nil {
			t.Fatalf("reading %s: %v", sel, err)
		}
		return s
	}

	err = chromedp.Do(ctx,
		chromedp.Navigate(base+"/lessons/03-fast-cpu-matmul"),
		chromedp.WaitVisible(css(`body[data-ws="open"]`)),
		chromedp.Click(css(cell+" .cell-run")),
		chromedp.WaitVisible(css(cell+" .cell-chart svg")),
		chromedp.WaitVisible(css(cell+" .cell-results tbody tr")),
		chromedp.WaitVisible(css(cell+`[data-state="ended"]`)),
	)
	if err != nil {
		t.Fatalf("running the ladder cell: %v", err)
	}
	if rows, status := count(cell+" .cell-results tbody tr"), text(cell+" .cell-status"); rows != "15" || !strings.HasPrefix(status, "done") {
		t.Errorf("after the run: %s rows (want 15), status %q (want done…)", rows, status)
	}
	if n := count(cell + " .cell-chart svg"); n != "1" {
		t.Errorf("got %s chart SVGs, want 1", n)
	}
	if *screenshot != "" {
		png, err := chromedp.Run(ctx, chromedp.Screenshot(css(cell)))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(*screenshot, png, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	// Shift+Enter in an edited cell runs it; the table shows the edited experiment.
	err = chromedp.Do(ctx,
		chromedp.SetValue(css(second+" .cell-source"), "kernels: [ikj, gonum, cublas]\nsizes: [32, 64]\nrepeats: 1\n"),
		chromedp.Focus(css(second+" .cell-source")),
		chromedp.KeyEvent(kb.Enter, chromedp.KeyModifiers(chromedp.ModifierShift)),
		chromedp.WaitVisible(css(second+`[data-state="ended"]`)),
	)
	if err != nil {
		t.Fatalf("Shift+Enter: %v", err)
	}
	if rows := count(second + " .cell-results tbody tr"); rows != "4" {
		t.Errorf("Shift+Enter run: %s rows, want 4", rows)
	}
	// The GPU kernel did not run here (no GPU, or no GPU runs yet): the cell says why.
	if note := text(second + " .cell-notes li.error"); !strings.HasPrefix(note, "cublas: ") {
		t.Errorf("GPU kernel note %q, want one starting \"cublas: \"", note)
	}

	// A bad spec shows the server's error in the cell.
	err = chromedp.Do(ctx,
		chromedp.SetValue(css(second+" .cell-source"), "kernels: [warp]\nsizes: [8]\n"),
		chromedp.Click(css(second+" .cell-run")),
		chromedp.WaitVisible(css(second+`[data-state="error"]`)),
	)
	if err != nil {
		t.Fatalf("bad spec: %v", err)
	}
	if msg := text(second + " .cell-status"); !strings.Contains(msg, `unknown kernel "warp"`) {
		t.Errorf("bad spec: status %q, want the unknown-kernel error", msg)
	}

	// A spec over the 64 KiB message limit is refused in the page, not left waiting for a reply.
	err = chromedp.Do(ctx,
		chromedp.SetValue(css(second+" .cell-source"), "kernels: [ikj]\nsizes: [8]\n#"+strings.Repeat("x", 70<<10)),
		chromedp.Click(css(second+" .cell-run")),
		chromedp.WaitVisible(css(second+`[data-state="error"]`)),
	)
	if err != nil {
		t.Fatalf("oversized spec: %v", err)
	}
	if msg := text(second + " .cell-status"); !strings.Contains(msg, "64 KiB") {
		t.Errorf("oversized spec: status %q, want the 64 KiB limit", msg)
	}

	// A cuda cell: Show PTX compiles the learner's kernel (NVRTC, no GPU needed) and shows the PTX.
	if os.Getenv("CI") == "true" || nvrtcPresent() {
		const kcell = "#\\30 5-first-cuda-kernel-0"
		err = chromedp.Do(ctx,
			chromedp.Navigate(base+"/lessons/05-first-cuda-kernel"),
			chromedp.WaitVisible(css(`body[data-ws="open"]`)),
			chromedp.Click(css(kcell+" .cell-show-ptx")),
			chromedp.WaitVisible(css(kcell+" .cell-ptx")),
		)
		if err != nil {
			t.Fatalf("Show PTX: %v", err)
		}
		if ptx := text(kcell + " .cell-ptx"); !strings.Contains(ptx, ".entry first_matmul(") {
			t.Errorf("Show PTX: got %.200q, want PTX with the entry first_matmul", ptx)
		}
	}

	// A simt cell: the emulator's counts table and chart fill in.
	const scell = "#\\30 9-why-coalescing-matters-0"
	err = chromedp.Do(ctx,
		chromedp.Navigate(base+"/lessons/09-why-coalescing-matters"),
		chromedp.WaitVisible(css(`body[data-ws="open"]`)),
		chromedp.SetValue(css(scell+" .cell-source"), "kernels: [naive, coalesced]\nn: 32\ngpu: T4\n"),
		chromedp.Click(css(scell+" .cell-run")),
		chromedp.WaitVisible(css(scell+`[data-state="ended"]`)),
	)
	if err != nil {
		t.Fatalf("simt cell: %v", err)
	}
	if rows, svgs := count(scell+" .cell-simt tbody tr"), count(scell+" .cell-chart svg"); rows != "2" || svgs != "1" {
		t.Errorf("simt cell: %s rows, %s charts; want 2 and 1", rows, svgs)
	}

	// Watching a warp: the A, B and C grids appear and the current instruction's elements are coloured.
	const wcell = "#\\30 9-why-coalescing-matters-1"
	err = chromedp.Do(ctx,
		chromedp.Click(css(wcell+" .cell-run")),
		chromedp.WaitVisible(css(wcell+`[data-state="ended"]`)),
		chromedp.WaitVisible(css(wcell+" .warp-grid td[style]")),
	)
	if err != nil {
		t.Fatalf("watch a warp: %v", err)
	}
	if grids := count(wcell + " .warp-grid"); grids != "3" {
		t.Errorf("watch a warp: %s grids, want A, B and C", grids)
	}

	// A systolic cell: the player shows the array's cycles and the result table appears.
	const ycell = "#\\31 0-tpus-and-systolic-arrays-0"
	err = chromedp.Do(ctx,
		chromedp.Navigate(base+"/lessons/10-tpus-and-systolic-arrays"),
		chromedp.WaitVisible(css(`body[data-ws="open"]`)),
		chromedp.Click(css(ycell+" .cell-run")),
		chromedp.WaitVisible(css(ycell+`[data-state="ended"]`)),
		chromedp.WaitVisible(css(ycell+" .sys-grid td.active")),
	)
	if err != nil {
		t.Fatalf("systolic cell: %v", err)
	}
	if pes, tables := count(ycell+" .sys-grid td"), count(ycell+" .cell-systolic-result"); pes != "16" || tables != "1" {
		t.Errorf("systolic cell: %s PEs shown, %s result tables; want 16 and 1", pes, tables)
	}

	// When the server goes away the page says so.
	stopServer()
	<-served
	served <- nil
	if err := chromedp.Do(ctx, chromedp.WaitVisible(css(`#conn-banner`))); err != nil {
		t.Fatalf("waiting for the banner: %v", err)
	}
	if banner := text(`#conn-banner`); !strings.Contains(banner, "Lost the connection") {
		t.Errorf("after the server stopped: banner %q, want a lost-connection message", banner)
	}
}

func nvrtcPresent() bool {
	_, err := cuda.LoadNVRTC()
	return err == nil
}
