package vgpurun

import (
	"context"
	"testing"

	"github.com/gpuplayground/playground/gpumodel"
)

// A table kernel run for an H100 is charged the SASS of sm_90 (cuda-smem: fewer SASS warp
// instructions than PTX ones, as Nsight Compute counted: 6.46e9 against the PTX's 8.14e9 at 4096),
// and one run for a T4, whose compute_70 PTX has no line record, the PTX's.
func TestRunChargesSASS(t *testing.T) {
	h100, t4 := gpumodel.GPUs[0], gpumodel.GPUs[2]
	if OwnSASS(h100) == nil || OwnSASS(t4) != nil {
		t.Fatalf("OwnSASS: H100 %v, T4 %v; want a record for sm_90 only", OwnSASS(h100) != nil, OwnSASS(t4) != nil)
	}
	r, err := Run(context.Background(), Request{Kernel: "cuda-smem", N: 64, DType: "float32", GPU: h100})
	if err != nil {
		t.Fatal(err)
	}
	if r.SASSInstructions <= 0 || r.SASSInstructions >= r.Counts.WarpInstructions*9/10 {
		t.Errorf("H100: %d SASS warp instructions, %d PTX; want under 0.9×", r.SASSInstructions, r.Counts.WarpInstructions)
	}
	if want := gpumodel.ModelAtSASS(r.Counts, h100, r.Occupancy, r.SASS); r.Model.Seconds != want.Seconds {
		t.Errorf("H100 model %g s, with SASS %g s", r.Model.Seconds, want.Seconds)
	}
	r, err = Run(context.Background(), Request{Kernel: "cuda-smem", N: 64, DType: "float32", GPU: t4})
	if err != nil {
		t.Fatal(err)
	}
	if r.SASSInstructions != r.Counts.WarpInstructions {
		t.Errorf("T4: %d SASS warp instructions, want the PTX's %d", r.SASSInstructions, r.Counts.WarpInstructions)
	}
}
