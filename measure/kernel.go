package measure

import (
	"context"
	"slices"

	"github.com/gpuplayground/playground/estimate"
	"github.com/gpuplayground/playground/numeric"
)

// Options tune a kernel call. The zero value is valid.
type Options struct {
	// Threads is the number of goroutines the parallel kernel uses; 0 means runtime.GOMAXPROCS(0).
	// Other kernels ignore it (gonum's BLAS picks its own count from GOMAXPROCS).
	Threads int
}

// Func is one kernel for element type T: it computes c = a·b with a m×k, b k×n, c m×n, row-major.
// It returns ctx.Err() if cancelled before finishing.
type Func[T numeric.Float] func(ctx context.Context, c, a, b []T, m, n, k int, opt Options) error

// Kernel is a named CPU GEMM implementation for both precisions.
type Kernel struct {
	// Name is what a lesson cell writes in its kernels list.
	Name string
	// Summary is one sentence for learners.
	Summary string
	// F32 and F64 run the kernel on this CPU; both are nil for GPU kernels, which run in the GPU
	// child process.
	F32 Func[float32]
	F64 Func[float64]
	// Unavailable, when set, says why this kernel cannot run here (e.g. "no CUDA device: …"); a run
	// that names it reports that instead of a result.
	Unavailable string
	// Remote marks a kernel measured in another process (the GPU worker).
	Remote bool
	// OnGPU marks the GPU kernels (from GPU), whether or not this machine can run them.
	OnGPU bool
	// DTypes, if set, are the only cell dtypes the kernel takes (from the GPU kernel table); CPU
	// kernels take float32 and float64.
	DTypes []string
	// Estimate, set for the GPU kernels a worker will run (gpu.Kernels), is the GPU kernel table's
	// pessimistic guess of one call in seconds (nvidia.Kernel.EstimateSeconds): a datasheet-based
	// guess, not measured here.
	Estimate func(n int, dtype string) float64
}

// EstimateSeconds returns a guess of one call's duration in seconds for an n×n×n product in the given
// precision ("float32" or "float64") with the given thread count, made before running and never shown
// as a measurement. A CPU kernel is priced from r (the machine's estimate.Current: rates measured by
// package calibrate, or estimate.Defaults before that). A GPU kernel's is the GPU kernel table's
// datasheet-based, pessimistic guess (Estimate: gpu/nvidia/ladder.go, docs/gpu-kernels.md): no GPU
// is measured for it. A kernel that will not run here (Unavailable) costs nothing.
func (k Kernel) EstimateSeconds(r *estimate.Rates, n int, dtype string, threads int) float64 {
	if k.Unavailable != "" {
		return 0 // a kernel that will not run here costs nothing
	}
	if k.Estimate != nil {
		return k.Estimate(n, dtype)
	}
	if k.F32 == nil {
		return 0
	}
	return r.KernelSeconds(k.Name, n, dtype, threads)
}

// Takes reports whether the kernel takes matrices of dtype ("float32" or "float64").
func (k Kernel) Takes(dtype string) bool {
	return len(k.DTypes) == 0 || slices.Contains(k.DTypes, dtype)
}
