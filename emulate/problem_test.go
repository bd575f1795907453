package emulate

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/gpuplayground/playground/datasheet"
	"github.com/gpuplayground/playground/kernels/cuda"
	"github.com/gpuplayground/playground/problems"
)

// Learner-style kernels for every problem, compiled by NVRTC and by clang, run in the virtual GPU
// and are judged by their problem's check: right ones ok, wrong ones WRONG.

// compilers are the CUDA compilers installed here (each skipped where missing, required in CI).
func compilers(t *testing.T) map[string]func(src string) string {
	t.Helper()
	out := map[string]func(string) string{}
	if nv, err := cuda.LoadNVRTC(); err == nil {
		out["nvrtc"] = func(src string) string {
			t.Helper()
			ptx, err := cuda.CompileArch(nv, src, "cell.cu", Arch)
			if err != nil {
				t.Fatalf("nvrtc: %v", err)
			}
			return ptx
		}
	} else if os.Getenv("CI") == "true" {
		t.Fatalf("NVRTC is required in CI: %v", err)
	}
	if cl, err := cuda.FindClang(); err == nil {
		out["clang"] = func(src string) string {
			t.Helper()
			ptx, _, err := cl.Compile(context.Background(), src, "cell.cu", Arch)
			if err != nil {
				t.Fatalf("clang: %v", err)
			}
			return ptx
		}
	} else if os.Getenv("CI") == "true" {
		t.Fatalf("clang is required in CI: %v", err)
	}
	if len(out) == 0 {
		t.Skip("skipping: neither NVRTC nor clang is installed")
	}
	return out
}

// learnerKernel is one kernel for a problem: its launch shape at n and its dynamic shared memory.
type learnerKernel struct {
	name, problem, precision string
	src                      string
	block                    [3]int
	grid                     func(n int) [3]int
	shared                   int
	sizes                    []int
	ok                       bool
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }
func tiles(b int) func(n int) [3]int {
	return func(n int) [3]int { return [3]int{ceilDiv(n, b), ceilDiv(n, b), 1} }
}
func rowsOf(n int) [3]int { return [3]int{n, 1, 1} }
func oneBlock(int) [3]int { return [3]int{1, 1, 1} }

const naiveTranspose = `extern "C" __global__ void k(const float* in, float* out, int rows, int cols) {
    int c = blockIdx.x * blockDim.x + threadIdx.x, r = blockIdx.y * blockDim.y + threadIdx.y;
    if (r < rows && c < cols) out[c * rows + r] = in[r * cols + c];
}`

