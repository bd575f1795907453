// Package e2e drives the playground in a real browser (Debian's chromium through chromedp).
package e2e

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/gpuplayground/playground/gpu/nvidia"
	"github.com/gpuplayground/playground/harness"
	"github.com/gpuplayground/playground/machine"
	"github.com/gpuplayground/playground/server"
)

// statusRe is a finished run's status line: "15 results in 9.1 s, measured on this server just now".
var statusRe = regexp.MustCompile(`^[\d,]+ results? in [\d.]+ m?s\b`)

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

// pageErrors collects what the page's scripts report as going wrong: uncaught exceptions and
// console.error calls (app.js logs a kind module that failed to load there).
type pageErrors struct {
	mu   sync.Mutex
	errs []string
}

func (p *pageErrors) listen(ev any) {
	var msg string
	switch ev := ev.(type) {
	case *runtime.EventExceptionThrown:
		d := ev.ExceptionDetails
		msg = "uncaught: " + d.Text
		if d.Exception != nil {
			msg += " " + d.Exception.Description
		}
	case *runtime.EventConsoleAPICalled:
		if ev.Type != runtime.ConsoleAPICalledTypeError {
			return
		}
		var parts []string
		for _, a := range ev.Args {
			if a.Description != "" {
				parts = append(parts, a.Description)
			} else {
				parts = append(parts, string(a.Value))
			}
		}
		msg = "console.error: " + strings.Join(parts, " ")
	default:
		return
	}
	p.mu.Lock()
	p.errs = append(p.errs, msg)
	p.mu.Unlock()
}

// check fails the test with every error reported since the last check.
func (p *pageErrors) check(t *testing.T, when string) {
	t.Helper()
	p.mu.Lock()
	errs := p.errs
	p.errs = nil
	p.mu.Unlock()
	for _, e := range errs {
		t.Errorf("%s: the page reported %s", when, e)
	}
}

// cellSel is the CSS selector of a cell by id (an id may not start with a digit in CSS, so the first
// character is escaped).
func cellSel(id string) string {
	return fmt.Sprintf(`#\%x %s`, id[0], id[1:])
}

