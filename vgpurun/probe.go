package vgpurun

import (
	"context"
	"fmt"
	"time"

	"github.com/gpuplayground/playground/estimate"
	"github.com/gpuplayground/playground/gpumodel"
	"github.com/gpuplayground/playground/problems"
	"github.com/gpuplayground/playground/vgpu"
)

// InstrMix is c's thread instructions by the emulator's cost classes (estimate.InstrClasses): the
// lanes that executed each PTX line of c.Lines, as a global-memory access where the line moved
// global sectors or made global requests, as a shared-memory access where it made shared requests,
// and as other work otherwise.
func InstrMix(c vgpu.Counts) [estimate.NumInstrClasses]float64 {
	var mix [estimate.NumInstrClasses]float64
	for _, l := range c.Lines {
		switch {
		case l.Requests > 0 || l.Sectors > 0:
			mix[estimate.InstrGlobal] += float64(l.Thread)
		case l.SharedRequests > 0 || l.Wavefronts > 0:
			mix[estimate.InstrShared] += float64(l.Thread)
		default:
			mix[estimate.InstrOther] += float64(l.Thread)
		}
	}
	return mix
}

// Probe is what one thread block of a launch did, for pricing the whole emulation before it runs
// (ProbeLaunch): its thread instructions by class, and the blocks the emulation will run.
type Probe struct {
	// Mix is the probed block's thread instructions by class (InstrMix); Seconds how long its
	// launch took here (measured, of the emulator, without the cache model).
	Mix     [estimate.NumInstrClasses]float64
	Seconds float64
	// Blocks are the blocks Run will run: the whole grid up to the problem's FullN, else a run of
	// at most SampledBlocks of them (req.SampleBlocks) and, for the default sample of a grid of
	// several rows, the wave estimate's probe block (watchFootprints); GridBlocks the grid's.
	Blocks, GridBlocks int
}

// ThreadInstructions is the probed block's thread instructions.
func (p Probe) ThreadInstructions() float64 {
	var s float64
	for _, x := range p.Mix {
		s += x
	}
	return s
}

// EmulationSeconds is the estimated time of the emulation p probed: its blocks, each doing the work
// of the probed one, at r's measured cost per thread instruction of each class
// (estimate.Rates.InstrCosts); ok is false where r has no such costs.
func (p Probe) EmulationSeconds(r *estimate.Rates) (float64, bool) {
	cost, ok := r.InstrCosts()
	if !ok {
		return 0, false
	}
	var perBlock float64
	for i, x := range p.Mix {
		perBlock += x * cost[i]
	}
	return perBlock * float64(p.Blocks), true
}

// ProbeLaunch runs block (0,0,0) of the learner's kernel req (Kernel "custom", for its problem, at
// req.N) alone, on the problem's inputs and without the cache model, and returns what it did: a
// block's work is the unit the emulation repeats, so its thread instructions by class, priced at
// the costs measured here (Probe.EmulationSeconds), estimate the emulation before it runs. A grid
// whose blocks differ (a ragged edge, a first block that does more) is priced as if every block
// did the first's work.
func ProbeLaunch(ctx context.Context, req Request) (Probe, error) {
	if req.Kernel != "custom" {
		return Probe{}, fmt.Errorf("only a learner's kernel is probed (the table's are priced by their own calibration)")
	}
	p, n := problemOf(req), req.N
	if n > p.SampledN {
		return Probe{}, TooLarge(p, n)
	}
	mod, err := vgpu.ParseModule(req.PTX)
	if err != nil {
		return Probe{}, err
	}
	bufs, params, err := problemBuffers(p, p.Inputs(req.rng(), n, req.DType), n, req)
	if err != nil {
		return Probe{}, err
	}
	cfg := vgpu.LaunchConfig{Grid: req.Grid, Block: req.Block, DynamicShared: req.SharedBytes, Only: [][3]int{{0, 0, 0}},
		Params: params, Buffers: bufs}
	start := time.Now()
	c, err := vgpu.Launch(ctx, mod, req.Entry, cfg)
	if err != nil {
		return Probe{}, err
	}
	total := max(req.Grid[0], 1) * max(req.Grid[1], 1) * max(req.Grid[2], 1)
	blocks := total
	if n > p.FullN {
		blocks = min(total, req.sampleSize())
		if req.SampleBlocks < 1 || req.SampleBlocks > SampledBlocks {
			blocks = min(total, blocks+gpumodel.WaveProbeBlocks(max(req.Grid[1], 1))) // watchFootprints
		}
	}
	return Probe{Mix: InstrMix(c), Seconds: time.Since(start).Seconds(), Blocks: blocks, GridBlocks: total}, nil
}

// problemBuffers are the buffers of p's launch at n holding host's inputs (outputs as newOutput
// makes them), and the kernel's parameters: a pointer to each buffer, then p's int parameters, then
// req's tensor maps (tensorMapArgs, whose error is the error).
func problemBuffers(p *problems.Problem, host [][]float64, n int, req Request) ([]*vgpu.Buffer, []vgpu.Arg, error) {
	dtype := req.DType
	bufs := make([]*vgpu.Buffer, len(p.Buffers))
	params := make([]vgpu.Arg, 0, len(p.Buffers)+len(p.ParamNames)+len(req.TensorMaps))
	for i, b := range p.Buffers {
		if b.Output {
			bufs[i] = newOutput(b, n, dtype)
		} else {
			bufs[i] = &vgpu.Buffer{Name: b.Name, Data: b.Encode(host[i], dtype)}
		}
		bufs[i].Shape = shapeOf(b, n, dtype)
		params = append(params, vgpu.Ptr(bufs[i]))
	}
	for _, v := range p.Params(n) {
		params = append(params, vgpu.S32(v))
	}
	tms, err := tensorMapArgs(p, bufs, req.TensorMaps, n, dtype)
	return bufs, append(params, tms...), err
}
