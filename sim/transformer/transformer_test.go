package transformer

import (
	"math"
	"strings"
	"testing"
)

func within(got, want, rel float64) bool { return math.Abs(got-want) <= rel*math.Abs(want) }

func preset(t *testing.T, name string) Model {
	t.Helper()
	m, err := Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// The parameter counts computed from the shapes agree with the counts the papers and model cards
// state (GPT-3's 175.0B, Llama 3's 8.03B, 70.6B and 405B, Mixtral's 46.7B, DeepSeek-V3's 671B)
// within 0.5%.
func TestParamsMatchPublished(t *testing.T) {
	for _, m := range Presets {
		if got := m.Params(); !within(got, m.Published, 0.005) {
			t.Errorf("%s: %.4g parameters from the shape, published %.4g", m.Name, got, m.Published)
		}
	}
	// By hand, Llama 3 8B: per layer 4096·4096·2 + 4096·1024·2 (attention) + 3·4096·14336 (MLP) +
	// 2·4096 (norms) = 218,112,000; ×32 + 4096 + 2·128256·4096 = 8,030,261,248.
	if got := preset(t, "llama3-8b").Params(); got != 8_030_261_248 {
		t.Errorf("Llama 3 8B: %v parameters, want 8,030,261,248", got)
	}
}

// Training compute, 6·N·D: GPT-3's published 3.14e23 FLOPs for 300e9 tokens (Brown et al. 2020,
// Table D.1) and Llama 3 405B's 3.8e25 FLOPs for 15.6e12 tokens (Llama 3 paper, §3.3.1 and §1).
func TestTrainingComputeMatchesPublished(t *testing.T) {
	for _, tt := range []struct {
		name          string
		tokens, flops float64
		tolerance     float64
	}{
		{"gpt3-175b", 300e9, 3.14e23, 0.01},
		{"llama3-405b", 15.6e12, 3.8e25, 0.01},
	} {
		m := preset(t, tt.name)
		if got := 2 * TrainingFactor * m.Params() * tt.tokens; !within(got, tt.flops, tt.tolerance) {
			t.Errorf("%s: 6·N·D = %.4g, published %.3g", tt.name, got, tt.flops)
		}
	}
}

// The forward pass per token is Kaplan et al.'s C_forward = 2N + 2·n_layer·n_ctx·d_attn (N without
// embeddings, plus the output head, which they fold into N's order of magnitude): our causal count of
// attention gives 2·L·d_attn·(n_ctx+1), one key more per token than theirs.
// MLA's heads are wider for scores (DHead + RopeDim) than for values, so it is left to
// TestMoEForwardUsesActiveParams.
func TestForwardMatchesKaplan(t *testing.T) {
	for _, m := range Presets {
		if m.MLA.KVRank > 0 {
			continue
		}
		for _, ctx := range []int{1, 2048, 8192} {
			want := 2*m.GEMMWeights() + 2*float64(m.Layers)*float64(ctx)*float64(m.QWidth())
			if got := m.ForwardPerToken(ctx); !within(got, want+2*float64(m.Layers)*float64(m.QWidth()), 1e-12) {
				t.Errorf("%s at %d tokens: %.6g FLOPs per token, want %.6g", m.Name, ctx, got, want)
			}
		}
	}
}

// A decode step at context T, trained (3×), spends PaLM's 12·L·H·Q·T FLOPs per token on attention
// (Chowdhery et al. 2022, appendix B: a token attending to all T positions).
func TestAttentionMatchesPaLM(t *testing.T) {
	m := preset(t, "llama3-70b")
	for _, ctx := range []int{1, 4096, 131072} {
		c := m.Cost(Step{Batch: 1, Tokens: 1, Context: ctx}, 2, true)
		want := 12 * float64(m.Layers) * float64(m.Heads) * float64(m.DHead) * float64(ctx)
		if got := TrainingFactor * c.AttentionFLOPs; !within(got, want, 1e-12) {
			t.Errorf("context %d: %g, want %g", ctx, got, want)
		}
	}
}

// The KV cache per token: 2 (K and V) × layers × KV heads × d_head × 2 bytes.
func TestKVCache(t *testing.T) {
	for name, want := range map[string]float64{
		"llama3-8b":   2 * 32 * 8 * 128 * 2,  // 131,072 bytes: 128 KiB
		"llama3-70b":  2 * 80 * 8 * 128 * 2,  // 320 KiB
		"llama3-405b": 2 * 126 * 8 * 128 * 2, // 504 KiB
		"gpt3-175b":   2 * 96 * 12288 * 2,    // 4.5 MiB: no grouped-query attention
	} {
		if got := preset(t, name).KVBytesPerToken(2); got != want {
			t.Errorf("%s: %g bytes per token, want %g", name, got, want)
		}
	}
}

// Decode at batch B reads the weights once for B tokens, so its intensity is about B FLOP/byte with
// 2-byte weights, until the KV cache's bytes catch up; a prefill of a long prompt is far above.
func TestDecodeIntensityGrowsWithBatch(t *testing.T) {
	m := preset(t, "llama3-8b")
	one := m.Cost(Step{Batch: 1, Tokens: 1, Context: 1}, 2, true).Intensity()
	if !within(one, 1, 0.01) {
		t.Errorf("batch 1, empty cache: %g FLOP/byte, want about 1", one)
	}
	prev := 0.0
	for _, b := range []int{1, 4, 16, 64, 256} {
		ai := m.Cost(Step{Batch: b, Tokens: 1, Context: 1024}, 2, true).Intensity()
		if ai <= prev || ai > 1.1*float64(b) {
			t.Errorf("batch %d: %g FLOP/byte (previous %g), want growing and about %d at most", b, ai, prev, b)
		}
		prev = ai
	}
	if prev > 128 {
		t.Errorf("batch 256 at 1,024 tokens of context: %g FLOP/byte, want the KV cache's reads to hold it well under 256", prev)
	}
	if ai := m.Cost(Step{Batch: 1, Tokens: 2048, Context: 2048}, 2, true).Intensity(); ai < 100 {
		t.Errorf("prefill of 2,048 tokens: %g FLOP/byte, want far above decode's", ai)
	}
}

// Fusing attention saves bytes, never FLOPs: exactly the four passes over the score matrices.
func TestFusionSavesBytesNotFLOPs(t *testing.T) {
	m := preset(t, "llama3-8b")
	s := Step{Batch: 2, Tokens: 4096, Context: 4096}
	fused, unfused := m.Cost(s, 2, true), m.Cost(s, 2, false)
	if fused.FLOPs != unfused.FLOPs {
		t.Errorf("FLOPs differ: %g fused, %g unfused", fused.FLOPs, unfused.FLOPs)
	}
	if got, want := unfused.Bytes()-fused.Bytes(), 4*32*2*32*4096*4096*2.0; got != want {
		t.Errorf("unfused reads and writes %g bytes more, want %g", got, want)
	}
}

// The layer's GEMMs add up: per token, twice the layer's weights plus attention.
func TestLayerGEMMs(t *testing.T) {
	m := preset(t, "gpt3-175b")
	s := Step{Batch: 1, Tokens: 1, Context: 100}
	var weights, attention float64
	for _, g := range m.Layer(s) {
		if g.Activation {
			attention += g.FLOPs()
		} else {
			weights += g.FLOPs()
		}
	}
	if weights != 2*m.LayerWeights() || attention != 4*100*float64(m.QWidth()) {
		t.Errorf("one layer: %g weight FLOPs, %g attention FLOPs", weights, attention)
	}
	if _, err := Lookup("gpt-5"); err == nil || !strings.Contains(err.Error(), "llama3-405b") {
		t.Errorf("Lookup of an unknown model: %v", err)
	}
}

// The mixtures of experts: the shapes give Mixtral 8×7B 46.70B parameters, 12.88B of them active
// per token (Mistral AI: 46.7B and 12.9B), and DeepSeek-V3 671.03B, 37.55B active (the paper: 671B
// and 37B). Active counts agree within 2%: DeepSeek's 37B is rounded to the billion, and the shape's
// 37.55B counts the 0.93B input embedding, a table lookup that does no FLOPs (36.63B without it);
// both round to within a billion of 37B. What the shapes leave out: DeepSeek-V3's multi-token
// prediction module (14B more in its released checkpoint, not in the 671B; its report, §4.2 and
// the model card) and its routers' per-expert bias for load balancing (256 numbers per MoE layer).
func TestMoEParamsMatchPublished(t *testing.T) {
	for _, tt := range []struct {
		name            string
		total, active   float64
		activeTolerance float64
	}{
		{"mixtral-8x7b", 46.7e9, 12.9e9, 0.005},
		{"deepseek-v3", 671e9, 37e9, 0.02},
	} {
		m := preset(t, tt.name)
		if got := m.Params(); !within(got, tt.total, 0.005) {
			t.Errorf("%s: %.4g parameters, published %.4g", tt.name, got, tt.total)
		}
		if got := m.ActiveParams(); !within(got, tt.active, tt.activeTolerance) || m.PublishedActive != tt.active {
			t.Errorf("%s: %.4g active parameters, published %.4g", tt.name, got, tt.active)
		}
		if m.ActiveParams() >= m.Params()/3 {
			t.Errorf("%s: %.4g active of %.4g: an MoE uses a small part of its parameters per token", tt.name, m.ActiveParams(), m.Params())
		}
	}
	// By hand, Mixtral: per layer attention 2·4096² + 2·4096·1024 = 41,943,040, experts 8·3·4096·14336
	// = 1,409,286,144, router 4096·8, norms 2·4096: 1,451,270,144; ×32 + 4096 + 2·32000·4096 =
	// 46,702,792,704.
	if got := preset(t, "mixtral-8x7b").Params(); got != 46_702_792_704 {
		t.Errorf("Mixtral: %v parameters, want 46,702,792,704", got)
	}
	if m := preset(t, "llama3-8b"); m.ActiveParams() != m.Params() {
		t.Errorf("a dense model's active parameters %g differ from its parameters %g", m.ActiveParams(), m.Params())
	}
}

// FLOPs follow the active parameters: a forward pass costs 2 FLOPs per active GEMM weight per token
// plus attention, so Mixtral's forward pass at a context of one costs what a 12.9B dense model's
// does, not a 46.7B one's.
func TestMoEForwardUsesActiveParams(t *testing.T) {
	for _, name := range []string{"mixtral-8x7b", "deepseek-v3"} {
		m := preset(t, name)
		attn := m.ForwardPerToken(1) - 2*m.GEMMWeights()
		if attn <= 0 || attn > 1e-3*m.ForwardPerToken(1) {
			t.Errorf("%s: attention at context 1 is %g FLOPs of %g", name, attn, m.ForwardPerToken(1))
		}
		active := m.GEMMWeights() + float64(m.Layers)*m.layerSmall() + m.Embedding() - float64(m.Vocab*m.DModel) + float64(m.DModel) // the final norm
		if !within(active, m.ActiveParams(), 1e-12) {
			t.Errorf("%s: GEMM weights plus the rest %g, want the active parameters %g", name, active, m.ActiveParams())
		}
	}
}

// A decode step of one token reads TopK experts' weights per MoE layer; a large batch reads them
// all; so a batch-1 decode of Mixtral reads about its active weights, not all 46.7B.
func TestExpertsTouched(t *testing.T) {
	m := preset(t, "mixtral-8x7b")
	var experts GEMM
	for _, g := range m.Layer(Step{Batch: 1, Tokens: 1, Context: 1}) {
		if g.Experts > 0 {
			experts = g
		}
	}
	if got := experts.Touched(); !within(got, 2, 1e-12) {
		t.Errorf("one token: %g experts touched, want 2", got)
	}
	big := m.Layer(Step{Batch: 256, Tokens: 1, Context: 1})
	if got := big[len(big)-1].Touched(); !within(got, 8, 1e-6) {
		t.Errorf("256 tokens: %g experts touched, want all 8", got)
	}
	one := m.Cost(Step{Batch: 1, Tokens: 1, Context: 1}, 2, true)
	if !within(one.Weights, 2*m.GEMMWeights(), 0.001) {
		t.Errorf("batch-1 decode reads %g bytes of weights, want the active GEMM weights' %g", one.Weights, 2*m.GEMMWeights())
	}
	if got, want := m.MoE.Capacity(4096, 1.25), 1280; got != want {
		t.Errorf("capacity of 4,096 tokens, top-2 of 8, factor 1.25: %d slots, want %d", got, want)
	}
}

// MLA caches a 512-wide latent and a 64-wide RoPE key per layer: 61 × 576 × 2 bytes, 70,272 bytes
// per token, against 61 × 2 × 128 × 128 × 2 = 3.8 MB for the same heads without compression.
func TestMLAKVCache(t *testing.T) {
	if got, want := preset(t, "deepseek-v3").KVBytesPerToken(2), 61*576*2.0; got != want {
		t.Errorf("DeepSeek-V3: %g bytes per token, want %g", got, want)
	}
}
