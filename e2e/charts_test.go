package e2e

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"image/color"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/gpuplayground/playground/cells"
	"github.com/gpuplayground/playground/cells/builtin"
	"github.com/gpuplayground/playground/cells/cellstest"
	"github.com/gpuplayground/playground/chart"
	"github.com/gpuplayground/playground/gpu/nvidia"
	"github.com/gpuplayground/playground/harness"
	"github.com/gpuplayground/playground/harness/peaks"
	"github.com/gpuplayground/playground/kernels"
	"github.com/gpuplayground/playground/lessons"
	"github.com/gpuplayground/playground/machine"
	"github.com/gpuplayground/playground/server"
)

// lessonChart is one chart a lesson's cell draws.
type lessonChart struct {
	Lesson, Cell, What string
	SVG                string
}

// lessonTables are the tables one lesson cell's run declares, with their rows.
type lessonTables struct {
	Lesson, Cell string
	Tables       []cells.Table
	Rows         []cells.Row
}

// lessonRuns are the charts and tables of one lesson's cells (lessonRunsOf), ready once done is
// closed.
type lessonRuns struct {
	done       chan struct{}
	charts     []lessonChart
	tables     []lessonTables
	recordings map[string]*recording // by cell id: every call of its run, for replayRunner
	err        error
}

// lessonCharts holds every lesson's runs, by slug, computed one lesson after another in a goroutine
// of their own (startLessonRuns), in the order of lessonCharts.slugs.
var lessonCharts struct {
	once  sync.Once
	slugs []string
	runs  map[string]*lessonRuns
	err   error // loading the lessons failed: no run was made
}

// kernelsLine is a kernel cell's list of kernels.
var kernelsLine = regexp.MustCompile(`(?m)^kernels:\s*\[([^\]]*)\]`)

// startLessonRuns starts, once for the test binary, running every lesson cell once, at its smallest
// size (cellstest.Small), as a server without a GPU would (recorded GPU results included) once it
// has measured its roofline, lesson by lesson in the order of their files' names (the order
// TestEveryLessonFitsInBrowser loads their pages in, so that it waits only for the page it shows
// while the rest run beside its browser), and keeping the last chart each draws and its tables; and
// for every cell that names kernels, a throughput chart of all of them (its browser and GPU kernels
// too, which do not run here), so every legend a learner can see is drawn. The roofline is measured
// first, so that the budget cells read this machine's CPU from it (runLessonCells checks), as on a
// server after its first roofline, matmul peak or transformer run, rather than each measure it
// again; a cuda source two cells share compiles once (cellstest.CompileMemo).
func startLessonRuns() {
	lessonCharts.once.Do(func() {
		nv, _ := nvidia.LoadNVRTC()
		roof := &peaks.Cache{Options: peaks.Options{PeakSizes: []int{64}, TriadMiB: 8, Repeats: 2}}
		env := cells.Env{
			Kernels:  append(kernels.CPU(), nvidia.GEMMs("no CUDA device (test)")...),
			Limits:   harness.DefaultLimits(),
			GPU:      cellstest.NoGPU{NVRTC: nv, Memo: &cellstest.CompileMemo{}},
			Roofline: roof,
		}
		kinds := builtin.Kinds(env)
		all, err := lessons.Load(lessons.Embedded, kinds)
		if err != nil {
			lessonCharts.err = err
			return
		}
		sort.Slice(all, func(i, j int) bool { return all[i].File < all[j].File })
		lessonCharts.runs = map[string]*lessonRuns{}
		for _, l := range all {
			lessonCharts.slugs = append(lessonCharts.slugs, l.Slug)
			lessonCharts.runs[l.Slug] = &lessonRuns{done: make(chan struct{})}
		}
		go func() {
			_, err := roof.Get(context.Background())
			for _, l := range all {
				r := lessonCharts.runs[l.Slug]
				if r.err = err; err == nil {
					r.charts, r.tables, r.recordings, r.err = runLessonCells(l, kinds, nv != nil)
				}
				close(r.done)
			}
		}()
	})
}

