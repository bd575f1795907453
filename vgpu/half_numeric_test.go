package vgpu

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gpuplayground/playground/numeric"
)

// The virtual GPU's f16 and bf16 rounding (round to nearest even, exact inputs) and package
// numeric's Format.Round, written apart, agree on numbers of every magnitude, subnormals and
// overflow included.
func TestHalfRoundingAgreesWithNumeric(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, tt := range []struct {
		f   ffmt
		num numeric.Format
	}{{fmtF16, numeric.FP16}, {fmtBF16, numeric.BF16}} {
		for range 100000 {
			x := math.Ldexp(rng.Float64()+0.5, rng.IntN(2*tt.f.bias+int(tt.f.mant)+6)-tt.f.bias-int(tt.f.mant)-3)
			if rng.IntN(2) == 0 {
				x = -x
			}
			got, want := decodeFmt(roundFmt(x, rmNearest, 0, tt.f), tt.f), tt.num.Round(x)
			if got != want {
				t.Fatalf("%s: %g rounds to %g in the virtual GPU, %g in numeric", tt.num.Name, x, got, want)
			}
		}
	}
}
