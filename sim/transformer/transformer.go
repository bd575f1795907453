// Package transformer counts what a decoder-only transformer asks of a chip: the GEMMs of one layer
// with their shapes, the parameters (all of them, and the active ones a token uses in a mixture of
// experts), the FLOPs of a forward pass and of training, the bytes of the KV cache, and the FLOPs and
// bytes of a prefill or a decode step (for the roofline). Everything is computed from a model's
// published shape (layers, d_model, heads, KV heads, d_ff, vocabulary, experts); nothing here is a
// measurement, and no FLOP count is typed in. Beside them, the published scaling laws that split a
// training budget between parameters and tokens (scaling.go).
//
// Conventions: a GEMM is (m×k)·(k×n), row-major, 2·m·k·n FLOPs (a multiply and an add per
// multiply-add); bytes are of 16-bit (BF16) weights, activations and KV cache unless a caller
// passes another element size. Element-wise work (norms, activations, softmax, RoPE, residuals) is
// left out of the FLOPs, as Kaplan et al. (2020) and PaLM's MFU (Chowdhery et al. 2022, appendix B)
// leave it out.
package transformer

import (
	"fmt"
	"math"
	"strings"
)

// Model is a decoder-only transformer's shape, as its paper or model card publishes it.
type Model struct {
	// Name is the preset's name ("llama3-8b"); Label how a sentence names it ("Llama 3 8B").
	Name, Label string
	// Layers is the number of decoder layers; DModel the width of the residual stream; Heads the
	// query heads; KVHeads the key/value heads (fewer than Heads with grouped-query attention,
	// Ainslie et al. 2023; equal without); DHead each head's width; DFF the MLP's inner width.
	Layers, DModel, Heads, KVHeads, DHead, DFF int
	// Vocab is the vocabulary (rows of the embedding, columns of the output head).
	Vocab int
	// Gated says the MLP is gated (SwiGLU, Shazeer 2020): three d_model×d_ff matrices (gate, up,
	// down) instead of two.
	Gated bool
	// Tied says the output head reuses the input embedding's matrix (GPT-2 and GPT-3) instead of
	// having its own.
	Tied bool
	// Positions is the number of learned position embeddings (GPT-3: its 2,048-token context); 0
	// for rotary position embeddings, which have no parameters.
	Positions int
	// Biases says the linear layers have biases and the norms are LayerNorms (a gain and a bias per
	// channel, GPT-3); without, the norms are RMSNorms (a gain per channel, Llama).
	Biases bool
	// MoE makes the MLP a mixture of experts (its zero value: a dense MLP); MLA replaces
	// grouped-query attention with multi-head latent attention (its zero value: none). See moe.go.
	MoE MoE
	MLA MLA
	// Published is the parameter count the source states (for a mixture of experts, all of them);
	// PublishedActive the parameters a token uses, where the source states it (0 otherwise); Source
	// where the shape comes from.
	Published, PublishedActive float64
	Source                     string
}

