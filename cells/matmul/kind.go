// Package matmul is the `matmul` cell kind: a list of GEMM kernels (CPU, and GPU where the server has
// one) timed at a list of sizes, with a results table and a GFLOP/s chart:
//
//	kernels: [naive, ikj, tiled, parallel, gonum]   # CPU kernels; GPU ones such as cublas too
//	sizes: [64, 128, 256, 512]                      # square n×n×n
//	dtype: float32                                  # float32 | float64
//	repeats: 5                                      # timed runs per point, after a warm-up
//	threads: 2                                      # goroutines for the parallel kernels
//	transfers: true                                 # GPU kernels: time the PCIe copies too
//	peak: true                                      # draw this CPU's measured peak
//	gpu: T4                                         # datasheet GPU for emulated kernels' modelled times
//
// Kernels named webgpu-… (package cells/shared/webgpu: webgpu-naive, -coalesced, -tiled, -regblock and their
// -f16 variants) run in the learner's browser through WebGPU, after the server's kernels, within the
// run's turn in the queue.
//
// The header's validation, the results table and the emulated kernels are package kernelcell's,
// shared with the roofline, cuda and wgsl kinds.
package matmul

import (
	"context"
	_ "embed"
	"fmt"
	"slices"
	"time"

	"github.com/gpuplayground/playground/cells"
	"github.com/gpuplayground/playground/cells/shared/kernelcell"
	"github.com/gpuplayground/playground/cells/shared/webgpu"
	"github.com/gpuplayground/playground/chart"
	"github.com/gpuplayground/playground/gpumodel"
	"github.com/gpuplayground/playground/harness"
	"github.com/gpuplayground/playground/harness/peaks"
	"github.com/gpuplayground/playground/kernels"
	"github.com/gpuplayground/playground/vgpurun"
)

//go:embed render.js
var script string

// New returns the matmul kind for env: a cell's run shows its recording (Cell.Recording) where it
// has one.
func New(env cells.Env) cells.Kind {
	return cells.Define(cells.Def[kernelcell.Spec]{Name: "matmul", Script: script,
		Parse: func(src string) (kernelcell.Spec, error) {
			return kernelcell.Parse(src, env.Kernels, env.Limits, env.Rates.Get())
		},
		Run: func(s kernelcell.Spec, c cells.Cell) cells.Run { return &run{env: env, spec: s, rec: c.Recording} }})
}

type run struct {
	env  cells.Env
	spec kernelcell.Spec
	rec  *cells.Recording
}

func (r *run) Estimate() time.Duration {
	measured, emulated := r.split()
	est := time.Duration(measured.EstimateSeconds(r.env.Kernels, r.env.Rates.Get()) * float64(time.Second))
	for _, n := range r.spec.Sizes {
		for _, k := range emulated {
			est += vgpurun.Estimate(r.env.Rates.Get(), k, n)
		}
	}
	if r.spec.Peak {
		est += peaks.MeasureEstimate // the first such run measures the ceilings
	}
	for _, n := range r.spec.Sizes {
		est += time.Duration(webgpu.EstimateSeconds(len(r.spec.Browser), n, r.spec.Repeats) * float64(time.Second))
	}
	return est
}

// Run measures the cell: on a server without a GPU, first the cell's recording (if any) for its GPU
// kernels, labelled as recorded; then every kernel at every size, measured now; then the emulated
// kernels; last the webgpu kernels, in the learner's browser (package webgpu), within this run.
func (r *run) Run(ctx context.Context, e cells.Emitter) error {
	e = cells.Showing(e, r.spec.Show)
	sink := &kernelcell.Results{E: e, Machine: r.env.Machine}
	if r.spec.Peak {
		ceil, err := r.env.Roofline.Get(ctx) // measured inside the run queue, once per server start
		if err != nil {
			return err
		}
		pk := ceil.Peak(r.spec.DType)
		peak := pk.GFLOPS
		e.Note("info", fmt.Sprintf("%s peak of this CPU: %.1f GFLOP/s, %s", r.spec.DType, peak, pk.Method))
		label := fmt.Sprintf("measured peak, %.0f GFLOP/s", peak)
		sink.Draw = func(rs []harness.Result) (string, error) {
			return chart.ThroughputPeak(kernelcell.RatePoints(rs, nil), peak, label)
		}
	}
	r.recorded(e)
	measured, emulated := r.split()
	parts := kernelcell.Passes(measured, emulated)
	if len(r.spec.Browser) > 0 {
		parts++
	}
	sink.E = cells.Stage(e, 0, parts)
	if err := harness.Run(ctx, measured, kernelcell.Harness(r.env), sink); err != nil {
		return err
	}
	if len(emulated) > 0 {
		stage := 0
		if len(measured.Kernels) > 0 {
			stage = 1
		}
		if _, err := kernelcell.Emulate(ctx, cells.Stage(e, stage, parts), r.env.GPU, emulated, r.spec.Sizes, r.spec.DType, gpumodel.Or(r.spec.GPU), nil, nil); err != nil {
			return err
		}
	}
	return sink.Browser(ctx, cells.Stage(e, parts-1, parts), kernelcell.BrowserRequest(r.spec.Browser, r.spec.Spec))
}

