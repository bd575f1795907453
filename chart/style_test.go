package chart

import (
	"fmt"
	"image/color"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/gpuplayground/playground/gpu/nvidia"
	"github.com/gpuplayground/playground/harness"
)

// Every chart carries a title and a description (its accessible name), is in sans-serif text that
// follows the page's colour (currentColor), and names no serif font.
func TestChartsAreAccessibleAndThemed(t *testing.T) {
	tput, err := Throughput([]harness.Result{{Kernel: "naive", N: 64, DType: "float32", GFLOPS: 1.5}, {Kernel: "gonum", N: 64, DType: "float32", GFLOPS: 9}})
	if err != nil {
		t.Fatal(err)
	}
	counts, err := Counts([]KernelCounts{{Kernel: "naive", N: 64, BytesMoved: 8e6, FLOPs: 524288}})
	if err != nil {
		t.Fatal(err)
	}
	for name, svg := range map[string]string{"throughput": tput, "counts": counts} {
		title := regexp.MustCompile(`<title id="chart-title">([^<]+)</title>`).FindStringSubmatch(svg)
		desc := regexp.MustCompile(`<desc id="chart-desc">([^<]+)</desc>`).FindStringSubmatch(svg)
		if title == nil || desc == nil || !strings.Contains(svg, `role="img"`) {
			t.Errorf("%s: want role=img with a <title> and <desc>, got %.300s", name, svg)
			continue
		}
		if !strings.Contains(desc[1], "naive") {
			t.Errorf("%s: description %q does not name the kernel", name, desc[1])
		}
		if strings.Contains(svg, "Serif") || !strings.Contains(svg, "sans-serif;fill:currentColor") || strings.Contains(svg, "#000000") {
			t.Errorf("%s: want sans-serif text in currentColor and no fixed black", name)
		}
	}
	if !strings.Contains(tput, "Fastest: gonum at n=64, 9 GFLOP/s") {
		t.Errorf("throughput description lacks the fastest point: %s", tput[:400])
	}
}

// A kernel is drawn in the same colour whichever other kernels share the chart; each ladder has
// its hue and marker ("cuda-naive" is not naive's), and no two rungs of a ladder are drawn alike.
func TestKernelColoursAreStable(t *testing.T) {
	colourOf := func(svg string, c string) bool { return strings.Contains(svg, ","+c+")") }
	gonum := hex(KernelSeries("gonum").Colour)
	alone, _ := Throughput([]harness.Result{{Kernel: "gonum", N: 64, GFLOPS: 9}})
	mixed, _ := Throughput([]harness.Result{{Kernel: "tiled", N: 64, GFLOPS: 3}, {Kernel: "naive", N: 64, GFLOPS: 1}, {Kernel: "webgpu-tiled", N: 64, GFLOPS: 9}, {Kernel: "gonum", N: 64, GFLOPS: 9}})
	if !colourOf(alone, gonum) || !colourOf(mixed, gonum) {
		t.Errorf("gonum is not %s in both charts", gonum)
	}
	if fmt.Sprint(KernelSeries("cuda-smem (emulated, modelled)")) != fmt.Sprint(KernelSeries("cuda-smem")) || fmt.Sprint(GPUSeries("smem")) != fmt.Sprint(KernelSeries("cuda-smem")) {
		t.Errorf("emulated names and the virtual GPU's short names are not drawn as their kernel")
	}
	for _, pair := range [][2]string{{"naive", "cuda-naive"}, {"tiled", "webgpu-tiled"}, {"cuda-naive", "webgpu-naive"}, {"cublas", "cuda-regblock"}} {
		a, b := KernelSeries(pair[0]), KernelSeries(pair[1])
		if a.Colour == b.Colour || a.Glyph == b.Glyph {
			t.Errorf("%s and %s: want another hue and marker (another ladder)", pair[0], pair[1])
		}
	}
	for _, f := range families {
		seen := map[string]string{}
		bars := map[color.RGBA]string{}
		if len(f.rungs) > shades*len(f.glyphs) {
			t.Errorf("%s…: %d rungs, but %d shades × %d markers tell only %d apart", f.prefix, len(f.rungs), shades, len(f.glyphs), shades*len(f.glyphs))
		}
		for i, r := range f.rungs {
			name := f.prefix + r
			s := KernelSeries(name)
			if s.Glyph != f.glyphs[(i/shades)%len(f.glyphs)] || !sameHue(s.Colour, Palette[f.hue]) {
				t.Errorf("%s: not its ladder's marker and hue", name)
			}
			key := fmt.Sprintf("%v %#v", s.Colour, s.Glyph)
			if other, dup := seen[key]; dup {
				t.Errorf("%s and %s are drawn alike", name, other)
			}
			seen[key] = name
			if other, dup := bars[s.Colour]; dup && i < shades {
				t.Errorf("%s and %s: same colour among five neighbouring rungs", name, other)
			}
			bars[s.Colour] = name
		}
	}
	if a, b := KernelSeries("my-kernel"), KernelSeries("my-kernel"); a.Colour != b.Colour {
		t.Errorf("an unknown name's colour is not stable")
	}
}

