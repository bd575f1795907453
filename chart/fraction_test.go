package chart

import (
	"strings"
	"testing"
)

func TestFraction(t *testing.T) {
	svg, err := Fraction("Kept", "magnitude", "% kept", []Line{
		{Label: "fp16", X: []float64{1e-9, 1e-6, 1e-3}, Y: []float64{0, 40, 100}},
		{Label: "bf16", X: []float64{1e-9, 0, 1e-3}, Y: []float64{100, 100, 100}},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<svg", "fp16: 0% at 1e-09 to 100% at 0.001", "bf16: 100% at 1e-09 to 100% at 0.001"} {
		if !strings.Contains(svg, want) {
			t.Errorf("the chart lacks %q", want)
		}
	}
}
