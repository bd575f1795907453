package e2e

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/gpuplayground/playground/cells/cellstest"
	"github.com/gpuplayground/playground/harness"
	"github.com/gpuplayground/playground/machine"
	"github.com/gpuplayground/playground/server"
)

// setCellSource puts src in a cell's source through the page's API (the code editor, or the text
// box where the editor did not load); sel selects the cell's section.
func setCellSource(sel, src string) chromedp.Action[chromedp.Void] {
	return evalDo(`document.querySelector(` + strconv.Quote(sel) + `).playground.setSource(` + strconv.Quote(src) + `)`)
}

// pressEnter presses and releases Enter as a keyboard does, the key's default action left to the
// page (chromedp's KeyEvent also sends the character, which an editor that handles the key
// itself, as CodeMirror does, would insert a second time).
func pressEnter() chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		for _, typ := range []input.DispatchKeyEventType{input.DispatchKeyEventTypeRawKeyDown, input.DispatchKeyEventTypeKeyUp} {
			if _, err := cdp.Call(ctx, t, input.DispatchKeyEvent, input.DispatchKeyEventParams{Type: typ, Key: "Enter", Code: "Enter", WindowsVirtualKeyCode: 13}); err != nil {
				return err
			}
		}
		return nil
	})
}

// evalDo runs JavaScript for its effect.
func evalDo(js string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := chromedp.Evaluate[bool]("(() => { "+js+"; return true; })()")(ctx, t)
		return err
	})
}

// browserPage serves the playground on loopback and opens a headless chromium tab on it.
type browserPage struct {
	t    *testing.T
	ctx  context.Context
	base string
	errs *pageErrors
}

func openPage(t *testing.T, width, height int) *browserPage {
	t.Helper()
	return openPageWith(t, width, height, server.Config{})
}

func openPageWith(t *testing.T, width, height int, cfg server.Config) *browserPage {
	t.Helper()
	return openPageOn(t, width, height, cfg, false)
}

// openPageOn is openPageWith, in a tab with WebGPU (newWebGPUTab) where webgpu is true.
func openPageOn(t *testing.T, width, height int, cfg server.Config, webgpu bool) *browserPage {
	t.Helper()
	chromiumPath(t)
	base := serve(t, cfg)
	// The tab, cleared (or closed) before the server stops; only the one browser asked for is started.
	var ctx context.Context
	if webgpu {
		ctx = newWebGPUTab(t, int64(width), int64(height))
	} else {
		ctx = newTab(t, int64(width), int64(height))
	}
	p := &browserPage{t: t, base: base, errs: &pageErrors{}}
	if err := chromedp.Listen(ctx, p.errs.listen); err != nil {
		t.Fatal(err)
	}
	// Only a guard against a hang: no step is timed.
	ctx, cancelTimeout := context.WithTimeout(ctx, 15*time.Minute)
	t.Cleanup(cancelTimeout)
	p.ctx = ctx
	return p
}

// stepTimeout bounds one browserPage.do: more than the two minutes a run may take (the server's run
// time limit) and the page's start.
const stepTimeout = 4 * time.Minute

func (p *browserPage) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	// A step that waits for what never comes fails the test with its name, not the package's
	// timeout with a stack dump; no step of these tests waits longer than a run's time limit.
	ctx, cancel := context.WithTimeout(p.ctx, stepTimeout)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		p.t.Fatalf("%s: %v\n%s", what, err, p.diagnose())
	}
}

// diagnose describes the page for a failed step: the socket's state, each cell's state and status
// line, and the errors the page reported, so that a step that never ended says where it stopped.
func (p *browserPage) diagnose() string {
	ctx, cancel := context.WithTimeout(p.ctx, 10*time.Second)
	defer cancel()
	state, err := chromedp.Run(ctx, chromedp.Evaluate[string](`location.pathname + " ws=" + document.body.dataset.ws + "\n" +
		[...document.querySelectorAll(".cell")].map((e) => "  " + e.id + ": " + e.dataset.state + ": " +
			(e.querySelector(".cell-status")?.textContent || "")).join("\n")`))
	if err != nil {
		state = "the page could not be read: " + err.Error()
	}
	p.errs.mu.Lock()
	errs := strings.Join(p.errs.errs, "\n  ")
	p.errs.mu.Unlock()
	return "page: " + state + "\npage errors:\n  " + errs
}

