package experiment

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/gpuplayground/playground/kernels"
)

type recorder struct {
	notes    []string
	results  []Result
	progress [][2]int
	onResult func()
}

func (r *recorder) Progress(done, total int) { r.progress = append(r.progress, [2]int{done, total}) }
func (r *recorder) Note(kernel, level, msg string) {
	r.notes = append(r.notes, level+" "+kernel+" "+msg)
}
func (r *recorder) Result(res Result) {
	r.results = append(r.results, res)
	if r.onResult != nil {
		r.onResult()
	}
}

func TestRunMeasuresAndChecksEveryPoint(t *testing.T) {
	for _, dtype := range []string{"float32", "float64"} {
		s := Spec{Kernels: []string{"naive", "ikj", "tiled", "parallel", "gonum"}, Sizes: []int{33, 70}, DType: dtype, Repeats: 2, Threads: 2}
		var rec recorder
		if err := Run(context.Background(), s, Env{Kernels: kernels.CPU()}, &rec); err != nil {
			t.Fatal(err)
		}
		if got, want := len(rec.results), 10; got != want {
			t.Fatalf("%s: got %d results, want %d", dtype, got, want)
		}
		for _, r := range rec.results {
			if !r.OK || r.RelError > kernels.Tolerance(dtype) || r.DType != dtype {
				t.Errorf("%s: result %+v not ok", dtype, r)
			}
			if !(0 < r.MinSeconds && r.MinSeconds <= r.Seconds && r.Seconds <= r.MaxSeconds) {
				t.Errorf("%s: timing %+v: want 0 < min ≤ median ≤ max", dtype, r)
			}
			if want := kernels.FLOPs(r.N, r.N, r.N) / r.Seconds / 1e9; r.GFLOPS != want {
				t.Errorf("gflops %v, want 2n³/median = %v", r.GFLOPS, want)
			}
		}
		last := rec.progress[len(rec.progress)-1]
		if last[0] != last[1] || last[1] != 2*5*3 {
			t.Errorf("last progress %v, want 30/30", last)
		}
	}
}

// A kernel that returns garbage is flagged, not hidden.
func TestRunFlagsWrongResults(t *testing.T) {
	broken := kernels.Kernel{Name: "broken",
		F32: func(ctx context.Context, c, a, b []float32, m, n, k int, _ kernels.Options) error {
			for i := range c[:m*n] {
				c[i] = 1
			}
			return nil
		}}
	var rec recorder
	s := Spec{Kernels: []string{"broken"}, Sizes: []int{16}, DType: "float32", Repeats: 1, Threads: 1}
	if err := Run(context.Background(), s, Env{Kernels: []kernels.Kernel{broken}}, &rec); err != nil {
		t.Fatal(err)
	}
	if r := rec.results[0]; r.OK || r.RelError < 0.1 {
		t.Errorf("got %+v, want ok=false and a large error", r)
	}
	// One that leaves C untouched (poisoned with NaN) is flagged too.
	lazy := kernels.Kernel{Name: "lazy", F32: func(context.Context, []float32, []float32, []float32, int, int, int, kernels.Options) error {
		return nil
	}}
	rec = recorder{}
	s.Kernels = []string{"lazy"}
	if err := Run(context.Background(), s, Env{Kernels: []kernels.Kernel{lazy}}, &rec); err != nil {
		t.Fatal(err)
	}
	if r := rec.results[0]; r.OK {
		t.Errorf("got %+v, want ok=false for an untouched (NaN) C", r)
	}
}

func TestRunCancels(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var rec recorder
	rec.onResult = cancel
	s := Spec{Kernels: []string{"ikj"}, Sizes: []int{16, 32, 64}, DType: "float32", Repeats: 1, Threads: 1}
	err := Run(ctx, s, Env{Kernels: kernels.CPU()}, &rec)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
	if len(rec.results) != 1 {
		t.Errorf("got %d results, want 1 before the cancel took effect", len(rec.results))
	}
}

// GPU kernels that cannot run here share one note; the CPU kernels of the same cell still run.
func TestRunNotesUnavailableKernels(t *testing.T) {
	available := append(kernels.CPU(), kernels.GPU("no CUDA device: libcuda.so.1 not found")...)
	s := Spec{Kernels: []string{"cublas", "ikj", "cuda-smem"}, Sizes: []int{8, 16}, DType: "float32", Repeats: 1, Threads: 1}
	var rec recorder
	if err := Run(context.Background(), s, Env{Kernels: available}, &rec); err != nil {
		t.Fatal(err)
	}
	want := []string{"error cublas,cuda-smem cublas, cuda-smem: not run, no NVIDIA GPU on this server (the page header links the details)"}
	if fmt.Sprint(rec.notes) != fmt.Sprint(want) {
		t.Errorf("notes %q, want %q", rec.notes, want)
	}
	if len(rec.results) != 2 || rec.results[0].Kernel != "ikj" || !rec.results[1].OK {
		t.Errorf("results %+v, want ikj at both sizes", rec.results)
	}
	if last := rec.progress[len(rec.progress)-1]; last != [2]int{4, 4} {
		t.Errorf("last progress %v, want 4/4 (GPU kernels excluded)", last)
	}
}

// Remote kernels are measured by Env.Remote, in the cell's order, with progress counted in the total.
func TestRunRemoteKernels(t *testing.T) {
	available := append(kernels.CPU(), kernels.GPU("")...)
	var asked []string
	env := Env{Kernels: available, Remote: func(ctx context.Context, kernel string, n int, s Spec, progress func(int)) (Result, error) {
		asked = append(asked, fmt.Sprintf("%s/%d/%s/%d", kernel, n, s.DType, s.Repeats))
		for i := 1; i <= s.Repeats+1; i++ {
			progress(i)
		}
		return Result{Kernel: kernel, N: n, DType: s.DType, Seconds: 1e-3, GFLOPS: 1, OK: true}, nil
	}}
	s := Spec{Kernels: []string{"cublas", "ikj", "cuda-wmma"}, Sizes: []int{8, 16}, DType: "float32", Repeats: 2, Threads: 1}
	var rec recorder
	if err := Run(context.Background(), s, env, &rec); err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(asked, " "), "cublas/8/float32/2 cuda-wmma/8/float32/2 cublas/16/float32/2 cuda-wmma/16/float32/2"; got != want {
		t.Errorf("remote calls %q, want %q", got, want)
	}
	var order []string
	for _, r := range rec.results {
		order = append(order, r.Kernel)
	}
	if got, want := strings.Join(order, ","), "cublas,ikj,cuda-wmma,cublas,ikj,cuda-wmma"; got != want {
		t.Errorf("results %s, want %s", got, want)
	}
	if last := rec.progress[len(rec.progress)-1]; last != [2]int{18, 18} || len(rec.notes) != 0 {
		t.Errorf("last progress %v, notes %v; want 18/18 and none", last, rec.notes)
	}
	// A remote failure ends the run with its error.
	env.Remote = func(context.Context, string, int, Spec, func(int)) (Result, error) {
		return Result{}, errors.New("GPU worker showed no progress")
	}
	if err := Run(context.Background(), s, env, &recorder{}); err == nil || !strings.Contains(err.Error(), "no progress") {
		t.Errorf("got %v, want the worker's error", err)
	}
}
