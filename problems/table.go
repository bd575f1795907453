package problems

import (
	"context"
	"math"
	"math/rand/v2"

	"github.com/gpuplayground/playground/kernels"
)

// The rows of the table. Sizes: matrices are row-major n×n; vectors have n entries.

func matmul() *Problem {
	return &Problem{Name: "matmul", Summary: "C = A·B for row-major n×n matrices (M = N = K = n)",
		Signature: "(const float* A, const float* B, float* C, int M, int N, int K)",
		Buffers: []Buffer{{Name: "A", Len: square, Matrix: true}, {Name: "B", Len: square, Matrix: true},
			{Name: "C", Len: square, Matrix: true, Output: true}},
		ParamNames: []string{"M", "N", "K"},
		Params:     func(n int) []int32 { return []int32{int32(n), int32(n), int32(n)} },
		FLOPs:      func(n int) float64 { return kernels.FLOPs(n, n, n) },
		Bytes:      func(n, elem int) float64 { return 3 * float64(n) * float64(n) * float64(elem) },
		Rate:       "GFLOP/s", MaxN: 8192, FullN: 512, SampledN: 4096,
		Instructions: func(n int) float64 { return 8 * math.Pow(float64(n), 3) },
		fill: func(rng *rand.Rand, n int, dtype string, b [][]float64) {
			uniform(rng, b[0], -1, 1, dtype)
			uniform(rng, b[1], -1, 1, dtype)
		},
		ref: func(ctx context.Context, n int, in [][]float64) ([]float64, []float64, error) {
			c := make([]float64, n*n)
			return c, nil, kernels.Gonum(ctx, c, in[0], in[1], n, n, n, kernels.Options{})
		},
		refAt: func(n int, in [][]float64, e int) float64 {
			i, j := e/n, e%n
			var s float64
			for k := range n {
				s += in[0][i*n+k] * in[1][k*n+j]
			}
			return s
		},
		tol: MatmulTolerance, frobenius: true, fullRef: 1024}
}

func transpose() *Problem {
	return &Problem{Name: "transpose", Summary: "out = inᵀ: in is row-major rows×cols, out cols×rows (rows = cols = n)",
		Signature:  "(const float* in, float* out, int rows, int cols)",
		Buffers:    []Buffer{{Name: "in", Len: square, Matrix: true}, {Name: "out", Len: square, Matrix: true, Output: true}},
		ParamNames: []string{"rows", "cols"},
		Params:     func(n int) []int32 { return []int32{int32(n), int32(n)} },
		FLOPs:      func(int) float64 { return 0 },
		Bytes:      func(n, elem int) float64 { return 2 * float64(n) * float64(n) * float64(elem) },
		Rate:       "GB/s", MaxN: 8192, FullN: 1024, SampledN: 4096,
		Instructions: func(n int) float64 { return 20 * float64(n) * float64(n) },
		fill: func(rng *rand.Rand, n int, dtype string, b [][]float64) {
			uniform(rng, b[0], -1, 1, dtype)
			specials(rng, n, b[0])
		},
		ref: func(_ context.Context, n int, in [][]float64) ([]float64, []float64, error) {
			out := make([]float64, n*n)
			for i := range n {
				for j := range n {
					out[j*n+i] = in[0][i*n+j]
				}
			}
			return out, nil, nil
		},
		// A copy is exact; a kernel moving its values through p rounds each once: relative error ≤ u
		// (the NaN and infinities among the inputs must arrive as they are).
		tol:       func(_ int, p Precision, _ string) float64 { return p.U() },
		frobenius: true}
}

