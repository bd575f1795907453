package chart

import (
	"math"
	"strings"
	"testing"
)

// The time axis spans at least a second to a thousand years, labels in everyday units, and widens
// for a row outside that; a row without a positive finite time is left out.
func TestDurations(t *testing.T) {
	svg, err := Durations("budget", []Duration{{"slow", 3e12, "a"}, {"fast", 90, "b"}, {"never", math.Inf(1), "b"}, {"zero", 0, "b"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<svg", "budget", "slow", "fast", "1 s", "1 day", "1 year", "1,000 years", "time (log scale)"} {
		if !strings.Contains(svg, want) {
			t.Errorf("chart lacks %q", want)
		}
	}
	for _, gone := range []string{"never", "zero"} {
		if strings.Contains(svg, gone) {
			t.Errorf("chart shows the row %q", gone)
		}
	}
	svg, err = Durations("tiny", []Duration{{"token", 2e-4, "a"}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(svg, "1 ms") || !strings.Contains(svg, "1,000 years") {
		t.Errorf("an axis from 67 µs to a thousand years lacks its 1 ms or 1,000 years label")
	}
}

// Labelled ticks never crowd each other by the axis' own measure, whatever the span.
func TestTimeTicksDoNotCrowd(t *testing.T) {
	for _, span := range [][2]float64{{1, 1000 * Year}, {1e-9, 1e9 * Year}, {0.03, 1e5 * Year}, {1e-4, 10}} {
		ticks := timeTicks{}.Ticks(span[0], span[1])
		perChar := (math.Log10(span[1]) - math.Log10(span[0])) / 50
		var labelled []float64
		var names []string
		for _, tk := range ticks {
			if tk.Label == "" {
				continue
			}
			for i, v := range labelled {
				need := (float64(len([]rune(tk.Label))+len([]rune(names[i])))/2 + 1) * perChar
				if d := math.Abs(math.Log10(tk.Value) - math.Log10(v)); d < need {
					t.Errorf("span %v: %q and %q are %.2g decades apart, need %.2g", span, tk.Label, names[i], d, need)
				}
			}
			labelled, names = append(labelled, tk.Value), append(names, tk.Label)
		}
		if len(labelled) < 3 {
			t.Errorf("span %v: only %v labelled", span, names)
		}
	}
}
