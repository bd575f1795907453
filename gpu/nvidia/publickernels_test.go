package nvidia_test

import (
	"context"
	"math"
	"regexp"
	"strings"
	"testing"

	"github.com/gpuplayground/playground/gpu/nvidia"
	"github.com/gpuplayground/playground/vgpu"
)

// Kernels as public repositories ship them (written here in their style: NVIDIA's samples, an SGEMM
// worklog's kernel files) compile with their #include lines, host code and all, under both
// compilers, with and without CUDA's headers, and give the right results in the virtual GPU (issue
// 34). The words the source rule once refused (include in a comment, a variable called embed) are
// in them.

// sampleStyle is a whole program as NVIDIA's samples write one: the kernel, a host helper and main.
const sampleStyle = `/**
 * Vector addition: C = A + scale*B. We include the halo cells? Not here; nothing to embed either.
 */
#include <stdio.h>
// For the CUDA runtime routines (prefixed with "cuda_")
#include <cuda_runtime.h>
#include <helper_cuda.h>
#include <vector>
// #include <cublas_v2.h>
/* #include "not_provided.h" */

#define gpuErrchk(ans) { gpuAssert((ans), __FILE__, __LINE__); }
inline void gpuAssert(cudaError_t code, const char *file, int line, bool abort = true) {
  if (code != cudaSuccess) {
    fprintf(stderr, "GPUassert: %s %s %d\n", cudaGetErrorString(code), file, line);
    if (abort) exit(code);
  }
}

using namespace std;

const int kScale = 2;
static const char *sSampleName = "vectorAdd";
float *d_A, *d_B, *d_C;

template <int N = 4>
void fill(float *p, int n) { for (int i = 0; i < n; i++) p[i] = N; }

__global__ void vectorAdd(const float *A, const float *B, float *C, int numElements) {
  int i = blockDim.x * blockIdx.x + threadIdx.x;
  int embed = kScale; // a name like any other
  if (i < numElements) {
    C[i] = A[i] + embed * B[i];
  }
}

int main(void) {
  int numElements = 50000;
  size_t size = numElements * sizeof(float);
  printf("[%s of %d elements]\n", sSampleName, numElements);
  float *h_A = (float *)malloc(size);
  vector<float> h_B(numElements, 1.0f);
  fill<>(h_A, numElements);
#ifdef DEBUG
  printf("debug\n");
#endif
  gpuErrchk(cudaMalloc((void **)&d_A, size));
  gpuErrchk(cudaMalloc((void **)&d_B, size));
  gpuErrchk(cudaMalloc((void **)&d_C, size));
  gpuErrchk(cudaMemcpy(d_A, h_A, size, cudaMemcpyHostToDevice));
  int threadsPerBlock = 256;
  int blocksPerGrid = (numElements + threadsPerBlock - 1) / threadsPerBlock;
  vectorAdd<<<blocksPerGrid, threadsPerBlock>>>(d_A, d_B, d_C, numElements);
  gpuErrchk(cudaGetLastError());
  cudaFree(d_A);
  free(h_A);
  printf("Done\n");
  return 0;
}
`

// worklogStyle is a kernel file as an SGEMM worklog's repository keeps one: the C and C++ headers,
// cuBLAS's and the runtime's, glibc's uint, a template kernel and the instantiation a runner uses.
const worklogStyle = `#pragma once

#include <cassert>
#include <cstdio>
#include <cstdlib>
#include <cublas_v2.h>
#include <cuda_runtime.h>

#define CEIL_DIV(M, N) (((M) + (N)-1) / (N))

/*
 * Matrix sizes: MxK * KxN = MxN. Each thread computes one entry of C, and threads next to each
 * other in a warp read B's row next to each other (global memory coalescing).
 */
template <const uint BLOCKSIZE>
__global__ void sgemm_coalesced(int M, int N, int K, float alpha, const float *A,
                                const float *B, float beta, float *C) {
  const uint cRow = blockIdx.x * BLOCKSIZE + (threadIdx.x / BLOCKSIZE);
  const uint cCol = blockIdx.y * BLOCKSIZE + (threadIdx.x % BLOCKSIZE);
  assert(BLOCKSIZE > 0);
  if (cRow < M && cCol < N) {
    float tmp = 0.0;
    for (int i = 0; i < K; ++i) {
      tmp += A[cRow * K + i] * B[i * N + cCol];
    }
    C[cRow * N + cCol] = alpha * tmp + beta * C[cRow * N + cCol];
  }
}

template __global__ void sgemm_coalesced<8>(int, int, int, float, const float *, const float *, float, float *);

void run_sgemm_coalesce(int M, int N, int K, float alpha, float *A, float *B, float beta, float *C) {
  dim3 gridDim(CEIL_DIV(M, 8), CEIL_DIV(N, 8));
  dim3 blockDim(8 * 8);
  sgemm_coalesced<8><<<gridDim, blockDim>>>(M, N, K, alpha, A, B, beta, C);
}
`