func (p *browserPage) str(js string) string {
	p.t.Helper()
	s, err := chromedp.Run(p.ctx, chromedp.Evaluate[string](js, chromedp.EvalAwaitPromise))
	if err != nil {
		p.t.Fatalf("evaluating %s: %v", js, err)
	}
	return s
}

func (p *browserPage) open(slug string) {
	p.t.Helper()
	p.do("opening "+slug, chromedp.Navigate(p.base+"/lessons/"+slug), waitVisible(chromedp.CSS(pageReady)))
}

// The code editor: line numbers and highlighting, typing, Shift+Enter runs, a spec error marks the
// line it names, Escape leaves for the Run button, Reset puts the lesson's source back.
func TestEditorInBrowser(t *testing.T) {
	p := openPage(t, 1200, 1000)
	cell := cellSel("counting-flops-0")
	p.open("counting-flops")
	p.do("editor", waitVisible(chromedp.CSS(cell+`[data-editor="ready"] .cm-editor`)))
	original := p.str(`document.querySelector(` + strconv.Quote(cell) + `).playground.getSource()`)
	if lines := p.str(`String(document.querySelectorAll(` + strconv.Quote(cell+" .cm-lineNumbers .cm-gutterElement") + `).length)`); lines == "0" {
		t.Errorf("the editor shows no line numbers")
	}
	if keys := p.str(`[...document.querySelectorAll(` + strconv.Quote(cell+" .cm-content [class*=tok-]") + `)].map((e) => e.textContent).join(" ")`); !strings.Contains(keys, "kernels") {
		t.Errorf("highlighted tokens %q: want the YAML key kernels highlighted", keys)
	}

	// The bundle's highlighting of the other languages: PTX (opcodes, registers, directives), WGSL
	// (keywords, types, attributes) and a cuda cell's YAML header then CUDA C++.
	langs := p.str(`import("/static/editor.bundle.js").then((m) => [
		["ptx", ".visible .entry k(\n.param .u64 a)\n{\n\tld.global.f32 %f1, [%rd1];\n\tfma.rn.f32 %f2, %f1, %f1, %f2;\n}"],
		["wgsl", "@compute @workgroup_size(64)\nfn main(@builtin(global_invocation_id) id: vec3u) {\n  let x: f32 = 1.0;\n}"],
		["yaml+cuda", "kernel: k\n---\n__global__ void k(float* a) { int i = threadIdx.x; }"],
	].map(([lang, text]) => {
		const pre = document.createElement("pre");
		m.highlight(pre, text, lang);
		const tok = (cls) => [...pre.querySelectorAll("." + cls)].map((e) => e.textContent).join(",");
		return lang + ":" + (pre.textContent === text) + ":" + [tok("tok-operatorKeyword"), tok("tok-keyword"), tok("tok-meta"), tok("tok-typeName")].join("|");
	}).join("\n"))`)
	for _, want := range []string{
		"ptx:true:|ld.global.f32,fma.rn.f32||.visible,.entry,.param,.u64",
		"wgsl:true:|fn,let|@compute,@workgroup_size,@builtin|vec3u,f32",
		"yaml+cuda:true:",
	} {
		if !strings.Contains(langs, want) {
			t.Errorf("highlighting: got\n%s\nwant a line starting %q", langs, want)
		}
	}
	if !strings.Contains(langs, "__global__") && !strings.Contains(langs, "void") {
		t.Errorf("yaml+cuda: no C++ keywords highlighted after the header:\n%s", langs)
	}

	// Type a spec whose second line is wrong, and run it with Shift+Enter.
	p.do("typing",
		chromedp.Click(chromedp.CSS(cell+" .cm-content")),
		chromedp.KeyEvent("a", chromedp.KeyModifiers(chromedp.ModifierCtrl)),
		chromedp.KeyEvent(kb.Delete),
		chromedp.SendKeys(chromedp.CSS(cell+" .cm-content"), "sizes: [8, 16]"),
		pressEnter(),
		chromedp.SendKeys(chromedp.CSS(cell+" .cm-content"), "kernels: [warp]"),
		pressEnter(),
		chromedp.SendKeys(chromedp.CSS(cell+" .cm-content"), "repeats: 1"),
	)
	if got := p.str(`document.querySelector(` + strconv.Quote(cell) + `).playground.getSource()`); got != "sizes: [8, 16]\nkernels: [warp]\nrepeats: 1" {
		t.Fatalf("after typing, the source is %q", got)
	}
	p.do("Shift+Enter with an error",
		chromedp.KeyEvent(kb.Enter, chromedp.KeyModifiers(chromedp.ModifierShift)),
		waitVisible(chromedp.CSS(cell+`[data-state="error"]`)),
		waitVisible(chromedp.CSS(cell+` .cm-error-line`)),
	)
	if got := p.str(`[...document.querySelectorAll(` + strconv.Quote(cell+" .cm-error-line") + `)].map((e) => e.dataset.errorLine + ":" + e.textContent).join("|")`); got != "2:kernels: [warp]" {
		t.Errorf("error markers %q, want one on line 2 (kernels: [warp])", got)
	}
	if n := p.str(`String(document.querySelectorAll(` + strconv.Quote(cell+" .cm-error-marker") + `).length)`); n != "1" {
		t.Errorf("%s gutter markers, want 1", n)
	}
	// Escape leaves the editor for the cell's Run button.
	p.do("Escape", chromedp.Focus(chromedp.CSS(cell+" .cm-content")), chromedp.KeyEvent(kb.Escape))
	if got := p.str(`document.activeElement.className`); got != "cell-run" {
		t.Errorf("after Escape the focus is on %q, want the Run button", got)
	}
	// Reset: the lesson's source again, no markers; it runs.
	p.do("Reset", chromedp.Click(chromedp.CSS(cell+" .cell-reset")))
	if got := p.str(`document.querySelector(` + strconv.Quote(cell) + `).playground.getSource()`); got != original {
		t.Errorf("after Reset the source is %q, want the lesson's %q", got, original)
	}
	if n := p.str(`String(document.querySelectorAll(` + strconv.Quote(cell+" .cm-error-line") + `).length)`); n != "0" {
		t.Errorf("after Reset %s error lines remain", n)
	}
	p.do("run after Reset",
		chromedp.Click(chromedp.CSS(cell+" .cell-run")),
		waitVisible(chromedp.CSS(cell+`[data-state="ended"]`)),
	)
	if status := p.str(`document.querySelector(` + strconv.Quote(cell+" .cell-status") + `).textContent`); !statusRe.MatchString(status) {
		t.Errorf("status %q, want \"N results in T s…\"", status)
	}
	p.errs.check(t, "editor")
}

