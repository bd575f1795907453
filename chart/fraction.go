package chart

import (
	"fmt"
	"math"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// Line is one series of Fraction: a label and its points (X on a log axis, Y a percentage).
type Line struct {
	Label string
	X, Y  []float64
	// Style, if not nil, draws the line in it (see Styled); otherwise lines take the palette in turn.
	Style *Series
}

// Panel is one panel of a faceted Fractions chart: its title and its lines.
type Panel struct {
	Title string
	Lines []Line
}

// Fraction draws percentages (0–100, linear y) against a quantity on a log x axis, one line per
// series in the palette's order: what share of values a format keeps, against their magnitude. Points
// with X not positive and finite are left out. It returns a complete `<svg>` document.
func Fraction(title, xLabel, yLabel string, lines []Line) (string, error) {
	return Fractions(title, xLabel, yLabel, []Panel{{Title: title, Lines: lines}})
}

// panelHeight is the height of one panel of a faceted chart of more than one panel.
const panelHeight = 6 * vg.Centimeter

// Fractions is Fraction faceted: the panels one above the other on the same x range, so that no
// panel draws more lines than a reader tells apart, with one legend for all of them. A label is
// drawn alike in every panel (the i-th label to appear in SeriesStyle(i), unless its line has a
// Style) and has one legend entry. It returns a complete `<svg>` document.
func Fractions(title, xLabel, yLabel string, panels []Panel) (string, error) {
	f := &figure{title: title}
	lo, hi := math.Inf(1), 0.0
	for _, pn := range panels {
		for _, l := range pn.Lines {
			for j, x := range l.X {
				if x > 0 && !math.IsInf(x, 0) && j < len(l.Y) {
					lo, hi = math.Min(lo, x), math.Max(hi, x)
				}
			}
		}
	}
	index := map[string]int{}
	var parts []string
	for _, pn := range panels {
		p := newPlot(pn.Title)
		if len(panels) == 1 {
			p.Title.Text = title
		} else if len(f.plots) == 0 { // the chart's title stands over its first panel's
			p.Title.Text = title + " — " + pn.Title
		}
		p.X.Label.Text, p.Y.Label.Text = xLabel, yLabel
		p.X.Scale, p.X.Tick.Marker = plot.LogScale{}, logTicks{}
		p.Add(grid())
		for _, l := range pn.Lines {
			var xys plotter.XYs
			for j, x := range l.X {
				if x > 0 && !math.IsInf(x, 0) && j < len(l.Y) {
					xys = append(xys, plotter.XY{X: x, Y: l.Y[j]})
				}
			}
			if len(xys) == 0 {
				continue
			}
			i, seen := index[l.Label]
			if !seen {
				i = len(index)
				index[l.Label] = i
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
			if !seen {
				f.legend = append(f.legend, entry{l.Label, []plot.Thumbnailer{ln, sc}})
			}
			name := l.Label
			if len(panels) > 1 {
				name = pn.Title + ", " + l.Label
			}
			parts = append(parts, fmt.Sprintf("%s: %.3g%% at %.3g to %.3g%% at %.3g", name, xys[0].Y, xys[0].X, xys[len(xys)-1].Y, xys[len(xys)-1].X))
		}
		if hi > 0 {
			p.X.Min, p.X.Max = lo/2, hi*2
		}
		p.Y.Min, p.Y.Max = 0, 105
		f.plots = append(f.plots, p)
		if len(panels) == 1 {
			f.heights = append(f.heights, lineHeight)
		} else {
			f.heights = append(f.heights, panelHeight)
		}
	}
	f.desc = "Line chart of percentages against a log axis. " + strings.Join(parts, "; ") + "."
	if len(panels) > 1 {
		f.desc = fmt.Sprintf("%d line charts of percentages against a log axis, one above the other. %s.", len(panels), strings.Join(parts, "; "))
	}
	return f.svg()
}
