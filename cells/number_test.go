package cells

import (
	"math"
	"testing"
)

// Numbers in a sentence are written for people: words for millions to trillions, a power of ten
// beyond, never 4.67e+10.
func TestNumber(t *testing.T) {
	for _, tt := range []struct {
		x      float64
		digits int
		want   string
	}{
		{0, 3, "0"}, {7, 3, "7"}, {93750, 3, "93,750"}, {53.27, 3, "53.3"}, {0.125, 3, "0.125"},
		{1562.5, 3, "1,560"}, {1562.5, 6, "1,562.5"}, {3784.2, 3, "3,780"}, {3784.25, 5, "3,784.2"}, {999999.5, 3, "1 million"}, {1048576, 3, "1.05 million"},
		{46.7e9, 3, "46.7 billion"}, {4.67e10, 4, "46.7 billion"}, {8.0301e9, 4, "8.03 billion"}, {1.555e10, 4, "15.55 billion"},
		{175e9, 3, "175 billion"}, {999.7e9, 3, "1 trillion"}, {3.15e12, 3, "3.15 trillion"},
		{3.14e23, 3, "3.14·10²³"}, {3.8e25, 3, "3.8·10²⁵"}, {1e15, 3, "1·10¹⁵"}, {1.2e-7, 3, "1.2·10⁻⁷"},
		{-2.5e9, 3, "-2.5 billion"}, {0.0015, 3, "0.0015"}, {12.5, 0, "10"}, {175e9, 2, "180 billion"}, {math.Inf(1), 3, "+Inf"},
	} {
		if got := Number(tt.x, tt.digits); got != tt.want {
			t.Errorf("Number(%g, %d) = %q, want %q", tt.x, tt.digits, got, tt.want)
		}
	}
}