// Dark mode follows prefers-color-scheme, charts included.
func TestDarkModeInBrowser(t *testing.T) {
	p := openPage(t, 1200, 1000)
	p.do("dark", chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "dark"}}})
		return err
	}))
	cell := cellSel("why-gpus-0")
	p.open("why-gpus")
	p.do("run", setCellSource(cell, "kernels: [tiled, parallel]\nsizes: [32, 64]\nrepeats: 1\n"),
		chromedp.Click(chromedp.CSS(cell+" .cell-run")),
		waitVisible(chromedp.CSS(cell+`[data-state="ended"]`)),
		waitVisible(chromedp.CSS(cell+" .cell-chart svg")))
	lum := func(what, js string) float64 {
		t.Helper()
		rgb := p.str(js)
		var r, g, b float64
		if _, err := fmtSscanRGB(rgb, &r, &g, &b); err != nil {
			t.Fatalf("%s: colour %q: %v", what, rgb, err)
		}
		return (0.2126*r + 0.7152*g + 0.0722*b) / 255
	}
	if l := lum("page background", `getComputedStyle(document.body).backgroundColor`); l > 0.2 {
		t.Errorf("page background luminance %.2f in dark mode, want dark", l)
	}
	if l := lum("text", `getComputedStyle(document.querySelector("article p")).color`); l < 0.6 {
		t.Errorf("text luminance %.2f in dark mode, want light", l)
	}
	chartText := `getComputedStyle(document.querySelector(` + strconv.Quote(cell+" .cell-chart svg text") + `)).fill`
	if l := lum("chart text", chartText); l < 0.6 {
		t.Errorf("chart text luminance %.2f in dark mode, want light", l)
	}
	chartBg := `getComputedStyle(document.querySelector(` + strconv.Quote(cell+" .cell-chart svg path") + `)).fill`
	if l := lum("chart background", chartBg); l > 0.2 {
		t.Errorf("chart background luminance %.2f in dark mode, want dark", l)
	}
	p.errs.check(t, "dark mode")
}

