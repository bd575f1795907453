package vgpurun

import (
	"context"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/gpuplayground/playground/gpu/nvidia"
	"github.com/gpuplayground/playground/gpumodel"
	"github.com/gpuplayground/playground/problems"
	pt "github.com/gpuplayground/playground/problems/problemstest"
)

// Learner-style kernels for every problem, compiled by NVRTC and by clang, run in the virtual GPU
// and are judged by their problem's check: right ones ok, wrong ones WRONG.

// compilers are the CUDA compilers installed here (each skipped where missing, required in CI).
func compilers(t *testing.T) map[string]func(src string) string {
	t.Helper()
	out := map[string]func(string) string{}
	if nv, err := nvidia.LoadNVRTC(); err == nil {
		out["nvrtc"] = func(src string) string {
			t.Helper()
			ptx, err := nvidia.CompileWith(context.Background(), nv, nil, src, "cell.cu", Arch) // as a cell compiles: with .loc lines
			if err != nil {
				t.Fatalf("nvrtc: %v", err)
			}
			return ptx
		}
	} else if os.Getenv("CI") == "true" {
		t.Fatalf("NVRTC is required in CI: %v", err)
	}
	if cl, err := nvidia.FindClang(); err == nil {
		out["clang"] = func(src string) string {
			t.Helper()
			ptx, _, err := cl.Compile(context.Background(), src, "cell.cu", Arch)
			if err != nil {
				t.Fatalf("clang: %v", err)
			}
			return ptx
		}
	} else if os.Getenv("CI") == "true" {
		t.Fatalf("clang is required in CI: %v", err)
	}
	if len(out) == 0 {
		t.Skip("skipping: neither NVRTC nor clang is installed")
	}
	return out
}

func TestLearnerKernelsPerProblem(t *testing.T) {
	for cname, compile := range compilers(t) {
		for _, k := range pt.Kernels() {
			t.Run(cname+"/"+k.Name, func(t *testing.T) {
				p, err := problems.Lookup(k.Problem)
				if err != nil {
					t.Fatal(err)
				}
				prec := problems.DefaultPrecision("float32")
				if k.Precision != "" {
					if prec, err = problems.LookupPrecision(k.Precision); err != nil {
						t.Fatal(err)
					}
				}
				ptx := compile(k.Source)
				for _, n := range k.Sizes {
					r, err := Run(context.Background(), Request{Kernel: "custom", PTX: ptx, Entry: "k", Problem: p, Precision: prec,
						Grid: k.Grid(n), Block: k.Block, SharedBytes: k.Shared, N: n, DType: "float32", GPU: gpumodel.GPUs[0]})
					if err != nil {
						t.Fatalf("n=%d: %v", n, err)
					}
					t.Logf("n=%d: error %g, tolerance %g, checked %d", n, r.RelError, r.Tolerance, r.Checked)
					if k.OK && len(r.Notes) > 0 {
						t.Errorf("n=%d: a right kernel got sanitizer notes: %v", n, r.Notes)
					}
					if r.OK != k.OK {
						t.Errorf("n=%d: got ok=%v (error %g, tolerance %g), want %v", n, r.OK, r.RelError, r.Tolerance, k.OK)
					}
					if want := "`precision: " + k.Fits + "`"; k.Fits != "" && !strings.Contains(r.PrecisionNote, want) || k.Fits == "" && r.PrecisionNote != "" {
						t.Errorf("n=%d: precision note %q, want one naming %s", n, r.PrecisionNote, k.Fits)
					}
					if want := p.InputTypes("float32"); !strings.HasPrefix(r.Precision, want) {
						t.Errorf("n=%d: inputs %q, want %q first", n, r.Precision, want)
					}
					if r.Counts.ThreadInstructions == 0 || !(r.Model.Seconds > 0) || r.RateUnit != p.Rate {
						t.Errorf("n=%d: %d thread instructions, model %+v, rate %g %s", n, r.Counts.ThreadInstructions, r.Model, r.Rate, r.RateUnit)
					}
				}
			})
		}
	}
}

