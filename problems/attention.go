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
		fill: func(rng *rand.Rand, n int, dtype string, b [][]float64) {
			for i := range 3 {
				uniform(rng, b[i], -1, 1, dtype)
			}
			largeLogits(rng, n, dtype, b[0], b[1])
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
		// Σ|q||k|/√d, at most 2d·u in the scores' spread about the row's offset), exp's error (__expf:
		// 2 + ⌊1.16·|x|⌋ ulp, under 32 for x within ±16 of the row's max; CUDA C++ Programming Guide,
		// "Intrinsic Functions") and the row sum's and the PV sum's γ_n (Higham §3.1, §4.2); the
		// output averages n values of random sign, so its entries are up to √n smaller than the
		// terms' magnitudes: 2·√n·(2n + 2d + 64)·u with a factor 2 of margin, 1.3e-3 in fp32 at
		// n = 256. The large logits add the rounding of the offset's product q₀k₀/√d to each score, an
		// error of random sign across the row's keys of about √d·L·u (L = maxLogit bounds Σ|q||k|/√d),
		// which no longer averages out when n is small: 2·√d·L·u more, 1.6e-4 in fp32.
		tol: func(n int, p Precision, _ string) float64 {
			return 2 * (math.Sqrt(float64(n))*float64(2*n+2*d+64) + math.Sqrt(float64(d))*maxLogit()) * p.U()
		},
		frobenius: true, fullRef: 512}
}

// largeLogits puts the scores at the edges of float32's exp: the first entry of every key is 16 plus
// its uniform draw and the first entry of query i has magnitude in [50, 75), positive in even rows
// and negative in odd ones, so that row i's scores carry an offset of magnitude about 100 to 150
// (the logits of the softmax problem have the same) and spread by about ±10 about it. exp of a score
// above 88.7 overflows float32 and below −103 is 0 (Milakov and Gimelshein, arXiv:1805.02867, §2):
// a kernel must subtract the row's running maximum to pass.
func largeLogits(rng *rand.Rand, n int, dtype string, q, k []float64) {
	d := HeadDim
	mag := make([]float64, n)
	uniform(rng, mag, 50, 75, dtype)
	for i := range n {
		q[i*d] = mag[i]
		if i%2 == 1 {
			q[i*d] = -mag[i]
		}
		k[i*d] = 16 + k[i*d]
		if dtype != "float64" {
			k[i*d] = float64(float32(k[i*d]))
		}
	}
}

// maxLogit bounds Σ_c |q_c||k_c|/√d for the inputs largeLogits draws: |q₀| < 75 and |k₀| < 17, the
// other entries below 1 in magnitude.
func maxLogit() float64 { return (75*17 + float64(HeadDim-1)) / math.Sqrt(HeadDim) }

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
