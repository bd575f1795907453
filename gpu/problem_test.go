package gpu

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/gpuplayground/playground/gpu/nvidia"
	"github.com/gpuplayground/playground/problems"
	pt "github.com/gpuplayground/playground/problems/problemstest"
)

// On a GPU machine: a learner's kernel for every problem, through the real worker, with its problem,
// precision and dynamic shared memory on the wire, is judged by its problem's check as in the
// virtual GPU (right ones ok, wrong ones not), with a positive time; at a large size too for the
// right ones, where a reduce's and a histogram's outputs must be zeroed before every launch and
// attention's (n = 4096) and matmul's are checked on a sample (checkEntries).
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

// The worker checks every entry where a problem's full reference is affordable and a random sample
// where it is not, so that a learner's attention kernel at n = 4096 (its MaxN) is judged rather than
// refused (the H200 run of 2026-11-26 found it refused above 512); the sample still catches a wrong
// output.
func TestCheckEntries(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for _, p := range problems.All() {
		size := p.Buffers[p.Out()].Len(p.MaxN)
		which := checkEntries(p, p.MaxN, size, rng)
		if got, want := which != nil, p.SampledCheck(p.MaxN); got != want {
			t.Errorf("%s at n=%d: got a sample %v, want %v", p.Name, p.MaxN, got, want)
		}
		for _, i := range which {
			if i < 0 || i >= size {
				t.Fatalf("%s at n=%d: entry %d outside [0, %d)", p.Name, p.MaxN, i, size)
			}
		}
		if which := checkEntries(p, 512, p.Buffers[p.Out()].Len(512), rng); which != nil {
			t.Errorf("%s at n=512: got a sample of %d, want every entry checked", p.Name, len(which))
		}
	}
	p, err := problems.Lookup("attention")
	if err != nil {
		t.Fatal(err)
	}
	n := 1024
	host := p.Inputs(rng, n, "float32")
	got := make([]float64, p.Buffers[p.Out()].Len(n)) // all zeros: wrong
	which := checkEntries(p, n, len(got), rng)
	v, err := p.Check(context.Background(), n, host, got, which, problems.DefaultPrecision("float32"), "float32")
	if err != nil || v.OK || v.Checked != sampledEntries || v.Err != 1 {
		t.Errorf("zeros for attention at n=%d: got %+v, %v; want not ok, error 1 over %d entries", n, v, err, sampledEntries)
	}
}