// phoneViewport is the phone the lesson pages are checked on: 390×844 CSS px, mobile (the page's
// viewport meta tag applies), portrait, at device scale factor 1. The checks read only CSS px, which
// a phone's factor of 2 or 3 does not change (every lesson page's width, height and rightmost edge
// after its runs, and every chart's width and smallest text, came out the same at 1 and 2), while
// painting at 2 paints four times the pixels: about a tenth of TestEveryLessonFitsInBrowser's CPU
// (docs/benchmarks.md, "Test time, seventh round (the lesson pages' fit)").
func phoneViewport() chromedp.Action[chromedp.Void] {
	return chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile, chromedp.EmulatePortrait)
}

// runEachLayout runs, on the lesson page open in p, the first cell of each kind and `show:`
// (sameLayout) through the server, at its smallest size (cellstest.Small: its tables have every
// column, its chart every kernel), and waits for each to end (or fail); the page's other cells of
// that kind and `show:` are left as written.
func runEachLayout(t *testing.T, p *browserPage) {
	t.Helper()
	ids := p.str(`[...document.querySelectorAll(".cell")].map((e) => e.id).join(" ")`)
	ran := map[string]bool{}
	for _, id := range strings.Fields(ids) {
		sel := cellSel(id)
		src := p.str(`document.querySelector(` + strconv.Quote(sel) + `).playground.getSource()`)
		layout := sameLayout(p.str(`document.querySelector(`+strconv.Quote(sel)+`).dataset.kind`), src)
		if ran[layout] {
			t.Logf("%s not run: a cell laid out as it (%s) ran on this page", id, layout)
			continue
		}
		ran[layout] = true
		if small := cellstest.Small(src); small != src {
			p.do("shrinking "+id, setCellSource(sel, small))
		}
		start := time.Now()
		p.do("running "+id,
			chromedp.Click(chromedp.CSS(sel+" .cell-run")),
			waitVisible(chromedp.CSS(sel+`:is([data-state="ended"], [data-state="error"])`)),
		)
		t.Logf("%s ran in %v", id, time.Since(start).Round(time.Millisecond))
	}
}

// checkNoSidewaysScroll fails t if the lesson page slug open in p is wider than its viewport, or
// the viewport is wider than a phone's (400 px), naming the first elements that stick out
// (those that scroll in their own boxes left out).
func checkNoSidewaysScroll(t *testing.T, p *browserPage, slug string) {
	t.Helper()
	width := p.str(`String(document.documentElement.scrollWidth) + "/" + String(window.innerWidth)`)
	sw, iw, _ := strings.Cut(width, "/")
	a, _ := strconv.Atoi(sw)
	b, _ := strconv.Atoi(iw)
	if a > b || b > 400 {
		wide := p.str(`[...document.querySelectorAll("body *")].filter((e) => e.getBoundingClientRect().right > window.innerWidth + 1 && !e.closest(".cell-table-box, pre, .cm-scroller, .player-stage, article table, .cell-text")).slice(0, 5).map((e) => e.tagName + "." + e.className + " " + Math.round(e.getBoundingClientRect().right)).join(", ")`)
		t.Errorf("%s: the page is %s px wide in a %s px viewport after its cells ran; too wide: %s", slug, sw, iw, wide)
	}
}

// sameLayout names what a cell of kind with source src adds to its page's layout: its kind and the
// value of its header's `show:` line (the columns and players it adds), "" where it has none.
func sameLayout(kind, src string) string {
	header, _, _ := strings.Cut(src, "\n---")
	for _, line := range strings.Split(header, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "show:"); ok {
			return kind + " show:" + strings.Join(strings.Fields(v), " ")
		}
	}
	return kind
}