const tiledTranspose = `#define T 32
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

// treeReduce sums in extern __shared__ memory (blockDim.x floats) and adds each block's sum to out.
const treeReduce = `extern "C" __global__ void k(const float* in, float* out, int n) {
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

const privateHistogram = `extern "C" __global__ void k(const unsigned int* in, unsigned int* bins, int n) {
    __shared__ unsigned int local[256];
    for (int b = threadIdx.x; b < 256; b += blockDim.x) local[b] = 0;
    __syncthreads();
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        atomicAdd(&local[in[i] & 255], 1u);
    __syncthreads();
    for (int b = threadIdx.x; b < 256; b += blockDim.x)
        if (local[b]) atomicAdd(&bins[b], local[b]);
}`

const rowSoftmax = `extern "C" __global__ void k(const float* in, float* out, int rows, int cols) {
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

// blockScan is one block of 256 threads walking the input in chunks, a Hillis–Steele scan per chunk
// plus the carry of the chunks before.
const blockScan = `extern "C" __global__ void k(const float* in, float* out, int n) {
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

// roundingMatmul rounds every input and every partial sum to ROUND (bf16 or fp16), by PTX cvt.
const roundingMatmul = `__device__ float bf(float x) {
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

func learnerKernels() []learnerKernel {
	sq16 := [3]int{16, 16, 1}
	return []learnerKernel{
		{name: "naive transpose", problem: "transpose", src: naiveTranspose, block: sq16, grid: tiles(16), sizes: []int{1, 33, 64}, ok: true},
		{name: "tiled transpose", problem: "transpose", src: tiledTranspose, block: [3]int{32, 8, 1}, grid: tiles(32), sizes: []int{33, 64}, ok: true},
		{name: "off-by-one transpose", problem: "transpose", src: strings.Replace(naiveTranspose, "in[r * cols + c]", "in[r * cols + (c + 1) % cols]", 1),
			block: sq16, grid: tiles(16), sizes: []int{33}},
		{name: "tree reduce", problem: "reduce", src: treeReduce, block: [3]int{256, 1, 1}, shared: 256 * 4,
			grid: func(n int) [3]int { return [3]int{ceilDiv(n, 512), 1, 1} }, sizes: []int{1, 1000, 5000}, ok: true},
		{name: "reduce storing, not adding", problem: "reduce", src: strings.Replace(treeReduce, "atomicAdd(out, s[0])", "*out = s[0]", 1),
			block: [3]int{256, 1, 1}, shared: 256 * 4, grid: func(n int) [3]int { return [3]int{ceilDiv(n, 512), 1, 1} }, sizes: []int{5000}},
		{name: "privatised histogram", problem: "histogram", src: privateHistogram, block: [3]int{256, 1, 1},
			grid: func(n int) [3]int { return [3]int{min(ceilDiv(n, 256), 8), 1, 1} }, sizes: []int{1, 3000}, ok: true},
		{name: "row softmax", problem: "softmax", src: rowSoftmax, block: [3]int{256, 1, 1}, grid: rowsOf, sizes: []int{1, 40, 300}, ok: true},
		{name: "softmax without the sum", problem: "softmax", src: strings.Replace(rowSoftmax, "expf(x[j] - m) / s", "expf(x[j] - m)", 1),
			block: [3]int{256, 1, 1}, grid: rowsOf, sizes: []int{40}},
		{name: "block scan", problem: "scan", src: blockScan, block: [3]int{256, 1, 1}, grid: oneBlock, sizes: []int{1, 256, 1000}, ok: true},
		{name: "exclusive scan", problem: "scan", src: strings.Replace(blockScan, "out[base + t] = s[t] + carry", "out[base + t] = s[t] - in[base + t] + carry", 1),
			block: [3]int{256, 1, 1}, grid: oneBlock, sizes: []int{1000}},
		{name: "bf16 matmul", problem: "matmul", precision: "bf16", src: strings.ReplaceAll(roundingMatmul, "ROUND(", "bf("), block: sq16, grid: tiles(16), sizes: []int{64}, ok: true},
		{name: "bf16 matmul at fp32", problem: "matmul", src: strings.ReplaceAll(roundingMatmul, "ROUND(", "bf("), block: sq16, grid: tiles(16), sizes: []int{64}},
		{name: "fp16 matmul", problem: "matmul", precision: "fp16", src: strings.ReplaceAll(roundingMatmul, "ROUND(", "hf("), block: sq16, grid: tiles(16), sizes: []int{64}, ok: true},
		{name: "fp16 matmul at fp32", problem: "matmul", src: strings.ReplaceAll(roundingMatmul, "ROUND(", "hf("), block: sq16, grid: tiles(16), sizes: []int{64}},
	}
}

func TestLearnerKernelsPerProblem(t *testing.T) {
	for cname, compile := range compilers(t) {
		for _, k := range learnerKernels() {
			t.Run(cname+"/"+k.name, func(t *testing.T) {
				p, err := problems.Lookup(k.problem)
				if err != nil {
					t.Fatal(err)
				}
				prec := problems.DefaultPrecision("float32")
				if k.precision != "" {
					if prec, err = problems.LookupPrecision(k.precision); err != nil {
						t.Fatal(err)
					}
				}
				ptx := compile(k.src)
				for _, n := range k.sizes {
					r, err := Run(context.Background(), Request{Kernel: "custom", PTX: ptx, Entry: "k", Problem: p, Precision: prec,
						Grid: k.grid(n), Block: k.block, SharedBytes: k.shared, N: n, DType: "float32", GPU: datasheet.GPUs[0]})
					if err != nil {
						t.Fatalf("n=%d: %v", n, err)
					}
					t.Logf("n=%d: error %g, tolerance %g, checked %d", n, r.RelError, r.Tolerance, r.Checked)
					if r.OK != k.ok {
						t.Errorf("n=%d: got ok=%v (error %g, tolerance %g), want %v", n, r.OK, r.RelError, r.Tolerance, k.ok)
					}
					if r.Counts.ThreadInstructions == 0 || !(r.Model.Seconds > 0) || r.RateUnit != p.Rate {
						t.Errorf("n=%d: %d thread instructions, model %+v, rate %g %s", n, r.Counts.ThreadInstructions, r.Model, r.Rate, r.RateUnit)
					}
				}
			})
		}
	}
}

// Above a problem's FullN a transpose runs sampled blocks and checks what they wrote; a reduce,
// whose blocks add into one output, is refused there; a stray store names the buffer; extern
// __shared__ memory needs SharedBytes.
func TestProblemSamplingLimitsAndFaults(t *testing.T) {
	compile := compilers(t)["nvrtc"]
	if compile == nil {
		t.Skip("skipping: no NVRTC")
	}
	get := func(name string) *problems.Problem {
		t.Helper()
		p, err := problems.Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	tr, red := get("transpose"), get("reduce")
	run := func(p *problems.Problem, src string, n int, grid, block [3]int, shared int) (Result, error) {
		return Run(context.Background(), Request{Kernel: "custom", PTX: compile(src), Entry: "k", Problem: p,
			Grid: grid, Block: block, SharedBytes: shared, N: n, DType: "float32", GPU: datasheet.GPUs[0]})
	}
	n := tr.FullN + 76
	r, err := run(tr, naiveTranspose, n, tiles(16)(n), [3]int{16, 16, 1}, 0)
	if err != nil || !r.OK || !r.Sampled || r.Checked != SampledBlocks*256 || r.GridBlocks != int64(ceilDiv(n, 16)*ceilDiv(n, 16)) {
		t.Errorf("sampled transpose at n=%d: got ok %v, sampled %v, %d checked, %d blocks, %v; want ok, %d checked", n, r.OK, r.Sampled, r.Checked, r.GridBlocks, err, SampledBlocks*256)
	}
	reduceGrid := func(n int) [3]int { return [3]int{ceilDiv(n, 512), 1, 1} }
	n = red.FullN + 1
	if _, err := run(red, treeReduce, n, reduceGrid(n), [3]int{256, 1, 1}, 1024); err == nil || !strings.Contains(err.Error(), "runs in full or not at all") {
		t.Errorf("reduce at n=%d: got %v, want the limit's error", n, err)
	}
	if _, err := run(red, treeReduce, 600, reduceGrid(600), [3]int{256, 1, 1}, 0); err == nil || !strings.Contains(err.Error(), "shared") {
		t.Errorf("extern __shared__ without shared_bytes: got %v, want a shared-memory fault", err)
	}
	stray := strings.Replace(naiveTranspose, "out[c * rows + r]", "out[c * rows + r + 1]", 1)
	if _, err := run(tr, stray, 32, tiles(16)(32), [3]int{16, 16, 1}, 0); err == nil || !strings.Contains(err.Error(), `"out"`) {
		t.Errorf("a store past out: got %v, want a fault naming \"out\"", err)
	}
}
