package e2e

import (
	"encoding/json"
	"io/fs"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/gpuplayground/playground/cells/shared/webgpu"
	"github.com/gpuplayground/playground/lessons"
)

// sizesLine is a kernel cell's list of sizes.
var sizesLine = regexp.MustCompile(`(?m)^sizes:\s*\[([^\]]*)\]`)

// Every cell of every lesson that runs in the browser through WebGPU (a wgsl cell, a cell naming a
// webgpu- kernel, a budget cell measuring "your GPU"), as the lesson ships it, runs on SwiftShader
// (the shared browser's software adapter) to its end, never an error or the run's time limit; a cell
// with sizes above webgpu.SoftwareMaxN says they were not run there. No wall-clock budget is
// asserted (each run's time is logged).
func TestEveryWebGPUCellInBrowser(t *testing.T) {
	p := openPage(t, 1280, 1000)
	p.open("01-why-gpus") // any page: the adapter is the browser's
	adapter := p.str(`(async () => { if (!navigator.gpu) return "no navigator.gpu"; const a = await navigator.gpu.requestAdapter(); if (!a) return "no adapter"; const i = a.info || {}; return JSON.stringify({architecture: i.architecture, fallback: i.isFallbackAdapter ?? a.isFallbackAdapter}); })()`)
	if !strings.HasPrefix(adapter, "{") {
		t.Fatalf("the shared browser has no WebGPU on SwiftShader: %s", adapter)
	}
	files, err := fs.Glob(lessons.Embedded, "*.md")
	if err != nil || len(files) == 0 {
		t.Fatalf("lessons: %v %v", files, err)
	}
	ran := 0
	for _, f := range files {
		slug := strings.TrimSuffix(f, ".md")
		p.open(slug)
		var found []struct{ ID, Kind, Source string }
		js := `JSON.stringify([...document.querySelectorAll(".cell")].map((e) => ({ID: e.id, Kind: e.dataset.kind, Source: e.playground.getSource()})))`
		if err := json.Unmarshal([]byte(p.str(js)), &found); err != nil {
			t.Fatalf("%s: cells: %v", slug, err)
		}
		for _, c := range found {
			browser := c.Kind == "wgsl" || strings.Contains(c.Source, "webgpu-") ||
				(c.Kind == "budget" && !regexp.MustCompile(`(?m)^your_gpu:\s*false`).MatchString(c.Source))
			if !browser {
				continue
			}
			ran++
			sel := cellSel(c.ID)
			start := time.Now()
			p.do("running "+c.ID,
				chromedp.Click(chromedp.CSS(sel+" .cell-run")),
				chromedp.WaitVisible(chromedp.CSS(sel+`:is([data-state="ended"], [data-state="error"])`)))
			state := p.str(`document.querySelector(` + strconv.Quote(sel) + `).dataset.state`)
			status := p.str(`document.querySelector(` + strconv.Quote(sel+" .cell-status") + `).textContent`)
			notes := p.str(`[...document.querySelectorAll(` + strconv.Quote(sel+" .cell-notes li") + `)].map((e) => e.textContent).join("\n")`)
			t.Logf("%s (%s) ran in %v: %s", c.ID, c.Kind, time.Since(start).Round(time.Millisecond), status)
			if state != "ended" {
				t.Errorf("%s: state %q, want ended; status %q; notes:\n%s", c.ID, state, status, notes)
				continue
			}
			if rows := p.str(`String(document.querySelectorAll(` + strconv.Quote(sel+" .cell-table[data-table=browser] tbody tr") + `).length)`); rows == "0" {
				t.Errorf("%s: no row measured in the browser; notes:\n%s", c.ID, notes)
			}
			if big := sizesOver(c.Source, webgpu.SoftwareMaxN); big != "" && !strings.Contains(notes, "not run at n = "+big) {
				t.Errorf("%s: sizes %s are above %d, and no note says they were not run on the software adapter; notes:\n%s", c.ID, big, webgpu.SoftwareMaxN, notes)
			}
		}
		p.errs.check(t, slug)
	}
	if ran < 3 {
		t.Errorf("only %d WebGPU cells found in the lessons", ran)
	}
}

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
