package main

import (
	"context"
	"testing"

	"github.com/gpuplayground/playground/gpumodel"
)

// boehmCuBLAS is the cuBLAS SGEMM rate Simon Boehm measured on the RTX A6000 at 4092, in GFLOP/s
// (the same worklog's table as boehmA6000, its row 0).
const boehmCuBLAS = 23249.6

// The ladder on the RTX A6000 with the issue and latency terms charging the SASS that ptxas 12.4
// makes for sm_86 (vgpurun.OwnSASS), against Boehm's measurements (docs/benchmarks.md, "SASS
// instructions against Nsight Compute"). What the issue asked and is not met is kept as it is, so
// that a change that meets it, or moves further, is seen:
//   - within 1.5× of the measured step: every rung but cuda-coalesced (DRAM-bound, ×1.68: the SASS
//     changes nothing there) and cuda-vectorized (issue-bound, ×1.76), which stay within 2×;
//   - under cuBLAS's measured rate: every rung but cuda-vectorized and cuda-warptile (32.2 TFLOP/s
//     each on 2026-11-29), which sm_86's SASS makes 6% fewer instructions than their PTX, not more:
//     what keeps them at 18–22 TFLOP/s on the hardware is not their instruction count but issue and
//     shared-memory loads that do not overlap between barriers (Nsight Compute on the H100: issue
//     active 60% and the L1 pipe busy 49–50% of the cycles, which add up to the elapsed time), where
//     the model takes the larger of the two (docs/benchmarks.md, "Why the model is too fast for them").
func TestPublishedLadderWithSASS(t *testing.T) {
	g, err := gpumodel.LookupGPU("RTX A6000")
	if err != nil {
		t.Fatal(err)
	}
	ms, err := modelLadder(context.Background(), sharedRuns.run, boehmA6000, boehmN, g)
	if err != nil {
		t.Fatal(err)
	}
	far := map[string]bool{"cuda-coalesced": true, "cuda-vectorized": true}
	aboveCuBLAS := map[string]bool{"cuda-vectorized": true, "cuda-warptile": true}
	for _, m := range ms {
		r := m.GFLOPS() / m.rung.GFLOPS
		t.Logf("%s (%s): modelled %.0f GFLOP/s (%s), measured %.0f (×%.2f)", m.Kernel, m.Step, m.GFLOPS(), m.Model.Bound, m.rung.GFLOPS, r)
		if within := 1.5 + 0.5*b2f(far[m.Kernel]); r < 1/within || r > within {
			t.Errorf("%s (%s): modelled %.0f GFLOP/s, measured %.0f (×%.2f): not within %g×", m.Kernel, m.Step, m.GFLOPS(), m.rung.GFLOPS, r, within)
		}
		if above := m.GFLOPS() > boehmCuBLAS; above != aboveCuBLAS[m.Kernel] {
			t.Errorf("%s: modelled %.0f GFLOP/s against cuBLAS's measured %.0f: above %v, was %v", m.Kernel, m.GFLOPS(), boehmCuBLAS, above, aboveCuBLAS[m.Kernel])
		}
	}
}

// b2f is 1 for true, 0 for false.
func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
