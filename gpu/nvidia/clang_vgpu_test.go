package nvidia_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/gpuplayground/playground/gpu/nvidia"
	"github.com/gpuplayground/playground/kernels"
	"github.com/gpuplayground/playground/numeric"
	"github.com/gpuplayground/playground/vgpu"
	"github.com/x448/float16"
)

// The PTX that clang makes (with the playground's prelude) runs in the virtual GPU and gives the
// same results as NVRTC's: the ladder's kernels against gonum, learner-style kernels, and the
// prelude's math functions against Go's.

func needClang(t *testing.T) *nvidia.Clang {
	t.Helper()
	c, err := nvidia.SharedClang()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("clang is required in CI (Debian: apt-get install clang): %v", err)
		}
		t.Skipf("skipping: no clang (%v); Debian: apt-get install clang", err)
	}
	return c
}

func needNVRTC(t *testing.T) *nvidia.NVRTC {
	t.Helper()
	nv, err := nvidia.LoadNVRTC()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("NVRTC is required in CI: %v", err)
		}
		t.Skipf("skipping: no NVRTC (%v)", err)
	}
	return nv
}

func clangPTX(t *testing.T, c *nvidia.Clang, src string, arch int) *vgpu.Module {
	t.Helper()
	ptx, _, err := c.Compile(context.Background(), src, "cell.cu", arch)
	if err != nil {
		t.Fatal(err)
	}
	return parse(t, ptx)
}

