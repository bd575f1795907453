package gpumodel

import (
	"math"
	"testing"

	"github.com/gpuplayground/playground/vgpu"
)

// The tensor cores' FLOPs have their own term at the datasheet's tensor-core peak (spread over the
// SMs the grid keeps busy), the other FLOPs stay at the FP32 peak; a GPU with no tensor-core peak
// stored charges them all to "compute". On Hopper the warp-level mma.sync reaches only the measured
// HopperMMASyncPerClock per SM clock, below the datasheet's peak (which needs wgmma).
func TestModelTensorTerm(t *testing.T) {
	g, _ := LookupGPU("A100 SXM")
	a, _ := LookupAccelerator("A100 SXM")
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
	h, _ := LookupGPU("H100 SXM")
	ha, _ := LookupAccelerator("H100 SXM")
	if got, want := TensorPeak(h), HopperMMASyncPerClock*float64(h.SMs)*h.Clock; math.Abs(got-want) > 1e-9*want || !(got < 0.75*ha.Dense) {
		t.Errorf("H100 tensor peak for mma.sync %g, want %g (under ¾ of the datasheet's %g)", got, want, ha.Dense)
	}
	if got, want := TensorPeak(h.AtClock(1.355e9)), HopperMMASyncPerClock*float64(h.SMs)*1.355e9; math.Abs(got-want) > 1e-9*want {
		t.Errorf("H100 tensor peak at Nsight Compute's clock %g, want %g", got, want)
	}
	g6, _ := LookupGPU("RTX A6000") // no tensor-core peak stored
	m6 := Model(vgpu.Counts{FLOPs: 1e12, TensorFLOPs: 1e12}, g6)
	if TensorPeak(g6) != 0 || term(m6, "tensor") != -1 || m6.Bound != "compute" {
		t.Errorf("RTX A6000: peak %g, model %+v; want no tensor term, the FLOPs at the FP32 peak", TensorPeak(g6), m6)
	}
}

// term is the seconds of m's term name, -1 when it has none.
func term(m Time, name string) float64 {
	for _, t := range m.Terms {
		if t.Name == name {
			return t.Seconds
		}
	}
	return -1
}

// A kernel that ran wgmma gets the datasheet's tensor peak on Hopper, where mma.sync gets its
// measured ⅔; elsewhere the two are the same.
func TestModelTensorTermForWgmma(t *testing.T) {
	h, _ := LookupGPU("H100 SXM")
	ha, _ := LookupAccelerator("H100 SXM")
	sync := vgpu.Counts{FLOPs: 1e12, TensorFLOPs: 1e12}
	wg := sync
	wg.GmmaInstructions = 4
	if got, want := TensorPeakFor(h, wg), ha.Dense; math.Abs(got-want) > 1e-9*want {
		t.Errorf("H100 wgmma peak %g, want the datasheet's %g", got, want)
	}
	if got, want := TensorPeakFor(h, sync), TensorPeak(h); got != want {
		t.Errorf("H100 mma.sync peak %g, want TensorPeak's %g", got, want)
	}
	if got, want := term(Model(wg, h), "tensor"), 1e12/ha.Dense; math.Abs(got-want) > 1e-9*want {
		t.Errorf("H100 tensor term for wgmma %g, want %g", got, want)
	}
	a, _ := LookupGPU("A100 SXM")
	if TensorPeakFor(a, wg) != TensorPeak(a) {
		t.Errorf("A100: wgmma changes the peak to %g from %g", TensorPeakFor(a, wg), TensorPeak(a))
	}
}

// The TMA's bytes pass the L2: a cached launch's L2 term counts them as 32-byte sectors.
func TestModelL2TermCountsTMABytes(t *testing.T) {
	h, _ := LookupGPU("H100 SXM")
	c := vgpu.Counts{Cached: true, L2Sectors: 1000}
	before := term(Model(c, h), "L2")
	c.TMABytes = 32 * 3000
	if got, want := term(Model(c, h), "L2"), 4*before; math.Abs(got-want) > 1e-9*want {
		t.Errorf("L2 term with 3000 sectors of TMA %g, want %g (4× the 1000 sectors' %g)", got, want, before)
	}
}

// A multicast TMA copy reads the L2 once for all the CTAs it writes: its delivered bytes
// (TMAMulticastBytes, one count per destination CTA) add nothing to the L2 term.
func TestModelL2TermChargesMulticastOnce(t *testing.T) {
	h, _ := LookupGPU("H100 SXM")
	c := vgpu.Counts{Cached: true, L2Sectors: 1000, TMABytes: 32 * 3000}
	before := term(Model(c, h), "L2")
	c.TMAMulticastBytes = 2 * c.TMABytes
	if got := term(Model(c, h), "L2"); got != before {
		t.Errorf("L2 term with multicast bytes %g, want %g (the L2 reads, TMABytes, only)", got, before)
	}
}
