package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
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

var lessonCharts struct {
	once   sync.Once
	charts []lessonChart
	tables []lessonTables
	err    error
}

// kernelsLine is a kernel cell's list of kernels.
var kernelsLine = regexp.MustCompile(`(?m)^kernels:\s*\[([^\]]*)\]`)

// allLessonCharts runs every lesson cell once, at its smallest size (cellstest.Small), as a server
// without a GPU would (recorded GPU results included), and keeps the last chart each draws (and its
// tables, for allLessonTables); and
// for every cell that names kernels, a throughput chart of all of them (its browser and GPU
// kernels too, which do not run here), so every legend a learner can see is drawn.
func allLessonCharts(t *testing.T) []lessonChart {
	t.Helper()
	lessonCharts.once.Do(func() {
		nv, _ := nvidia.LoadNVRTC()
		env := cells.Env{
			Kernels:  append(kernels.CPU(), nvidia.GEMMs("no CUDA device (test)")...),
			Limits:   harness.DefaultLimits(),
			GPU:      cellstest.NoGPU{NVRTC: nv},
			Roofline: &peaks.Cache{Options: peaks.Options{PeakSizes: []int{64}, TriadMiB: 8, Repeats: 2}},
		}
		kinds := builtin.Kinds(env)
		all, err := lessons.Load(lessons.Embedded, kinds)
		if err != nil {
			lessonCharts.err = err
			return
		}
		for _, l := range all {
			for _, c := range l.Cells {
				if m := kernelsLine.FindStringSubmatch(c.Source); m != nil {
					var rs []harness.Result
					for i, name := range strings.Split(m[1], ",") {
						for j, n := range []int{64, 256, 1024} {
							rs = append(rs, harness.Result{Kernel: strings.TrimSpace(name), N: n, DType: "float32", GFLOPS: float64((i + 1) * (j + 1) * 7)})
						}
					}
					svg, err := chart.ThroughputPeak(rs, 900, "measured peak, 70 GFLOP/s")
					if err != nil {
						lessonCharts.err = err
						return
					}
					lessonCharts.charts = append(lessonCharts.charts, lessonChart{l.Slug, c.ID, "every kernel", svg})
				}
				if c.Kind == "cuda" && nv == nil {
					continue
				}
				k, _ := cells.Lookup(kinds, c.Kind)
				run, err := k.Parse(cells.Cell{ID: c.ID, Source: cellstest.Small(c.Source), Recording: c.Recording})
				if err != nil {
					lessonCharts.err = fmt.Errorf("%s: %w", c.ID, err)
					return
				}
				var rec cellstest.Recorder
				if err := run.Run(context.Background(), &rec); err != nil {
					lessonCharts.err = fmt.Errorf("%s: %w", c.ID, err)
					return
				}
				if rec.SVG != "" {
					lessonCharts.charts = append(lessonCharts.charts, lessonChart{l.Slug, c.ID, "run", rec.SVG})
				}
				if len(rec.Tables) > 0 {
					lessonCharts.tables = append(lessonCharts.tables, lessonTables{l.Slug, c.ID, rec.Tables, rec.Rows})
				}
			}
		}
	})
	if lessonCharts.err != nil {
		t.Fatal(lessonCharts.err)
	}
	return lessonCharts.charts
}

// allLessonTables are the tables of allLessonCharts's runs, cell by cell.
func allLessonTables(t *testing.T) []lessonTables {
	t.Helper()
	allLessonCharts(t)
	return lessonCharts.tables
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

// Every chart of every lesson, in the lesson's page at 1,280 and at 390 px wide: every text of it
// lies inside the svg's box, no two texts (tick labels, legend lines, titles) overlap, and its
// smallest text stays readable. CHART_SHOTS=dir saves a screenshot of each chart there.
func TestLessonChartsFitInBrowser(t *testing.T) {
	chromiumPath(t)
	charts := allLessonCharts(t)
	bySlug := map[string][]int{}
	var slugs []string
	for i, c := range charts {
		if bySlug[c.Lesson] == nil {
			slugs = append(slugs, c.Lesson)
		}
		bySlug[c.Lesson] = append(bySlug[c.Lesson], i)
	}
	sort.Strings(slugs)
	shots := os.Getenv("CHART_SHOTS")
	for _, width := range []int{1280, 390} {
		p := openPage(t, width, 900)
		for _, slug := range slugs {
			p.open(slug)
			var svgs []map[string]string
			for _, i := range bySlug[slug] {
				svgs = append(svgs, map[string]string{"id": "chart-" + strconv.Itoa(i), "cell": charts[i].Cell, "svg": charts[i].SVG})
			}
			js, _ := json.Marshal(svgs)
			// Each chart goes where a run puts it: a figure.cell-chart in its cell's output.
			p.str(`(async () => {
  for (const c of ` + string(js) + `) {
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
			var res []struct {
				ID       string
				Problems []string
				Smallest float64
				Width    float64
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
				if r.Smallest < 9 {
					t.Errorf("%s: smallest text %.1f px on screen (chart %.0f px wide), want ≥ 9", name, r.Smallest, r.Width)
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
		}
	}
}

// Every lesson cell that names kernels draws each in its own way: no two of one cell share colour
// and marker (the counts of the virtual GPU, bars without markers, no two a colour), whichever
// ladders (CPU, CUDA, cuBLAS, WebGPU) it mixes.
func TestLessonKernelsDrawnApart(t *testing.T) {
	kinds := builtin.Kinds(cells.Env{Kernels: append(kernels.CPU(), nvidia.GEMMs("")...), Limits: harness.DefaultLimits(), GPU: cellstest.NoGPU{}, Roofline: &peaks.Cache{}})
	all, err := lessons.Load(lessons.Embedded, kinds)
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, l := range all {
		for _, c := range l.Cells {
			m := kernelsLine.FindStringSubmatch(c.Source)
			if m == nil {
				continue
			}
			checked++
			seen := map[string]string{}
			for _, name := range strings.Split(m[1], ",") {
				name = strings.TrimSpace(name)
				s := chart.KernelSeries(name)
				key := fmt.Sprintf("%v %#v", s.Colour, s.Glyph)
				if c.Kind == "simt" {
					key = fmt.Sprint(chart.GPUSeries(name).Colour)
				}
				if other, dup := seen[key]; dup {
					t.Errorf("%s: %s and %s are drawn alike (%s)", c.ID, name, other, key)
				}
				seen[key] = name
			}
		}
	}
	if checked < 15 {
		t.Errorf("only %d cells name kernels", checked)
	}
}
