package cluster

import (
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strings"
)

// svgElements are the SVG elements a chart from a worker may hold: what gonum/plot's SVG back end
// (vgsvg) and the chart package write, and a few plain shapes besides. Anything else (script,
// foreignObject, image, a, animate, style, …) is dropped with all it contains.
var svgElements = map[string]bool{
	"svg": true, "g": true, "path": true, "text": true, "tspan": true, "rect": true, "circle": true,
	"ellipse": true, "line": true, "polyline": true, "polygon": true, "title": true, "desc": true,
	"defs": true, "clipPath": true, "use": true,
}

// svgAttributes are the attributes (without a namespace prefix) a chart element may carry; names
// starting with "aria-", "font-", "stroke-" or "fill-" are allowed too. Event handlers (on…) never are.
var svgAttributes = map[string]bool{
	"d": true, "x": true, "y": true, "x1": true, "y1": true, "x2": true, "y2": true, "dx": true, "dy": true,
	"cx": true, "cy": true, "r": true, "rx": true, "ry": true, "width": true, "height": true,
	"points": true, "transform": true, "style": true, "fill": true, "stroke": true, "opacity": true,
	"viewBox": true, "preserveAspectRatio": true, "xmlns": true, "version": true, "id": true,
	"class": true, "role": true, "clip-path": true, "clipPathUnits": true, "text-anchor": true,
	"dominant-baseline": true, "href": true,
}

// svgNamespaces are the namespaces a chart may declare (xmlns="…" and xmlns:xlink="…").
var svgNamespaces = map[string]bool{"http://www.w3.org/2000/svg": true, "http://www.w3.org/1999/xlink": true}

// maxSVGDepth bounds the nesting of a chart's elements.
const maxSVGDepth = 64

// sanitizeSVG returns svg, an SVG document a worker drew, with only the elements and attributes a
// chart uses: it is relayed to learners' pages, which insert it as markup, so a worker must not be
// able to put a script, an event handler, a link or an external reference there. Dropped: every
// element not in svgElements (with its content), comments, processing instructions and directives,
// every attribute not in svgAttributes, any href (or xlink:href) not starting with '#', and any
// attribute value with url(…) not pointing into the document (url(#…)), "expression", "javascript:"
// or a backslash (a CSS escape). Text is escaped again. The error says why svg is not an SVG
// document at all (not XML, no <svg> root, too deep).
func sanitizeSVG(svg string) (string, error) {
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
			if t.Name.Space != "" || !svgElements[name] {
				if len(open) == 0 {
					return "", fmt.Errorf("the root element is <%s>, not <svg>", qname(t.Name))
				}
				skip = 1
				continue
			}
			if len(open) == 0 {
				if root || name != "svg" {
					return "", fmt.Errorf("the root element is <%s>, not a single <svg>", name)
				}
				root = true
			}
			if len(open) >= maxSVGDepth {
				return "", fmt.Errorf("elements nested over %d deep", maxSVGDepth)
			}
			open = append(open, name)
			b.WriteString("<" + name)
			for _, a := range t.Attr {
				if n, ok := svgAttribute(a); ok {
					b.WriteString(" " + n + `="`)
					_ = xml.EscapeText(&b, []byte(a.Value))
					b.WriteString(`"`)
				}
			}
			b.WriteString(">")
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
				_ = xml.EscapeText(&b, t)
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

// svgAttribute reports whether a may stay on a chart element, and its name as written.
func svgAttribute(a xml.Attr) (string, bool) {
	name, value := a.Name.Local, a.Value
	switch a.Name.Space {
	case "":
		lower := strings.ToLower(name)
		if strings.HasPrefix(lower, "on") {
			return "", false
		}
		if !svgAttributes[name] && !hasAnyPrefix(lower, "aria-", "font-", "stroke-", "fill-") {
			return "", false
		}
		if name == "xmlns" && !svgNamespaces[value] {
			return "", false
		}
	case "xmlns":
		if name != "xlink" || !svgNamespaces[value] {
			return "", false
		}
		name = "xmlns:xlink"
	case "xlink":
		if name != "href" {
			return "", false
		}
		name = "xlink:href"
	default:
		return "", false
	}
	if (a.Name.Local == "href") && !strings.HasPrefix(value, "#") {
		return "", false
	}
	return name, safeValue(value)
}

// safeValue reports whether an attribute value refers to nothing outside the document and runs
// nothing: url(…) only as url(#…), no "expression", no "javascript:", no backslash.
func safeValue(v string) bool {
	lower := strings.ToLower(v)
	if strings.Contains(lower, "expression") || strings.Contains(lower, "javascript:") || strings.ContainsRune(v, '\\') {
		return false
	}
	for rest := lower; ; {
		i := strings.Index(rest, "url(")
		if i < 0 {
			return true
		}
		rest = strings.TrimLeft(rest[i+len("url("):], " \t\r\n'\"")
		if !strings.HasPrefix(rest, "#") {
			return false
		}
	}
}

func hasAnyPrefix(s string, prefixes ...string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

func qname(n xml.Name) string {
	if n.Space == "" {
		return n.Local
	}
	return n.Space + ":" + n.Local
}
