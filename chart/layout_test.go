package chart

import (
	"fmt"
	"html"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
)

// textBox is where an upright text of a chart lies, in the SVG's units (y down), by its font's
// metrics: from x over its textLength, from its baseline up by the ascent and down by the descent.
type textBox struct {
	text                   string
	left, top, right, base float64
}

var (
	rotated    = regexp.MustCompile(`<g transform="rotate\([^)]*\)">[^<]*<text[^>]*>[^<]*</text>\s*</g>`)
	svgSize    = regexp.MustCompile(`viewBox="0 0 ([0-9.]+) ([0-9.]+)"`)
	uprightTxt = regexp.MustCompile(`<text x="([-0-9.e]+)" y="([-0-9.e]+)" transform="scale\(1, -1\)"\s+style="[^"]*font-size:([0-9.]+)px" textLength="([0-9.]+)"[^>]*>([^<]*)</text>`)
)

// layoutProblems lists the upright texts of svg (not the y axis' label) that leave its box or
// overlap another, and the texts drawn without a textLength.
func layoutProblems(svg string) []string {
	var out []string
	size := svgSize.FindStringSubmatch(svg)
	if size == nil {
		return []string{"no viewBox"}
	}
	w, _ := strconv.ParseFloat(size[1], 64)
	h, _ := strconv.ParseFloat(size[2], 64)
	if n, m := strings.Count(svg, "<text "), strings.Count(svg, "textLength="); n != m {
		out = append(out, fmt.Sprintf("%d texts, %d with a textLength", n, m))
	}
	ext := text.Style{Font: font.From(sans, 1), Handler: plot.DefaultTextHandler}.FontExtents() // per point of size
	var boxes []textBox
	upright := rotated.ReplaceAllString(svg, "")
	for _, m := range uprightTxt.FindAllStringSubmatch(upright, -1) {
		f := func(s string) float64 { v, _ := strconv.ParseFloat(s, 64); return v }
		x, y, pt, l := f(m[1]), h+f(m[2]), f(m[3]), f(m[4]) // y: the baseline from the top (the SVG is drawn flipped)
		b := textBox{html.UnescapeString(m[5]), x, y - pt*ext.Ascent.Points(), x + l, y + pt*ext.Descent.Points()}
		if b.left < -0.01 || b.right > w+0.01 || b.top < -0.01 || b.base > h+0.01 {
			out = append(out, fmt.Sprintf("%q at [%.1f %.1f %.1f %.1f] leaves the %.0f×%.0f box", b.text, b.left, b.top, b.right, b.base, w, h))
		}
		for _, o := range boxes {
			if min(b.right, o.right)-max(b.left, o.left) > 0.5 && min(b.base, o.base)-max(b.top, o.top) > 0.5 {
				out = append(out, fmt.Sprintf("%q and %q overlap", o.text, b.text))
			}
		}
		boxes = append(boxes, b)
	}
	if len(boxes) == 0 {
		out = append(out, "no upright text found")
	}
	return out
}