// runLessonCells runs the cells of l for startLessonRuns (its cuda cells only where NVRTC is, nvrtc).
func runLessonCells(l *lessons.Lesson, kinds []cells.Kind, nvrtc bool) (charts []lessonChart, tables []lessonTables, recs map[string]*recording, err error) {
	recs = map[string]*recording{}
	for _, c := range l.Cells {
		if m := kernelsLine.FindStringSubmatch(c.Source); m != nil {
			var rs []chart.RatePoint
			for i, name := range strings.Split(m[1], ",") {
				for j, n := range []int{64, 256, 1024} {
					rs = append(rs, chart.RatePoint{Kernel: strings.TrimSpace(name), N: n, DType: "float32", Rate: float64((i + 1) * (j + 1) * 7)})
				}
			}
			svg, err := chart.ThroughputPeak(rs, 900, "measured peak, 70 GFLOP/s")
			if err != nil {
				return nil, nil, nil, err
			}
			charts = append(charts, lessonChart{l.Slug, c.ID, "every kernel", svg})
		}
		if c.Kind == "cuda" && !nvrtc {
			continue
		}
		k, _ := cells.Lookup(kinds, c.Kind)
		small := cellstest.Small(c.Source)
		run, err := k.Parse(cells.Cell{ID: c.ID, Source: small, Recording: c.Recording})
		if err != nil {
			return nil, nil, nil, fmt.Errorf("%s: %w", c.ID, err)
		}
		rec := &recording{source: small}
		if err := run.Run(context.Background(), rec); err != nil {
			return nil, nil, nil, fmt.Errorf("%s: %w", c.ID, err)
		}
		recs[c.ID] = rec
		if note := cpuMeasuredAgain(rec); note != "" {
			return nil, nil, nil, fmt.Errorf("%s measured this machine's CPU again rather than read the roofline measured: %q", c.ID, note)
		}
		if rec.SVG != "" {
			charts = append(charts, lessonChart{l.Slug, c.ID, "run", rec.SVG})
		}
		if len(rec.Tables) > 0 {
			tables = append(tables, lessonTables{l.Slug, c.ID, rec.Tables, rec.Rows})
		}
	}
	return charts, tables, recs, nil
}

// cpuMeasuredAgain is the note of rec's run that gives this machine's CPU rate (a budget cell's)
// where it did not come from the roofline measured (budget.CPURate measured it again); "" if none.
func cpuMeasuredAgain(rec *recording) string {
	for _, n := range rec.Notes {
		if strings.HasPrefix(n.Message, "this machine's CPU, ") && !strings.Contains(n.Message, "roofline measurement of") {
			return n.Message
		}
	}
	return ""
}

// lessonRunsOf waits for the runs of lesson slug's cells (startLessonRuns, started here if it has
// not been) and returns their charts and tables; none for a slug that is no lesson.
func lessonRunsOf(t *testing.T, slug string) ([]lessonChart, []lessonTables) {
	t.Helper()
	startLessonRuns()
	if lessonCharts.err != nil {
		t.Fatal(lessonCharts.err)
	}
	r, ok := lessonCharts.runs[slug]
	if !ok {
		return nil, nil
	}
	<-r.done
	if r.err != nil {
		t.Fatal(r.err)
	}
	return r.charts, r.tables
}

// allLessonCharts are the charts of every lesson's runs (lessonRunsOf), lesson by lesson.
func allLessonCharts(t *testing.T) []lessonChart {
	t.Helper()
	startLessonRuns()
	var all []lessonChart
	for _, slug := range lessonCharts.slugs {
		charts, _ := lessonRunsOf(t, slug)
		all = append(all, charts...)
	}
	return all
}

// chartCheck is the page's check of every chart in it: each text inside its svg's box, no two texts
// overlapping, and the smallest text's size on screen.
const chartCheck = `(() => {
  const out = [];
  for (const fig of document.querySelectorAll("figure.test-chart")) {
    const svg = fig.querySelector("svg");
    const box = svg.getBoundingClientRect();
    const texts = [...svg.querySelectorAll("text")].filter(t => t.textContent.trim() !== "");
    const rects = texts.map(t => t.getBoundingClientRect());
    const problems = [];
    let smallest = Infinity;
    const scale = box.width / svg.viewBox.baseVal.width;
    texts.forEach((t, i) => {
      const r = rects[i];
      if (r.left < box.left - 0.5 || r.right > box.right + 0.5 || r.top < box.top - 0.5 || r.bottom > box.bottom + 0.5) {
        problems.push("cut off: " + JSON.stringify(t.textContent) + " at [" + [r.left - box.left, r.top - box.top, r.right - box.left, r.bottom - box.top].map(v => v.toFixed(1)) + "] of " + box.width.toFixed(0) + "×" + box.height.toFixed(0));
      }
      smallest = Math.min(smallest, parseFloat(getComputedStyle(t).fontSize) * scale);
      for (let j = 0; j < i; j++) {
        const q = rects[j];
        const w = Math.min(r.right, q.right) - Math.max(r.left, q.left), h = Math.min(r.bottom, q.bottom) - Math.max(r.top, q.top);
        if (w > 1 && h > 1) problems.push("overlap: " + JSON.stringify(texts[j].textContent) + " and " + JSON.stringify(t.textContent));
      }
    });
    out.push({id: fig.id, problems, smallest, width: box.width});
  }
  return JSON.stringify(out);
})()`

