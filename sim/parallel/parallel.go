// Package parallel models how a transformer's training is split over many chips: tensor (TP),
// pipeline (PP), context (CP) and data (DP) parallelism with ZeRO/FSDP sharding of the training
// state. For a layout it gives the memory each chip needs and the time of one optimiser step:
// arithmetic, the pipeline bubble and each parallelism's communication (sim/collectives' α–β ring
// models). It models; it measures nothing.
//
// Memory (bytes per chip), mixed-precision training with Adam (Rajbhandari et al., "ZeRO: Memory
// Optimizations Toward Training Trillion Parameter Models", SC 2020, §3.1): 16 bytes per parameter,
// 2 for the BF16/FP16 weights, 2 for their gradients and 12 for the optimiser (an FP32 master copy,
// Adam's momentum and variance). TP and PP divide the parameters between chips; ZeRO stage 1 also
// divides the optimiser's 12 bytes over the data-parallel group, stage 2 the gradients too, stage 3
// (FSDP's full sharding) the weights too. Activations follow Korthikanti et al., "Reducing Activation
// Recomputation in Large Transformer Models" (MLSys 2023, §4), generalised to grouped-query attention
// and gated MLPs (see ActivationBytesPerToken).
//
// Approximations, stated: every pipeline stage is given Params/PP parameters (the embedding and the
// output head sit on the first and last stages in reality); a ZeRO-3 chip's memory counts only its
// shard of the weights, not the layer it gathers while computing; temporary buffers, the logits and
// memory fragmentation are left out; every microbatch is one sequence.
package parallel

import (
	"fmt"
	"math"

	"github.com/gpuplayground/playground/sim/collectives"
	"github.com/gpuplayground/playground/sim/transformer"
)

// Bytes of training state per parameter, mixed precision with Adam (Rajbhandari et al. 2020, §3.1:
// 2Ψ + 2Ψ + KΨ with K = 12).
const (
	WeightBytes    = 2
	GradientBytes  = 2
	OptimizerBytes = 12
	StateBytes     = WeightBytes + GradientBytes + OptimizerBytes
)

// Recompute is how much of the forward pass the backward pass recomputes instead of storing.
type Recompute string

const (
	// None stores every activation, the attention scores included (unfused attention).
	None Recompute = "none"
	// Selective recomputes the attention scores (or never stores them: FlashAttention), storing the
	// rest (Korthikanti et al. 2022, §5).
	Selective Recompute = "selective"
	// Full stores only each layer's input and recomputes the whole forward pass in the backward.
	Full Recompute = "full"
)

// Layout is how the chips are split: TP·PP·CP·DP chips in all, ranks ordered [TP, CP, PP, DP] from
// the innermost (Llama 3's order, Grattafiori et al. 2024, §3.3.2).
type Layout struct {
	TP, PP, CP, DP int
	// ZeRO is the ZeRO stage (0–3) over the data-parallel group (DP·CP chips hold the same weights).
	ZeRO int
}

// Chips is TP·PP·CP·DP.
func (l Layout) Chips() int { return l.TP * l.PP * l.CP * l.DP }

// String writes the layout as "TP 8 · PP 16 · CP 1 · DP 128, ZeRO 1".
func (l Layout) String() string {
	return fmt.Sprintf("TP %d · PP %d · CP %d · DP %d, ZeRO %d", l.TP, l.PP, l.CP, l.DP, l.ZeRO)
}

// Job is one training step's shape: the model, the sequence length in tokens, the sequences per
// step (the global batch, which the chips share evenly, fractions of a sequence included, whatever
// the layout) and what the backward pass recomputes.
type Job struct {
	Model     transformer.Model
	Seq       int
	Sequences float64
	Recompute Recompute
}

// Memory is one chip's bytes, by what they hold.
type Memory struct {
	Weights, Gradients, Optimizer, Activations float64
}

// State is the training state: weights, gradients and optimiser.
func (m Memory) State() float64 { return m.Weights + m.Gradients + m.Optimizer }

// Total is every byte.
func (m Memory) Total() float64 { return m.State() + m.Activations }