// limitsStyle uses what the C and C++ headers' stand-ins give device code, and printf.
const limitsStyle = `#include <stdio.h>
#include <cstdint>
#include <climits>
#include <cfloat>
#include <cmath>
#include <cstddef>

extern "C" __global__ void limits(float* f, int64_t* i) {
  // we include the halo cells: a comment, not a directive
  uint32_t t = threadIdx.x;
  if (t == 0) {
    f[0] = FLT_MAX;
    f[1] = FLT_EPSILON;
    f[2] = (float)M_PI;
    f[3] = INFINITY;
    i[0] = INT_MAX;
    i[1] = INT64_MIN;
    i[2] = UINT8_MAX + (int64_t)sizeof(std::uint16_t) + (int64_t)offsetof(float2, y);
    printf("limits from thread %u\n", t);
  }
}
`

// entry finds the kernel whose (mangled) name holds name in ptx.
func entry(t *testing.T, ptx, name string) string {
	t.Helper()
	for _, m := range regexp.MustCompile(`\.entry\s+([A-Za-z_$][\w$]*)`).FindAllStringSubmatch(ptx, -1) {
		if strings.Contains(m[1], name) {
			return m[1]
		}
	}
	t.Fatalf("no kernel %s in the PTX", name)
	return ""
}

func TestPublicKernelsCompileAndRun(t *testing.T) {
	for _, withHeaders := range []bool{true, false} {
		name := "with CUDA's headers"
		if !withHeaders {
			name = "without CUDA's headers"
		}
		t.Run(name, func(t *testing.T) {
			bothCompilers(t, func(t *testing.T, compile func(string, bool) (string, error)) {
				t.Run("sample", func(t *testing.T) { checkSample(t, compile, withHeaders) })
				t.Run("worklog", func(t *testing.T) { checkWorklog(t, compile, withHeaders) })
				t.Run("limits", func(t *testing.T) { checkLimits(t, compile, withHeaders) })
			})
		})
	}
}

func checkSample(t *testing.T, compile func(string, bool) (string, error), headers bool) {
	ptx, err := compile(sampleStyle, headers)
	if err != nil {
		t.Fatal(err)
	}
	const n = 300
	a, b := make([]float32, n), make([]float32, n)
	for i := range n {
		a[i], b[i] = float32(i), float32(3*i+1)
	}
	A, B, C := vgpu.Float32Buffer("A", a), vgpu.Float32Buffer("B", b), vgpu.NewBuffer("C", 4*n)
	// Declared without extern "C", the kernel launches by its own name after NameEntry.
	if _, err := vgpu.Launch(context.Background(), parse(t, nvidia.NameEntry(ptx, "vectorAdd")), "vectorAdd", vgpu.LaunchConfig{
		Grid: [3]int{2, 1, 1}, Block: [3]int{256, 1, 1},
		Params: []vgpu.Arg{vgpu.Ptr(A), vgpu.Ptr(B), vgpu.Ptr(C), vgpu.S32(n)}, Buffers: []*vgpu.Buffer{A, B, C}}); err != nil {
		t.Fatal(err)
	}
	for i, got := range C.Float32s() {
		if want := a[i] + 2*b[i]; got != want {
			t.Fatalf("C[%d] = %g, want %g", i, got, want)
		}
	}
}

