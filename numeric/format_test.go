package numeric

import (
	"math"
	"math/rand/v2"
	"testing"
)

// The published extremes of each format: IEEE 754-2008 for binary32 and binary16, the FP8 paper's
// Table 1 for E4M3 and E5M2, bfloat16's FP32 range.
func TestFormatExtremes(t *testing.T) {
	for _, tt := range []struct {
		f                    Format
		max, minNorm, minSub float64
	}{
		{FP32, math.MaxFloat32, 0x1p-126, 0x1p-149},
		{FP16, 65504, 0x1p-14, 0x1p-24},
		{BF16, 0x1.fep127, 0x1p-126, 0x1p-133},
		{FP8E4M3, 448, 0x1p-6, 0x1p-9},
		{FP8E5M2, 57344, 0x1p-14, 0x1p-16},
	} {
		if got := tt.f.MaxFinite(); got != tt.max {
			t.Errorf("%s: max %g, want %g", tt.f.Name, got, tt.max)
		}
		if got := tt.f.MinNormal(); got != tt.minNorm {
			t.Errorf("%s: smallest normal %g, want %g", tt.f.Name, got, tt.minNorm)
		}
		if got := tt.f.MinSubnormal(); got != tt.minSub {
			t.Errorf("%s: smallest subnormal %g, want %g", tt.f.Name, got, tt.minSub)
		}
		if tt.f.Round(tt.max) != tt.max || tt.f.Round(tt.minSub) != tt.minSub {
			t.Errorf("%s: its extremes do not round to themselves", tt.f.Name)
		}
	}
}

// Rounding by hand: ties to even, the edges of overflow and underflow.
func TestRoundByHand(t *testing.T) {
	inf, nan := math.Inf(1), math.NaN()
	for _, tt := range []struct {
		f       Format
		x, want float64
	}{
		{FP16, 1 + 0x1p-11, 1},                     // a tie: to the even neighbour, 1
		{FP16, 1 + 3*0x1p-11, 1 + 0x1p-9},          // a tie: to the even neighbour, 1 + 2^-9
		{FP16, 1 + 0x1p-11 + 0x1p-30, 1 + 0x1p-10}, // past the tie
		{FP16, 65519, 65504},                       // below the midpoint to 65,536
		{FP16, 65520, inf},                         // the midpoint rounds to even: 2^16, past the max
		{FP16, -65520, -inf},
		{FP16, 0x1p-25, 0},              // half the smallest subnormal: a tie, to even (0)
		{FP16, 0x1.000001p-25, 0x1p-24}, // just over half: the smallest subnormal
		{FP16, 3e-8, 0x1p-24},           // 2^-24 ≈ 5.96e-8
		{FP16, 1e-8, 0},                 // underflow
		{BF16, 1e-30, 0x1.44p-100},      // BF16 keeps it, with 8 bits
		{FP8E4M3, 464, 448},             // below the midpoint to 480 (the NaN pattern)
		{FP8E4M3, 480, nan},             // no infinity
		{FP8E4M3, inf, nan},
		{FP8E5M2, 61440, inf}, // the midpoint between 57,344 and 65,536: to even, 65,536: overflow
		{FP8E5M2, 61439, 57344},
		{FP8E5M2, 3 * 0x1p-17, 0x1p-15}, // a tie between 2^-16 and 2·2^-16: to even
		{FP32, 1 + 0x1p-24, 1},
	} {
		got := tt.f.Round(tt.x)
		if got != tt.want && !(math.IsNaN(got) && math.IsNaN(tt.want)) {
			t.Errorf("%s.Round(%g) = %g, want %g", tt.f.Name, tt.x, got, tt.want)
		}
	}
	if r := FP16.Round(math.Copysign(0, -1)); !math.Signbit(r) {
		t.Error("-0 lost its sign")
	}
}

// FP32 agrees with Go's float32 conversion, and BF16 with rounding a float32's bit pattern to its
// top 16 bits (nearest, ties to even), on random numbers of every magnitude.
func TestRoundAgreesWithBits(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200000 {
		x := math.Ldexp(rng.Float64()+0.5, rng.IntN(300)-150)
		if rng.IntN(2) == 0 {
			x = -x
		}
		if got, want := FP32.Round(x), float64(float32(x)); got != want {
			t.Fatalf("FP32.Round(%g) = %g, float32 gives %g", x, got, want)
		}
		x32 := float32(x)
		b := math.Float32bits(x32)
		if b&0x7f800000 == 0x7f800000 {
			continue // Inf: the bit trick below does not apply
		}
		low := b & 0xffff
		b &^= 0xffff
		if low > 0x8000 || low == 0x8000 && b&0x10000 != 0 {
			b += 0x10000
		}
		want := float64(math.Float32frombits(b))
		if got := BF16.Round(float64(x32)); got != want {
			t.Fatalf("BF16.Round(%g) = %g, bits give %g", x32, got, want)
		}
	}
}

// Every result is a value of the format (it rounds to itself) and no value of the format is nearer.
func TestRoundIsNearest(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, f := range Formats {
		for range 20000 {
			x := math.Ldexp(rng.Float64()+0.5, rng.IntN(2*f.Bias+f.Mant+4)-f.Bias-f.Mant-2)
			r := f.Round(x)
			if math.IsInf(r, 0) || math.IsNaN(r) {
				if math.Abs(x) < f.MaxFinite() {
					t.Fatalf("%s: %g overflowed", f.Name, x)
				}
				continue
			}
			if f.Round(r) != r {
				t.Fatalf("%s: Round(%g) = %g is not a value of the format", f.Name, x, r)
			}
			_, e := math.Frexp(math.Max(math.Abs(r), math.Abs(x)))
			q := math.Ldexp(1, max(e-1, 1-f.Bias)-f.Mant)
			if math.Abs(x-r) > q/2 {
				t.Fatalf("%s: Round(%g) = %g, more than half a quantum %g away", f.Name, x, r, q)
			}
		}
	}
}

func TestLookupFormat(t *testing.T) {
	if f, err := LookupFormat("FP8-E4M3"); err != nil || f != FP8E4M3 {
		t.Errorf("got %+v, %v", f, err)
	}
	if _, err := LookupFormat("fp4"); err == nil {
		t.Error("fp4 found")
	}
}
