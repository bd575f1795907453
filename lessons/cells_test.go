package lessons_test

import (
	"context"
	"flag"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpuplayground/playground/cells"
	"github.com/gpuplayground/playground/cells/builtin"
	"github.com/gpuplayground/playground/cells/cellstest"
	"github.com/gpuplayground/playground/cells/shared/webgpu"
	"github.com/gpuplayground/playground/estimate"
	"github.com/gpuplayground/playground/gpu/nvidia"
	"github.com/gpuplayground/playground/harness"
	"github.com/gpuplayground/playground/harness/peaks"
	"github.com/gpuplayground/playground/kernels"
	"github.com/gpuplayground/playground/lessons"
	"github.com/gpuplayground/playground/vgpurun"
)

var full = flag.Bool("full", false, "TestEveryCellRuns runs every lesson cell at its full sizes and repeats, as written, and Show SASS on every cell (by default each runs at its smallest size, once: cellstest.Small; Show SASS on each lesson's first cell with it)")

// TestEveryCellRuns runs every cell of every embedded lesson, and every action of it, through its
// kind, as a server without a GPU would: each ends without error, with rows, and with no wrong
// result. Show SASS (NVRTC, then ptxas and nvdisasm, about 1.2 CPU s a cell, 25 cells: half the
// package's time) runs on each lesson's first cell that has it, and on every one with -full or
// PLAYGROUND_EXHAUSTIVE=1 (a step of .ci/run): its path is the same for every cuda cell (the cell's
// own compile, which the run and Show PTX check on every cell, then the tools on its PTX). Each cell's estimate as written must fit the run time limit; the run itself is of the cell
// at its smallest size, once (smallSource: every kernel, every path but the virtual GPU's for
// sizes above vgpurun.MaxN; at most n = 128 where no recording or challenge asks for 256), or as
// written with -full (go test ./lessons -run EveryCellRuns -args -full; BenchmarkLessonCells times
// them as written). A launch of the virtual GPU that several cells make runs once (emulations). Cells of kinds that compile CUDA need NVRTC
// (required in CI). How long each took is logged; keeping a cell short is the estimate's job
// (checked at parse), not a timed assertion.
func TestEveryCellRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every lesson experiment")
	}
	nv, nvErr := nvidia.LoadNVRTC()
	if nvErr != nil && os.Getenv("CI") == "true" {
		t.Fatalf("NVRTC is required in CI: %v", nvErr)
	}
	kinds, all := lessonsWithoutGPU(t, nv)
	subjects := challengeSubjects(t)
	for _, l := range all {
		sassCell := firstSASSCell(kinds, l)
		for _, c := range l.Cells {
			k, _ := cells.Lookup(kinds, c.Kind)
			for _, action := range actions(k) {
				t.Run(c.ID+"/"+action, func(t *testing.T) {
					if c.Kind == "cuda" && nv == nil {
						t.Skipf("skipping: no NVRTC (%v)", nvErr)
					}
					if action == "sass" && c.ID != sassCell && !*full && os.Getenv("PLAYGROUND_EXHAUSTIVE") != "1" {
						t.Skipf("Show SASS runs on %s, this lesson's first cell with it (every cell's with -full or PLAYGROUND_EXHAUSTIVE=1)", sassCell)
					}
					if _, _, err := cellstest.SASSTools(); action == "sass" && err != nil {
						if os.Getenv("CI") == "true" {
							t.Fatalf("Show SASS needs ptxas and nvdisasm in CI: %v", err)
						}
						t.Skipf("skipping: %v", err)
					}
					runCell(t, k, action, c, subjects[c.Source])
				})
			}
		}
	}
}

