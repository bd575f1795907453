package parallel

import (
	"math"
	"testing"

	"github.com/gpuplayground/playground/sim/transformer"
)

func within(got, want, rel float64) bool { return math.Abs(got-want) <= rel*math.Abs(want) }

// The scaling book's worked numbers (J. Austin et al., "How to Scale Your Model", 2025; the training
// chapter for TPU v5p, the GPU chapter for H100), each recomputed here from its inputs.
func TestRooflinesMatchScalingBook(t *testing.T) {
	// TPU v5p: C = 4.6e14 FLOP/s, W = 2 × 9e10 bytes/s (bidirectional ICI on one axis): "at least
	// 2,550" tokens per chip; three axes, "850".
	v5p := Ridge(4.6e14, 2*9e10)
	if !within(v5p, 2550, 0.005) || !within(v5p/3, 850, 0.005) {
		t.Errorf("TPU v5p ridge %g (÷3: %g), book 2,550 and 850", v5p, v5p/3)
	}
	// H100: 990e12 over NVLink's 450e9 is 2,200; over a node's 400e9 of InfiniBand, 2,475.
	if got := Ridge(990e12, 450e9); !within(got, 2200, 1e-9) {
		t.Errorf("H100 in a node: %g, book 2,200", got)
	}
	h100net := Ridge(990e12, 400e9)
	if !within(h100net, 2475, 1e-9) {
		t.Errorf("H100 across nodes: %g, book 2,475", h100net)
	}
	// Llama 3 70B, a 16M-token batch, FSDP over all three v5p axes (ridge 2550/3): "roughly
	// 16e6 / (2550 / 3) = 18,823 chips".
	llama := model(t, "llama3-70b")
	if chips := 16e6 / MinTokensDP(llama, 18823, 2550.0/3); !within(chips, 18823, 0.001) {
		t.Errorf("Llama 3 70B: %g chips before the all-reduce bounds it, book 18,823", chips)
	}
	// An MoE of 128 experts, 4 per token (gpt-oss), mostly expert weights: "32 * 2475 = 79,200".
	moe := transformer.Model{Layers: 1, DModel: 2880, DFF: 2880, MoE: transformer.MoE{Experts: 128, TopK: 4, DFF: 2880}}
	if got := MinTokensDP(moe, 1<<20, h100net); !within(got, 79200, 0.01) {
		t.Errorf("MoE of 128 experts, top 4: %g tokens per GPU, book 79,200", got)
	}
	// Tensor parallelism, an ungated MLP as the book models: F = 28,000 over 2,475 is "about
	// 11-way"; Gemma 7B's F ≈ 50k over v5p's 2,550, "19-way".
	if got := MaxTensorWays(transformer.Model{DFF: 28000}, h100net); math.Floor(got) != 11 {
		t.Errorf("F = 28,000 on H100: %g ways, book about 11", got)
	}
	if got := MaxTensorWays(transformer.Model{DFF: 50000}, 2550); math.Floor(got) != 19 {
		t.Errorf("F = 50,000 on v5p: %g ways, book 19", got)
	}
	// Mixed FSDP and TP on v5p (two axes FSDP, one TP), F = 30,000: "2 · 2550² / 30,000 = 432".
	if got := MinTokensFSDPTP(30000, 2550, 2, 1); !within(got, 432, 0.005) {
		t.Errorf("mixed FSDP + TP: %g tokens per chip, book 432", got)
	}
	// Expert parallelism across many nodes: F > 8·C/W_node, 8 × 2,475 = 19,800 (each GPU's own
	// 50 GB/s NIC: 990e12 / 50e9).
	wide := transformer.Model{MoE: transformer.MoE{Experts: 256, TopK: 8}}
	if got := MinExpertDFF(wide, 1<<20, Ridge(990e12, 50e9)); !within(got, 8*2475, 1e-5) {
		t.Errorf("expert parallelism across nodes: F ≥ %g, book 19,800", got)
	}
}

// What the shapes say: a gated MLP allows 1.5 times the tensor-parallel ways; DeepSeek-V3's narrow
// experts (2,048) stay compute-bound over NVLink but not over one InfiniBand NIC per GPU; a small
// data-parallel group needs fewer tokens per chip ((x−1)/x); the all-to-all grows with TopK.
func TestRooflinesFollowTheShape(t *testing.T) {
	l70 := model(t, "llama3-70b")
	if got, want := MaxTensorWays(l70, 2200), 1.5*28672/2200; !within(got, want, 1e-12) {
		t.Errorf("Llama 3 70B (gated): %g ways, want %g", got, want)
	}
	ds := model(t, "deepseek-v3")
	if f := MinExpertDFF(ds, 8, Ridge(989e12, 450e9)); f >= float64(ds.MoE.DFF) {
		t.Errorf("DeepSeek-V3 over NVLink: experts need F ≥ %g, have %d: want compute-bound", f, ds.MoE.DFF)
	}
	if f := MinExpertDFF(ds, 64, Ridge(989e12, 50e9)); f <= float64(ds.MoE.DFF) {
		t.Errorf("DeepSeek-V3 over 50 GB/s: experts need F ≥ %g, have %d: want communication-bound", f, ds.MoE.DFF)
	}
	if got, want := MinTokensDP(l70, 2, 2200), 1100.0; !within(got, want, 1e-12) {
		t.Errorf("2-way data parallelism: %g tokens per chip, want %g", got, want)
	}
	if MinTokensDP(l70, 1, 2200) != 0 || MinExpertDFF(l70, 8, 2200) != 0 {
		t.Error("one chip, or a dense model's experts, need no bound")
	}
	if got, want := AllToAllBytes(ds, 4096, 64), 2*4096*8*7168*2*63/64.0; !within(got, want, 1e-12) {
		t.Errorf("DeepSeek-V3 all-to-all of 4,096 tokens over 64 chips: %g bytes, want %g", got, want)
	}
}

// Overlap hides the data-parallel communication behind the last microbatch's backward (and, under
// ZeRO-3, the first one's forward), by hand: one microbatch of 3 s of arithmetic hides 2 s of
// gradient all-reduce; sixteen microbatches hide an eighth of that; TP stays.
func TestOverlapped(t *testing.T) {
	j := Job{Model: model(t, "llama3-8b"), Seq: 1, Sequences: 1}
	l := Layout{TP: 1, PP: 1, CP: 1, DP: 1}
	s := Step{Compute: 3, DP: 5, TP: 1}
	if got := Overlapped(s, j, l); got.DP != 3 || got.TP != 1 || got.Compute != 3 {
		t.Errorf("one microbatch: %+v, want DP 5 − 2 = 3 and TP kept", got)
	}
	if got := Overlapped(Step{Compute: 3, DP: 1.5}, j, l); got.DP != 0 {
		t.Errorf("a short all-reduce: DP %g, want 0", got.DP)
	}
	j.Sequences = 16
	if got := Overlapped(Step{Compute: 48, DP: 5}, j, l); got.DP != 3 {
		t.Errorf("16 microbatches of 3 s: DP %g, want 5 − 2 = 3", got.DP)
	}
	j.Sequences = 1
	if got := Overlapped(Step{Compute: 3, DP: 6}, j, Layout{TP: 1, PP: 1, CP: 1, DP: 1, ZeRO: 3}); !within(got.DP, 4-2+2-1, 1e-12) {
		t.Errorf("ZeRO-3: DP %g, want (4 − 2) + (2 − 1) = 3", got.DP)
	}
}
