package transformer

import "testing"

// The optimum minimises the fitted loss along its iso-FLOP curve: a model 10% larger or smaller,
// trained on the tokens the same compute then allows, has a higher loss.
func TestOptimalMinimisesLoss(t *testing.T) {
	p := Hoffmann2022
	for _, c := range []float64{1e21, 5.76e23, 3.8e25} {
		a := p.Optimal(c)
		if !within(a.FLOPs(), c, 1e-12) {
			t.Errorf("C = %g: allocation spends %g FLOPs", c, a.FLOPs())
		}
		best := p.Loss(a.Params, a.Tokens)
		for _, f := range []float64{0.9, 1.1} {
			n := f * a.Params
			if l := p.Loss(n, c/6/n); l <= best {
				t.Errorf("C = %g: N ×%g gives loss %g, the optimum %g", c, f, l, best)
			}
		}
	}
	if got := p.ParamsExponent(); !within(got, 0.46, 0.02) {
		t.Errorf("N_opt ∝ C^%g, Hoffmann et al.'s Table 2 gives 0.46 for this approach", got)
	}
}

// Chinchilla (70B on 1.4T tokens) and Gopher (280B on 300B) used about the same compute; the
// fitted law gives Chinchilla the lower loss, 1.94 against 1.99 (Hoffmann et al. 2022, §4.1: the
// same budget as Gopher, 4× the data). The rule of thumb at Gopher's budget (5.76e23 FLOPs, Table 3)
// is 69B parameters and 1.4T tokens.
func TestChinchillaBeatsGopher(t *testing.T) {
	p := Hoffmann2022
	chin, gopher := p.Loss(70e9, 1.4e12), p.Loss(280e9, 300e9)
	if !(chin < gopher) || !within(chin, 1.937, 0.001) || !within(gopher, 1.993, 0.001) {
		t.Errorf("loss: Chinchilla %g, Gopher %g", chin, gopher)
	}
	a := Chinchilla20(5.76e23)
	if !within(a.Params, 69.3e9, 0.01) || !within(a.Tokens, 1.386e12, 0.01) || a.TokensPerParam() != 20 {
		t.Errorf("20 tokens per parameter at 5.76e23 FLOPs: %+v", a)
	}
}

// Kaplan's frontier puts GPT-3's budget (3.14e23 FLOPs, 3,634 PF-days) on a 516B-parameter model
// trained on about 100B tokens, 0.2 tokens per parameter: larger and shorter than GPT-3 itself
// (175B on 300B, 1.7), and a hundred times fewer tokens per parameter than Chinchilla's 20.
func TestKaplanAgainstChinchilla(t *testing.T) {
	k := Kaplan(3.14e23)
	if !within(k.Params, 516e9, 0.01) || !within(k.TokensPerParam(), 0.196, 0.01) {
		t.Errorf("Kaplan at GPT-3's budget: %.4g parameters, %.3g tokens per parameter", k.Params, k.TokensPerParam())
	}
	if c := Chinchilla20(3.14e23); !(c.TokensPerParam() > 50*k.TokensPerParam()) {
		t.Errorf("Chinchilla %g tokens per parameter against Kaplan's %g", c.TokensPerParam(), k.TokensPerParam())
	}
}
