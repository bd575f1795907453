package chart

import (
	"fmt"
	"image/color"
	"math"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Bar is one bar of Bars: what it is and its value.
type Bar struct {
	Label string
	Value float64
}

// Bars draws one horizontal bar per item, the first at the top, each under its label and in its
// series colour (the i-th bar in SeriesStyle(i)), against a value axis labelled xlabel (with its
// unit) from zero, or logarithmic where the values span more than 20×. Bars whose value is not
// positive and finite are left out. There is no legend: the labels say what the bars are. It
// returns a complete `<svg>` document.
func Bars(title, xlabel string, bars []Bar) (string, error) {
	p := newPlot(title)
	p.X.Label.Text = xlabel
	p.Add(grid())
	var kept []Bar
	for _, b := range bars {
		if b.Value > 0 && !math.IsInf(b.Value, 0) {
			kept = append(kept, b)
		}
	}
	h := hbars{values: make([]float64, len(kept)), colours: make([]color.RGBA, len(kept)), labels: make([]string, len(kept))}
	lo, hi := math.Inf(1), 0.0
	var parts []string
	for i, b := range kept {
		j := len(kept) - 1 - i // first bar on top
		h.values[j], h.labels[j], h.colours[j] = b.Value, b.Label+": "+barValue(b.Value), SeriesStyle(i).Colour
		lo, hi = math.Min(lo, b.Value), math.Max(hi, b.Value)
		parts = append(parts, b.Label+": "+barValue(b.Value))
	}
	h.style = p.Y.Tick.Label
	h.style.XAlign, h.style.YAlign = draw.XLeft, draw.YBottom
	valueAxis(p, lo, hi)
	if len(kept) > 0 {
		p.Add(h)
	}
	p.HideY()
	p.Y.Padding = 0
	// Room for a title and an axis label of two lines each, and 1.2 cm a bar: its label above it.
	f := &figure{plots: []*plot.Plot{p}, heights: []vg.Length{3.6*vg.Centimeter + vg.Length(max(len(kept), 1))*1.2*vg.Centimeter}, title: title,
		desc: "Horizontal bar chart. " + strings.Join(parts, "; ") + "."}
	return f.svg()
}

// barValue writes a bar's value with three significant figures, whole numbers from 100 up with
// thousands separators ("1,900", "41.5", "0.123").
func barValue(v float64) string {
	if v >= 100 {
		return grouped(fmt.Sprintf("%.0f", v))
	}
	return fmt.Sprintf("%.3g", v)
}