// Every lesson page, loaded once, checked on a phone and on a desktop (each check was a test of its
// own that loaded every page itself; the loads were most of their time):
//   - On a phone (phoneViewport, the page loaded at that size), no lesson scrolls sideways, even
//     after its cells ran: tables and code scroll in their own boxes, charts scale and text wraps
//     (overflow-wrap), so what a cell adds to a page's width is its kind's layout and the parts its
//     `show:` adds, not its numbers or words. So the first cell of each kind and `show:` on the page
//     runs through the server (runEachLayout) before the width is read (checkNoSidewaysScroll):
//     the page asks, the server queues and stores the run and sends its messages, but the run's
//     events are those of the cell's in-process run below at the same source, made again
//     (replayRunner), not a second run of it. Lessons' TestEveryCellRuns runs every cell, and with
//     -full at their full sizes; the other browser tests run cells in the server.
//   - Every chart of the page's cells (lessonRunsOf: each cell's run at its smallest size, in
//     process and beside the browser's work, and a chart of every kernel it names), put where a
//     run puts it, at 390 px wide (in the phone's viewport the page was loaded at: its charts are
//     as wide there, and their texts as large, as in a 390 px desktop window, which a third
//     relayout of the page would cost) and at 1,280 px wide: every
//     text of it lies inside the svg's box, no two texts (tick labels, legend lines, titles)
//     overlap, and its smallest text is 11 px or more on screen (checkChartsFit; the charts scale
//     by CSS alone). CHART_SHOTS=dir saves a screenshot of each chart there.
//   - Every table of the page's cells (lessonRunsOf), filled by the page's own CellView, at
//     1,280 px wide: with its fold closed no table is wider than its box (a kind marks the columns
//     that matter most primary, and the rest fold behind "more columns"), and the toggle shows the
//     rest (checkTablesFit). TABLE_SHOTS=dir saves a screenshot of each table there.
//
// The checks go in that order, each reading only its own elements: the tables go in last, since
// filling a cell's tables empties its output first.
func TestEveryLessonFitsInBrowser(t *testing.T) {
	chromiumPath(t)
	startLessonRuns() // the in-process runs go on beside the browser; each page waits for its own
	// The server's runs of the lesson cells are those runs' events made again (replayRunner). The
	// peak a matmul cell with peak: true draws would be measured at small sizes (the ceilings' own
	// tests are roofline's).
	runner := newReplayRunner(runtime.GOMAXPROCS(0))
	p := openPageWith(t, 390, 844, server.Config{Config: machine.Config{Roofline: peaks.Options{PeakSizes: []int{64, 128}, TriadMiB: 16, Repeats: 3}},
		Executor: runner})
	// The lessons' slugs from their files (loading them would need every cell kind: recordings
	// name cells).
	files, err := fs.Glob(lessons.Embedded, "*.md")
	if err != nil || len(files) == 0 {
		t.Fatalf("lessons: %v %v", files, err)
	}
	drawn, shown, checked := 0, 0, 0
	for i, f := range files {
		slug := strings.TrimSuffix(f, ".md")
		if i > 0 { // the page left is hidden first, so that the phone's viewport does not lay it out again
			p.str(`document.body.style.display = "none"; ""`)
		}
		p.do("phone", phoneViewport())
		p.open(slug)
		charts, tables := lessonRunsOf(t, slug)
		runEachLayout(t, p)
		checkNoSidewaysScroll(t, p, slug)
		drawn += len(charts)
		addCharts(p, charts)
		shown += checkChartsFit(t, p, charts, 390) // in the phone's viewport, 390 px wide
		p.do("viewport", chromedp.EmulateViewport(1280, 900))
		shown += checkChartsFit(t, p, charts, 1280)
		if len(tables) > 0 {
			addTables(t, p, tables)
			checked += checkTablesFit(t, p)
		}
	}
	if all := len(allLessonCharts(t)); drawn != all || shown < 2*all {
		t.Errorf("%d charts put in the pages, %d checked at two widths; want all %d, at both", drawn, shown, all)
	}
	if checked < 20 {
		t.Errorf("only %d tables checked", checked)
	}
	// Without NVRTC the in-process runs record no cuda cell (lessonsWithoutGPU skips them), and the
	// server runs those live, to the error a cell without a compiler ends in.
	if replayed, ran := runner.counts.get(); replayed < len(files) || ran > 0 && nvrtcPresent() {
		t.Errorf("the server replayed %d runs and ran %d, want every run a replay of the lesson runs (one a page or more)", replayed, ran)
	}
	p.errs.check(t, "every lesson")
}

