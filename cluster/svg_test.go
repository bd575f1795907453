package cluster

import (
	"encoding/xml"
	"io"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/gpuplayground/playground/chart"
	"github.com/gpuplayground/playground/experiment"
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
// text of each one is kept, in order.
func TestSanitizeKeepsCharts(t *testing.T) {
	throughput, err := chart.ThroughputPeak([]experiment.Result{
		{Kernel: "naive", N: 64, DType: "float32", GFLOPS: 1.5}, {Kernel: "gonum", N: 64, DType: "float32", GFLOPS: 9},
		{Kernel: "naive", N: 128, DType: "float32", GFLOPS: 1.2}, {Kernel: "gonum", N: 128, DType: "float32", GFLOPS: 12},
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
	for name, svg := range map[string]string{"throughput": throughput, "roofline": roofline, "durations": durations} {
		got, err := sanitizeSVG(svg)
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
		for _, el := range []string{"<path", "<text"} {
			if n := strings.Count(got, el); n == 0 || n != strings.Count(svg, el) {
				t.Errorf("%s: %d %s elements after sanitising, want %d", name, n, el, strings.Count(svg, el))
			}
		}
	}
}

// What a worker might slip into a chart to run in a learner's page is removed; the drawing stays.
func TestSanitizeRemovesActiveContent(t *testing.T) {
	in := `<?xml version="1.0"?><!-- hi --><svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" onload="alert(1)" viewBox="0 0 10 10">` +
		`<script>alert(2)</script><script xlink:href="https://evil.example/x.js"/>` +
		`<foreignObject width="10" height="10"><body xmlns="http://www.w3.org/1999/xhtml"><img src="x" onerror="alert(3)"/></body></foreignObject>` +
		`<a href="javascript:alert(4)"><text x="1">link</text></a>` +
		`<use href="javascript:alert(5)"/><use xlink:href="https://evil.example/s.svg#x"/><use href="#ok"/>` +
		`<rect width="1" height="1" style="fill:url(https://evil.example/t)" fill="url(#grad)" ONCLICK="alert(6)"/>` +
		`<path d="M0,0L1,1" style="behavior:expression(alert(7))" stroke="u\rl(x)"/>` +
		`<image href="data:image/svg+xml,&lt;svg onload=alert(8)&gt;"/><style>*{background:url(https://evil.example)}</style>` +
		`<text x="2" y="3">a &lt;script&gt; in text stays text</text></svg>`
	got, err := sanitizeSVG(in)
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"script>", "<script", "onload", "onerror", "ONCLICK", "onclick", "foreignObject", "<body", "<img", "javascript",
		"evil.example", "expression", "<a", "<image", "<style", "<!--", "<?xml", `\`} {
		if strings.Contains(got, bad) {
			t.Errorf("sanitised SVG still has %q:\n%s", bad, got)
		}
	}
	for _, want := range []string{`<use href="#ok">`, `fill="url(#grad)"`, `<path d="M0,0L1,1">`, `viewBox="0 0 10 10"`,
		`xmlns:xlink="http://www.w3.org/1999/xlink"`, "a &lt;script&gt; in text stays text"} {
		if !strings.Contains(got, want) {
			t.Errorf("sanitised SVG lacks %q:\n%s", want, got)
		}
	}
}

// What is not an SVG document is refused, so the server relays a note instead of a chart.
func TestSanitizeRefusesNonSVG(t *testing.T) {
	for _, in := range []string{"", "hello", "<html><script>alert(1)</script></html>", "<svg><g></svg>", "<svg></svg><svg></svg>",
		"<svg>", `<!DOCTYPE svg [<!ENTITY x "y">]><svg>&x;</svg>`, strings.Repeat("<g>", 100)} {
		if got, err := sanitizeSVG(in); err == nil {
			t.Errorf("sanitizeSVG(%.40q) = %.80q, want an error", in, got)
		}
	}
}

// FuzzSanitizeSVG: no input panics, and what comes out is a fixed point with no event handler or
// script left.
func FuzzSanitizeSVG(f *testing.F) {
	for _, seed := range []string{`<svg xmlns="http://www.w3.org/2000/svg"><g transform="scale(1,-1)"><path d="M0,0" style="fill:red"/><text>x</text></g></svg>`,
		`<svg onload="x"><script>y</script><use xlink:href="#a"/></svg>`, `<svg><foreignObject><svg/></foreignObject></svg>`, "<svg/>"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, in string) {
		got, err := sanitizeSVG(in)
		if err != nil {
			return
		}
		again, err := sanitizeSVG(got)
		if err != nil || again != got {
			t.Fatalf("sanitising %q again: %q, %v; want it unchanged", got, again, err)
		}
		d := xml.NewDecoder(strings.NewReader(got))
		for {
			tok, err := d.RawToken()
			if err != nil {
				break
			}
			if st, ok := tok.(xml.StartElement); ok {
				if !svgElements[st.Name.Local] || st.Name.Space != "" {
					t.Fatalf("<%s> survived in %q", qname(st.Name), got)
				}
				for _, a := range st.Attr {
					if strings.HasPrefix(strings.ToLower(a.Name.Local), "on") || a.Name.Local == "href" && !strings.HasPrefix(a.Value, "#") {
						t.Fatalf("%s=%q survived in %q", qname(a.Name), a.Value, got)
					}
				}
			}
		}
	})
}
