package chart

import (
	"strings"
	"testing"
)

// A tradeoff chart names each line's ends in its description, leaves out points a log axis cannot
// show, and keeps its text inside and apart.
func TestTradeoff(t *testing.T) {
	svg, err := Tradeoff("Latency against throughput (modelled)", "output tokens/s", "normalised latency (s/token)", []Line{
		{Label: "continuous, paged", X: []float64{100, 400, 900}, Y: []float64{0.02, 0.03, 2}},
		{Label: "static, max-length reservation", X: []float64{100, 0, 300, 350}, Y: []float64{0.05, 0, 0.5, 30}},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<svg", "continuous, paged: 0.02 at 100 to 2 at 900", "static, max-length reservation: 0.05 at 100 to 30 at 350"} {
		if !strings.Contains(svg, want) {
			t.Errorf("the chart lacks %q", want)
		}
	}
	for _, p := range layoutProblems(svg) {
		t.Error(p)
	}
}

// Tick labels of four digits and more carry thousands separators, as the tables beside the charts
// write their numbers: the serving lesson's throughput axis reads 3,000 and 6,000, not 3000.
func TestTickLabelsSeparateThousands(t *testing.T) {
	svg, err := Tradeoff("Latency against throughput (modelled)", "output tokens/s", "latency (s/token)", []Line{
		{Label: "continuous, paged", X: []float64{250, 3700, 6300}, Y: []float64{0.005, 0.0065, 0.1}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(svg, ">6,000<") {
		t.Errorf("the throughput axis has no label 6,000")
	}
	if strings.Contains(svg, ">6000<") || strings.Contains(svg, ">3000<") {
		t.Errorf("a tick label of four digits has no separator")
	}
}

// grouped separates the thousands of plain numbers only.
func TestGrouped(t *testing.T) {
	for in, want := range map[string]string{"12000": "12,000", "1024.5": "1,024.5", "-2048": "-2,048", "512": "512", "0.001": "0.001", "10⁵": "10⁵", "1 s": "1 s", "": ""} {
		if got := grouped(in); got != want {
			t.Errorf("grouped(%q) = %q, want %q", in, got, want)
		}
	}
}
