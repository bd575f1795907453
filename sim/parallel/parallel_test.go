package parallel

import (
	"math"
	"testing"

	"github.com/gpuplayground/playground/sim/transformer"
)

func near(got, want float64) bool { return math.Abs(got-want) <= 1e-9*math.Abs(want) }

func model(t *testing.T, name string) transformer.Model {
	t.Helper()
	m, err := transformer.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// Korthikanti et al.'s 34h per token and layer for a GPT layer, less their 2h of dropout masks, and
// the softmax's 2·a·s without its dropout; by hand for a 1,024-wide layer of 16 heads.
func TestActivationBytesByHand(t *testing.T) {
	gpt := transformer.Model{Layers: 1, DModel: 1024, Heads: 16, KVHeads: 16, DHead: 64, DFF: 4096}
	for _, tt := range []struct {
		r    Recompute
		tp   int
		want float64
	}{
		{Selective, 1, 32 * 1024},
		{None, 1, 32*1024 + 2*16*2048},
		{Full, 1, 2 * 1024},
		{Selective, 4, 32 * 1024 / 4},
	} {
		if got := ActivationBytesPerToken(gpt, 2048, tt.r, tt.tp); !near(got, tt.want) {
			t.Errorf("%s, TP %d: %g bytes per token, want %g", tt.r, tt.tp, got, tt.want)
		}
	}
	// Llama 3 405B: 12h + 4h·8/128 = 12.25h for norms and attention, 6·d_ff for SwiGLU.
	l := model(t, "llama3-405b")
	if got, want := ActivationBytesPerToken(l, 8192, Selective, 1), 12.25*16384+6*53248.0; !near(got, want) {
		t.Errorf("Llama 3 405B: %g, want %g", got, want)
	}
}

// GPT-3 as pure data parallelism: every chip holds 16 bytes per parameter, about 2.8 TB.
func TestPureDataParallelGPT3(t *testing.T) {
	g := model(t, "gpt3-175b")
	j := Job{Model: g, Seq: 2048, Sequences: 1562.5, Recompute: Selective}
	m := PerChip(j, Layout{TP: 1, PP: 1, CP: 1, DP: 1024})
	if !near(m.State(), 16*g.Params()) || m.State() < 2.7e12 || m.State() > 2.9e12 {
		t.Errorf("state %g bytes, want 16 × %g ≈ 2.8e12", m.State(), g.Params())
	}
	// One microbatch in flight (no pipeline): 96 layers × 2,048 tokens × 32 × 12,288 bytes.
	if want := 96.0 * 2048 * 32 * 12288; !near(m.Activations, want) {
		t.Errorf("activations %g, want %g", m.Activations, want)
	}
	// ZeRO stages over 1,024 chips: 1 shards the 12 optimiser bytes, 2 the gradients, 3 the weights.
	n := g.Params()
	for zero, want := range []float64{16 * n, 4*n + 12*n/1024, 2*n + 14*n/1024, 16 * n / 1024} {
		if got := PerChip(j, Layout{TP: 1, PP: 1, CP: 1, DP: 1024, ZeRO: zero}).State(); !near(got, want) {
			t.Errorf("ZeRO %d: %g, want %g", zero, got, want)
		}
	}
}

// With free communication the bubble is (p−1)/(m+p−1) of the pipeline's time.
func TestBubble(t *testing.T) {
	if got := BubbleFraction(4, 8); !near(got, 3.0/11) {
		t.Errorf("p 4, m 8: %g, want 3/11", got)
	}
	g := model(t, "gpt3-175b")
	free := Links{NodeChips: 8, NodeBW: math.Inf(1), NetBW: math.Inf(1)}
	j := Job{Model: g, Seq: 2048, Sequences: 64, Recompute: Selective}
	s := Time(j, Layout{TP: 1, PP: 4, CP: 1, DP: 8}, 1e15, free) // 8 microbatches per replica
	if got := s.Bubble / (s.Compute + s.Bubble); !near(got, 3.0/11) || s.Communication() != 0 {
		t.Errorf("bubble %g of the time, communication %g; want 3/11, 0", got, s.Communication())
	}
	// The arithmetic: 3 × forward FLOPs of 64 sequences over 32 chips at 1e15.
	if want := 3 * g.ForwardPerToken(2048) * 2048 * 64 / 32 / 1e15; !near(s.Compute, want) {
		t.Errorf("compute %g, want %g", s.Compute, want)
	}
}

// Each parallelism's communication, by hand for Llama 3 405B at 8,192 tokens, TP 8 in a node at
// 450 GB/s, the rest at 50 GB/s, no latency.
func TestCommunicationByHand(t *testing.T) {
	l := model(t, "llama3-405b")
	k := Links{NodeChips: 8, NodeBW: 450e9, NetBW: 50e9}
	j := Job{Model: l, Seq: 8192, Sequences: 2048, Recompute: Selective}
	s := Time(j, Layout{TP: 8, PP: 16, CP: 1, DP: 128, ZeRO: 1}, 989e12, k)
	act := 8192.0 * 16384 * 2 // one layer's output, bytes
	// 16 microbatches × 8 layers (⌈126/16⌉) × 4 all-reduces of 2·7/8·act at 450 GB/s.
	if want := 16 * 8 * 4 * (2 * 7.0 / 8 * act / 450e9); !near(s.TP, want) {
		t.Errorf("TP %g s, want %g", s.TP, want)
	}
	// 16 microbatches × 2 sends of act/8 at 50 GB/s.
	if want := 16 * 2 * (act / 8 / 50e9); !near(s.PP, want) {
		t.Errorf("PP %g s, want %g", s.PP, want)
	}
	// One all-reduce of the stage's BF16 gradients over 128 chips: 2·127/128 · 2·P/128 at 50 GB/s.
	if want := 2 * 127.0 / 128 * 2 * l.Params() / 128 / 50e9; !near(s.DP, want) || s.CP != 0 {
		t.Errorf("DP %g s (CP %g), want %g (0)", s.DP, s.CP, want)
	}
	// ZeRO-3 moves 1.5 times the bytes: a reduce-scatter and two all-gathers.
	z3 := Time(j, Layout{TP: 8, PP: 16, CP: 1, DP: 128, ZeRO: 3}, 989e12, k)
	if !near(z3.DP, 1.5*s.DP) {
		t.Errorf("ZeRO-3 DP %g, want 1.5 × %g", z3.DP, s.DP)
	}
	// CP 16 at 131,072 tokens: per microbatch and layer an all-gather and a reduce-scatter of the
	// keys and values, 131,072 × 2 × 1,024/8 × 2 bytes, each 15/16 of it at 50 GB/s.
	jc := Job{Model: l, Seq: 131072, Sequences: 128, Recompute: Selective}
	c := Time(jc, Layout{TP: 8, PP: 16, CP: 16, DP: 8, ZeRO: 1}, 989e12, k)
	kv := 131072.0 * 2 * 1024 / 8 * 2
	if want := 16 * 8 * 2 * (15.0 / 16 * kv / 50e9); !near(c.CP, want) {
		t.Errorf("CP %g s, want %g", c.CP, want)
	}
}

// Llama 3's Table 4 agrees with itself, and the model agrees that its layouts fit an 80 GB H100
// once FSDP shards the gradients (ZeRO 2 or 3), and not without sharding.
func TestLlama3Layouts(t *testing.T) {
	l := model(t, "llama3-405b")
	for _, p := range Llama3Layouts {
		if p.TP*p.CP*p.PP*p.DP != p.GPUs || p.Seq*p.BatchPerDP*p.DP != p.TokensPerBatch {
			t.Errorf("%+v: degrees or batch do not multiply out", p)
		}
		if mfu := p.TFLOPsPerGPU * 1e12 / 989e12; math.Abs(mfu-p.MFU) > 0.01 {
			t.Errorf("%+v: %g TFLOP/s of 989 is %g MFU, published %g", p, p.TFLOPsPerGPU, mfu, p.MFU)
		}
		j := Job{Model: l, Seq: p.Seq, Sequences: float64(p.TokensPerBatch / p.Seq), Recompute: Selective}
		if got := j.Microbatches(p.Layout(2)); got != p.BatchPerDP {
			t.Errorf("%+v: %d microbatches, want %d", p, got, p.BatchPerDP)
		}
		for zero, fits := range []bool{false, true, true, true} {
			if zero == 1 {
				continue // within a few GB of 80: the approximations decide
			}
			if got := PerChip(j, p.Layout(zero)).Total() <= 80e9; got != fits {
				t.Errorf("%+v ZeRO %d: fits %v, want %v (%g bytes)", p, zero, got, fits, PerChip(j, p.Layout(zero)).Total())
			}
		}
		if got, ok := FindPublished(p.Layout(3), p.Seq); !ok || got != p {
			t.Errorf("FindPublished(%+v) = %+v, %v", p, got, ok)
		}
	}
}

// Smallest finds a layout that fits, and no layout with fewer chips per replica fits.
func TestSmallest(t *testing.T) {
	g := model(t, "gpt3-175b")
	j := Job{Model: g, Seq: 2048, Sequences: 1562.5, Recompute: Selective}
	for _, zero := range []int{0, 1, 3} {
		best, ok := Smallest(j, 1024, 1, zero, 8, 80e9)
		if !ok || PerChip(j, best).Total() > 80e9 || best.Chips() != 1024 {
			t.Fatalf("ZeRO %d: %v, %v", zero, best, ok)
		}
		for tp := 1; tp <= 8; tp *= 2 {
			for pp := 1; tp*pp < best.TP*best.PP; pp *= 2 {
				l := Layout{TP: tp, PP: pp, CP: 1, DP: 1024 / (tp * pp), ZeRO: zero}
				if PerChip(j, l).Total() <= 80e9 {
					t.Errorf("ZeRO %d: %v fits and is smaller than %v", zero, l, best)
				}
			}
		}
	}
	// Nothing fits a 1 GB chip on 8 chips.
	if l, ok := Smallest(j, 8, 1, 0, 8, 1e9); ok {
		t.Errorf("1 GB chips: %v fits", l)
	}
}