// Exclusive is false only for a run that times nothing on this machine: every kernel it names is a
// GPU kernel this server has no GPU for (run in the virtual GPU, or noted), with no measured peak and
// no browser kernels (a learner's laptop may be this machine: its browser must not share it).
func (r *run) Exclusive() bool {
	if r.spec.Peak || len(r.spec.Browser) > 0 {
		return true
	}
	measured, _ := r.split()
	return kernelcell.MeasuresHere(measured.Kernels, r.env.Kernels)
}

// split separates the kernels measured here from those emulated (kernelcell.Split).
func (r *run) split() (measured harness.Spec, emulated []string) {
	return kernelcell.Split(r.spec.Spec, r.env.Kernels)
}

// ShowRecorded emits, on a server without a GPU, the cell's recorded rows for its GPU kernels as its
// run shows them first (its `show:` columns first); false when there are none to show.
func (r *run) ShowRecorded(e cells.Emitter) bool { return r.recorded(cells.Showing(e, r.spec.Show)) }

// recorded is ShowRecorded onto e, the run's emitter.
func (r *run) recorded(e cells.Emitter) bool {
	return r.rec != nil && r.env.GPU.Unavailable() != "" && showRecorded(e, *r.rec, r.spec.Spec, r.env.Kernels)
}

// showRecorded emits a table of rec's results for the GPU kernels of spec that cannot run here, those
// whose (kernel, n, dtype) the spec asks for, labelled with where, when and how they were measured;
// false when there are none.
func showRecorded(e cells.Emitter, rec cells.Recording, spec harness.Spec, available []kernels.Kernel) bool {
	var rows []harness.Result
	for _, res := range rec.Results {
		k, _ := kernels.Lookup(available, res.Kernel)
		if k.Unavailable != "" && slices.Contains(spec.Kernels, res.Kernel) && slices.Contains(spec.Sizes, res.N) && res.DType == spec.DType {
			rows = append(rows, res)
		}
	}
	if len(rows) == 0 {
		return false
	}
	copies := slices.ContainsFunc(rows, func(r harness.Result) bool { return r.H2DSeconds > 0 || r.D2HSeconds > 0 })
	cols := []cells.Column{{Label: "kernel", Key: true}, {Label: "n", Key: true}, {Label: "dtype", Key: true}, {Label: "median", Unit: "s"}, {Label: "throughput", Unit: "GFLOP/s"}, {Label: "rel. error"}}
	if copies { // the recording timed the copies (transfers: true): shown as the measured table shows them
		cols = append(cols, cells.Column{Label: "host→device", Unit: "s"}, cells.Column{Label: "device→host", Unit: "s"}, cells.Column{Label: "copies", Unit: "GB/s"})
	}
	e.Table(cells.Table{ID: "recorded", Caption: "Recorded GPU results: " + rec.Label(), Columns: cols})
	for _, res := range rows {
		values := []any{res.Kernel, res.N, res.DType, res.Seconds, res.GFLOPS, cells.ErrorValue(res.RelError)}
		if copies {
			values = append(values, "", "", "")
			if res.H2DSeconds > 0 || res.D2HSeconds > 0 {
				values[6], values[7], values[8] = res.H2DSeconds, res.D2HSeconds, res.TransferGBps
			}
		}
		e.Row(cells.Row{Table: "recorded", Values: values, Bad: !res.OK})
	}
	return true
}

// Needs says the run measures on an NVIDIA GPU when it names a GPU kernel.
func (r *run) Needs() cells.Needs {
	return cells.Needs{GPU: kernelcell.NamesGPU(r.spec.Spec, r.env.Kernels)}
}
