package gpu

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/gpuplayground/playground/gpu/nvidia"
	"github.com/gpuplayground/playground/harness"
	"github.com/gpuplayground/playground/internal/fakecuda"
	"github.com/gpuplayground/playground/measure"
)

// tensorMapMatmul is a matmul that takes a tensor map of A and one of B, as a TMA kernel does
// (CUtensorMap declared as cuda.h does, so that no header is needed), and prefetches both descriptors
// (prefetch.tensormap, PTX ISA 8.0, sm_90): its parameters are the problem's six, then two of 128
// bytes, 64-byte aligned.
const tensorMapMatmul = `struct alignas(64) CUtensorMap { unsigned long long opaque[16]; };
extern "C" __global__ void mm(const float* A, const float* B, float* C, int M, int N, int K,
                              const __grid_constant__ CUtensorMap tmA, const __grid_constant__ CUtensorMap tmB) {
    if (threadIdx.x == 0 && threadIdx.y == 0) {
        asm volatile("prefetch.tensormap [%0];" :: "l"(&tmA) : "memory");
        asm volatile("prefetch.tensormap [%0];" :: "l"(&tmB) : "memory");
    }
    int r = blockIdx.y * blockDim.y + threadIdx.y, c = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < M && c < N) { float s = 0; for (int p = 0; p < K; ++p) s += A[r * K + p] * B[p * N + c]; C[r * N + c] = s; }
}`

// mapFirstMatmul takes its tensor map before the problem's parameters, where the worker passes it last.
const mapFirstMatmul = `struct alignas(64) CUtensorMap { unsigned long long opaque[16]; };
extern "C" __global__ void mm(const __grid_constant__ CUtensorMap tmA, const float* A, const float* B, float* C, int M, int N, int K) {
    asm volatile("prefetch.tensormap [%0];" :: "l"(&tmA) : "memory");
    if (threadIdx.x == 0) C[0] = A[0] + B[0] + M + N + K;
}`

// tensorMapRun compiles tensorMapMatmul for s's device and runs it at n with maps, returning the
// result or the worker's error.
func tensorMapRun(t *testing.T, s *Supervisor, n int, maps []measure.TensorMap) (*harness.Result, error) {
	t.Helper()
	return tensorMapRunSource(t, s, tensorMapMatmul, n, maps)
}

// tensorMapRunSource is tensorMapRun of the kernel mm in src.
func tensorMapRunSource(t *testing.T, s *Supervisor, src string, n int, maps []measure.TensorMap) (*harness.Result, error) {
	t.Helper()
	report := Probe(context.Background(), s)
	if report.Unavailable != "" {
		t.Fatal(report.Unavailable)
	}
	nv, err := nvidia.LoadNVRTC()
	if err != nil {
		t.Skipf("skipping: the kernel needs NVRTC (%v)", err)
	}
	arch, err := nv.ArchFor(report.Devices[0].ComputeCapability)
	if err != nil || arch < 90 {
		t.Skipf("skipping: tensor maps need sm_90 and an NVRTC for it (compute_%d, %v)", arch, err)
	}
	ptx, err := nvidia.CompileArch(nv, src, "cell.cu", arch)
	if err != nil {
		t.Fatal(err)
	}
	var res *harness.Result
	g := (n + 15) / 16
	err = s.Do(context.Background(), Request{Op: "run", Kernel: "custom", N: n, DType: "float32", Repeats: 2, PTX: ptx,
		Entry: "mm", Block: [3]int{16, 16, 1}, Grid: [3]int{g, g, 1}, TensorMaps: maps}, func(r Response) {
		if r.Result != nil {
			res = r.Result
		}
	})
	return res, err
}

// twoMaps are the kernel's maps: A in 32×32 boxes, unswizzled; B with the 128-byte swizzle.
var twoMaps = []measure.TensorMap{{Param: "tmA", Of: "A", Box: [2]int{32, 32}}, {Param: "tmB", Of: "B", Box: [2]int{32, 32}, Swizzle: 128}}

