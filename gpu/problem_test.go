package gpu

import (
	"context"
	"testing"

	"github.com/gpuplayground/playground/gpu/nvidia"
	"github.com/gpuplayground/playground/problems"
	pt "github.com/gpuplayground/playground/problems/problemstest"
)

// On a GPU machine: a learner's kernel for every problem, through the real worker, with its problem,
// precision and dynamic shared memory on the wire, is judged by its problem's check as in the
// virtual GPU (right ones ok, wrong ones not), with a positive time; at a large size too for the
// right ones, where a reduce's and a histogram's outputs must be zeroed before every launch.
// Build here, run there: CGO_ENABLED=0 go test -c -o build/gpu.test ./gpu; build/gpu.test -test.run GPU -test.v
func TestGPUProblems(t *testing.T) {
	requireGPU(t)
	s := realWorker(t)
	report := Probe(context.Background(), s)
	if report.Unavailable != "" {
		t.Fatal(report.Unavailable)
	}
	nv, err := nvidia.LoadNVRTC()
	if err != nil {
		t.Fatal(err)
	}
	arch, err := nv.ArchFor(report.Devices[0].ComputeCapability)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range pt.Kernels() {
		// As a cell does: compiled first (in a cell by the sandboxed Compiler), the worker gets the PTX.
		ptx, err := nvidia.CompileArch(nv, k.Source, "cell.cu", arch)
		if err != nil {
			t.Fatalf("%s: %v", k.Name, err)
		}
		p, err := problems.Lookup(k.Problem)
		if err != nil {
			t.Fatal(err)
		}
		sizes := k.Sizes
		if large := 1 << 20; k.OK && p.Name != "matmul" {
			if p.MaxN <= 8192 { // a matrix problem
				large = 4096
			}
			sizes = append(sizes, large)
		}
		for _, n := range sizes {
			res, err := Run(context.Background(), s, Request{Kernel: "custom", N: n, DType: "float32", Repeats: 3,
				PTX: ptx, Entry: "k", Block: k.Block, Grid: k.Grid(n), Problem: k.Problem, Precision: k.Precision, SharedBytes: k.Shared}, nil)
			if err != nil {
				t.Errorf("%s at n=%d: %v", k.Name, n, err)
				continue
			}
			t.Logf("%s at n=%d: %.3g s, error %g, ok %v", k.Name, n, res.Seconds, res.RelError, res.OK)
			if res.OK != k.OK || !(res.Seconds > 0) {
				t.Errorf("%s at n=%d: got ok %v (error %g), %g s; want ok %v", k.Name, n, res.OK, res.RelError, res.Seconds, k.OK)
			}
		}
	}
}
