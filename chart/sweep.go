package chart

import (
	"fmt"
	"math"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// SweepSeries is one line of Sweep: a label and its points, X a power of two (a block size), Y a
// percentage. Points with a Y that is not finite are left out (a block size that does not fit).
type SweepSeries struct {
	Label  string
	Points []plotter.XY
}

// Sweep draws percentages (0–100 %) against a power-of-two size on a log2 x axis, one line per series,
// under title and the axis labels xlabel and ylabel; a TPU cell draws MXU utilisation against block
// size with it. It returns a complete `<svg>` document.
func Sweep(title, xlabel, ylabel string, series []SweepSeries) (string, error) {
	p := newPlot(title)
	p.X.Label.Text, p.Y.Label.Text = xlabel, ylabel
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = pow2Ticks{}
	p.Y.Min, p.Y.Max = 0, 100
	p.Add(grid())
	f := &figure{plots: []*plot.Plot{p}, heights: []vg.Length{lineHeight}, title: title}
	lo, hi := math.Inf(1), math.Inf(-1)
	var parts []string
	for i, s := range series {
		var xys plotter.XYs
		var desc []string
		for _, pt := range s.Points {
			if math.IsNaN(pt.Y) || math.IsInf(pt.Y, 0) || !(pt.X > 0) {
				continue
			}
			xys = append(xys, pt)
			lo, hi = math.Min(lo, pt.X), math.Max(hi, pt.X)
			desc = append(desc, fmt.Sprintf("%.0f%% at %g", pt.Y, pt.X))
		}
		if len(xys) == 0 {
			continue
		}
		l, sc, err := lineOf(xys, SeriesStyle(i))
		if err != nil {
			return "", fmt.Errorf("chart: %w", err)
		}
		p.Add(l, sc)
		f.legend = append(f.legend, entry{s.Label, []plot.Thumbnailer{l, sc}})
		parts = append(parts, s.Label+": "+strings.Join(desc, ", "))
	}
	if math.IsInf(lo, 1) {
		lo, hi = 128, 2048
	}
	p.X.Min, p.X.Max = lo/math.Sqrt2, hi*math.Sqrt2
	f.desc = fmt.Sprintf("Line chart of %s against %s. %s.", ylabel, xlabel, strings.Join(parts, "; "))
	return f.svg()
}
