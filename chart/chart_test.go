package chart

import (
	"encoding/xml"
	"strings"
	"testing"
)

func TestThroughputIsCompleteSVGWithLegendAndLabels(t *testing.T) {
	results := []RatePoint{
		{Kernel: "naive", N: 64, DType: "float32", Rate: 1.5},
		{Kernel: "gonum", N: 64, DType: "float32", Rate: 9},
		{Kernel: "naive", N: 128, DType: "float32", Rate: 1.2},
		{Kernel: "gonum", N: 128, DType: "float32", Rate: 12},
	}
	svg, err := Throughput(results)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(svg, "<svg") || !strings.HasSuffix(strings.TrimSpace(svg), "</svg>") {
		t.Fatalf("not a bare <svg> document: %.80q…", svg)
	}
	// A complete document parses as XML.
	d := xml.NewDecoder(strings.NewReader(svg))
	for {
		if _, err := d.Token(); err != nil {
			if err.Error() != "EOF" {
				t.Fatalf("SVG does not parse: %v", err)
			}
			break
		}
	}
	for _, want := range []string{"naive", "gonum", "GFLOP/s", "log2", "64", "128"} {
		if !strings.Contains(svg, want) {
			t.Errorf("SVG lacks %q", want)
		}
	}
}

func TestThroughputSinglePointAndEmpty(t *testing.T) {
	for _, rs := range [][]RatePoint{nil, {{Kernel: "ikj", N: 1, DType: "float64", Rate: 0}}} {
		if _, err := Throughput(rs); err != nil {
			t.Errorf("Throughput(%v): %v", rs, err)
		}
	}
}

func TestPow2Ticks(t *testing.T) {
	var got []string
	for _, tk := range (pow2Ticks{}).Ticks(45, 600) {
		got = append(got, tk.Label)
	}
	if g, w := strings.Join(got, ","), "64,128,256,512"; g != w {
		t.Errorf("got ticks %s, want %s", g, w)
	}
}

func TestCountsChart(t *testing.T) {
	svg, err := Counts([]KernelCounts{{Kernel: "naive", N: 64, BytesMoved: 8e6, FLOPs: 524288}, {Kernel: "smem", N: 64, BytesMoved: 1e5, FLOPs: 524288}})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<svg", "naive", "smem", "DRAM traffic", "FLOPs"} {
		if !strings.Contains(svg, want) {
			t.Errorf("SVG lacks %q", want)
		}
	}
	if _, err := Counts(nil); err != nil {
		t.Errorf("empty: %v", err)
	}
	// A kernel without FLOPs (a histogram) gets no empty arithmetic panel.
	svg, err = Counts([]KernelCounts{{Kernel: "histogram-global", N: 4096, BytesMoved: 8e6}})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(svg, "Arithmetic") || !strings.Contains(svg, "DRAM traffic") || !strings.Contains(svg, "no FLOPs") {
		t.Errorf("zero FLOPs: want the memory panel only, titled no FLOPs:\n%.600s", svg)
	}
	if svg, err := Counts([]KernelCounts{{Kernel: "k", N: 1}}); svg != "" || err != nil {
		t.Errorf("nothing to show: got %.80q, %v, want \"\", nil", svg, err)
	}
}

func TestUtilisationChart(t *testing.T) {
	svg, err := Utilisation([]Array{{"TPU v1 (256×256)", 256}, {"8×8", 8}}, func(N, n int) (int64, int64) {
		return int64(n) * int64(n) * int64(n), max(1, int64(n)*int64(n)*int64(n)/int64(N*N))
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<svg", "TPU v1 (256×256)", "utilisation", "8192"} {
		if !strings.Contains(svg, want) {
			t.Errorf("SVG lacks %q", want)
		}
	}
}

func TestRooflineChart(t *testing.T) {
	svg, err := Roofline([]Roof{{"this machine (measured)", 13, 24}, {"H100 SXM datasheet", 67000, 3350}},
		[]Point{{Label: "gonum n=256", Intensity: 42.7, GFLOPS: 12}, {Label: "gonum n=256", Intensity: 42.7, GFLOPS: 20, Predicted: true}})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<svg", "this machine (measured)", "H100 SXM datasheet", "hollow: your prediction", "FLOP/byte"} {
		if !strings.Contains(svg, want) {
			t.Errorf("SVG lacks %q", want)
		}
	}
}

func TestAllReduceChart(t *testing.T) {
	svg, err := Collective([]ModelPoint{{Link: "NVLink", GPUs: 1}, {Link: "NVLink", GPUs: 2, Seconds: 0.002}, {Link: "NVLink", GPUs: 8, Seconds: 0.004}}, "all-reduce", 1400)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<svg", "modelled, not measured", "NVLink", "Ring all-reduce"} {
		if !strings.Contains(svg, want) {
			t.Errorf("SVG lacks %q", want)
		}
	}
	tree, err := Collective([]ModelPoint{{Link: "NVLink", GPUs: 8, Seconds: 0.004}}, "tree all-reduce", 1)
	if err != nil || !strings.Contains(tree, "Double-binary-tree all-reduce") || strings.Contains(tree, "Ring tree") {
		t.Errorf("tree all-reduce's title: %v", err)
	}
}

func TestThroughputLogAxisAndPeak(t *testing.T) {
	rs := []RatePoint{{Kernel: "naive", N: 256, DType: "float32", Rate: 0.6}, {Kernel: "simd", N: 256, DType: "float32", Rate: 120}}
	svg, err := ThroughputPeak(rs, 300, "theoretical peak")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(svg, "log scale)") || !strings.Contains(svg, "theoretical peak") {
		t.Errorf("want a log y axis (200× spread) and the peak line")
	}
	lin, _ := Throughput(rs[:1])
	if strings.Contains(lin, "median, log scale") {
		t.Errorf("one point: want a linear y axis")
	}
}

// Points keyed by what their marker means (a roof) give one legend entry per label and one per
// key, not one per pair; the key's marker is drawn in the text's colour.
func TestRooflineKeyedMarkers(t *testing.T) {
	var pts []Point
	for i, step := range []string{"prefill", "decode 1", "decode 8"} {
		a, b := Styled(i, 0), Styled(i, 1)
		pts = append(pts, Point{Label: step, Key: "GPU", Intensity: float64(i + 1), GFLOPS: 10, Style: &a},
			Point{Label: step, Key: "CPU", Intensity: float64(i + 1), GFLOPS: 1, Style: &b})
	}
	svg, err := Roofline([]Roof{{Label: "roof", PeakGFLOPS: 100, Bandwidth: 10}}, pts)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Count(svg, `<g id="chart-series-`), 1+3+2; got != want {
		t.Errorf("%d legend entries, want %d (a roof, three steps, two keys)", got, want)
	}
	if !strings.Contains(svg, "decode 8 (CPU): 3 FLOP/byte") {
		t.Errorf("description lacks the keyed point: %.400s", svg)
	}
}
