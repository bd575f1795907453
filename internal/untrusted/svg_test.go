package untrusted

import (
	"encoding/xml"
	"io"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/gpuplayground/playground/chart"
)

// svgTokens lists what an SVG document draws: each element with its attributes in order, its text,
// and each end, as lines; comments, directives and what lies outside the root element (a final
// newline) are left out.
func svgTokens(t *testing.T, svg string) []string {
	t.Helper()
	d := xml.NewDecoder(strings.NewReader(svg))
	var out []string
	depth := 0
	for {
		tok, err := d.RawToken()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("not XML: %v", err)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			line := "<" + qname(tok.Name)
			for _, a := range tok.Attr {
				line += " " + qname(a.Name) + "=" + a.Value
			}
			out = append(out, line)
			depth++
		case xml.EndElement:
			out = append(out, "</"+qname(tok.Name))
			depth--
		case xml.CharData:
			if depth > 0 {
				out = append(out, "text "+string(tok))
			}
		}
	}
}

// The charts this project draws go through the sanitiser unchanged: every element, attribute and
// text of each one is kept, in order (and each passes the fuzz test's check).
func TestSanitizeKeepsCharts(t *testing.T) {
	throughput, err := chart.ThroughputPeak([]chart.RatePoint{
		{Kernel: "naive", N: 64, DType: "float32", Rate: 1.5}, {Kernel: "gonum", N: 64, DType: "float32", Rate: 9},
		{Kernel: "naive", N: 128, DType: "float32", Rate: 1.2}, {Kernel: "gonum", N: 128, DType: "float32", Rate: 12},
	}, 100, "peak (datasheet)")
	if err != nil {
		t.Fatal(err)
	}
	roofline, err := chart.Roofline([]chart.Roof{{Label: "this machine (measured)", PeakGFLOPS: 13, Bandwidth: 24}, {Label: "H100 SXM datasheet", PeakGFLOPS: 67000, Bandwidth: 3350}},
		[]chart.Point{{Label: "gonum n=256", Intensity: 42.7, GFLOPS: 12}, {Label: "gonum n=256", Intensity: 42.7, GFLOPS: 20, Predicted: true}})
	if err != nil {
		t.Fatal(err)
	}
	durations, err := chart.Durations("budget", []chart.Duration{{Label: "slow", Seconds: 3e12, Group: "a"}, {Label: "fast", Seconds: 90, Group: "b"}, {Label: "never", Seconds: math.Inf(1), Group: "b"}})
	if err != nil {
		t.Fatal(err)
	}
	counts, err := chart.Counts([]chart.KernelCounts{{Kernel: "naive", N: 64, BytesMoved: 8e6, FLOPs: 524288}, {Kernel: "smem", N: 64, BytesMoved: 1e5, FLOPs: 524288}})
	if err != nil {
		t.Fatal(err)
	}
	utilisation, err := chart.Utilisation([]chart.Array{{Label: "TPU v1: 256×256", N: 256}, {Label: "this cell: 8×8", N: 8}},
		func(N, n int) (int64, int64) {
			return int64(n) * int64(n) * int64(n), int64(n)*int64(n)*int64(n)/int64(N) + 3*int64(N)
		})
	if err != nil {
		t.Fatal(err)
	}
	allreduce, err := chart.Collective([]chart.ModelPoint{{Link: "NVLink", GPUs: 1}, {Link: "NVLink", GPUs: 8, Seconds: 0.004}, {Link: "PCIe", GPUs: 8, Seconds: 0.04}}, "all-reduce", 1400)
	if err != nil {
		t.Fatal(err)
	}
	for name, svg := range map[string]string{"throughput": throughput, "roofline": roofline, "durations": durations,
		"counts": counts, "utilisation": utilisation, "allreduce": allreduce} {
		got, err := SVG(svg)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		want := svgTokens(t, svg)
		if g := svgTokens(t, got); !slices.Equal(g, want) {
			for i := range min(len(g), len(want)) {
				if g[i] != want[i] {
					t.Fatalf("%s changed at token %d: got %q, want %q", name, i, g[i], want[i])
				}
			}
			t.Fatalf("%s: %d tokens after sanitising, want %d", name, len(g), len(want))
		}
		checkSanitized(t, got)
		for _, el := range []string{"<path", "<text"} {
			if n := strings.Count(got, el); n == 0 || n != strings.Count(svg, el) {
				t.Errorf("%s: %d %s elements after sanitising, want %d", name, n, el, strings.Count(svg, el))
			}
		}
	}
}

