package kernelcell

import (
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/gpuplayground/playground/cells"
	"github.com/gpuplayground/playground/cells/shared/webgpu"
	"github.com/gpuplayground/playground/estimate"
	"github.com/gpuplayground/playground/gpu/nvidia"
	"github.com/gpuplayground/playground/harness"
	"github.com/gpuplayground/playground/kernels"
)

func TestParseValid(t *testing.T) {
	got, err := Parse("kernels: [naive, gonum]   # two\nsizes: [64, 128]\ndtype: float64\nrepeats: 3\nthreads: 2\ntransfers: true\n",
		kernels.CPU(), harness.DefaultLimits(), estimate.Defaults())
	if err != nil {
		t.Fatal(err)
	}
	want := harness.Spec{Kernels: []string{"naive", "gonum"}, Sizes: []int{64, 128}, DType: "float64", Repeats: 3, Threads: 2}
	if strings.Join(got.Kernels, ",") != strings.Join(want.Kernels, ",") || len(got.Sizes) != 2 ||
		got.Sizes[1] != 128 || got.DType != want.DType || got.Repeats != want.Repeats || got.Threads != want.Threads || !got.Transfers {
		t.Errorf("got %+v, want %+v", got, want)
	}
}

func TestParseDefaults(t *testing.T) {
	got, err := Parse("kernels: [ikj]\nsizes: [8]", kernels.CPU(), harness.DefaultLimits(), estimate.Defaults())
	if err != nil {
		t.Fatal(err)
	}
	if got.DType != "float32" || got.Repeats != 5 || got.Threads != runtime.GOMAXPROCS(0) {
		t.Errorf("got %+v, want float32, 5 repeats, GOMAXPROCS threads", got)
	}
}

