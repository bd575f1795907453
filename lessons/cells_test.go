package lessons_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gpuplayground/playground/experiment"
	"github.com/gpuplayground/playground/kernels"
	"github.com/gpuplayground/playground/kernels/cuda"
	"github.com/gpuplayground/playground/lessons"
)

type sink struct {
	results []experiment.Result
	notes   []string
}

func (s *sink) Progress(int, int)          {}
func (s *sink) Result(r experiment.Result) { s.results = append(s.results, r) }
func (s *sink) Note(_, _, msg string)      { s.notes = append(s.notes, msg) }

// TestEveryCellRuns runs every matmul cell of every embedded lesson as written, as the server would,
// and checks each finishes correct results within the 20 s a lesson cell is allowed on a 2-core machine.
func TestEveryCellRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every lesson experiment (about a minute)")
	}
	// As on a server without a GPU: GPU kernels parse, and each reports why it did not run.
	cpu := append(kernels.CPU(), kernels.GPU("no CUDA device (test)")...)
	kinds := experiment.Checkers(cpu)
	all, err := lessons.Load(lessons.Embedded, kinds)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range all {
		for _, c := range l.Cells {
			if c.Kind == "cuda" {
				t.Run(c.ID, func(t *testing.T) { compileCell(t, c.Source) })
				continue
			}
			if c.Kind == "allreduce" {
				t.Run(c.ID, func(t *testing.T) {
					spec, err := experiment.ParseAllReduce(c.Source)
					if err != nil {
						t.Fatal(err)
					}
					if pts := experiment.ModelAllReduce(spec); len(pts) != len(spec.GPUs)*len(spec.Links) {
						t.Errorf("got %d points", len(pts))
					}
				})
				continue
			}
			if c.Kind == "roofline" {
				t.Run(c.ID, func(t *testing.T) {
					spec, err := experiment.ParseRoofline(c.Source, cpu, experiment.DefaultLimits())
					if err != nil {
						t.Fatal(err)
					}
					var s sink
					if err := experiment.Run(context.Background(), spec.Spec, experiment.Env{Kernels: cpu}, &s); err != nil || len(s.results) == 0 {
						t.Fatalf("%d results, %v", len(s.results), err)
					}
				})
				continue
			}
			if c.Kind == "systolic" {
				t.Run(c.ID, func(t *testing.T) { simulateCell(t, c.Source) })
				continue
			}
			if c.Kind == "simt" {
				t.Run(c.ID, func(t *testing.T) { emulateCell(t, c.Source) })
				continue
			}
			t.Run(c.ID, func(t *testing.T) {
				spec, err := experiment.Parse(c.Source, cpu, experiment.DefaultLimits())
				if err != nil {
					t.Fatal(err)
				}
				var s sink
				start := time.Now()
				if err := experiment.Run(context.Background(), spec, experiment.Env{Kernels: cpu}, &s); err != nil {
					t.Fatal(err)
				}
				took := time.Since(start)
				t.Logf("%s: %d results in %v", c.ID, len(s.results), took.Round(time.Millisecond))
				if took > 20*time.Second {
					t.Errorf("took %v, want ≤ 20s on a 2-core machine: shrink the cell", took)
				}
				if got, want := len(s.results)+len(s.notes)*len(spec.Sizes), len(spec.Kernels)*len(spec.Sizes); got != want {
					t.Errorf("got %d results, want %d", got, want)
				}
				for _, r := range s.results {
					if !r.OK || r.GFLOPS <= 0 {
						t.Errorf("result %+v: want ok with positive GFLOP/s", r)
					}
				}
			})
		}
	}
}

// compileCell compiles a cuda cell's kernel with NVRTC, as Show PTX does, for the oldest and newest
// architectures the playground targets.
func compileCell(t *testing.T, cell string) {
	t.Helper()
	spec, err := experiment.ParseCUDA(cell, append(kernels.CPU(), kernels.GPU("test")...), experiment.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	nv, err := cuda.LoadNVRTC()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("NVRTC is required in CI: %v", err)
		}
		t.Skipf("skipping: no NVRTC (%v)", err)
	}
	for _, arch := range []int{70, 90} {
		ptx, err := cuda.CompileArch(nv, spec.Source, "cell.cu", arch)
		if err != nil || !strings.Contains(ptx, ".entry "+spec.Kernel+"(") {
			t.Errorf("compute_%d: %v", arch, err)
		}
	}
}

// emulateCell runs a simt cell in the emulator: every kernel correct, within the 20 s a cell gets.
func emulateCell(t *testing.T, cell string) {
	t.Helper()
	spec, err := experiment.ParseSIMT(cell)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	var got []experiment.SIMTResult
	if err := experiment.RunSIMT(context.Background(), spec, func(r experiment.SIMTResult) { got = append(got, r) }, nil); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 20*time.Second {
		t.Errorf("took %v, want ≤ 20s", took)
	}
	if len(got) != len(spec.Kernels) {
		t.Errorf("got %d results, want %d", len(got), len(spec.Kernels))
	}
	for _, r := range got {
		if !r.Correct {
			t.Errorf("%s: wrong result", r.Kernel)
		}
	}
}

// simulateCell runs a systolic cell: correct result, within the 20 s a cell gets.
func simulateCell(t *testing.T, cell string) {
	t.Helper()
	spec, err := experiment.ParseSystolic(cell)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	var res experiment.SystolicResult
	if err := experiment.RunSystolic(context.Background(), spec, nil, func(r experiment.SystolicResult) { res = r }); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 20*time.Second || !res.Correct {
		t.Errorf("took %v, correct %v", took, res.Correct)
	}
}
