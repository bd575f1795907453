package fakecuda

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuplayground/playground/gpu/nvidia"
)

// takesMap is PTX of a kernel with the six parameters every fake launch reads (A, B, C, M, N, K)
// and a CUtensorMap by value, as NVRTC declares one.
const takesMap = `.version 8.0
.target sm_90
.address_size 64
.visible .entry k(
	.param .u64 k_param_0,
	.param .u64 k_param_1,
	.param .u64 k_param_2,
	.param .u32 k_param_3,
	.param .u32 k_param_4,
	.param .u32 k_param_5,
	.param .align 64 .b8 k_param_6[128]
)
{
	ret;
}
`

// The stand-in is as strict about tensor maps as cuda.h's rules and a GPU's faults: a map whose
// tensor runs past its allocation is refused (CUDA_ERROR_INVALID_VALUE) though every documented
// rule holds, and a launch is refused where a CUtensorMap parameter gets no map it made, or one whose
// tensor was freed. It runs in this process, through the binding, so it also shows purego passing
// cuTensorMapEncodeTiled's twelve arguments to C.
func TestFakeTensorMapsAreStrict(t *testing.T) {
	ctx := openFake(t)
	alloc := func(bytes int) nvidia.DevicePtr {
		p, err := ctx.Alloc(bytes)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	a, b, c, tensor := alloc(8*8*4), alloc(8*8*4), alloc(8*8*4), alloc(64*64*4)
	spec := nvidia.TiledMap{Name: "tm", DataType: nvidia.TensorFloat32, Address: tensor, Dims: []uint64{64, 64},
		Strides: []uint64{256}, Box: []uint32{32, 32}}
	tm, err := ctx.EncodeTiled(spec)
	if err != nil {
		t.Fatal(err)
	}
	past := spec
	past.Address = tensor + 256 // one row in: the last row lies past the allocation
	if _, err := ctx.EncodeTiled(past); err == nil || err.Error() != "tensor map tm: cuTensorMapEncodeTiled: CUDA_ERROR_INVALID_VALUE (1)" {
		t.Errorf("a tensor past its allocation: got %v", err)
	}
	mod, err := ctx.LoadPTX(takesMap)
	if err != nil {
		t.Fatal(err)
	}
	fn, err := mod.Function("k")
	if err != nil {
		t.Fatal(err)
	}
	launch := func(last any) error {
		return fn.Launch([3]int{1, 1, 1}, [3]int{32, 1, 1}, a, b, c, int32(8), int32(8), int32(8), last)
	}
	if err := launch(tm); err != nil {
		t.Fatalf("launch with the map: %v", err)
	}
	if err := launch(tensor); err == nil || !strings.Contains(err.Error(), "CUDA_ERROR_INVALID_VALUE") {
		t.Errorf("a device pointer for the CUtensorMap parameter: got %v", err)
	}
	if err := ctx.Free(tensor); err != nil {
		t.Fatal(err)
	}
	if err := launch(tm); err == nil || !strings.Contains(err.Error(), "CUDA_ERROR_INVALID_VALUE") {
		t.Errorf("a map of a freed tensor: got %v", err)
	}
	if err := ctx.Synchronize(); err != nil {
		t.Errorf("the refused launches left an error: %v", err)
	}
}

// openFake opens the stand-in in this process (Driver), with a context on its device.
func openFake(t *testing.T) *nvidia.Context {
	t.Helper()
	ctx, err := Driver(t).Use(0)
	if err != nil {
		t.Fatal(err)
	}
	return ctx
}

// The stand-in enforces what the driver would for the Hopper rungs: a launch asking for more than 48
// KiB of dynamic shared memory is refused until cuFuncSetAttribute raised the kernel's limit (at most
// 227 KiB), a cluster launch's grid must be whole clusters of at most 8 blocks, and PTX for sm_90a
// loads on a compute capability 9.0 device only ($FAKECUDA_CC, read at each call).
func TestFakeHopperRules(t *testing.T) {
	ctx := openFake(t)
	sm90a := strings.Replace(takesMap, ".target sm_90", ".target sm_90a", 1)
	mod, err := ctx.LoadPTX(sm90a)
	if err != nil {
		t.Fatalf("sm_90a PTX on the cc 9.0 fake: %v", err)
	}
	fn, err := mod.Function("k")
	if err != nil {
		t.Fatal(err)
	}
	var ptrs [3]nvidia.DevicePtr
	for i := range ptrs {
		if ptrs[i], err = ctx.Alloc(8 * 8 * 4); err != nil {
			t.Fatal(err)
		}
	}
	tm, err := ctx.EncodeTiled(nvidia.TiledMap{Name: "tm", DataType: nvidia.TensorFloat32, Address: ptrs[0],
		Dims: []uint64{8, 8}, Strides: []uint64{32}, Box: []uint32{8, 8}})
	if err != nil {
		t.Fatal(err)
	}
	launch := func(shared int) error {
		return fn.LaunchShared([3]int{1, 1, 1}, [3]int{32, 1, 1}, shared, ptrs[0], ptrs[1], ptrs[2], int32(8), int32(8), int32(8), tm)
	}
	const big = 100 << 10
	if err := launch(48 << 10); err != nil {
		t.Errorf("48 KiB without opting in: %v", err)
	}
	if err := launch(big); err == nil || !strings.Contains(err.Error(), "CUDA_ERROR_INVALID_VALUE") {
		t.Errorf("100 KiB without opting in: got %v, want CUDA_ERROR_INVALID_VALUE", err)
	}
	if err := fn.SetMaxDynamicShared(228 << 10); err == nil {
		t.Error("228 KiB, past the opt-in limit: allowed")
	}
	if err := fn.SetMaxDynamicShared(big); err != nil {
		t.Fatal(err)
	}
	if err := launch(big); err != nil {
		t.Errorf("100 KiB after opting in: %v", err)
	}
	// Thread-block clusters through cuLaunchKernelEx: purego passes CUlaunchConfig and its cluster
	// attribute as cuda.h lays them out, or the fake would read another cluster or grid.
	log := filepath.Join(t.TempDir(), "fakecuda.log")
	t.Setenv("FAKECUDA_LOG", log)
	cluster := func(grid, c [3]int) error {
		return fn.LaunchCluster(grid, [3]int{32, 1, 1}, c, big, ptrs[0], ptrs[1], ptrs[2], int32(8), int32(8), int32(8), tm)
	}
	if err := cluster([3]int{4, 2, 1}, [3]int{2, 1, 1}); err != nil {
		t.Errorf("a 2×1×1 cluster: %v", err)
	}
	if b, err := os.ReadFile(log); err != nil || !strings.Contains(string(b), "cuLaunchKernelEx k cluster=2,1,1\ncuLaunchKernel k param=6 map=") ||
		!strings.Contains(string(b), "cuLaunchKernel k grid=4,2,1 block=32,1,1 shared=102400\n") {
		t.Errorf("log %q, %v: want the cluster, the map and the launch", b, err)
	}
	for _, c := range [][3]int{{3, 1, 1}, {4, 2, 2}} { // grid 4 not a multiple of 3; 16 blocks a cluster
		if err := cluster([3]int{4, 2, 2}, c); err == nil || !strings.Contains(err.Error(), "cuLaunchKernelEx: CUDA_ERROR_INVALID_VALUE") {
			t.Errorf("cluster %v: got %v, want CUDA_ERROR_INVALID_VALUE", c, err)
		}
	}
	t.Setenv("FAKECUDA_CC", "100")
	if _, err := ctx.LoadPTX(sm90a); err == nil || !strings.Contains(err.Error(), "CUDA_ERROR_NO_BINARY_FOR_GPU") {
		t.Errorf("sm_90a PTX on a cc 10.0 fake: got %v, want CUDA_ERROR_NO_BINARY_FOR_GPU", err)
	}
}

// The stand-in is compiled once per test binary: a second Setup gets a folder of its own holding
// the same libraries, byte for byte, without compiling them again.
func TestSetupCompilesOnce(t *testing.T) {
	builds := func() int { built.Lock(); defer built.Unlock(); return built.builds }
	first := Setup(t)
	after := builds()
	second := Setup(t)
	if got := builds(); got != after || got < 1 {
		t.Errorf("compiled %d times after two Setups (%d after the first), want once", got, after)
	}
	if first == second || os.Getenv("LD_LIBRARY_PATH") != second {
		t.Errorf("Setup folders %s and %s, LD_LIBRARY_PATH %s: want a fresh folder, on the loader path", first, second, os.Getenv("LD_LIBRARY_PATH"))
	}
	for _, name := range []string{"libcuda.so.1", "libcublas.so.13"} {
		a, errA := os.ReadFile(filepath.Join(first, name))
		b, errB := os.ReadFile(filepath.Join(second, name))
		if errA != nil || errB != nil || len(a) == 0 || string(a) != string(b) {
			t.Errorf("%s: %d and %d bytes (%v, %v), want the same library in both", name, len(a), len(b), errA, errB)
		}
	}
}
