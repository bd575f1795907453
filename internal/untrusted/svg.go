package untrusted

import (
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
)

// A chart from a worker is relayed to learners' pages, which insert it as markup (innerHTML), and a
// worker is not trusted with them. SVG parses it and writes it again through allow-lists:
// the elements, attributes, CSS properties and values that the chart package (gonum/plot's vgsvg
// back end and chart/style.go) writes, and a few plain shapes besides. Nothing else passes: no
// script, style, image, a, use, foreignObject, animation or filter element; no href or xlink:href at
// all; no event handler; no class but "chart" nor id but "chart-…" (the page's own CSS and ids stay
// out of reach); no CSS value with a function but var() of the chart's own colour variables, so no
// url(), image-set(), image(), attr() or expression(); no CSS property outside svgProperties (so
// no position, z-index, display, content or anything that lays out the page); no @, backslash,
// slash, braces, "!" or unbalanced quote in a value. The chart's own charts pass unchanged
// (TestSanitizeKeepsCharts).

// svgElements are the elements a worker's chart may hold. title and desc hold text only.
var svgElements = map[string]bool{
	"svg": true, "g": true, "path": true, "text": true, "tspan": true, "rect": true, "circle": true,
	"ellipse": true, "line": true, "polyline": true, "polygon": true, "title": true, "desc": true,
}

// svgGeometry are the attributes whose values are numbers, lengths, path data or point lists
// (plainValue).
var svgGeometry = map[string]bool{
	"d": true, "x": true, "y": true, "x1": true, "y1": true, "x2": true, "y2": true, "dx": true, "dy": true,
	"cx": true, "cy": true, "r": true, "rx": true, "ry": true, "width": true, "height": true,
	"points": true, "viewBox": true, "textLength": true, "lengthAdjust": true,
}

// svgProperties are the CSS properties a chart may set, in a style attribute or as presentation
// attributes of the same name; their values must pass cssValue.
var svgProperties = map[string]bool{
	"fill": true, "fill-opacity": true, "fill-rule": true, "stroke": true, "stroke-width": true,
	"stroke-dasharray": true, "stroke-dashoffset": true, "stroke-linecap": true, "stroke-linejoin": true,
	"stroke-opacity": true, "stroke-miterlimit": true, "opacity": true, "font-family": true,
	"font-size": true, "font-style": true, "font-variant": true, "font-weight": true,
	"text-anchor": true, "dominant-baseline": true,
}

// The namespaces a chart may declare, each only as itself.
const (
	svgNS   = "http://www.w3.org/2000/svg"
	xlinkNS = "http://www.w3.org/1999/xlink"
)

var (
	// plainValue: numbers, units, path commands and separators; no parenthesis, colon, quote or
	// slash, so nothing that refers or runs.
	plainValue = regexp.MustCompile(`^[0-9A-Za-z .,+\-%#\t\n]*$`)
	// transformValue: SVG transform functions of numbers.
	transformValue = regexp.MustCompile(`^(\s*(matrix|translate|scale|rotate|skewX|skewY)\(\s*[-+0-9.eE,\s]*\)\s*,?)*\s*$`)
	// chartVar: var() of the page's chart colours (chart/style.go's themed), with a colour fallback.
	chartVar = regexp.MustCompile(`var\(--(c[0-9]{1,2}|chart-bg|line|muted)(,\s*#[0-9A-Fa-f]{3,8})?\)`)
	// cssPlain: what a CSS value may hold once its chartVar()s are taken out.
	cssPlain = regexp.MustCompile(`^[0-9A-Za-z .,%#'\-_]*$`)
	// chartID: the ids a chart may give its elements (chart-title, chart-desc), out of the page's.
	chartID = regexp.MustCompile(`^chart-[a-z0-9-]{1,64}$`)
)

// maxSVGDepth bounds the nesting of a chart's elements.
const maxSVGDepth = 64