// The players' controls: pause, step forward and back, scrub, speed.
func TestPlayerControlsInBrowser(t *testing.T) {
	p := openPage(t, 1200, 1000)
	cell := cellSel("tpus-and-systolic-arrays-0")
	p.open("tpus-and-systolic-arrays")
	p.do("run", chromedp.Click(chromedp.CSS(cell+" .cell-run")),
		waitVisible(chromedp.CSS(cell+`[data-state="ended"]`)),
		waitVisible(chromedp.CSS(cell+" .sys-flow rect.pe")),
		chromedp.Click(chromedp.CSS(cell+" .player-play")))
	pos := func() (at, of int) {
		t.Helper()
		s := p.str(`document.querySelector(` + strconv.Quote(cell+" .player-pos") + `).textContent`)
		if _, err := fmtSscanFrame(s, &at, &of); err != nil {
			t.Fatalf("player position %q: %v", s, err)
		}
		return at, of
	}
	if got := p.str(`document.querySelector(` + strconv.Quote(cell+" .player") + `).dataset.playing`); got != "false" {
		t.Errorf("after Pause, playing = %s", got)
	}
	p.do("first", chromedp.Click(chromedp.CSS(cell+" .player-first")))
	if at, of := pos(); at != 1 || of < 3 {
		t.Fatalf("after ⏮: frame %d of %d, want 1 of several", at, of)
	}
	p.do("step", chromedp.Click(chromedp.CSS(cell+" .player-step")), chromedp.Click(chromedp.CSS(cell+" .player-step")))
	if at, _ := pos(); at != 3 {
		t.Errorf("after two steps: frame %d, want 3", at)
	}
	p.do("back", chromedp.Click(chromedp.CSS(cell+" .player-back")))
	if at, _ := pos(); at != 2 {
		t.Errorf("after a step back: frame %d, want 2", at)
	}
	p.do("last", chromedp.Click(chromedp.CSS(cell+" .player-last")))
	if at, of := pos(); at != of {
		t.Errorf("after ⏭: frame %d of %d", at, of)
	}
	p.do("scrub", evalDo(`const s = document.querySelector(`+strconv.Quote(cell+" .player-scrub")+`); s.value = "5"; s.dispatchEvent(new Event("input"))`))
	if at, _ := pos(); at != 5 {
		t.Errorf("after scrubbing to 5: frame %d", at)
	}
	// Inputs wait at the left edge, and the weights are drawn in the cells.
	if w := p.str(`String(document.querySelectorAll(` + strconv.Quote(cell+" .sys-flow text.w") + `).length)`); w != "16" {
		t.Errorf("%s weight labels, want one per PE (16)", w)
	}
	p.do("speed", chromedp.SetValue(chromedp.CSS(cell+" .player-speed-select"), "16"),
		evalDo(`document.querySelector(`+strconv.Quote(cell+" .player-speed-select")+`).dispatchEvent(new Event("change"))`),
		chromedp.Click(chromedp.CSS(cell+" .player-first")),
		chromedp.Click(chromedp.CSS(cell+" .player-play")),
		waitVisible(chromedp.CSS(cell+` .player[data-playing="false"]`)))
	if at, of := pos(); at != of {
		t.Errorf("played at 16× to the end: frame %d of %d", at, of)
	}
	reducedMotion(t, p, cell, pos)
	p.errs.check(t, "players")
}

// reducedMotion runs cell again on page p with the learner's system asking for reduced motion: the
// new player waits on its first frame, paused, until Play, and the page's CSS transitions are off.
func reducedMotion(t *testing.T, p *browserPage, cell string, pos func() (at, of int)) {
	t.Helper()
	fade := `getComputedStyle(document.querySelector(` + strconv.Quote(cell+" .cell-table-frame") + `), "::before").transitionDuration`
	if got := p.str(fade); got == "0s" {
		t.Errorf("with normal motion the table frame's fade lasts %s, want a transition", got)
	}
	p.do("reduce motion", chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{Features: []*emulation.MediaFeature{{Name: "prefers-reduced-motion", Value: "reduce"}}})
		return err
	}))
	if got := p.str(fade); got != "0s" {
		t.Errorf("with reduced motion the table frame's fade lasts %s, want 0s", got)
	}
	p.do("run with reduced motion", chromedp.Click(chromedp.CSS(cell+" .cell-run")),
		waitVisible(chromedp.CSS(cell+`[data-state="ended"]`)),
		waitVisible(chromedp.CSS(cell+" .sys-flow rect.pe")))
	player := `document.querySelector(` + strconv.Quote(cell+" .player") + `)`
	state := func() string {
		t.Helper()
		return p.str(player + `.dataset.playing + " " + ` + player + `.querySelector(".player-play").textContent`)
	}
	if n := p.str(`String(document.querySelectorAll(` + strconv.Quote(cell+" .player") + `).length)`); n != "1" {
		t.Fatalf("%s players after the second run, want 1 (a new one)", n)
	}
	if got, want := state(), "false Play"; got != want {
		t.Errorf("with reduced motion, after a run: playing and button %q, want %q", got, want)
	}
	// At 16× a playing player steps every 37.5 ms; its timer would be set before this wait's
	// 150 ms one, so it would fire first: a still player is still at frame 1 after the wait.
	p.do("16×", chromedp.SetValue(chromedp.CSS(cell+" .player-speed-select"), "16"),
		evalDo(player+`.querySelector(".player-speed-select").dispatchEvent(new Event("change"))`))
	p.str(`new Promise((ok) => setTimeout(() => ok("waited"), 150))`)
	if at, of := pos(); at != 1 || of < 3 {
		t.Errorf("with reduced motion, left alone: frame %d of %d, want 1 of several", at, of)
	}
	p.do("play", chromedp.Click(chromedp.CSS(cell+" .player-play")),
		waitVisible(chromedp.CSS(cell+` .player[data-playing="false"]`)))
	if at, of := pos(); at != of {
		t.Errorf("with reduced motion, after Play at 16×: frame %d of %d, want the last", at, of)
	}
}

