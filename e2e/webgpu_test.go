package e2e

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/gpuplayground/playground/harness"
	"github.com/gpuplayground/playground/machine"
	"github.com/gpuplayground/playground/server"
)

// webgpuLesson has a matmul cell with the whole WGSL ladder at ragged sizes (and 128, a multiple of
// every kernel's tile with more than one workgroup each way), a wgsl cell with a compile error on its
// line 9, a correct wgsl cell, and a slow wgsl cell (for closing the page mid-run: sizes up to
// webgpu.SoftwareMaxN, which SwiftShader still runs). webgpuOtherLesson, the second page's, has two
// CPU-only cells.
const webgpuLesson = "---\ntitle: WebGPU test\nsummary: s\norder: 1\n---\n\n" +
	"```matmul\nid: ladder\nkernels: [ikj, webgpu-naive, webgpu-coalesced, webgpu-tiled, webgpu-regblock, webgpu-naive-f16, webgpu-coalesced-f16, webgpu-tiled-f16, webgpu-regblock-f16]\nsizes: [1, 33, 100, 128]\nrepeats: 2\ntransfers: true\n```\n\n" +
	"```wgsl\nid: broken\nentry: mm\nworkgroup: [8, 8]\ndispatch: [\"ceil(n/8)\", \"ceil(n/8)\"]\nsizes: [16]\n---\n@compute @workgroup_size(8, 8)\nfn mm(@builtin(global_invocation_id) id: vec3<u32>) {\n  let x: u32 = undefined_thing;\n}\n```\n\n" +
	"```wgsl\nid: own\nentry: mm\nworkgroup: [8, 8]\ndispatch: [\"ceil(n/8)\", \"ceil(n/8)\"]\nsizes: [1, 33]\nrepeats: 2\ncompare: [ikj, webgpu-tiled]\n---\n" + ownKernel + "```\n\n" +
	"```wgsl\nid: slow\nentry: mm\nworkgroup: [8, 8]\ndispatch: [\"ceil(n/8)\", \"ceil(n/8)\"]\nsizes: [256, 320, 384, 448, 512]\nrepeats: 20\n---\n" + ownKernel + "```\n"

// webgpuOtherLesson is a page of two CPU-only cells (a lighter load than webgpuLesson's).
const webgpuOtherLesson = "---\ntitle: Other\nsummary: s\norder: 2\n---\n\n" +
	"```matmul\nid: cpu\nkernels: [ikj]\nsizes: [16]\nrepeats: 1\n```\n\n" +
	"```matmul\nid: nogpu\nkernels: [ikj]\nsizes: [8]\nrepeats: 1\n```\n"

const ownKernel = `@group(0) @binding(0) var<storage, read> a: array<f32>;
@group(0) @binding(1) var<storage, read> b: array<f32>;
@group(0) @binding(2) var<storage, read_write> c: array<f32>;
@group(0) @binding(3) var<uniform> dims: vec4<u32>;
@compute @workgroup_size(8, 8)
fn mm(@builtin(global_invocation_id) id: vec3<u32>) {
  let n = dims.x;
  if (id.x >= n || id.y >= n) { return; }
  var acc = 0.0;
  for (var k = 0u; k < n; k++) { acc += a[id.y * n + k] * b[k * n + id.x]; }
  c[id.y * n + id.x] = acc;
}
`

// webgpuFlags turn WebGPU on, on SwiftShader, Chromium's software adapter (no GPU is needed).
func webgpuFlags() []chromedp.ExecAllocatorOption {
	return []chromedp.ExecAllocatorOption{
		chromedp.Flag("enable-unsafe-webgpu", true),
		chromedp.Flag("enable-unsafe-swiftshader", true),
		chromedp.Flag("use-webgpu-adapter", "swiftshader"),
	}
}

// webgpuOptions are the browser options plus WebGPU on SwiftShader: a browser of its own, not the
// shared one (newTab).
func webgpuOptions(t *testing.T, exe string) []chromedp.ExecAllocatorOption {
	return browserOptions(t.TempDir(), exe, append(webgpuFlags(), chromedp.WindowSize(1200, 1000))...)
}