// Presets are the public models a cell can name, with their published shapes.
var Presets = []Model{
	{Name: "gpt3-175b", Label: "GPT-3 175B", Layers: 96, DModel: 12288, Heads: 96, KVHeads: 96, DHead: 128, DFF: 4 * 12288,
		Vocab: 50257, Tied: true, Positions: 2048, Biases: true, Published: 175.0e9,
		Source: "T. Brown et al., \"Language Models are Few-Shot Learners\", NeurIPS 2020, Table 2.1 (96 layers, d_model 12,288, 96 heads of 128, 175.0B parameters) and §2.1 (GPT-2's architecture: d_ff = 4·d_model, context 2,048); vocabulary 50,257 from A. Radford et al., \"Language Models are Unsupervised Multitask Learners\" (GPT-2), 2019, §2.3"},
	{Name: "llama3-8b", Label: "Llama 3 8B", Layers: 32, DModel: 4096, Heads: 32, KVHeads: 8, DHead: 128, DFF: 14336,
		Vocab: 128256, Gated: true, Published: 8.03e9,
		Source: "Llama Team, AI @ Meta, \"The Llama 3 Herd of Models\", arXiv:2407.21783, 2024, Table 3 (32 layers, model dimension 4,096, FFN dimension 14,336, 32 attention heads, 8 key/value heads); vocabulary 128,256 and 8.03B parameters from the meta-llama/Meta-Llama-3-8B model card and config.json on Hugging Face"},
	{Name: "llama3-70b", Label: "Llama 3 70B", Layers: 80, DModel: 8192, Heads: 64, KVHeads: 8, DHead: 128, DFF: 28672,
		Vocab: 128256, Gated: true, Published: 70.6e9,
		Source: "Llama Team, AI @ Meta, \"The Llama 3 Herd of Models\", arXiv:2407.21783, 2024, Table 3 (80 layers, model dimension 8,192, FFN dimension 28,672, 64 attention heads, 8 key/value heads); vocabulary 128,256 and 70.6B parameters from the meta-llama/Meta-Llama-3-70B model card and config.json on Hugging Face"},
	{Name: "llama3-405b", Label: "Llama 3 405B", Layers: 126, DModel: 16384, Heads: 128, KVHeads: 8, DHead: 128, DFF: 53248,
		Vocab: 128256, Gated: true, Published: 405e9,
		Source: "Llama Team, AI @ Meta, \"The Llama 3 Herd of Models\", arXiv:2407.21783, 2024, Table 3 (126 layers, model dimension 16,384, FFN dimension 53,248, 128 attention heads, 8 key/value heads, 405B parameters); vocabulary 128,256 from the meta-llama/Llama-3.1-405B config.json on Hugging Face"},
	{Name: "mixtral-8x7b", Label: "Mixtral 8×7B", Layers: 32, DModel: 4096, Heads: 32, KVHeads: 8, DHead: 128, DFF: 14336,
		Vocab: 32000, Gated: true, MoE: MoE{Experts: 8, TopK: 2, DFF: 14336}, Published: 46.7e9, PublishedActive: 12.9e9,
		Source: "A. Q. Jiang et al., \"Mixtral of Experts\", arXiv:2401.04088, 2024, Table 1 (dim 4,096, 32 layers, head_dim 128, hidden_dim 14,336, 32 heads, 8 KV heads, vocabulary 32,000, 8 experts, top 2) and §2.1 (SwiGLU experts); 46.7B total and 12.9B per token from Mistral AI, \"Mixtral of experts\" (announcement, 11 December 2023; the paper rounds them to 47B and 13B)"},
	{Name: "deepseek-v3", Label: "DeepSeek-V3", Layers: 61, DModel: 7168, Heads: 128, KVHeads: 128, DHead: 128, DFF: 18432,
		Vocab: 129280, Gated: true, MoE: MoE{Experts: 256, TopK: 8, Shared: 1, DFF: 2048, DenseLayers: 3},
		MLA: MLA{QRank: 1536, KVRank: 512, RopeDim: 64}, Published: 671e9, PublishedActive: 37e9,
		Source: "DeepSeek-AI, \"DeepSeek-V3 Technical Report\", arXiv:2412.19437, 2024, §4.2 (61 layers, hidden 7,168, 128 heads of 128, KV compression 512, query compression 1,536, decoupled RoPE 64; every FFN but the first three an MoE of 1 shared and 256 routed experts of width 2,048, 8 routed per token; 671B total, 37B activated per token) and §2.1 (MLA, DeepSeekMoE); dense FFN width 18,432 and vocabulary 129,280 from the deepseek-ai/DeepSeek-V3 config.json on Hugging Face"},
}

// Lookup finds a preset by name, ignoring case.
func Lookup(name string) (Model, error) {
	var names []string
	for _, m := range Presets {
		if strings.EqualFold(m.Name, name) {
			return m, nil
		}
		names = append(names, m.Name)
	}
	return Model{}, fmt.Errorf("unknown model %q; presets: %s", name, strings.Join(names, ", "))
}

// QWidth is the width of all query heads together (H·d_head); KVWidth that of the key (or value)
// heads (KV·d_head).
func (m Model) QWidth() int  { return m.Heads * m.DHead }
func (m Model) KVWidth() int { return m.KVHeads * m.DHead }

// LayerWeights is the number of weights in the GEMMs of one layer with a dense MLP: the Q, K, V and
// output projections (MLA's projections when the model has MLA) and the MLP's two (three when gated)
// matrices. In a model without MoE every layer is such a layer.
func (m Model) LayerWeights() float64 {
	return m.attentionWeights() + m.mlpWeights(false, false)
}

// attentionWeights is one layer's attention projections.
func (m Model) attentionWeights() float64 {
	d, q, kv := float64(m.DModel), float64(m.QWidth()), float64(m.KVWidth())
	if m.MLA.KVRank > 0 {
		return m.mlaWeights()
	}
	return d*q + 2*d*kv + q*d
}

