package budget

import (
	"fmt"
	"github.com/gpuplayground/playground/cells"
	"math"
	"strings"

	"github.com/dustin/go-humanize"
	"github.com/gpuplayground/playground/chart"
)

// Readable writes a duration in seconds in the largest everyday unit it fills: "850 ms", "3.2 hours",
// "355 years", "11.1 millennia"; from a million years on, years in words ("7.08 million years"), not
// thousands of millennia in exponent notation.
func Readable(sec float64) string {
	if years := sec / chart.Year; years >= 1e6 {
		return Times(years) + " years"
	}
	units := []struct {
		name string
		s    float64
	}{{"millennia", 1000 * chart.Year}, {"years", chart.Year}, {"days", 86400}, {"hours", 3600}, {"minutes", 60}, {"s", 1}, {"ms", 1e-3}, {"µs", 1e-6}}
	for _, u := range units {
		if sec >= u.s {
			return cells.Number(sec/u.s, 3) + " " + u.name
		}
	}
	return cells.Number(sec*1e9, 3) + " ns"
}

// Dominates is the sentence under the chart: what the time is made of, and the spread from the
// slowest row to the fastest. A run sends it as its last note, which the kind's browser module
// (render.js) moves to under the chart.
func Dominates(ests []Estimate) string {
	if len(ests) == 0 {
		return ""
	}
	count := map[string][]string{}
	var order []string
	slow, fast := ests[0], ests[0]
	for _, e := range ests {
		d := e.Dominant()
		if _, ok := count[d]; !ok {
			order = append(order, d)
		}
		count[d] = append(count[d], label(e))
		if e.Seconds() > slow.Seconds() {
			slow = e
		}
		if e.Seconds() < fast.Seconds() {
			fast = e
		}
	}
	var parts []string
	for _, d := range order {
		who := strings.Join(count[d], ", ")
		switch {
		case len(count[d]) == len(ests):
			who = "every row"
		case len(count[d]) > 3:
			who = fmt.Sprintf("%d of the %d rows", len(count[d]), len(ests))
		}
		parts = append(parts, fmt.Sprintf("%s dominates on %s", d, who))
	}
	text := strings.ToUpper(parts[0][:1]) + parts[0][1:]
	if len(parts) > 1 {
		text += "; " + strings.Join(parts[1:], "; ")
	}
	text += fmt.Sprintf(". Slowest: %s, %s; fastest: %s, %s, %s times sooner.", label(slow), Readable(slow.Seconds()), label(fast), Readable(fast.Seconds()), Times(slow.Seconds()/fast.Seconds()))
	return text
}

func label(e Estimate) string {
	if e.Chips > 1 {
		return humanize.Comma(int64(e.Chips)) + " × " + e.Rate.Name
	}
	return e.Rate.Name
}

// grouped4 writes v with four significant figures, whole numbers from 1,000 up with thousands
// separators: "53.3", "2,871", "12,345".
func grouped4(v float64) string {
	if v >= 1000 {
		return humanize.Comma(int64(math.Round(v)))
	}
	return fmt.Sprintf("%.4g", v)
}

// Bytes writes a byte count in decimal units: "102 MB", "350 GB".
func Bytes(b float64) string {
	for _, u := range []struct {
		name string
		v    float64
	}{{"PB", 1e15}, {"TB", 1e12}, {"GB", 1e9}, {"MB", 1e6}, {"kB", 1e3}} {
		if b >= u.v {
			return cells.Number(b/u.v, 3) + " " + u.name
		}
	}
	if b == 1 {
		return "1 byte"
	}
	return cells.Number(b, 3) + " bytes"
}

// Times writes a ratio for a sentence: "95", "3,780", "1.75 million" (cells.Number).
func Times(r float64) string { return cells.Number(r, 3) }