func TestWebGPUInBrowser(t *testing.T) {
	dir := t.TempDir()
	for name, md := range map[string]string{"w.md": webgpuLesson, "other.md": webgpuOtherLesson} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(md), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// A run whose page closed gives up its queue slot after PageGone: a short one here, so that
	// the wait for the next run is not the default's 10 s.
	base := serve(t, server.Config{LessonsDir: dir, PageGone: 100 * time.Millisecond})

	// Two pages (tabs) in the shared WebGPU browser: closing the first leaves the browser running.
	ctx, cancelTab := webgpuBrowser.closableTab(t, 1200, 1000, webgpuFlags()...)
	var pageErrs pageErrors
	if err := chromedp.Listen(ctx, pageErrs.listen); err != nil {
		t.Fatal(err)
	}
	// Only a guard against a hang: no step is timed, so a slow or busy machine passes.
	ctx, cancelTimeout := context.WithTimeout(ctx, 8*time.Minute)
	defer cancelTimeout()
	eval := func(ctx context.Context, js string) string {
		t.Helper()
		s, err := chromedp.Run(ctx, chromedp.Evaluate[string](js, chromedp.EvalAwaitPromise))
		if err != nil {
			t.Fatalf("evaluating %s: %v", js, err)
		}
		return s
	}
	texts := func(ctx context.Context, sel string) []string {
		t.Helper()
		var out []string
		js := `JSON.stringify([...document.querySelectorAll(` + strconv.Quote(sel) + `)].map((e) => e.textContent))`
		if err := json.Unmarshal([]byte(eval(ctx, js)), &out); err != nil {
			t.Fatalf("reading %s: %v", sel, err)
		}
		return out
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(base+"/lessons/w"), waitVisible(chromedp.CSS(pageReady))); err != nil {
		t.Fatal(err)
	}
	// WebGPU must be there: CI's chromium runs it on SwiftShader (a browser without it fails here).
	adapter := eval(ctx, `(async () => { if (!navigator.gpu) return "no navigator.gpu"; const a = await navigator.gpu.requestAdapter(); if (!a) return "no adapter"; const i = a.info || {}; return JSON.stringify({vendor: i.vendor, architecture: i.architecture, fallback: i.isFallbackAdapter ?? a.isFallbackAdapter, f16: a.features.has("shader-f16"), ts: a.features.has("timestamp-query")}); })()`)
	if !strings.HasPrefix(adapter, "{") {
		t.Fatalf("WebGPU is not available in headless chromium with --enable-unsafe-webgpu --enable-unsafe-swiftshader: %s", adapter)
	}
	t.Logf("adapter: %s", adapter)
	f16 := strings.Contains(adapter, `"f16":true`)

	// The ladder at ragged sizes: every webgpu kernel correct, rows in the browser table, the
	// software adapter labelled as such, and the chart showing the server and the browser.
	cell := cellSel("ladder")
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(cell+" .cell-run")), waitVisible(chromedp.CSS(cell+`[data-state="ended"]`))); err != nil {
		t.Fatalf("running the ladder: %v", err)
	}
	status := eval(ctx, `document.querySelector(`+strconv.Quote(cell+" .cell-status")+`).textContent`)
	notes := strings.Join(texts(ctx, cell+" .cell-notes li"), "\n")
	rows := texts(ctx, cell+` .cell-table[data-table=browser] tbody tr`)
	wantRows := 16
	if f16 {
		wantRows = 32
	}
	if len(rows) != wantRows || !strings.Contains(status, "measured in your browser") {
		t.Fatalf("ladder: %d browser rows (want %d), status %q, notes:\n%s", len(rows), wantRows, status, notes)
	}
	for _, r := range rows {
		t.Logf("browser row: %s", r)
	}
	for _, size := range []string{"1", "33", "100", "128"} {
		for _, k := range []string{"webgpu-naive", "webgpu-coalesced", "webgpu-tiled", "webgpu-regblock"} {
			found := false
			for _, r := range rows {
				found = found || strings.HasPrefix(r, k+size+"f32")
			}
			if !found {
				t.Errorf("no row for %s at n=%s in %q", k, size, rows)
			}
		}
	}
	if bad := texts(ctx, cell+" .cell-table[data-table=browser] tr.bad"); len(bad) > 0 {
		t.Errorf("webgpu rows failing their check: %q", bad)
	}
	if !f16 && strings.Count(notes, "lacks the shader-f16 feature") != 4 {
		t.Errorf("without shader-f16, want one note per f16 kernel; notes:\n%s", notes)
	}
	caption := eval(ctx, `document.querySelector(`+strconv.Quote(cell+" .cell-table[data-table=browser]")+`).closest(".cell-table-box").textContent`)
	if !strings.Contains(caption, "software WebGPU adapter running on your CPU, not a GPU") || strings.Contains(caption, "your GPU (") {
		t.Errorf("the fallback adapter's caption: %q", caption)
	}
	if !strings.Contains(notes, "after this server's own kernels") {
		t.Errorf("no note about the order of the server's and the browser's kernels:\n%s", notes)
	}
	svg := eval(ctx, `document.querySelector(`+strconv.Quote(cell+" .cell-chart svg")+`).outerHTML`)
	if !strings.Contains(svg, "ikj (this server)") || !strings.Contains(svg, "webgpu-regblock (your browser, software)") {
		t.Errorf("the chart lacks the server's or the browser's series")
	}
	pageErrs.check(t, "ladder")

	// A compile error lands on its own cell line: the WGSL's line 3 is the cell's line 9.
	broken := cellSel("broken")
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(broken+" .cell-run")), waitVisible(chromedp.CSS(broken+`[data-state="error"]`))); err != nil {
		t.Fatalf("running the broken cell: %v", err)
	}
	if msg := eval(ctx, `document.querySelector(`+strconv.Quote(broken+" .cell-status")+`).textContent`); !strings.Contains(msg, "line 9:") || !strings.Contains(msg, "undefined_thing") {
		t.Errorf("compile error: %q, want it on line 9", msg)
	}

	// The learner's kernel runs beside a CPU kernel and a ladder kernel.
	own := cellSel("own")
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(own+" .cell-run")), waitVisible(chromedp.CSS(own+`[data-state="ended"]`))); err != nil {
		t.Fatalf("running the own kernel: %v", err)
	}
	ownRows := texts(ctx, own+` .cell-table[data-table=browser] tbody tr`)
	if len(ownRows) != 4 || !strings.HasPrefix(ownRows[0], "custom1") || len(texts(ctx, own+" tr.bad")) != 0 {
		t.Errorf("own kernel rows %q", ownRows)
	}
	if n := len(texts(ctx, own+` .cell-table[data-table=results] tbody tr`)); n != 2 {
		t.Errorf("own kernel: %d server rows, want 2 (ikj)", n)
	}
	pageErrs.check(t, "wgsl cells")

	// A page closed while its browser part runs leaves the server's queue moving: another page's run
	// starts and ends.
	tab2 := newWebGPUTab(t, 1200, 1000)
	if err := chromedp.Do(tab2, chromedp.Navigate(base+"/lessons/other"), waitVisible(chromedp.CSS(pageReady))); err != nil {
		t.Fatal(err)
	}
	slow := cellSel("slow")
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(slow+" .cell-run")), waitVisible(chromedp.CSS(slow+`[data-state="running"]`))); err != nil {
		t.Fatalf("starting the slow cell: %v", err)
	}
	if err := chromedp.Do(ctx, pollUntil(`document.querySelector(`+strconv.Quote(slow+" .cell-status")+`).textContent.startsWith("running")`)); err != nil {
		t.Fatal(err)
	}
	cpu := cellSel("cpu")
	if err := chromedp.Do(tab2, chromedp.Click(chromedp.CSS(cpu+" .cell-run")), waitVisible(chromedp.CSS(cpu+`[data-state="running"], `+cpu+`[data-state="idle"]`))); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(tab2, pollUntil(`document.querySelector(`+strconv.Quote(cpu+" .cell-status")+`).textContent.startsWith("queued")`)); err != nil {
		t.Fatalf("the other page's run should wait behind the slow one: %v", err)
	}
	cancelTab() // closes the first page mid-run
	if err := chromedp.Do(tab2, waitVisible(chromedp.CSS(cpu+`[data-state="ended"]`))); err != nil {
		t.Fatalf("after closing a page mid-run, another page's run: %v", err)
	}

	// A browser without WebGPU (navigator.gpu hidden): each webgpu kernel gets one note saying why,
	// and the server's kernel still runs.
	eval(tab2, `Object.defineProperty(Navigator.prototype, "gpu", { get: () => undefined }), "hidden"`)
	nogpu := cellSel("nogpu")
	if err := chromedp.Do(tab2,
		setCellSource(nogpu, "kernels: [ikj, webgpu-naive, webgpu-tiled-f16]\nsizes: [8]\nrepeats: 1\n"), // through the editor, as a learner types
		chromedp.Click(chromedp.CSS(nogpu+" .cell-run")),
		waitVisible(chromedp.CSS(nogpu+`[data-state="ended"]`)),
	); err != nil {
		t.Fatalf("without WebGPU: %v", err)
	}
	notes = strings.Join(texts(tab2, nogpu+" .cell-notes li"), "\n")
	if strings.Count(notes, "navigator.gpu is missing") != 2 || !strings.Contains(notes, "webgpu-naive: not run") || !strings.Contains(notes, "webgpu-tiled-f16: not run") {
		t.Errorf("without WebGPU, notes:\n%s", notes)
	}
	if n := len(texts(tab2, nogpu+` .cell-table[data-table=results] tbody tr`)); n != 1 {
		t.Errorf("without WebGPU: %d server rows, want 1", n)
	}
}