// Above a problem's FullN a transpose and a softmax run sampled blocks and check what they wrote;
// a reduce, whose blocks add into one output, is refused there; a stray store names the buffer;
// extern __shared__ memory needs SharedBytes.
func TestProblemSamplingLimitsAndFaults(t *testing.T) {
	compile := compilers(t)["nvrtc"]
	if compile == nil {
		t.Skip("skipping: no NVRTC")
	}
	get := func(name string) *problems.Problem {
		t.Helper()
		p, err := problems.Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	tr, red := get("transpose"), get("reduce")
	run := func(p *problems.Problem, src string, n int, grid, block [3]int, shared int) (Result, error) {
		return Run(context.Background(), Request{Kernel: "custom", PTX: compile(src), Entry: "k", Problem: p,
			Grid: grid, Block: block, SharedBytes: shared, N: n, DType: "float32", GPU: gpumodel.GPUs[0]})
	}
	n := (tr.FullN/16 + 5) * 16 // whole tiles: the sampled blocks are random, and an edge block checks fewer entries
	r, err := run(tr, pt.NaiveTranspose, n, pt.Tiles(16)(n), [3]int{16, 16, 1}, 0)
	if err != nil || !r.OK || !r.Sampled || r.Checked != SampledBlocks*256 || r.GridBlocks != int64(pt.CeilDiv(n, 16)*pt.CeilDiv(n, 16)) {
		t.Errorf("sampled transpose at n=%d: got ok %v, sampled %v, %d checked, %d blocks, %v; want ok, %d checked", n, r.OK, r.Sampled, r.Checked, r.GridBlocks, err, SampledBlocks*256)
	}
	sm := get("softmax")
	n = sm.FullN + 1
	r, err = run(sm, pt.RowSoftmax, n, pt.RowsOf(n), [3]int{256, 1, 1}, 0)
	if err != nil || !r.OK || !r.Sampled || r.Checked != SampledBlocks*n {
		t.Errorf("sampled softmax at n=%d: got ok %v, sampled %v, %d checked, %v; want ok, %d checked (8 rows)", n, r.OK, r.Sampled, r.Checked, err, SampledBlocks*n)
	}
	reduceGrid := func(n int) [3]int { return [3]int{pt.CeilDiv(n, 512), 1, 1} }
	n = red.FullN + 1
	if _, err := run(red, pt.TreeReduce, n, reduceGrid(n), [3]int{256, 1, 1}, 1024); err == nil || !strings.Contains(err.Error(), "runs in full or not at all") {
		t.Errorf("reduce at n=%d: got %v, want the limit's error", n, err)
	}
	if _, err := run(red, pt.TreeReduce, 600, reduceGrid(600), [3]int{256, 1, 1}, 0); err == nil || !strings.Contains(err.Error(), "shared") {
		t.Errorf("extern __shared__ without shared_bytes: got %v, want a shared-memory fault", err)
	}
	stray := strings.Replace(pt.NaiveTranspose, "out[c * rows + r]", "out[c * rows + r + 1]", 1)
	// only thread (c, r) = (31, 31) stores past the end: element 1024 of the 32×32 out
	want := `past the end of buffer "out" (32×32 floats): element 1024 = row 32, col 0 (rows 0–31), byte 4096 of 4096`
	_, err = run(tr, stray, 32, pt.Tiles(16)(32), [3]int{16, 16, 1}, 0)
	if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "cell.cu:") {
		t.Errorf("a store past out: got %v, want a fault on a line of cell.cu saying %s", err, want)
	}
	// the page summarises a fault's note as faulted (static/measured.js), other errors as not run
	if got, want := Failure("custom", 32, err), "custom at n=32 faulted in the virtual GPU: out of bounds: "; !strings.HasPrefix(got, want) {
		t.Errorf("got %q, want it to start %q", got, want)
	}
	if got, want := Failure("custom", 8192, TooLarge(tr, 8192)), "custom at n=8192, in the virtual GPU: n=8192 is over"; !strings.HasPrefix(got, want) {
		t.Errorf("got %q, want it to start %q", got, want)
	}
}

// A kernel whose parameters are not its problem's is told the problem's signature.
func TestProblemSignatureMismatch(t *testing.T) {
	compile := compilers(t)["nvrtc"]
	if compile == nil {
		t.Skip("skipping: no NVRTC")
	}
	_, err := Run(context.Background(), Request{Kernel: "custom", PTX: compile(pt.NaiveTranspose), Entry: "k",
		Grid: [3]int{2, 2, 1}, Block: [3]int{16, 16, 1}, N: 32, DType: "float32", GPU: gpumodel.GPUs[0]})
	want := `k takes 4 parameters; a matmul kernel takes 6: extern "C" __global__ void k(const float* A, const float* B, float* C, int M, int N, int K) (is ` + "`problem:`" + ` right?)`
	if err == nil || err.Error() != want {
		t.Errorf("got %v, want %s", err, want)
	}
}

// nvrtcTranspose is NVRTC's compile (the test skipped where it is missing) and the transpose problem.
func nvrtcTranspose(t *testing.T) (func(src string) string, *problems.Problem) {
	t.Helper()
	compile := compilers(t)["nvrtc"]
	if compile == nil {
		t.Skip("skipping: no NVRTC")
	}
	tr, err := problems.Lookup("transpose")
	if err != nil {
		t.Fatal(err)
	}
	return compile, tr
}

// A kernel that leaves an output entry unwritten (it keeps the poison, NaN) or writes an Inf has
// that as its error, NaN or Inf: never a number such as 1.80e+308 (the emulated table's row says
// so and encodes as JSON: cells/shared/kernelcell's TestEmulatedRowOfNonFiniteError).
func TestNonFiniteErrorShowsAsNaN(t *testing.T) {
	compile, tr := nvrtcTranspose(t)
	for _, tt := range []struct{ name, from, to, want string }{
		{"unwritten", "if (r < rows && c < cols)", "if (r < rows && c < cols && r + c > 0)", "NaN"},
		{"infinite", "= in[r * cols + c]", "= (r + c > 0) ? in[r * cols + c] : 1.0f / 0.0f", "Inf"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			src := strings.Replace(pt.NaiveTranspose, tt.from, tt.to, 1)
			r, err := Run(context.Background(), Request{Kernel: "custom", PTX: compile(src), Entry: "k", Problem: tr,
				Grid: [3]int{2, 2, 1}, Block: [3]int{16, 16, 1}, N: 32, DType: "float32", GPU: gpumodel.GPUs[0]})
			if err != nil {
				t.Fatal(err)
			}
			got := map[bool]string{true: "NaN"}[math.IsNaN(r.RelError)] + map[bool]string{true: "Inf"}[math.IsInf(r.RelError, 0)]
			if got != tt.want || r.OK {
				t.Errorf("got rel. error %v (ok %v), want %q, not ok", r.RelError, r.OK, tt.want)
			}
		})
	}
}