func TestParseErrors(t *testing.T) {
	small := harness.Limits{MaxN: 4096, MemoryBytes: 1 << 20, RunTimeout: 120 * time.Second}
	tests := []struct {
		name, src string
		lim       harness.Limits
		line      int
		want      []string // substrings of the message
	}{
		{"yaml syntax", "kernels: [naive\nsizes: [1]", harness.DefaultLimits(), 0, []string{"YAML"}},
		{"tab indentation", "kernels: [naive]\nsizes: [8]\n\tdtype: x", harness.DefaultLimits(), 3, []string{"YAML"}},
		{"empty", "", harness.DefaultLimits(), 0, []string{"empty"}},
		{"not a mapping", "- naive", harness.DefaultLimits(), 1, []string{"mapping"}},
		{"unknown key", "kernels: [naive]\nsizes: [8]\nsize: 3", harness.DefaultLimits(), 3, []string{`unknown key "size"`, "sizes"}},
		{"unknown kernel", "kernels: [naive, fast]\nsizes: [8]", harness.DefaultLimits(), 1, []string{`unknown kernel "fast"`, "naive, ikj, tiled, parallel, gonum"}},
		{"no kernels", "sizes: [8]", harness.DefaultLimits(), 0, []string{"no kernels"}},
		{"duplicate kernel", "kernels: [ikj, ikj]\nsizes: [8]", harness.DefaultLimits(), 1, []string{"twice"}},
		{"kernels not a list", "kernels: 3\nsizes: [8]", harness.DefaultLimits(), 1, []string{"expected a list of names, got 3"}},
		{"unknown dtype", "kernels: [ikj]\nsizes: [8]\ndtype: float16", harness.DefaultLimits(), 3, []string{`unknown dtype "float16"`, "float32 or float64"}},
		{"n < 1", "kernels: [ikj]\nsizes: [8, 0]", harness.DefaultLimits(), 2, []string{"at least 1"}},
		{"n over limit", "kernels: [ikj]\nsizes: [\n 8,\n 5000]", harness.DefaultLimits(), 4, []string{"over the limit of 4096"}},
		{"n not a number", "kernels: [ikj]\nsizes: [big]", harness.DefaultLimits(), 2, []string{"expected a whole number, got big"}},
		{"no sizes", "kernels: [ikj]", harness.DefaultLimits(), 0, []string{"no sizes"}},
		{"duplicate size", "kernels: [ikj]\nsizes: [8, 8]", harness.DefaultLimits(), 2, []string{"listed twice"}},
		{"memory", "kernels: [ikj]\nsizes: [512]\ndtype: float64", small, 2, []string{"6 MiB", "memory budget of 1 MiB", "float32"}},
		{"repeats", "kernels: [ikj]\nsizes: [8]\nrepeats: 0", harness.DefaultLimits(), 3, []string{"repeats is 0"}},
		{"threads", "kernels: [ikj]\nsizes: [8]\nthreads: -2", harness.DefaultLimits(), 3, []string{"threads is -2"}},
		{"duplicate key", "kernels: [ikj]\nsizes: [8]\nkernels: [naive]", harness.DefaultLimits(), 3, []string{"twice"}},
		{"too many sizes", "kernels: [ikj]\nsizes: [" + strings.Repeat("8, ", 32) + "9]", harness.DefaultLimits(), 2, []string{"33 sizes; a cell takes at most 32"}},
		{"4000 sizes", "kernels: [ikj]\nsizes: [" + strings.Repeat("8,", 3999) + "9]", harness.DefaultLimits(), 2, []string{"4000 sizes; a cell takes at most 32"}},
		{"too many kernels", "kernels: [" + strings.Repeat("ikj, ", 32) + "ikj]\nsizes: [8]", harness.DefaultLimits(), 1, []string{"33 kernels listed; a cell lists at most 32"}},
		{"too many points", "kernels: [naive, ikj, tiled, parallel, gonum, packed, simd]\nsizes: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30]", harness.DefaultLimits(), 1, []string{"too many kernel×size points (210); use at most 200"}},
		{"alias", "kernels: &k [ikj]\nsizes: *k", harness.DefaultLimits(), 2, []string{"YAML aliases (*k) are not allowed"}},
		{"too slow", "kernels: [naive]\nsizes: [4096]\nrepeats: 5", harness.DefaultLimits(), 0, []string{"estimated", "2m0s run time limit", "n=4096"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse(tt.src, kernels.CPU(), tt.lim, estimate.Defaults())
			var se *cells.SpecError
			if !errors.As(err, &se) {
				t.Fatalf("got error %v, want a *cells.SpecError", err)
			}
			if tt.line != 0 && se.Line != tt.line {
				t.Errorf("got line %d, want %d (%v)", se.Line, tt.line, err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

func FuzzParse(f *testing.F) {
	f.Add("kernels: [naive, ikj, tiled, parallel, gonum]\nsizes: [64, 128]\ndtype: float32\nrepeats: 5\nthreads: 2\n")
	f.Add("kernels: [gonum]\nsizes: [4096]\ndtype: float64")
	f.Add("sizes: [&a 1, *a]")
	f.Add("kernels: {a: b}\nsizes: 3")
	lim := harness.DefaultLimits()
	f.Fuzz(func(t *testing.T, src string) {
		s, err := Parse(src, kernels.CPU(), lim, estimate.Defaults())
		if err != nil {
			var se *cells.SpecError
			if !errors.As(err, &se) || se.Msg == "" {
				t.Fatalf("error %v is not a *cells.SpecError with a message", err)
			}
			return
		}
		// Whatever parses is runnable: every invariant the runner relies on holds.
		if len(s.Kernels) == 0 || len(s.Sizes) == 0 || len(s.Kernels) > MaxKernels || len(s.Sizes) > MaxSizes || s.Repeats < 1 || s.Repeats > MaxRepeats || s.Threads < 1 {
			t.Fatalf("accepted an invalid spec %+v", s)
		}
		for _, k := range s.Kernels {
			if _, ok := kernels.Lookup(kernels.CPU(), k); !ok {
				t.Fatalf("accepted unknown kernel %q", k)
			}
		}
		for _, n := range s.Sizes {
			if n < 1 || n > lim.MaxN || 3*int64(n)*int64(n)*int64(s.ElemBytes()) > lim.MemoryBytes {
				t.Fatalf("accepted size %d", n)
			}
		}
		if s.DType != "float32" && s.DType != "float64" {
			t.Fatalf("accepted dtype %q", s.DType)
		}
		if s.EstimateSeconds(kernels.CPU(), estimate.Defaults()) > lim.RunTimeout.Seconds() {
			t.Fatalf("accepted a run estimated over the time limit")
		}
	})
}

// Cells whose kernels all run on the GPU may go up to GPUMaxN (8192): they need no CPU reference, and
// a GPU's kernels reach their speed only at such sizes. A CPU kernel in the cell keeps MaxN.
func TestGPUSizeLimit(t *testing.T) {
	available := append(kernels.CPU(), nvidia.GEMMs("no CUDA device (test)")...)
	s, err := Parse("kernels: [cublas, cuda-regblock]\nsizes: [4096, 8192]", available, harness.DefaultLimits(), estimate.Defaults())
	if err != nil {
		t.Fatalf("GPU-only cell at 8192: %v", err)
	}
	// The float64 CPU reference at 8192 alone is estimated far over the limit; a GPU-only cell has none.
	if est := s.EstimateSeconds(available, estimate.Defaults()); est > 1 {
		t.Errorf("GPU-only estimate %.0f s, want no CPU reference counted", est)
	}
	for _, tt := range []struct{ src, want string }{
		{"kernels: [cublas, gonum]\nsizes: [8192]", "over the limit of 4096 for cells with CPU kernels; sizes up to 8192 are allowed when every kernel is a GPU kernel"},
		{"kernels: [cublas]\nsizes: [16384]", "over the limit of 8192"},
		{"kernels: [cublas]\nsizes: [8192]\ndtype: float64", "memory budget"},
	} {
		if _, err := Parse(tt.src, available, harness.DefaultLimits(), estimate.Defaults()); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: got %v, want %q", tt.src, err, tt.want)
		}
	}
}

// A GPU kernel that takes only float32 is refused at parse time in a float64 cell, on its line.
func TestGPUKernelDTypes(t *testing.T) {
	available := append(kernels.CPU(), nvidia.GEMMs("no CUDA device (test)")...)
	_, err := Parse("dtype: float64\nsizes: [8]\nkernels: [gonum, cublas,\n  cuda-smem]", available, harness.DefaultLimits(), estimate.Defaults())
	var se *cells.SpecError
	if !errors.As(err, &se) || se.Line != 4 || !strings.Contains(err.Error(), `kernel "cuda-smem" takes float32 matrices only, not float64`) {
		t.Errorf("got %v, want line 4: cuda-smem takes float32 only", err)
	}
	if _, err := Parse("dtype: float64\nsizes: [8]\nkernels: [gonum, cublas]", available, harness.DefaultLimits(), estimate.Defaults()); err != nil {
		t.Errorf("cublas (DGEMM) in float64: %v", err)
	}
}

// The up-front refusal prices the cell with the rates measured on this machine: the same cell is
// accepted where gonum runs fast and refused, before running, where it runs slowly.
func TestRefusalUsesMeasuredRates(t *testing.T) {
	src := "kernels: [gonum]\nsizes: [4096]\ndtype: float64\nrepeats: 3"
	rates := func(gflops float64) *estimate.Rates {
		spf := 2 / (gflops * 1e9) // seconds per multiply-add
		return &estimate.Rates{Source: "calibrated", Procs: 1, Kernels: map[string][]estimate.Point{"gonum/float64": {{N: 64, SPF: spf}, {N: 4096, SPF: spf}}}}
	}
	if _, err := Parse(src, kernels.CPU(), harness.DefaultLimits(), rates(100)); err != nil {
		t.Fatalf("at 100 GFLOP/s: %v", err)
	}
	if _, err := Parse(src, kernels.CPU(), harness.DefaultLimits(), rates(5)); err == nil || !strings.Contains(err.Error(), "over the 2m0s run time limit") {
		t.Fatalf("at 5 GFLOP/s: %v, want refused over the limit", err)
	}
}

// webgpu kernels are listed beside the server's, kept apart from them (Browser), in float32 only,
// n ≤ webgpu.MaxN; a cell may list only webgpu kernels.
func TestBrowserKernels(t *testing.T) {
	got, err := Parse("kernels: [ikj, webgpu-tiled, webgpu-naive-f16]\nsizes: [33, 100]\n", kernels.CPU(), harness.DefaultLimits(), estimate.Defaults())
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(got.Kernels, ",") != "ikj" || strings.Join(got.Browser, ",") != "webgpu-tiled,webgpu-naive-f16" {
		t.Errorf("got kernels %v, browser %v", got.Kernels, got.Browser)
	}
	if got, err := Parse("kernels: [webgpu-regblock]\nsizes: [4096]\n", kernels.CPU(), harness.DefaultLimits(), estimate.Defaults()); err != nil || len(got.Kernels) != 0 {
		t.Errorf("only webgpu kernels: %+v, %v", got, err)
	}
	for src, want := range map[string]string{
		"kernels: [webgpu-tiled]\nsizes: [8]\ndtype: float64\n":         "line 1: kernel \"webgpu-tiled\" runs in your browser through WebGPU, whose shading language (WGSL) has no float64",
		"kernels: [webgpu-tiled, webgpu-tiled]\nsizes: [8]\n":           `line 1: kernel "webgpu-tiled" is listed twice`,
		"kernels: [webgpu-tile]\nsizes: [8]\n":                          `line 1: unknown kernel "webgpu-tile"; the kernels run in your browser are webgpu-naive, `,
		"kernels: [webgpu-tiled]\nsizes: [8192]\n":                      "line 2: size 8192 is over the limit of 4096 for kernels run in your browser",
		"kernels:\n  - ikj\n  - webgpu-naive\nsizes: [1]\nrepeats: 0\n": "line 5: repeats is 0",
	} {
		if _, err := Parse(src, append(kernels.CPU(), nvidia.GEMMs("no CUDA device (test)")...), harness.DefaultLimits(), estimate.Defaults()); err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%q: got %v, want %q…", src, err, want)
		}
	}
}

// The unknown-kernel and no-kernels errors name every kernel the cell takes: this machine's and the
// ones run in the learner's browser (webgpu-…), which a matmul cell takes too.
func TestKernelErrorsNameEveryKernel(t *testing.T) {
	available := append(kernels.CPU(), nvidia.GEMMs("no CUDA device (test)")...)
	for _, src := range []string{"kernels: [fast]\nsizes: [8]\n", "kernels: []\nsizes: [8]\n"} {
		_, err := Parse(src, available, harness.DefaultLimits(), estimate.Defaults())
		if err == nil {
			t.Fatalf("%q parsed", src)
		}
		var missing []string
		for _, k := range available {
			if !strings.Contains(err.Error(), k.Name) {
				missing = append(missing, k.Name)
			}
		}
		for _, k := range webgpu.Ladder {
			if !strings.Contains(err.Error(), k.Name) {
				missing = append(missing, k.Name)
			}
		}
		if len(missing) > 0 {
			t.Errorf("%q: %v; it leaves out the valid %s", src, err, strings.Join(missing, ", "))
		}
	}
	// A list that takes no browser kernels (a cuda cell's compare) names none.
	_, err := KernelNames(cells.At[[]cells.At[string]]{Line: 1, V: []cells.At[string]{{Line: 1, V: "fast"}}}, "float32", available, false, false)
	if err == nil || strings.Contains(err.Error(), "webgpu-") || !strings.Contains(err.Error(), "naive, ikj") {
		t.Errorf("compare list: %v, want the machine's kernels and no webgpu-…", err)
	}
}
