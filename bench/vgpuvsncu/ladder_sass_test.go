package main

import (
	"context"
	"testing"

	"github.com/gpuplayground/playground/gpumodel"
)

// boehmCuBLAS is the cuBLAS SGEMM rate Simon Boehm measured on the RTX A6000 at 4092, in GFLOP/s
// (the same worklog's table as boehmA6000, its row 0).
const boehmCuBLAS = 23249.6

// With the issue and latency terms charging the SASS that ptxas 12.4 makes for sm_86
// (vgpurun.OwnSASS), no rung of the project's ladder modelled on the RTX A6000 is faster than
// cuBLAS was measured there (vectorized and warptile were at 30.3 and 30.5 TFLOP/s, charged in PTX
// instructions), and every rung but cuda-coalesced is within 1.5× of Boehm's measurement of its
// step. cuda-coalesced is DRAM-bound, where the SASS changes nothing: its wave estimate's DRAM reads
// are too low for the A6000's 6 MB L2 (docs/benchmarks.md, "The model against a published ladder").
func TestPublishedLadderWithSASS(t *testing.T) {
	g, err := gpumodel.LookupGPU("RTX A6000")
	if err != nil {
		t.Fatal(err)
	}
	ms, err := modelLadder(context.Background(), boehmA6000, boehmN, g)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		r := m.GFLOPS() / m.rung.GFLOPS
		t.Logf("%s (%s): modelled %.0f GFLOP/s (%s), measured %.0f (×%.2f)", m.Kernel, m.Step, m.GFLOPS(), m.Model.Bound, m.rung.GFLOPS, r)
		if m.GFLOPS() > boehmCuBLAS {
			t.Errorf("%s: modelled %.0f GFLOP/s, above cuBLAS's measured %.0f", m.Kernel, m.GFLOPS(), boehmCuBLAS)
		}
		if m.Kernel != "cuda-coalesced" && (r < 1/1.5 || r > 1.5) {
			t.Errorf("%s (%s): modelled %.0f GFLOP/s, measured %.0f (×%.2f): not within 1.5×", m.Kernel, m.Step, m.GFLOPS(), m.rung.GFLOPS, r)
		}
	}
}
