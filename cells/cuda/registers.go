package cuda

import (
	"context"
	"fmt"
	"reflect"
	"slices"

	"github.com/gpuplayground/playground/cells"
	"github.com/gpuplayground/playground/gpumodel"
	"github.com/gpuplayground/playground/vgpurun"
)

// emulate runs the cell's kernel at n in dtype in the virtual GPU (launch), then recomputes its
// occupancy and modelled time with its registers per thread (finish): those the cell assumes
// (registers:, a what-if: assumeRegisters), else those ptxas allocated for g's architecture in the
// compile (ptxasRegisters of res), else none (the occupancy is then the bound without them). Its
// modelled time charges the SASS of px where px has it for g's architecture (chargeSASS), else PTX
// instructions.
func (s Spec) emulate(ctx context.Context, host cells.GPU, ptx string, px ptxasReport, n int, dtype string, g gpumodel.GPU, sample int) (vgpurun.Result, error) {
	out, err := s.launch(ctx, host, ptx, n, dtype, g, sample)
	if err != nil {
		return out, err
	}
	return s.finish(out, g, px)
}

// launch runs the cell's kernel at n in dtype in the virtual GPU (vgpurun.RunOn host, the server's
// GPU host) with times modelled on g (its request: Spec.request), as the virtual GPU returns it. A
// sampled launch runs sample blocks (vgpurun.Request.SampleBlocks; 0: the default).
func (s Spec) launch(ctx context.Context, host cells.GPU, ptx string, n int, dtype string, g gpumodel.GPU, sample int) (vgpurun.Result, error) {
	req, err := s.request(ptx, n)
	if err != nil {
		return vgpurun.Result{}, err
	}
	req.N, req.DType, req.GPU, req.SampleBlocks = n, dtype, g, sample
	return vgpurun.RunOn(ctx, host, req)
}

// sameLaunches reports whether v launches the kernel of ptx as s does at each of s's sizes: a
// variant that changes only the registers assumed (registers:), which the launch does not see
// (emulate assumes them after it), so its rows can be s's launches, finished as its own.
func (s Spec) sameLaunches(v Spec, ptx string) bool {
	if !slices.Equal(s.Sizes, v.Sizes) || s.DType != v.DType {
		return false
	}
	for _, n := range s.Sizes {
		a, errA := s.request(ptx, n)
		b, errB := v.request(ptx, n)
		if errA != nil || errB != nil || !reflect.DeepEqual(a, b) {
			return false
		}
	}
	return true
}

// finish is emulate's launch out of s's kernel on g with its modelled time charging the SASS of px
// (chargeSASS) and its registers (those assumed, else ptxas's).
func (s Spec) finish(out vgpurun.Result, g gpumodel.GPU, px ptxasReport) (vgpurun.Result, error) {
	out = chargeSASS(out, g, px)
	if s.Registers > 0 {
		return assumeRegisters(out, s.Registers, s.Block, g)
	}
	if r, ok := ptxasRegisters(px.Resources, s.Kernel, g.CC); ok {
		return withRegisters(out, r.Registers, s.Block, g, ptxasLabel(r))
	}
	return out, nil
}

// assumeRegisters is res, a launch of blocks of block threads on g, with its theoretical occupancy
// and modelled time recomputed for regs registers per thread: the occupancy calculator's
// (gpumodel's calculator, the largest shared-memory carve-out, as vgpurun's own) with those registers and
// the launch's shared memory, its text saying the registers are assumed, and gpumodel.ModelAtSASS
// with it (charging res.SASS, nil: PTX instructions); the rate in res.RateUnit scales with the time. The counts stay as emulated: their cache model
// shared each SM's L1 among the blocks resident without the register limit, at least as many as
// with it, so their L1 hit rate is if anything low. A block that cannot launch with regs (more
// registers than a block may have) is an error, as cudaLaunchKernel's "too many resources
// requested for launch".
func assumeRegisters(res vgpurun.Result, regs int, block [3]int, g gpumodel.GPU) (vgpurun.Result, error) {
	return withRegisters(res, regs, block, g, fmt.Sprintf("%d registers assumed", regs))
}

// withRegisters is assumeRegisters with the occupancy's text saying where regs came from (label).
func withRegisters(res vgpurun.Result, regs int, block [3]int, g gpumodel.GPU, label string) (vgpurun.Result, error) {
	lim, err := gpumodel.LookupLimits(g.CC)
	if err != nil {
		return res, err
	}
	threads := max(block[0], 1) * max(block[1], 1) * max(block[2], 1)
	o := res.Occupancy
	o.Registers = regs
	if o.Result, err = lim.Occupancy(threads, regs, o.SharedBytes, lim.SharedPerSM); err != nil {
		return res, fmt.Errorf("with registers: %d the kernel does not launch on the %s: %v", regs, g.Name, err)
	}
	o.Text = fmt.Sprintf("%.3g%% (%s; %s)", 100*o.Result.Occupancy, o.Result.Limiting(), label)
	before := res.Model.Seconds
	res.Occupancy, res.Model = o, gpumodel.ModelAtSASS(res.Counts, g, o, res.SASS)
	if before > 0 && res.Model.Seconds > 0 {
		res.Rate *= before / res.Model.Seconds
	}
	return res, nil
}