func parse(t *testing.T, ptx string) *vgpu.Module {
	t.Helper()
	m, err := vgpu.ParseModule(ptx)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// round16 rounds x to the 16-bit precision prec ("bf16" or "f16", to nearest, ties to even) and
// returns its bits and its value.
func round16(x float32, prec string) (uint16, float32) {
	if prec == "f16" {
		h := float16.Fromfloat32(x)
		return uint16(h), h.Float32()
	}
	u := math.Float32bits(x)
	u += 0x7fff + (u>>16)&1
	b := uint16(u >> 16)
	return b, math.Float32frombits(uint32(b) << 16)
}

// Every kernel of matmul.cu compiled by clang equals gonum in the virtual GPU at n = 1, 33, 100 and
// 128, launched with the ladder table's shapes, for both targets (sm_70: the f16 WMMA kernel; sm_80:
// bf16). A kernel whose PTX (its entry and the module's device functions) and launch are the same
// for sm_80 as for sm_70 (cuda_naive, cuda_coalesced, cuda_smem, cuda_regblock: clang's code for
// them does not depend on the target) is the same run, and runs once.
func TestClangLadderKernelsMatchGonum(t *testing.T) {
	c := needClang(t)
	ran := map[string]bool{} // the runs made: launch and PTX
	for _, arch := range nvidia.PTXArchs {
		ptx, _, err := nvidia.ClangMatmul(c, arch) // TestClangCompilesEveryKernel's compile
		if err != nil {
			t.Fatalf("clang sm_%d: %v", arch, err)
		}
		m := parse(t, ptx)
		for _, k := range nvidia.Kernels() {
			if k.Entry == "" || arch < k.MinCC {
				continue
			}
			for _, n := range []int{1, 33, 100, 128} {
				l := k.LaunchFor(n, arch, "float32")
				run := fmt.Sprintf("%+v\n%s", l, entryCode(t, ptx, l.Entry))
				if ran[run] {
					continue
				}
				ran[run] = true
				rng := rand.New(rand.NewPCG(uint64(n), uint64(arch)))
				N := l.N
				a, b := make([]float32, n*n), make([]float32, n*n)
				A16, B16 := make([]uint16, N*N), make([]uint16, N*N)
				A32, B32 := make([]float32, N*N), make([]float32, N*N)
				for i := range n {
					for j := range n {
						x, y := float32(rng.Float64()*2-1), float32(rng.Float64()*2-1)
						if l.Precision == "bf16" || l.Precision == "f16" { // the reference multiplies the rounded inputs
							A16[i*N+j], x = round16(x, l.Precision)
							B16[i*N+j], y = round16(y, l.Precision)
						}
						a[i*n+j], b[i*n+j] = x, y
						A32[i*N+j], B32[i*N+j] = x, y
					}
				}
				var A, B *vgpu.Buffer
				if l.Precision == "bf16" || l.Precision == "f16" {
					A, B = vgpu.Uint16Buffer("A", A16), vgpu.Uint16Buffer("B", B16)
				} else {
					A, B = vgpu.Float32Buffer("A", A32), vgpu.Float32Buffer("B", B32)
				}
				C := vgpu.NewBuffer("C", 4*N*N)
				cnt, err := vgpu.Launch(context.Background(), m, l.Entry, vgpu.LaunchConfig{Grid: l.Grid, Block: l.Block,
					Params:  []vgpu.Arg{vgpu.Ptr(A), vgpu.Ptr(B), vgpu.Ptr(C), vgpu.S32(int32(N)), vgpu.S32(int32(N)), vgpu.S32(int32(N))},
					Buffers: []*vgpu.Buffer{A, B, C}})
				if err != nil {
					t.Fatalf("clang sm_%d %s (%s) n=%d: %v", arch, k.Name, l.Entry, n, err)
				}
				full := C.Float32s()
				got := make([]float32, n*n)
				for i := range n {
					copy(got[i*n:(i+1)*n], full[i*N:i*N+n])
				}
				want := make([]float64, n*n)
				a64, b64 := make([]float64, n*n), make([]float64, n*n)
				for i := range a {
					a64[i], b64[i] = float64(a[i]), float64(b[i])
				}
				if err := kernels.Gonum(context.Background(), want, a64, b64, n, n, n, kernels.Options{}); err != nil {
					t.Fatal(err)
				}
				if e := numeric.RelFrobenius(got, want); !(e <= numeric.Tolerance("float32")) {
					t.Errorf("clang sm_%d %s n=%d: relative error %g over %g", arch, k.Name, n, e, numeric.Tolerance("float32"))
				}
				if cnt.ThreadInstructions == 0 {
					t.Errorf("clang sm_%d %s n=%d: no instructions counted", arch, k.Name, n)
				}
			}
		}
	}
}

// entryCode is the PTX text a launch of entry runs in the module ptx: the entry's, from its
// ".entry" line to its closing brace, and every device function's (".func"), whichever entry calls
// them.
func entryCode(t *testing.T, ptx, entry string) string {
	t.Helper()
	var b strings.Builder
	found := false
	for _, block := range strings.SplitAfter(ptx, "\n}\n") {
		switch {
		case strings.Contains(block, ".entry "+entry+"("):
			found = true
			b.WriteString(block)
		case strings.Contains(block, ".func "):
			b.WriteString(block)
		}
	}
	if !found {
		t.Fatalf("no entry %s in the PTX", entry)
	}
	return b.String()
}

// learnerKernel is what a learner writes: float4 loads, a template, #pragma unroll, a warp-shuffle
// reduction; partials stores each warp's sum, and sum adds them all with atomicAdd.
const learnerKernel = `
template <int WIDTH>
__device__ float warpReduce(float v) {
#pragma unroll
    for (int offset = WIDTH / 2; offset > 0; offset /= 2)
        v += __shfl_down_sync(0xffffffff, v, offset);
    return v;
}

__device__ float threadSum(const float4* __restrict__ x, int n4) {
    float acc = 0.0f;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += blockDim.x * gridDim.x) {
        float4 v = x[i];
        acc += (v.x + v.y) + (v.z + v.w);
    }
    return acc;
}

extern "C" __global__ void partials(const float4* __restrict__ x, float* out, int n4) {
    float s = warpReduce<32>(threadSum(x, n4));
    if ((threadIdx.x & 31) == 0) out[(blockIdx.x * blockDim.x + threadIdx.x) / 32] = s;
}

extern "C" __global__ void sum(const float4* __restrict__ x, float* out, int n4) {
    float s = warpReduce<32>(threadSum(x, n4));
    if ((threadIdx.x & 31) == 0) atomicAdd(out, s);
}
`

// The learner's kernel compiles with both compilers; each one's PTX runs in the virtual GPU and
// sums correctly; any error, or a wrong sum, fails.
func TestLearnerKernelWithBothCompilers(t *testing.T) {
	compilers := map[string]func(t *testing.T) string{
		"clang": func(t *testing.T) string {
			ptx, _, err := needClang(t).Compile(context.Background(), learnerKernel, "cell.cu", 80)
			if err != nil {
				t.Fatal(err)
			}
			return ptx
		},
		"NVRTC": func(t *testing.T) string {
			ptx, err := nvidia.CompileArch(needNVRTC(t), learnerKernel, "cell.cu", 80)
			if err != nil {
				t.Fatal(err)
			}
			return ptx
		},
	}
	for name, compile := range compilers {
		t.Run(name, func(t *testing.T) {
			m := parse(t, compile(t))
			const n4, blocks, threads = 1000, 3, 128
			rng := rand.New(rand.NewPCG(1, 2))
			xs := make([]float32, 4*n4)
			var want float64
			for i := range xs {
				xs[i] = float32(rng.Float64()*2 - 1)
				want += float64(xs[i])
			}
			X := vgpu.Float32Buffer("x", xs)
			P := vgpu.NewBuffer("partials", 4*blocks*threads/32)
			cfg := vgpu.LaunchConfig{Grid: [3]int{blocks, 1, 1}, Block: [3]int{threads, 1, 1},
				Params: []vgpu.Arg{vgpu.Ptr(X), vgpu.Ptr(P), vgpu.S32(n4)}, Buffers: []*vgpu.Buffer{X, P}}
			if _, err := vgpu.Launch(context.Background(), m, "partials", cfg); err != nil {
				t.Fatalf("partials: %v", err)
			}
			var got float64
			for _, p := range P.Float32s() {
				got += float64(p)
			}
			if math.Abs(got-want) > 1e-3 {
				t.Errorf("partials sum to %g, want %g", got, want)
			}

			S := vgpu.NewBuffer("sum", 4)
			cfg.Params[1], cfg.Buffers[1] = vgpu.Ptr(S), S
			_, err := vgpu.Launch(context.Background(), m, "sum", cfg)
			if err != nil {
				t.Fatalf("sum (atomicAdd): %v", err)
			}
			if got := float64(S.Float32s()[0]); math.Abs(got-want) > 1e-3 {
				t.Errorf("sum = %g, want %g", got, want)
			}
		})
	}
}

// mathKernels are one kernel per prelude function: f<N> applies function N to each x (and y) into
// out, or, from 100 on, to each x64 into out64.
var mathKernels = func() string {
	float := []string{"expf(a)", "exp2f(a)", "exp10f(a)", "expm1f(a)", "logf(a)", "log2f(a)", "log10f(a)", "log1pf(a)",
		"sinf(a)", "cosf(a)", "tanf(a)", "tanhf(a)", "sinhf(a)", "coshf(a)", "atanf(a)", "asinf(a)", "acosf(a)",
		"atan2f(a, b)", "powf(a, b)", "hypotf(a, b)", "sqrtf(a)", "roundf(a)", "rintf(a)", "fmaf(a, b, 1.0f)",
		"floorf(a)", "copysignf(a, b)"}
	double := []string{"exp(d)", "log(d)", "pow(d, 1.75)", "log2(d)"}
	// One kernel per function, written out (learner source may not paste tokens, so no ## macro).
	var b strings.Builder
	k := func(n int, out, expr string) {
		fmt.Fprintf(&b, "extern \"C\" __global__ void f%d(const float* x, const float* y, float* out, "+
			"const double* x64, double* out64, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i >= n) return; "+
			"float a = x[i], b = y[i]; double d = x64[i]; %s[i] = %s; }\n", n, out, expr)
	}
	for i, e := range float {
		k(i, "out", e)
	}
	for i, e := range double {
		k(100+i, "out64", e)
	}
	return b.String()
}()

// ulps is how many float32 steps got is from want (correctly rounded), 0 for equal NaNs and
// infinities.
func ulps(got float32, want float64) float64 {
	w := float32(want)
	switch {
	case math.IsNaN(want) || math.IsNaN(float64(got)):
		if math.IsNaN(want) && math.IsNaN(float64(got)) {
			return 0
		}
		return math.Inf(1)
	case math.IsInf(float64(w), 0) || math.IsInf(float64(got), 0):
		if got == w {
			return 0
		}
		return math.Inf(1)
	}
	ulp := float64(math.Nextafter32(float32(math.Abs(float64(w))), float32(math.Inf(1))) - float32(math.Abs(float64(w))))
	if w == 0 {
		ulp = math.SmallestNonzeroFloat32
	}
	return math.Abs(float64(got)-want) / ulp
}

func ulps64(got, want float64) float64 {
	if math.IsNaN(got) || math.IsNaN(want) || math.IsInf(want, 0) || math.IsInf(got, 0) {
		if got == want || math.IsNaN(got) && math.IsNaN(want) {
			return 0
		}
		return math.Inf(1)
	}
	ulp := math.Nextafter(math.Abs(want), math.Inf(1)) - math.Abs(want)
	return math.Abs(got-want) / ulp
}

// The prelude's math functions (clang has no libdevice) are within a few ulp of Go's float64
// results rounded to float32, special values included.
func TestClangPreludeMath(t *testing.T) {
	c := needClang(t)
	m := clangPTX(t, c, mathKernels, 80)
	rng := rand.New(rand.NewPCG(3, 4))
	for _, f := range preludeMath32() {
		checkMath32(t, m, rng, f)
	}
	for _, f := range preludeMath64() {
		checkMath64(t, m, rng, f)
	}
}

// mathFn32 is one of the prelude's float32 math functions: f is its number in mathKernels, ref its
// float64 reference, and it is checked on random arguments in [lo, hi) and on every pair of specials.
type mathFn32 struct {
	f        int
	name     string
	ref      func(a, b float64) float64
	lo, hi   float64 // the range of random arguments
	maxUlps  float64
	specials []float32
}

// preludeMath32 is the table of the prelude's float32 math functions that TestClangPreludeMath checks.
func preludeMath32() []mathFn32 {
	inf, nan := float32(math.Inf(1)), float32(math.NaN())
	common := []float32{0, float32(math.Copysign(0, -1)), 1, -1, 0.5, 2, inf, -inf, nan}
	return []mathFn32{
		{0, "expf", func(a, _ float64) float64 { return math.Exp(a) }, -100, 89, 2, append(common, 88.7, -87.3, -103)},
		{1, "exp2f", func(a, _ float64) float64 { return math.Exp2(a) }, -149, 128, 2, append(common, 127.9, 3, -126)},
		{2, "exp10f", func(a, _ float64) float64 { return math.Pow(10, a) }, -44, 38.5, 3, append(common, 3, -5)},
		{3, "expm1f", func(a, _ float64) float64 { return math.Expm1(a) }, -3, 3, 3, append(common, 1e-6, -1e-5, 0.3, 20)},
		{4, "logf", func(a, _ float64) float64 { return math.Log(a) }, 0, 1e6, 2, append(common, 1e-40, 3.4e38, 1.0000001, 0.9999999)},
		{5, "log2f", func(a, _ float64) float64 { return math.Log2(a) }, 0, 1e6, 2, append(common, 1e-40, 8, 1024, 1.0000001)},
		{6, "log10f", func(a, _ float64) float64 { return math.Log10(a) }, 0, 1e6, 2, append(common, 1e-40, 1000, 0.001)},
		{7, "log1pf", func(a, _ float64) float64 { return math.Log1p(a) }, -0.9, 10, 3, append(common, 1e-5, -1e-5, 1e-3, -0.5)},
		{8, "sinf", func(a, _ float64) float64 { return math.Sin(a) }, -100, 100, 2, append(common, math.Pi, 1e4, -3e5, 1e6)},
		{9, "cosf", func(a, _ float64) float64 { return math.Cos(a) }, -100, 100, 2, append(common, math.Pi/2, 1e4, -3e5, 1e6)},
		{10, "tanf", func(a, _ float64) float64 { return math.Tan(a) }, -10, 10, 3, append(common, 1.5, 1e4)},
		{11, "tanhf", func(a, _ float64) float64 { return math.Tanh(a) }, -10, 10, 2, append(common, 1e-5, 0.2, 20)},
		{12, "sinhf", func(a, _ float64) float64 { return math.Sinh(a) }, -20, 20, 3, append(common, 1e-4, 0.5, 89)},
		{13, "coshf", func(a, _ float64) float64 { return math.Cosh(a) }, -20, 20, 3, append(common, 0.1, 89)},
		{14, "atanf", func(a, _ float64) float64 { return math.Atan(a) }, -5, 5, 2, append(common, 1e-5, 0.27, 1e10)},
		{15, "asinf", func(a, _ float64) float64 { return math.Asin(a) }, -1, 1, 3, append(common, 0.99999, 2)},
		{16, "acosf", func(a, _ float64) float64 { return math.Acos(a) }, -1, 1, 3, append(common, 0.99999, -0.99999, 2)},
		{17, "atan2f", math.Atan2, -3, 3, 3, common},
		{18, "powf", math.Pow, 0, 4, 1, common},
		{19, "hypotf", math.Hypot, -1e3, 1e3, 2, append(common, 3e38)},
		{20, "sqrtf", func(a, _ float64) float64 { return math.Sqrt(a) }, 0, 1e6, 0.5, common},
		{21, "roundf", func(a, _ float64) float64 { return math.Round(a) }, -10, 10, 0, append(common, 2.5, -2.5, 0.49999997, 8388609)},
		{22, "rintf", func(a, _ float64) float64 { return math.RoundToEven(a) }, -10, 10, 0, append(common, 2.5, -2.5, 3.5)},
		{23, "fmaf", func(a, b float64) float64 { return a*b + 1 }, -10, 10, 0.5, nil},
		{24, "floorf", func(a, _ float64) float64 { return math.Floor(a) }, -10, 10, 0, common},
		{25, "copysignf", math.Copysign, -10, 10, 0, common},
	}
}

// checkMath32 runs f on 2000 random argument pairs from rng and on every pair of its specials, and
// fails the test on a result further than f.maxUlps from its reference (the worst one is reported).
func checkMath32(t *testing.T, m *vgpu.Module, rng *rand.Rand, f mathFn32) {
	t.Helper()
	var xs, ys []float32
	for range 2000 {
		xs = append(xs, float32(f.lo+(f.hi-f.lo)*rng.Float64()))
		ys = append(ys, float32(f.lo+(f.hi-f.lo)*rng.Float64()))
	}
	for _, s := range f.specials {
		for _, s2 := range f.specials {
			xs, ys = append(xs, s), append(ys, s2)
		}
	}
	got, ok := run(t, m, f.f, xs, ys, nil)
	if !ok {
		return
	}
	worst, at := 0.0, 0
	for i := range xs {
		if u := ulps(got[i], f.ref(float64(xs[i]), float64(ys[i]))); !(u <= worst) {
			worst, at = u, i
		}
	}
	if worst > f.maxUlps {
		t.Errorf("%s(%g, %g) = %g, want %g: %g ulp, over %g", f.name, xs[at], ys[at], got[at],
			float32(f.ref(float64(xs[at]), float64(ys[at]))), worst, f.maxUlps)
	}
}

// mathFn64 is one of the prelude's float64 math functions: f is its number in mathKernels, ref its
// reference, and it is checked on a few special values and on random arguments in [lo, hi).
type mathFn64 struct {
	f       int
	name    string
	ref     func(float64) float64
	lo, hi  float64
	maxUlps float64
}

// preludeMath64 is the table of the prelude's float64 math functions that TestClangPreludeMath checks.
func preludeMath64() []mathFn64 {
	return []mathFn64{
		{100, "exp", math.Exp, -700, 700, 2},
		{101, "log", func(a float64) float64 { // math.Log is wrong for subnormals on amd64 (Go 1.26)
			frac, exp := math.Frexp(a)
			return math.Log(frac) + float64(exp)*math.Ln2
		}, 0, 1e300, 3},
		{102, "pow(x, 1.75)", func(a float64) float64 { return math.Pow(a, 1.75) }, 0, 1e5, 64},
		{103, "log2", math.Log2, 0, 1e10, 2},
	}
}

// checkMath64 runs f on a few special values and 2000 random arguments from rng, and fails the test
// on the first result further than f.maxUlps from its reference.
func checkMath64(t *testing.T, m *vgpu.Module, rng *rand.Rand, f mathFn64) {
	t.Helper()
	xs := []float64{0, 1, 2, math.Inf(1), math.NaN(), 1e-310}
	for range 2000 {
		xs = append(xs, f.lo+(f.hi-f.lo)*rng.Float64())
	}
	got, ok := run(t, m, f.f, make([]float32, len(xs)), make([]float32, len(xs)), xs)
	if !ok {
		return
	}
	for i, x := range xs {
		if u := ulps64(math.Float64frombits(uint64(math.Float32bits(got[2*i]))|uint64(math.Float32bits(got[2*i+1]))<<32), f.ref(x)); u > f.maxUlps {
			t.Errorf("%s(%g) = %g, want %g: %g ulp, over %g", f.name, x, math.Float64frombits(uint64(math.Float32bits(got[2*i]))|uint64(math.Float32bits(got[2*i+1]))<<32), f.ref(x), u, f.maxUlps)
			break
		}
	}
}

// run launches function f over xs and ys (and x64) and returns out, or out64's words as float32
// bits; false when the virtual GPU cannot run the function's PTX yet (vgpuGap).
func run(t *testing.T, m *vgpu.Module, f int, xs, ys []float32, x64 []float64) ([]float32, bool) {
	t.Helper()
	n := len(xs)
	if x64 == nil {
		x64 = make([]float64, n)
	}
	X, Y, O := vgpu.Float32Buffer("x", xs), vgpu.Float32Buffer("y", ys), vgpu.NewBuffer("out", 4*n)
	X64, O64 := vgpu.Float64Buffer("x64", x64), vgpu.NewBuffer("out64", 8*n)
	_, err := vgpu.Launch(context.Background(), m, fmt.Sprintf("f%d", f), vgpu.LaunchConfig{Grid: [3]int{(n + 127) / 128, 1, 1}, Block: [3]int{128, 1, 1},
		Params:  []vgpu.Arg{vgpu.Ptr(X), vgpu.Ptr(Y), vgpu.Ptr(O), vgpu.Ptr(X64), vgpu.Ptr(O64), vgpu.S32(int32(n))},
		Buffers: []*vgpu.Buffer{X, Y, O, X64, O64}})
	if err != nil {
		t.Fatalf("function %d: %v", f, err)
	}
	if f >= 100 {
		return O64.Float32s(), true
	}
	return O.Float32s(), true
}
