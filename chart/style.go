package chart

import (
	"bytes"
	"fmt"
	"hash/fnv"
	"html"
	"image/color"
	"math"
	"strconv"
	"strings"

	xfont "golang.org/x/image/font"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// The project's chart style: Liberation Sans (metric-compatible with Arial; the SVG asks for the
// page's sans-serif fonts), a colour-blind-safe palette (Okabe & Ito, "Color Universal Design", 2008,
// https://jfly.uni-koeln.de/color/), grid lines under the data, the legend beside the plot (or under
// it when it is wide), and colours the page can swap for its dark theme: the SVG's black is
// currentColor, its white background and grid lines are CSS variables with these as fallbacks.

// sans is the charts' typeface, from gonum/plot's font cache (which holds the Liberation fonts).
var sans = font.Font{Typeface: "Liberation", Variant: "Sans"}

// Palette is Okabe–Ito's palette without its black (the axes' colour): blue, orange, bluish green,
// reddish purple, sky blue, vermillion, yellow. Each is drawn as the page's CSS variable of its
// place in the page's list (cssIndex), so the dark theme can swap it.
var Palette = []color.RGBA{
	{0x00, 0x72, 0xb2, 0xff}, {0xe6, 0x9f, 0x00, 0xff}, {0x00, 0x9e, 0x73, 0xff}, {0xcc, 0x79, 0xa7, 0xff},
	{0x56, 0xb4, 0xe9, 0xff}, {0xd5, 0x5e, 0x00, 0xff}, {0xf0, 0xe4, 0x42, 0xff},
}

// cssIndex is each Palette colour's variable on the page (static/style.css): --c0 … --c5, --c7
// (the page's --c6 is Okabe–Ito's black).
var cssIndex = []int{0, 1, 2, 3, 4, 5, 7}

var (
	black   = color.RGBA{0, 0, 0, 0xff}
	gridRGB = color.RGBA{0xd8, 0xdd, 0xe6, 0xff} // the page's --line
	muted   = color.RGBA{0x5b, 0x64, 0x75, 0xff} // the page's --muted
)

// A family is a ladder of kernels: one hue (an Okabe–Ito colour) and one marker shape for all of its
// kernels, its rungs told apart by shade and dash (rungStyle) in the ladder's order, the shape solid
// for its first five rungs and hollow for the next five.
type family struct {
	hue    int // index in Palette
	glyphs [2]draw.GlyphDrawer
	prefix string   // what the names start with ("cuda-"), "" for the CPU ladder
	rungs  []string // the names without prefix, in the ladder's order
}

// families are the lessons' kernels: the CPU ladder (package kernels) in blue circles, the CUDA
// ladder (gpu/nvidia/ladder.go; the virtual GPU's counts name it without "cuda-") in vermillion
// squares, cuBLAS in reddish purple crosses, the WebGPU ladder (cells/shared/webgpu) in bluish green
// diamonds, and the learner's kernel ("custom") an orange triangle. A name in no ladder is a sky blue
// hollow triangle, its rung from a hash of the name.
var families = []family{
	{hue: 0, glyphs: [2]draw.GlyphDrawer{draw.CircleGlyph{}, draw.RingGlyph{}}, rungs: []string{"naive", "ikj", "tiled", "parallel", "gonum", "packed", "simd", "simd-parallel"}},
	{hue: 5, glyphs: [2]draw.GlyphDrawer{draw.BoxGlyph{}, draw.SquareGlyph{}}, prefix: "cuda-", rungs: []string{"naive", "coalesced", "smem", "blocktile1d", "regblock", "vectorized", "warptile", "wmma"}},
	{hue: 3, glyphs: [2]draw.GlyphDrawer{draw.CrossGlyph{}, draw.PlusGlyph{}}, prefix: "cublas", rungs: []string{"", "-tf32", "-bf16"}},
	{hue: 2, glyphs: [2]draw.GlyphDrawer{diamondGlyph{}, diamondGlyph{hollow: true}}, prefix: "webgpu-", rungs: []string{"naive", "coalesced", "tiled", "regblock", "naive-f16", "coalesced-f16", "tiled-f16", "regblock-f16"}},
	{hue: 1, glyphs: [2]draw.GlyphDrawer{draw.PyramidGlyph{}, draw.TriangleGlyph{}}, rungs: []string{"custom"}},
}

// other is the family of names in no ladder.
var other = family{hue: 4, glyphs: [2]draw.GlyphDrawer{draw.TriangleGlyph{}, draw.TriangleGlyph{}}}

// Shades of a hue: as it is, darker, lighter, darker still, lighter still.
const (
	shadeBase = iota
	shadeDark
	shadeLight
	shadeDarker
	shadeLighter
	shades
)

// shadeMix is how much black (negative) or white each shade mixes into its hue.
var shadeMix = [shades]float64{0, -0.3, 0.35, -0.55, 0.6}

// rungStyle is the shade and dash (dashes) of rung i of a ladder: shade i mod 5, dash i mod 3, so
// that neighbouring rungs differ in both, any five in a row differ in shade (bars have no dash) and
// no two of the first fifteen are alike.
func rungStyle(i int) (shade, dash int) { return i % shades, i % len(dashes) }

// dashes are the rungs' line styles: solid, dashed, dotted.
var dashes = [][]vg.Length{nil, {vg.Points(5), vg.Points(2)}, {vg.Points(1.5), vg.Points(1.5)}}

// shade is Palette[hue] mixed with black or white as shade s says (shadeMix).
func shade(hue, s int) color.RGBA {
	c, f := Palette[hue], shadeMix[s]
	to := 0.0
	if f > 0 {
		to = 255
	}
	f = math.Abs(f)
	mix := func(v uint8) uint8 { return uint8(math.Round(float64(v)*(1-f) + to*f)) }
	return color.RGBA{mix(c.R), mix(c.G), mix(c.B), 0xff}
}

// Series is how one named series (a kernel) is drawn: its colour, its glyph, and its dashes.
type Series struct {
	Colour color.RGBA
	Glyph  draw.GlyphDrawer
	Dashes []vg.Length
}

// KernelSeries is the style of kernel name: the same in every chart. Its ladder (families) gives
// its hue and marker, its rung in the ladder its shade and dash; "cuda-naive (emulated, modelled)"
// is cuda-naive.
func KernelSeries(name string) Series {
	key := name
	if f := strings.Fields(name); len(f) > 0 {
		key = f[0]
	}
	fam, rung := ladderOf(key)
	sh, dash := rungStyle(rung)
	return Series{Colour: shade(fam.hue, sh), Glyph: fam.glyphs[(rung/shades)%2], Dashes: dashes[dash]}
}

// ladderOf finds key's family and rung (a hash of the name for names in no ladder).
func ladderOf(key string) (family, int) {
	for _, f := range families {
		for i, r := range f.rungs {
			if f.prefix+r == key {
				return f, i
			}
		}
	}
	h := fnv.New32a()
	h.Write([]byte(key))
	return other, int(h.Sum32() % 15)
}

// GPUSeries is KernelSeries of a kernel that runs on a GPU: names of the CUDA ladder without
// "cuda-" (the virtual GPU's counts) are the CUDA ladder's.
func GPUSeries(name string) Series {
	if f, _ := ladderOf("cuda-" + name); f.prefix == "cuda-" {
		return KernelSeries("cuda-" + name)
	}
	return KernelSeries(name)
}

// diamondGlyph is a diamond, filled or hollow: the WebGPU ladder's marker.
type diamondGlyph struct{ hollow bool }

func (g diamondGlyph) DrawGlyph(c *draw.Canvas, sty draw.GlyphStyle, pt vg.Point) {
	c.SetColor(sty.Color)
	r := sty.Radius * 1.25
	var p vg.Path
	p.Move(vg.Point{X: pt.X, Y: pt.Y + r})
	p.Line(vg.Point{X: pt.X + r, Y: pt.Y})
	p.Line(vg.Point{X: pt.X, Y: pt.Y - r})
	p.Line(vg.Point{X: pt.X - r, Y: pt.Y})
	p.Close()
	if g.hollow {
		c.SetLineStyle(draw.LineStyle{Color: sty.Color, Width: vg.Points(0.75)})
		c.Stroke(p)
		return
	}
	c.Fill(p)
}

// indexSeries is the i-th series of a chart whose series are not kernels (links, arrays): the
// palette's hues in turn, dashed past its length.
func indexSeries(i int, g draw.GlyphDrawer) Series {
	s := Series{Colour: Palette[i%len(Palette)], Glyph: g}
	if (i/len(Palette))%2 == 1 {
		s.Dashes = dashes[1]
	}
	return s
}

// lineOf draws xys in series s: a line with a glyph at each point.
func lineOf(xys plotter.XYs, s Series) (*plotter.Line, *plotter.Scatter, error) {
	l, sc, err := plotter.NewLinePoints(xys)
	if err != nil {
		return nil, nil, err
	}
	l.Color, l.Width, l.Dashes = s.Colour, vg.Points(1.75), s.Dashes
	sc.Color, sc.Shape, sc.Radius = s.Colour, s.Glyph, vg.Points(3)
	return l, sc, nil
}

// newPlot is a plot in the project's style: sans-serif text, a title in bold, grid first.
func newPlot(title string) *plot.Plot {
	p := plot.New()
	p.BackgroundColor = color.White
	p.Title.Text = title
	p.Title.TextStyle.Font = font.From(font.Font{Typeface: "Liberation", Variant: "Sans", Weight: xfont.WeightBold}, 11)
	p.Title.Padding = vg.Points(6)
	for _, ax := range []*plot.Axis{&p.X, &p.Y} {
		ax.Label.TextStyle.Font = font.From(sans, 10)
		ax.Tick.Label.Font = font.From(sans, 9)
		ax.Color, ax.Tick.Color = muted, muted
		ax.Label.Padding = vg.Points(4)
	}
	p.Legend = plot.NewLegend()
	p.Legend.TextStyle.Font = font.From(sans, 9)
	p.Legend.ThumbnailWidth = vg.Points(26)
	return p
}

// grid is the grid lines, light and under the data (add it first).
func grid() *plotter.Grid {
	g := plotter.NewGrid()
	g.Vertical.Color, g.Horizontal.Color = gridRGB, gridRGB
	g.Vertical.Width, g.Horizontal.Width = vg.Points(0.5), vg.Points(0.5)
	return g
}

// entry is one legend line.
type entry struct {
	name   string
	thumbs []plot.Thumbnailer
}

// figure is a chart ready to draw: its plots stacked vertically (each with its height), a legend
// beside the first (or under the stack when it would take over a third of the width), and the
// accessible title and description for its SVG.
type figure struct {
	plots   []*plot.Plot
	heights []vg.Length
	legend  []entry
	title   string
	desc    string
}

// Width is the charts' width; heights follow the data (plotHeight, barHeight).
const Width = 16 * vg.Centimeter

// lineHeight is the height of a line chart's plot.
const lineHeight = 9 * vg.Centimeter

func (f *figure) svg() (string, error) {
	leg := plot.NewLegend()
	leg.TextStyle.Font = font.From(sans, 9)
	leg.ThumbnailWidth = vg.Points(26)
	leg.Padding = vg.Points(3)
	leg.Top, leg.Left = true, true
	for _, e := range f.legend {
		leg.Add(e.name, e.thumbs...)
	}
	full := draw.Canvas{Rectangle: vg.Rectangle{Max: vg.Point{X: Width, Y: 100 * vg.Centimeter}}}
	var legW, legH vg.Length
	if len(f.legend) > 0 {
		r := leg.Rectangle(full)
		legW, legH = r.Max.X-r.Min.X+vg.Points(10), r.Max.Y-r.Min.Y+vg.Points(8)
	}
	below := legW > Width/3
	h := vg.Length(0)
	for _, ph := range f.heights {
		h += ph
	}
	if below {
		h += legH
	}
	c := vgsvg.NewWith(vgsvg.UseWH(Width, h), vgsvg.EmbedFonts(false))
	dc := draw.New(c)
	dc.SetColor(color.White)
	dc.Fill(dc.Rectangle.Path())
	plotArea := dc
	if len(f.legend) > 0 {
		if below {
			plotArea = draw.Crop(dc, 0, 0, legH, 0)
			lc := draw.Crop(dc, vg.Points(40), 0, 0, -(h - legH))
			leg.Draw(lc)
		} else {
			plotArea = draw.Crop(dc, 0, -legW, 0, 0)
			top := f.plots[0].Title.TextStyle.Height(f.plots[0].Title.Text) + f.plots[0].Title.Padding*2
			lc := draw.Crop(dc, Width-legW+vg.Points(6), 0, 0, -top)
			leg.Draw(lc)
		}
	}
	y := plotArea.Max.Y
	for i, p := range f.plots {
		sub := plotArea
		sub.Max.Y = y
		sub.Min.Y = y - f.heights[i]
		if below && i == len(f.plots)-1 {
			sub.Min.Y = plotArea.Min.Y
		}
		p.Draw(sub)
		y -= f.heights[i]
	}
	var buf bytes.Buffer
	if _, err := c.WriteTo(&buf); err != nil {
		return "", fmt.Errorf("chart: %w", err)
	}
	return themed(buf.String(), f.title, f.desc), nil
}

// themed turns gonum/plot's SVG into the page's: no XML prolog, a <title> and <desc>, sans-serif
// text in currentColor, and the palette, grid and background as CSS variables (with the colours
// themselves as fallbacks), so the dark theme recolours the chart.
func themed(svg, title, desc string) string {
	if i := strings.Index(svg, "<svg"); i > 0 {
		svg = svg[i:]
	}
	if i := strings.Index(svg, ">"); i > 0 {
		head := strings.Replace(svg[:i], "<svg", `<svg class="chart" role="img" aria-labelledby="chart-title chart-desc"`, 1)
		svg = head + ">\n<title id=\"chart-title\">" + html.EscapeString(title) + "</title>\n<desc id=\"chart-desc\">" +
			html.EscapeString(desc) + "</desc>" + svg[i+1:]
	}
	pairs := []string{
		"font-family:Liberation Sans", "font-family:'Liberation Sans',Arial,Helvetica,sans-serif;fill:currentColor",
		"stroke:#000000", "stroke:currentColor",
		"fill:#000000", "fill:currentColor",
		"fill:#FFFFFF", "fill:var(--chart-bg,#FFFFFF)",
		"stroke:" + hex(gridRGB), "stroke:var(--line," + hex(gridRGB) + ")",
		"stroke:" + hex(muted), "stroke:var(--muted," + hex(muted) + ")",
		"fill:" + hex(muted), "fill:var(--muted," + hex(muted) + ")",
	}
	// Each hue is --cN (N its place on the page), its shades --c1N … --c4N (shadeDark …).
	for i := range Palette {
		for s := range shades {
			c := shade(i, s)
			v := fmt.Sprintf("var(--c%d,%s)", 10*s+cssIndex[i], hex(c))
			pairs = append(pairs, "stroke:"+hex(c), "stroke:"+v, "fill:"+hex(c), "fill:"+v)
		}
	}
	return strings.NewReplacer(pairs...).Replace(svg)
}

func hex(c color.RGBA) string { return fmt.Sprintf("#%02X%02X%02X", c.R, c.G, c.B) }

// hbars draws horizontal bars, one per name from the bottom up, from the value axis's minimum to
// each value (so they stand on a log axis too), drawn over the grid.
type hbars struct {
	values  []float64
	colours []color.RGBA
}

func (b hbars) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	half := 0.32
	for i, v := range b.values {
		if !(v > 0) && p.X.Scale != (plot.LinearScale{}) {
			continue
		}
		x0, x1 := trX(p.X.Min), trX(v)
		y0, y1 := trY(float64(i)-half), trY(float64(i)+half)
		pts := []vg.Point{{X: x0, Y: y0}, {X: x1, Y: y0}, {X: x1, Y: y1}, {X: x0, Y: y1}}
		c.FillPolygon(b.colours[i], c.ClipPolygonXY(pts))
	}
}