func fmtSscanRGB(s string, r, g, b *float64) (int, error) {
	return fmt.Sscanf(strings.TrimPrefix(strings.TrimPrefix(s, "rgba("), "rgb("), "%g, %g, %g", r, g, b)
}

func fmtSscanFrame(s string, at, of *int) (int, error) {
	return fmt.Sscanf(strings.ReplaceAll(s, ",", ""), "frame %d of %d", at, of)
}

// Check-yourself questions are answered and explained in the page and kept over a reload (a wrong
// try shows the answer only when the learner asks); a prediction is shown against the run's result.
func TestQuizAndPredictionInBrowser(t *testing.T) {
	p := openPage(t, 1200, 1000)
	p.open("counting-flops")
	quiz := `.quiz[data-quiz="counting-flops-quiz-0"]`
	q3 := quiz + ` .quiz-q[data-q="3"]`
	p.do("answer", chromedp.Click(chromedp.CSS(q3+` input[value="3"]`)), chromedp.Click(chromedp.CSS(q3+" .quiz-check")))
	verdict := func() string {
		return p.str(`document.querySelector(` + strconv.Quote(q3+" .verdict") + `).textContent + "|" + document.querySelector(` + strconv.Quote(q3+" .explain") + `).hidden`)
	}
	if got := verdict(); got != "Right.|false" {
		t.Errorf("after the right answer: %q, want Right. and the explanation shown", got)
	}
	q1 := quiz + ` .quiz-q[data-q="1"]`
	p.do("wrong number", chromedp.SendKeys(chromedp.CSS(q1+" .quiz-input"), "2,000,000"), chromedp.Click(chromedp.CSS(q1+" .quiz-check")))
	q1state := func() string {
		return p.str(`document.querySelector(` + strconv.Quote(q1+" .verdict") + `).textContent + "|" + document.querySelector(` + strconv.Quote(q1+" .explain") + `).hidden`)
	}
	// A wrong try is marked wrong without giving the answer away; the answer comes on request.
	if got, want := q1state(), "Not quite. Try again, or show the answer.|true"; got != want {
		t.Errorf("after a wrong number: %q, want %q", got, want)
	}
	p.do("show answer", chromedp.Click(chromedp.CSS(q1+" .quiz-reveal")))
	if got, want := q1state(), "The answer is 268,435,456.|false"; got != want {
		t.Errorf("after Show answer: %q, want %q", got, want)
	}
	p.open("counting-flops")
	if got := verdict(); got != "Right.|false" {
		t.Errorf("after a reload: %q, want the kept answer checked again", got)
	}

	cell := cellSel("counting-flops-0")
	p.do("predict and run",
		chromedp.SendKeys(chromedp.CSS(`#counting-flops-predict-0 .goal-input`), "1"),
		setCellSource(cell, "kernels: [naive]\nsizes: [64, 512]\ndtype: float32\nrepeats: 1\n"),
		chromedp.Click(chromedp.CSS(cell+" .cell-run")),
		waitVisible(chromedp.CSS(cell+`[data-state="ended"]`)))
	if got := p.str(`document.querySelector("#counting-flops-predict-0 .goal-verdict").textContent`); !strings.HasPrefix(got, "You predicted 1 GFLOP/s; the run gave ") {
		t.Errorf("prediction verdict %q", got)
	}
	p.errs.check(t, "quiz and prediction")
}

