package builtin_test

import (
	"testing"

	"github.com/gpuplayground/playground/cells"
	"github.com/gpuplayground/playground/cells/builtin"
	"github.com/gpuplayground/playground/gpu"
	"github.com/gpuplayground/playground/gpu/nvidia"
	"github.com/gpuplayground/playground/harness"
	"github.com/gpuplayground/playground/kernels"
)

// On a machine without a GPU the simulators, models and the virtual GPU say their runs are not
// exclusive (cells.Exclusive), and the measuring kinds do not.
func TestExclusive(t *testing.T) {
	m := &gpu.Machine{}
	m.Report.Unavailable = "no GPU in this test"
	env := cells.Env{Kernels: append(kernels.CPU(), nvidia.GEMMs("no GPU in this test")...), Limits: harness.DefaultLimits(), GPU: m}
	srcs := map[string]string{
		"systolic":  "array: 4\nm: 4\nn: 4\nk: 4\nclock_mhz: 700\n",
		"allreduce": "gradient_mb: 1\ngpus: [2]\nlinks: {a: 1}\n",
		"tpu":       "m: 8\nk: 128\nn: 128\nbm: 8\nbk: 128\nbn: 128\n",
		"simt":      "kernels: [naive]\nn: 32\n",
		"matmul":    "kernels: [naive]\nsizes: [8]\n",
		"cuda":      "kernel: k\nsizes: [8]\ncompare: [cuda-naive, cublas]\n---\nk(",
	}
	want := map[string]bool{"systolic": false, "allreduce": false, "tpu": false, "simt": false, "matmul": true, "cuda": false}
	// A cuda cell compared with a CPU kernel measures that kernel here.
	cu, _ := cells.Lookup(builtin.Kinds(env), "cuda")
	if r, err := cu.Parse(cells.Cell{ID: "y", Source: "kernel: k\nsizes: [8]\ncompare: [ikj]\n---\nk("}); err != nil || !cells.Exclusive(r) {
		t.Errorf("a cuda cell compared with ikj: Exclusive false (%v), want true", err)
	}
	for _, k := range builtin.Kinds(env) {
		src, ok := srcs[k.Name()]
		if !ok {
			continue
		}
		r, err := k.Parse(cells.Cell{ID: "x", Source: src})
		if err != nil {
			t.Fatalf("%s: %v", k.Name(), err)
		}
		if got := cells.Exclusive(r); got != want[k.Name()] {
			t.Errorf("%s: Exclusive %v, want %v", k.Name(), got, want[k.Name()])
		}
	}
}

// A matmul cell is exclusive when it times something here: a CPU kernel, the CPU's peak, or kernels
// in the browser; GPU kernels alone on a server without a GPU (emulated, or noted) time nothing.
func TestMatmulExclusive(t *testing.T) {
	m := &gpu.Machine{}
	m.Report.Unavailable = "no GPU in this test"
	env := cells.Env{Kernels: append(kernels.CPU(), nvidia.GEMMs("no GPU in this test")...), Limits: harness.DefaultLimits(), GPU: m}
	k, _ := cells.Lookup(builtin.Kinds(env), "matmul")
	for src, want := range map[string]bool{
		"kernels: [cuda-naive, cuda-smem]\nsizes: [32]\n":    false,
		"kernels: [cuda-naive, cublas]\nsizes: [32]\n":       false,
		"kernels: [cuda-naive, ikj]\nsizes: [32]\n":          true,
		"kernels: [cuda-naive]\nsizes: [32]\npeak: true\n":   true,
		"kernels: [cuda-naive, webgpu-tiled]\nsizes: [32]\n": true,
	} {
		r, err := k.Parse(cells.Cell{ID: "x", Source: src})
		if err != nil {
			t.Fatalf("%q: %v", src, err)
		}
		if got := cells.Exclusive(r); got != want {
			t.Errorf("%q: Exclusive %v, want %v", src, got, want)
		}
	}
}
