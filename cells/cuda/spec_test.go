package cuda

import (
	"errors"
	"strings"
	"testing"

	"github.com/gpuplayground/playground/cells"
	"github.com/gpuplayground/playground/cells/shared/kernelcell"
	"github.com/gpuplayground/playground/cells/shared/launch"
	"github.com/gpuplayground/playground/gpu/nvidia"
	"github.com/gpuplayground/playground/harness"
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
	return append(kernels.CPU(), nvidia.GEMMs("no CUDA device (test)")...)
}

func TestParse(t *testing.T) {
	s, err := Parse(cudaCell, gpuAvailable(), harness.DefaultLimits())
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
		{"too many registers", replace("sizes:", "registers: 256\nsizes:"), 4, "registers is 256; a thread may have 1 to 255"},
		{"no registers", replace("sizes:", "registers: 0\nsizes:"), 4, "registers is 0; a thread may have 1 to 255"},
		{"grid overflow", replace(`"ceil(n/16)", "ceil(n/16)"`, `"n*n*n*n*n*n*n*n*n*n"`), 3, `grid formula "n*n*n*n*n*n*n*n*n*n" for n=100: a value overflows 64-bit integers`},
		{"grid division by zero", replace(`"ceil(n/16)", "ceil(n/16)"`, `"1+n/(n-100)"`), 3, `grid formula "1+n/(n-100)" for n=100: division by zero`},
		{"grid remainder by zero", replace(`"ceil(n/16)", "ceil(n/16)"`, `"1 + n%(n-100)"`), 3, `grid formula "1 + n%(n-100)" for n=100: division by zero`},
		{"grid y over CUDA's limit", replace(`"ceil(n/16)", "ceil(n/16)"`, `"1", "n*n"`), 3, `grid formula "n*n" gives 65536 blocks for n=256; CUDA allows 1 to 65535`},
		{"grid zero blocks", replace(`"ceil(n/16)", "ceil(n/16)"`, `"floor(n/128)"`), 3, `gives 0 blocks for n=100; CUDA allows 1 to 2147483647`},
		{"grid four formulas", replace(`"ceil(n/16)", "ceil(n/16)"`, `"1", "1", "1", "1"`), 3, "grid has 4 formulas; give 1 to 3"},
		{"grid of expr-lang", replace(`"ceil(n/16)", "ceil(n/16)"`, `"len(repeat('x', n))"`), 3, `unknown name "len"`},
		{"grid formula too long", replace(`"ceil(n/16)", "ceil(n/16)"`, `"n`+strings.Repeat("+0", 100)+`"`), 3, "a formula is at most 200 bytes"},
		{"grid nested too deep", replace(`"ceil(n/16)", "ceil(n/16)"`, `"`+strings.Repeat("(", 17)+"n"+strings.Repeat(")", 17)+`"`), 3, "nested more than 16 deep"},
		{"grid formula line, block style", replace(`grid: ["ceil(n/16)", "ceil(n/16)"]`, "grid:\n  - ceil(n/16)\n  - n/16"), 5, `grid formula "n/16" gives 6.25 for n=100, not a whole number`},
		{"include of a server file", replace("    C[0] = A[0] * B[0];\n", "    C[0] = A[0] * B[0];\n#include \"/etc/passwd\"\n"), 9, `#include "/etc/passwd" is not allowed`},
		{"has_include", replace("extern", "#if __has_include(</etc/shadow>)\n#endif\nextern"), 7, "__has_include is not allowed"},
		{"too many sizes", replace("[100, 256]", "["+strings.Repeat("1, ", 32)+"2]"), 4, "33 sizes; a cell takes at most 32"},
		{"too many compared", replace("[cublas]", "["+strings.Repeat("cublas, ", 32)+"cublas]"), 5, "33 kernels listed; a cell lists at most 32"},
		{"kernel name too long", replace("kernel: my_mm", "kernel: "+strings.Repeat("k", 300)), 1, "a key or value of 300 bytes is too long; a cell's keys and values are at most 256 bytes"},
		{"alias", replace("sizes: [100, 256]", "sizes: &s [100, 256]\nrepeats: *s"), 5, "YAML aliases (*s) are not allowed"},
		{"source too long", cudaCell + strings.Repeat("// comment\n", 3000), 7, "a cuda cell's source is at most 32768 bytes"},
		{"header too long", replace("kernel:", strings.Repeat("#\n", 9000)+"kernel:"), 0, "a cell's YAML is at most 16384 bytes"},
		{"unknown problem", replace("sizes:", "problem: sort\nsizes:"), 4, `unknown problem "sort"; use one of matmul, transpose, reduce, histogram, softmax, scan`},
		{"unknown precision", replace("sizes:", "precision: fp8\nsizes:"), 4, `unknown precision "fp8"; use one of fp32, tf32, bf16, fp16`},
		{"bad shared formula", replace("sizes:", "shared_bytes: \"n*\"\nsizes:"), 4, `shared_bytes formula "n*"`},
		{"shared over 48 KiB", replace("sizes: [100, 256]", "shared_bytes: \"n*8\"\nsizes: [100, 8000]"), 4, `shared_bytes formula "n*8" gives 64000 bytes for n=8000; a block may have 0 to 49152 bytes`},
		{"shared fraction", replace("sizes:", "shared_bytes: \"n/3\"\nsizes:"), 4, "not a whole number of bytes"},
		{"compare beside a transpose", replace("sizes:", "problem: transpose\nsizes:"), 6, "compare times other matrix-multiply kernels; a transpose cell compares with none"},
		{"reduce over its limit", strings.NewReplacer("compare: [cublas]\n", "", "sizes: [100, 256]", "problem: reduce\nsizes: [100, 100000000]").Replace(cudaCell), 5, "size 100000000 is over the limit of 16777216 for reduce"},
		{"reduce twice", strings.NewReplacer("compare: [cublas]\n", "", "sizes: [100, 256]", "problem: reduce\nsizes: [100, 100]").Replace(cudaCell), 5, "size 100 is listed twice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse(tt.cell, gpuAvailable(), harness.DefaultLimits())
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

// The show: key names columns of the emulated or results table; another name is an error listing them.
func TestParseShow(t *testing.T) {
	src := strings.Replace(cudaCell, "compare: [cublas]\n", "compare: [cublas]\nshow: [occupancy, modelled, rel. error]\n", 1)
	s, err := Parse(src, gpuAvailable(), harness.DefaultLimits())
	if err != nil || strings.Join(s.Show, ",") != "occupancy,modelled,rel. error" {
		t.Fatalf("got %v, %v", s.Show, err)
	}
	src = strings.Replace(cudaCell, "compare: [cublas]\n", "compare: [cublas]\nshow: [occupancy, speed]\n", 1)
	_, err = Parse(src, gpuAvailable(), harness.DefaultLimits())
	if err == nil || !strings.Contains(err.Error(), `line 6: show: no column "speed"; the columns are kernel, n, dtype, median,`) || !strings.Contains(err.Error(), "occupancy") {
		t.Errorf("got %v", err)
	}
}

func FuzzParseCUDA(f *testing.F) {
	f.Add(cudaCell)
	f.Add("kernel: k\ngrid: [\"n*n*n*n\"]\nsizes: [4096]\n---\nk(")
	f.Add("kernel: k\ngrid: [\"n/(n-64)\", \"-n%3\", \"max(1, floor(n/3))\"]\nsizes: [64, 65]\n---\nk(")
	f.Add("kernel: k\ngrid:\n  - ceil(n/32)\n  - min(n, 65535)\nsizes: [1, 2, 3]\n---\nk(")
	f.Add("kernel: k\ngrid: [\"replace(replace(repeat('x', 1000000), 'x', repeat('y', 1000)), 'y', 'zz')\"]\nsizes: [64]\n---\nk(")
	f.Add("kernel: k\nsizes: &s [1, 2]\ncompare: *s\n---\nk(")
	f.Add("kernel: k\nsizes: [" + strings.Repeat("1, ", 40) + "1]\n---\nk(")
	f.Add("kernel: k\nproblem: scan\nprecision: fp16\nshared_bytes: \"n*4\"\nsizes: [1, 12288, 12289]\n---\nk(")
	f.Add("kernel: k\nproblem: histogram\ndtype: float64\nshared_bytes: \"1024-n\"\nsizes: [1024, 1025]\n---\nk(")
	f.Fuzz(func(t *testing.T, cell string) {
		s, err := Parse(cell, gpuAvailable(), harness.DefaultLimits())
		if err != nil {
			return
		}
		if len(s.Sizes) > kernelcell.MaxSizes || len(s.Compare) > kernelcell.MaxKernels || len(s.Source) > MaxSourceBytes || len(s.Kernel) > cells.MaxValueBytes {
			t.Fatalf("accepted %d sizes, %d compared kernels, %d bytes of source, a kernel name of %d bytes", len(s.Sizes), len(s.Compare), len(s.Source), len(s.Kernel))
		}
		for i, f := range s.Grid.Src {
			if len(f) > launch.MaxFormulaBytes || (s.Grid.Formula(i) != nil && s.Grid.Formula(i).String() != f) {
				t.Fatalf("grid formula %d: %q, parsed as %v", i, f, s.Grid.Formula(i))
			}
		}
		for _, n := range s.Sizes {
			g, err := s.GridFor(n)
			if err != nil || g[0] < 1 || g[1] < 1 || g[2] < 1 || g[0] > maxGridX || g[1] > maxGridYZ || g[2] > maxGridYZ {
				t.Fatalf("accepted a spec whose grid fails for n=%d: %v %v", n, g, err)
			}
		}
		if s.Problem == nil || s.Precision.Bits == 0 || (s.Problem.Name != "matmul" && len(s.Compare) > 0) {
			t.Fatalf("accepted problem %v, precision %+v, compare %v", s.Problem, s.Precision, s.Compare)
		}
		for _, n := range s.Sizes {
			if sh, err := s.SharedFor(n); err != nil || sh < 0 || sh > MaxSharedBytes || n > s.Problem.MaxN {
				t.Fatalf("accepted n=%d for %s (at most %d) with %d bytes of shared memory (%v)", n, s.Problem.Name, s.Problem.MaxN, sh, err)
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
	if _, err := Parse(cell, available, harness.DefaultLimits()); err != nil {
		t.Errorf("cuda cell comparing with cublas at 8192: %v", err)
	}
	cell = strings.Replace(cell, "[cublas]", "[cublas, gonum]", 1)
	if _, err := Parse(cell, available, harness.DefaultLimits()); err == nil || !strings.Contains(err.Error(), "cells with CPU kernels") {
		t.Errorf("cuda cell comparing with gonum at 8192: got %v, want the CPU limit", err)
	}
}

// problem, precision and shared_bytes: a reduce cell takes vector sizes beyond matmul's limit, its
// precision and its dynamic shared memory per size; a cell without them is a float32 matmul with
// none.
func TestParseProblemKeys(t *testing.T) {
	cell := `kernel: red
problem: reduce
precision: bf16
block: [256]
grid: ["ceil(n/512)"]
shared_bytes: "256*4 + n%2*4"
sizes: [1000001, 1048576]
---
extern "C" __global__ void red(const float* in, float* out, int n) { extern __shared__ float s[]; }
`
	s, err := Parse(cell, gpuAvailable(), harness.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	if s.Problem.Name != "reduce" || s.Precision.Name != "bf16" || s.Precision.U() != 1.0/256 {
		t.Errorf("got problem %s, precision %+v; want reduce, bf16 with u = 2^-8", s.Problem.Name, s.Precision)
	}
	for n, want := range map[int]int{1000001: 1028, 1048576: 1024} {
		if got, err := s.SharedFor(n); err != nil || got != want {
			t.Errorf("SharedFor(%d) = %d, %v; want %d", n, got, err, want)
		}
	}
	s, err = Parse(cudaCell, gpuAvailable(), harness.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	if got, err := s.SharedFor(256); s.Problem.Name != "matmul" || s.Precision.Name != "fp32" || got != 0 || err != nil {
		t.Errorf("defaults: got problem %s, precision %s, shared %d (%v); want matmul, fp32, 0", s.Problem.Name, s.Precision.Name, got, err)
	}
}
