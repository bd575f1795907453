package chart

import (
	"fmt"
	"image/color"
	"math"
	"strings"
	"unicode/utf8"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Duration is one row of Durations: a label and a time in seconds; Group picks its colour (rows of
// the same group share one). There is no legend: the labels and the title say what the rows are.
type Duration struct {
	Label   string
	Seconds float64
	Group   string
}

// Durations draws one horizontal bar per row under its label, from the left edge to its time, on a logarithmic time
// axis that spans at least one second to a thousand years (wider where a row needs it), with ticks
// labelled in everyday units (1 s, 1 min, 1 h, 1 day, 1 year, 10 years, …). The first row is drawn at
// the top. Rows with a time that is not positive and finite are left out. It returns a complete
// `<svg>` document.
func Durations(title string, rows []Duration) (string, error) {
	p := newPlot(title)
	p.X.Label.Text = "time (log scale)"
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = timeTicks{}
	p.Add(grid())
	lo, hi := 1.0, 1000*Year
	var kept []Duration
	for _, r := range rows {
		if r.Seconds > 0 && !math.IsInf(r.Seconds, 0) && !math.IsNaN(r.Seconds) {
			kept = append(kept, r)
			lo, hi = math.Min(lo, r.Seconds/3), math.Max(hi, r.Seconds*3)
		}
	}
	groups := map[string]int{}
	names := make([]string, len(kept))
	b := hbars{values: make([]float64, len(kept)), colours: make([]color.RGBA, len(kept))}
	var parts []string
	for i, r := range kept {
		j := len(kept) - 1 - i // first row on top
		ci, seen := groups[r.Group]
		if !seen {
			ci = len(groups)
			groups[r.Group] = ci
		}
		names[j], b.values[j], b.colours[j] = r.Label, r.Seconds, SeriesStyle(ci).Colour
		parts = append(parts, fmt.Sprintf("%s: %.3g s", r.Label, r.Seconds))
	}
	// The rows' names stand above their bars, so the time axis has the chart's whole width.
	b.labels, b.style = names, p.Y.Tick.Label
	b.style.XAlign, b.style.YAlign = draw.XLeft, draw.YBottom
	if len(kept) > 0 {
		p.Add(b)
	}
	p.HideY()
	p.Y.Padding = 0
	p.X.Min, p.X.Max = lo, hi
	f := &figure{plots: []*plot.Plot{p}, heights: []vg.Length{2.6*vg.Centimeter + vg.Length(max(len(kept), 1))*vg.Centimeter}, title: title,
		desc: "Horizontal bar chart of times on a log scale. " + strings.Join(parts, "; ") + "."}
	return f.svg()
}

// Year is a Julian year in seconds (365.25 days), the unit of Durations' longest ticks.
const Year = 365.25 * 86400

// timeTicks labels a log time axis in everyday units: a second, a minute, an hour, a day, a year, a
// thousand years, then the other powers of ten of years and powers of a thousand below a second;
// unlabelled minor ticks at every power of ten seconds. A label that would crowd one already placed
// (judged by their lengths against the axis' span in decades) is dropped, the everyday units placed
// first, so labels do not overlap however wide the axis is.
type timeTicks struct{}

func (timeTicks) Ticks(lo, hi float64) []plot.Tick {
	type mark struct {
		v     float64
		label string
	}
	marks := []mark{{1, "1 s"}, {Year, "1 year"}, {1000 * Year, "1,000 years"}, {86400, "1 day"}, {3600, "1 h"}, {60, "1 min"},
		{1e-3, "1 ms"}, {1e-6, "1 µs"}, {1e-9, "1 ns"}, {1e6 * Year, "10⁶ years"}, {1e9 * Year, "10⁹ years"},
		{10 * Year, "10 years"}, {100 * Year, "100 years"}, {1e4 * Year, "10⁴ years"}, {1e5 * Year, "10⁵ years"},
		{1e7 * Year, "10⁷ years"}, {1e8 * Year, "10⁸ years"}, {0.1, "100 ms"}, {0.01, "10 ms"}, {1e-4, "100 µs"},
		{1e-5, "10 µs"}, {1e-7, "100 ns"}, {1e-8, "10 ns"}}
	// The plot is about axisChars characters of tick label wide: two labels need half their widths
	// and one character between them.
	const axisChars = 50
	perChar := (math.Log10(hi) - math.Log10(lo)) / axisChars
	width := func(label string) float64 { return float64(utf8.RuneCountInString(label)) }
	var ticks []plot.Tick
	for _, m := range marks {
		if m.v < lo || m.v > hi {
			continue
		}
		free := true
		for _, t := range ticks {
			need := ((width(m.label)+width(t.Label))/2 + 1) * perChar
			free = free && math.Abs(math.Log10(m.v)-math.Log10(t.Value)) >= need
		}
		if free {
			ticks = append(ticks, plot.Tick{Value: m.v, Label: m.label})
		}
	}
	for e := math.Ceil(math.Log10(lo)); math.Pow(10, e) <= hi; e++ {
		ticks = append(ticks, plot.Tick{Value: math.Pow(10, e)}) // minor: no label
	}
	return ticks
}