// Answers kept under a lesson's former numbered name (lessons/renamed.yaml) are moved to the current
// question and prediction when the renamed lesson opens, and the former keys are dropped.
func TestRenamedAnswersMoveInBrowser(t *testing.T) {
	p := openPage(t, 1200, 1000)
	p.open("why-gpus")
	p.str(`localStorage.setItem("playground.quiz.04-counting-flops-quiz-0.3", "3");
		localStorage.setItem("playground.predict.04-counting-flops-predict-0", "7"); "ok"`)
	p.open("counting-flops")
	q3 := `.quiz[data-quiz="counting-flops-quiz-0"] .quiz-q[data-q="3"]`
	if got := p.str(`document.querySelector(` + strconv.Quote(q3+" .verdict") + `).textContent`); got != "Right." {
		t.Errorf("the answer kept under the former key: verdict %q, want Right.", got)
	}
	if got := p.str(`document.querySelector("#counting-flops-predict-0 .goal-input").value`); got != "7" {
		t.Errorf("the prediction kept under the former key: %q, want 7", got)
	}
	if got := p.str(`String(localStorage.getItem("playground.quiz.04-counting-flops-quiz-0.3")) + String(localStorage.getItem("playground.predict.04-counting-flops-predict-0"))`); got != "nullnull" {
		t.Errorf("former keys still kept: %q", got)
	}
	p.errs.check(t, "renamed answers")
}

// A run on a busy machine says its timings are noisy and offers to run again.
func TestNoisyRunOffersARerunInBrowser(t *testing.T) {
	// Both notes: any spread over the repeats is noisy here, and the machine reads as busy.
	busy := &harness.Noise{Spread: 1.000001, MinSeconds: 1e-9, Load: func() (float64, int, bool) { return 9, 2, true }}
	p := openPageWith(t, 1200, 1000, server.Config{Config: machine.Config{Noise: busy}})
	cell := cellSel("counting-flops-0")
	p.open("counting-flops")
	p.do("run", setCellSource(cell, "kernels: [naive]\nsizes: [64]\nrepeats: 5\n"),
		chromedp.Click(chromedp.CSS(cell+" .cell-run")),
		waitVisible(chromedp.CSS(cell+`[data-state="ended"]`)),
		waitVisible(chromedp.CSS(cell+" .cell-notes li.noisy .note-rerun")))
	if note := p.str(`[...document.querySelectorAll(` + strconv.Quote(cell+" .cell-notes li.noisy") + `)].map((li) => li.textContent).join(" | ")`); !strings.Contains(note, "load average was 9.0 on 2 logical CPUs") {
		t.Errorf("noisy note %q", note)
	}
	// One Run again per run, however many notes say the timings are noisy.
	if n := p.str(`String(document.querySelectorAll(` + strconv.Quote(cell+" .note-rerun") + `).length) + " buttons, " + document.querySelectorAll(` + strconv.Quote(cell+" .cell-notes li.warning") + `).length + " warnings"`); !strings.HasPrefix(n, "1 buttons, 2 warnings") {
		t.Errorf("a noisy run offers %s, want one Run again", n)
	}
	p.do("rerun", evalDo(`document.querySelector(`+strconv.Quote(cell)+`).dataset.state = "stale"`),
		chromedp.Click(chromedp.CSS(cell+" .note-rerun")),
		waitVisible(chromedp.CSS(cell+`[data-state="ended"]`)))
	p.errs.check(t, "noisy run")
}

// Cells of one kind are laid out alike unless their `show:` differs; the code below a cuda cell's
// header ("---") is not read.
func TestSameLayout(t *testing.T) {
	for _, c := range []struct {
		kind, src, want string
	}{
		{"matmul", "kernels: [naive]\nsizes: [64]\n", "matmul"},
		{"matmul", "kernels: [naive]\nshow:  [occupancy,   modelled]\n", "matmul show:[occupancy, modelled]"},
		{"cuda", "kernel: k\nshow: [blocks run]\n---\n__global__ void k() {}\n", "cuda show:[blocks run]"},
		{"cuda", "kernel: k\n---\n// show: [occupancy]\n", "cuda"},
	} {
		if got := sameLayout(c.kind, c.src); got != c.want {
			t.Errorf("sameLayout(%q, %q) = %q, want %q", c.kind, c.src, got, c.want)
		}
	}
}