// ActivationBytesPerToken is the bytes one layer stores per token for its backward pass, 16-bit
// activations, counted as Korthikanti et al. (2022, §4.1) count them but without dropout masks
// (neither GPT-3's nor Llama 3's counts here include dropout): the two norms' inputs (2h each), the
// QKV projection's input (2h), the queries (2h) and the keys and values (2h each times KV/H heads),
// the output projection's input (2h), the MLP's input (2h) and its inner activations (2·d_ff before
// and after the nonlinearity; 3 × 2·d_ff for a gated MLP: gate, up and their product); with
// recompute None also the softmax's output, 2·heads·seq per token. For a GPT-style layer (H = KV,
// d_ff = 4h) this is 32h + 2·a·s, Korthikanti's 34h + 5·a·s less the 2h + 3·a·s of dropout; with
// Full only the layer's input is kept, 2h. Returned per chip of a TP group with sequence
// parallelism (every term divided by tp, Korthikanti §4.2.2).
func ActivationBytesPerToken(m transformer.Model, seq int, r Recompute, tp int) float64 {
	h, f := float64(m.DModel), float64(m.DFF)
	if r == Full {
		return 2 * h / float64(tp)
	}
	b := 4*h + 2*h + 2*h + 4*h*float64(m.KVHeads)/float64(m.Heads) + 2*h + 2*h
	if m.Gated {
		b += 6 * f
	} else {
		b += 4 * f
	}
	if r == None {
		b += 2 * float64(m.Heads) * float64(seq)
	}
	return b / float64(tp)
}

// Microbatches is the sequences each data-parallel replica does per step (one per microbatch), at
// least 1.
func (j Job) Microbatches(l Layout) int {
	return max(1, int(j.Sequences/float64(l.DP)))
}

// layersPerStage is the most layers a pipeline stage holds.
func layersPerStage(m transformer.Model, pp int) float64 {
	return math.Ceil(float64(m.Layers) / float64(pp))
}

// PerChip is the memory one chip of layout l needs for job j. Under 1F1B pipelining the first stage
// holds the activations of min(m, PP) microbatches at once (Narayanan et al. 2021, §2.2; Korthikanti
// et al. §4.2.3), each of its layers' tokens (Seq/CP of them under context parallelism).
func PerChip(j Job, l Layout) Memory {
	n := j.Model.Params() / float64(l.TP*l.PP)
	shard := float64(l.DP * l.CP)
	m := Memory{Weights: WeightBytes * n, Gradients: GradientBytes * n, Optimizer: OptimizerBytes * n}
	if l.ZeRO >= 1 {
		m.Optimizer /= shard
	}
	if l.ZeRO >= 2 {
		m.Gradients /= shard
	}
	if l.ZeRO >= 3 {
		m.Weights /= shard
	}
	tokens := float64(j.Seq) / float64(l.CP)
	inFlight := float64(min(j.Microbatches(l), l.PP))
	m.Activations = inFlight * layersPerStage(j.Model, l.PP) * tokens * ActivationBytesPerToken(j.Model, j.Seq, j.Recompute, l.TP)
	return m
}

// Links are the bandwidths the model gives each parallelism's collectives: a group whose chips all
// sit in one node (NodeChips chips, e.g. the 8 NVLink-joined GPUs of a DGX H100) uses NodeBW; a
// group that spans nodes uses NetBW, the slowest link of its ring. Bandwidths in bytes/s per
// direction per chip; Latency in seconds per message.
type Links struct {
	NodeChips     int
	NodeBW, NetBW float64
	Latency       float64
}

// bw is the bandwidth of a group whose ranks are stride apart and size many (ranks ordered [TP,
// CP, PP, DP] from the innermost): inside a node when stride·size ≤ NodeChips.
func (k Links) bw(stride, size int) float64 {
	if stride*size <= k.NodeChips {
		return k.NodeBW
	}
	return k.NetBW
}

// Step is a modelled optimiser step on one chip, in seconds, by what it is spent on.
type Step struct {
	// Compute is the arithmetic; Bubble the pipeline's idle slots ((PP−1) of m + PP − 1 slots, each a
	// microbatch's compute and TP, CP and PP communication: GPipe, Huang et al. 2019; Narayanan et
	// al. 2021, §2.2); TP, CP, PP and DP each parallelism's communication, none of it overlapped
	// with compute (the pessimistic case).
	Compute, Bubble, TP, CP, PP, DP float64
	// ModelFLOPs is the step's model FLOPs over all chips (3 × forward, recomputation not counted).
	ModelFLOPs float64
}