// sameHue reports whether c is a shade of base: mixed with black or white only.
func sameHue(c, base color.RGBA) bool {
	for s := range shades {
		if c == shade(slices.Index(Palette, base), s) {
			return true
		}
	}
	return false
}

// Bar charts: as tall as their bars need, bars drawn after (over) the grid, and a log axis where the
// values span decades, so the small bars stay visible.
func TestCountsBarsSizedOverGridAndLog(t *testing.T) {
	one, _ := Counts([]KernelCounts{{Kernel: "naive", N: 64, BytesMoved: 8e6, FLOPs: 524288}})
	four, _ := Counts([]KernelCounts{{Kernel: "naive", N: 64, BytesMoved: 8e6, FLOPs: 524288}, {Kernel: "coalesced", N: 64, BytesMoved: 1e6, FLOPs: 524288},
		{Kernel: "smem", N: 64, BytesMoved: 1e5, FLOPs: 524288}, {Kernel: "regblock", N: 64, BytesMoved: 5e4, FLOPs: 524288}})
	h := func(svg string) float64 {
		m := regexp.MustCompile(`height="([0-9.]+)pt"`).FindStringSubmatch(svg)
		if m == nil {
			t.Fatalf("no height in %.200s", svg)
		}
		v, _ := strconv.ParseFloat(m[1], 64)
		return v
	}
	if h(one) >= h(four) || h(one) > 300 {
		t.Errorf("heights %v (1 bar) and %v (4 bars): want the one-bar chart shorter, under 300 pt", h(one), h(four))
	}
	if !strings.Contains(four, "no caches), log scale") || strings.Contains(one, "log scale") {
		t.Errorf("want a log axis for 8 MB to 0.05 MB and a linear one for a single bar")
	}
	grid := strings.Index(four, "stroke:var(--line,")
	bar := -1
	if loc := regexp.MustCompile(`fill:var\(--c[0-9]`).FindStringIndex(four); loc != nil {
		bar = loc[0]
	}
	if grid < 0 || bar < 0 || bar < grid {
		t.Errorf("grid at %d, first bar at %d: want the bars drawn after the grid", grid, bar)
	}
}

func TestLogTicksStayInRange(t *testing.T) {
	var labels []string
	for _, tk := range (logTicks{}).Ticks(0.3, 75) {
		if tk.Value < 0.3 || tk.Value > 75 {
			t.Errorf("tick %v outside [0.3, 75]", tk.Value)
		}
		if tk.Label != "" {
			labels = append(labels, tk.Label)
		}
	}
	if got, want := strings.Join(labels, ","), "0.5,1,2,5,10,20,50"; got != want {
		t.Errorf("labels %s, want %s", got, want)
	}
}

// Every kernel of the GPU kernel table (gpu/nvidia/ladder.go) is a rung of a ladder, so none is
// styled from a hash of its name, and no two are drawn alike.
func TestEveryTableKernelHasItsOwnStyle(t *testing.T) {
	seen := map[string]string{}
	for _, k := range nvidia.Kernels() {
		if _, _, ok := ladderRung(k.Name); !ok {
			t.Errorf("%s is in no ladder of chart's families", k.Name)
		}
		s := KernelSeries(k.Name)
		key := fmt.Sprintf("%v %T %v %v", s.Colour, s.Glyph, s.Glyph, s.Dashes)
		if other, dup := seen[key]; dup {
			t.Errorf("%s and %s are drawn alike", other, k.Name)
		}
		seen[key] = k.Name
	}
}