func reduce() *Problem {
	return &Problem{Name: "reduce", Summary: "out[0] = Σ in[i] over n entries; out is zeroed before the launch",
		Signature:  "(const float* in, float* out, int n)",
		Buffers:    []Buffer{{Name: "in", Len: same}, {Name: "out", Len: one, Output: true, Zeroed: true}},
		ParamNames: []string{"n"},
		Params:     func(n int) []int32 { return []int32{int32(n)} },
		FLOPs:      func(n int) float64 { return float64(n) },
		Bytes:      func(n, elem int) float64 { return float64(n+1) * float64(elem) },
		Rate:       "GB/s", MaxN: MaxVector, FullN: 1 << 20, SampledN: 1 << 20,
		Instructions: func(n int) float64 { return 40 * float64(n) },
		fill:         func(rng *rand.Rand, _ int, _ string, b [][]float64) { wholes(rng, b[0]) },
		ref: func(_ context.Context, n int, in [][]float64) ([]float64, []float64, error) {
			var s, abs float64
			for _, x := range in[0] {
				s, abs = s+x, abs+math.Abs(x)
			}
			return []float64{s}, []float64{abs}, nil
		},
		tol: sumTolerance}
}

func histogram() *Problem {
	return &Problem{Name: "histogram", Summary: "bins[v] = #{i : (in[i] & 255) = v} for 256 bins over n entries; bins is zeroed before the launch",
		Signature:  "(const unsigned int* in, unsigned int* bins, int n)",
		Buffers:    []Buffer{{Name: "in", Elem: Uint32, Len: same}, {Name: "bins", Elem: Uint32, Len: func(int) int { return 256 }, Output: true, Zeroed: true}},
		ParamNames: []string{"n"},
		Params:     func(n int) []int32 { return []int32{int32(n)} },
		FLOPs:      func(int) float64 { return 0 },
		Bytes:      func(n, _ int) float64 { return 4*float64(n) + 4*256 },
		Rate:       "GB/s", MaxN: MaxVector, FullN: 1 << 20, SampledN: 1 << 20,
		Instructions: func(n int) float64 { return 40 * float64(n) },
		fill:         func(rng *rand.Rand, _ int, _ string, b [][]float64) { skewed(rng, b[0]) },
		ref: func(_ context.Context, _ int, in [][]float64) ([]float64, []float64, error) {
			bins := make([]float64, 256)
			for _, x := range in[0] {
				bins[uint32(x)&255]++
			}
			return bins, nil, nil
		},
		// Counting is exact in any order.
		tol:       func(int, Precision, string) float64 { return 0 },
		frobenius: true}
}

func softmax() *Problem {
	return &Problem{Name: "softmax", Summary: "out[i][j] = exp(in[i][j]) / Σ_k exp(in[i][k]) for each row of the row-major rows×cols in (rows = cols = n)",
		Signature:  "(const float* in, float* out, int rows, int cols)",
		Buffers:    []Buffer{{Name: "in", Len: square, Matrix: true}, {Name: "out", Len: square, Matrix: true, Output: true}},
		ParamNames: []string{"rows", "cols"},
		Params:     func(n int) []int32 { return []int32{int32(n), int32(n)} },
		// per entry: compare (max), subtract, exp, add, divide
		FLOPs: func(n int) float64 { return 5 * float64(n) * float64(n) },
		Bytes: func(n, elem int) float64 { return 2 * float64(n) * float64(n) * float64(elem) },
		Rate:  "GB/s", MaxN: 8192, FullN: 1024, SampledN: 4096,
		Instructions: func(n int) float64 { return 60 * float64(n) * float64(n) },
		fill:         logits,
		ref:          softmaxRef,
		// Each entry's relative error: the row's sum of positive terms γ_{n−1} ≈ (n−1)·u (Higham
		// §4.2), its exp (CUDA's __expf: 2 + ⌊1.16·|x|⌋ ulp for |x| ≤ 8, CUDA C++ Programming Guide,
		// "Intrinsic Functions"), the subtraction of the max and the division: (n + 32)·u in all.
		// A kernel computing in a precision below the inputs' rounds each logit and the row's max
		// (|x| < MaxLogit) once more: an absolute error of up to 2·MaxLogit·u in x − max, a relative
		// one as large in exp(x − max).
		tol: func(n int, p Precision, dtype string) float64 {
			t := float64(n+32) * p.U()
			if p.Bits < DefaultPrecision(dtype).Bits {
				t += 2 * MaxLogit * p.U()
			}
			return t
		}}
}

