package chart

import (
	"image/color"
	"math"
	"regexp"
	"strconv"
	"strings"
)

// cssVar is one custom property's definition: "--name: value;".
var cssVar = regexp.MustCompile(`(--[A-Za-z0-9_-]+)\s*:\s*([^;{}]+);`)

// CSSThemes reads the page's custom properties from a stylesheet: those of its first `:root` rule
// (the light theme) and, overlaid on them, those of the `:root` rule inside its
// `@media (prefers-color-scheme: dark)` block (the dark theme). Values are trimmed and lower-cased.
// A stylesheet without a dark block gives the light values for both.
func CSSThemes(css string) (light, dark map[string]string) {
	light, dark = map[string]string{}, map[string]string{}
	block := func(from int) string {
		i := strings.Index(css[from:], ":root")
		if i < 0 {
			return ""
		}
		open := strings.Index(css[from+i:], "{")
		end := strings.Index(css[from+i:], "}")
		if open < 0 || end < open {
			return ""
		}
		return css[from+i+open+1 : from+i+end]
	}
	for _, m := range cssVar.FindAllStringSubmatch(block(0), -1) {
		light[m[1]] = strings.ToLower(strings.TrimSpace(m[2]))
		dark[m[1]] = light[m[1]]
	}
	if i := strings.Index(css, "prefers-color-scheme: dark"); i >= 0 {
		for _, m := range cssVar.FindAllStringSubmatch(block(i), -1) {
			dark[m[1]] = strings.ToLower(strings.TrimSpace(m[2]))
		}
	}
	return light, dark
}

// ParseHex reads a CSS colour written #rgb or #rrggbb (either case); ok is false for anything else.
func ParseHex(s string) (c color.RGBA, ok bool) {
	s = strings.TrimPrefix(strings.TrimSpace(s), "#")
	if len(s) == 3 {
		s = string([]byte{s[0], s[0], s[1], s[1], s[2], s[2]})
	}
	if len(s) != 6 {
		return color.RGBA{}, false
	}
	v, err := strconv.ParseUint(s, 16, 32)
	if err != nil {
		return color.RGBA{}, false
	}
	return rgb(uint32(v)), true
}

// Luminance is c's relative luminance as WCAG 2.x defines it (0 black to 1 white): the sRGB
// channels linearised, weighted 0.2126 R + 0.7152 G + 0.0722 B.
// https://www.w3.org/TR/WCAG21/#dfn-relative-luminance
func Luminance(c color.RGBA) float64 {
	lin := func(v uint8) float64 {
		s := float64(v) / 255
		if s <= 0.04045 {
			return s / 12.92
		}
		return math.Pow((s+0.055)/1.055, 2.4)
	}
	return 0.2126*lin(c.R) + 0.7152*lin(c.G) + 0.0722*lin(c.B)
}

// Contrast is the WCAG 2.x contrast ratio of two colours, (L1 + 0.05) / (L2 + 0.05) with L1 the
// lighter: 1 (same) to 21 (black on white). Normal text needs 4.5 for level AA.
// https://www.w3.org/TR/WCAG21/#dfn-contrast-ratio
func Contrast(a, b color.RGBA) float64 {
	la, lb := Luminance(a), Luminance(b)
	return (math.Max(la, lb) + 0.05) / (math.Min(la, lb) + 0.05)
}
