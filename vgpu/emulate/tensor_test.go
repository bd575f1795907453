package emulate

import (
	"context"
	"math"
	"testing"

	"github.com/gpuplayground/playground/sim/datasheet"
	"github.com/gpuplayground/playground/vgpu"
)

// The tensor cores' FLOPs have their own term at the datasheet's tensor-core peak (spread over the
// SMs the grid keeps busy), the other FLOPs stay at the FP32 peak; a GPU with no tensor-core peak
// stored charges them all to "compute".
func TestModelTensorTerm(t *testing.T) {
	g, _ := datasheet.LookupGPU("H100 SXM")
	a, _ := datasheet.LookupAccelerator("H100 SXM")
	c := vgpu.Counts{FLOPs: 1e12 + 1e10, TensorFLOPs: 1e12}
	m := Model(c, g)
	if got, want := term(m, "tensor"), 1e12/a.Dense; math.Abs(got-want) > 1e-9*want || m.Bound != "tensor" {
		t.Errorf("tensor term %g (bound %s), want %g (tensor)", got, m.Bound, want)
	}
	if got, want := term(m, "compute"), 1e10/g.FP32; math.Abs(got-want) > 1e-9*want {
		t.Errorf("compute term %g, want %g", got, want)
	}
	c.GridBlocks = 33 // a quarter of the SMs busy: four times as long
	if got, want := term(Model(c, g), "tensor"), 4*1e12/a.Dense; math.Abs(got-want) > 1e-9*want {
		t.Errorf("tensor term on 33 blocks %g, want %g", got, want)
	}
	if got, want := TensorPeak(g.AtClock(g.Clock/2)), a.Dense/2; math.Abs(got-want) > 1e-9*want {
		t.Errorf("tensor peak at half the clock %g, want %g", got, want)
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
	if swz.SharedIdealWavefronts != plain.SharedIdealWavefronts || swz.LoadSectors != plain.LoadSectors {
		t.Errorf("the swizzle changes where, not what: ideal wavefronts %d vs %d, sectors %d vs %d",
			swz.SharedIdealWavefronts, plain.SharedIdealWavefronts, swz.LoadSectors, plain.LoadSectors)
	}
	if !(res["cuda-mma-swizzle"].Model.Seconds < res["cuda-mma-async"].Model.Seconds) {
		t.Errorf("modelled: swizzle %g s, async %g s", res["cuda-mma-swizzle"].Model.Seconds, res["cuda-mma-async"].Model.Seconds)
	}
}

// cuda-mma-warptile doubles each warp's piece of C (64×64 instead of 64×32) and the block's (256×128
// instead of 128×128): per step of 16 along K a block stages (BM + BN)·16 bf16, (BM + BN)/4
// wavefronts, and each of its 8 warps reads (WM + WN)/4 wavefronts of ldmatrix for 2·WM·WN·16 FLOPs,
// so the FLOPs per shared wavefront are 128 / (1/BM + 1/BN + 1/WM + 1/WN): 2,048 for cuda-mma-swizzle,
// 2,979 (exactly 131,072 / 44) for cuda-mma-warptile. The virtual GPU's counts must say the same,
// with no bank conflicts, and the modelled time must fall.
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
	perWavefront := func(bm, bn, wm, wn float64) float64 { return 128 / (1/bm + 1/bn + 1/wm + 1/wn) }
	for k, want := range map[string]float64{"cuda-mma-swizzle": perWavefront(128, 128, 64, 32), "cuda-mma-warptile": perWavefront(256, 128, 64, 64)} {
		c := res[k].Counts
		if got := float64(c.TensorFLOPs) / float64(c.SharedWavefronts); math.Abs(got-want) > 1e-9*want {
			t.Errorf("%s: %g FLOPs per shared wavefront (%d wavefronts), want %g", k, got, c.SharedWavefronts, want)
		}
	}
	// the modelled time at n = 4096, where both grids fill the H100's 132 SMs (at 256 the warp-tile
	// rung's 2 blocks keep 2 SMs busy, the swizzled rung's 4 keep 4: the bigger tile is slower there);
	// a few sampled blocks suffice, every block doing the same work
	model := map[string]datasheet.Model{}
	for _, k := range []string{"cuda-mma-swizzle", "cuda-mma-warptile"} {
		r, err := Run(context.Background(), Request{Kernel: k, N: 4096, DType: "float32", GPU: g, Seed: 7, SampleBlocks: 2})
		if err != nil {
			t.Fatal(err)
		}
		model[k] = r.Model
	}
	swz, wt := model["cuda-mma-swizzle"], model["cuda-mma-warptile"]
	if !(term(wt, "shared memory") < term(swz, "shared memory") && wt.Seconds < swz.Seconds) {
		t.Errorf("modelled: warptile %g s (shared %g s), swizzle %g s (shared %g s)", wt.Seconds, term(wt, "shared memory"), swz.Seconds, term(swz, "shared memory"))
	}
}