// What a worker might slip into a chart to run in a learner's page, to fetch from elsewhere or to
// lay over the page is removed; the drawing stays.
func TestSanitizeRemovesActiveContent(t *testing.T) {
	in := `<?xml version="1.0"?><!-- hi --><svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" onload="alert(1)" viewBox="0 0 10 10">` +
		`<script>alert(2)</script><script xlink:href="https://evil.example/x.js"/>` +
		`<foreignObject width="10" height="10"><body xmlns="http://www.w3.org/1999/xhtml"><img src="x" onerror="alert(3)"/></body></foreignObject>` +
		`<a href="javascript:alert(4)"><text x="1">link</text></a>` +
		`<use href="javascript:alert(5)"/><use xlink:href="https://evil.example/s.svg#x"/><use href="#ok"/>` +
		`<rect width="1" height="1" style="fill:url(https://evil.example/t)" fill="url(#grad)" ONCLICK="alert(6)"/>` +
		`<path d="M0,0L1,1" style="behavior:expression(alert(7))" stroke="u\rl(x)"/>` +
		`<image href="data:image/svg+xml,&lt;svg onload=alert(8)&gt;"/><style>*{background:url(https://evil.example)}</style>` +
		`<rect width="1" height="1" style="fill:image-set(&apos;http://evil.example/a&apos; 1x);stroke:red"/>` +
		`<rect width="100%" height="100%" style="position:fixed;z-index:99999;top:0;left:0;fill:white;stroke-width:2"/>` +
		`<g style="fill:image(http://evil.example/b);stroke:var(--evil);stroke:var(--c0,#0072B2);font-family:&apos;a;position:fixed&apos;"/>` +
		`<style>@import &apos;http://evil.example/c.css&apos;;</style>` +
		`<text style="font-family:\27 x;fill:attr(x);stroke:red!important;font-size:1px/**/" class="modal overlay" id="token">Enter your token</text>` +
		`<g filter="url(#f)" clip-path="url(https://evil.example/d)" mask="url(#m)" transform="translate(1,2) url(x)"/>` +
		`<title>t<img src="x" onerror="alert(9)"/></title>` +
		`<text x="2" y="3">a &lt;script&gt; in text stays text</text></svg>`
	got, err := SVG(in)
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"script>", "<script", "onload", "onerror", "ONCLICK", "onclick", "foreignObject", "<body", "<img", "javascript",
		"evil.example", "expression", "<a", "<image", "<style", "<!--", "<?xml", `\`, "url(", "image-set", "image(", "position", "z-index",
		"@import", "href", "var(--evil", "attr(", "!important", "/*", "modal", `id="token"`, "filter", "clip-path", "mask", "<use"} {
		if strings.Contains(got, bad) {
			t.Errorf("sanitised SVG still has %q:\n%s", bad, got)
		}
	}
	for _, want := range []string{`<path d="M0,0L1,1">`, `viewBox="0 0 10 10"`, `xmlns:xlink="http://www.w3.org/1999/xlink"`,
		`style="stroke:red"`, `style="fill:white;stroke-width:2"`, `style="stroke:var(--c0,#0072B2)"`, "<title>t</title>",
		">Enter your token</text>", "a &lt;script&gt; in text stays text"} {
		if !strings.Contains(got, want) {
			t.Errorf("sanitised SVG lacks %q:\n%s", want, got)
		}
	}
}

// What is not an SVG document is refused, so the server relays a note instead of a chart.
func TestSanitizeRefusesNonSVG(t *testing.T) {
	for _, in := range []string{"", "hello", "<html><script>alert(1)</script></html>", "<svg><g></svg>", "<svg></svg><svg></svg>",
		"<svg>", `<!DOCTYPE svg [<!ENTITY x "y">]><svg>&x;</svg>`, strings.Repeat("<g>", 100)} {
		if got, err := SVG(in); err == nil {
			t.Errorf("SVG(%.40q) = %.80q, want an error", in, got)
		}
	}
}

// FuzzSanitizeSVG: no input panics, and what comes out is a fixed point holding only allowed
// elements and attributes, no style beyond svgProperties, and none of the constructs that run,
// fetch or lay over the page (forbidden) in any attribute.
func FuzzSanitizeSVG(f *testing.F) {
	for _, seed := range []string{`<svg xmlns="http://www.w3.org/2000/svg"><g transform="scale(1,-1)"><path d="M0,0" style="fill:red"/><text>x</text></g></svg>`,
		`<svg onload="x"><script>y</script><use xlink:href="#a"/></svg>`, `<svg><foreignObject><svg/></foreignObject></svg>`, "<svg/>",
		`<svg><rect style="fill:image-set('http://x/a' 1x);position:fixed;z-index:9" fill="url(http://x)"/></svg>`,
		`<svg><style>@import 'http://x';</style><text style="font-family:'a;b';fill:var(--c1,#fff)" class="chart" id="chart-x">t</text></svg>`,
		`<svg><title><svg><style>x</style></svg></title></svg>`} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, in string) {
		got, err := SVG(in)
		if err != nil {
			return
		}
		again, err := SVG(got)
		if err != nil || again != got {
			t.Fatalf("sanitising %q again: %q, %v; want it unchanged", got, again, err)
		}
		checkSanitized(t, got)
	})
}

// forbidden are what no attribute of a sanitised chart may hold, in any case: what fetches (url(),
// image-set(), image()), runs (javascript:, expression(), attr()), lays over the page (position,
// z-index), or escapes or ends CSS or markup.
var forbidden = []string{"url(", "image-set(", "image(", "position:", "z-index:", "@", "\\", "/", "javascript:", "expression(", "attr(",
	"!", "{", "}", "<", ">", "\"", "href"}

// checkSanitized fails t if svg, SVG's output, holds an element or attribute outside the
// allow-lists, a style property outside svgProperties, or a forbidden construct in an attribute.
func checkSanitized(t *testing.T, svg string) {
	t.Helper()
	d := xml.NewDecoder(strings.NewReader(svg))
	var open []string
	for {
		tok, err := d.RawToken()
		if err != nil {
			break
		}
		switch tok := tok.(type) {
		case xml.EndElement:
			open = open[:len(open)-1]
		case xml.StartElement:
			if !svgElements[tok.Name.Local] || tok.Name.Space != "" || len(open) > 0 && textOnly(open[len(open)-1]) {
				t.Fatalf("<%s> survived in %q", qname(tok.Name), svg)
			}
			open = append(open, tok.Name.Local)
			for _, a := range tok.Attr {
				checkAttr(t, a, svg)
			}
		}
	}
}

// checkAttr fails t if a, an attribute of the sanitised svg, is not one a chart may have.
func checkAttr(t *testing.T, a xml.Attr, svg string) {
	t.Helper()
	name, lower := qname(a.Name), strings.ToLower(a.Value)
	switch {
	case name == "xmlns" || name == "xmlns:xlink":
		if a.Value != svgNS && a.Value != xlinkNS {
			t.Fatalf("%s=%q survived in %q", name, a.Value, svg)
		}
		return
	case name == "aria-label":
		return // text, escaped; never CSS nor a reference
	case a.Name.Space != "" || !(svgGeometry[name] || svgProperties[name] || name == "style" || name == "transform" ||
		name == "class" || name == "role" || name == "id" || name == "aria-labelledby"):
		t.Fatalf("attribute %s survived in %q", name, svg)
	}
	for _, bad := range forbidden {
		if strings.Contains(lower, bad) {
			t.Fatalf("%s=%q (%q) survived in %q", name, a.Value, bad, svg)
		}
	}
	if name != "transform" && strings.Contains(chartVar.ReplaceAllString(a.Value, ""), "(") {
		t.Fatalf("%s=%q, a function other than the chart's var(), survived in %q", name, a.Value, svg)
	}
	if name == "style" {
		for _, decl := range strings.Split(a.Value, ";") {
			if prop, _, _ := strings.Cut(decl, ":"); !svgProperties[prop] {
				t.Fatalf("style property %q survived in %q", prop, svg)
			}
		}
	}
}
