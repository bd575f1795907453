package transformer

import "math"

// MoE is a mixture-of-experts MLP: each token's MLP is TopK of Experts smaller MLPs, chosen per
// token by a router (a d_model × Experts GEMM), plus Shared experts every token passes through
// (N. Shazeer et al., "Outrageously Large Neural Networks: The Sparsely-Gated Mixture-of-Experts
// Layer", ICLR 2017; W. Fedus, B. Zoph and N. Shazeer, "Switch Transformers", JMLR 23, 2022; shared
// experts: D. Dai et al., "DeepSeekMoE", arXiv:2401.06066, 2024). The parameters grow with Experts,
// the FLOPs per token only with TopK + Shared. Its zero value is a dense MLP.
type MoE struct {
	// Experts is the routed experts of an MoE layer, TopK how many of them each token uses, Shared
	// the experts every token uses, DFF each expert's inner width (gated when the model's MLP is).
	Experts, TopK, Shared, DFF int
	// DenseLayers is the first layers that keep a dense MLP of the model's DFF (DeepSeek-V3: 3).
	DenseLayers int
}

// isMoE says whether layer i (from 0) has an MoE MLP.
func (e MoE) isMoE(i int) bool { return e.Experts > 0 && i >= e.DenseLayers }

// Capacity is an expert's capacity for a batch of tokens under capacity factor cf: the most token
// slots it processes, ⌈cf · tokens · TopK / Experts⌉. Tokens routed past a full expert are dropped
// (they skip the MLP through the residual) and an expert with fewer is padded to its capacity, so cf
// > 1 buys fewer drops with padded FLOPs (Fedus et al. 2022, §2.2; Lepikhin et al., "GShard",
// ICLR 2021). A dense model (no experts): 0.
func (e MoE) Capacity(tokens int, cf float64) int {
	if e.Experts == 0 {
		return 0
	}
	return int(math.Ceil(cf * float64(tokens) * float64(e.TopK) / float64(e.Experts)))
}

// MLA is multi-head latent attention (DeepSeek-AI, "DeepSeek-V2", arXiv:2405.04434, 2024, §2.1):
// queries are projected down to a QRank latent and up again; keys and values are projected down to
// one KVRank latent per token, which is all the KV cache keeps, with one RopeDim-wide key that
// carries the rotary position shared by all heads. Each head's query and key are DHead + RopeDim
// wide, its value DHead wide. Its zero value: no MLA (grouped-query attention).
type MLA struct {
	QRank, KVRank, RopeDim int
}

// mlaWeights is one layer's MLA projections: Q down and up, KV down (latent and RoPE key), KV up
// (keys without RoPE and values of every head) and the output projection.
func (m Model) mlaWeights() float64 {
	a := m.MLA
	d, h, dh := float64(m.DModel), float64(m.Heads), float64(m.DHead)
	qr, kvr, r := float64(a.QRank), float64(a.KVRank), float64(a.RopeDim)
	return d*qr + qr*h*(dh+r) + d*(kvr+r) + kvr*h*2*dh + h*dh*d
}
