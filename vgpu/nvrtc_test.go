package vgpu

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/gpuplayground/playground/gpu/nvidia"
)

// Learner-style kernels compiled by NVRTC (skipped where the library is missing), run in the
// virtual GPU.

func compileCUDA(t *testing.T, src string) *Module {
	t.Helper()
	n, err := nvidia.LoadNVRTC()
	if err != nil {
		t.Skipf("no NVRTC: %v", err)
	}
	ptx, _, err := n.Compile(src, "k.cu", "compute_80", "-lineinfo")
	if err != nil {
		t.Fatal(err)
	}
	m, err := ParseModule(ptx)
	if err != nil {
		t.Fatalf("%v\n%s", err, ptx)
	}
	return m
}

const assertDecl = `extern "C" __device__ void __assertfail(const char*, const char*, unsigned, const char*, unsigned long);
#define assert(e) ((e) ? (void)0 : __assertfail(#e, __FILE__, __LINE__, __func__, 1))
`

func TestNVRTCPrintfAssertAndCalls(t *testing.T) {
	m := compileCUDA(t, assertDecl+`
template <typename T> __device__ __noinline__ T scaled(T a, int k) {
	T loc[4];
	for (int i = 0; i < 4; i++) loc[i] = a * (T)i;
	return loc[k & 3] + a;
}
__device__ __noinline__ int fact(int n) { return n <= 1 ? 1 : n * fact(n - 1); }
extern "C" __global__ void k(float *x, double *d, int *fa, int n) {
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n) return;
	x[i] = scaled<float>(x[i], i);
	d[i] = scaled<double>(d[i], i + 1);
	fa[i] = fact(i % 8);
	if (i < 2) printf("i=%d x=%.1f d=%g s=%s c=%c ll=%lld u=%u hex=%#x\n", i, x[i], d[i], "str", 'A' + i, (long long)i << 40, (unsigned)-i, 255 + i);
	assert(i < n - 1);
}
`)
	const n = 40
	xs, ds := make([]float32, n), make([]float64, n)
	for i := range xs {
		xs[i], ds[i] = float32(i), float64(i)/2
	}
	X, D, F := Float32Buffer("x", xs), Float64Buffer("d", ds), NewBuffer("f", 4*n)
	c, err := Launch(context.Background(), m, "k", LaunchConfig{Grid: [3]int{2}, Block: [3]int{32},
		Params: []Arg{Ptr(X), Ptr(D), Ptr(F), S32(n)}, Buffers: []*Buffer{X, D, F}})
	var f *Fault
	if !errors.As(err, &f) || f.Kind != "assertion" {
		t.Fatalf("got %v, want the assertion of thread %d", err, n-1)
	}
	if f.Block != [3]int{1, 0, 0} || f.Thread != [3]int{n - 1 - 32, 0, 0} || !strings.Contains(f.Msg, "i < n - 1") || !strings.HasSuffix(f.Source, "k.cu:17") {
		t.Errorf("assertion fault %+v", f)
	}
	want := "i=0 x=0.0 d=0 s=str c=A ll=0 u=0 hex=0xff\ni=1 x=2.0 d=1.5 s=str c=B ll=1099511627776 u=4294967295 hex=0x100\n"
	if c.Printf != want {
		t.Errorf("printf %q, want %q", c.Printf, want)
	}
	facts := []int32{1, 1, 2, 6, 24, 120, 720, 5040}
	for i := range n {
		if got, w := X.Float32s()[i], float32(i)*float32(i&3)+float32(i); got != w {
			t.Errorf("x[%d] = %v, want %v", i, got, w)
		}
		if got, w := D.Float64s()[i], ds[i]*float64((i+1)&3)+ds[i]; got != w {
			t.Errorf("d[%d] = %v, want %v", i, got, w)
		}
		if got := int32(readN(F.Data[4*i:], 4)); got != facts[i%8] {
			t.Errorf("fact[%d] = %d", i, got)
		}
	}
}

