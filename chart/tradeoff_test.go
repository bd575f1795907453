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
