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

// A faceted chart draws each panel's lines with one legend: a label has one entry and one style
// in every panel, and each panel has its title.
func TestFractionsFacetsShareLegend(t *testing.T) {
	line := func(label string) Line { return Line{Label: label, X: []float64{1e-6, 1}, Y: []float64{10, 90}} }
	svg, err := Fractions("Kept", "magnitude", "% kept", []Panel{
		{Title: "loss scale ×1", Lines: []Line{line("fp32"), line("fp16")}},
		{Title: "loss scale ×1024", Lines: []Line{line("fp32"), line("fp16")}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(svg, `<g id="chart-series-`); got != 2 {
		t.Errorf("%d legend entries, want 2 (one per label)", got)
	}
	for _, want := range []string{">Kept — loss scale ×1<", ">loss scale ×1024<", "loss scale ×1024, fp16: 10% at 1e-06"} {
		if !strings.Contains(svg, want) {
			t.Errorf("the chart lacks %q", want)
		}
	}
	// fp16 is the second label in both panels: its lines are both in the second colour.
	if got := strings.Count(svg, "stroke:var("+Palette[1].Var+","); got != 3 {
		t.Errorf("%d strokes in %s, want 3 (two panels and the legend)", got, Palette[1].Var)
	}
}
