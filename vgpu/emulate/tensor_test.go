package emulate

import (
	"context"
	"math"
	"slices"
	"testing"

	"github.com/gpuplayground/playground/sim/datasheet"
	"github.com/gpuplayground/playground/vgpu"
)

// The tensor cores' FLOPs have their own term at the datasheet's tensor-core peak (spread over the
// SMs the grid keeps busy), the other FLOPs stay at the FP32 peak; a GPU with no tensor-core peak
// stored charges them all to "compute". On Hopper the warp-level mma.sync reaches only the measured
// HopperMMASyncPerClock per SM clock, below the datasheet's peak (which needs wgmma).
func TestModelTensorTerm(t *testing.T) {
	g, _ := datasheet.LookupGPU("A100 SXM")
	a, _ := datasheet.LookupAccelerator("A100 SXM")
	c := vgpu.Counts{FLOPs: 1e12 + 1e10, TensorFLOPs: 1e12}
	m := Model(c, g)
	if got, want := term(m, "tensor"), 1e12/a.Dense; math.Abs(got-want) > 1e-9*want || m.Bound != "tensor" {
		t.Errorf("tensor term %g (bound %s), want %g (tensor)", got, m.Bound, want)
	}
	if got, want := term(m, "compute"), 1e10/g.FP32; math.Abs(got-want) > 1e-9*want {
		t.Errorf("compute term %g, want %g", got, want)
	}
	c.GridBlocks = 33 // 33 of the 108 SMs busy: 108/33 times as long
	if got, want := term(Model(c, g), "tensor"), float64(g.SMs)/33*1e12/a.Dense; math.Abs(got-want) > 1e-9*want {
		t.Errorf("tensor term on 33 blocks %g, want %g", got, want)
	}
	if got, want := TensorPeak(g.AtClock(g.Clock/2)), a.Dense/2; math.Abs(got-want) > 1e-9*want {
		t.Errorf("tensor peak at half the clock %g, want %g", got, want)
	}
	h, _ := datasheet.LookupGPU("H100 SXM")
	ha, _ := datasheet.LookupAccelerator("H100 SXM")
	if got, want := TensorPeak(h), HopperMMASyncPerClock*float64(h.SMs)*h.Clock; math.Abs(got-want) > 1e-9*want || !(got < 0.75*ha.Dense) {
		t.Errorf("H100 tensor peak for mma.sync %g, want %g (under ¾ of the datasheet's %g)", got, want, ha.Dense)
	}
	if got, want := TensorPeak(h.AtClock(1.355e9)), HopperMMASyncPerClock*float64(h.SMs)*1.355e9; math.Abs(got-want) > 1e-9*want {
		t.Errorf("H100 tensor peak at Nsight Compute's clock %g, want %g", got, want)
	}
	g6, _ := datasheet.LookupGPU("RTX A6000") // no tensor-core peak stored
	m6 := Model(vgpu.Counts{FLOPs: 1e12, TensorFLOPs: 1e12}, g6)
	if TensorPeak(g6) != 0 || term(m6, "tensor") != -1 || m6.Bound != "compute" {
		t.Errorf("RTX A6000: peak %g, model %+v; want no tensor term, the FLOPs at the FP32 peak", TensorPeak(g6), m6)
	}
}

// term is the seconds of m's term name, -1 when it has none.
func term(m datasheet.Model, name string) float64 {
	for _, t := range m.Terms {
		if t.Name == name {
			return t.Seconds
		}
	}
	return -1
}

// The tensor-core rungs: every FLOP is a tensor core's; cuda-mma's ldmatrix reads of the plain
// shared layout conflict, the swizzled layout's do not, and the modelled time falls as the ladder
// climbs from cuda-mma to cuda-mma-swizzle.
func TestTensorRungs(t *testing.T) {
	g, _ := datasheet.LookupGPU("H100 SXM")
	res := map[string]Result{}
	for _, k := range []string{"cuda-mma", "cuda-mma-async", "cuda-mma-swizzle"} {
		r, err := Run(context.Background(), Request{Kernel: k, N: 256, DType: "float32", GPU: g, Seed: 5})
		if err != nil {
			t.Fatal(err)
		}
		c := r.Counts
		if !r.OK || len(r.Notes) != 0 || c.TensorFLOPs != 2*256*256*256 || term(r.Model, "compute") != 0 {
			t.Errorf("%s: ok %v (rel %g), notes %v, tensor FLOPs %d of %d, model %+v", k, r.OK, r.RelError, r.Notes, c.TensorFLOPs, c.FLOPs, r.Model)
		}
		res[k] = r
	}
	plain, async, swz := res["cuda-mma"].Counts, res["cuda-mma-async"].Counts, res["cuda-mma-swizzle"].Counts
	if plain.BankConflicts() == 0 || async.BankConflicts() != plain.BankConflicts() || swz.BankConflicts() != 0 {
		t.Errorf("bank conflicts: %d, %d, %d; want some, the same, none", plain.BankConflicts(), async.BankConflicts(), swz.BankConflicts())
	}
	// cp.async's shared writes are counted apart from the shared wavefronts (as Nsight Compute counts
	// an LDGSTS), where cuda-mma's st.shared are among them
	if swz.SharedIdealWavefronts != async.SharedIdealWavefronts || swz.AsyncCopyWavefronts != async.AsyncCopyWavefronts ||
		swz.SharedIdealWavefronts+swz.AsyncCopyWavefronts != plain.SharedIdealWavefronts || plain.AsyncCopyWavefronts != 0 ||
		swz.LoadSectors != plain.LoadSectors {
		t.Errorf("the swizzle changes where, not what: ideal wavefronts %d + copies %d vs %d + %d vs %d, sectors %d vs %d",
			swz.SharedIdealWavefronts, swz.AsyncCopyWavefronts, async.SharedIdealWavefronts, async.AsyncCopyWavefronts,
			plain.SharedIdealWavefronts, swz.LoadSectors, plain.LoadSectors)
	}
	if !(res["cuda-mma-swizzle"].Model.Seconds < res["cuda-mma-async"].Model.Seconds) {
		t.Errorf("modelled: swizzle %g s, async %g s", res["cuda-mma-swizzle"].Model.Seconds, res["cuda-mma-async"].Model.Seconds)
	}
}

