package cells

import (
	"math"
	"testing"
)

func TestErrorValue(t *testing.T) {
	for _, tt := range []struct {
		x    float64
		want any
	}{
		{math.NaN(), "NaN"}, {math.Inf(1), "Inf"}, {math.Inf(-1), "Inf"},
		{math.MaxFloat64, "NaN or Inf"}, {1.5e-7, 1.5e-7},
	} {
		if got := ErrorValue(tt.x); got != tt.want {
			t.Errorf("ErrorValue(%g) = %v, want %v", tt.x, got, tt.want)
		}
	}
}
