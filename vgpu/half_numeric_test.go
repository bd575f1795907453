package vgpu

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gpuplayground/playground/numeric"
	"github.com/x448/float16"
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

// decodeFmt gives every f16 and bf16 bit pattern the value the float16 package and bf16's
// definition (the high half of a float32) give it, and f32 and f64 patterns of every class
// (subnormals, the largest and smallest exponents, infinities, NaNs) their own value.
func TestDecodeFmtEveryPattern(t *testing.T) {
	check := func(name string, got, want float64, bits uint64) {
		t.Helper()
		if math.IsNaN(want) {
			if !math.IsNaN(got) || math.Float64bits(got) != math.Float64bits(math.NaN()) {
				t.Fatalf("%s %#x: got %v (%#x), want the NaN", name, bits, got, math.Float64bits(got))
			}
			return
		}
		if math.Float64bits(got) != math.Float64bits(want) {
			t.Fatalf("%s %#x: got %v, want %v", name, bits, got, want)
		}
	}
	for b := range uint64(1 << 16) {
		check("f16", decodeFmt(b, fmtF16), float64(float16.Frombits(uint16(b)).Float32()), b)
		check("bf16", decodeFmt(b, fmtBF16), float64(math.Float32frombits(uint32(b)<<16)), b)
	}
	rng := rand.New(rand.NewPCG(7, 8))
	f64 := ffmt{52, 11, 1023}
	for i := range 200000 {
		b := rng.Uint64()
		switch i % 4 { // every exponent's edges: 0 (subnormals), the largest, the all-ones
		case 1:
			b &^= 0x7ff0000000000000
		case 2:
			b |= 0x7ff0000000000000
		case 3:
			b = b&^0x7ff0000000000000 | 0x7fe0000000000000
		}
		check("f64", decodeFmt(b, f64), math.Float64frombits(b), b)
		b32 := b >> 32
		check("f32", decodeFmt(b32, fmtF32), float64(math.Float32frombits(uint32(b32))), b32)
	}
}

// halfF32 widens every f16 and bf16 bit pattern to the float32 that decodeFmt's value converts to,
// bit for bit (NaNs included).
func TestHalfF32IsDecodeFmt(t *testing.T) {
	for b := range uint64(1 << 16) {
		for _, bf16 := range []bool{false, true} {
			f := fmtF16
			if bf16 {
				f = fmtBF16
			}
			got, want := halfF32(b, bf16), float32(decodeFmt(b, f))
			if math.Float32bits(got) != math.Float32bits(want) {
				t.Fatalf("%#x (bf16 %v): got %v (%#x), want %v (%#x)", b, bf16, got, math.Float32bits(got), want, math.Float32bits(want))
			}
		}
	}
}
