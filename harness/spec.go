// Package harness is the harness that times GEMM kernels: for a Spec it draws fresh random
// inputs, computes a float64 reference, and per kernel and size runs a warm-up and timed repeats,
// checks the result and streams it to a Sink as it is measured. Cell kinds (package cells) parse
// their sources into a Spec.
package harness

import (
	"time"

	"github.com/gpuplayground/playground/estimate"
	"github.com/gpuplayground/playground/kernels"
)

// Spec is what one run measures: every kernel at every size.
type Spec struct {
	// Kernels are kernel names in the order given.
	Kernels []string `json:"kernels"`
	// Sizes are the n of square n×n×n products, in the order given.
	Sizes []int `json:"sizes"`
	// DType is "float32" or "float64".
	DType string `json:"dtype"`
	// Repeats is the number of timed runs per point, after one warm-up run.
	Repeats int `json:"repeats"`
	// Threads is the goroutine count for the parallel kernels.
	Threads int `json:"threads"`
	// Transfers adds host→device and device→host copy times to GPU results (PCIe cost); CPU
	// kernels have no copies.
	Transfers bool `json:"transfers"`
}

// Limits bound what one run may ask for.
type Limits struct {
	// MaxN is the largest allowed matrix size n.
	MaxN int
	// GPUMaxN is the largest n for a cell whose kernels all run on the GPU (no CPU kernel and no CPU
	// reference at that size); 0 means MaxN.
	GPUMaxN int
	// MemoryBytes bounds the bytes of the three matrices A, B and C of the largest size. The run also
	// holds a float64 reference (and float64 copies of A and B for float32 runs), not counted here.
	MemoryBytes int64
	// RunTimeout is the run time limit; a spec whose estimated time exceeds it is refused.
	RunTimeout time.Duration
}

// DefaultLimits are the server's defaults, the one place they are written: n ≤ 4096 (8192 for
// GPU-only cells), 1 GiB, 120 s.
func DefaultLimits() Limits {
	return Limits{MaxN: 4096, GPUMaxN: 8192, MemoryBytes: 1 << 30, RunTimeout: 120 * time.Second}
}

// WithDefaults fills the zero fields of l from DefaultLimits; GPUMaxN is at least MaxN.
func (l Limits) WithDefaults() Limits {
	def := DefaultLimits()
	if l.MaxN <= 0 {
		l.MaxN = def.MaxN
	}
	if l.GPUMaxN <= 0 {
		l.GPUMaxN = def.GPUMaxN
	}
	l.GPUMaxN = max(l.GPUMaxN, l.MaxN)
	if l.MemoryBytes <= 0 {
		l.MemoryBytes = def.MemoryBytes
	}
	if l.RunTimeout <= 0 {
		l.RunTimeout = def.RunTimeout
	}
	return l
}

// ElemBytes is the size of one matrix element in bytes (4 or 8).
func (s Spec) ElemBytes() int {
	if s.DType == "float64" {
		return 8
	}
	return 4
}

// AllOnGPU reports whether every kernel named is a GPU kernel.
func AllOnGPU(available []kernels.Kernel, names []string) bool {
	for _, name := range names {
		if k, _ := kernels.Lookup(available, name); !k.OnGPU {
			return false
		}
	}
	return true
}

// EstimateSeconds is a guess of the whole run's duration in seconds, made before running and never
// shown as a measurement: per size, for CPU kernels the fresh inputs, each kernel's NaN poisoning and
// check, and the float64 reference; then a warm-up and Repeats timed calls of every kernel, and
// the cost of each result (a GC, a row, a chart: estimate.Rates.PointSeconds), all priced from rates
// (kernels.Kernel.EstimateSeconds: CPU kernels from the rates measured on this machine, GPU kernels from
// the table's datasheet-based guesses).
func (s Spec) EstimateSeconds(available []kernels.Kernel, rates *estimate.Rates) float64 {
	ref, _ := kernels.Lookup(kernels.CPU(), "gonum")
	cpu := !AllOnGPU(available, s.Kernels) // GPU kernels check their results on the GPU machine
	total := 0.0
	for _, n := range s.Sizes {
		if cpu {
			total += ref.EstimateSeconds(rates, n, "float64", 0) // the float64 reference
			// inputs (A, B and their float64 copies), then per kernel C poisoned and checked
			total += rates.FillSeconds(n * n * (4 + 2*len(s.Kernels)))
		}
		for _, name := range s.Kernels {
			if k, ok := kernels.Lookup(available, name); ok {
				total += float64(s.Repeats+1)*k.EstimateSeconds(rates, n, s.DType, s.Threads) + rates.PointSeconds
			}
		}
	}
	return total
}
