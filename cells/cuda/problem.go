package cuda

import (
	"context"
	"fmt"

	"github.com/gpuplayground/playground/cells"
	"github.com/gpuplayground/playground/cells/shared/kernelcell"
	"github.com/gpuplayground/playground/chart"
	"github.com/gpuplayground/playground/harness"
	"github.com/gpuplayground/playground/sim/datasheet"
	"github.com/gpuplayground/playground/vgpu/emulate"
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
	res.Draw = func(rs []harness.Result) (string, error) { return chart.Rate(rs, axes, res.Rate) }
	return res
}

// emulateProblem runs the learner's kernel for a problem other than matmul in the virtual GPU at
// every size, as rows of the emulated table with the problem's rate; a size over the virtual GPU's
// limit for the problem is an info note (as matmul's), a fault or a launch error an error note. It
// returns the rows' results.
func emulateProblem(ctx context.Context, e cells.Emitter, s Spec, custom func(ctx context.Context, n int, dtype string, g datasheet.GPU) (emulate.Result, error)) ([]emulate.Result, error) {
	var results []emulate.Result
	g := datasheet.Or(s.GPU)
	e.Table(kernelcell.ProblemTable(g.Name, s.Problem.Rate))
	for i, n := range s.Sizes {
		if n > s.Problem.SampledN {
			e.Note("info", fmt.Sprintf("custom at n=%d: not emulated: %v", n, emulate.TooLarge(s.Problem, n)))
			e.Progress(i+1, len(s.Sizes))
			continue
		}
		res, err := custom(ctx, n, s.DType, g)
		if ctx.Err() != nil {
			return results, ctx.Err()
		}
		if err != nil {
			e.Note("error", s.cellLines(emulate.Failure("custom", n, err)))
		} else {
			results = append(results, res)
			e.Row(kernelcell.EmulatedRow(res))
			if note := kernelcell.SampledNote(res); note != "" {
				e.Note("info", note)
			}
		}
		for _, f := range res.Notes { // uninitialised reads: the run went on
			e.Note("warning", s.cellLines(fmt.Sprintf("custom at n=%d, in the virtual GPU: %v", n, f)))
		}
		if out := res.Counts.Printf; out != "" {
			e.Text(fmt.Sprintf("printf output of custom at n=%d (virtual GPU)", n), s.cellLines(out))
		}
		e.Progress(i+1, len(s.Sizes))
	}
	return results, nil
}
