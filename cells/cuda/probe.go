package cuda

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gpuplayground/playground/gpumodel"
	"github.com/gpuplayground/playground/vgpurun"
)

// probeEmulation prices the learner's kernel's emulation at each of the cell's sizes from one
// block of it (vgpurun.ProbeLaunch: its thread instructions by class, at this machine's measured
// cost per thread instruction of each class, estimate.Rates.InstrCosts), after the compile and
// before any size is emulated. The up-front estimate (Estimate) cannot see the kernel, so it prices
// the problem's work at the naive kernel's rate; this one prices what the kernel executes, so a
// tiled kernel, which costs more per thread instruction, and a grid of few, large blocks are priced
// as they run.
//
// It returns, per sampled size, how many blocks to sample (vgpurun.Request.SampleBlocks): fewer
// than vgpurun.SampledBlocks, at least one, where that many would take more than the size's share
// of the run time limit (half the limit over the sizes). It returns an error, the run's, when the
// emulations would still take longer than the limit, or when one block alone takes longer than a
// size's share (the probe is stopped there: the emulation runs at least that block again). Without
// measured costs per class (rates from before they were calibrated) it prices nothing.
//
// A cell's variants (Spec.Variants) are priced the same way, each its own samples, the sizes' shares
// split among the cell's kernel and its variants.
func (r *run) probeEmulation(ctx context.Context, ptx string) (map[int]int, error) {
	limit := r.env.Limits.RunTimeout
	costs := r.env.Rates.Get()
	if _, ok := costs.InstrCosts(); !ok || limit <= 0 || len(r.spec.Sizes) == 0 {
		return nil, nil
	}
	share := limit / time.Duration(2*len(r.spec.Sizes)*(1+len(r.spec.Variants)))
	samples, total, err := r.probe(ctx, r.spec, "custom", ptx, share)
	if err != nil {
		return nil, err
	}
	r.variantSamples = nil
	for _, v := range r.spec.Variants {
		vs, sec, err := r.probe(ctx, v.Spec, v.Label, ptx, share)
		if err != nil {
			return nil, err
		}
		r.variantSamples = append(r.variantSamples, vs)
		total += sec
	}
	if total > limit.Seconds() {
		return nil, fmt.Errorf("custom: its emulation is estimated, from one thread block of it at each size, at about %s, over the %s run time limit: use smaller sizes",
			(time.Duration(total * float64(time.Second))).Round(time.Second), limit)
	}
	return samples, nil
}

// probe is probeEmulation of one launch, spec, named name: its samples per size and its estimated
// seconds.
func (r *run) probe(ctx context.Context, spec Spec, name, ptx string, share time.Duration) (map[int]int, float64, error) {
	costs := r.env.Rates.Get()
	samples := map[int]int{}
	var total float64
	for _, n := range spec.Sizes {
		req, err := spec.request(ptx, n)
		if err != nil || n > vgpurun.Limit(req) {
			continue // the run reports it at that size
		}
		req.N, req.DType, req.GPU = n, spec.DType, gpumodel.Or(spec.GPU)
		pctx, cancel := context.WithTimeout(ctx, share)
		p, err := vgpurun.ProbeLaunch(pctx, req)
		cancel()
		if ctx.Err() != nil {
			return nil, 0, ctx.Err()
		}
		if errors.Is(err, context.DeadlineExceeded) {
			return nil, 0, fmt.Errorf("%s at n=%d: one thread block of it runs longer than %s in the virtual GPU, and the emulation runs at least one: over this run's share of the %s run time limit (use a smaller n, or more, smaller blocks)", name, n, share.Round(time.Millisecond), r.env.Limits.RunTimeout)
		}
		if err != nil {
			continue // the emulation reports it
		}
		sec, _ := p.EmulationSeconds(costs)
		if k := sampleWithin(p, sec, share.Seconds()); k < p.Blocks {
			samples[n] = k
			sec *= float64(k) / float64(p.Blocks)
		}
		total += sec + p.Seconds
	}
	return samples, total, nil
}

// sampleWithin is how many blocks a sampled emulation that p probed and that would take sec seconds
// in all should run to take at most share seconds: all of p.Blocks when they fit, or when the grid
// runs in full (not sampled); else fewer, at least one.
func sampleWithin(p vgpurun.Probe, sec, share float64) int {
	if p.Blocks >= p.GridBlocks || p.Blocks <= 1 || sec <= share {
		return p.Blocks
	}
	return max(1, int(float64(p.Blocks)*share/sec))
}