// Seconds is the whole step.
func (s Step) Seconds() float64 { return s.Compute + s.Bubble + s.Communication() }

// Communication is the time of every collective and send.
func (s Step) Communication() float64 { return s.TP + s.CP + s.PP + s.DP }

// BubbleFraction is the pipeline bubble's share of a pipeline of m microbatches over p stages,
// (p−1)/(m+p−1) (Huang et al. 2019; Narayanan et al. 2021, §2.2.1).
func BubbleFraction(p, m int) float64 { return float64(p-1) / float64(m+p-1) }

// MFU is the model FLOPs utilisation of step s on chips chips of peak FLOP/s: model FLOPs over
// chips × peak × the step's time (Chowdhery et al. 2022, appendix B).
func (s Step) MFU(chips int, peak float64) float64 {
	return s.ModelFLOPs / (float64(chips) * peak * s.Seconds())
}

// Time models one step of j on layout l, each chip doing its arithmetic at rate FLOP/s (its peak
// times the fraction its GEMMs reach). Communication per chip, 16-bit activations and gradients:
//   - TP (Megatron-LM, Shoeybi et al. 2019): per layer and microbatch, two all-reduces of the
//     layer's output (Seq/CP × d_model × 2 bytes) forward and two backward over the TP group (with
//     sequence parallelism an all-gather and a reduce-scatter each, the same bytes; Korthikanti et
//     al. 2022, §4.2.2); two more with Full recompute.
//   - CP (ring attention, all-gather form as in Llama 3, Grattafiori et al. 2024, §3.3.2): per layer
//     and microbatch, an all-gather of the keys and values (Seq × 2·KV·d_head/TP × 2 bytes) forward
//     and a reduce-scatter of their gradients backward over the CP group.
//   - PP: per microbatch, the stage's activations (Seq/CP × d_model/TP × 2 bytes, split over the TP
//     group as Narayanan et al. 2021 §4.1 do) sent forward and their gradient sent back.
//   - DP: per step, the gradients of the chip's parameters (2 bytes each) all-reduced over the DP·CP
//     chips that hold the same weights; under ZeRO-3 (FSDP) a reduce-scatter and two all-gathers of
//     the weights instead, 1.5 times the bytes (Rajbhandari et al. 2020, §7.2).
func Time(j Job, l Layout, rate float64, k Links) Step {
	m := j.Model
	mb := j.Microbatches(l)
	chips := l.Chips()
	fwd := m.ForwardPerToken(j.Seq) * float64(j.Seq) * j.Sequences // per step, all chips
	var s Step
	s.ModelFLOPs = transformer.TrainingFactor * fwd
	hw := s.ModelFLOPs
	if j.Recompute == Full {
		hw = transformer.RecomputeFactor * fwd
	}
	s.Compute = hw / float64(chips) / rate
	layers := layersPerStage(m, l.PP)
	tokens := float64(j.Seq) / float64(l.CP)
	act := tokens * float64(m.DModel) * 2
	tpCalls := 4.0
	if j.Recompute == Full {
		tpCalls = 6
	}
	tpPer := layers * tpCalls * collectives.RingAllReduce(act, l.TP, k.bw(1, l.TP), k.Latency)
	kv := float64(j.Seq) * 2 * float64(m.KVWidth()) / float64(l.TP) * 2
	cpBW := k.bw(l.TP, l.CP)
	cpPer := layers * (collectives.RingAllGather(kv, l.CP, cpBW, k.Latency) + collectives.RingReduceScatter(kv, l.CP, cpBW, k.Latency))
	var ppPer float64
	if l.PP > 1 {
		ppPer = 2 * collectives.SendRecv(act/float64(l.TP), k.bw(l.TP*l.CP, l.PP), k.Latency)
	}
	slot := s.Compute/float64(mb) + tpPer + cpPer + ppPer
	s.TP, s.CP, s.PP = float64(mb)*tpPer, float64(mb)*cpPer, float64(mb)*ppPer
	s.Bubble = float64(l.PP-1) * slot
	grads := GradientBytes * m.Params() / float64(l.TP*l.PP)
	group, dpBW := l.DP*l.CP, k.bw(l.TP, l.CP*l.PP*l.DP)
	if l.ZeRO >= 3 {
		s.DP = collectives.RingReduceScatter(grads, group, dpBW, k.Latency) + 2*collectives.RingAllGather(grads, group, dpBW, k.Latency)
	} else {
		s.DP = collectives.RingAllReduce(grads, group, dpBW, k.Latency)
	}
	return s
}

