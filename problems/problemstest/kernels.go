// Package problemstest holds learner-style CUDA kernels for every problem of package problems, right
// and wrong ones, for the tests of the virtual GPU (package vgpurun) and of the GPU worker.
package problemstest

import (
	"io/fs"
	"strings"

	"github.com/gpuplayground/playground/lessons"
)

// Kernel is a learner-style kernel for a problem, entry k: its launch shape at n and its dynamic
// shared memory, the sizes to try and whether it is right.
type Kernel struct {
	// Name says what the kernel is; Problem and Precision are its cell's keys ("": fp32).
	Name, Problem, Precision string
	// Source defines extern "C" __global__ void k(…) with the problem's signature.
	Source string
	Block  [3]int
	Grid   func(n int) [3]int
	// Shared is its dynamic shared memory per block in bytes.
	Shared int
	// Sizes are the n it is tried at; OK whether its check passes there.
	Sizes []int
	OK    bool
	// Fits, for a kernel that fails only for computing below its cell's precision, is the
	// `precision:` value the failed check's note names (problems.Problem.PrecisionNote).
	Fits string
}

// CeilDiv is ⌈a/b⌉.
func CeilDiv(a, b int) int { return (a + b - 1) / b }

// Tiles is a grid of b×b tiles covering n×n.
func Tiles(b int) func(n int) [3]int {
	return func(n int) [3]int { return [3]int{CeilDiv(n, b), CeilDiv(n, b), 1} }
}

// RowsOf is one block per row of n.
func RowsOf(n int) [3]int { return [3]int{n, 1, 1} }

// OneBlock is a grid of one block.
func OneBlock(int) [3]int { return [3]int{1, 1, 1} }

// NaiveTranspose is a right transpose, one thread per entry.
const NaiveTranspose = `extern "C" __global__ void k(const float* in, float* out, int rows, int cols) {
    int c = blockIdx.x * blockDim.x + threadIdx.x, r = blockIdx.y * blockDim.y + threadIdx.y;
    if (r < rows && c < cols) out[c * rows + r] = in[r * cols + c];
}`

// TiledTranspose is a right transpose through a padded shared-memory tile.
const TiledTranspose = `#define T 32
extern "C" __global__ void k(const float* in, float* out, int rows, int cols) {
    __shared__ float tile[T][T + 1];  // padded: a column of the tile spreads over all 32 banks
    int x = blockIdx.x * T + threadIdx.x, y = blockIdx.y * T + threadIdx.y;
    for (int j = 0; j < T; j += 8)
        if (x < cols && y + j < rows) tile[threadIdx.y + j][threadIdx.x] = in[(y + j) * cols + x];
    __syncthreads();
    x = blockIdx.y * T + threadIdx.x; y = blockIdx.x * T + threadIdx.y;
    for (int j = 0; j < T; j += 8)
        if (x < rows && y + j < cols) out[(y + j) * rows + x] = tile[threadIdx.x][threadIdx.y + j];
}`

// TreeReduce sums in extern __shared__ memory (blockDim.x floats) and adds each block's sum to out.
const TreeReduce = `extern "C" __global__ void k(const float* in, float* out, int n) {
    extern __shared__ float s[];
    int t = threadIdx.x, i = blockIdx.x * blockDim.x * 2 + t;
    float v = 0;
    if (i < n) v += in[i];
    if (i + blockDim.x < n) v += in[i + blockDim.x];
    s[t] = v;
    __syncthreads();
    for (int k = blockDim.x / 2; k > 0; k >>= 1) {
        if (t < k) s[t] += s[t + k];
        __syncthreads();
    }
    if (t == 0) atomicAdd(out, s[0]);
}`

// PrivateHistogram is a right histogram, privatised in shared memory.
const PrivateHistogram = `extern "C" __global__ void k(const unsigned int* in, unsigned int* bins, int n) {
    __shared__ unsigned int local[256];
    for (int b = threadIdx.x; b < 256; b += blockDim.x) local[b] = 0;
    __syncthreads();
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        atomicAdd(&local[in[i] & 255], 1u);
    __syncthreads();
    for (int b = threadIdx.x; b < 256; b += blockDim.x)
        if (local[b]) atomicAdd(&bins[b], local[b]);
}`

