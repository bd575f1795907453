package harness

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/gpuplayground/playground/gpu/nvidia"
	"github.com/gpuplayground/playground/kernels"
	"github.com/gpuplayground/playground/numeric"
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
			if !r.OK || r.RelError > numeric.Tolerance(dtype) || r.DType != dtype {
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
	available := append(kernels.CPU(), nvidia.GEMMs("no CUDA device: libcuda.so.1 not found")...)
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
	available := append(kernels.CPU(), nvidia.GEMMs("")...)
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
}

// A Remote kernel that fails becomes that kernel's error note; its later sizes are skipped (their
// progress counted as done) and the run goes on with the other kernels.
func TestRunRemoteFailureIsANote(t *testing.T) {
	available := append(kernels.CPU(), nvidia.GEMMs("")...)
	var asked []string
	env := Env{Kernels: available, Remote: func(ctx context.Context, kernel string, n int, s Spec, progress func(int)) (Result, error) {
		asked = append(asked, fmt.Sprintf("%s/%d", kernel, n))
		progress(1) // the warm-up ran, then:
		if kernel == "cuda-wmma" {
			return Result{}, errors.New("GPU worker stopped with a fatal error (CUDA_ERROR_ILLEGAL_ADDRESS)")
		}
		for i := 2; i <= s.Repeats+1; i++ {
			progress(i)
		}
		return Result{Kernel: kernel, N: n, DType: s.DType, Seconds: 1e-3, GFLOPS: 1, OK: true}, nil
	}}
	s := Spec{Kernels: []string{"cuda-wmma", "cublas", "ikj"}, Sizes: []int{8, 16}, DType: "float32", Repeats: 2, Threads: 1}
	var rec recorder
	if err := Run(context.Background(), s, env, &rec); err != nil {
		t.Fatalf("got %v, want the run to go on", err)
	}
	if got, want := strings.Join(asked, " "), "cuda-wmma/8 cublas/8 cublas/16"; got != want {
		t.Errorf("remote calls %q, want %q", got, want)
	}
	want := []string{"error cuda-wmma cuda-wmma at n=8: GPU worker stopped with a fatal error (CUDA_ERROR_ILLEGAL_ADDRESS) (its later sizes are skipped)"}
	if fmt.Sprint(rec.notes) != fmt.Sprint(want) {
		t.Errorf("notes %q, want %q", rec.notes, want)
	}
	var order []string
	for _, r := range rec.results {
		order = append(order, fmt.Sprintf("%s/%d", r.Kernel, r.N))
	}
	if got, want := strings.Join(order, " "), "cublas/8 ikj/8 cublas/16 ikj/16"; got != want {
		t.Errorf("results %s, want %s", got, want)
	}
	for i := 1; i < len(rec.progress); i++ {
		if rec.progress[i][0] < rec.progress[i-1][0] {
			t.Errorf("progress went back: %v", rec.progress)
		}
	}
	if last := rec.progress[len(rec.progress)-1]; last != [2]int{18, 18} {
		t.Errorf("last progress %v, want 18/18", last)
	}

	// At the last size the note does not mention later sizes.
	rec = recorder{}
	s.Sizes = []int{8}
	if err := Run(context.Background(), s, env, &rec); err != nil || len(rec.notes) != 1 || strings.Contains(rec.notes[0], "skipped") {
		t.Errorf("got %v and notes %q, want one note without skipped sizes", err, rec.notes)
	}
}

// A Remote kernel interrupted by the run's cancellation ends the run with the cause, not a note.
func TestRunRemoteCancelEndsTheRun(t *testing.T) {
	stop := errors.New("stopped")
	ctx, cancel := context.WithCancelCause(context.Background())
	env := Env{Kernels: nvidia.GEMMs(""), Remote: func(ctx context.Context, kernel string, n int, s Spec, progress func(int)) (Result, error) {
		cancel(stop)
		return Result{}, context.Cause(ctx)
	}}
	var rec recorder
	s := Spec{Kernels: []string{"cublas", "cuda-wmma"}, Sizes: []int{8}, DType: "float32", Repeats: 1}
	if err := Run(ctx, s, env, &rec); !errors.Is(err, stop) || len(rec.notes) != 0 {
		t.Errorf("got %v and notes %q, want the cancel cause and no note", err, rec.notes)
	}
}

// Noisy timings get a warning that suggests a rerun: a point's repeats spread over Noise.Spread
// (for points timed at Noise.MinSeconds or more), or a load average over the machine's CPUs.
func TestRunWarnsOfNoisyTimings(t *testing.T) {
	tests := []struct {
		name     string
		min, max float64
		load     float64
		noise    bool
		want     []string // substrings, one per note, in order
	}{
		{"spread", 0.010, 0.025, 0.5, true, []string{"warning cublas Timings are noisy: cublas at n=8 took from 0.01 s to 0.025 s over its repeats (max/min 2.5×"}},
		{"steady", 0.010, 0.012, 0.5, true, nil},
		{"busy", 0.010, 0.012, 3.5, true, []string{"warning  The machine was busy during this run: its load average was 3.5 on 2 logical CPUs"}},
		{"both", 0.010, 0.030, 2.5, true, []string{"Timings are noisy", "The machine was busy"}},
		{"too fast to judge", 1e-5, 5e-5, 0.5, true, nil},
		{"no noise check", 0.010, 0.030, 9, false, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := Env{Kernels: nvidia.GEMMs(""), Remote: func(ctx context.Context, kernel string, n int, s Spec, progress func(int)) (Result, error) {
				return Result{Kernel: kernel, N: n, DType: s.DType, Seconds: tt.min, MinSeconds: tt.min, MaxSeconds: tt.max, OK: true}, nil
			}}
			if tt.noise {
				env.Noise = &Noise{Spread: 1.5, MinSeconds: 1e-3, Load: func() (float64, int, bool) { return tt.load, 2, true }}
			}
			var rec recorder
			s := Spec{Kernels: []string{"cublas"}, Sizes: []int{8}, DType: "float32", Repeats: 3}
			if err := Run(context.Background(), s, env, &rec); err != nil {
				t.Fatal(err)
			}
			if len(rec.notes) != len(tt.want) {
				t.Fatalf("got notes %q, want %d", rec.notes, len(tt.want))
			}
			for i, w := range tt.want {
				if !strings.Contains(rec.notes[i], w) || !strings.Contains(rec.notes[i], "again") {
					t.Errorf("note %d: got %q, want it to contain %q and suggest running again", i, rec.notes[i], w)
				}
			}
		})
	}
}

// A run that measured nothing says nothing about noise, however busy the machine.
func TestRunNoNoiseNoteWithoutResults(t *testing.T) {
	env := Env{Kernels: nvidia.GEMMs("no CUDA device"), Noise: &Noise{Spread: 1.5, Load: func() (float64, int, bool) { return 9, 2, true }}}
	var rec recorder
	if err := Run(context.Background(), Spec{Kernels: []string{"cublas"}, Sizes: []int{8}, DType: "float32", Repeats: 1}, env, &rec); err != nil {
		t.Fatal(err)
	}
	for _, n := range rec.notes {
		if strings.Contains(n, "busy") {
			t.Errorf("got note %q after a run that measured nothing", n)
		}
	}
}
