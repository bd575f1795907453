// Package harness is the harness that times GEMM kernels: for a Spec it draws fresh random
// inputs, computes a float64 reference, and per kernel and size runs a warm-up and timed repeats,
// checks the result and streams it to a Sink as it is measured. Cell kinds (package cells) parse
// their sources into a Spec.
package harness

import (
	"github.com/gpuplayground/playground/estimate"
	"github.com/gpuplayground/playground/kernels"
	"github.com/gpuplayground/playground/measure"
)

// Limits bound what one run may ask for (measure.Limits).
type Limits = measure.Limits

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

// DefaultLimits are the server's defaults (measure.DefaultLimits): n ≤ 4096 (8192 for GPU-only
// cells), 1 GiB, 120 s.
func DefaultLimits() Limits { return measure.DefaultLimits() }

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
