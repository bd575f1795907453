package gpu

import (
	"context"
	"math"
	"math/rand/v2"

	"github.com/gpuplayground/playground/kernels"
	"github.com/gpuplayground/playground/numeric"
	"github.com/x448/float16"
)

// BF16 rounds x to bfloat16 (round to nearest, ties to even) and returns its 16 bits: the top half
// of the float32, which is why the format keeps FP32's exponent range.
func BF16(x float32) uint16 {
	u := math.Float32bits(x)
	if u&0x7f800000 == 0x7f800000 && u&0x007fffff != 0 {
		return uint16(u>>16) | 0x0040 // NaN stays a (quiet) NaN
	}
	u += 0x7fff + (u>>16)&1
	return uint16(u >> 16)
}

// FromBF16 widens bfloat16 bits to float32 exactly.
func FromBF16(b uint16) float32 { return math.Float32frombits(uint32(b) << 16) }

// F16 rounds x to IEEE binary16 (round to nearest, ties to even) and returns its bits.
func F16(x float32) uint16 { return uint16(float16.Fromfloat32(x)) }

// Pad copies the row-major n×n matrix a into the top-left of a p×p zero matrix (p ≥ n: the size a
// kernel is launched on, n rounded up for WMMA's 16×16 tiles; see cuda.Kernel.Shape), converting each
// element to 16 bits with conv.
func Pad(a []float32, n, p int, conv func(float32) uint16) []uint16 {
	out := make([]uint16, p*p)
	for i := range n {
		for j := range n {
			out[i*p+j] = conv(a[i*n+j])
		}
	}
	return out
}

// to16 is the conversion of float32 inputs to a 16-bit precision ("bf16", "f16"); nil for the others.
func to16(precision string) func(float32) uint16 {
	switch precision {
	case "bf16":
		return BF16
	case "f16":
		return F16
	}
	return nil
}

// fullCheckMax is the largest n whose result is checked against a full float64 product; above it,
// sampledEntries random entries of C are recomputed in float64 (a full product would cost more than
// the GPU run it checks).
const (
	fullCheckMax   = 1024
	sampledEntries = 2048
)

// RelError returns the relative Frobenius error of the row-major n×n result c against a float64
// product of a and b: over every entry for n ≤ 1024, over sampledEntries random entries above.
// NaN or Inf anywhere checked gives +Inf.
func RelError[T kernels.Float](ctx context.Context, c, a, b []T, n int, rng *rand.Rand) (float64, error) {
	if n <= fullCheckMax {
		a64, b64 := widen(a), widen(b)
		ref := make([]float64, n*n)
		if err := kernels.Gonum(ctx, ref, a64, b64, n, n, n, kernels.Options{}); err != nil {
			return 0, err
		}
		return numeric.RelFrobenius(c[:n*n], ref), nil
	}
	got, want := make([]T, sampledEntries), make([]float64, sampledEntries)
	for s := range sampledEntries {
		i, j := rng.IntN(n), rng.IntN(n)
		var sum float64
		for p := range n {
			sum += float64(a[i*n+p]) * float64(b[p*n+j])
		}
		got[s], want[s] = c[i*n+j], sum
	}
	return numeric.RelFrobenius(got, want), nil
}

func widen[T kernels.Float](xs []T) []float64 {
	out := make([]float64, len(xs))
	for i, x := range xs {
		out[i] = float64(x)
	}
	return out
}

// Tolerance is the largest relative error accepted for a GPU kernel's result, by the precision its
// inputs are rounded to: FP32 and FP64 as on the CPU; TF32 (10 mantissa bits, unit roundoff 2^-11)
// 2e-3; FP16 (10 bits) 2e-3; BF16 (7 bits, 2^-8) 2e-2. With inputs in [-1, 1) and FP32
// accumulation, the rounding of the inputs dominates and does not grow with n.
func Tolerance(precision string) float64 {
	switch precision {
	case "tf32", "f16":
		return 2e-3
	case "bf16":
		return 2e-2
	}
	return numeric.Tolerance(precision)
}
