package cuda

import (
	"errors"
	"strings"
	"testing"

	"github.com/gpuplayground/playground/cells"
	"github.com/gpuplayground/playground/experiment"
	"github.com/gpuplayground/playground/kernels"
)

const cudaCell = `kernel: my_mm
block: [16, 16]
grid: ["ceil(n/16)", "ceil(n/16)"]
sizes: [100, 256]
compare: [cublas]
---
extern "C" __global__ void my_mm(const float* A, const float* B, float* C, int M, int N, int K) {
    C[0] = A[0] * B[0];
}
`

func gpuAvailable() []kernels.Kernel {
	return append(kernels.CPU(), kernels.GPU("no CUDA device (test)")...)
}

func TestParse(t *testing.T) {
	s, err := Parse(cudaCell, gpuAvailable(), experiment.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	if s.Kernel != "my_mm" || s.Block != [3]int{16, 16, 1} || s.DType != "float32" || s.Repeats != 5 ||
		s.SourceLine != 7 || !strings.HasPrefix(s.Source, `extern "C"`) || s.Compare[0] != "cublas" {
		t.Errorf("got %+v", s)
	}
	for n, want := range map[int][3]int{100: {7, 7, 1}, 256: {16, 16, 1}} {
		if got, err := s.GridFor(n); err != nil || got != want {
			t.Errorf("GridFor(%d) = %v, %v; want %v", n, got, err, want)
		}
	}
}

func TestParseCUDAErrors(t *testing.T) {
	replace := func(old, new string) string { return strings.Replace(cudaCell, old, new, 1) }
	tests := []struct {
		name, cell string
		line       int
		want       string
	}{
		{"no separator", strings.Replace(cudaCell, "---\n", "", 1), 0, "no `---` line"},
		{"unknown key", replace("sizes:", "threads: 4\nsizes:"), 4, `unknown key "threads"`},
		{"no kernel", replace("kernel: my_mm\n", ""), 1, "needs `kernel: NAME`"},
		{"bad name", replace("kernel: my_mm", "kernel: my-mm"), 1, "not a C function name"},
		{"kernel not in source", replace("kernel: my_mm", "kernel: other"), 7, "no function other("},
		{"block too big", replace("[16, 16]", "[64, 32]"), 2, "2048 threads is too many"},
		{"block zero", replace("[16, 16]", "[0, 16]"), 2, "at least 1"},
		{"bad formula", replace(`"ceil(n/16)", "ceil(n/16)"`, `"ceil(n/16"`), 3, "grid formula"},
		{"fractional grid", replace(`"ceil(n/16)", "ceil(n/16)"`, `"(n+15)/16"`), 3, "not a whole number"},
		{"unknown compare", replace("[cublas]", "[cutlass]"), 5, `unknown kernel "cutlass"`},
		{"size over limit", replace("[100, 256]", "[100, 9000]"), 4, "over the limit"},
		{"bad dtype", replace("sizes:", "dtype: half\nsizes:"), 4, `unknown dtype "half"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse(tt.cell, gpuAvailable(), experiment.DefaultLimits())
			var se *cells.SpecError
			if !errors.As(err, &se) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want a *cells.SpecError mentioning %q", err, tt.want)
			}
			if tt.line != 0 && se.Line != tt.line {
				t.Errorf("got line %d, want %d (%v)", se.Line, tt.line, err)
			}
		})
	}
}

func FuzzParseCUDA(f *testing.F) {
	f.Add(cudaCell)
	f.Add("kernel: k\ngrid: [\"n*n*n*n\"]\nsizes: [4096]\n---\nk(")
	f.Fuzz(func(t *testing.T, cell string) {
		s, err := Parse(cell, gpuAvailable(), experiment.DefaultLimits())
		if err != nil {
			return
		}
		for _, n := range s.Sizes {
			g, err := s.GridFor(n)
			if err != nil || g[0] < 1 || g[1] < 1 || g[2] < 1 {
				t.Fatalf("accepted a spec whose grid fails for n=%d: %v %v", n, g, err)
			}
		}
		if s.Block[0]*s.Block[1]*s.Block[2] > maxThreadsPerBlock {
			t.Fatalf("accepted block %v", s.Block)
		}
	})
}

// A cuda cell compared only with GPU kernels may go to GPUMaxN; one compared with a CPU kernel keeps
// MaxN.
func TestGPUSizeLimit(t *testing.T) {
	available := gpuAvailable()
	cell := strings.Replace(cudaCell, "[100, 256]", "[100, 8192]", 1)
	if _, err := Parse(cell, available, experiment.DefaultLimits()); err != nil {
		t.Errorf("cuda cell comparing with cublas at 8192: %v", err)
	}
	cell = strings.Replace(cell, "[cublas]", "[cublas, gonum]", 1)
	if _, err := Parse(cell, available, experiment.DefaultLimits()); err == nil || !strings.Contains(err.Error(), "cells with CPU kernels") {
		t.Errorf("cuda cell comparing with gonum at 8192: got %v, want the CPU limit", err)
	}
}
