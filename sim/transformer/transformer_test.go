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
// state (GPT-3's 175.0B, Llama 3's 8.03B, 70.6B and 405B) within 0.5%.
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
func TestForwardMatchesKaplan(t *testing.T) {
	for _, m := range Presets {
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