func checkWorklog(t *testing.T, compile func(string, bool) (string, error), headers bool) {
	ptx, err := compile(worklogStyle, headers)
	if err != nil {
		t.Fatal(err)
	}
	const m, n, k = 12, 10, 7
	a, b, c := make([]float32, m*k), make([]float32, k*n), make([]float32, m*n)
	for i := range a {
		a[i] = float32(i%5) - 2
	}
	for i := range b {
		b[i] = float32(i%3) + 0.5
	}
	for i := range c {
		c[i] = 1
	}
	A, B, C := vgpu.Float32Buffer("A", a), vgpu.Float32Buffer("B", b), vgpu.Float32Buffer("C", c)
	if _, err := vgpu.Launch(context.Background(), parse(t, ptx), entry(t, ptx, "sgemm_coalesced"), vgpu.LaunchConfig{
		Grid: [3]int{2, 2, 1}, Block: [3]int{64, 1, 1},
		Params:  []vgpu.Arg{vgpu.S32(m), vgpu.S32(n), vgpu.S32(k), vgpu.F32(2), vgpu.Ptr(A), vgpu.Ptr(B), vgpu.F32(3), vgpu.Ptr(C)},
		Buffers: []*vgpu.Buffer{A, B, C}}); err != nil {
		t.Fatal(err)
	}
	got := C.Float32s()
	for i := range m {
		for j := range n {
			var sum float32
			for x := range k {
				sum += a[i*k+x] * b[x*n+j]
			}
			if want := 2*sum + 3; math.Abs(float64(got[i*n+j]-want)) > 1e-4 {
				t.Fatalf("C[%d][%d] = %g, want %g", i, j, got[i*n+j], want)
			}
		}
	}
}

func checkLimits(t *testing.T, compile func(string, bool) (string, error), headers bool) {
	ptx, err := compile(limitsStyle, headers)
	if err != nil {
		t.Fatal(err)
	}
	F, I := vgpu.NewBuffer("f", 16), vgpu.NewBuffer("i", 24)
	c, err := vgpu.Launch(context.Background(), parse(t, ptx), "limits", vgpu.LaunchConfig{
		Grid: [3]int{1, 1, 1}, Block: [3]int{32, 1, 1}, Params: []vgpu.Arg{vgpu.Ptr(F), vgpu.Ptr(I)}, Buffers: []*vgpu.Buffer{F, I}})
	if err != nil {
		t.Fatal(err)
	}
	f := F.Float32s()
	if f[0] != math.MaxFloat32 || f[1] != 0x1p-23 || f[2] != float32(math.Pi) || !math.IsInf(float64(f[3]), 1) {
		t.Errorf("FLT_MAX, FLT_EPSILON, M_PI, INFINITY = %v", f)
	}
	var i [3]int64
	for k := range i {
		for j := range 8 {
			i[k] |= int64(I.Data[8*k+j]) << (8 * j)
		}
	}
	if want := [3]int64{math.MaxInt32, math.MinInt64, 255 + 2 + 4}; i != want {
		t.Errorf("INT_MAX, INT64_MIN, UINT8_MAX + sizeof(std::uint16_t) + offsetof(float2, y) = %v, want %v", i, want)
	}
	if got, want := c.Printf, "limits from thread 0\n"; got != want {
		t.Errorf("printf: %q, want %q", got, want)
	}
}

