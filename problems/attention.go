package problems

import (
	"context"
	"math"
	"math/rand/v2"
)

// HeadDim is the attention problem's head width d: 64, the head size of GPT-2 and of the
// FlashAttention paper's benchmarks (T. Dao et al., "FlashAttention", NeurIPS 2022, §4).
const HeadDim = 64

// attention is one head of scaled dot-product attention without a mask (A. Vaswani et al., "Attention
// Is All You Need", NeurIPS 2017, §3.2.1): out = softmax(Q·Kᵀ/√d)·V. S is scratch the kernel may use
// for the n×n scores (an unfused kernel writes them there and reads them back; a fused one leaves it
// alone): it starts at zero and is not checked.
func attention() *Problem {
	d := HeadDim
	rows := func(n int) int { return n * d }
	return &Problem{Name: "attention", Summary: "out = softmax(Q·Kᵀ/√d)·V for one head: Q, K, V and out row-major n×d (d = 64), no mask; S is n×n scratch (zero at the start, not checked)",
		Signature: "(const float* Q, const float* K, const float* V, float* S, float* out, int n, int d)",
		Buffers: []Buffer{{Name: "Q", Len: rows}, {Name: "K", Len: rows}, {Name: "V", Len: rows},
			{Name: "S", Len: square}, {Name: "out", Len: rows, Output: true}},
		ParamNames: []string{"n", "d"},
		Params:     func(n int) []int32 { return []int32{int32(n), int32(d)} },
		// QKᵀ and PV, 2·n²·d each; the softmax's five per score (as softmax's)
		FLOPs: func(n int) float64 { return 4*float64(n)*float64(n)*float64(d) + 5*float64(n)*float64(n) },
		// the fused minimum: Q, K, V read once, out written once
		Bytes: func(n, elem int) float64 { return 4 * float64(n) * float64(d) * float64(elem) },
		Rate:  "GFLOP/s", MaxN: 4096, FullN: 256, SampledN: 2048,
		Instructions: func(n int) float64 { return 8 * float64(n) * float64(n) * float64(d) },
		fill: func(rng *rand.Rand, _ int, dtype string, b [][]float64) {
			for i := range 3 {
				uniform(rng, b[i], -1, 1, dtype)
			}
		},
		ref: func(ctx context.Context, n int, in [][]float64) ([]float64, []float64, error) {
			out := make([]float64, n*d)
			for i := range n {
				if i%64 == 0 && ctx.Err() != nil {
					return nil, nil, ctx.Err()
				}
				attentionRow(n, in, i, out[i*d:(i+1)*d])
			}
			return out, nil, nil
		},
		refAt: func(n int, in [][]float64, e int) float64 {
			row := make([]float64, d)
			attentionRow(n, in, e/d, row)
			return row[e%d]
		},
		// Relative Frobenius error. Each output term p·v carries the score's dot product (γ_d of
		// Σ|q||k|/√d, at most 2d·u here), exp's error (__expf: 2 + ⌊1.16·|x|⌋ ulp, under 32 for
		// scores within ±16; CUDA C++ Programming Guide, "Intrinsic Functions") and the row sum's and
		// the PV sum's γ_n (Higham §3.1, §4.2); the output averages n values of random sign, so its
		// entries are up to √n smaller than the terms' magnitudes: 2·√n·(2n + 2d + 64)·u with a
		// factor 2 of margin, 1.3e-3 in fp32 at n = 256.
		tol: func(n int, p Precision, _ string) float64 {
			return 2 * math.Sqrt(float64(n)) * float64(2*n+2*d+64) * p.U()
		},
		frobenius: true, fullRef: 512}
}

// attentionRow is row i of softmax(Q·Kᵀ/√d)·V in float64, into out (d entries).
func attentionRow(n int, in [][]float64, i int, out []float64) {
	d := HeadDim
	q, k, v := in[0][i*d:(i+1)*d], in[1], in[2]
	scores := make([]float64, n)
	top := math.Inf(-1)
	for j := range n {
		var s float64
		for c := range d {
			s += q[c] * k[j*d+c]
		}
		scores[j] = s / math.Sqrt(float64(d))
		top = math.Max(top, scores[j])
	}
	var sum float64
	for j := range scores {
		scores[j] = math.Exp(scores[j] - top)
		sum += scores[j]
	}
	clear(out)
	for j, p := range scores {
		for c := range d {
			out[c] += p / sum * v[j*d+c]
		}
	}
}