// TestEveryShippedCellIsEstimatedWithinTheRunLimit prices every cell of every embedded lesson, and
// every action of it, as written, on the rates the tests use (estimate.Defaults, the rates a server
// uses until it has calibrated), as a server without a GPU does: none may be estimated over the
// default run time limit, or a learner would find a lesson cell refused as shipped. It runs
// nothing (TestEveryCellRuns runs them, at their smallest sizes), so it runs in -short too. Those
// rates must price every kernel the virtual GPU runs by its own measured rate: an estimate of a
// kernel without one falls back to naive's, and says little about the kernel.
func TestEveryShippedCellIsEstimatedWithinTheRunLimit(t *testing.T) {
	for _, k := range vgpurun.Ladder() {
		if estimate.Defaults().SIMT[k] == 0 {
			t.Errorf("the default rates have no emulator rate for %s (go run ./bench/estimates -fill-defaults estimate/default_rates.json)", k)
		}
	}
	limit := harness.DefaultLimits().RunTimeout
	kinds, all := lessonsWithoutGPU(t, nil)
	for _, l := range all {
		for _, c := range l.Cells {
			k, _ := cells.Lookup(kinds, c.Kind)
			for _, action := range actions(k) {
				run, err := cells.Parse(k, action, cells.Cell{ID: c.ID, Source: c.Source, Recording: c.Recording})
				if err != nil {
					t.Errorf("%s:%d (%s %q): %v", l.File, c.Line, c.ID, action, err)
					continue
				}
				if est := run.Estimate(); est > limit {
					t.Errorf("%s:%d (%s %q): estimated %v, over the default run time limit of %v", l.File, c.Line, c.ID, action, est.Round(time.Second), limit)
				}
			}
		}
	}
}

