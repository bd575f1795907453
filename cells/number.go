package cells

import (
	"math"
	"strconv"
	"strings"

	"github.com/dustin/go-humanize"
)

// Number writes x for a sentence a learner reads, to digits significant digits (at least 1): a
// whole number below a million exactly, with thousands separators ("93,750"); other numbers below
// a thousand as they are ("53.3", "0.125"), up to a million grouped ("3,780"), then in words up to
// the trillions ("46.7 billion", "3.14 trillion"), and beyond those or below 0.001 as a power of ten
// the way the lessons write them ("3.14·10²³", "1.2·10⁻⁷"): never Go's exponent notation (4.67e+10).
// NaN and infinities are written as strconv writes them.
func Number(x float64, digits int) string {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return strconv.FormatFloat(x, 'g', -1, 64)
	}
	if x < 0 {
		return "-" + Number(-x, digits)
	}
	if x == math.Trunc(x) && x < 1e6 {
		return humanize.Comma(int64(x))
	}
	digits = max(digits, 1)
	// Rounded first, so that the unit is the rounded number's: 999,999 is "1 million", not "1000 thousand".
	r, _ := strconv.ParseFloat(strconv.FormatFloat(x, 'e', digits-1, 64), 64)
	switch {
	case r == 0:
		return "0"
	case r < 1e-3 || r >= 1e15:
		return power(r, digits)
	case r < 1e3:
		return strconv.FormatFloat(r, 'f', -1, 64)
	case r < 1e6 && r == math.Trunc(r):
		return humanize.Comma(int64(r))
	case r < 1e6: // 1,562.5: the digits asked for reach past the point
		return humanize.Commaf(r)
	}
	for _, u := range []struct {
		name string
		v    float64
	}{{"trillion", 1e12}, {"billion", 1e9}, {"million", 1e6}} {
		if r >= u.v {
			return strconv.FormatFloat(r/u.v, 'g', max(digits, 3), 64) + " " + u.name // 3: "180 billion" at 2 digits
		}
	}
	return strconv.FormatFloat(r, 'f', -1, 64) // not reached
}

// power writes r as its digits significant digits times a power of ten: "3.14·10²³".
func power(r float64, digits int) string {
	mant, exp, _ := strings.Cut(strconv.FormatFloat(r, 'e', digits-1, 64), "e")
	if strings.Contains(mant, ".") {
		mant = strings.TrimRight(strings.TrimRight(mant, "0"), ".")
	}
	n, _ := strconv.Atoi(exp)
	sup := strings.NewReplacer("-", "⁻", "0", "⁰", "1", "¹", "2", "²", "3", "³", "4", "⁴", "5", "⁵", "6", "⁶", "7", "⁷", "8", "⁸", "9", "⁹").Replace(strconv.Itoa(n))
	return mant + "·10" + sup
}