// cuda-mma-warptile doubles each warp's piece of C (64×64 instead of 64×32) and the block's (256×128
// instead of 128×128): per step of 16 along K each of a block's 8 warps reads (WM + WN)/4 wavefronts
// of ldmatrix for 2·WM·WN·16 FLOPs, 128 / (1/WM + 1/WN) FLOPs per shared wavefront: 2,731 for
// cuda-mma-swizzle, 4,096 for cuda-mma-warptile; and the block stages (BM + BN)·16 bf16 by cp.async,
// (BM + BN)/4 wavefronts, counted apart: 2·WM·WN·16·8 / ((BM + BN)/4) FLOPs per copied wavefront,
// 8,192 and 10,923. The virtual GPU's counts must say the same, with no bank conflicts. The modelled
// shared-memory term falls; the modelled time does not, as measured on an H200 (0.437 ms against
// 0.465 ms at n = 4096, bench/gpucheck/results/2026-11-26-h200): the warp tile's 236 registers leave
// one block of 8 warps on an SM, whose waits for ldmatrix and the tensor cores no other block
// hides, and the latency term, not a throughput one, bounds it.
func TestWarpTileRung(t *testing.T) {
	g, _ := datasheet.LookupGPU("H100 SXM")
	const n = 256
	res := map[string]Result{}
	for _, k := range []string{"cuda-mma-swizzle", "cuda-mma-warptile"} {
		r, err := Run(context.Background(), Request{Kernel: k, N: n, DType: "float32", GPU: g, Seed: 7})
		if err != nil {
			t.Fatal(err)
		}
		if c := r.Counts; !r.OK || len(r.Notes) != 0 || c.TensorFLOPs != 2*n*n*n || c.BankConflicts() != 0 {
			t.Errorf("%s: ok %v (rel %g), notes %v, tensor FLOPs %d, conflicts %d", k, r.OK, r.RelError, r.Notes, c.TensorFLOPs, c.BankConflicts())
		}
		res[k] = r
	}
	perWavefront := func(wm, wn float64) float64 { return 128 / (1/wm + 1/wn) }
	perCopied := func(bm, bn, wm, wn float64) float64 { return 2 * wm * wn * 16 * 8 / ((bm + bn) / 4) }
	for k, want := range map[string][2]float64{"cuda-mma-swizzle": {perWavefront(64, 32), perCopied(128, 128, 64, 32)},
		"cuda-mma-warptile": {perWavefront(64, 64), perCopied(256, 128, 64, 64)}} {
		c := res[k].Counts
		if got := float64(c.TensorFLOPs) / float64(c.SharedWavefronts); math.Abs(got-want[0]) > 1e-9*want[0] {
			t.Errorf("%s: %g FLOPs per shared wavefront (%d wavefronts), want %g", k, got, c.SharedWavefronts, want[0])
		}
		if got := float64(c.TensorFLOPs) / float64(c.AsyncCopyWavefronts); math.Abs(got-want[1]) > 1e-9*want[1] {
			t.Errorf("%s: %g FLOPs per copied wavefront (%d), want %g", k, got, c.AsyncCopyWavefronts, want[1])
		}
	}
	// the modelled terms at n = 4096, where both grids fill the H100's 132 SMs; a few sampled blocks
	// suffice for the per-SM terms, every block doing the same work, but not for the DRAM estimate
	// (emulate's wave.go builds each wave's traffic from the sampled blocks), which is left out here
	model := map[string]datasheet.Model{}
	for _, k := range []string{"cuda-mma-swizzle", "cuda-mma-warptile"} {
		r, err := Run(context.Background(), Request{Kernel: k, N: 4096, DType: "float32", GPU: g, Seed: 7, SampleBlocks: 2})
		if err != nil {
			t.Fatal(err)
		}
		model[k] = r.Model
	}
	largest := func(m datasheet.Model, skip ...string) datasheet.Term {
		var most datasheet.Term
		for _, x := range m.Terms {
			if x.Name != "DRAM" && x.Name != "launch" && !slices.Contains(skip, x.Name) && x.Seconds > most.Seconds {
				most = x
			}
		}
		return most
	}
	swz, wt := model["cuda-mma-swizzle"], model["cuda-mma-warptile"]
	if a, b := largest(wt), largest(swz); !(term(wt, "shared memory") < term(swz, "shared memory") && a.Name == "latency" && a.Seconds > b.Seconds) {
		t.Errorf("modelled: warptile %s %g s (shared %g s), swizzle %s %g s (shared %g s); want less shared, a latency bound, longer",
			a.Name, a.Seconds, term(wt, "shared memory"), b.Name, b.Seconds, term(swz, "shared memory"))
	}
	// of the throughput limits, the warp tile's largest is the tensor cores'
	if most := largest(wt, "latency"); most.Name != "tensor" {
		t.Errorf("warptile's largest throughput term is %s (%g s), want tensor: %+v", most.Name, most.Seconds, wt.Terms)
	}
}