// RowSoftmax is a right softmax, one block of 256 threads per row.
const RowSoftmax = `extern "C" __global__ void k(const float* in, float* out, int rows, int cols) {
    __shared__ float red[256];
    int t = threadIdx.x;
    const float* x = in + blockIdx.x * cols;
    float* y = out + blockIdx.x * cols;
    float m = -3.0e38f;
    for (int j = t; j < cols; j += blockDim.x) m = fmaxf(m, x[j]);
    red[t] = m;
    __syncthreads();
    for (int k = blockDim.x / 2; k > 0; k >>= 1) {
        if (t < k) red[t] = fmaxf(red[t], red[t + k]);
        __syncthreads();
    }
    m = red[0];
    __syncthreads();
    float s = 0;
    for (int j = t; j < cols; j += blockDim.x) s += expf(x[j] - m);
    red[t] = s;
    __syncthreads();
    for (int k = blockDim.x / 2; k > 0; k >>= 1) {
        if (t < k) red[t] += red[t + k];
        __syncthreads();
    }
    s = red[0];
    for (int j = t; j < cols; j += blockDim.x) y[j] = expf(x[j] - m) / s;
}`

// BlockScan is one block of 256 threads walking the input in chunks, a Hillis–Steele scan per chunk
// plus the carry of the chunks before.
const BlockScan = `extern "C" __global__ void k(const float* in, float* out, int n) {
    __shared__ float s[256];
    __shared__ float carry;
    int t = threadIdx.x;
    if (t == 0) carry = 0;
    for (int base = 0; base < n; base += 256) {
        __syncthreads();
        s[t] = base + t < n ? in[base + t] : 0;
        __syncthreads();
        for (int off = 1; off < 256; off <<= 1) {
            float v = t >= off ? s[t - off] : 0;
            __syncthreads();
            s[t] += v;
            __syncthreads();
        }
        if (base + t < n) out[base + t] = s[t] + carry;
        __syncthreads();
        if (t == 255) carry += s[255];
    }
}`

// RoundingMatmul rounds every input and every partial sum to ROUND (bf16 or fp16), by PTX cvt.
const RoundingMatmul = `__device__ float bf(float x) {
    unsigned short h;
    asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(x));
    return __uint_as_float((unsigned)h << 16);
}
__device__ float hf(float x) {
    unsigned short h;
    float y;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(x));
    asm("cvt.f32.f16 %0, %1;" : "=f"(y) : "h"(h));
    return y;
}
extern "C" __global__ void k(const float* A, const float* B, float* C, int M, int N, int K) {
    int r = blockIdx.y * blockDim.y + threadIdx.y, c = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < M && c < N) {
        float s = 0;
        for (int p = 0; p < K; ++p) s = ROUND(s + ROUND(A[r * K + p]) * ROUND(B[p * N + c]));
        C[r * N + c] = s;
    }
}`

// UnfusedAttention is attention as three passes over memory, one thread per query row: it writes the
// row's scores to S (transposed, S[j·n + i], so that a warp's 32 rows are 32 neighbouring floats),
// reads them back to exponentiate and sum them, and reads them again to weight V.
const UnfusedAttention = `#define D 64
extern "C" __global__ void k(const float* Q, const float* K, const float* V, float* S, float* out, int n, int d) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float q[D], acc[D];
    #pragma unroll
    for (int c = 0; c < D; c++) { q[c] = Q[i * D + c] * rsqrtf((float)D); acc[c] = 0; }
    float m = -3.0e38f;
    for (int j = 0; j < n; j++) {                 // pass 1: scores, written to memory
        float s = 0;
        #pragma unroll
        for (int c = 0; c < D; c++) s += q[c] * K[j * D + c];
        S[j * n + i] = s;
        m = fmaxf(m, s);
    }
    float sum = 0;
    for (int j = 0; j < n; j++) {                 // pass 2: read, exponentiate, write back
        float p = expf(S[j * n + i] - m);
        S[j * n + i] = p;
        sum += p;
    }
    for (int j = 0; j < n; j++) {                 // pass 3: read the probabilities, weight V
        float p = S[j * n + i];
        #pragma unroll
        for (int c = 0; c < D; c++) acc[c] += p * V[j * D + c];
    }
    #pragma unroll
    for (int c = 0; c < D; c++) out[i * D + c] = acc[c] / sum;
}`

