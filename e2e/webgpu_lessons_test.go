package e2e

import (
	"encoding/json"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/gpuplayground/playground/cells"
	"github.com/gpuplayground/playground/cells/builtin"
	"github.com/gpuplayground/playground/cells/cellstest"
	"github.com/gpuplayground/playground/cells/shared/webgpu"
	"github.com/gpuplayground/playground/gpu/nvidia"
	"github.com/gpuplayground/playground/harness"
	"github.com/gpuplayground/playground/harness/peaks"
	"github.com/gpuplayground/playground/kernels"
	"github.com/gpuplayground/playground/lessons"
	"github.com/gpuplayground/playground/server"
)

// sizesLine is a kernel cell's list of sizes.
var sizesLine = regexp.MustCompile(`(?m)^sizes:\s*\[([^\]]*)\]`)

// Every cell of every lesson that runs in the browser through WebGPU (a wgsl cell, a cell naming a
// webgpu- kernel, a budget cell measuring "your GPU"), as the lesson ships it but at fewer and
// smaller sizes (browserSizes: its kernels, code and other settings as written), runs on
// SwiftShader (the shared browser's software adapter, newWebGPUTab) to its end, never an error or
// the run's time limit; a cell with sizes above webgpu.SoftwareMaxN says they were not run there.
// Of the budget cells only the first runs: each measures the same thing in the browser
// (budget.BrowserKernel at budget.BrowserN), and what differs between them, the workload, is
// modelled in the server (lessons' TestEveryCellRuns runs each budget cell,
// TestEveryLessonFitsInBrowser shows each page's). Only the pages with a cell to run are loaded
// (browserCells, from the lessons as the server loads them), and each page must show just those
// cells as running in the browser. No wall-clock budget is asserted (each run's time is logged).
func TestEveryWebGPUCellInBrowser(t *testing.T) {
	pages, total := browserCells(t)
	p := openPageOn(t, 1280, 1000, server.Config{}, true)
	ran := 0
	for i, pg := range pages {
		p.open(pg.slug)
		if i == 0 { // the first page opened asks for the adapter, which is the browser's
			adapter := p.str(`(async () => { if (!navigator.gpu) return "no navigator.gpu"; const a = await navigator.gpu.requestAdapter(); if (!a) return "no adapter"; const i = a.info || {}; return JSON.stringify({architecture: i.architecture, fallback: i.isFallbackAdapter ?? a.isFallbackAdapter}); })()`)
			if !strings.HasPrefix(adapter, "{") {
				t.Fatalf("the shared browser has no WebGPU on SwiftShader: %s", adapter)
			}
		}
		var found []struct{ ID, Kind, Source string }
		js := `JSON.stringify([...document.querySelectorAll(".cell")].map((e) => ({ID: e.id, Kind: e.dataset.kind, Source: e.playground.getSource()})))`
		if err := json.Unmarshal([]byte(p.str(js)), &found); err != nil {
			t.Fatalf("%s: cells: %v", pg.slug, err)
		}
		var shown []string
		for _, c := range found {
			if runsInBrowser(c.Kind, c.Source) && (c.Kind != "budget" || slices.Contains(pg.ids, c.ID)) {
				shown = append(shown, c.ID)
				ran++
				runBrowserCell(t, p, c.ID, c.Kind, c.Source)
			}
		}
		if !slices.Equal(shown, pg.ids) {
			t.Errorf("%s: the page shows %q as running in the browser, the lesson %q", pg.slug, shown, pg.ids)
		}
		p.errs.check(t, pg.slug)
	}
	if ran < 3 {
		t.Errorf("only %d WebGPU cells found in the lessons", ran)
	}
	t.Logf("%d WebGPU cells run on %d of %d lesson pages", ran, len(pages), total)
}

// browserPageCells is a lesson page and the ids of its cells that TestEveryWebGPUCellInBrowser runs.
type browserPageCells struct {
	slug string
	ids  []string
}