// Smallest is the layout of chips chips with the fewest chips per model replica (TP·PP) whose
// memory per chip (PerChip) is at most capacity bytes, keeping cp and zero as given: TP a power of
// two up to the node and dividing the heads and KV heads (Megatron keeps TP inside a node, Narayanan
// et al. 2021, §3.3), PP a power of two up to the layers, TP·PP·CP dividing chips. Between layouts
// of the same size the one with more TP (and so a smaller pipeline bubble) wins. ok is false when
// none fits.
func Smallest(j Job, chips, cp, zero, nodeChips int, capacity float64) (best Layout, ok bool) {
	for tp := 1; tp <= max(1, nodeChips) && j.Model.Heads%tp == 0 && j.Model.KVHeads%tp == 0; tp *= 2 {
		for pp := 1; pp <= j.Model.Layers; pp *= 2 {
			if chips%(tp*pp*cp) != 0 {
				break
			}
			l := Layout{TP: tp, PP: pp, CP: cp, DP: chips / (tp * pp * cp), ZeRO: zero}
			if PerChip(j, l).Total() > capacity {
				continue
			}
			if !ok || tp*pp < best.TP*best.PP || (tp*pp == best.TP*best.PP && tp > best.TP) {
				best, ok = l, true
			}
			break // a longer pipeline at this TP is larger
		}
	}
	return best, ok
}

// Published is a training layout as its paper publishes it, with the throughput it reached.
type Published struct {
	GPUs, TP, CP, PP, DP int
	// Seq is the sequence length in tokens, BatchPerDP the sequences per data-parallel replica per
	// step, TokensPerBatch the global batch in tokens.
	Seq, BatchPerDP, TokensPerBatch int
	// TFLOPsPerGPU is the achieved BF16 rate per GPU in TFLOP/s, MFU the BF16 model FLOPs
	// utilisation.
	TFLOPsPerGPU, MFU float64
}

// Layout is p as a Layout (ZeRO as given: the table does not state it).
func (p Published) Layout(zero int) Layout {
	return Layout{TP: p.TP, PP: p.PP, CP: p.CP, DP: p.DP, ZeRO: zero}
}

// Llama3Source is where Llama3Layouts come from.
const Llama3Source = "Llama Team, AI @ Meta (A. Grattafiori et al.), \"The Llama 3 Herd of Models\", arXiv:2407.21783, 2024, Table 4 (scaling configurations and MFU of Llama 3 405B pre-training on H100 GPUs) and §3.3.2 (4D parallelism, ranks ordered [TP, CP, PP, DP], DP as FSDP)"

// Llama3Layouts are the three layouts of Llama 3 405B's pre-training in Llama3Source's Table 4,
// on H100 SXM GPUs with 80 GB each.
var Llama3Layouts = []Published{
	{GPUs: 8192, TP: 8, CP: 1, PP: 16, DP: 64, Seq: 8192, BatchPerDP: 32, TokensPerBatch: 16 << 20, TFLOPsPerGPU: 430, MFU: 0.43},
	{GPUs: 16384, TP: 8, CP: 1, PP: 16, DP: 128, Seq: 8192, BatchPerDP: 16, TokensPerBatch: 16 << 20, TFLOPsPerGPU: 400, MFU: 0.41},
	{GPUs: 16384, TP: 8, CP: 16, PP: 16, DP: 8, Seq: 131072, BatchPerDP: 16, TokensPerBatch: 16 << 20, TFLOPsPerGPU: 380, MFU: 0.38},
}

// FindPublished is the Llama 3 layout with these degrees and sequence length, if there is one.
func FindPublished(l Layout, seq int) (Published, bool) {
	for _, p := range Llama3Layouts {
		if p.TP == l.TP && p.CP == l.CP && p.PP == l.PP && p.DP == l.DP && p.Seq == seq {
			return p, true
		}
	}
	return Published{}, false
}
