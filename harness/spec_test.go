package harness

import (
	"math"
	"testing"

	"github.com/gpuplayground/playground/estimate"
	"github.com/gpuplayground/playground/gpu/nvidia"
	"github.com/gpuplayground/playground/kernels"
)

// A run's estimate adds, per size, the float64 reference, the inputs and checks, a warm-up and the
// repeats of each kernel, and each result's cost, all at the installed (measured) rates; GPU-only
// cells need no reference or inputs here.
func TestEstimateFromRates(t *testing.T) {
	rates := &estimate.Rates{Procs: 1, FillNs: 1, PointSeconds: 0.5, Kernels: map[string][]estimate.Point{
		"gonum/float64": {{N: 10, SPF: 1e-6}},
		"ikj/float32":   {{N: 10, SPF: 1e-5}},
	}}
	s := Spec{Kernels: []string{"ikj"}, Sizes: []int{10}, DType: "float32", Repeats: 2, Threads: 1}
	want := 1e-6*1000 + 1e-9*100*(4+2) + 3*1e-5*1000 + 0.5
	if got := s.EstimateSeconds(kernels.CPU(), rates); math.Abs(got-want) > 1e-12 {
		t.Errorf("estimate %g s, want %g", got, want)
	}
	gpu := nvidia.GEMMs("")
	g := Spec{Kernels: []string{gpu[0].Name}, Sizes: []int{10}, DType: "float32", Repeats: 2}
	if got, want := g.EstimateSeconds(gpu, rates), 3*gpu[0].EstimateSeconds(rates, 10, "float32", 0)+0.5; math.Abs(got-want) > 1e-12 {
		t.Errorf("GPU-only estimate %g s, want %g", got, want)
	}
}
