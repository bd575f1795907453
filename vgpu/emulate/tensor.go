package emulate

import (
	"strings"

	"github.com/gpuplayground/playground/sim/datasheet"
)

// TensorPeak is g's tensor-core peak in FLOP/s for 16-bit inputs (FP16 or BF16) with FP32
// accumulation, dense: the datasheet.Accelerators entry of g's name (with its source there), scaled
// by g's FP32 peak over the datasheet's when g runs at another clock (GPU.AtClock); 0 where none is
// published here, and the tensor-core FLOPs are then charged to the "compute" term at the FP32 peak.
// It is the datasheet's peak, which no measurement here shows the warp-level mma.sync reaching on
// Hopper (whose own instruction for it is the warpgroup-level wgmma: PTX ISA 8.x, section 9.7.15
// "Asynchronous Warpgroup Level Matrix Multiply-Accumulate Instructions"): for mma.sync an
// optimistic bound.
func TensorPeak(g datasheet.GPU) float64 {
	a, err := datasheet.LookupAccelerator(g.Name)
	if err != nil || a.Kind != "GPU" || a.Dense <= 0 {
		return 0
	}
	peak := a.Dense
	if base, err := datasheet.LookupGPU(g.Name); err == nil && base.FP32 > 0 && g.FP32 > 0 {
		peak *= g.FP32 / base.FP32
	}
	return peak
}

// isTensorOp reports whether a PTX instruction's opcode runs on the tensor cores (wmma.mma,
// mma.sync): what Counts.TensorFLOPs counts.
func isTensorOp(op string) bool {
	return strings.HasPrefix(op, "wmma.mma") || strings.HasPrefix(op, "mma.")
}
