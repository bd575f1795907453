// Package transformer counts what a decoder-only transformer asks of a chip: the GEMMs of one layer
// with their shapes, the parameters, the FLOPs of a forward pass and of training, the bytes of the
// KV cache, and the FLOPs and bytes of a prefill or a decode step (for the roofline). Everything is
// computed from a model's published shape (layers, d_model, heads, KV heads, d_ff, vocabulary);
// nothing here is a measurement, and no FLOP count is typed in.
//
// Conventions: a GEMM is (m×k)·(k×n), row-major, 2·m·k·n FLOPs (a multiply and an add per
// multiply-add); bytes are of 16-bit (BF16) weights, activations and KV cache unless a caller
// passes another element size. Element-wise work (norms, activations, softmax, RoPE, residuals) is
// left out of the FLOPs, as Kaplan et al. (2020) and PaLM's MFU (Chowdhery et al. 2022, appendix B)
// leave it out.
package transformer

import (
	"fmt"
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
	// Published is the parameter count the source states; Source where the shape comes from.
	Published float64
	Source    string
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

// LayerWeights is the number of weights in one layer's GEMMs: the Q, K, V and output projections
// and the MLP's two (three when gated) matrices.
func (m Model) LayerWeights() float64 {
	d, q, kv, ff := float64(m.DModel), float64(m.QWidth()), float64(m.KVWidth()), float64(m.DFF)
	attn := d*q + 2*d*kv + q*d
	mlp := 2 * d * ff
	if m.Gated {
		mlp = 3 * d * ff
	}
	return attn + mlp
}

// layerSmall is one layer's parameters outside its GEMMs: biases and norm gains.
func (m Model) layerSmall() float64 {
	d := float64(m.DModel)
	if !m.Biases {
		return 2 * d // two RMSNorm gains
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

// Params is the model's parameter count computed from its shape: every layer's weights, biases and
// norm gains, the final norm, the embeddings and the output head.
func (m Model) Params() float64 {
	final := float64(m.DModel)
	if m.Biases {
		final *= 2
	}
	return float64(m.Layers)*(m.LayerWeights()+m.layerSmall()) + final + m.Embedding()
}

// NonEmbedding is Params without the embedding, positions and output head: Kaplan et al.'s N.
func (m Model) NonEmbedding() float64 {
	return m.Params() - m.Embedding()
}

// GEMMWeights is the weights a forward pass multiplies by: every layer's GEMMs and the output head
// (the input embedding is a table lookup, not a GEMM). Twice this is the GEMM FLOPs per token
// before attention.
func (m Model) GEMMWeights() float64 {
	return float64(m.Layers)*m.LayerWeights() + float64(m.Vocab)*float64(m.DModel)
}

// KVBytesPerToken is the KV cache of one token, all layers: a key and a value of KVWidth each, per
// layer, of elem bytes.
func (m Model) KVBytesPerToken(elem float64) float64 {
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

// Layer is the GEMMs of one decoder layer for step s, in the order they run.
func (m Model) Layer(s Step) []GEMM {
	t := s.Batch * s.Tokens
	frac := s.meanKeys() / float64(s.Context)
	gemms := []GEMM{
		{Name: "QKV projection", M: t, K: m.DModel, N: m.QWidth() + 2*m.KVWidth(), Count: 1, Causal: 1, Weights: true},
		{Name: "attention scores QKᵀ (per head)", M: s.Tokens, K: m.DHead, N: s.Context, Count: s.Batch * m.Heads, Causal: frac, Activation: true},
		{Name: "attention values PV (per head)", M: s.Tokens, K: s.Context, N: m.DHead, Count: s.Batch * m.Heads, Causal: frac, Activation: true},
		{Name: "output projection", M: t, K: m.QWidth(), N: m.DModel, Count: 1, Causal: 1, Weights: true},
	}
	if m.Gated {
		gemms = append(gemms, GEMM{Name: "MLP gate and up (SwiGLU)", M: t, K: m.DModel, N: 2 * m.DFF, Count: 1, Causal: 1, Weights: true})
	} else {
		gemms = append(gemms, GEMM{Name: "MLP up", M: t, K: m.DModel, N: m.DFF, Count: 1, Causal: 1, Weights: true})
	}
	return append(gemms, GEMM{Name: "MLP down", M: t, K: m.DFF, N: m.DModel, Count: 1, Causal: 1, Weights: true})
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
// nothing between GEMMs.
func (m Model) Cost(s Step, elem float64, fused bool) Cost {
	var c Cost
	add := func(g GEMM, n float64) { // n times, n the layers or, for the head, 1
		c.FLOPs += n * g.FLOPs()
		if g.Activation {
			c.AttentionFLOPs += n * g.FLOPs()
			return
		}
		c.Weights += n * float64(g.K) * float64(g.N) * elem
		c.Activations += n * (float64(g.M)*float64(g.K) + float64(g.M)*float64(g.N)) * elem
	}
	for _, g := range m.Layer(s) {
		add(g, float64(m.Layers))
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
