package parallel

import "github.com/gpuplayground/playground/sim/transformer"

// Rooflines across chips: when each parallelism's communication, overlapped with the arithmetic it
// can hide behind, takes longer than that arithmetic. The model is the JAX scaling book's (J. Austin
// et al., "How to Scale Your Model", 2025, "How to Parallelize a Transformer for Training" and "How
// to Think About GPUs"): a chip of peak C FLOP/s sends W bytes/s on the axis, so its ridge is C/W
// FLOPs per byte, and an axis is compute-bound while the FLOPs it overlaps with per byte it sends
// exceed the ridge. Unlike Time, it assumes perfect overlap: each bound is max(T_math, T_comm), not
// their sum. 16-bit weights, gradients and activations; ring collectives, each chip sending
// (x − 1)/x of the data an all-gather or reduce-scatter spans, twice that for an all-reduce.

// Ridge is a link's ridge point in FLOPs per byte: peak FLOP/s over the bytes/s one chip sends on
// the axis (the scaling book's C/W: 2,200 for an H100's 990 TFLOP/s over NVLink's 450 GB/s).
func Ridge(peak, egress float64) float64 { return peak / egress }

// MinTokensDP is the fewest tokens per chip per step for which data parallelism over x chips stays
// compute-bound with its gradient all-reduce hidden behind the backward pass, the only pass it can
// overlap (4 FLOPs per active parameter per token): 4·A·T/C ≥ 2·(x−1)/x·2N/W, so T ≥
// (N/A)·(x−1)/x·ridge for N parameters of which A are active per token. FSDP (ZeRO-3) moves the same
// bytes as all-gathers and a reduce-scatter, each hidden behind its own pass, and has the same
// bound. For a dense model over many chips, the ridge itself; a mixture of experts multiplies it by
// N/A (about Experts/TopK). x ≤ 1: 0.
func MinTokensDP(m transformer.Model, x int, ridge float64) float64 {
	if x <= 1 {
		return 0
	}
	return m.Params() / m.ActiveParams() * float64(x-1) / float64(x) * ridge
}

// MaxTensorWays is the most ways Megatron tensor parallelism (with sequence parallelism) splits the
// MLP before its all-gather and reduce-scatter of the activations (2·B·D bytes each way, for B
// tokens) take longer than the MLP's FLOPs (2·B·D·F per matrix, split y ways): y ≤ (matrices/2) · F
// / ridge, whatever the batch. A gated MLP's third matrix adds FLOPs and no communication: 1.5×.
// An MoE layer's experts are split by expert parallelism instead; this uses the dense MLP width
// (its first layers' for DeepSeek-V3).
func MaxTensorWays(m transformer.Model, ridge float64) float64 {
	mats := 2.0
	if m.Gated {
		mats = 3
	}
	return mats / 2 * float64(m.DFF) / ridge
}

// MinExpertDFF is the narrowest expert for which expert parallelism over z chips stays
// compute-bound: each chip's tokens go to their TopK experts and come back, two all-to-alls of
// T·k·D·2·(z−1)/z bytes, against 2·matrices·D·F·T·k FLOPs of expert MLP, so F ≥ (2/matrices) ·
// (z−1)/z · ridge, whatever the batch and k. z ≤ 1 or a dense model: 0.
func MinExpertDFF(m transformer.Model, z int, ridge float64) float64 {
	if z <= 1 || m.MoE.Experts == 0 {
		return 0
	}
	mats := 2.0
	if m.Gated {
		mats = 3
	}
	return 2 / mats * float64(z-1) / float64(z) * ridge
}

// AllToAllBytes is what one chip sends in one MoE layer's forward pass under expert parallelism
// over z chips: its tokens' activations (d_model × 2 bytes each) to TopK experts, of which (z−1)/z
// live on other chips, and the results back.
func AllToAllBytes(m transformer.Model, tokens float64, z int) float64 {
	if z <= 1 {
		return 0
	}
	return 2 * tokens * float64(m.MoE.TopK) * float64(m.DModel) * 2 * float64(z-1) / float64(z)
}

// MinTokensFSDPTP is the fewest tokens per chip for which an optimal mix of FSDP over mx mesh axes
// and tensor parallelism over my axes stays compute-bound on an MLP of width ff: 4·ridge²/(ff·mx·my)
// (the scaling book's "Mixed FSDP and Tensor Parallelism", where the quadratic's discriminant is
// zero; 2·ridge²/ff for mx = 2, my = 1).
func MinTokensFSDPTP(ff int, ridge float64, mx, my int) float64 {
	return 4 * ridge * ridge / (float64(ff) * float64(mx) * float64(my))
}

// Overlapped is step s of job j on layout l with its data-parallel communication run beside the
// arithmetic it can overlap, as frameworks do (PyTorch DDP's bucketed all-reduce and FSDP's
// prefetching, Zhao et al., VLDB 2023; the scaling book's rooflines): a layer's gradients are
// reduced while the backward pass computes the layers before it, but only once the step's last
// microbatch has passed that layer, so they hide behind the last microbatch's backward, two thirds
// of its arithmetic (4 of 6 FLOPs per parameter per token); ZeRO-3's forward all-gather hides
// behind the first microbatch's forward, the other third. What does not fit stays on the step. TP,
// CP and PP communication stays too: it sits between a layer's GEMMs, on the critical path.
func Overlapped(s Step, j Job, l Layout) Step {
	perMB := s.Compute / float64(j.Microbatches(l))
	reduce, gather := s.DP, 0.0
	if l.ZeRO >= 3 { // a reduce-scatter and two all-gathers, a third of the bytes each
		reduce, gather = 2*s.DP/3, s.DP/3
	}
	s.DP = max(0, reduce-2*perMB/3) + max(0, gather-perMB/3)
	return s
}