// The worker makes a kernel's tensor maps with cuTensorMapEncodeTiled over the problem's device
// buffers and passes them after the problem's parameters: on the strict fake libcuda (which checks
// every argument as cuda.h documents, that each map covers a live allocation, and that each
// CUtensorMap parameter gets a map it made), with the calls it logged. A map the kernel lacks, an
// invalid box or a row stride that is not a multiple of 16 bytes is refused, naming the map.
func TestFakeCUDATensorMaps(t *testing.T) {
	fakecuda.Setup(t)
	log := filepath.Join(t.TempDir(), "fakecuda.log")
	t.Setenv("FAKECUDA_LOG", log)
	s := realWorker(t)
	res, err := tensorMapRun(t, s, 64, twoMaps)
	if err != nil || res == nil || !res.OK {
		t.Fatalf("got %+v, %v; want a checked result", res, err)
	}
	data, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	encodes := regexp.MustCompile(`(?m)^cuTensorMapEncodeTiled map=(\d+) (.*)$`).FindAllStringSubmatch(string(data), -1)
	want := []string{ // float32 (7), 64×64, rows 256 bytes apart, 32×32 boxes, L2 promotion 128 bytes (2)
		"dtype=7 rank=2 dims=64,64 strides=256 box=32,32 elementStrides=1,1 interleave=0 swizzle=0 l2=2 oob=0",
		"dtype=7 rank=2 dims=64,64 strides=256 box=32,32 elementStrides=1,1 interleave=0 swizzle=3 l2=2 oob=0",
	}
	if len(encodes) != 2 || encodes[0][2] != want[0] || encodes[1][2] != want[1] {
		t.Fatalf("encodes %q, want %q", encodes, want)
	}
	launchA := "cuLaunchKernel mm param=6 map=" + encodes[0][1]
	launchB := "cuLaunchKernel mm param=7 map=" + encodes[1][1]
	if got := strings.Count(string(data), launchA+"\n") + strings.Count(string(data), launchB+"\n"); got != 6 {
		t.Errorf("log %q: want %q and %q for each of 3 launches", lines, launchA, launchB)
	}
	for _, tt := range []struct {
		n    int
		maps []measure.TensorMap
		want string
	}{
		{64, twoMaps[:1], "the kernel mm takes 8 parameters; the run passes 7"},
		{64, []measure.TensorMap{twoMaps[0], {Param: "tmB", Of: "B", Box: [2]int{32, 300}}}, "tensor map tmB: box size 300 of dimension 1"},
		{66, twoMaps, "tensor map tmA: global stride 264 bytes of dimension 1 is not a multiple of 16"},
		{64, []measure.TensorMap{twoMaps[0], {Param: "tmB", Of: "D", Box: [2]int{32, 32}}}, `tensor map tmB: matmul has no matrix "D"`},
	} {
		if _, err := tensorMapRun(t, s, tt.n, tt.maps); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("n=%d, %+v: got %v, want %q", tt.n, tt.maps, err, tt.want)
		}
	}
	_, err = tensorMapRunSource(t, s, mapFirstMatmul, 64, twoMaps[:1])
	if want := "the kernel mm's parameter 0 (mm_param_0) is 128 bytes aligned 64; the run passes a device pointer there"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("a kernel taking its map first: got %v, want %q", err, want)
	}
}

// On a GPU machine (sm_90 or newer): the driver makes both maps and the kernel that takes them runs
// and checks. Build here, run there: CGO_ENABLED=0 go test -c -o build/gpu.test ./gpu;
// build/gpu.test -test.run GPUTensorMaps -test.v
func TestGPUTensorMaps(t *testing.T) {
	requireGPU(t)
	res, err := tensorMapRun(t, realWorker(t), 256, twoMaps)
	if err != nil || res == nil || !res.OK {
		t.Fatalf("got %+v, %v; want a checked result", res, err)
	}
}

// A GPU older than Hopper gets no tensor map: the worker says why before it asks the driver.
func TestTensorMapsNeedHopper(t *testing.T) {
	d := &device{cc: 86}
	_, err := d.tensorMapArgs(nil, Request{TensorMaps: twoMaps}, nil)
	if err == nil || err.Error() != "tensor maps need a GPU of compute capability 90 or newer (Hopper); this one is sm_86" {
		t.Errorf("got %v", err)
	}
}