// addCharts puts charts into p's page where a run puts them: a figure.cell-chart, its id chart-i
// for charts[i], in its cell's output.
func addCharts(p *browserPage, charts []lessonChart) {
	p.t.Helper()
	var svgs []map[string]string
	for i, c := range charts {
		svgs = append(svgs, map[string]string{"id": "chart-" + strconv.Itoa(i), "cell": c.Cell, "svg": c.SVG})
	}
	js, _ := json.Marshal(svgs)
	p.str(`(async () => {
  for (const c of ` + string(js) + ` || []) {
    const out = document.querySelector("#" + CSS.escape(c.cell) + " .cell-output");
    const fig = document.createElement("figure");
    fig.className = "cell-chart test-chart";
    fig.id = c.id;
    fig.innerHTML = c.svg;
    out.appendChild(fig);
  }
  await document.fonts.ready;
  return "";
})()`)
}

// checkChartsFit runs chartCheck in p's page, whose viewport is width px wide, fails t for each
// chart of charts (by its figure's id) that does not fit, and returns how many it checked.
func checkChartsFit(t *testing.T, p *browserPage, charts []lessonChart, width int) int {
	t.Helper()
	shots := os.Getenv("CHART_SHOTS")
	var res []struct {
		ID       string
		Problems []string
		Smallest float64
		Width    float64
	}
	if got := p.str(`String(window.innerWidth)`); got != strconv.Itoa(width) {
		t.Fatalf("charts checked at %d px in a viewport %s px wide", width, got)
	}
	if err := json.Unmarshal([]byte(p.str(chartCheck)), &res); err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		i, _ := strconv.Atoi(strings.TrimPrefix(r.ID, "chart-"))
		c := charts[i]
		name := fmt.Sprintf("%d px, %s (%s)", width, c.Cell, c.What)
		for _, pr := range r.Problems {
			t.Errorf("%s: %s", name, pr)
		}
		if r.Smallest < 11 {
			t.Errorf("%s: smallest text %.1f px on screen (chart %.0f px wide), want ≥ 11", name, r.Smallest, r.Width)
		}
		if shots != "" {
			png, err := chromedp.Run(p.ctx, chromedp.Screenshot(chromedp.CSS("#"+r.ID)))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(shots, fmt.Sprintf("%d-%s-%s.png", width, c.Cell, strings.ReplaceAll(c.What, " ", "-"))), png, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	return len(res)
}

// Every chart of every lesson, as its SVG says in both of the page's themes (the colours of
// static/style.css): no two series of a chart (legend entries: line, marker and their colours) are
// drawn alike, none draws more series than chart.MaxSeries, and every text meets WCAG AA contrast
// (4.5:1) on the chart's background.
func TestLessonChartSeriesApartAndReadable(t *testing.T) {
	css, err := os.ReadFile("../static/style.css")
	if err != nil {
		t.Fatal(err)
	}
	light, dark := chart.CSSThemes(string(css))
	checked := 0
	for _, c := range allLessonCharts(t) {
		name := fmt.Sprintf("%s (%s)", c.Cell, c.What)
		doc, err := parseSVG(c.SVG)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		checked++
		series := doc.series()
		data := 0 // series in a palette colour; reference lines and keys are in the text's colours
		for _, s := range series {
			if s.coloured() {
				data++
			}
		}
		if data > chart.MaxSeries {
			t.Errorf("%s: %d coloured series in one chart, want at most %d (split or facet it)", name, data, chart.MaxSeries)
		}
		for theme, vars := range map[string]map[string]string{"light": light, "dark": dark} {
			seen := map[string]string{}
			for _, s := range series {
				key := s.look(vars)
				if other, dup := seen[key]; dup {
					t.Errorf("%s, %s theme: %q and %q are drawn alike (%s)", name, theme, other, s.label, key)
				}
				seen[key] = s.label
			}
			bg := resolveColour("var(--chart-bg)", vars)
			for _, tx := range doc.texts {
				fg := resolveColour(tx.fill, vars)
				if r := chart.Contrast(fg, bg); r < 4.5 {
					t.Errorf("%s, %s theme: text %q in %v on %v: contrast %.2f:1, want ≥ 4.5:1", name, theme, tx.text, fg, bg, r)
				}
			}
		}
	}
	if checked < 30 {
		t.Errorf("only %d charts checked", checked)
	}
}

// svgDoc is what TestLessonChartSeriesApartAndReadable reads of a chart's SVG.
type svgDoc struct {
	groups []svgSeries
	texts  []svgText
}

// svgSeries is one legend entry: its label and the drawing of its key (each path's style and its
// shape, moved to start at 0,0).
type svgSeries struct {
	label string
	paths []svgPath
}

type svgPath struct{ d, style string }

type svgText struct{ text, fill string }

func (d svgDoc) series() []svgSeries { return d.groups }

// coloured reports whether s is drawn in a palette colour (var(--cN)): a data series, not a roof,
// a reference line or a marker's key.
func (s svgSeries) coloured() bool {
	return slices.ContainsFunc(s.paths, func(p svgPath) bool { return strings.Contains(p.style, "var(--c") })
}

// look is how s appears in a theme: its paths' shapes with their fill, stroke and dashes resolved.
func (s svgSeries) look(vars map[string]string) string {
	var parts []string
	for _, p := range s.paths {
		decl := cssDecls(p.style)
		look := []string{p.d}
		for _, prop := range []string{"fill", "stroke"} {
			if v := decl[prop]; v != "" && v != "none" {
				look = append(look, prop+"="+fmt.Sprint(resolveColour(v, vars)))
			}
		}
		look = append(look, "dash="+decl["stroke-dasharray"])
		parts = append(parts, strings.Join(look, " "))
	}
	sort.Strings(parts)
	return strings.Join(parts, "; ")
}

// cssDecls reads a style attribute; a later declaration of a property wins.
func cssDecls(style string) map[string]string {
	out := map[string]string{}
	for _, d := range strings.Split(style, ";") {
		if k, v, ok := strings.Cut(d, ":"); ok {
			out[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	return out
}

// resolveColour is a chart's colour value in a theme: currentColor is the page's text colour (a
// chart figure's colour is --fg), var(--chart-bg) its --bg-box, var(--x, fallback) the theme's --x.
func resolveColour(v string, vars map[string]string) color.RGBA {
	v = strings.TrimSpace(v)
	switch {
	case v == "currentColor":
		v = vars["--fg"]
	case strings.HasPrefix(v, "var("):
		name, fallback, _ := strings.Cut(strings.TrimSuffix(strings.TrimPrefix(v, "var("), ")"), ",")
		if name == "--chart-bg" {
			name = "--bg-box"
		}
		if got, ok := vars[strings.TrimSpace(name)]; ok {
			v = got
		} else {
			v = fallback
		}
	}
	c, ok := chart.ParseHex(v)
	if !ok {
		return color.RGBA{0xff, 0, 0xff, 0xff} // unknown: a colour no check passes by chance
	}
	return c
}

// svgCommand is one command of path data as vgsvg writes it (M, L, A, Z) and its numbers.
var svgCommand = regexp.MustCompile(`([MLAZ])([^MLAZ]*)`)

// relativePath is path data d with its points moved so that its first is at 0,0 (an arc's radii,
// rotation and flags kept), rounded to 0.1: two markers of one shape drawn at different places read
// alike.
func relativePath(d string) string {
	var out []string
	var x0, y0 float64
	first := true
	for _, m := range svgCommand.FindAllStringSubmatch(d, -1) {
		var nums []float64
		for _, f := range strings.FieldsFunc(m[2], func(r rune) bool { return r == ',' || r == ' ' }) {
			v, _ := strconv.ParseFloat(f, 64)
			nums = append(nums, v)
		}
		if first && len(nums) >= 2 {
			x0, y0, first = nums[0], nums[1], false
		}
		if n := len(nums); n >= 2 { // the command's end point: its last two numbers
			nums[n-2] -= x0
			nums[n-1] -= y0
		}
		parts := []string{m[1]}
		for _, v := range nums {
			parts = append(parts, strconv.FormatFloat(math.Round(v*10)/10, 'f', 1, 64))
		}
		out = append(out, strings.Join(parts, " "))
	}
	return strings.Join(out, " ")
}

// parseSVG reads a chart's legend entries (<g id="chart-series-i">) and its texts.
func parseSVG(svg string) (svgDoc, error) {
	var doc svgDoc
	dec := xml.NewDecoder(strings.NewReader(svg))
	var cur *svgSeries
	depth, groupDepth := 0, -1
	var text *svgText
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return doc, nil
		}
		if err != nil {
			return doc, err
		}
		switch e := tok.(type) {
		case xml.StartElement:
			depth++
			attr := func(name string) string {
				for _, a := range e.Attr {
					if a.Name.Local == name {
						return a.Value
					}
				}
				return ""
			}
			switch e.Name.Local {
			case "g":
				if strings.HasPrefix(attr("id"), "chart-series-") {
					doc.groups = append(doc.groups, svgSeries{})
					cur, groupDepth = &doc.groups[len(doc.groups)-1], depth
				}
			case "path":
				if cur != nil {
					cur.paths = append(cur.paths, svgPath{relativePath(attr("d")), attr("style")})
				}
			case "text":
				fill := "currentColor" // the chart's text is in the page's colour unless it says
				if f := cssDecls(attr("style"))["fill"]; f != "" {
					fill = f
				} else if f := attr("fill"); f != "" {
					fill = f
				}
				text = &svgText{fill: fill}
			}
		case xml.CharData:
			if text != nil {
				text.text += string(e)
			}
		case xml.EndElement:
			if e.Name.Local == "text" && text != nil {
				if strings.TrimSpace(text.text) != "" {
					doc.texts = append(doc.texts, *text)
					if cur != nil {
						cur.label += text.text
					}
				}
				text = nil
			}
			if e.Name.Local == "g" && depth == groupDepth {
				cur, groupDepth = nil, -1
			}
			depth--
		}
	}
}

// The reading of TestLessonChartSeriesApartAndReadable tells alike series and faint text: two labels
// drawn in one style read alike, two in their own styles do not, and a mid grey text fails on the
// dark theme's background.
func TestSeriesLookTellsAlike(t *testing.T) {
	same := chart.SeriesStyle(0)
	svg, err := chart.Roofline(nil, []chart.Point{{Label: "a", Intensity: 1, GFLOPS: 1, Style: &same}, {Label: "b", Intensity: 2, GFLOPS: 2, Style: &same}, {Label: "c", Intensity: 3, GFLOPS: 3}})
	if err != nil {
		t.Fatal(err)
	}
	doc, err := parseSVG(svg)
	if err != nil {
		t.Fatal(err)
	}
	s := doc.series()
	if len(s) != 3 {
		t.Fatalf("%d series read, want 3", len(s))
	}
	vars := map[string]string{"--fg": "#000000", "--c0": "#0072b2", "--c1": "#e69f00"}
	if s[0].look(vars) != s[1].look(vars) || s[1].look(vars) == s[2].look(vars) {
		t.Errorf("looks %q, %q, %q: want the first two alike and the third apart", s[0].look(vars), s[1].look(vars), s[2].look(vars))
	}
	if r := chart.Contrast(resolveColour("var(--muted,#5B6475)", map[string]string{"--muted": "#555555"}), resolveColour("var(--chart-bg)", map[string]string{"--bg-box": "#11141a"})); r >= 4.5 {
		t.Errorf("#555 on #11141a: contrast %.2f, want under 4.5", r)
	}
}