func (b hbars) DataRange() (xmin, xmax, ymin, ymax float64) {
	xmin, xmax = math.Inf(1), math.Inf(-1)
	for _, v := range b.values {
		xmin, xmax = math.Min(xmin, v), math.Max(xmax, v)
	}
	return xmin, xmax, -0.6, float64(len(b.values)) - 0.4
}

// Thumbnail lets a bar stand in a legend.
func (b hbars) Thumbnail(c *draw.Canvas) {}

// logTicks marks a log axis inside its range only: labels at 1, 2 and 5 × 10^k when the range spans
// less than three decades (at 10^k alone beyond), unlabelled ticks at the other integers × 10^k.
type logTicks struct{}

func (logTicks) Ticks(lo, hi float64) []plot.Tick {
	if !(lo > 0) || !(hi > lo) {
		return nil
	}
	decades := math.Log10(hi / lo)
	var ticks []plot.Tick
	for e := math.Floor(math.Log10(lo)); math.Pow(10, e) <= hi; e++ {
		base := math.Pow(10, e)
		for i := 1; i < 10; i++ {
			v := base * float64(i)
			if v < lo*(1-1e-9) || v > hi*(1+1e-9) {
				continue
			}
			t := plot.Tick{Value: v}
			if i == 1 || (decades < 3 && (i == 2 || i == 5)) {
				t.Label = strconv.FormatFloat(v, 'g', 4, 64)
			}
			ticks = append(ticks, t)
		}
	}
	return ticks
}
