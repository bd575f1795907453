package chart

import (
	"fmt"
	"math"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// Tradeoff draws a cost against a rate, one line per series in the palette's order: the rate on a
// linear x axis from 0, the cost on a log y axis (a serving cell draws latency against throughput,
// one point per request rate, and latency grows by orders of magnitude past a server's capacity).
// Points whose X is negative or Y not positive, or either not finite, are left out. It returns a
// complete `<svg>` document.
func Tradeoff(title, xLabel, yLabel string, lines []Line) (string, error) {
	p := newPlot(title)
	p.X.Label.Text, p.Y.Label.Text = xLabel, yLabel+" (log scale)"
	p.Y.Scale, p.Y.Tick.Marker = plot.LogScale{}, logTicks{}
	p.Add(grid())
	f := &figure{plots: []*plot.Plot{p}, heights: []vg.Length{lineHeight}, title: title}
	xmax, ylo, yhi := 0.0, math.Inf(1), 0.0
	var parts []string
	for i, l := range lines {
		var xys plotter.XYs
		for j, x := range l.X {
			if j >= len(l.Y) || !(x >= 0) || math.IsInf(x, 0) || !(l.Y[j] > 0) || math.IsInf(l.Y[j], 0) {
				continue
			}
			xys = append(xys, plotter.XY{X: x, Y: l.Y[j]})
			xmax, ylo, yhi = math.Max(xmax, x), math.Min(ylo, l.Y[j]), math.Max(yhi, l.Y[j])
		}
		if len(xys) == 0 {
			continue
		}
		st := SeriesStyle(i)
		if l.Style != nil {
			st = *l.Style
		}
		ln, sc, err := lineOf(xys, st)
		if err != nil {
			return "", fmt.Errorf("chart: %w", err)
		}
		p.Add(ln, sc)
		f.legend = append(f.legend, entry{l.Label, []plot.Thumbnailer{ln, sc}})
		first, last := xys[0], xys[len(xys)-1]
		parts = append(parts, fmt.Sprintf("%s: %.3g at %.3g to %.3g at %.3g", l.Label, first.Y, first.X, last.Y, last.X))
	}
	p.X.Min, p.X.Max = 0, math.Max(xmax*1.08, 1e-9)
	if yhi > 0 {
		p.Y.Min, p.Y.Max = ylo/1.5, yhi*1.5
	}
	f.desc = fmt.Sprintf("Line chart of %s against %s. %s.", yLabel, xLabel, strings.Join(parts, "; "))
	return f.svg()
}