// FusedAttention is attention in one pass, one thread per query row, with an online softmax (the
// running maximum m and sum l rescale what was accumulated whenever m grows; Milakov and
// Gimelshein, arXiv:1805.02867, as FlashAttention uses it): the scores never leave registers.
const FusedAttention = `#define D 64
extern "C" __global__ void k(const float* Q, const float* K, const float* V, float* S, float* out, int n, int d) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float q[D], acc[D];
    #pragma unroll
    for (int c = 0; c < D; c++) { q[c] = Q[i * D + c] * rsqrtf((float)D); acc[c] = 0; }
    float m = -3.0e38f, l = 0;
    for (int j = 0; j < n; j++) {
        float s = 0;
        #pragma unroll
        for (int c = 0; c < D; c++) s += q[c] * K[j * D + c];
        float mj = fmaxf(m, s), fix = expf(m - mj), p = expf(s - mj);
        l = l * fix + p;
        #pragma unroll
        for (int c = 0; c < D; c++) acc[c] = acc[c] * fix + p * V[j * D + c];
        m = mj;
    }
    #pragma unroll
    for (int c = 0; c < D; c++) out[i * D + c] = acc[c] / l;
}`

// TiledFusedAttention is FusedAttention with the 64 queries of a block sharing tiles of K and V
// through shared memory, and Q and out staged there so their global accesses are coalesced: the
// solution the lesson Transformer accounting reveals for its attention challenge (its one home;
// lessons' TestChallengesFailAsGivenAndCanBeMet checks it meets the challenge), with the entry
// point renamed k. It panics if the lesson no longer has it (a test helper's programming error).
func TiledFusedAttention() string {
	src, err := fs.ReadFile(lessons.Embedded, "transformer-accounting.md")
	if err != nil {
		panic(err)
	}
	_, rest, ok := strings.Cut(string(src), "id: attention-unfused\n")
	if ok {
		_, rest, ok = strings.Cut(rest, "```solution\n")
	}
	sol, _, closed := strings.Cut(rest, "```")
	if !ok || !closed || !strings.Contains(sol, "void attention(") {
		panic("problemstest: the attention challenge's solution is not in lessons/transformer-accounting.md")
	}
	return strings.Replace(sol, "void attention(", "void k(", 1)
}