func TestLessonRunInBrowser(t *testing.T) {
	chromiumPath(t)
	base, stopServer := serveStoppable(t, server.Config{Config: machine.Config{Noise: harness.DefaultNoise()}}) // noisy timings get their warning, as in the playground command
	// The tab, cleared before the server stops.
	ctx := newTab(t, 1200, 1000)
	var pageErrs pageErrors
	if err := chromedp.Listen(ctx, pageErrs.listen); err != nil {
		t.Fatal(err)
	}
	// Only a guard against a hang: no step is timed, so a slow or busy machine passes.
	ctx, cancelTimeout := context.WithTimeout(ctx, 5*time.Minute)
	defer cancelTimeout()

	css := func(sel string) chromedp.CSS { return chromedp.CSS(sel) }
	count := func(sel string) int {
		t.Helper()
		n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll(`+strconv.Quote(sel)+`).length`))
		if err != nil {
			t.Fatalf("counting %s: %v", sel, err)
		}
		return n
	}
	text := func(sel string) string {
		t.Helper()
		s, err := chromedp.Run(ctx, chromedp.Text(css(sel)))
		if err != nil {
			t.Fatalf("reading %s: %v", sel, err)
		}
		return s
	}
	eval := func(js string) string {
		t.Helper()
		s, err := chromedp.Run(ctx, chromedp.Evaluate[string](js, chromedp.EvalAwaitPromise))
		if err != nil {
			t.Fatalf("evaluating %s: %v", js, err)
		}
		return s
	}

	// setSource puts text in a cell's source through the page's API (the code editor, or the text box
	// where the editor did not load).
	setSource := func(sel, src string) chromedp.Action[chromedp.Void] { return setCellSource(sel, src) }

	// The ladder cell of A fast CPU matmul: progress, the measured results table and the chart.
	cell := cellSel("fast-cpu-matmul-0")
	results := cell + " .cell-table[data-table=results]"
	err := chromedp.Do(ctx,
		chromedp.Navigate(base+"/lessons/fast-cpu-matmul"),
		waitVisible(css(pageReady)),
		chromedp.Click(css(cell+" .cell-run")),
		waitVisible(css(cell+" .cell-chart svg")),
		waitVisible(css(results+" tbody tr")),
		waitVisible(css(cell+`[data-state="ended"]`)),
	)
	if err != nil {
		t.Fatalf("running the ladder cell: %v", err)
	}
	if rows, status := count(results+" tbody tr"), text(cell+" .cell-status"); rows != 15 || !statusRe.MatchString(status) {
		t.Errorf("after the run: %d rows (want 15), status %q (want 15 results in … s)", rows, status)
	}
	if n := count(cell + " .cell-chart svg"); n != 1 {
		t.Errorf("got %d chart SVGs, want 1", n)
	}
	if head := text(results + " thead"); !strings.Contains(head, "GFLOP/s") {
		t.Errorf("results header %q: want a GFLOP/s column", head)
	}
	if n := count(cell + " .cell-table tr.bad"); n != 0 {
		t.Errorf("%d rows flagged bad, want none", n)
	}
	if p := eval(`(() => { const p = document.querySelector(` + strconv.Quote(cell+" .cell-progress") + `); return p.value + "/" + p.max; })()`); func() bool {
		done, total, _ := strings.Cut(p, "/")
		return done != total || total == "1"
	}() {
		t.Errorf("progress bar after the run: %s, want full (done = total, total > 1)", p)
	}
	// The CSV link holds the header and every row, values as the server sent them.
	csv := eval(`fetch(document.querySelector(` + strconv.Quote(cell+" .cell-table-box:has(.cell-table[data-table=results]) .cell-csv") + `).href).then((r) => r.text())`)
	if lines := strings.Split(strings.TrimSpace(csv), "\n"); len(lines) != 16 || !strings.Contains(lines[0], "GFLOP/s") {
		t.Errorf("CSV of the results: %d lines (want 16: header and 15 rows), header %q", len(lines), lines[0])
	}
	// The page imported the kind's module once, for both matmul cells.
	if n := eval(`String(performance.getEntriesByType("resource").filter((e) => e.name.endsWith("/cells/matmul.js")).length)`); n != "1" {
		t.Errorf("/cells/matmul.js loaded %s times, want once", n)
	}
	pageErrs.check(t, "ladder cell")
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
	second := cellSel("fast-cpu-matmul-1")
	err = chromedp.Do(ctx,
		waitVisible(css(second+`[data-editor="ready"]`)),
		setSource(second, "kernels: [ikj, gonum, cublas]\nsizes: [32, 64]\nrepeats: 1\n"),
		chromedp.Focus(css(second+" .cm-content")),
		chromedp.KeyEvent(kb.Enter, chromedp.KeyModifiers(chromedp.ModifierShift)),
		waitVisible(css(second+`[data-state="ended"]`)),
	)
	if err != nil {
		t.Fatalf("Shift+Enter: %v", err)
	}
	if rows := count(second + " .cell-table[data-table=results] tbody tr"); rows != 4 {
		t.Errorf("Shift+Enter run: %d rows, want 4", rows)
	}
	// The GPU kernel did not run here (no GPU, or no GPU runs yet): the cell says why.
	if note := text(second + " .cell-notes li.error"); !strings.HasPrefix(note, "cublas: ") {
		t.Errorf("GPU kernel note %q, want one starting \"cublas: \"", note)
	}

	// Stop cancels a run; the cell says so and can run again.
	err = chromedp.Do(ctx,
		setSource(second, "kernels: [naive]\nsizes: [1024]\nrepeats: 5\n"),
		chromedp.Click(css(second+" .cell-run")),
		waitVisible(css(second+`[data-state="running"]`)),
		chromedp.Click(css(second+" .cell-stop")),
		waitVisible(css(second+`[data-state="ended"]`)),
	)
	if err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if status := text(second + " .cell-status"); !strings.HasPrefix(status, "cancelled") {
		t.Errorf("after Stop: status %q, want cancelled…", status)
	}

	// A bad spec shows the server's error in the cell.
	err = chromedp.Do(ctx,
		setSource(second, "kernels: [warp]\nsizes: [8]\n"),
		chromedp.Click(css(second+" .cell-run")),
		waitVisible(css(second+`[data-state="error"]`)),
	)
	if err != nil {
		t.Fatalf("bad spec: %v", err)
	}
	if msg := text(second + " .cell-status"); !strings.Contains(msg, `unknown kernel "warp"`) {
		t.Errorf("bad spec: status %q, want the unknown-kernel error", msg)
	}

	// A spec over the 64 KiB message limit is refused in the page, not left waiting for a reply.
	err = chromedp.Do(ctx,
		setSource(second, "kernels: [ikj]\nsizes: [8]\n#"+strings.Repeat("x", 70<<10)),
		chromedp.Click(css(second+" .cell-run")),
		waitVisible(css(second+`[data-state="error"]`)),
	)
	if err != nil {
		t.Fatalf("oversized spec: %v", err)
	}
	if msg := text(second + " .cell-status"); !strings.Contains(msg, "64 KiB") {
		t.Errorf("oversized spec: status %q, want the 64 KiB limit", msg)
	}
	pageErrs.check(t, "fast-cpu-matmul")

	// A reload brings the edits back and replays each cell's latest run from the server; Reset puts
	// the lesson's source back.
	err = chromedp.Do(ctx,
		chromedp.Reload(),
		waitVisible(css(pageReady)),
		waitVisible(css(results+" tbody tr")),
		waitVisible(css(cell+`[data-state="ended"]`)),
		waitVisible(css(second+`[data-state="ended"]`)),
	)
	if err != nil {
		t.Fatalf("reload: %v", err)
	}
	if rows, status := count(results+" tbody tr"), text(cell+" .cell-status"); rows != 15 || !strings.Contains(status, "; ran ") {
		t.Errorf("after a reload: %d rows (want the 15 replayed), status %q (want it to say it is your earlier run)", rows, status)
	}
	if src := eval(`document.querySelector(` + strconv.Quote(second+" .cell-source") + `).value`); src != "kernels: [warp]\nsizes: [8]\n" {
		t.Errorf("after a reload the edited cell holds %q, want the last source run", src)
	}
	if same := eval(`(() => { document.querySelector(` + strconv.Quote(second+" .cell-reset") + `).click(); const s = document.querySelector(` + strconv.Quote(second+" .cell-source") + `); return String(s.value === s.defaultValue); })()`); same != "true" {
		t.Errorf("Reset did not restore the lesson's source")
	}
	pageErrs.check(t, "reload")

	// A cuda cell: Show PTX compiles the learner's kernel (NVRTC, no GPU needed) and shows the PTX.
	if os.Getenv("CI") == "true" || nvrtcPresent() {
		kcell := cellSel("first-cuda-kernel-0")
		err = chromedp.Do(ctx,
			chromedp.Navigate(base+"/lessons/first-cuda-kernel"),
			waitVisible(css(pageReady)),
			chromedp.Click(css(kcell+" .cell-action[data-action=ptx]")),
			waitVisible(css(kcell+" .cell-text")),
			waitVisible(css(kcell+`[data-state="ended"]`)),
		)
		if err != nil {
			t.Fatalf("Show PTX: %v", err)
		}
		if ptx := text(kcell + " .cell-text"); !strings.Contains(ptx, ".entry first_matmul(") {
			t.Errorf("Show PTX: got %.200q, want PTX with the entry first_matmul", ptx)
		}
		pageErrs.check(t, "cuda cell")
	}

	// A simt cell: the emulator's counts table and chart fill in.
	scell := cellSel("why-coalescing-matters-0")
	err = chromedp.Do(ctx,
		chromedp.Navigate(base+"/lessons/why-coalescing-matters"),
		waitVisible(css(pageReady)),
		setSource(scell, "kernels: [naive, coalesced]\nn: 32\ngpu: T4\n"),
		chromedp.Click(css(scell+" .cell-run")),
		waitVisible(css(scell+`[data-state="ended"]`)),
	)
	if err != nil {
		t.Fatalf("simt cell: %v", err)
	}
	if rows, svgs := count(scell+" .cell-table[data-table=counts] tbody tr"), count(scell+" .cell-chart svg"); rows != 2 || svgs != 1 {
		t.Errorf("simt cell: %d rows, %d charts; want 2 and 1", rows, svgs)
	}
	if status := text(scell + " .cell-status"); !strings.Contains(status, "emulated") {
		t.Errorf("simt cell: status %q, want it to say emulated", status)
	}

	// Watching a warp: simt's module draws A, B and C and colours the current instruction's elements.
	wcell := cellSel("why-coalescing-matters-1")
	err = chromedp.Do(ctx,
		chromedp.Click(css(wcell+" .cell-run")),
		waitVisible(css(wcell+`[data-state="ended"]`)),
		waitVisible(css(wcell+" .warp-grid td[style]")),
	)
	if err != nil {
		t.Fatalf("watch a warp: %v", err)
	}
	if grids := count(wcell + " .warp-grid"); grids != 3 {
		t.Errorf("watch a warp: %d grids, want A, B and C", grids)
	}
	pageErrs.check(t, "simt cells")

	// A systolic cell: systolic's module plays the array's cycles; the product table appears.
	ycell := cellSel("tpus-and-systolic-arrays-0")
	err = chromedp.Do(ctx,
		chromedp.Navigate(base+"/lessons/tpus-and-systolic-arrays"),
		waitVisible(css(pageReady)),
		chromedp.Click(css(ycell+" .cell-run")),
		waitVisible(css(ycell+`[data-state="ended"]`)),
		waitVisible(css(ycell+" .sys-flow rect.pe.active")),
	)
	if err != nil {
		t.Fatalf("systolic cell: %v", err)
	}
	if pes, rows := count(ycell+" .sys-flow rect.pe"), count(ycell+" .cell-table[data-table=product] tbody tr"); pes != 16 || rows != 1 {
		t.Errorf("systolic cell: %d PEs shown, %d product rows; want 16 and 1", pes, rows)
	}
	// The player's controls: Pause stops it on a frame, then Step (or Back, on the last frame) moves
	// it by one.
	frame := func() (at, of int) {
		t.Helper()
		pos := text(ycell + " .player-pos")
		if _, err := fmt.Sscanf(pos, "frame %d of %d", &at, &of); err != nil {
			t.Fatalf("systolic player position %q: %v", pos, err)
		}
		return at, of
	}
	if err := chromedp.Do(ctx, chromedp.Click(css(ycell+" .player-play"))); err != nil {
		t.Fatalf("systolic Pause: %v", err)
	}
	at, of := frame()
	step, want := ".player-step", at+1
	if at == of {
		step, want = ".player-back", at-1
	}
	if err := chromedp.Do(ctx, chromedp.Click(css(ycell+" "+step))); err != nil {
		t.Fatalf("systolic %s: %v", step, err)
	}
	if got, _ := frame(); got != want || text(ycell+" .player-play") != "Play" {
		t.Errorf("systolic player: frame %d of %d, then %s: frame %d (want %d), play button %q (want Play)",
			at, of, step, got, want, text(ycell+" .player-play"))
	}
	pageErrs.check(t, "systolic cell")

	// An allreduce cell: a model, and the status says so rather than "measured".
	acell := cellSel("many-gpus-0")
	err = chromedp.Do(ctx,
		chromedp.Navigate(base+"/lessons/many-gpus"),
		waitVisible(css(pageReady)),
		chromedp.Click(css(acell+" .cell-run")),
		waitVisible(css(acell+`[data-state="ended"]`)),
	)
	if err != nil {
		t.Fatalf("allreduce cell: %v", err)
	}
	if rows, status := count(acell+" .cell-table[data-table=model] tbody tr"), text(acell+" .cell-status"); rows == 0 || !strings.Contains(status, "modelled") {
		t.Errorf("allreduce cell: %d model rows, status %q; want rows and a status saying modelled", rows, status)
	}
	pageErrs.check(t, "allreduce cell")

	// When the server goes away the page says so. Its first words are kept as they come: on a
	// loaded machine the first reconnection may already have failed, and the banner moved on to
	// "Cannot reach the server", by the time it is read.
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(() => { const b = document.getElementById("conn-banner");
		window.bannerTexts = [];
		new MutationObserver(() => window.bannerTexts.push(b.textContent)).observe(b, {childList: true, characterData: true, subtree: true});
		return true; })()`)); err != nil {
		t.Fatalf("watching the banner: %v", err)
	}
	stopServer()
	if err := chromedp.Do(ctx, waitVisible(css(`#conn-banner`))); err != nil {
		t.Fatalf("waiting for the banner: %v", err)
	}
	banners, err := chromedp.Run(ctx, chromedp.Evaluate[string](`window.bannerTexts.join(" | ")`))
	if err != nil {
		t.Fatal(err)
	}
	if first, _, _ := strings.Cut(banners, " | "); !strings.Contains(first, "Lost the connection") {
		t.Errorf("after the server stopped: banners %q, want a lost-connection message first", banners)
	}
}

func nvrtcPresent() bool {
	_, err := nvidia.LoadNVRTC()
	return err == nil
}
