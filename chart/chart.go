// Package chart draws experiment results as SVG charts with gonum.org/v1/plot, server-side, so the
// browser needs no plotting library. Every chart is in the project's style (style.go): sans-serif,
// sized to its data, the legend beside or under the plot, log axes where values span decades, bars
// over the grid, the Okabe–Ito palette assigned per series (the i-th series of a chart its i-th colour,
// with marker and dash as second cues), and a <title> and
// <desc> (the page shows the results table beside it as the accessible equivalent).
package chart

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// RatePoint is one point of a rate chart: Kernel's (the series') Rate at size N, in the chart's
// unit (GFLOP/s for Throughput), with DType the precision the chart's title names. Callers convert
// their measurements (measure.Result) to it: chart knows no harness.
type RatePoint struct {
	Kernel string
	N      int
	DType  string
	Rate   float64
}

// Throughput renders GFLOP/s (RatePoint.Rate) against n for results: a log2 x axis, one line per kernel in the order
// kernels first appear (the i-th kernel in SeriesStyle(i)), labelled axes with units and a
// legend. The y axis turns logarithmic when the results span more than 20×, so a whole ladder fits.
// It returns a complete `<svg>` document without an XML prolog, ready to put inside HTML.
func Throughput(results []RatePoint) (string, error) { return ThroughputPeak(results, 0, "") }

// ThroughputPeak is Throughput with a dashed horizontal line at peak GFLOP/s, labelled (0: none).
func ThroughputPeak(results []RatePoint, peak float64, label string) (string, error) {
	return rateChart(results, peak, label, RateAxes{Title: "Matrix multiply throughput", Size: "matrix size n (n×n×n, log2 scale)", Unit: "GFLOP/s", What: "throughput"})
}

// RateAxes name a rate chart's title, x axis (the size n) and rate unit ("GB/s"), and what the
// rate is ("bandwidth").
type RateAxes struct{ Title, Size, Unit, What string }

// Rate is Throughput for another rate: each result's Rate (e.g. a problem's minimal bytes over its
// median seconds, in GB/s) against n, labelled as axes says.
func Rate(results []RatePoint, axes RateAxes) (string, error) {
	return rateChart(results, 0, "", axes)
}

// rateChart draws the results' Rate (in axes.Unit) against n.
func rateChart(results []RatePoint, peak float64, label string, axes RateAxes) (string, error) {
	dtype := ""
	if len(results) > 0 {
		dtype = " (" + results[0].DType + ")"
	}
	p := newPlot(axes.Title + dtype)
	p.X.Label.Text = axes.Size
	p.Y.Label.Text = axes.Unit + " (median)"
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = pow2Ticks{}
	p.Y.Min = 0
	p.Add(grid())

	f := &figure{plots: []*plot.Plot{p}, heights: []vg.Length{lineHeight}}
	var order []string
	byKernel := map[string]plotter.XYs{}
	for _, r := range results {
		if _, ok := byKernel[r.Kernel]; !ok {
			order = append(order, r.Kernel)
		}
		byKernel[r.Kernel] = append(byKernel[r.Kernel], plotter.XY{X: float64(r.N), Y: r.Rate})
	}
	var best RatePoint
	for _, r := range results {
		if r.Rate > best.Rate {
			best = r
		}
	}
	for i, name := range order {
		xys := byKernel[name]
		sort.Slice(xys, func(i, j int) bool { return xys[i].X < xys[j].X })
		l, s, err := lineOf(xys, SeriesStyle(i))
		if err != nil {
			return "", fmt.Errorf("chart: %w", err)
		}
		p.Add(l, s)
		f.legend = append(f.legend, entry{name, []plot.Thumbnailer{l, s}})
	}
	p.X.Min, p.X.Max = xRange(results)
	if len(results) == 0 {
		p.Y.Max = 1
	}
	lo, hi := math.Inf(1), 0.0
	for _, r := range results {
		if r.Rate > 0 {
			lo, hi = math.Min(lo, r.Rate), math.Max(hi, r.Rate)
		}
	}
	if peak > 0 {
		hi = math.Max(hi, peak)
		l, err := plotter.NewLine(plotter.XYs{{X: p.X.Min, Y: peak}, {X: p.X.Max, Y: peak}})
		if err != nil {
			return "", fmt.Errorf("chart: %w", err)
		}
		l.Color = black
		l.Dashes = []vg.Length{vg.Points(6), vg.Points(3)}
		l.Width = vg.Points(1.25)
		p.Add(l)
		f.legend = append(f.legend, entry{label, []plot.Thumbnailer{l}})
	}
	if hi/lo > 20 {
		p.Y.Scale, p.Y.Tick.Marker = plot.LogScale{}, logTicks{}
		p.Y.Label.Text = axes.Unit + " (median, log scale)"
		p.Y.Min, p.Y.Max = lo/1.5, hi*1.5
	} else if hi > 0 {
		p.Y.Max = hi * 1.1
	}
	f.title = p.Title.Text
	f.desc = fmt.Sprintf("Line chart of median %s in %s against %s for %s.", axes.What, axes.Unit, strings.SplitN(axes.Size, " (", 2)[0], list(order))
	if best.Rate > 0 {
		f.desc += fmt.Sprintf(" Fastest: %s at n=%d, %.3g %s.", best.Kernel, best.N, best.Rate, axes.Unit)
	}
	if peak > 0 {
		f.desc += fmt.Sprintf(" Dashed line: %s.", label)
	}
	return f.svg()
}

