package matmul

import (
	"testing"

	"github.com/gpuplayground/playground/cells"
	"github.com/gpuplayground/playground/gpu/nvidia"
	"github.com/gpuplayground/playground/harness"
	"github.com/gpuplayground/playground/kernels"
)

// A matmul run needs a GPU exactly when it names a GPU kernel, whether or not this machine has one.
func TestNeedsGPU(t *testing.T) {
	env := cells.Env{Kernels: append(kernels.CPU(), nvidia.GEMMs("no CUDA device (test)")...), Limits: harness.DefaultLimits()}
	for src, want := range map[string]bool{
		"kernels: [ikj, gonum]\nsizes: [8]\n":  false,
		"kernels: [ikj, cublas]\nsizes: [8]\n": true,
	} {
		r, err := New(env).Parse(cells.Cell{Source: src})
		if err != nil {
			t.Fatal(err)
		}
		if got := cells.NeedsOf(r).GPU; got != want {
			t.Errorf("%q: needs GPU %v, want %v", src, got, want)
		}
	}
}
