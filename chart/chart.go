// Package chart draws experiment results as SVG charts with gonum.org/v1/plot, server-side, so the
// browser needs no plotting library.
package chart

import (
	"bytes"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/gpuplayground/playground/experiment"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Width and Height are the chart's size (the SVG scales in the page).
const (
	Width  = 16 * vg.Centimeter
	Height = 10 * vg.Centimeter
)

// Throughput renders GFLOP/s against n for results: a log2 x axis, one line per kernel in the order
// kernels first appear, labelled axes with units and a legend. It returns a complete `<svg>` document
// without an XML prolog, ready to put inside HTML.
func Throughput(results []experiment.Result) (string, error) {
	p := plot.New()
	dtype := ""
	if len(results) > 0 {
		dtype = " (" + results[0].DType + ")"
	}
	p.Title.Text = "Matrix multiply throughput" + dtype
	p.X.Label.Text = "matrix size n (n×n×n, log2 scale)"
	p.Y.Label.Text = "throughput (GFLOP/s, median)"
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = pow2Ticks{}
	p.Y.Min = 0
	p.Legend.Top = true
	p.Legend.Left = true
	p.Add(plotter.NewGrid())

	var order []string
	byKernel := map[string]plotter.XYs{}
	for _, r := range results {
		if _, ok := byKernel[r.Kernel]; !ok {
			order = append(order, r.Kernel)
		}
		byKernel[r.Kernel] = append(byKernel[r.Kernel], plotter.XY{X: float64(r.N), Y: r.GFLOPS})
	}
	var lines []any
	for _, name := range order {
		xys := byKernel[name]
		sort.Slice(xys, func(i, j int) bool { return xys[i].X < xys[j].X })
		lines = append(lines, name, xys)
	}
	if err := plotutil.AddLinePoints(p, lines...); err != nil {
		return "", fmt.Errorf("chart: %w", err)
	}
	p.X.Min, p.X.Max = xRange(results)
	if len(results) == 0 {
		p.Y.Max = 1
	}
	return render(p)
}

// xRange pads the n range by half an octave each side so end points are not drawn on the frame.
func xRange(results []experiment.Result) (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, r := range results {
		lo, hi = math.Min(lo, float64(r.N)), math.Max(hi, float64(r.N))
	}
	if len(results) == 0 {
		lo, hi = 64, 1024
	}
	return lo / math.Sqrt2, hi * math.Sqrt2
}

func render(p *plot.Plot) (string, error) {
	c := vgsvg.NewWith(vgsvg.UseWH(Width, Height), vgsvg.EmbedFonts(false))
	p.Draw(draw.New(c))
	var buf bytes.Buffer
	if _, err := c.WriteTo(&buf); err != nil {
		return "", fmt.Errorf("chart: %w", err)
	}
	svg := buf.String()
	if i := strings.Index(svg, "<svg"); i > 0 {
		svg = svg[i:]
	}
	return svg, nil
}

// pow2Ticks puts a labelled tick at every power of two in range.
type pow2Ticks struct{}

func (pow2Ticks) Ticks(lo, hi float64) []plot.Tick {
	var ticks []plot.Tick
	for e := math.Ceil(math.Log2(math.Max(lo, 1))); math.Pow(2, e) <= hi; e++ {
		v := math.Pow(2, e)
		ticks = append(ticks, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'f', -1, 64)})
	}
	return ticks
}
