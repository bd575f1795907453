package numeric

import (
	"fmt"
	"math"
	"strings"
)

// Format is a binary floating-point format of at most 32 bits, for emulating on the CPU what storing
// a number in it does: a sign, Exp exponent bits with bias Bias, and Mant stored mantissa bits
// (precision Mant+1 with the implicit leading one), with subnormals. IEEE-like formats (FP32, FP16,
// BF16, FP8 E5M2) keep the top exponent for infinities and NaNs; a Finite format (FP8 E4M3) has no
// infinities and uses the top exponent for numbers, all ones in exponent and mantissa being its only
// NaN (P. Micikevicius et al., "FP8 Formats for Deep Learning", arXiv:2209.05433, 2022, §3 and
// Table 1).
//
// Round emulates round-to-nearest-even only (the default of IEEE 754-2008 and of PTX's cvt.rn); the
// virtual GPU (package vgpu) rounds its f16 and bf16 instructions in every PTX rounding mode with its
// own code, and a test there checks the two agree.
type Format struct {
	Name      string
	Exp, Mant int
	Bias      int
	Finite    bool
}

// The formats of mixed-precision training, from their definitions: IEEE 754-2008 binary32 and
// binary16; bfloat16 (FP32's sign and exponent with 7 mantissa bits: S. Wang and P. Kanwar,
// "BFloat16: The secret to high performance on Cloud TPUs", Google Cloud blog, 2019); FP8 E4M3 and
// E5M2 (Micikevicius et al. 2022, Table 1).
var (
	FP32    = Format{Name: "fp32", Exp: 8, Mant: 23, Bias: 127}
	FP16    = Format{Name: "fp16", Exp: 5, Mant: 10, Bias: 15}
	BF16    = Format{Name: "bf16", Exp: 8, Mant: 7, Bias: 127}
	FP8E4M3 = Format{Name: "fp8-e4m3", Exp: 4, Mant: 3, Bias: 7, Finite: true}
	FP8E5M2 = Format{Name: "fp8-e5m2", Exp: 5, Mant: 2, Bias: 15}
)

// Formats lists the formats above, widest first.
var Formats = []Format{FP32, BF16, FP16, FP8E5M2, FP8E4M3}

// LookupFormat finds a format by name, ignoring case.
func LookupFormat(name string) (Format, error) {
	var names []string
	for _, f := range Formats {
		if strings.EqualFold(f.Name, name) {
			return f, nil
		}
		names = append(names, f.Name)
	}
	return Format{}, fmt.Errorf("unknown format %q; known: %s", name, strings.Join(names, ", "))
}

// Bits is the format's width in bits.
func (f Format) Bits() int { return 1 + f.Exp + f.Mant }

// emax is the largest exponent of a finite number.
func (f Format) emax() int {
	if f.Finite {
		return 1<<f.Exp - 1 - f.Bias
	}
	return 1<<f.Exp - 2 - f.Bias
}

// MaxFinite is the largest finite value: 65,504 for FP16, 448 for E4M3 (whose all-ones mantissa at
// the top exponent is NaN), 57,344 for E5M2.
func (f Format) MaxFinite() float64 {
	top := 2 - math.Ldexp(1, -f.Mant) // 1.11…1
	if f.Finite {
		top = 2 - math.Ldexp(2, -f.Mant) // 1.11…0: all ones is NaN
	}
	return math.Ldexp(top, f.emax())
}

// MinNormal is the smallest positive normal value, 2^(1−Bias); MinSubnormal the smallest positive
// value, 2^(1−Bias−Mant).
func (f Format) MinNormal() float64    { return math.Ldexp(1, 1-f.Bias) }
func (f Format) MinSubnormal() float64 { return math.Ldexp(1, 1-f.Bias-f.Mant) }

// Epsilon is the gap from 1 to the next value, 2^−Mant: an addition to 1 smaller than half of it is
// lost.
func (f Format) Epsilon() float64 { return math.Ldexp(1, -f.Mant) }

// Round is x stored in f, rounded to nearest (ties to even), as a float64: zero keeps its sign,
// a value past MaxFinite after rounding becomes ±Inf (or NaN in a Finite format, which has no
// infinity: the FP8 paper's conversion without saturation), and NaN stays NaN.
func (f Format) Round(x float64) float64 {
	if x == 0 || math.IsNaN(x) || math.IsInf(x, 0) {
		if math.IsInf(x, 0) && f.Finite {
			return math.NaN()
		}
		return x
	}
	ax := math.Abs(x)
	_, e := math.Frexp(ax) // ax = m·2^e, 0.5 ≤ m < 1: its exponent is e−1
	E := max(e-1, 1-f.Bias)
	quantum := math.Ldexp(1, E-f.Mant)
	r := math.RoundToEven(ax/quantum) * quantum // both steps exact in float64 for Mant ≤ 51
	if r > f.MaxFinite() {
		if f.Finite {
			return math.NaN()
		}
		r = math.Inf(1)
	}
	return math.Copysign(r, x)
}

// Subnormal says whether x, a value of f, is a nonzero number below MinNormal: stored with fewer
// significant bits than the format's precision.
func (f Format) Subnormal(x float64) bool {
	return x != 0 && math.Abs(x) < f.MinNormal()
}