// BenchmarkLessonCells times every lesson cell's run as a server without a GPU would run it: the
// budget of a lesson cell is 20 s on a 2-core machine (docs/benchmarks.md), a speed target that
// lives here rather than in a test that a busy machine could break. Run with -benchtime 1x.
func BenchmarkLessonCells(b *testing.B) {
	nv, _ := nvidia.LoadNVRTC()
	kinds, all := lessonsOn(b, cellstest.NoGPU{NVRTC: nv, Memo: &compiles}) // each launch emulated, as a server does
	for _, l := range all {
		for _, c := range l.Cells {
			if c.Kind == "cuda" && nv == nil {
				continue
			}
			k, _ := cells.Lookup(kinds, c.Kind)
			b.Run(c.ID, func(b *testing.B) {
				for b.Loop() {
					run, err := k.Parse(cells.Cell{ID: c.ID, Source: c.Source, Recording: c.Recording})
					if err != nil {
						b.Fatal(err)
					}
					if err := run.Run(context.Background(), &cellstest.Recorder{}); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// firstSASSCell is the ID of lesson l's first cell whose kind has a Show SASS action ("sass"), or
// "" when none has.
func firstSASSCell(kinds []cells.Kind, l *lessons.Lesson) string {
	for _, c := range l.Cells {
		k, _ := cells.Lookup(kinds, c.Kind)
		if slices.Contains(actions(k), "sass") {
			return c.ID
		}
	}
	return ""
}

// actions lists "" (the run) and the names of k's actions.
func actions(k cells.Kind) []string {
	names := []string{""}
	if a, ok := k.(cells.Actioner); ok {
		for _, act := range a.Actions() {
			names = append(names, act.Name)
		}
	}
	return names
}

// compiles are the CUDA compiles of this test binary's lessonsWithoutGPU: a cell's kernel is
// compiled once for its run, its Show PTX, and the tests that run it again (challenges, FlashAttention).
var compiles cellstest.CompileMemo

// emulations are the virtual GPU's launches of this test binary's lessonsWithoutGPU: each launch
// (the same kernel at the same size and shape) runs once, though several cells, and a cell's run
// and its Show PTX, ask for it (TestEveryCellRuns asks for 89 launches, of which 39 repeat an
// earlier one: cuda-coalesced at n = 256 four times, a cell's kernel in its run and its Show PTX).
var emulations cellstest.EmulationMemo

// lessonsWithoutGPU loads the embedded lessons with the kinds of a server without a GPU (NVRTC, if
// not nil, compiling in this process, each source once: compiles; each launch of the virtual GPU
// run once: emulations).
func lessonsWithoutGPU(tb testing.TB, nv *nvidia.NVRTC) ([]cells.Kind, []*lessons.Lesson) {
	tb.Helper()
	return lessonsOn(tb, cellstest.NoGPU{NVRTC: nv, Memo: &compiles, Emulations: &emulations})
}

// lessonsOn loads the embedded lessons with the kinds of a server without a GPU whose GPU host is
// g.
func lessonsOn(tb testing.TB, g cellstest.NoGPU) ([]cells.Kind, []*lessons.Lesson) {
	tb.Helper()
	env := cells.Env{
		Kernels:  append(kernels.CPU(), nvidia.GEMMs("no CUDA device: libcuda.so.1 not found (test)")...),
		Limits:   harness.DefaultLimits(),
		GPU:      g,
		Roofline: &peaks.Cache{Options: peaks.Options{PeakSizes: []int{64, 128}, TriadMiB: 16, Repeats: 3}},
	}
	kinds := builtin.Kinds(env)
	all, err := lessons.Load(lessons.Embedded, kinds)
	if err != nil {
		tb.Fatal(err)
	}
	return kinds, all
}

// runCell runs one cell as a server without a GPU would, and wants rows or text, and no wrong
// result unless mayBeWrong: a challenge's starting kernel, which may be wrong on purpose
// (TestChallengesFailAsGivenAndCanBeMet shows that a kept solution is right).
func runCell(t *testing.T, k cells.Kind, action string, c lessons.Cell, mayBeWrong bool) {
	t.Helper()
	run, err := cells.Parse(k, action, cells.Cell{ID: c.ID, Source: c.Source, Recording: c.Recording})
	if err != nil {
		t.Fatal(err)
	}
	if est := run.Estimate(); est > harness.DefaultLimits().RunTimeout {
		t.Errorf("estimated %v, over the default run time limit", est)
	}
	source := c.Source
	if small := smallSource(c, mayBeWrong); !*full && small != c.Source {
		if run, err = cells.Parse(k, action, cells.Cell{ID: c.ID, Source: small, Recording: c.Recording}); err != nil {
			t.Fatalf("at its smallest size: %v", err)
		}
		source = small
	}
	start := time.Now()
	var rec *cellstest.Recorder
	if c.Kind == "cuda" && action == "" && c.Recording == nil {
		rec, err = cudaRuns.run(context.Background(), source, run)
	} else {
		rec = &cellstest.Recorder{}
		err = run.Run(context.Background(), rec)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s %s: %d rows, %d notes, %d frames in %v (estimated %v)", c.ID, action, len(rec.Rows), len(rec.Notes), len(rec.Animation),
		time.Since(start).Round(time.Millisecond), run.Estimate().Round(time.Millisecond))
	if rec.ChartErr != nil {
		t.Errorf("chart: %v", rec.ChartErr)
	}
	if len(rec.Rows) == 0 && len(rec.Texts) == 0 && !onlyGPU(rec) && !onlyBrowser(rec) {
		t.Errorf("no rows, no text: %+v", rec.Notes)
	}
	// Kernels that run in the browser (WebGPU) cannot run here: each gets one clear note instead.
	for _, name := range browserKernels(c) {
		notes := 0
		for _, n := range rec.Notes {
			if strings.HasPrefix(n.Message, name+": not ") && strings.Contains(n.Message, "no browser page") {
				notes++
			}
		}
		if notes != 1 {
			t.Errorf("%s: %d notes saying it needs a browser page, want 1: %+v", name, notes, rec.Notes)
		}
	}
	for _, r := range rec.Rows {
		if r.Bad && !mayBeWrong {
			t.Errorf("wrong result: %v", r.Values)
		}
	}
	for _, text := range rec.Texts {
		if strings.Contains(text.Title, "PTX") && !strings.Contains(text.Body, ".entry ") {
			t.Errorf("%s: no .entry in %.200q", text.Title, text.Body)
		}
	}
}

// smallN is the size TestEveryCellRuns caps a cell at where it replays no recording and no
// challenge is about it (smallSource).
const smallN = 128

// smallSource is cell c's source at TestEveryCellRuns' size: cellstest.Small's (at most
// SmallMaxN, the size of every recording's rows) for a cell with a recording, or that a challenge
// is about (subject: TestChallengesFailAsGivenAndCanBeMet judges it as written, and shares this
// run where Small leaves it so); at most smallN for the others.
func smallSource(c lessons.Cell, subject bool) string {
	if c.Recording != nil || subject {
		return cellstest.Small(c.Source)
	}
	return cellstest.SmallAt(c.Source, smallN)
}

// onlyGPU reports whether a run measured nothing because all its kernels need the GPU this test
// server lacks (it says so in a note).
func onlyGPU(rec *cellstest.Recorder) bool {
	for _, n := range rec.Notes {
		if n.Level == "error" && strings.Contains(n.Message, "NVIDIA GPU") {
			return true
		}
	}
	return false
}

// onlyBrowser reports whether a run measured nothing because all its kernels run in a browser, which
// this test has not (each says so in a note).
func onlyBrowser(rec *cellstest.Recorder) bool {
	for _, n := range rec.Notes {
		if !strings.Contains(n.Message, "no browser page") {
			return false
		}
	}
	return len(rec.Notes) > 0
}

// browserKernels lists the kernels of cell c that run in the browser: its webgpu-… kernels, and a
// wgsl cell's own ("custom").
func browserKernels(c lessons.Cell) []string {
	var names []string
	if c.Kind == "wgsl" {
		names = append(names, "custom")
	}
	for _, k := range webgpu.Ladder {
		if strings.Contains(c.Source, k.Name+",") || strings.Contains(c.Source, k.Name+"]") {
			names = append(names, k.Name)
		}
	}
	return names
}

// On a GPU machine the server knows the GPU kernels with the table's pessimistic run-time estimates
// (gpu/nvidia/ladder.go), and checks every lesson cell against the default run time limit at
// start-up: the estimates must not make it refuse its own lessons.
func TestLessonsFitTheRunLimitWithGPUEstimates(t *testing.T) {
	env := cells.Env{Kernels: append(kernels.CPU(), nvidia.GEMMs("")...), Limits: harness.DefaultLimits(), GPU: cellstest.NoGPU{}, Roofline: &peaks.Cache{}}
	if _, err := lessons.Load(lessons.Embedded, builtin.Kinds(env)); err != nil {
		t.Fatalf("with the GPU kernels' estimates a GPU server would not start: %v", err)
	}
}

// cudaRuns are the runs of cuda cells this test binary made, by source: a challenge's cell as
// given (TestChallengesFailAsGivenAndCanBeMet) is a lesson cell at its one size, which
// TestEveryCellRuns ran already.
var cudaRuns recordedRuns

// recordedRuns hands back the recording of a cuda cell's run of the same source made before.
type recordedRuns struct {
	mu   sync.Mutex
	done map[string]*cellstest.Recorder
}

// run is r's run (a cuda cell's, of source) recorded, or the recording of the run of source made
// before; the recording must not be changed.
func (rr *recordedRuns) run(ctx context.Context, source string, r cells.Run) (*cellstest.Recorder, error) {
	rr.mu.Lock()
	rec, ok := rr.done[source]
	rr.mu.Unlock()
	if ok {
		return rec, nil
	}
	rec = &cellstest.Recorder{}
	if err := r.Run(ctx, rec); err != nil {
		return nil, err
	}
	rr.mu.Lock()
	defer rr.mu.Unlock()
	if rr.done == nil {
		rr.done = map[string]*cellstest.Recorder{}
	}
	rr.done[source] = rec
	return rec, nil
}