// Kernels are the kernels for every problem, right (OK) and wrong.
func Kernels() []Kernel {
	sq16 := [3]int{16, 16, 1}
	return []Kernel{
		{Name: "naive transpose", Problem: "transpose", Source: NaiveTranspose, Block: sq16, Grid: Tiles(16), Sizes: []int{1, 33, 64}, OK: true},
		{Name: "tiled transpose", Problem: "transpose", Source: TiledTranspose, Block: [3]int{32, 8, 1}, Grid: Tiles(32), Sizes: []int{33, 64}, OK: true},
		{Name: "off-by-one transpose", Problem: "transpose", Source: strings.Replace(NaiveTranspose, "in[r * cols + c]", "in[r * cols + (c + 1) % cols]", 1),
			Block: sq16, Grid: Tiles(16), Sizes: []int{33}},
		{Name: "tree reduce", Problem: "reduce", Source: TreeReduce, Block: [3]int{256, 1, 1}, Shared: 256 * 4,
			Grid: func(n int) [3]int { return [3]int{CeilDiv(n, 512), 1, 1} }, Sizes: []int{1, 1000, 5000}, OK: true},
		{Name: "reduce storing, not adding", Problem: "reduce", Source: strings.Replace(TreeReduce, "atomicAdd(out, s[0])", "*out = s[0]", 1),
			Block: [3]int{256, 1, 1}, Shared: 256 * 4, Grid: func(n int) [3]int { return [3]int{CeilDiv(n, 512), 1, 1} }, Sizes: []int{5000}},
		{Name: "privatised histogram", Problem: "histogram", Source: PrivateHistogram, Block: [3]int{256, 1, 1},
			Grid: func(n int) [3]int { return [3]int{min(CeilDiv(n, 256), 8), 1, 1} }, Sizes: []int{1, 3000}, OK: true},
		{Name: "row softmax", Problem: "softmax", Source: RowSoftmax, Block: [3]int{256, 1, 1}, Grid: RowsOf, Sizes: []int{1, 40, 300}, OK: true},
		{Name: "softmax without the sum", Problem: "softmax", Source: strings.Replace(RowSoftmax, "expf(x[j] - m) / s", "expf(x[j] - m)", 1),
			Block: [3]int{256, 1, 1}, Grid: RowsOf, Sizes: []int{40}},
		{Name: "softmax without the max", Problem: "softmax", Source: strings.ReplaceAll(RowSoftmax, "x[j] - m", "x[j]"),
			Block: [3]int{256, 1, 1}, Grid: RowsOf, Sizes: []int{1, 40}},
		{Name: "block scan", Problem: "scan", Source: BlockScan, Block: [3]int{256, 1, 1}, Grid: OneBlock, Sizes: []int{1, 256, 1000}, OK: true},
		{Name: "exclusive scan", Problem: "scan", Source: strings.Replace(BlockScan, "out[base + t] = s[t] + carry", "out[base + t] = s[t] - in[base + t] + carry", 1),
			Block: [3]int{256, 1, 1}, Grid: OneBlock, Sizes: []int{1000}},
		{Name: "unfused attention", Problem: "attention", Source: UnfusedAttention, Block: [3]int{64, 1, 1}, Grid: func(n int) [3]int { return [3]int{CeilDiv(n, 64), 1, 1} }, Sizes: []int{1, 100}, OK: true},
		{Name: "fused attention", Problem: "attention", Source: FusedAttention, Block: [3]int{64, 1, 1}, Grid: func(n int) [3]int { return [3]int{CeilDiv(n, 64), 1, 1} }, Sizes: []int{1, 100}, OK: true},
		{Name: "tiled fused attention", Problem: "attention", Source: TiledFusedAttention(), Block: [3]int{64, 1, 1}, Grid: func(n int) [3]int { return [3]int{CeilDiv(n, 64), 1, 1} }, Sizes: []int{1, 100}, OK: true},
		{Name: "attention without the max", Problem: "attention", Source: strings.Replace(strings.ReplaceAll(FusedAttention, "expf(m - mj)", "1.0f"), "expf(s - mj)", "expf(s)", 1),
			Block: [3]int{64, 1, 1}, Grid: func(n int) [3]int { return [3]int{CeilDiv(n, 64), 1, 1} }, Sizes: []int{1}},
		{Name: "attention without 1/√d", Problem: "attention", Source: strings.ReplaceAll(FusedAttention, " * rsqrtf((float)D)", ""),
			Block: [3]int{64, 1, 1}, Grid: func(n int) [3]int { return [3]int{CeilDiv(n, 64), 1, 1} }, Sizes: []int{100}},
		{Name: "bf16 matmul", Problem: "matmul", Precision: "bf16", Source: strings.ReplaceAll(RoundingMatmul, "ROUND(", "bf("), Block: sq16, Grid: Tiles(16), Sizes: []int{64}, OK: true},
		{Name: "bf16 matmul at fp32", Problem: "matmul", Source: strings.ReplaceAll(RoundingMatmul, "ROUND(", "bf("), Block: sq16, Grid: Tiles(16), Sizes: []int{64}, Fits: "bf16"},
		{Name: "fp16 matmul", Problem: "matmul", Precision: "fp16", Source: strings.ReplaceAll(RoundingMatmul, "ROUND(", "hf("), Block: sq16, Grid: Tiles(16), Sizes: []int{64}, OK: true},
		{Name: "fp16 matmul at fp32", Problem: "matmul", Source: strings.ReplaceAll(RoundingMatmul, "ROUND(", "hf("), Block: sq16, Grid: Tiles(16), Sizes: []int{64}, Fits: "fp16"},
	}
}
