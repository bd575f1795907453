// Package tpucore models one TPU TensorCore executing a tiled matrix multiplication C (m×n) = A (m×k) ·
// B (k×n), the way a Pallas kernel with a (m/bm, n/bn, k/bk) grid and BlockSpecs of (bm, bk), (bk, bn)
// and (bm, bn) runs it: HBM→VMEM copies of the blocks and the MXUs' passes over them as a
// double-buffered pipeline, the vector unit (VPU) adding into an f32 accumulator in VMEM and running
// the epilogue, and the finished output block copied VMEM→HBM. It is a model built from published
// figures (see Generation), never a measurement, and it reports where the time goes.
//
// The model, in full:
//
//   - Each MXU is a 128×128 weight-stationary systolic array (the scaling book, "How to Think About
//     TPUs", https://jax-ml.github.io/scaling-book/tpus/: "one bfloat16[8,128] @ bf16[128,128] ->
//     f32[8,128] matrix multiply every 8 cycles", i.e. one LHS row per cycle). One weight tile with r
//     rows costs what package sim/systolicarray counts for it: N cycles to load the weights and
//     r + 2N − 2 to fill, stream and drain. A run of T tiles on one MXU overlaps each next tile's weight
//     load and the previous tile's drain with streaming (the TPU's weights are double-buffered: Jouppi
//     et al., ISCA 2017), so each further tile costs max(r, N) cycles.
//   - A block's (bk/128)·(bn/128) weight tiles are shared out over the core's MXUs; the block's MXU
//     time is that of the busiest MXU. Each grid step starts with empty arrays (its dot is one
//     operation), so a step pays the fill and drain once.
//   - The VPU adds each step's product into the f32 accumulator at one 8×128 vreg per cycle (the
//     scaling book's appendix: the VPU is an (8, 128) SIMD unit), overlapped with the MXUs; on the last
//     k step it runs the epilogue (the cast to the output type, plus a bias add and ReLU if asked) after
//     the MXUs finish.
//   - One DMA queue moves bytes between HBM and VMEM at the core's HBM bandwidth, in the order Pallas
//     issues them: the next step's input blocks when a step's compute starts (a block whose index did
//     not change since the previous step is not copied again), the output block when its last k step
//     ends. No DMA latency and no per-step overhead are modelled.
//   - Dimensions are padded up to whole blocks; padded rows and columns are copied and multiplied like
//     real ones.
//
// Float32 inputs are multiplied as 3 bf16 passes (jax.lax.Precision.HIGH: "float32 computations in 3
// bfloat16 passes", https://docs.jax.dev/en/latest/jax.lax.html#jax.lax.Precision); int8 runs at the
// generation's published int8 rate.
package tpucore

import (
	"fmt"
	"strings"
)

// MXUSize is the side of the MXU's systolic array on the generations modelled here: 128×128 from TPU
// v2 to v5 (the scaling book, "How to Think About TPUs"; TPU v6e's is 256×256 and is not modelled).
const MXUSize = 128

// Lanes and Sublanes are the shape of a vreg and of the VPU: 8 sublanes × 128 lanes (the scaling
// book, appendix "TPU internals"; jax's tpu_info.py: NUM_LANES = 128, NUM_SUBLANES = 8). A block's
// last dimension spans lanes, its second-last sublanes.
const (
	Lanes    = 128
	Sublanes = 8
)

// Generation is one TPU generation's TensorCore, with per-core figures (a chip with two TensorCores,
// TPU v4 and v5p, shares its HBM between them: each core here gets half the chip's bandwidth and half
// its peak, so a core's critical intensity is the chip's).
type Generation struct {
	// Name is "v4", "v5e" or "v5p".
	Name string
	// CoresPerChip is the number of TensorCores per chip.
	CoresPerChip int
	// MXUs is the number of MXUs per TensorCore.
	MXUs int
	// PeakBF16 is the core's peak dense bf16 rate in FLOP/s (the chip's over CoresPerChip).
	PeakBF16 float64
	// PeakInt8 is the core's peak int8 rate in OP/s; 0 where none is published.
	PeakInt8 float64
	// HBM is the core's share of the chip's HBM bandwidth in bytes/s.
	HBM float64
	// VMEM is the core's vector memory in bytes.
	VMEM int64
	// Source says where the figures come from.
	Source string
}

const (
	mib         = 1 << 20
	cloudTPU    = "Google Cloud TPU documentation (https://cloud.google.com/tpu/docs/"
	tpuInfoNote = "VMEM per core from jax's Pallas TPU hardware table (jax/_src/pallas/mosaic/tpu_info.py, shown at https://docs.jax.dev/en/latest/pallas/tpu/hardware.html)"
)

// Generations are the modelled TPU generations, with their sources.
var Generations = []Generation{
	{"v4", 2, 4, 275e12 / 2, 275e12 / 2, 1200e9 / 2, 16 * mib,
		cloudTPU + "v4): 2 TensorCores per chip, 4 MXUs per TensorCore, 275 TFLOP/s per chip (bf16 or int8) and 1,200 GB/s HBM2 per chip; " +
			tpuInfoNote + ": 16 MiB"},
	{"v5e", 1, 4, 197e12, 394e12, 819e9, 128 * mib,
		cloudTPU + "v5e): 1 TensorCore per chip, 4 MXUs, 197 TFLOP/s bf16, 819 GB/s HBM2; 3.94e14 int8 OP/s from the scaling book's table; " +
			tpuInfoNote + ": 128 MiB"},
	{"v5p", 2, 4, 459e12 / 2, 918e12 / 2, 2765e9 / 2, 64 * mib,
		cloudTPU + "v5p): 4 MXUs per TensorCore, 459 TFLOP/s bf16 and 2,765 GB/s HBM2e per chip, 2 TensorCores per chip, " +
			"so 229.5 TFLOP/s and 1,382.5 GB/s per TensorCore as modelled (the scaling book rounds the per-core rate to about 2.5e14 bf16 FLOP/s); " +
			"918 TOP/s int8 per chip from the scaling book's table; " + tpuInfoNote + ": 64 MiB"},
}

// LookupGeneration finds a generation by name ("v5e"), ignoring case.
func LookupGeneration(name string) (Generation, error) {
	var names []string
	for _, g := range Generations {
		if strings.EqualFold(g.Name, name) {
			return g, nil
		}
		names = append(names, g.Name)
	}
	return Generation{}, fmt.Errorf("unknown TPU generation %q; known: %s", name, strings.Join(names, ", "))
}

// ClockHz is the MXU clock the published peak implies: PeakBF16 / (MXUs × 2 FLOPs × 128²) in Hz
// (for v4, 1,049 MHz: the TPU v4 paper gives 1,050 MHz; for v5e, 1.5 GHz, as the scaling book says).
func (g Generation) ClockHz() float64 {
	return g.PeakBF16 / (float64(g.MXUs) * 2 * MXUSize * MXUSize)
}

// CriticalIntensity is the arithmetic intensity (FLOP per HBM byte) at which the bf16 MXUs and HBM
// take equal time: PeakBF16 / HBM, the ridge of the core's roofline (about 240 on v5e, the scaling
// book's "Rooflines" chapter: 1.97e14 / 8.2e11).
func (g Generation) CriticalIntensity() float64 { return g.PeakBF16 / g.HBM }