// Charts made to be hard to lay out: long titles, long legend names, long bar labels, many ticks.
// Every text stays inside the chart and none meets another, by the font's metrics.
func TestChartsKeepTextInsideAndApart(t *testing.T) {
	var ladder []RatePoint
	for i, k := range []string{"naive", "ikj", "tiled", "parallel", "gonum", "packed", "simd", "simd-parallel", "webgpu-regblock-f16", "cuda-warptile (emulated, modelled)"} {
		for n := 16; n <= 8192; n *= 2 {
			ladder = append(ladder, RatePoint{Kernel: k, N: n, DType: "float32", Rate: float64(i+1) * float64(n) / 10})
		}
	}
	charts := map[string]func() (string, error){
		"ladder": func() (string, error) {
			return ThroughputPeak(ladder, 1e6, "measured peak, 70 GFLOP/s on this machine's cores")
		},
		"one": func() (string, error) { return Throughput(ladder[:1]) },
		"bars": func() (string, error) {
			return Bars("transpose on H100 SXM, modelled from the virtual GPU's counts", "achieved bandwidth (GB/s: its minimal bytes over the modelled time)",
				[]Bar{{"custom (block 32×1)", 410}, {"custom, block 32×2", 800}, {"custom, block 32×4", 1500}, {"custom, block 32×8, 255 registers", 1900}})
		},
		"budget": func() (string, error) {
			return Durations("one ResNet-50 training epoch on ImageNet, a long title: modelled at 40% of peak on every machine", []Duration{
				{"this machine's CPU (measured rate)", 3e5, "cpu"}, {"8 × H100 SXM", 40, "gpu"}, {"1024 × TPU v4", 2e-3, "pod"}, {"a long label of a very long machine name", 1e9, "x"}})
		},
		"roofline": func() (string, error) {
			return Roofline([]Roof{{"this machine, measured: 117 GFLOP/s float32, 30.5 GB/s", 117, 30.5}, {"H100 SXM FP32, datasheet (not measured)", 67000, 3350}},
				[]Point{{Label: "naive", Intensity: 0.2, GFLOPS: 1}, {Label: "gonum", Intensity: 40, GFLOPS: 90}, {Label: "gonum", Intensity: 40, GFLOPS: 60, Predicted: true}})
		},
		"allreduce": func() (string, error) {
			var pts []ModelPoint
			for _, l := range []string{"NVLink 4", "400G InfiniBand", "PCIe 5 x16", "100G Ethernet between two racks"} {
				for g := 2; g <= 1024; g *= 2 {
					pts = append(pts, ModelPoint{l, g, float64(g) * 1e-3})
				}
			}
			return Collective(pts, "all-reduce", 1400)
		},
		"tree": func() (string, error) {
			return Collective([]ModelPoint{{"400G InfiniBand", 8, 7e-5}, {"400G InfiniBand", 1024, 1.4e-4}}, "tree all-reduce", 1)
		},
		"utilisation": func() (string, error) {
			return Utilisation([]Array{{"TPU v1: 256×256", 256}, {"TPU v4 MXU: 128×128", 128}, {"this cell: 4×4", 4}}, func(N, n int) (int64, int64) {
				return int64(n) * int64(n) * int64(n), max(1, int64(n)*int64(n)*int64(n)/int64(N*N)) + int64(3*N)
			})
		},
		"sweep": func() (string, error) {
			var series []SweepSeries
			for i, g := range []string{"TPU v4 (modelled)", "TPU v5e (modelled)", "TPU v5p, a long label for a generation (modelled)"} {
				s := SweepSeries{Label: g}
				for b := 128.0; b <= 2048; b *= 2 {
					s.Points = append(s.Points, plotter.XY{X: b, Y: math.Min(100, b/20*float64(i+1))})
				}
				series = append(series, s)
			}
			return Sweep("MXU utilisation against block size, 4096×4096×4096 bf16 (modelled, not measured)", "block size b (bm = bk = bn = b, log2 scale)", "MXU utilisation (%)", series)
		},
		"counts": func() (string, error) {
			return Counts([]KernelCounts{{"naive", 4096, 8e9, 1e11}, {"coalesced", 4096, 1e9, 1e11}, {"smem", 4096, 1e8, 1e11}, {"regblock", 4096, 5e7, 1e11}})
		},
		"counts with long names": func() (string, error) { // the tile search's candidates: wide y labels
			return Counts([]KernelCounts{{"warptile", 128, 4e5, 4e6}, {"tile-128x64x16-w32x32", 128, 5e5, 4e6}, {"tile-128x256x8-w64x64", 128, 3e5, 4e6}, {"tile-256x128x8-w64x64", 128, 3e5, 4e6}})
		},
	}
	for name, draw := range charts {
		svg, err := draw()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, p := range layoutProblems(svg) {
			t.Errorf("%s: %s", name, p)
		}
		// The check sees a text made too long.
		if len(layoutProblems(strings.Replace(svg, `textLength="`, `textLength="9`, 1))) == 0 {
			t.Errorf("%s: a text 900 wide passes the check", name)
		}
	}
}

// Tick labels that would meet are thinned: the powers of two from 16 to 8192 on a short axis keep
// every other one or fewer, evenly.
func TestTicksThinned(t *testing.T) {
	p := newPlot("")
	p.X.Min, p.X.Max = 16, 8192
	p.X.Scale = plot.LogScale{}
	ticks := thinned(p.X, pow2Ticks{}, 120, false)
	var labels []string
	for _, tk := range ticks {
		if tk.Label != "" {
			labels = append(labels, tk.Label)
		}
	}
	if len(ticks) != 10 || len(labels) > 5 || len(labels) < 3 || labels[0] != "16" {
		t.Errorf("%d ticks, labels %v: want the 10 ticks, 3 to 5 of them labelled from 16", len(ticks), labels)
	}
	if got := thinned(p.X, pow2Ticks{}, 1000, false); len(got) != 10 || got[9].Label != "8,192" {
		t.Errorf("a long axis: want every label, got %v", got)
	}
}
