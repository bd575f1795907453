package chart

import (
	"fmt"
	"math"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Line is one series of Fraction: a label and its points (X on a log axis, Y a percentage).
type Line struct {
	Label string
	X, Y  []float64
	// Style, if not nil, draws the line in it (see Styled); otherwise lines take the palette in turn.
	Style *Series
}

// Fraction draws percentages (0–100, linear y) against a quantity on a log x axis, one line per
// series in the palette's order: what share of values a format keeps, against their magnitude. Points
// with X not positive and finite are left out. It returns a complete `<svg>` document.
func Fraction(title, xLabel, yLabel string, lines []Line) (string, error) {
	p := newPlot(title)
	p.X.Label.Text, p.Y.Label.Text = xLabel, yLabel
	p.X.Scale, p.X.Tick.Marker = plot.LogScale{}, logTicks{}
	p.Add(grid())
	f := &figure{plots: []*plot.Plot{p}, heights: []vg.Length{lineHeight}, title: title}
	lo, hi := math.Inf(1), 0.0
	var parts []string
	for i, l := range lines {
		var xys plotter.XYs
		for j, x := range l.X {
			if x > 0 && !math.IsInf(x, 0) && j < len(l.Y) {
				xys = append(xys, plotter.XY{X: x, Y: l.Y[j]})
				lo, hi = math.Min(lo, x), math.Max(hi, x)
			}
		}
		if len(xys) == 0 {
			continue
		}
		st := indexSeries(i, draw.CircleGlyph{})
		if l.Style != nil {
			st = *l.Style
		}
		ln, sc, err := lineOf(xys, st)
		if err != nil {
			return "", fmt.Errorf("chart: %w", err)
		}
		p.Add(ln, sc)
		f.legend = append(f.legend, entry{l.Label, []plot.Thumbnailer{ln, sc}})
		parts = append(parts, fmt.Sprintf("%s: %.3g%% at %.3g to %.3g%% at %.3g", l.Label, xys[0].Y, xys[0].X, xys[len(xys)-1].Y, xys[len(xys)-1].X))
	}
	if hi > 0 {
		p.X.Min, p.X.Max = lo/2, hi*2
	}
	p.Y.Min, p.Y.Max = 0, 105
	f.desc = "Line chart of percentages against a log axis. " + strings.Join(parts, "; ") + "."
	return f.svg()
}
