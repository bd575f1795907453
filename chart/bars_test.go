package chart

import (
	"strings"
	"testing"
)

// Bars: each bar under its label and value, the i-th in the i-th series colour, the description
// naming every bar, and bars without a positive value left out.
func TestBars(t *testing.T) {
	svg, err := Bars("transpose on H100", "achieved bandwidth (GB/s)", []Bar{{"custom (block 32×1)", 410}, {"custom, block 32×8", 1900}, {"none", 0}})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{">custom (block 32×1): 410<", ">custom, block 32×8: 1,900<", "fill:var(--c0,", "fill:var(--c1,", "custom, block 32×8: 1,900."} {
		if !strings.Contains(svg, want) {
			t.Errorf("the chart lacks %q", want)
		}
	}
	if strings.Contains(svg, ">none") {
		t.Errorf("a bar of 0 is drawn")
	}
}