// Host code that the kept code does not use is left out, blanked line for line; what a kernel
// uses, constants included, is kept; types and directives stay.
func TestDeviceOnly(t *testing.T) {
	out, left := nvidia.DeviceOnly(sampleStyle)
	var names []string
	for _, p := range left {
		names = append(names, p.Name)
	}
	if got, want := strings.Join(names, " "), "gpuAssert sSampleName d_A fill main"; got != want {
		t.Errorf("left out %q, want %q", got, want)
	}
	if got, want := strings.Count(out, "\n"), strings.Count(sampleStyle, "\n"); got != want {
		t.Errorf("%d lines after, want %d", got, want)
	}
	for _, kept := range []string{"const int kScale = 2;", "__global__ void vectorAdd(", "#ifdef DEBUG", "#define gpuErrchk(ans)"} {
		if !strings.Contains(out, kept) {
			t.Errorf("%q was left out", kept)
		}
	}
	for _, gone := range []string{"main", "cudaMalloc", "fprintf", "sSampleName"} {
		if strings.Contains(out, gone) {
			t.Errorf("%q is still there", gone)
		}
	}
	// A helper the kernel calls stays (the compiler then says it is a host function, as nvcc does),
	// and a function a macro of the source could make a device one stays too.
	src := "float sq(float x) { return x * x; }\n#define DEV __device__\nDEV float cube(float x) { return x * x * x; }\n" +
		"__global__ void k(float* p) { p[0] = sq(p[0]) + cube(p[1]); }\nint main() { return 0; }\n"
	out, left = nvidia.DeviceOnly(src)
	if len(left) != 1 || left[0].Name != "main" || left[0].First != 5 || !strings.Contains(out, "float sq(") || !strings.Contains(out, "DEV float cube(") {
		t.Errorf("DeviceOnly(%q) = %q, %v; want only main left out", src, out, left)
	}
	// Namespaces and extern "C" blocks are looked into; types, typedefs, using, constexpr and
	// templates of types stay; a host template, a prototype, a global object and a lambda go.
	src = `namespace util {
template <int N = 4> void host_fill(float* p) { for (int i = 0; i < N; i++) p[i] = N; }
__device__ float twice(float x) { return 2 * x; }
}
extern "C" {
void run(float* p);
__global__ void k(float* p) { p[0] = util::twice(p[0]) + kTile + S{1}.a; }
}
struct S { int a; int get() const { return a; } };
typedef float real;
using vec = float;
constexpr int kTile = 16;
template <typename T> struct Box { T v; };
dim3 grid(16, 16);
auto report = [](int x) { return x + 1; };
void run(float* p) { util::host_fill<>(p); k<<<grid, 1>>>(p); }
`
	out, left = nvidia.DeviceOnly(src)
	names = nil
	for _, p := range left {
		names = append(names, p.Name)
	}
	if got, want := strings.Join(names, " "), "host_fill run grid report run"; got != want {
		t.Errorf("left out %q, want %q:\n%s", got, want, out)
	}
	for _, kept := range []string{"__device__ float twice(", "struct S {", "typedef float real;", "using vec = float;", "constexpr int kTile = 16;", "template <typename T> struct Box"} {
		if !strings.Contains(out, kept) {
			t.Errorf("%q was left out:\n%s", kept, out)
		}
	}
	// Braces that do not balance outside directives: the source as it is.
	src = "#ifdef A\nvoid f(int a) {\n#else\nvoid f(long a) {\n#endif\n}\n"
	if out, left := nvidia.DeviceOnly(src); out != src || left != nil {
		t.Errorf("DeviceOnly(%q) = %q, %v; want it unchanged", src, out, left)
	}
}

// A kernel that calls a host function it was given fails with the compiler's error and a note
// naming the host code left out.
func TestHostCodeNote(t *testing.T) {
	bothCompilers(t, func(t *testing.T, compile func(string, bool) (string, error)) {
		src := "#include <cstdio>\nfloat sq(float x) { return x * x; }\n__global__ void k(float* p) { p[0] = sq(p[0]); }\n" +
			"int main() {\n  printf(\"hi\\n\");\n  return 0;\n}\n"
		_, err := compile(src, true)
		if err == nil || !strings.Contains(err.Error(), "cell.cu(4): note: host code left out of the GPU compile (") || !strings.HasSuffix(strings.TrimSpace(err.Error()), "): main") {
			t.Errorf("got %v, want a compile error with a note naming main", err)
		}
	})
}

// Every stand-in header is a plain name, and compiles on its own under both compilers.
func TestStandInHeadersCompile(t *testing.T) {
	var src strings.Builder
	for name := range nvidia.StandInHeaders() {
		if strings.HasPrefix(name, "/") || strings.Contains(name, "..") || strings.ContainsAny(name, "\"<> \\\n") {
			t.Errorf("stand-in %q is not a plain name", name)
		}
		if !nvidia.Provided(name) {
			t.Errorf("stand-in %q is not provided", name)
		}
		src.WriteString("#include <" + name + ">\n")
	}
	src.WriteString("extern \"C\" __global__ void k(uint32_t* p) { p[0] = UINT32_MAX; assert(p != 0); }\n")
	bothCompilers(t, func(t *testing.T, compile func(string, bool) (string, error)) {
		for _, headers := range []bool{true, false} {
			if _, err := compile(src.String(), headers); err != nil {
				t.Errorf("every stand-in (CUDA's headers %v): %v", headers, err)
			}
		}
	})
}

