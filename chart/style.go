package chart

import (
	"bytes"
	"fmt"
	"html"
	"image/color"
	"math"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/dustin/go-humanize"
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
// page's sans-serif fonts), one categorical palette (Palette) assigned per series within a chart,
// grid lines under the data, the legend beside the plot (or under it when it is wide), and colours
// the page's two themes both take from the same CSS variables (Theme): the SVG's black is
// currentColor, its background, grid, muted lines and series colours are var(--…) with the light
// theme's value as fallback.

// sans is the charts' typeface, from gonum/plot's font cache (which holds the Liberation fonts).
var sans = font.Font{Typeface: "Liberation", Variant: "Sans"}

// ThemeColour is one colour the charts draw with, as the page defines it: its CSS custom property
// (static/style.css) and its value in the light and the dark theme.
type ThemeColour struct {
	Var         string
	Light, Dark color.RGBA
}

// Palette is the series colours, in the order a chart's series take them: the Okabe–Ito
// colour-blind-safe palette without its black (the axes' colour): blue, orange, bluish green,
// reddish purple, sky blue, vermillion, yellow. Source: M. Okabe and K. Ito, "Color Universal
// Design (CUD): how to make figures and presentations that are friendly to colorblind people",
// 2008, https://jfly.uni-koeln.de/color/ (chosen there to stay distinct under protanopia,
// deuteranopia and tritanopia). The light theme draws Okabe–Ito's values; the dark theme the same
// hues lightened to stand out on its dark background.
var Palette = []ThemeColour{
	{"--c0", rgb(0x0072b2), rgb(0x3a95e0)},
	{"--c1", rgb(0xe69f00), rgb(0xe69f00)},
	{"--c2", rgb(0x009e73), rgb(0x2fc69b)},
	{"--c3", rgb(0xcc79a7), rgb(0xe08fc0)},
	{"--c4", rgb(0x56b4e9), rgb(0x9fdcff)},
	{"--c5", rgb(0xd55e00), rgb(0xff7a2e)},
	{"--c7", rgb(0xf0e442), rgb(0xf0e442)},
}

// Page colours the charts draw with besides the palette: text (currentColor, the page's --fg), the
// muted axes and roofs, the grid, and the background (the page's --bg-box, as --chart-bg).
var (
	fgColour    = ThemeColour{"--fg", rgb(0x1d2330), rgb(0xe3e7ee)}
	mutedColour = ThemeColour{"--muted", rgb(0x5b6475), rgb(0x9aa3b2)}
	gridColour  = ThemeColour{"--line", rgb(0xd8dde6), rgb(0x343a46)}
	bgColour    = ThemeColour{"--bg-box", rgb(0xffffff), rgb(0x11141a)}
)

// Theme is every colour a chart is drawn in, with its CSS variable and both themes' values: the
// page's static/style.css defines the same (a test holds them equal), so one table colours both.
func Theme() []ThemeColour {
	return append([]ThemeColour{fgColour, mutedColour, gridColour, bgColour}, Palette...)
}

func rgb(v uint32) color.RGBA { return color.RGBA{uint8(v >> 16), uint8(v >> 8), uint8(v), 0xff} }

var (
	black   = color.RGBA{0, 0, 0, 0xff}
	gridRGB = gridColour.Light
	muted   = mutedColour.Light
)

// MaxSeries is the most series one chart (or one legend shared by a faceted chart's panels) should
// draw: past it, colours and marks repeat too often for a reader to tell lines apart reliably, and a
// chart is split or faceted instead.
const MaxSeries = 8

// glyphs are the series' markers, in turn, all filled (a thin outline is hard to see): circle,
// square, triangle, diamond, and a triangle pointing down.
var glyphs = []draw.GlyphDrawer{draw.CircleGlyph{}, draw.BoxGlyph{}, draw.PyramidGlyph{}, diamondGlyph{}, downTriangleGlyph{}}

// dashes are the series' line styles: solid, dashed, dotted.
var dashes = [][]vg.Length{nil, {vg.Points(5), vg.Points(2)}, {vg.Points(1.5), vg.Points(1.5)}}

// Series is how one series is drawn: its colour, its glyph, and its dashes.
type Series struct {
	Colour color.RGBA
	Glyph  draw.GlyphDrawer
	Dashes []vg.Length
}

// SeriesStyle is the style of the i-th series (from 0) of a chart: the i-th palette colour, the i-th
// marker (five, so neighbours differ in marker as well as colour), and past the palette's length the
// next dash (solid, dashed, dotted): no two of the first 3×35 series are drawn alike.
func SeriesStyle(i int) Series {
	i = max(i, 0)
	return Series{Colour: Palette[i%len(Palette)].Light, Glyph: glyphs[i%len(glyphs)], Dashes: dashes[(i/len(Palette))%len(dashes)]}
}

// Styled is the style of a series that is one of a grid of hue × variant (a step and a roof): the
// hue-th palette colour, and the variant-th dash and marker (solid with filled circles, dashed with
// triangles, dotted with squares, then again with rings).
func Styled(hue, variant int) Series {
	gs := []draw.GlyphDrawer{draw.CircleGlyph{}, draw.TriangleGlyph{}, draw.SquareGlyph{}, draw.RingGlyph{}}
	return Series{Colour: Palette[hue%len(Palette)].Light, Glyph: gs[variant%len(gs)], Dashes: dashes[variant%len(dashes)]}
}

// downTriangleGlyph is a filled triangle pointing down.
type downTriangleGlyph struct{}

func (downTriangleGlyph) DrawGlyph(c *draw.Canvas, sty draw.GlyphStyle, pt vg.Point) {
	c.SetColor(sty.Color)
	r := sty.Radius * 1.2
	var p vg.Path
	p.Move(vg.Point{X: pt.X - r, Y: pt.Y + r*0.6})
	p.Line(vg.Point{X: pt.X + r, Y: pt.Y + r*0.6})
	p.Line(vg.Point{X: pt.X, Y: pt.Y - r})
	p.Close()
	c.Fill(p)
}

// diamondGlyph is a diamond, filled or hollow.
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
	p.Title.TextStyle.Font = font.From(font.Font{Typeface: "Liberation", Variant: "Sans", Weight: xfont.WeightBold}, titleSize)
	p.Title.Padding = vg.Points(6)
	for _, ax := range []*plot.Axis{&p.X, &p.Y} {
		ax.Label.TextStyle.Font = font.From(sans, TextSize)
		ax.Tick.Label.Font = font.From(sans, TextSize)
		ax.Color, ax.Tick.Color = muted, muted
		ax.Label.Padding = vg.Points(4)
	}
	p.Legend = plot.NewLegend()
	p.Legend.TextStyle.Font = font.From(sans, TextSize)
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
// beside the first (or under the stack when it would take over a third of the width, or there
// is more than one plot), and the
// accessible title and description for its SVG.
type figure struct {
	plots   []*plot.Plot
	heights []vg.Length
	legend  []entry
	title   string
	desc    string
}

// Width is the charts' width; heights follow the data (lineHeight, barHeight). With TextSize it
// keeps every text at 11 px or more in a 390 px phone's column (about 320 px: the chart is drawn at
// 1 px a point or more); the page shows it at most at its own size, about 415 px (static/style.css).
const Width = 11 * vg.Centimeter

// TextSize is the size in points of the charts' smallest text (ticks, legend, axis labels);
// titleSize that of their titles, in bold.
const (
	TextSize  = 11
	titleSize = 12
)

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
	leg.TextStyle.Font = font.From(sans, TextSize)
	leg.ThumbnailWidth = vg.Points(26)
	leg.Padding = vg.Points(3)
	leg.Top, leg.Left = true, true
	inner := Width - 2*margin
	// Legend lines wider than the chart (less the legend's indent, its thumbnail and padding) are cut.
	for i, e := range f.legend {
		thumbs := append([]plot.Thumbnailer{seriesMark{i, leg.TextStyle}}, e.thumbs...)
		leg.Add(legendName(leg.TextStyle, e.name, inner-legendIndent-leg.ThumbnailWidth-3*leg.Padding), thumbs...)
	}
	full := draw.Canvas{Rectangle: vg.Rectangle{Max: vg.Point{X: Width, Y: 100 * vg.Centimeter}}}
	var legW, legH vg.Length
	if len(f.legend) > 0 {
		r := leg.Rectangle(full)
		legW, legH = r.Max.X-r.Min.X+vg.Points(10), r.Max.Y-r.Min.Y+vg.Points(8)
	}
	// Under the plots when wide, and always under a stack of panels, so that their axes line up.
	below := legW > inner/3 || len(f.plots) > 1
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
			lc.FillText(leg.TextStyle, lc.Min, seriesEnd)
		} else {
			plotArea = draw.Crop(dc, 0, -legW, 0, 0)
			top := titleHeight(f.plots[0], plotArea.Max.X-plotArea.Min.X) + f.plots[0].Title.Padding
			lc := draw.Crop(dc, inner-legW+vg.Points(6), 0, 0, -top)
			leg.Draw(lc)
			lc.FillText(leg.TextStyle, lc.Min, seriesEnd)
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
	// Wrapped narrower than c: it is centred on the data, right of the y axis and its labels.
	xlabel := strings.Split(wrap(xsty, p.X.Label.Text, xLabelWidth(p, c)), "\n")
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

// xLabelWidth is how wide the x axis' label may be in c: three quarters of c, and no wider than the
// label centred on the data (right of the y axis, its label and its tick labels, which long kernel
// names make wide) can be without leaving c, with a little slack for the narrowing drawPlot does.
func xLabelWidth(p *plot.Plot, c draw.Canvas) vg.Length {
	width := (c.Max.X - c.Min.X) * 3 / 4
	est := c
	if p.Y.Label.Text != "" {
		est = draw.Crop(c, p.Y.Label.TextStyle.Height(p.Y.Label.Text)+p.Y.Label.Padding, 0, 0, 0)
	}
	if da := p.DataCanvas(est); da.Max.X > da.Min.X {
		width = min(width, 2*min(da.Center().X-c.Min.X, c.Max.X-da.Center().X)*9/10)
	}
	return width
}

// plainNumber is a number written in plain decimals whose whole part has four digits or more.
var plainNumber = regexp.MustCompile(`^(-?)([0-9]{4,})(\.[0-9]+)?$`)

// grouped writes a plain number label with thousands separators, as the tables and the lessons
// write numbers ("12000" → "12,000", "1024.5" → "1,024.5"); any other label is returned as it is.
func grouped(label string) string {
	m := plainNumber.FindStringSubmatch(label)
	if m == nil {
		return label
	}
	whole, err := strconv.ParseInt(m[2], 10, 64)
	if err != nil {
		return label
	}
	return m[1] + humanize.Comma(whole) + m[3]
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
	for i := range ticks {
		ticks[i].Label = grouped(ticks[i].Label)
	}
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
	}
	for _, c := range append([]ThemeColour{gridColour, mutedColour}, Palette...) {
		v := fmt.Sprintf("var(%s,%s)", c.Var, hex(c.Light))
		pairs = append(pairs, "stroke:"+hex(c.Light), "stroke:"+v, "fill:"+hex(c.Light), "fill:"+v)
	}
	svg = strings.NewReplacer(pairs...).Replace(svg)
	return withTextLength(seriesGroups(svg))
}