var webgpuRates = flag.Bool("webgpu-rates", false, "run the WGSL ladder on SwiftShader at n = 64 … 1024 beside two CPU kernels and log both tables (docs/benchmarks.md, \"WebGPU on SwiftShader\")")

// TestWebGPUSoftwareRates is not a test but the measurement behind docs/benchmarks.md's SwiftShader
// section; it runs only with -webgpu-rates.
func TestWebGPUSoftwareRates(t *testing.T) {
	if !*webgpuRates {
		t.Skip("a measurement for docs/benchmarks.md: go test ./e2e -run WebGPUSoftwareRates -v -args -webgpu-rates")
	}
	exe := chromiumPath(t)
	dir := t.TempDir()
	lesson := "---\ntitle: Rates\nsummary: s\norder: 1\n---\n\n```matmul\nid: rates\nkernels: [tiled, simd-parallel, webgpu-naive, webgpu-coalesced, webgpu-tiled, webgpu-regblock]\nsizes: [64, 256, 512, 1024]\nrepeats: 5\ntransfers: true\n```\n"
	if err := os.WriteFile(filepath.Join(dir, "r.md"), []byte(lesson), 0o644); err != nil {
		t.Fatal(err)
	}
	base := serve(t, server.Config{Config: machine.Config{Limits: harness.Limits{RunTimeout: 10 * time.Minute}}, LessonsDir: dir})
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), webgpuOptions(t, exe)...)
	defer cancelAlloc()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	ctx, cancelTimeout := context.WithTimeout(ctx, 12*time.Minute)
	defer cancelTimeout()
	cell := cellSel("rates")
	if err := chromedp.Do(ctx, chromedp.Navigate(base+"/lessons/r"), waitVisible(chromedp.CSS(pageReady)),
		chromedp.Click(chromedp.CSS(cell+" .cell-run")), waitVisible(chromedp.CSS(cell+`[data-state="ended"]`))); err != nil {
		t.Fatal(err)
	}
	out, err := chromedp.Run(ctx, chromedp.Evaluate[string](`[...document.querySelectorAll(`+strconv.Quote(cell+" .cell-table-box, "+cell+" .cell-notes li")+`)].map((b) => b.innerText).join("\n\n")`))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s", out)
}