// browserCells loads the embedded lessons as a server does and returns the pages holding a cell
// that runsInBrowser, in the lessons' order, with those cells (of the budget cells only the first:
// the others are logged as not run), and the number of lessons.
func browserCells(t *testing.T) ([]browserPageCells, int) {
	t.Helper()
	env := cells.Env{Kernels: append(kernels.CPU(), nvidia.GEMMs("no CUDA device (test)")...), Limits: harness.DefaultLimits(), GPU: cellstest.NoGPU{}, Roofline: &peaks.Cache{}}
	all, err := lessons.Load(lessons.Embedded, builtin.Kinds(env))
	if err != nil {
		t.Fatal(err)
	}
	var out []browserPageCells
	budgetRan := ""
	for _, l := range all {
		pg := browserPageCells{slug: l.Slug}
		for _, c := range l.Cells {
			switch {
			case !runsInBrowser(c.Kind, c.Source):
			case c.Kind == "budget" && budgetRan != "":
				t.Logf("%s not run: its measurement in the browser is %s's", c.ID, budgetRan)
			default:
				if c.Kind == "budget" {
					budgetRan = c.ID
				}
				pg.ids = append(pg.ids, c.ID)
			}
		}
		if len(pg.ids) > 0 {
			out = append(out, pg)
		}
	}
	return out, len(all)
}

// runBrowserCell runs the cell id of p's page, of kind and source src, at browserSizes, and checks
// that it ends with rows measured in the browser, its notes folded as they should be, and a note
// naming its sizes above webgpu.SoftwareMaxN.
func runBrowserCell(t *testing.T, p *browserPage, id, kind, src string) {
	t.Helper()
	sel := cellSel(id)
	fewer := browserSizes(src)
	if fewer != src {
		p.do("shrinking "+id, setCellSource(sel, fewer))
	}
	start := time.Now()
	p.do("running "+id,
		chromedp.Click(chromedp.CSS(sel+" .cell-run")),
		waitVisible(chromedp.CSS(sel+`:is([data-state="ended"], [data-state="error"])`)))
	state := p.str(`document.querySelector(` + strconv.Quote(sel) + `).dataset.state`)
	status := p.str(`document.querySelector(` + strconv.Quote(sel+" .cell-status") + `).textContent`)
	notes := p.str(`[...document.querySelectorAll(` + strconv.Quote(sel+" .cell-notes li") + `)].map((e) => e.textContent).join("\n")`)
	t.Logf("%s (%s) ran in %v: %s", id, kind, time.Since(start).Round(time.Millisecond), status)
	if state != "ended" {
		t.Errorf("%s: state %q, want ended; status %q; notes:\n%s", id, state, status, notes)
		return
	}
	if rows := p.str(`String(document.querySelectorAll(` + strconv.Quote(sel+" .cell-table[data-table=browser] tbody tr") + `).length)`); rows == "0" {
		t.Errorf("%s: no row measured in the browser; notes:\n%s", id, notes)
	}
	checkNotesFold(t, p, sel)
	if big := sizesOver(fewer, webgpu.SoftwareMaxN); big != "" && !strings.Contains(notes, "not run at n = "+big) {
		t.Errorf("%s: sizes %s are above %d, and no note says they were not run on the software adapter; notes:\n%s", id, big, webgpu.SoftwareMaxN, notes)
	}
}

// runsInBrowser reports whether a cell of kind with source src runs WebGPU in the browser: a wgsl
// cell, a cell naming a webgpu- kernel, a budget cell measuring "your GPU".
func runsInBrowser(kind, src string) bool {
	return kind == "wgsl" || strings.Contains(src, "webgpu-") || (kind == "budget" && !yourGPUOff.MatchString(src))
}

// yourGPUOff is a budget cell's line turning its "your GPU" measurement off.
var yourGPUOff = regexp.MustCompile(`(?m)^your_gpu:\s*false`)