// SVG returns svg, an SVG document a worker drew, written again with only what the
// allow-lists above let through: every element not in svgElements is dropped with its content (and
// every element inside title or desc), comments, processing instructions and directives are dropped,
// and each attribute is kept only if svgAttribute allows it; text is cleaned (Text) and escaped
// again. The error says why svg is not an SVG document at all (not XML, no single <svg> root, too
// deep, unbalanced).
func SVG(svg string) (string, error) {
	d := xml.NewDecoder(strings.NewReader(svg))
	d.Strict = true
	var b strings.Builder
	var open []string // names of the elements written and not yet closed
	skip := 0         // >0: inside a dropped element, this many levels deep
	root := false
	for {
		tok, err := d.RawToken()
		if err == io.EOF {
			break
		}
		if err != nil {
			return "", fmt.Errorf("not XML: %w", err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if skip > 0 {
				skip++
				continue
			}
			name := t.Name.Local
			if len(open) == 0 && (root || t.Name.Space != "" || name != "svg") {
				return "", fmt.Errorf("the root element is <%s>, not a single <svg>", qname(t.Name))
			}
			if t.Name.Space != "" || !svgElements[name] || len(open) > 0 && textOnly(open[len(open)-1]) {
				skip = 1
				continue
			}
			if len(open) >= maxSVGDepth {
				return "", fmt.Errorf("elements nested over %d deep", maxSVGDepth)
			}
			root = true
			open = append(open, name)
			writeStart(&b, name, t.Attr)
		case xml.EndElement:
			if skip > 0 {
				skip--
				continue
			}
			if len(open) == 0 || t.Name.Space != "" || open[len(open)-1] != t.Name.Local {
				return "", fmt.Errorf("</%s> closes no open element", qname(t.Name))
			}
			open = open[:len(open)-1]
			b.WriteString("</" + t.Name.Local + ">")
		case xml.CharData:
			if skip == 0 && len(open) > 0 {
				_ = xml.EscapeText(&b, []byte(Text(string(t), MaxText)))
			}
		}
		// Comments, processing instructions and directives are dropped.
	}
	if !root {
		return "", errors.New("no <svg> element")
	}
	if len(open) > 0 {
		return "", fmt.Errorf("<%s> is never closed", open[len(open)-1])
	}
	return b.String(), nil
}

// textOnly reports whether the element holds text only: title and desc, which an HTML page parses
// as HTML (integration points), hold no element of a worker's chart.
func textOnly(element string) bool { return element == "title" || element == "desc" }

// writeStart writes the start tag of element with the attributes svgAttribute keeps.
func writeStart(b *strings.Builder, element string, attrs []xml.Attr) {
	b.WriteString("<" + element)
	for _, a := range attrs {
		if name, value, ok := svgAttribute(a); ok {
			b.WriteString(" " + name + `="`)
			_ = xml.EscapeText(b, []byte(value))
			b.WriteString(`"`)
		}
	}
	b.WriteString(">")
}

// svgAttribute reports whether a may stay on a chart's element, with its name and value as written
// then: geometry as plain values, a transform of transform functions, a style of svgProperties with
// cssValue values (declarations that are not are dropped), presentation attributes likewise,
// class "chart", role "img", ids "chart-…" and aria-labelledby naming them, aria-label as a line of
// text, and the SVG and XLink namespaces as themselves. Nothing else.
func svgAttribute(a xml.Attr) (name, value string, ok bool) {
	name, value = a.Name.Local, a.Value
	switch {
	case a.Name.Space == "xmlns":
		return "xmlns:" + name, value, name == "xlink" && value == xlinkNS
	case a.Name.Space != "":
		return "", "", false
	case name == "xmlns":
		return name, value, value == svgNS
	case svgGeometry[name]:
		return name, value, plainValue.MatchString(value)
	case name == "transform":
		return name, value, transformValue.MatchString(value)
	case name == "style":
		value = cssDeclarations(value)
		return name, value, value != ""
	case svgProperties[name]:
		return name, value, cssValue(value)
	case name == "class":
		return name, value, value == "chart"
	case name == "role":
		return name, value, value == "img"
	case name == "id":
		return name, value, chartID.MatchString(value)
	case name == "aria-labelledby":
		ids := strings.Fields(value)
		for _, id := range ids {
			if !chartID.MatchString(id) {
				return "", "", false
			}
		}
		return name, strings.Join(ids, " "), len(ids) > 0
	case name == "aria-label":
		return name, Line(value, MaxLine), true
	}
	return "", "", false
}

// cssDeclarations is a style attribute's value with only its declarations of svgProperties whose
// values pass cssValue, joined by ";"; "" when none is left.
func cssDeclarations(style string) string {
	var kept []string
	for _, decl := range strings.Split(style, ";") {
		prop, value, ok := strings.Cut(decl, ":")
		prop, value = strings.ToLower(strings.TrimSpace(prop)), strings.TrimSpace(value)
		if ok && svgProperties[prop] && cssValue(value) {
			kept = append(kept, prop+":"+value)
		}
	}
	return strings.Join(kept, ";")
}

// cssValue reports whether v may be a chart's CSS value: words, numbers, units, colours, commas
// and balanced single quotes (a font's name), and var() only of the chart's own colour variables
// with a colour fallback; no other function (url, image-set, image, attr, expression, …), and no
// character that could end or escape a declaration (; : \ / @ { } ! " < >).
func cssValue(v string) bool {
	rest := chartVar.ReplaceAllString(v, "v")
	return cssPlain.MatchString(rest) && strings.Count(rest, "'")%2 == 0
}

func qname(n xml.Name) string {
	if n.Space == "" {
		return n.Local
	}
	return n.Space + ":" + n.Local
}
