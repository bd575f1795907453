// Package kernels holds the CPU matrix-multiply (GEMM) kernels that lessons time, from the naive triple
// loop to gonum's BLAS, all computing C = A·B on row-major matrices.
//
// Every kernel has the same contract: a is m×k, b is k×n and c is m×n, all row-major and densely packed
// (leading dimension equals the column count); c is overwritten. A kernel checks ctx at least once per
// block of rows and returns ctx.Err() (wrapped by nothing) as soon as it sees cancellation, leaving c
// partially written.
package kernels

import (
	"fmt"
	"runtime"
	"strings"

	"github.com/gpuplayground/playground/measure"
	"github.com/gpuplayground/playground/numeric"
)

// Float is the element type of a matrix: float32 or float64 (numeric.Float).
type Float = numeric.Float

// Options tune a kernel call (measure.Options). The zero value is valid.
type Options = measure.Options

// threads is the goroutine count o asks for: o.Threads, or runtime.GOMAXPROCS(0) when it is 0.
func threads(o Options) int {
	if o.Threads > 0 {
		return o.Threads
	}
	return runtime.GOMAXPROCS(0)
}

// Func is one kernel for element type T (measure.Func): it computes c = a·b with a m×k, b k×n,
// c m×n, row-major, and returns ctx.Err() if cancelled before finishing.
type Func[T Float] = measure.Func[T]

// Kernel is a named GEMM implementation (measure.Kernel): CPU kernels run here, GPU kernels in the
// GPU worker.
type Kernel = measure.Kernel

// FLOPs is the floating-point operation count of an m×k by k×n product: 2·m·n·k (one multiply and one
// add per term).
func FLOPs(m, n, k int) float64 { return 2 * float64(m) * float64(n) * float64(k) }

// CPU returns the CPU kernels in ladder order: naive, ikj, tiled, parallel, gonum, packed, simd,
// simd-parallel.
func CPU() []Kernel {
	return []Kernel{
		{Name: "naive", Summary: "textbook i-j-k triple loop; walks B down a column",
			F32: Naive[float32], F64: Naive[float64]},
		{Name: "ikj", Summary: "loop interchange: the inner loop streams a row of B and a row of C",
			F32: IKJ[float32], F64: IKJ[float64]},
		{Name: "tiled", Summary: "cache blocking: multiply tiles that stay in L1/L2",
			F32: Tiled[float32], F64: Tiled[float64]},
		{Name: "parallel", Summary: "the tiled kernel with row blocks shared among goroutines",
			F32: Parallel[float32], F64: Parallel[float64]},
		{Name: "gonum", Summary: "gonum's pure-Go BLAS (Sgemm/Dgemm), the reference",
			F32: Gonum[float32], F64: Gonum[float64]},
		{Name: "packed", Summary: "A and B packed into contiguous panels, a 4×4 register tile in Go",
			F32: Packed[float32], F64: Packed[float64]},
		{Name: "simd", Summary: "packing plus an assembly micro-kernel (AVX2+FMA or AVX-512) on one core",
			F32: SIMD[float32], F64: SIMD[float64]},
		{Name: "simd-parallel", Summary: "the simd kernel with blocks of A shared among all cores",
			F32: SIMDParallel[float32], F64: SIMDParallel[float64]},
	}
}

// Lookup finds a kernel by name among ks.
func Lookup(ks []Kernel, name string) (Kernel, bool) {
	for _, k := range ks {
		if k.Name == name {
			return k, true
		}
	}
	return Kernel{}, false
}

// Names lists the kernels' names, sorted in ladder order as given, joined by ", ".
func Names(ks []Kernel) string {
	names := make([]string, len(ks))
	for i, k := range ks {
		names[i] = k.Name
	}
	return strings.Join(names, ", ")
}

// checkDims panics on inconsistent slice lengths: it is a programming error, not user input.
func checkDims[T Float](c, a, b []T, m, n, k int) {
	if m < 0 || n < 0 || k < 0 || len(a) < m*k || len(b) < k*n || len(c) < m*n {
		panic(fmt.Sprintf("kernels: bad shapes m=%d n=%d k=%d len(a)=%d len(b)=%d len(c)=%d",
			m, n, k, len(a), len(b), len(c)))
	}
}