// seriesMark is drawn first of legend entry i's thumbnails: a placeholder text that seriesGroups
// turns into the start of the entry's group (<g id="chart-series-i">), so the SVG groups each series' legend
// key (its line, marker and name) for a reader of the SVG, such as the test of every lesson chart.
type seriesMark struct {
	i   int
	sty text.Style
}

func (m seriesMark) Thumbnail(c *draw.Canvas) {
	c.FillText(m.sty, c.Min, fmt.Sprintf("@@series-%d@@", m.i))
}

// seriesEnd is the placeholder drawn after a legend: the end of its last series' group.
const seriesEnd = "@@series-end@@"

// seriesMarkText is a placeholder text as vgsvg writes it.
var seriesMarkText = regexp.MustCompile(`<text [^>]*>@@series-(\d+|end)@@</text>\n?`)

// seriesGroups turns the legend's placeholders into groups: each legend entry's drawing in a
// <g id="chart-series-i"> (an id, not a class: a worker's chart relayed by package cluster may
// carry no class but "chart").
func seriesGroups(svg string) string {
	return seriesMarkText.ReplaceAllStringFunc(svg, func(m string) string {
		switch i := seriesMarkText.FindStringSubmatch(m)[1]; i {
		case "end":
			return "</g>\n"
		case "0":
			return `<g id="chart-series-0">` + "\n"
		default:
			return `</g>` + "\n" + `<g id="chart-series-` + i + `">` + "\n"
		}
	})
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
// less than three decades (at 10^k alone beyond), unlabelled ticks at the other integers × 10^k;
// a range too narrow to hold two of those labels (0.07 to 0.14 ms) labels every tick.
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
	labelled := 0
	for _, t := range ticks {
		if t.Label != "" {
			labelled++
		}
	}
	if labelled < 2 { // a range too narrow for two of 1, 2 and 5 × 10^k: label every tick (thinned keeps those that fit)
		for i, t := range ticks {
			e := math.Floor(math.Log10(t.Value) + 1e-9)
			ticks[i].Label = logLabel(int(math.Round(t.Value/math.Pow(10, e))), int(e))
		}
	}
	return ticks
}
