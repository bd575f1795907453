package cuda

import (
	"context"
	"fmt"

	"github.com/gpuplayground/playground/cells"
	"github.com/gpuplayground/playground/cells/shared/kernelcell"
	"github.com/gpuplayground/playground/chart"
	"github.com/gpuplayground/playground/gpumodel"
	"github.com/gpuplayground/playground/harness"
	"github.com/gpuplayground/playground/vgpurun"
)

// results is the sink of the measured runs: matmul's results table and GFLOP/s chart, or for
// another problem the same table and a chart in the problem's own rate (GB/s: its minimal bytes
// over the median time).
func (r *run) results(e cells.Emitter) *kernelcell.Results {
	res := &kernelcell.Results{E: e, Machine: r.env.Machine}
	p := r.spec.Problem
	if p.Name == "matmul" {
		return res
	}
	elem := p.Buffers[0].ElemBytes(r.spec.DType)
	res.RateUnit = p.Rate
	res.Rate = func(x harness.Result) float64 { return p.RateOf(x.N, elem, x.Seconds) }
	axes := chart.RateAxes{Title: fmt.Sprintf("%s: %s", p.Name, p.Rate), Size: "size n (log2 scale)", Unit: p.Rate, What: "rate"}
	if p.Rate == "GB/s" {
		axes.Title, axes.What = p.Name+" bandwidth (its minimal bytes over the time)", "bandwidth"
	}
	res.Draw = func(rs []harness.Result) (string, error) {
		return chart.Rate(kernelcell.RatePoints(rs, res.Rate), axes)
	}
	return res
}

// launchRun is one kernel launch a problem cell emulates: the cell's own ("custom") or a variant,
// named as its rows are, and how it runs at a size.
type launchRun struct {
	name string
	spec Spec
	run  func(ctx context.Context, n int, dtype string, g gpumodel.GPU) (vgpurun.Result, error)
}

// emulateProblem runs the learner's kernel for a problem other than matmul, and then each of its
// launches (the cell's variants), in the virtual GPU at every size, as rows of the emulated table
// with the problem's rate; a size over the virtual GPU's limit for the problem is an info note (as
// matmul's), a fault or a launch error an error note. It returns the rows' results.
func emulateProblem(ctx context.Context, e cells.Emitter, s Spec, launches ...launchRun) ([]vgpurun.Result, error) {
	var results []vgpurun.Result
	g := gpumodel.Or(s.GPU)
	e.Table(kernelcell.ProblemTable(g.Name, s.Problem.Rate))
	steps, step := len(s.Sizes)*len(launches), 0
	for _, l := range launches {
		for _, n := range l.spec.Sizes {
			step++
			if n > l.spec.Problem.SampledN {
				e.Note("info", fmt.Sprintf("%s at n=%d: not emulated: %v", l.name, n, vgpurun.TooLarge(l.spec.Problem, n)))
				e.Progress(step, steps)
				continue
			}
			res, err := l.run(ctx, n, l.spec.DType, g)
			res.Kernel = l.name
			if ctx.Err() != nil {
				return results, ctx.Err()
			}
			if err != nil {
				e.Note("error", l.spec.cellLines(vgpurun.Failure(l.name, n, err)))
			} else {
				results = append(results, res)
				e.Row(kernelcell.EmulatedRow(res))
				if note := kernelcell.SampledNote(res); note != "" {
					e.Note("info", note)
				}
				if res.PrecisionNote != "" {
					e.Note("info", fmt.Sprintf("%s at n=%d: %s", l.name, n, res.PrecisionNote))
				}
			}
			for _, f := range res.Notes { // uninitialised reads: the run went on
				e.Note("warning", l.spec.cellLines(fmt.Sprintf("%s at n=%d, in the virtual GPU: %v", l.name, n, f)))
			}
			if out := res.Counts.Printf; out != "" {
				e.Text(fmt.Sprintf("printf output of %s at n=%d (virtual GPU)", l.name, n), l.spec.cellLines(out))
			}
			e.Progress(step, steps)
		}
	}
	return results, nil
}

// problemChart draws, for a problem cell run in the virtual GPU, the problem's rate each launch
// reached at each size, modelled on the datasheet GPU: the cell's kernel beside its variants (block
// sizes, registers, another kernel), so the chart compares what the cell varies. One launch at one
// size compares nothing: no chart then (the table says it all).
func (r *run) problemChart(e cells.Emitter, results []vgpurun.Result) {
	if len(results) < 2 {
		return
	}
	p, g := r.spec.Problem, gpumodel.Or(r.spec.GPU)
	var bars []chart.Bar
	for _, res := range results {
		name := res.Kernel
		if name == "custom" {
			name = r.spec.CustomLabel()
		}
		if len(r.spec.Sizes) > 1 {
			name += fmt.Sprintf(" (n=%d)", res.N)
		}
		bars = append(bars, chart.Bar{Label: name, Value: res.Rate})
	}
	what := p.Rate
	if p.Rate == "GB/s" {
		what = "achieved bandwidth (GB/s: its minimal bytes over the modelled time)"
	}
	title := fmt.Sprintf("%s on %s, modelled from the virtual GPU's counts", p.Name, g.Name)
	e.Chart(func() (string, error) { return chart.Bars(title, what, bars) })
}