// MaxLogit bounds the softmax inputs' magnitudes: each row is a uniform draw from [−4, 4) plus the
// row's offset, of magnitude in [100, 300): exp of a logit overflows float32 (above 88.7) or
// underflows it (below −103), so only a softmax that subtracts the row's max passes.
const MaxLogit = 304

// logits fills the softmax problem's n×n input: row i is uniform in [−4, 4) plus an offset of
// magnitude in [100, 300) (positive in even rows, negative in odd ones), rounded to dtype; about
// one entry in 16 is −∞ (a masked logit, whose output is 0), never a row's first.
func logits(rng *rand.Rand, n int, dtype string, b [][]float64) {
	uniform(rng, b[0], -4, 4, dtype)
	for i := range n {
		off := 100 + 200*rng.Float64()
		if i%2 == 1 {
			off = -off
		}
		for j := range n {
			x := &b[0][i*n+j]
			switch {
			case j > 0 && rng.IntN(16) == 0:
				*x = math.Inf(-1)
			case dtype == "float64":
				*x += off
			default:
				*x = float64(float32(*x + off))
			}
		}
	}
}

// skewed fills the histogram's input: half the entries fall in one bin (drawn per launch; the
// upper bits random), the rest uniform 32-bit: a kernel whose counting loses updates where many
// threads hit the same bin at once, or whose counters are too narrow, fails.
func skewed(rng *rand.Rand, xs []float64) {
	hot := rng.Uint32() & 255
	for i := range xs {
		v := rng.Uint32()
		if rng.IntN(2) == 0 {
			v = v&^255 | hot
		}
		xs[i] = float64(v)
	}
}

// specials puts a NaN, +∞ and −∞ in the n×n matrix xs (n ≥ 3), off its diagonal and out of its
// first row and column: a kernel moving values must move them as they are.
func specials(rng *rand.Rand, n int, xs []float64) {
	if n < 3 {
		return
	}
	for _, v := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		i := 1 + rng.IntN(n-1)
		j := 1 + rng.IntN(n-2)
		if j >= i {
			j++
		}
		xs[i*n+j] = v
	}
}

// softmaxRef is the row-wise softmax of the row-major n×n in[0]; each entry is its own scale (the
// check's error is the largest relative error of an entry).
func softmaxRef(_ context.Context, n int, in [][]float64) ([]float64, []float64, error) {
	out := make([]float64, n*n)
	for i := range n {
		row := in[0][i*n : (i+1)*n]
		top := math.Inf(-1)
		for _, x := range row {
			top = math.Max(top, x)
		}
		var sum float64
		for j, x := range row {
			out[i*n+j] = math.Exp(x - top)
			sum += out[i*n+j]
		}
		for j := range row {
			out[i*n+j] /= sum
		}
	}
	return out, out, nil
}

func scan() *Problem {
	return &Problem{Name: "scan", Summary: "out[i] = Σ_{j ≤ i} in[j] over n entries (an inclusive prefix sum)",
		Signature:  "(const float* in, float* out, int n)",
		Buffers:    []Buffer{{Name: "in", Len: same}, {Name: "out", Len: same, Output: true}},
		ParamNames: []string{"n"},
		Params:     func(n int) []int32 { return []int32{int32(n)} },
		FLOPs:      func(n int) float64 { return float64(n) },
		Bytes:      func(n, elem int) float64 { return 2 * float64(n) * float64(elem) },
		Rate:       "GB/s", MaxN: MaxVector, FullN: 1 << 20, SampledN: 1 << 20,
		Instructions: func(n int) float64 { return 60 * float64(n) },
		fill:         func(rng *rand.Rand, _ int, _ string, b [][]float64) { wholes(rng, b[0]) },
		ref: func(_ context.Context, n int, in [][]float64) ([]float64, []float64, error) {
			out, scale := make([]float64, n), make([]float64, n)
			var s, abs float64
			for i, x := range in[0] {
				s, abs = s+x, abs+math.Abs(x)
				out[i], scale[i] = s, abs
			}
			return out, scale, nil
		},
		tol: sumTolerance}
}
