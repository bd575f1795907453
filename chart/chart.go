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
// kernels first appear, labelled axes with units and a legend. The y axis turns logarithmic when the
// results span more than 20×, so a whole ladder fits. It returns a complete `<svg>` document without
// an XML prolog, ready to put inside HTML.
func Throughput(results []experiment.Result) (string, error) { return ThroughputPeak(results, 0, "") }

// ThroughputPeak is Throughput with a dashed horizontal line at peak GFLOP/s, labelled (0: none).
func ThroughputPeak(results []experiment.Result, peak float64, label string) (string, error) {
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
	lo, hi := math.Inf(1), 0.0
	for _, r := range results {
		if r.GFLOPS > 0 {
			lo, hi = math.Min(lo, r.GFLOPS), math.Max(hi, r.GFLOPS)
		}
	}
	if peak > 0 {
		hi = math.Max(hi, peak)
		l, err := plotter.NewLine(plotter.XYs{{X: p.X.Min, Y: peak}, {X: p.X.Max, Y: peak}})
		if err != nil {
			return "", fmt.Errorf("chart: %w", err)
		}
		l.Dashes = plotutil.Dashes(2)
		l.Width = vg.Points(1.5)
		p.Add(l)
		p.Legend.Add(label, l)
	}
	if hi/lo > 20 {
		p.Y.Scale, p.Y.Tick.Marker = plot.LogScale{}, plot.LogTicks{Prec: -1}
		p.Y.Label.Text = "throughput (GFLOP/s, median, log scale)"
		p.Y.Min, p.Y.Max = lo/1.5, hi*1.5
	} else if peak > 0 {
		p.Y.Max = hi * 1.1
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

func render(p *plot.Plot) (string, error) { return svgOf(p.Draw) }

// svgOf draws on a Width×Height SVG canvas and returns the document without its XML prolog.
func svgOf(drawOn func(draw.Canvas)) (string, error) {
	c := vgsvg.NewWith(vgsvg.UseWH(Width, Height), vgsvg.EmbedFonts(false))
	drawOn(draw.New(c))
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

// Counts renders the SIMT emulator's results as two bar charts side by side: global bytes moved (MB,
// no caches) and FLOPs (M) per kernel, so a learner sees the same arithmetic move very different
// amounts of memory. It returns a complete `<svg>` document without an XML prolog.
func Counts(results []KernelCounts) (string, error) {
	names := make([]string, len(results))
	moved, flops := make(plotter.Values, len(results)), make(plotter.Values, len(results))
	for i, r := range results {
		names[i] = r.Kernel
		moved[i] = float64(r.BytesMoved) / 1e6
		flops[i] = float64(r.FLOPs) / 1e6
	}
	n := 0
	if len(results) > 0 {
		n = results[0].N
	}
	panel := func(title, ylabel string, v plotter.Values, ci int) (*plot.Plot, error) {
		p := plot.New()
		p.Title.Text = title
		p.Y.Label.Text = ylabel
		p.Y.Min = 0
		if len(v) == 0 {
			return p, nil
		}
		bars, err := plotter.NewBarChart(v, vg.Points(28))
		if err != nil {
			return nil, err
		}
		bars.Color = plotutil.Color(ci)
		p.Add(bars, plotter.NewGrid())
		p.NominalX(names...)
		return p, nil
	}
	left, err := panel(fmt.Sprintf("Global memory moved (n=%d)", n), "DRAM traffic (MB, 32-byte sectors, no caches)", moved, 0)
	if err != nil {
		return "", fmt.Errorf("chart: %w", err)
	}
	right, err := panel(fmt.Sprintf("Arithmetic (n=%d)", n), "FLOPs (millions)", flops, 1)
	if err != nil {
		return "", fmt.Errorf("chart: %w", err)
	}
	return svgOf(func(dc draw.Canvas) {
		tiles := draw.Tiles{Rows: 1, Cols: 2, PadX: vg.Millimeter * 4, PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2}
		canvases := plot.Align([][]*plot.Plot{{left, right}}, tiles, dc)
		left.Draw(canvases[0][0])
		right.Draw(canvases[0][1])
	})
}

// KernelCounts is one emulated kernel's counts for Counts: at size n×n×n, its global-memory bytes
// moved and FLOPs.
type KernelCounts struct {
	Kernel            string
	N                 int
	BytesMoved, FLOPs int64
}

// Array is a systolic array to draw in Utilisation: N×N MACs, under a label.
type Array struct {
	Label string
	N     int
}

// Utilisation draws MAC utilisation against the size of a square product (n×n×n, log2 x axis) for
// each array, from the closed-form cycle count of package systolic (which the simulator's tests equal):
// small products leave most of a big array idle. It returns a complete `<svg>` document.
func Utilisation(arrays []Array, cycles func(N, n int) (macs, cycles int64)) (string, error) {
	p := plot.New()
	p.Title.Text = "Systolic array utilisation (simulated cycle counts)"
	p.X.Label.Text = "matrix size n (n×n×n, log2 scale)"
	p.Y.Label.Text = "MAC utilisation (useful MACs / (N² × cycles))"
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = pow2Ticks{}
	p.Y.Min, p.Y.Max = 0, 1
	p.Legend.Top, p.Legend.Left = true, true
	p.Add(plotter.NewGrid())
	var lines []any
	for _, a := range arrays {
		var xys plotter.XYs
		for n := 16; n <= 8192; n *= 2 {
			macs, cyc := cycles(a.N, n)
			xys = append(xys, plotter.XY{X: float64(n), Y: float64(macs) / (float64(a.N) * float64(a.N) * float64(cyc))})
		}
		lines = append(lines, a.Label, xys)
	}
	if err := plotutil.AddLinePoints(p, lines...); err != nil {
		return "", fmt.Errorf("chart: %w", err)
	}
	p.X.Min, p.X.Max = 16/math.Sqrt2, 8192*math.Sqrt2
	return render(p)
}

// Roof is one roofline: a peak (GFLOP/s) and a memory bandwidth (GB/s), under a label that says where
// the figures come from ("this machine, measured …", "H100 SXM datasheet").
type Roof struct {
	Label                 string
	PeakGFLOPS, Bandwidth float64
}

// Point is a kernel placed on the roofline: its arithmetic intensity (FLOP/byte) and GFLOP/s;
// Predicted marks the learner's guess rather than a measurement. Points with the same Label (a
// kernel) share a colour and one legend entry.
type Point struct {
	Label     string
	Intensity float64
	GFLOPS    float64
	Predicted bool
}

// Roofline draws the roofs (log-log: attainable GFLOP/s = min(peak, intensity × bandwidth)) with the
// measured points filled and predictions hollow. It returns a complete `<svg>` document.
func Roofline(roofs []Roof, points []Point) (string, error) {
	p := plot.New()
	p.Title.Text = "Roofline"
	p.X.Label.Text = "arithmetic intensity (FLOP/byte, log scale)"
	p.Y.Label.Text = "performance (GFLOP/s, log scale)"
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	p.X.Tick.Marker, p.Y.Tick.Marker = plot.LogTicks{Prec: -1}, plot.LogTicks{Prec: -1}
	// Top left, above the roofs' rising slopes, stays empty when the axis starts at 0.001 FLOP/byte.
	p.Legend.Top, p.Legend.Left = true, true
	p.Legend.TextStyle.Font.Size = vg.Points(9)
	p.Add(plotter.NewGrid())
	lo, hi := 0.001, 1000.0
	for _, pt := range points {
		lo, hi = math.Min(lo, pt.Intensity/2), math.Max(hi, pt.Intensity*2)
	}
	ymin, ymax := math.Inf(1), 0.0
	for i, r := range roofs {
		var xys plotter.XYs
		for x := lo; x <= hi*1.0001; x *= math.Pow(10, 0.05) {
			y := math.Min(r.PeakGFLOPS, x*r.Bandwidth)
			xys = append(xys, plotter.XY{X: x, Y: y})
			ymin, ymax = math.Min(ymin, y), math.Max(ymax, y)
		}
		l, err := plotter.NewLine(xys)
		if err != nil {
			return "", fmt.Errorf("chart: %w", err)
		}
		l.Color = plotutil.Color(i)
		l.Width = vg.Points(2)
		if i > 0 {
			l.Dashes = plotutil.Dashes(1)
		}
		p.Add(l)
		p.Legend.Add(r.Label, l)
	}
	// One colour and one legend entry per label; predictions are hollow rings of the same colour.
	colour := map[string]int{}
	anyPrediction := false
	for _, pt := range points {
		ci, seen := colour[pt.Label]
		if !seen {
			ci = len(roofs) + len(colour)
			colour[pt.Label] = ci
		}
		s, err := plotter.NewScatter(plotter.XYs{{X: pt.Intensity, Y: pt.GFLOPS}})
		if err != nil {
			return "", fmt.Errorf("chart: %w", err)
		}
		s.GlyphStyle.Radius = vg.Points(4)
		s.GlyphStyle.Color = plotutil.Color(ci)
		s.GlyphStyle.Shape = draw.CircleGlyph{}
		if pt.Predicted {
			s.GlyphStyle.Shape = draw.RingGlyph{}
			anyPrediction = true
		}
		p.Add(s)
		if !seen && !pt.Predicted {
			p.Legend.Add(pt.Label, s)
		}
		ymin, ymax = math.Min(ymin, pt.GFLOPS), math.Max(ymax, pt.GFLOPS)
	}
	if anyPrediction {
		// A sample ring for the legend only: never added to the plot, so its point is not drawn.
		ring, err := plotter.NewScatter(plotter.XYs{{X: 1, Y: 1}})
		if err != nil {
			return "", fmt.Errorf("chart: %w", err)
		}
		ring.GlyphStyle.Shape = draw.RingGlyph{}
		ring.GlyphStyle.Radius = vg.Points(4)
		p.Legend.Add("hollow: your prediction", ring)
	}
	p.X.Min, p.X.Max = lo, hi
	if len(roofs) > 0 || len(points) > 0 {
		p.Y.Min, p.Y.Max = ymin/2, ymax*2
	}
	return render(p)
}

// ModelPoint is one modelled all-reduce for AllReduce: its link, GPU count and time in seconds.
type ModelPoint struct {
	Link    string
	GPUs    int
	Seconds float64
}

// AllReduce draws modelled ring all-reduce time against GPU count (log2 x, log y), one line per
// link. The title says the figures are modelled. It returns a complete `<svg>` document.
func AllReduce(points []ModelPoint, gradientMB float64) (string, error) {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("Ring all-reduce of %g MB (modelled, not measured)", gradientMB)
	p.X.Label.Text = "GPUs (log2 scale)"
	p.Y.Label.Text = "time per all-reduce (ms, log scale)"
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	p.X.Tick.Marker, p.Y.Tick.Marker = pow2Ticks{}, plot.LogTicks{Prec: -1}
	p.Legend.Top = true
	p.Add(plotter.NewGrid())
	var order []string
	byLink := map[string]plotter.XYs{}
	lo, hi := math.Inf(1), 0.0
	for _, pt := range points {
		if pt.GPUs < 2 { // one GPU needs no all-reduce: no point on a log axis
			continue
		}
		if _, ok := byLink[pt.Link]; !ok {
			order = append(order, pt.Link)
		}
		byLink[pt.Link] = append(byLink[pt.Link], plotter.XY{X: float64(pt.GPUs), Y: pt.Seconds * 1e3})
		lo, hi = math.Min(lo, float64(pt.GPUs)), math.Max(hi, float64(pt.GPUs))
	}
	var lines []any
	for _, l := range order {
		xys := byLink[l]
		sort.Slice(xys, func(i, j int) bool { return xys[i].X < xys[j].X })
		lines = append(lines, l, xys)
	}
	if err := plotutil.AddLinePoints(p, lines...); err != nil {
		return "", fmt.Errorf("chart: %w", err)
	}
	if hi > 0 {
		p.X.Min, p.X.Max = lo/math.Sqrt2, hi*math.Sqrt2
	}
	return render(p)
}