// mlpWeights is one layer's MLP: dense (moe false), or all of an MoE layer's experts, shared experts
// and router, or (active) only those one token uses: TopK routed experts, the shared ones and the
// router.
func (m Model) mlpWeights(moe, active bool) float64 {
	mats := 2.0
	if m.Gated {
		mats = 3
	}
	d := float64(m.DModel)
	if !moe {
		return mats * d * float64(m.DFF)
	}
	expert := mats * d * float64(m.MoE.DFF)
	used := m.MoE.Experts
	if active {
		used = m.MoE.TopK
	}
	return float64(used+m.MoE.Shared)*expert + d*float64(m.MoE.Experts)
}

// layerWeights is layer i's GEMM weights, all of them or (active) those one token uses.
func (m Model) layerWeights(i int, active bool) float64 {
	return m.attentionWeights() + m.mlpWeights(m.MoE.isMoE(i), active)
}

// layerSmall is one layer's parameters outside its GEMMs: biases and norm gains (MLA adds the norms
// of its two latents).
func (m Model) layerSmall() float64 {
	d := float64(m.DModel)
	if !m.Biases {
		return 2*d + float64(m.MLA.QRank+m.MLA.KVRank) // two RMSNorm gains (and MLA's latent norms)
	}
	q, kv, ff := float64(m.QWidth()), float64(m.KVWidth()), float64(m.DFF)
	bias := q + 2*kv + d + ff + d // Q, K, V, output, MLP in and out
	return bias + 2*2*d           // two LayerNorms, a gain and a bias each
}

// Embedding is the parameters of the token embedding (and of the output head, which it shares when
// Tied) plus learned positions.
func (m Model) Embedding() float64 {
	e := float64(m.Vocab) * float64(m.DModel)
	if !m.Tied {
		e *= 2
	}
	return e + float64(m.Positions)*float64(m.DModel)
}

// Params is the model's parameter count computed from its shape: every layer's weights (every
// expert of an MoE), biases and norm gains, the final norm, the embeddings and the output head.
func (m Model) Params() float64 { return m.params(false) }

// ActiveParams is the parameters one token uses: Params with only the TopK routed experts of each
// MoE layer (and its shared experts and router). For a dense model, Params.
func (m Model) ActiveParams() float64 { return m.params(true) }

func (m Model) params(active bool) float64 {
	final := float64(m.DModel)
	if m.Biases {
		final *= 2
	}
	n := final + m.Embedding()
	for i := range m.Layers {
		n += m.layerWeights(i, active) + m.layerSmall()
	}
	return n
}

// NonEmbedding is Params without the embedding, positions and output head: Kaplan et al.'s N.
func (m Model) NonEmbedding() float64 {
	return m.Params() - m.Embedding()
}

// GEMMWeights is the weights a forward pass multiplies one token by: every layer's GEMMs (only the
// active experts of an MoE layer) and the output head (the input embedding is a table lookup, not a
// GEMM). Twice this is the GEMM FLOPs per token before attention.
func (m Model) GEMMWeights() float64 {
	w := float64(m.Vocab) * float64(m.DModel)
	for i := range m.Layers {
		w += m.layerWeights(i, true)
	}
	return w
}

// KVBytesPerToken is the KV cache of one token, all layers: a key and a value of KVWidth each, per
// layer, of elem bytes.
// With MLA the cache holds each layer's compressed latent and its shared RoPE key instead, KVRank +
// RopeDim numbers (DeepSeek-AI, "DeepSeek-V2", arXiv:2405.04434, 2024, §2.1.2 and Table 1).
func (m Model) KVBytesPerToken(elem float64) float64 {
	if m.MLA.KVRank > 0 {
		return float64(m.Layers) * float64(m.MLA.KVRank+m.MLA.RopeDim) * elem
	}
	return 2 * float64(m.Layers) * float64(m.KVWidth()) * elem
}

// GEMM is one matrix product of a layer: Count products of (M×K)·(K×N). Causal is the fraction of
// the M×N outputs a causal mask leaves to compute (1 for the weight GEMMs).
type GEMM struct {
	Name       string
	M, K, N    int
	Count      int
	Causal     float64
	Weights    bool // the K×N operand is a weight matrix (read once per pass, whatever M is)
	Activation bool // the operands are activations only (attention's scores and values)
	// Experts is, for an MoE layer's expert GEMM, how many K×N weight matrices there are (0 for any
	// other GEMM); its M rows are the layer's tokens times TopK, each row multiplied by the matrix of
	// one of the experts its token was routed to.
	Experts, TopK int
}