// NameEntry renames the one mangled entry of a name, and leaves alone a PTX where the name is an
// entry already or stands for several.
func TestNameEntry(t *testing.T) {
	ptx := ".visible .entry _Z1kPf(\n.param .u64 _Z1kPf_param_0\n)\n{\nld.param.u64 %rd1, [_Z1kPf_param_0];\n}\n.visible .entry _Z2kkPf(\n)\n"
	got := nvidia.NameEntry(ptx, "k")
	if !strings.Contains(got, ".entry k(") || !strings.Contains(got, "[_Z1kPf_param_0]") || !strings.Contains(got, ".entry _Z2kkPf(") {
		t.Errorf("NameEntry(k) = %q", got)
	}
	for _, tc := range []struct{ ptx, kernel string }{
		{".entry k(\n)\n.entry _Z1kPf(\n)\n", "k"},
		{".entry _Z1kIiEvPf(\n)\n.entry _Z1kIfEvPf(\n)\n", "k"},
		{".entry _Z2kkPf(\n)\n", "k"},
	} {
		if got := nvidia.NameEntry(tc.ptx, tc.kernel); got != tc.ptx {
			t.Errorf("NameEntry(%q, %s) = %q, want it unchanged", tc.ptx, tc.kernel, got)
		}
	}
}

// Names used only through a macro (#define M (N*2), the TILE and IDX() style) or in a directive
// (#pragma unroll U) are uses: the constants stay and the kernels compile under both compilers. A
// macro used only by host code keeps nothing, and a directive spliced by backslash-CR-LF inside
// host code stays whole.
func TestDeviceOnlyKeepsMacroUses(t *testing.T) {
	for _, tc := range []struct {
		src  string
		kept []string
		gone []string
	}{
		{"const int N = 256;\n#define M (N*2)\n__global__ void k(float*a){a[0]=M;}\n", []string{"const int N = 256;"}, nil},
		{"const int TILE = 16;\nconst int W = 64;\n#define IDX(r, c) \\\r\n  ((r) * W + (c))\r\n#define T TILE\r\n" +
			"__global__ void k(float* a) { a[IDX(threadIdx.y, threadIdx.x)] = T; }\r\n",
			[]string{"const int TILE = 16;", "const int W = 64;"}, nil},
		{"const int U = 4;\n__global__ void k(float* a) {\n#pragma unroll U\n  for (int i = 0; i < 8; i++) a[i] = i;\n}\n", []string{"const int U = 4;"}, nil},
		{"void check(int e) {}\n#define CHECK(x) check(x)\nint main() { CHECK(1); return 0; }\n__global__ void k(float* a) { a[0] = 1; }\n",
			[]string{"#define CHECK(x) check(x)"}, []string{"void check", "main"}},
		{"int main() {\r\n#define SCALE \\\r\n  3\r\n  return 0;\r\n}\r\n__global__ void k(float* a) { a[0] = SCALE; }\r\n",
			[]string{"#define SCALE \\\r\n  3\r\n"}, []string{"main", "return 0"}},
	} {
		out, _ := nvidia.DeviceOnly(tc.src)
		for _, k := range tc.kept {
			if !strings.Contains(out, k) {
				t.Errorf("DeviceOnly(%q) = %q: %q was left out", tc.src, out, k)
			}
		}
		for _, g := range tc.gone {
			if strings.Contains(out, g) {
				t.Errorf("DeviceOnly(%q) = %q: %q is still there", tc.src, out, g)
			}
		}
		if got, want := strings.Count(out, "\n"), strings.Count(tc.src, "\n"); got != want {
			t.Errorf("DeviceOnly(%q): %d lines after, want %d", tc.src, got, want)
		}
	}
	for _, name := range []string{"NVRTC", "clang"} {
		t.Run(name, func(t *testing.T) {
			var nv *nvidia.NVRTC
			var cl *nvidia.Clang
			if name == "NVRTC" {
				nv = needNVRTC(t)
			} else {
				cl = needClang(t)
			}
			for _, src := range []string{
				"const int N = 256;\n#define M (N*2)\n__global__ void k(float*a){a[0]=M;}\n",
				"const int TILE = 16;\nconst int W = 64;\n#define IDX(r, c) \\\r\n  ((r) * W + (c))\r\n#define T TILE\r\n" +
					"__global__ void k(float* a) { a[IDX(threadIdx.y, threadIdx.x)] = T; }\r\nint main() { return 0; }\r\n",
				"const int U = 4;\n__global__ void k(float* a) {\n#pragma unroll U\n  for (int i = 0; i < 8; i++) a[i] = i;\n}\n",
				"int main() {\r\n#define SCALE \\\r\n  3\r\n  return 0;\r\n}\r\n__global__ void k(float* a) { a[0] = SCALE; }\r\n",
			} {
				if _, err := nvidia.CompileWithHeaders(context.Background(), nv, cl, "", src, "cell.cu", 80); err != nil {
					t.Errorf("%q: %v", src, err)
				}
			}
		})
	}
}