func TestNVRTCLearnerKernels(t *testing.T) {
	m := compileCUDA(t, `
extern "C" __global__ void scale4(const float4 *in, float4 *out, float s, int n4) {
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n4) { float4 v = in[i]; out[i] = make_float4(v.x * s, v.y * s, v.z * s, v.w * s); }
}
extern "C" __global__ void unrolled(const float *in, float *out, int n) {
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	float acc = 0;
	#pragma unroll
	for (int k = 0; k < 8; k++) acc += in[(i * 8 + k) % n] * (k + 1);
	if (i < n) out[i] = acc;
}
extern "C" __global__ void warpsum(const float *in, float *out, int n) {
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	float v = i < n ? in[i] : 0.0f;
	for (int off = 16; off > 0; off /= 2) v += __shfl_down_sync(0xffffffff, v, off);
	if ((threadIdx.x & 31) == 0) atomicAdd(out, v);
}
extern "C" __global__ void hist(const int *in, unsigned *bins, int n) {
	__shared__ unsigned s[16];
	if (threadIdx.x < 16) s[threadIdx.x] = 0;
	__syncthreads();
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) atomicAdd(&s[in[i] & 15], 1u);
	__syncthreads();
	if (threadIdx.x < 16) atomicAdd(&bins[threadIdx.x], s[threadIdx.x]);
	if (i == 0) { atomicMax((int *)&bins[16], 7); atomicInc(&bins[17], 3u); atomicCAS(&bins[18], 0u, 9u); }
}
`)
	ctx := context.Background()
	const n = 1000
	xs := make([]float32, n)
	for i := range xs {
		xs[i] = float32(i%13) - 6
	}
	t.Run("float4", func(t *testing.T) {
		in, out := Float32Buffer("in", xs), NewBuffer("out", 4*n)
		c, err := Launch(ctx, m, "scale4", LaunchConfig{Grid: [3]int{(n/4 + 63) / 64}, Block: [3]int{64},
			Params: []Arg{Ptr(in), Ptr(out), F32(2), S32(n / 4)}, Buffers: []*Buffer{in, out}})
		if err != nil {
			t.Fatal(err)
		}
		for i, v := range out.Float32s() {
			if v != 2*xs[i] {
				t.Fatalf("out[%d] = %v", i, v)
			}
		}
		// 16-byte loads: a full warp reads 512 contiguous bytes, 16 sectors
		if c.GlobalLoadRequests == 0 || c.LoadSectors != int64(4*n)/32 {
			t.Errorf("float4 loads: %d requests, %d sectors, want %d sectors", c.GlobalLoadRequests, c.LoadSectors, 4*n/32)
		}
	})
	t.Run("unroll", func(t *testing.T) {
		in, out := Float32Buffer("in", xs), NewBuffer("out", 4*n)
		if _, err := Launch(ctx, m, "unrolled", LaunchConfig{Grid: [3]int{(n + 127) / 128}, Block: [3]int{128},
			Params: []Arg{Ptr(in), Ptr(out), S32(n)}, Buffers: []*Buffer{in, out}}); err != nil {
			t.Fatal(err)
		}
		for i, v := range out.Float32s() {
			var acc float32
			for k := range 8 {
				acc += xs[(i*8+k)%n] * float32(k+1)
			}
			if v != acc {
				t.Fatalf("out[%d] = %v, want %v", i, v, acc)
			}
		}
	})
	t.Run("warp shuffle reduction", func(t *testing.T) {
		in, out := Float32Buffer("in", xs), NewBuffer("out", 4)
		c, err := Launch(ctx, m, "warpsum", LaunchConfig{Grid: [3]int{(n + 255) / 256}, Block: [3]int{256},
			Params: []Arg{Ptr(in), Ptr(out), S32(n)}, Buffers: []*Buffer{in, out}})
		if err != nil {
			t.Fatal(err)
		}
		var want float64
		for _, x := range xs {
			want += float64(x)
		}
		if got := out.Float32s()[0]; float64(got) != want {
			t.Errorf("sum %v, want %v", got, want)
		}
		if c.Classes[ClassShuffle].Warp == 0 || c.GlobalAtomicRequests != int64((n+255)/256*8) {
			t.Errorf("shuffles %d, atomic requests %d", c.Classes[ClassShuffle].Warp, c.GlobalAtomicRequests)
		}
	})
	t.Run("atomics", func(t *testing.T) {
		in, bins := NewBuffer("in", 4*n), NewBuffer("bins", 4*19)
		want := make([]uint32, 16)
		for i := range n {
			v := (i * 37) % 101
			writeN(in.Data[4*i:], 4, uint64(v))
			want[v&15]++
		}
		if _, err := Launch(ctx, m, "hist", LaunchConfig{Grid: [3]int{(n + 127) / 128}, Block: [3]int{128},
			Params: []Arg{Ptr(in), Ptr(bins), S32(n)}, Buffers: []*Buffer{in, bins}}); err != nil {
			t.Fatal(err)
		}
		for b := range 16 {
			if got := uint32(readN(bins.Data[4*b:], 4)); got != want[b] {
				t.Errorf("bin %d = %d, want %d", b, got, want[b])
			}
		}
		if mx, inc, cas := readN(bins.Data[64:], 4), readN(bins.Data[68:], 4), readN(bins.Data[72:], 4); mx != 7 || inc != 1 || cas != 9 {
			t.Errorf("max %d inc %d cas %d", mx, inc, cas)
		}
	})
}