// Touched is the expected number of an expert GEMM's Experts matrices its rows use (1 for any other
// GEMM): M/TopK tokens each routed to TopK of E experts uniformly at random touch E·(1 − (1 − k/E)^t)
// of them. A decode step of one token reads only TopK experts' weights; a large batch reads them all.
func (g GEMM) Touched() float64 {
	if g.Experts == 0 {
		return 1
	}
	e, k, t := float64(g.Experts), float64(g.TopK), float64(g.M)/float64(g.TopK)
	return e * (1 - math.Pow(1-k/e, t))
}

// FLOPs is 2·M·K·N·Count·Causal.
func (g GEMM) FLOPs() float64 {
	return 2 * float64(g.M) * float64(g.K) * float64(g.N) * float64(g.Count) * g.Causal
}

// Step is a forward pass of Batch sequences, each adding Tokens new tokens to a context that then
// holds Context tokens (Context ≥ Tokens): a prefill of a prompt is Tokens = Context; a decode step
// is Tokens = 1.
type Step struct {
	Batch, Tokens, Context int
}

// meanKeys is the average number of keys a new token attends to under a causal mask: the Context −
// Tokens already there, plus its own position among the new ones ((Tokens+1)/2 on average).
func (s Step) meanKeys() float64 {
	return float64(s.Context-s.Tokens) + float64(s.Tokens+1)/2
}

// Layer is the GEMMs of one decoder layer for step s, in the order they run: an MoE layer when the
// model has them (the first MoE.DenseLayers layers are dense: see LayerAt).
func (m Model) Layer(s Step) []GEMM { return m.LayerAt(m.Layers-1, s) }

// LayerAt is the GEMMs of layer i (from 0) for step s.
func (m Model) LayerAt(i int, s Step) []GEMM {
	t := s.Batch * s.Tokens
	gemms := m.attention(s)
	if !m.MoE.isMoE(i) {
		return append(gemms, mlp(t, m.DModel, m.DFF, m.Gated, "MLP", 0, 0)...)
	}
	e := m.MoE
	gemms = append(gemms, GEMM{Name: "router", M: t, K: m.DModel, N: e.Experts, Count: 1, Causal: 1, Weights: true})
	if e.Shared > 0 {
		gemms = append(gemms, mlp(t, m.DModel, e.Shared*e.DFF, m.Gated, "shared expert", 0, 0)...)
	}
	return append(gemms, mlp(t*e.TopK, m.DModel, e.DFF, m.Gated, "routed experts", e.Experts, e.TopK)...)
}

// mlp is an MLP's GEMMs of rows×d by d×ff and back, named after what, with experts weight matrices
// of which each row uses one (0: a dense MLP).
func mlp(rows, d, ff int, gated bool, what string, experts, topK int) []GEMM {
	up := GEMM{Name: what + " up", M: rows, K: d, N: ff, Count: 1, Causal: 1, Weights: true, Experts: experts, TopK: topK}
	if gated {
		up.Name, up.N = what+" gate and up (SwiGLU)", 2*ff
	}
	down := GEMM{Name: what + " down", M: rows, K: ff, N: d, Count: 1, Causal: 1, Weights: true, Experts: experts, TopK: topK}
	return []GEMM{up, down}
}

// attention is a layer's attention GEMMs for step s: grouped-query attention, or MLA's down- and
// up-projections around heads whose queries and keys are DHead + RopeDim wide.
func (m Model) attention(s Step) []GEMM {
	t := s.Batch * s.Tokens
	frac := s.meanKeys() / float64(s.Context)
	qk := m.DHead
	var proj []GEMM
	if a := m.MLA; a.KVRank > 0 {
		qk += a.RopeDim
		proj = []GEMM{
			{Name: "Q down (MLA)", M: t, K: m.DModel, N: a.QRank, Count: 1, Causal: 1, Weights: true},
			{Name: "Q up (MLA)", M: t, K: a.QRank, N: m.Heads * qk, Count: 1, Causal: 1, Weights: true},
			{Name: "KV down (MLA latent and RoPE key)", M: t, K: m.DModel, N: a.KVRank + a.RopeDim, Count: 1, Causal: 1, Weights: true},
			{Name: "KV up (MLA)", M: t, K: a.KVRank, N: 2 * m.QWidth(), Count: 1, Causal: 1, Weights: true},
		}
	} else {
		proj = []GEMM{{Name: "QKV projection", M: t, K: m.DModel, N: m.QWidth() + 2*m.KVWidth(), Count: 1, Causal: 1, Weights: true}}
	}
	return append(proj,
		GEMM{Name: "attention scores QKᵀ (per head)", M: s.Tokens, K: qk, N: s.Context, Count: s.Batch * m.Heads, Causal: frac, Activation: true},
		GEMM{Name: "attention values PV (per head)", M: s.Tokens, K: s.Context, N: m.DHead, Count: s.Batch * m.Heads, Causal: frac, Activation: true},
		GEMM{Name: "output projection", M: t, K: m.QWidth(), N: m.DModel, Count: 1, Causal: 1, Weights: true})
}

