package chart

import (
	"fmt"
	"image/color"
	"math"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// Every chart carries a title and a description (its accessible name), is in sans-serif text that
// follows the page's colour (currentColor), and names no serif font.
func TestChartsAreAccessibleAndThemed(t *testing.T) {
	tput, err := Throughput([]RatePoint{{Kernel: "naive", N: 64, DType: "float32", Rate: 1.5}, {Kernel: "gonum", N: 64, DType: "float32", Rate: 9}})
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

// The i-th series of a chart takes the i-th palette colour and marker, whichever kernels they are:
// four CPU kernels are four hues (not four blues), and a kernel's colour follows its place.
func TestSeriesTakePaletteInTurn(t *testing.T) {
	rs := []RatePoint{{Kernel: "ikj", N: 64, Rate: 1}, {Kernel: "parallel", N: 64, Rate: 2}, {Kernel: "tiled", N: 64, Rate: 3}, {Kernel: "gonum", N: 64, Rate: 4}}
	svg, err := Throughput(rs)
	if err != nil {
		t.Fatal(err)
	}
	groups := regexp.MustCompile(`(?s)<g id="chart-series-(\d+)">(.*?)</g>`).FindAllStringSubmatch(svg, -1)
	if got, want := len(groups), len(rs); got != want {
		t.Fatalf("%d series groups, want %d", got, want)
	}
	for i, g := range groups {
		want := "stroke:var(" + Palette[i].Var + ","
		if !strings.Contains(g[2], want) || !strings.Contains(g[2], ">"+rs[i].Kernel+"<") {
			t.Errorf("series %s: want %s's line in %s, got %s", g[1], rs[i].Kernel, Palette[i].Var, g[2])
		}
	}
	alone, _ := Throughput(rs[3:])
	if !strings.Contains(alone, "stroke:var(--c0,") {
		t.Errorf("gonum alone: want the first colour")
	}
}

// No two of the first 3×35 series styles are alike, and neighbours differ in colour and marker.
func TestSeriesStylesDistinct(t *testing.T) {
	seen := map[string]int{}
	for i := range 3 * 35 {
		s := SeriesStyle(i)
		key := fmt.Sprintf("%v %#v %v", s.Colour, s.Glyph, s.Dashes)
		if j, dup := seen[key]; dup {
			t.Errorf("series %d and %d are drawn alike: %s", j, i, key)
		}
		seen[key] = i
		if i > 0 {
			p := SeriesStyle(i - 1)
			if p.Colour == s.Colour || fmt.Sprintf("%#v", p.Glyph) == fmt.Sprintf("%#v", s.Glyph) {
				t.Errorf("series %d and %d share a colour or a marker", i-1, i)
			}
		}
	}
}

// The page's stylesheet defines every chart colour as the chart package does, in both themes: the
// charts and the page take their colours from one table.
func TestThemeMatchesPageCSS(t *testing.T) {
	css, err := os.ReadFile("../static/style.css")
	if err != nil {
		t.Fatal(err)
	}
	light, dark := CSSThemes(string(css))
	for _, c := range Theme() {
		if got, want := light[c.Var], strings.ToLower(hex(c.Light)); got != want {
			t.Errorf("light %s = %q in style.css, want %s", c.Var, got, want)
		}
		if got, want := dark[c.Var], strings.ToLower(hex(c.Dark)); got != want {
			t.Errorf("dark %s = %q in style.css, want %s", c.Var, got, want)
		}
	}
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
	if !strings.Contains(four, "log scale") || strings.Contains(one, "log scale") {
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

// A log axis narrower than a decade is not left with one label: the tree all-reduce's 0.07 to 0.14 ms
// in the parallelism lesson read "0.1" alone.
func TestLogTicksLabelANarrowRange(t *testing.T) {
	var labels []string
	for _, tk := range (logTicks{}).Ticks(0.065, 0.15) {
		if tk.Label != "" {
			labels = append(labels, tk.Label)
		}
	}
	if got, want := strings.Join(labels, ","), "0.07,0.08,0.09,0.1"; got != want {
		t.Errorf("labels %s, want %s", got, want)
	}
}

// Contrast follows WCAG 2.x: black on white is 21:1, a colour on itself 1:1, and #767676 on white
// about 4.54:1 (the lightest grey that passes AA on white).
func TestContrastIsWCAG(t *testing.T) {
	white, black := rgb(0xffffff), rgb(0x000000)
	for _, c := range []struct {
		a, b      color.RGBA
		want, tol float64
	}{{black, white, 21, 1e-9}, {white, white, 1, 1e-9}, {rgb(0x767676), white, 4.54, 0.01}} {
		if got := Contrast(c.a, c.b); math.Abs(got-c.want) > c.tol {
			t.Errorf("Contrast(%v, %v) = %.3f, want %.2f", c.a, c.b, got, c.want)
		}
	}
	light, dark := CSSThemes(":root { --a: #fff; --b: #123456; }\n@media (prefers-color-scheme: dark) { :root { --a: #000; } }")
	if light["--a"] != "#fff" || dark["--a"] != "#000" || dark["--b"] != "#123456" {
		t.Errorf("CSSThemes: light %v, dark %v", light, dark)
	}
	if c, ok := ParseHex("#FA0"); !ok || c != rgb(0xffaa00) {
		t.Errorf("ParseHex(#FA0) = %v, %v", c, ok)
	}
}
