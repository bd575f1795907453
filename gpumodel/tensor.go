package gpumodel

import (
	"strings"

	"github.com/gpuplayground/playground/vgpu"
)

// TensorPeak is g's tensor-core rate in FLOP/s for the warp-level instructions the virtual GPU runs
// (mma.sync, and wmma.mma, which compiles to it) with 16-bit inputs (FP16 or BF16) and FP32
// accumulation, dense: the Accelerators entry of g's name (with its source there), scaled
// by g's FP32 peak over the datasheet's when g runs at another clock (GPU.AtClock), but on Hopper
// (compute capability 9.x) at most HopperMMASyncPerClock per SM clock: there the datasheet's peak
// needs the warpgroup-level wgmma (PTX ISA 8.x, section 9.7.15 "Asynchronous Warpgroup Level Matrix
// Multiply-Accumulate Instructions"; TensorPeakFor gives it to kernels that run it). 0 where no peak is
// published here, and the tensor-core FLOPs are then charged to the "compute" term at the FP32 peak.
func TensorPeak(g GPU) float64 { return tensorPeak(g, false) }

// TensorPeakFor is g's tensor-core rate for the instructions counts c ran: on Hopper, the datasheet's
// peak, without TensorPeak's mma.sync cap, when c ran the warpgroup-level wgmma.mma_async
// (c.GmmaInstructions, which the virtual GPU runs since the Hopper rungs), the instruction that
// peak is published for; else TensorPeak. A kernel mixing both is charged at wgmma's rate.
func TensorPeakFor(g GPU, c vgpu.Counts) float64 { return tensorPeak(g, c.GmmaInstructions > 0) }

// tensorPeak is TensorPeak, capped on Hopper at HopperMMASyncPerClock unless wgmma is set.
func tensorPeak(g GPU, wgmma bool) float64 {
	a, err := LookupAccelerator(g.Name)
	if err != nil || a.Kind != "GPU" || a.Dense <= 0 {
		return 0
	}
	peak := a.Dense
	if base, err := LookupGPU(g.Name); err == nil && base.FP32 > 0 && g.FP32 > 0 {
		peak *= g.FP32 / base.FP32
	}
	if strings.HasPrefix(g.CC, "9.") && g.Clock > 0 && !wgmma {
		peak = min(peak, HopperMMASyncPerClock*float64(g.SMs)*g.Clock)
	}
	return peak
}

// HopperMMASyncPerClock is the FLOPs one Hopper SM sustains per clock with mma.sync m16n8k16 (BF16
// inputs, FP32 accumulation): 2,688, measured on an H200 (GH100, the H100's SM) by
// bench/gpucheck/mma_rate.cu on 2026-11-26 with 8 to 32 warps per SM, each with 4 or 8 independent
// accumulators (bench/gpucheck/results/2026-11-26-h200/mma_rate.log), where the datasheet's 989
// TFLOP/s dense is 4,096 per SM clock (132 SMs at 1.83 GHz). Published figures agree: "the older
// mma.sync instruction can only reach about ⅔ the peak throughput of Hopper Tensor Cores" (Shah et
// al., FlashAttention-3, PyTorch blog, July 2024, footnote 1, citing Luo et al., arXiv:2402.13499),
// and a run of Luo et al.'s microbenchmarks on an H100 SXM measured 1,339.48 FMA (2,679 FLOP) per
// SM per clock for mma.sync m16n8k16 with FP16 inputs (github.com/Johnsonms/NVIDIA-Hopper-Benchmark,
// reproduction/H100-dapperdingo/raw/mma_m16n8k16.log). Nsight Compute's tensor pipe utilisation of
// the cuda-mma-swizzle rung (sm__pipe_tensor_op_hmma_cycles_active, 51%) matches its FLOPs per
// clock as a share of this rate (50%).
const HopperMMASyncPerClock = 2688

// isTensorOp reports whether a PTX instruction's opcode runs on the tensor cores (wmma.mma,
// mma.sync): what Counts.TensorFLOPs counts.
func isTensorOp(op string) bool {
	return strings.HasPrefix(op, "wmma.mma") || strings.HasPrefix(op, "mma.")
}
