package transformer

// The published scaling laws of language-model pre-training: how the loss falls with parameters N
// and training tokens D, and how a compute budget C ≈ 6·N·D FLOPs is best split between them. Every
// constant is a published fit; nothing here is measured or fitted anew.

import "math"

// PFDay is a petaflop/s-day in FLOPs: 10¹⁵ × 86,400 (the unit of Kaplan et al.'s compute).
const PFDay = 8.64e19

// FLOPsPerParamToken is the training FLOPs per parameter per token, C ≈ 6·N·D (J. Kaplan et al.,
// "Scaling Laws for Neural Language Models", arXiv:2001.08361, 2020, §2.1).
const FLOPsPerParamToken = 2 * TrainingFactor

// Allocation is a split of a compute budget: Params parameters trained on Tokens tokens.
type Allocation struct {
	Params, Tokens float64
}

// TokensPerParam is Tokens / Params.
func (a Allocation) TokensPerParam() float64 { return a.Tokens / a.Params }

// FLOPs is 6·Params·Tokens.
func (a Allocation) FLOPs() float64 { return FLOPsPerParamToken * a.Params * a.Tokens }

// Parametric is a fitted loss L(N, D) = E + A/N^α + B/D^β (J. Hoffmann et al., "Training
// Compute-Optimal Large Language Models", NeurIPS 2022, arXiv:2203.15556, §3.3, "Approach 3"): E is
// the loss of an ideal model on infinite data, the other terms what a finite model and a finite
// dataset add. The loss is in nats per token of the fit's own data.
type Parametric struct {
	E, A, B, Alpha, Beta float64
}

// Hoffmann2022 is the fit as the Chinchilla paper prints it (§3.3, equation 10): E = 1.69, A = 406.4,
// B = 410.7, α = 0.34, β = 0.28. T. Besiroglu et al. ("Chinchilla Scaling: A replication attempt",
// arXiv:2404.10102, 2024) found these rounded constants inconsistent with the paper's other two
// approaches, which, like the Chinchilla model itself, put the optimum near 20 tokens per parameter.
var Hoffmann2022 = Parametric{E: 1.69, A: 406.4, B: 410.7, Alpha: 0.34, Beta: 0.28}

// Loss is L(n, d).
func (p Parametric) Loss(n, d float64) float64 {
	return p.E + p.A/math.Pow(n, p.Alpha) + p.B/math.Pow(d, p.Beta)
}

// Optimal is the allocation of c FLOPs that minimises Loss on the curve 6·N·D = c (Hoffmann et al.,
// equation 4): N = G·(c/6)^(β/(α+β)), D = (c/6)/N, G = (α·A / (β·B))^(1/(α+β)).
func (p Parametric) Optimal(c float64) Allocation {
	g := math.Pow(p.Alpha*p.A/(p.Beta*p.B), 1/(p.Alpha+p.Beta))
	n := g * math.Pow(c/FLOPsPerParamToken, p.ParamsExponent())
	return Allocation{Params: n, Tokens: c / FLOPsPerParamToken / n}
}

// ParamsExponent is a in N_opt ∝ C^a: β/(α+β) (0.45 for Hoffmann2022; the paper's Table 2 gives
// 0.46 for this approach, 0.50 and 0.49 for the other two).
func (p Parametric) ParamsExponent() float64 { return p.Beta / (p.Alpha + p.Beta) }

// ChinchillaTokensPerParam is the rule of thumb the Chinchilla model set: 70B parameters on 1.4T
// tokens, 20 tokens per parameter, compute-optimal by the paper's approaches 1 and 2 (Hoffmann et
// al. 2022, §4 and Table 3; N and D growing as C^0.5).
const ChinchillaTokensPerParam = 20

// Chinchilla20 is the allocation of c FLOPs at 20 tokens per parameter: N = √(c / (6·20)).
func Chinchilla20(c float64) Allocation {
	n := math.Sqrt(c / (FLOPsPerParamToken * ChinchillaTokensPerParam))
	return Allocation{Params: n, Tokens: ChinchillaTokensPerParam * n}
}

// Kaplan's compute-efficient frontier: N_opt = 1.3·10⁹ · C^0.73 parameters for C in PF-days (Kaplan
// et al. 2020, §6.1 and Figure 14; the exponent also in Hoffmann et al.'s Table 2). N counts no
// embeddings.
const (
	KaplanN0       = 1.3e9
	KaplanExponent = 0.73
)

// Kaplan is Kaplan et al.'s compute-efficient allocation of c FLOPs: N_opt as above, and the tokens
// 6·N·D = c leaves. Their frontier trains large models short of convergence, so it puts far fewer
// tokens on each parameter than Chinchilla's.
func Kaplan(c float64) Allocation {
	n := KaplanN0 * math.Pow(c/PFDay, KaplanExponent)
	return Allocation{Params: n, Tokens: c / FLOPsPerParamToken / n}
}
