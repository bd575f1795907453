package chart

import (
	"bytes"
	"fmt"
	"hash/fnv"
	"html"
	"image/color"
	"math"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/gpuplayground/playground/gpu/nvidia"
	xfont "golang.org/x/image/font"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
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
	hue    int                // index in Palette
	glyphs []draw.GlyphDrawer // filled for the first five rungs, hollow for the next five, then any third
	prefix string             // what the names start with ("cuda-"), "" for the CPU ladder
	rungs  []string           // the names without prefix, in the ladder's order
}

// families are the lessons' kernels: the CPU ladder (package kernels) in blue circles, the CUDA
// ladder (gpu/nvidia/ladder.go; the virtual GPU's counts name it without "cuda-") in vermillion
// squares, cuBLAS in reddish purple crosses, the WebGPU ladder (cells/shared/webgpu) in bluish green
// diamonds, and the learner's kernel ("custom") an orange triangle. A name in no ladder is a sky blue
// hollow triangle, its rung from a hash of the name.
var families = []family{
	{hue: 0, glyphs: []draw.GlyphDrawer{draw.CircleGlyph{}, draw.RingGlyph{}}, rungs: []string{"naive", "ikj", "tiled", "parallel", "gonum", "packed", "simd", "simd-parallel"}},
	{hue: 5, glyphs: []draw.GlyphDrawer{draw.BoxGlyph{}, draw.SquareGlyph{}, crossedSquareGlyph{}}, prefix: "cuda-", rungs: cudaRungs()},
	{hue: 3, glyphs: []draw.GlyphDrawer{draw.CrossGlyph{}, draw.PlusGlyph{}}, prefix: "cublas", rungs: []string{"", "-tf32", "-bf16"}},
	{hue: 2, glyphs: []draw.GlyphDrawer{diamondGlyph{}, diamondGlyph{hollow: true}}, prefix: "webgpu-", rungs: []string{"naive", "coalesced", "tiled", "regblock", "naive-f16", "coalesced-f16", "tiled-f16", "regblock-f16"}},
	{hue: 1, glyphs: []draw.GlyphDrawer{draw.PyramidGlyph{}, draw.TriangleGlyph{}}, rungs: []string{"custom"}},
}

// cudaRungs are the own kernels of the CUDA ladder's table (gpu/nvidia/ladder.go), in its order,
// without "cuda-": a rung added there gets its style here.
func cudaRungs() []string {
	var rungs []string
	for _, k := range nvidia.Kernels() {
		if r, ok := strings.CutPrefix(k.Name, "cuda-"); ok {
			rungs = append(rungs, r)
		}
	}
	return rungs
}

// other is the family of names in no ladder.
var other = family{hue: 4, glyphs: []draw.GlyphDrawer{draw.TriangleGlyph{}, draw.TriangleGlyph{}}}

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
	return Series{Colour: shade(fam.hue, sh), Glyph: fam.glyphs[(rung/shades)%len(fam.glyphs)], Dashes: dashes[dash]}
}

// ladderOf finds key's family and rung (a hash of the name for names in no ladder).
func ladderOf(key string) (family, int) {
	if f, i, ok := ladderRung(key); ok {
		return f, i
	}
	h := fnv.New32a()
	h.Write([]byte(key))
	return other, int(h.Sum32() % 15)
}

// ladderRung is the family and rung of key, if a ladder has it.
func ladderRung(key string) (family, int, bool) {
	for _, f := range families {
		for i, r := range f.rungs {
			if f.prefix+r == key {
				return f, i, true
			}
		}
	}
	return family{}, 0, false
}

// GPUSeries is KernelSeries of a kernel that runs on a GPU: names of the CUDA ladder without
// "cuda-" (the virtual GPU's counts) are the CUDA ladder's.
func GPUSeries(name string) Series {
	if f, _ := ladderOf("cuda-" + name); f.prefix == "cuda-" {
		return KernelSeries("cuda-" + name)
	}
	return KernelSeries(name)
}

// crossedSquareGlyph is a hollow square with its diagonals: the CUDA ladder's marker past its
// tenth rung.
type crossedSquareGlyph struct{}