// browserSizes returns a cell's source with its `sizes:` list cut to its smallest size, or
// browserSmallN where that is smaller, and, where it has sizes above webgpu.SoftwareMaxN (which a
// software adapter does not run: its note is still checked), one size just above that cap, and
// `repeats: 1`; the rest of the source stays. On SwiftShader a size costs about n³ (2 s a kernel at
// 512, docs/benchmarks.md), and so does the server's CPU kernels' run at a size the browser skips
// (ikj at 1024, about 2 CPU s): the larger sizes, which take the same code paths, were most of the
// test's time; the browser's speed there is measured by TestWebGPUSoftwareRates.
func browserSizes(src string) string {
	src = sizesLine.ReplaceAllStringFunc(src, func(line string) string {
		var sizes []int
		for _, f := range strings.Split(sizesLine.FindStringSubmatch(line)[1], ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil {
				return line
			}
			sizes = append(sizes, n)
		}
		if len(sizes) == 0 {
			return line
		}
		keep := []string{strconv.Itoa(min(slices.Min(sizes), browserSmallN))}
		if slices.Max(sizes) > webgpu.SoftwareMaxN {
			keep = append(keep, strconv.Itoa(webgpu.SoftwareMaxN+1))
		}
		return "sizes: [" + strings.Join(keep, ", ") + "]"
	})
	return repeatsLine.ReplaceAllString(src, "repeats: 1")
}

// browserSmallN caps the smallest size browserSizes keeps: like the lessons' smallest sizes (64 and
// 256), a multiple of every ladder kernel's tile (16 and 64) and of any workgroup edge up to 64.
const browserSmallN = 64

// repeatsLine is a cell's `repeats:` line.
var repeatsLine = regexp.MustCompile(`(?m)^repeats:\s*\d+\s*$`)

// sizesOver lists, comma-separated, the sizes of a cell's sizes line above max.
func sizesOver(src string, max int) string {
	m := sizesLine.FindStringSubmatch(src)
	if m == nil {
		return ""
	}
	var out []string
	for _, s := range strings.Split(m[1], ",") {
		if n, err := strconv.Atoi(strings.TrimSpace(s)); err == nil && n > max {
			out = append(out, strconv.Itoa(n))
		}
	}
	return strings.Join(out, ", ")
}

// checkNotesFold checks a finished cell's notes: errors and warnings shown, the first info note
// shown and the rest folded behind one "n more notes" button, which unfolds them all.
func checkNotesFold(t *testing.T, p *browserPage, sel string) {
	t.Helper()
	q := strconv.Quote(sel + " .cell-notes li")
	state := func() (shownWarn, hiddenWarn, shownInfo, hiddenInfo int, button string) {
		js := `JSON.stringify([...document.querySelectorAll(` + q + `)].map((li) => [li.classList.contains("info"), li.getClientRects().length > 0]).concat([[document.querySelector(` + strconv.Quote(sel+" .cell-notes-more") + `)?.textContent || ""]]))`
		var raw []json.RawMessage
		if err := json.Unmarshal([]byte(p.str(js)), &raw); err != nil {
			t.Fatalf("notes: %v", err)
		}
		for _, r := range raw[:len(raw)-1] {
			var pair [2]bool
			_ = json.Unmarshal(r, &pair)
			switch {
			case pair[0] && pair[1]:
				shownInfo++
			case pair[0]:
				hiddenInfo++
			case pair[1]:
				shownWarn++
			default:
				hiddenWarn++
			}
		}
		var last []string
		_ = json.Unmarshal(raw[len(raw)-1], &last)
		return shownWarn, hiddenWarn, shownInfo, hiddenInfo, last[0]
	}
	_, hiddenWarn, shownInfo, hiddenInfo, button := state()
	if hiddenWarn > 0 {
		t.Errorf("%s: %d errors or warnings folded away", sel, hiddenWarn)
	}
	if shownInfo > 1 || (hiddenInfo > 0) != (button != "") {
		t.Errorf("%s: %d info notes shown, %d folded, button %q", sel, shownInfo, hiddenInfo, button)
	}
	if hiddenInfo == 0 {
		return
	}
	if want := strconv.Itoa(hiddenInfo) + " more note"; !strings.HasPrefix(button, want) {
		t.Errorf("%s: button %q, want %q…", sel, button, want)
	}
	p.do("unfolding notes", chromedp.Click(chromedp.CSS(sel+" .cell-notes-more")))
	if _, _, _, hidden, button := state(); hidden != 0 || button != "fewer notes" {
		t.Errorf("%s: after unfolding, %d notes still folded, button %q", sel, hidden, button)
	}
}