// Head is the output head's GEMM for step s: the logits of every new token (a prefill that only
// samples its last token could skip all but one row; this counts them all, as training does).
func (m Model) Head(s Step) GEMM {
	return GEMM{Name: "output head (logits)", M: s.Batch * s.Tokens, K: m.DModel, N: m.Vocab, Count: 1, Causal: 1, Weights: true}
}

// Cost is what a step asks of a chip: FLOPs, and bytes by where they go.
type Cost struct {
	FLOPs, AttentionFLOPs float64
	// Weights is reading every GEMM weight once; KVRead reading the cache of the tokens already
	// there; KVWrite writing the new tokens' keys and values; Activations each weight GEMM reading
	// its input and writing its output once; Scores writing and reading back the attention scores
	// and probabilities (zero when attention is fused, as FlashAttention does).
	Weights, KVRead, KVWrite, Activations, Scores float64
}

// Bytes is every byte of the cost.
func (c Cost) Bytes() float64 { return c.Weights + c.KVRead + c.KVWrite + c.Activations + c.Scores }

// Intensity is FLOPs per byte.
func (c Cost) Intensity() float64 { return c.FLOPs / c.Bytes() }

// Cost counts step s on m with elem-byte numbers. With fused attention (FlashAttention, Dao et al.
// 2022) the scores never leave the chip; unfused, they are written by QKᵀ, read and written by the
// softmax, and read by PV: four passes over a Batch·Heads·Tokens·Context matrix. The model is the
// best case for a pass: every operand crosses DRAM once (no re-reads of tiles), the caches hold
// nothing between GEMMs; an expert GEMM reads the weights of the experts its tokens touch (Touched).
// MLA is counted as training and a prefill run it; a decode step would also re-expand the cached
// latents or absorb the up-projections into the query and output (DeepSeek-V2, §2.1.2), which this
// leaves out.
func (m Model) Cost(s Step, elem float64, fused bool) Cost {
	var c Cost
	add := func(g GEMM, n float64) { // n times, n the layers or, for the head, 1
		c.FLOPs += n * g.FLOPs()
		if g.Activation {
			c.AttentionFLOPs += n * g.FLOPs()
			return
		}
		c.Weights += n * g.Touched() * float64(g.K) * float64(g.N) * elem
		c.Activations += n * (float64(g.M)*float64(g.K) + float64(g.M)*float64(g.N)) * elem
	}
	dense := m.Layers
	if m.MoE.Experts > 0 {
		dense = min(m.MoE.DenseLayers, m.Layers)
	}
	if dense > 0 {
		for _, g := range m.LayerAt(0, s) {
			add(g, float64(dense))
		}
	}
	if m.Layers > dense {
		for _, g := range m.LayerAt(m.Layers-1, s) {
			add(g, float64(m.Layers-dense))
		}
	}
	add(m.Head(s), 1)
	tokens := float64(s.Batch) * float64(s.Tokens)
	c.KVRead = float64(s.Batch) * float64(s.Context-s.Tokens) * m.KVBytesPerToken(elem)
	c.KVWrite = tokens * m.KVBytesPerToken(elem)
	if !fused {
		c.Scores = 4 * float64(m.Layers) * float64(s.Batch) * float64(m.Heads) * float64(s.Tokens) * float64(s.Context) * elem
	}
	return c
}

// ForwardPerToken is the forward FLOPs per token of a sequence of ctx tokens, the causal average
// over its positions: 2 × GEMMWeights plus attention's 2 × 2 × Layers × QWidth × (ctx+1)/2.
func (m Model) ForwardPerToken(ctx int) float64 {
	c := m.Cost(Step{Batch: 1, Tokens: ctx, Context: ctx}, 2, true)
	return c.FLOPs / float64(ctx)
}

// TrainingFactor is a training step's FLOPs over a forward pass's: the backward pass computes two
// products per forward GEMM (the gradients of the input and of the weights), so 3× in all (Kaplan
// et al. 2020, §2.1: C ≈ 6N per token). Recomputing the forward pass in the backward (activation
// checkpointing) adds one more: 4×, which counts in hardware FLOPs (HFU), not model FLOPs (MFU)
// (Chowdhery et al. 2022, appendix B; Korthikanti et al. 2022).
const (
	TrainingFactor  = 3
	RecomputeFactor = 4
)