func (crossedSquareGlyph) DrawGlyph(c *draw.Canvas, sty draw.GlyphStyle, pt vg.Point) {
	c.SetLineStyle(draw.LineStyle{Color: sty.Color, Width: vg.Points(0.75)})
	r := sty.Radius
	var p vg.Path
	p.Move(vg.Point{X: pt.X - r, Y: pt.Y - r})
	p.Line(vg.Point{X: pt.X + r, Y: pt.Y - r})
	p.Line(vg.Point{X: pt.X + r, Y: pt.Y + r})
	p.Line(vg.Point{X: pt.X - r, Y: pt.Y + r})
	p.Close()
	p.Move(vg.Point{X: pt.X - r, Y: pt.Y - r})
	p.Line(vg.Point{X: pt.X + r, Y: pt.Y + r})
	p.Move(vg.Point{X: pt.X - r, Y: pt.Y + r})
	p.Line(vg.Point{X: pt.X + r, Y: pt.Y - r})
	c.Stroke(p)
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

// Styled is the style of a series that is one of a grid of hue × variant (a format and a loss
// scale, a step and a roof): the hue-th palette colour, and the variant-th dash and marker (solid
// with filled circles, dashed with triangles, dotted with squares, then again with rings).
func Styled(hue, variant int) Series {
	glyphs := []draw.GlyphDrawer{draw.CircleGlyph{}, draw.TriangleGlyph{}, draw.SquareGlyph{}, draw.RingGlyph{}}
	return Series{Colour: Palette[hue%len(Palette)], Glyph: glyphs[variant%len(glyphs)], Dashes: dashes[variant%len(dashes)]}
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

// Width is the charts' width; heights follow the data (lineHeight, barHeight). It is narrow enough
// that a chart shrunk to a 390 px phone's column keeps its 9 pt text at 9 px; the page lets it grow
// to about 1.25 times as wide (static/style.css).
const Width = 11 * vg.Centimeter

// lineHeight is the height of a line chart's plot.
const lineHeight = 7.5 * vg.Centimeter

// margin is the blank edge around a chart: room for text whose font draws it a little taller than
// its metrics say.
const margin = vg.Length(3)

// legendName is a legend line's text: name, cut with "…" to fit maxWidth (the full name stays in
// the chart's description).
func legendName(sty text.Style, name string, maxWidth vg.Length) string {
	if sty.Width(name) <= maxWidth {
		return name
	}
	r := []rune(name)
	for len(r) > 1 && sty.Width(string(r)+"…") > maxWidth {
		r = r[:len(r)-1]
	}
	return string(r) + "…"
}

func (f *figure) svg() (string, error) {
	leg := plot.NewLegend()
	leg.TextStyle.Font = font.From(sans, 9)
	leg.ThumbnailWidth = vg.Points(26)
	leg.Padding = vg.Points(3)
	leg.Top, leg.Left = true, true
	inner := Width - 2*margin
	// Legend lines wider than the chart (less the legend's indent, its thumbnail and padding) are cut.
	for _, e := range f.legend {
		leg.Add(legendName(leg.TextStyle, e.name, inner-legendIndent-leg.ThumbnailWidth-3*leg.Padding), e.thumbs...)
	}
	full := draw.Canvas{Rectangle: vg.Rectangle{Max: vg.Point{X: Width, Y: 100 * vg.Centimeter}}}
	var legW, legH vg.Length
	if len(f.legend) > 0 {
		r := leg.Rectangle(full)
		legW, legH = r.Max.X-r.Min.X+vg.Points(10), r.Max.Y-r.Min.Y+vg.Points(8)
	}
	below := legW > inner/3
	h := 2 * margin
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
	dc = draw.Crop(dc, margin, -margin, margin, -margin)
	plotArea := dc
	if len(f.legend) > 0 {
		if below {
			plotArea = draw.Crop(dc, 0, 0, legH, 0)
			lc := draw.Crop(dc, legendIndent, 0, 0, -(h - 2*margin - legH))
			leg.Draw(lc)
		} else {
			plotArea = draw.Crop(dc, 0, -legW, 0, 0)
			top := titleHeight(f.plots[0], plotArea.Max.X-plotArea.Min.X) + f.plots[0].Title.Padding
			lc := draw.Crop(dc, inner-legW+vg.Points(6), 0, 0, -top)
			leg.Draw(lc)
		}
	}
	y := plotArea.Max.Y
	for i, p := range f.plots {
		sub := plotArea
		sub.Max.Y = y
		if i > 0 {
			sub.Max.Y -= vg.Points(8) // a gap between one plot's axis label and the next one's title
		}
		sub.Min.Y = y - f.heights[i]
		if below && i == len(f.plots)-1 {
			sub.Min.Y = plotArea.Min.Y
		}
		drawPlot(p, sub)
		y -= f.heights[i]
	}
	var buf bytes.Buffer
	if _, err := c.WriteTo(&buf); err != nil {
		return "", fmt.Errorf("chart: %w", err)
	}
	return themed(buf.String(), f.title, f.desc), nil
}

// legendIndent is how far a legend under the plot is indented.
const legendIndent = 30 * vg.Length(1)

// drawPlot draws p in c so that nothing of it leaves c and no two texts meet: its title and x axis'
// label wrapped to c's width (drawn here, lines 1.25 em apart: gonum/plot sets lines 1 em apart,
// closer than a font's line box), its tick labels thinned to those that fit (thinned), the plot
// narrowed where the first or last label on the x axis would stick out; the y axis' label drawn here too,
// centred on the data (gonum/plot centres it on the axis' middle value, which on a log axis lies
// near its top and pads the plot with an empty band).
func drawPlot(p *plot.Plot, c draw.Canvas) {
	width := c.Max.X - c.Min.X
	title := strings.Split(wrap(p.Title.TextStyle, p.Title.Text, width), "\n")
	tsty := p.Title.TextStyle
	p.Title.Text = ""
	if title[0] != "" {
		for i, line := range title {
			c.FillText(tsty, vg.Point{X: c.Center().X, Y: c.Max.Y + tsty.FontExtents().Descent - vg.Length(i)*lineSpacing(tsty)}, line)
		}
		c.Max.Y -= blockHeight(tsty, title) + p.Title.Padding
	}
	xsty := p.X.Label.TextStyle
	xlabel := strings.Split(wrap(xsty, p.X.Label.Text, width), "\n")
	p.X.Label.Text = ""
	if xlabel[0] != "" {
		c.Min.Y += blockHeight(xsty, xlabel) + p.X.Label.Padding
	}
	ylabel := p.Y.Label.Text
	p.Y.Label.Text = ""
	pc := c
	if ylabel != "" {
		pc = draw.Crop(c, p.Y.Label.TextStyle.Height(ylabel)+p.Y.Label.Padding, 0, 0, 0)
	}
	xMarker, yMarker := p.X.Tick.Marker, p.Y.Tick.Marker
	for range 2 { // the second pass sees the axes as thinned and narrowed by the first
		p.X.Tick.Marker, p.Y.Tick.Marker = xMarker, yMarker
		da := p.DataCanvas(pc)
		p.Y.Tick.Marker = thinned(p.Y, yMarker, da.Max.Y-da.Min.Y, true)
		da = p.DataCanvas(pc)
		p.X.Tick.Marker = thinned(p.X, xMarker, da.Max.X-da.Min.X, false)
		da = p.DataCanvas(pc)
		over, under := vg.Length(0), vg.Length(0)
		for _, t := range p.X.Tick.Marker.Ticks(p.X.Min, p.X.Max) {
			if t.Label != "" {
				x := da.Min.X + vg.Length(p.X.Scale.Normalize(p.X.Min, p.X.Max, t.Value))*(da.Max.X-da.Min.X)
				over = max(over, x+p.X.Tick.Label.Width(t.Label)/2-c.Max.X)
				under = max(under, c.Min.X-(x-p.X.Tick.Label.Width(t.Label)/2))
			}
		}
		pc.Max.X -= over
		pc.Min.X += under
	}
	p.Draw(pc)
	da := p.DataCanvas(pc)
	if ylabel != "" {
		sty := p.Y.Label.TextStyle
		sty.Rotation += math.Pi / 2
		x := c.Min.X + sty.Height(ylabel) - sty.FontExtents().Descent
		c.FillText(sty, vg.Point{X: x, Y: da.Center().Y}, ylabel)
	}
	for i, line := range xlabel {
		if line != "" {
			y := c.Min.Y - p.X.Label.Padding - blockHeight(xsty, xlabel) + vg.Length(len(xlabel)-1-i)*lineSpacing(xsty) + xsty.FontExtents().Descent
			c.FillText(xsty, vg.Point{X: da.Center().X, Y: y}, line)
		}
	}
}

// lineSpacing is the distance between the lines of a block of text in sty.
func lineSpacing(sty text.Style) vg.Length { return sty.Font.Size * 1.25 }

// blockHeight is the height of lines in sty, lineSpacing apart.
func blockHeight(sty text.Style, lines []string) vg.Length {
	return sty.Height("X") + vg.Length(len(lines)-1)*lineSpacing(sty)
}

// titleHeight is the height p's title takes in a plot width wide, its padding included.
func titleHeight(p *plot.Plot, width vg.Length) vg.Length {
	if p.Title.Text == "" {
		return 0
	}
	return blockHeight(p.Title.TextStyle, strings.Split(wrap(p.Title.TextStyle, p.Title.Text, width), "\n")) + p.Title.Padding
}

// wrap breaks s at spaces into lines no wider than width in sty.
func wrap(sty text.Style, s string, width vg.Length) string {
	if sty.Width(s) <= width {
		return s
	}
	var lines []string
	line := ""
	for _, w := range strings.Fields(s) {
		if line != "" && sty.Width(line+" "+w) > width {
			lines = append(lines, line)
			line = w
		} else if line == "" {
			line = w
		} else {
			line += " " + w
		}
	}
	return strings.Join(append(lines, line), "\n")
}

// thinned is marker's ticks on axis a (length long) with the labels that would meet a neighbour's
// taken off (those ticks stay, unlabelled): all labels if they fit, else the powers of ten among
// them, else every k-th label for the smallest k that fits; a marker whose labels come out of
// order (by importance) keeps each that fits beside the ones before it.
func thinned(a plot.Axis, marker plot.Ticker, length vg.Length, vertical bool) plot.ConstantTicks {
	ticks := marker.Ticks(a.Min, a.Max)
	var labelled, tens []int
	for i, t := range ticks {
		if t.Label == "" {
			continue
		}
		labelled = append(labelled, i)
		if e := math.Log10(math.Abs(t.Value)); t.Value != 0 && math.Abs(e-math.Round(e)) < 1e-9 {
			tens = append(tens, i)
		}
	}
	pos := func(i int) vg.Length {
		return vg.Length(a.Scale.Normalize(a.Min, a.Max, ticks[i].Value)) * length
	}
	size := func(i int) vg.Length {
		if vertical {
			return a.Tick.Label.Height(ticks[i].Label)
		}
		return a.Tick.Label.Width(ticks[i].Label)
	}
	gap := vg.Points(4)
	if vertical {
		gap = vg.Points(2)
	}
	fits := func(keep []int) bool {
		sorted := slices.Clone(keep)
		sort.Slice(sorted, func(x, y int) bool { return pos(sorted[x]) < pos(sorted[y]) })
		for j := 1; j < len(sorted); j++ {
			if pos(sorted[j])-pos(sorted[j-1]) < (size(sorted[j])+size(sorted[j-1]))/2+gap {
				return false
			}
		}
		return true
	}
	every := func(of []int, k int) []int {
		var out []int
		for j := 0; j < len(of); j += k {
			out = append(out, of[j])
		}
		return out
	}
	// A marker that lists its labels out of order lists them by importance (timeTicks): keep each
	// that fits beside those kept before it.
	for j := 1; j < len(labelled); j++ {
		if pos(labelled[j]) <= pos(labelled[j-1]) {
			var keep []int
			for _, i := range labelled {
				if fits(append(slices.Clone(keep), i)) {
					keep = append(keep, i)
				}
			}
			return unlabel(ticks, keep)
		}
	}
	tries := [][]int{labelled}
	if len(tens) >= 2 && len(tens) < len(labelled) {
		tries = append(tries, tens)
		labelled = tens
	}
	for k := 2; k <= len(labelled); k++ {
		tries = append(tries, every(labelled, k))
	}
	keep := tries[len(tries)-1]
	for _, t := range tries {
		if fits(t) {
			keep = t
			break
		}
	}
	return unlabel(ticks, keep)
}

// unlabel is ticks with the labels of those not in keep (indices) taken off.
func unlabel(ticks []plot.Tick, keep []int) plot.ConstantTicks {
	out := slices.Clone(ticks)
	for i := range out {
		if out[i].Label != "" && !slices.Contains(keep, i) {
			out[i].Label = ""
		}
	}
	return plot.ConstantTicks(out)
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
	return withTextLength(strings.NewReplacer(pairs...).Replace(svg))
}

// svgText is one text element as vgsvg writes it.
var svgText = regexp.MustCompile(`(<text [^>]*style="[^"]*font-weight:(\w+);[^"]*font-size:([0-9.]+)px")>([^<]*)</text>`)

// withTextLength gives every text of svg the length its Liberation Sans metrics gave it in the
// layout (textLength, glyphs and spacing adjusted to it): where the page has not that font or a
// metric twin (Arial, Helvetica), the browser's other sans-serif font is drawn as wide, so no label
// grows out of the room measured for it.
func withTextLength(svg string) string {
	return svgText.ReplaceAllStringFunc(svg, func(m string) string {
		g := svgText.FindStringSubmatch(m)
		size, err := strconv.ParseFloat(g[3], 64)
		if err != nil {
			return m
		}
		f := sans
		if g[2] == "bold" {
			f.Weight = xfont.WeightBold
		}
		sty := text.Style{Font: font.From(f, vg.Length(size)), Handler: plot.DefaultTextHandler}
		w := sty.Width(html.UnescapeString(g[4]))
		return fmt.Sprintf(`%s textLength="%.2f" lengthAdjust="spacingAndGlyphs">%s</text>`, g[1], w.Points(), g[4])
	})
}

func hex(c color.RGBA) string { return fmt.Sprintf("#%02X%02X%02X", c.R, c.G, c.B) }

// hbars draws horizontal bars, one per name from the bottom up, from the value axis's minimum to
// each value (so they stand on a log axis too), drawn over the grid; with labels, each bar's label
// is written above it at the left (the axis then needs no room for names beside the bars).
type hbars struct {
	values  []float64
	colours []color.RGBA
	labels  []string
	style   text.Style
}

func (b hbars) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	lo, hi := -0.32, 0.32
	if b.labels != nil {
		lo, hi = -0.45, -0.05
	}
	for i, v := range b.values {
		if b.labels != nil {
			c.FillText(b.style, vg.Point{X: trX(p.X.Min) + vg.Points(1), Y: trY(float64(i)+hi) + vg.Points(2) + b.style.FontExtents().Descent}, b.labels[i])
		}
		if !(v > 0) && p.X.Scale != (plot.LinearScale{}) {
			continue
		}
		x0, x1 := trX(p.X.Min), trX(v)
		y0, y1 := trY(float64(i)+lo), trY(float64(i)+hi)
		pts := []vg.Point{{X: x0, Y: y0}, {X: x1, Y: y0}, {X: x1, Y: y1}, {X: x0, Y: y1}}
		c.FillPolygon(b.colours[i], c.ClipPolygonXY(pts))
	}
}

func (b hbars) DataRange() (xmin, xmax, ymin, ymax float64) {
	xmin, xmax = math.Inf(1), math.Inf(-1)
	for _, v := range b.values {
		xmin, xmax = math.Min(xmin, v), math.Max(xmax, v)
	}
	if b.labels != nil {
		return xmin, xmax, -0.55, float64(len(b.values)) - 0.4
	}
	return xmin, xmax, -0.6, float64(len(b.values)) - 0.4
}

// Thumbnail lets a bar stand in a legend.
func (b hbars) Thumbnail(c *draw.Canvas) {}

// logLabel is the label of m × 10^e: plain below 10⁵ and above 10⁻⁴ ("20000", "0.005"), else
// with a power of ten ("10⁶", "2×10⁶").
func logLabel(m, e int) string {
	if e > -4 && e < 5 {
		return strconv.FormatFloat(float64(m)*math.Pow(10, float64(e)), 'f', max(0, -e), 64)
	}
	sup := strings.NewReplacer("-", "⁻", "0", "⁰", "1", "¹", "2", "²", "3", "³", "4", "⁴", "5", "⁵", "6", "⁶", "7", "⁷", "8", "⁸", "9", "⁹").Replace(strconv.Itoa(e))
	if m == 1 {
		return "10" + sup
	}
	return strconv.Itoa(m) + "×10" + sup
}

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
				t.Label = logLabel(i, int(e))
			}
			ticks = append(ticks, t)
		}
	}
	return ticks
}