// list joins names for a description: "a", "a and b", "a, b and c".
func list(names []string) string {
	switch len(names) {
	case 0:
		return "no kernels yet"
	case 1:
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// xRange pads the n range by half an octave each side so end points are not drawn on the frame.
func xRange(results []RatePoint) (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, r := range results {
		lo, hi = math.Min(lo, float64(r.N)), math.Max(hi, float64(r.N))
	}
	if len(results) == 0 {
		lo, hi = 64, 1024
	}
	return lo / math.Sqrt2, hi * math.Sqrt2
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

// Counts renders the SIMT emulator's results as two horizontal bar charts, one above the other:
// global bytes moved (MB, no caches) and FLOPs (M) per kernel, so a learner sees the same arithmetic
// move very different amounts of memory. Each is as tall as its bars need; an axis whose values
// span more than 20× is logarithmic (bars start at its left end), so small bars stay visible. A
// panel whose values are all zero (no FLOPs: a transpose, a histogram) is left out; with nothing to
// show it returns "" and no error. It
// returns a complete `<svg>` document without an XML prolog.
func Counts(results []KernelCounts) (string, error) {
	names := make([]string, len(results))
	moved, flops := make([]float64, len(results)), make([]float64, len(results))
	for i, r := range results {
		names[i] = r.Kernel
		moved[i] = float64(r.BytesMoved) / 1e6
		flops[i] = float64(r.FLOPs) / 1e6
	}
	n := 0
	if len(results) > 0 {
		n = results[0].N
	}
	h := barHeight(len(results))
	f := &figure{title: fmt.Sprintf("Global memory moved and arithmetic per kernel (n=%d, emulated)", n)}
	if slices.ContainsFunc(moved, func(v float64) bool { return v > 0 }) {
		f.plots = append(f.plots, barPanel(fmt.Sprintf("Global memory moved (n=%d, emulated)", n), "DRAM traffic (MB, 32-byte sectors, no caches)", names, moved))
		f.heights = append(f.heights, h)
	}
	if slices.ContainsFunc(flops, func(v float64) bool { return v > 0 }) {
		f.plots = append(f.plots, barPanel(fmt.Sprintf("Arithmetic (n=%d)", n), "FLOPs (millions)", names, flops))
		f.heights = append(f.heights, h)
	} else { // no floating-point arithmetic (a transpose, a histogram): no empty panel
		f.title = fmt.Sprintf("Global memory moved per kernel (n=%d, emulated; no FLOPs)", n)
	}
	if len(f.plots) == 0 {
		return "", nil
	}
	var parts []string
	for i, name := range names {
		parts = append(parts, fmt.Sprintf("%s moves %.3g MB for %.3g million FLOPs", name, moved[i], flops[i]))
	}
	f.desc = "Horizontal bar charts. " + strings.Join(parts, "; ") + "."
	return f.svg()
}

// barHeight is a bar panel's height for bars: room for its title and axis, and 0.75 cm a bar.
func barHeight(bars int) vg.Length {
	return 2.6*vg.Centimeter + vg.Length(max(bars, 1))*0.75*vg.Centimeter
}

// barPanel is one horizontal bar chart of values by name (bottom to top in the order given, so the
// first is at the top), the i-th bar in the i-th series colour.
func barPanel(title, xlabel string, names []string, values []float64) *plot.Plot {
	p := newPlot(title)
	p.X.Label.Text = xlabel
	p.Add(grid())
	rev := make([]float64, len(values))
	labels := make([]string, len(names))
	b := hbars{values: rev}
	for i := range values {
		j := len(values) - 1 - i
		rev[j], labels[j] = values[i], names[i]
		b.colours = append(b.colours, black)
	}
	for i := range values { // the first (top) bar in the first series colour
		b.colours[len(values)-1-i] = SeriesStyle(i).Colour
	}
	lo, hi := math.Inf(1), 0.0
	for _, v := range values {
		if v > 0 {
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
	}
	valueAxis(p, lo, hi)
	if len(values) > 0 {
		p.Add(b)
		p.NominalY(labels...)
		p.Y.Tick.Label.Font.Size = vg.Points(TextSize)
	} else {
		p.HideY()
	}
	p.Y.Padding = 0
	return p
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
// each array, from the closed-form cycle count of package sim/systolicarray (which the simulator's tests equal):
// small products leave most of a big array idle. It returns a complete `<svg>` document.
func Utilisation(arrays []Array, cycles func(N, n int) (macs, cycles int64)) (string, error) {
	p := newPlot("Systolic array utilisation (simulated cycle counts)")
	p.X.Label.Text = "matrix size n (n×n×n, log2 scale)"
	p.Y.Label.Text = "MAC utilisation (%)"
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = pow2Ticks{}
	p.Y.Min, p.Y.Max = 0, 100
	p.Add(grid())
	f := &figure{plots: []*plot.Plot{p}, heights: []vg.Length{lineHeight}, title: p.Title.Text}
	var parts []string
	for i, a := range arrays {
		var xys plotter.XYs
		for n := 16; n <= 8192; n *= 2 {
			macs, cyc := cycles(a.N, n)
			xys = append(xys, plotter.XY{X: float64(n), Y: 100 * float64(macs) / (float64(a.N) * float64(a.N) * float64(cyc))})
		}
		l, s, err := lineOf(xys, SeriesStyle(i))
		if err != nil {
			return "", fmt.Errorf("chart: %w", err)
		}
		p.Add(l, s)
		f.legend = append(f.legend, entry{a.Label, []plot.Thumbnailer{l, s}})
		parts = append(parts, fmt.Sprintf("%s: %.0f%% at n=16, %.0f%% at n=8192", a.Label, xys[0].Y, xys[len(xys)-1].Y))
	}
	p.X.Min, p.X.Max = 16/math.Sqrt2, 8192*math.Sqrt2
	f.desc = "Line chart of MAC utilisation against matrix size n. " + strings.Join(parts, "; ") + "."
	return f.svg()
}

// Roof is one roofline: a peak (GFLOP/s) and a memory bandwidth (GB/s), under a label that says where
// the figures come from ("this machine, measured …", "H100 SXM datasheet").
type Roof struct {
	Label                 string
	PeakGFLOPS, Bandwidth float64
}

// Point is a kernel placed on the roofline: its arithmetic intensity (FLOP/byte) and GFLOP/s;
// Predicted marks the learner's guess rather than a measurement. Points with the same Label (a
// kernel) share a style and one legend entry; the i-th label is drawn in SeriesStyle(i).
type Point struct {
	Label     string
	Intensity float64
	GFLOPS    float64
	Predicted bool
	// Style, if not nil, draws the point in it instead of its label's series style (points that
	// are not kernels: a model's steps).
	Style *Series
	// Key, if not "", says what the point's marker (Style's glyph) means, such as the roof it is
	// modelled on: the legend then has an entry per label (its colour) and one per key (its marker,
	// in the text's colour), not one per label and key.
	Key string
}

// Roofline draws the roofs (log-log: attainable GFLOP/s = min(peak, intensity × bandwidth)) with the
// measured points filled and predictions hollow. It returns a complete `<svg>` document.
func Roofline(roofs []Roof, points []Point) (string, error) {
	p := newPlot("Roofline")
	p.X.Label.Text = "arithmetic intensity (FLOP/byte, log scale)"
	p.Y.Label.Text = "GFLOP/s (log scale)"
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	p.X.Tick.Marker, p.Y.Tick.Marker = logTicks{}, logTicks{}
	p.Add(grid())
	f := &figure{plots: []*plot.Plot{p}, heights: []vg.Length{lineHeight}, title: "Roofline"}
	lo, hi := 0.001, 1000.0
	for _, pt := range points {
		lo, hi = math.Min(lo, pt.Intensity/2), math.Max(hi, pt.Intensity*2)
	}
	ymin, ymax, descs, err := addRoofs(p, f, roofs, lo, hi)
	if err != nil {
		return "", err
	}
	// One style and one legend entry per label, the i-th label in SeriesStyle(i); predictions are
	// hollow rings of their label's colour.
	seen := map[string]bool{}
	var keys []entry // the markers' meanings (Point.Key), after the labels
	index := map[string]int{}
	anyPrediction := false
	for _, pt := range points {
		if _, ok := index[pt.Label]; !ok {
			index[pt.Label] = len(index)
		}
		st := SeriesStyle(index[pt.Label])
		if pt.Style != nil {
			st = *pt.Style
		}
		s, err := plotter.NewScatter(plotter.XYs{{X: pt.Intensity, Y: pt.GFLOPS}})
		if err != nil {
			return "", fmt.Errorf("chart: %w", err)
		}
		s.GlyphStyle.Radius = vg.Points(4)
		s.GlyphStyle.Color = st.Colour
		s.GlyphStyle.Shape = st.Glyph
		what := "measured"
		if pt.Predicted {
			s.GlyphStyle.Shape = draw.RingGlyph{}
			anyPrediction = true
			what = "your prediction"
		}
		p.Add(s)
		if !seen[pt.Label] && !pt.Predicted {
			seen[pt.Label] = true
			f.legend = append(f.legend, entry{pt.Label, []plot.Thumbnailer{s}})
		}
		if pt.Key != "" && !slices.ContainsFunc(keys, func(e entry) bool { return e.name == pt.Key }) {
			k := *s
			k.GlyphStyle.Color = black
			keys = append(keys, entry{pt.Key, []plot.Thumbnailer{&k}})
		}
		if pt.Key != "" {
			what = pt.Key
		}
		descs = append(descs, fmt.Sprintf("%s (%s): %.3g FLOP/byte, %.3g GFLOP/s", pt.Label, what, pt.Intensity, pt.GFLOPS))
		ymin, ymax = math.Min(ymin, pt.GFLOPS), math.Max(ymax, pt.GFLOPS)
	}
	f.legend = append(f.legend, keys...)
	if anyPrediction {
		// A sample ring for the legend only: never added to the plot, so its point is not drawn.
		ring, err := plotter.NewScatter(plotter.XYs{{X: 1, Y: 1}})
		if err != nil {
			return "", fmt.Errorf("chart: %w", err)
		}
		ring.GlyphStyle.Shape = draw.RingGlyph{}
		ring.GlyphStyle.Radius = vg.Points(4)
		ring.GlyphStyle.Color = black
		f.legend = append(f.legend, entry{"hollow: your prediction", []plot.Thumbnailer{ring}})
	}
	p.X.Min, p.X.Max = lo, hi
	if len(roofs) > 0 || len(points) > 0 {
		p.Y.Min, p.Y.Max = ymin/2, ymax*2
	}
	f.desc = "Log-log roofline chart. " + strings.Join(descs, "; ") + "."
	return f.svg()
}

// addRoofs draws roofs on p from intensity lo to hi (Roofline), the first solid and the others
// dashed, each with its legend entry in f, and returns the lowest and highest GFLOP/s drawn and a
// description of each roof.
func addRoofs(p *plot.Plot, f *figure, roofs []Roof, lo, hi float64) (ymin, ymax float64, descs []string, err error) {
	ymin = math.Inf(1)
	for i, r := range roofs {
		var xys plotter.XYs
		for x := lo; x <= hi*1.0001; x *= math.Pow(10, 0.05) {
			y := math.Min(r.PeakGFLOPS, x*r.Bandwidth)
			xys = append(xys, plotter.XY{X: x, Y: y})
			ymin, ymax = math.Min(ymin, y), math.Max(ymax, y)
		}
		l, err := plotter.NewLine(xys)
		if err != nil {
			return 0, 0, nil, fmt.Errorf("chart: %w", err)
		}
		l.Color = black
		l.Width = vg.Points(2)
		if i > 0 {
			l.Color = muted
			l.Dashes = [][]vg.Length{nil, {vg.Points(6), vg.Points(3)}, {vg.Points(2), vg.Points(2)}}[min(i, 2)]
		}
		p.Add(l)
		f.legend = append(f.legend, entry{r.Label, []plot.Thumbnailer{l}})
		descs = append(descs, fmt.Sprintf("roof %s: peak %.3g GFLOP/s, bandwidth %.3g GB/s, ridge at %.3g FLOP/byte", r.Label, r.PeakGFLOPS, r.Bandwidth, r.PeakGFLOPS/r.Bandwidth))
	}
	return ymin, ymax, descs, nil
}

// ModelPoint is one modelled collective for Collective: its link, GPU count and time in seconds.
type ModelPoint struct {
	Link    string
	GPUs    int
	Seconds float64
}

// Collective draws the modelled time of the ring collective named op ("all-reduce", "all-gather",
// "reduce-scatter"), or of the double binary tree's all-reduce ("tree all-reduce"), of mb megabytes
// against GPU count (log2 x, log y), one line per link. The title says the figures are modelled. It
// returns a complete `<svg>` document.
func Collective(points []ModelPoint, op string, mb float64) (string, error) {
	algo := "Ring " + op
	if op == "tree all-reduce" {
		algo = "Double-binary-tree all-reduce"
	}
	p := newPlot(fmt.Sprintf("%s of %g MB (modelled, not measured)", algo, mb))
	p.X.Label.Text = "GPUs (log2 scale)"
	p.Y.Label.Text = "ms per " + op + " (log scale)"
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	p.X.Tick.Marker, p.Y.Tick.Marker = pow2Ticks{}, logTicks{}
	p.Add(grid())
	f := &figure{plots: []*plot.Plot{p}, heights: []vg.Length{lineHeight}, title: p.Title.Text}
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
	var parts []string
	for i, link := range order {
		xys := byLink[link]
		sort.Slice(xys, func(i, j int) bool { return xys[i].X < xys[j].X })
		l, s, err := lineOf(xys, SeriesStyle(i))
		if err != nil {
			return "", fmt.Errorf("chart: %w", err)
		}
		p.Add(l, s)
		f.legend = append(f.legend, entry{link, []plot.Thumbnailer{l, s}})
		parts = append(parts, fmt.Sprintf("%s: %.3g ms with %g GPUs to %.3g ms with %g", link, xys[0].Y, xys[0].X, xys[len(xys)-1].Y, xys[len(xys)-1].X))
	}
	if hi > 0 {
		p.X.Min, p.X.Max = lo/math.Sqrt2, hi*math.Sqrt2
	}
	f.desc = "Line chart of modelled " + op + " time against GPU count. " + strings.Join(parts, "; ") + "."
	return f.svg()
}

// valueAxis sets a bar chart's value axis (x) for values from lo to hi (the smallest above 0 and
// the largest): from 0, or on a log scale where they span more than 20×.
func valueAxis(p *plot.Plot, lo, hi float64) {
	if hi > 0 && hi/lo > 20 {
		p.X.Scale, p.X.Tick.Marker = plot.LogScale{}, logTicks{}
		p.X.Label.Text += ", log scale"
		p.X.Min, p.X.Max = lo/3, hi*1.5
		return
	}
	p.X.Min, p.X.Max = 0, math.Max(hi*1.08, 1e-9)
}
