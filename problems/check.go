package problems

import (
	"context"
	"fmt"
	"math"
	"strings"
)

// Precision is the lowest precision a kernel computes in (the cell's `precision:` key), by its
// significand bits t (the implicit bit included): its unit roundoff is u = 2^-t (Higham, Accuracy and
// Stability of Numerical Algorithms, 2nd ed., §2.1).
type Precision struct {
	Name string
	Bits int
}

// Precisions are the `precision:` key's values: fp32 (u = 2^-24), tf32 (10 stored mantissa bits,
// u = 2^-11), bf16 (7 bits, 2^-8) and fp16 (10 bits, 2^-11). A float64 cell's default is fp64 (2^-53).
func Precisions() []Precision {
	return []Precision{{"fp32", 24}, {"tf32", 11}, {"bf16", 8}, {"fp16", 11}}
}

// LookupPrecision finds a `precision:` value; its error lists the valid ones.
func LookupPrecision(name string) (Precision, error) {
	var names []string
	for _, p := range Precisions() {
		if p.Name == name {
			return p, nil
		}
		names = append(names, p.Name)
	}
	return Precision{}, fmt.Errorf("unknown precision %q; use one of %s", name, strings.Join(names, ", "))
}

// DefaultPrecision is the precision of a cell in dtype that names none: fp64 for float64, else fp32.
func DefaultPrecision(dtype string) Precision {
	if dtype == "float64" {
		return Precision{"fp64", 53}
	}
	return Precisions()[0]
}

// U is the unit roundoff 2^-Bits.
func (p Precision) U() float64 { return math.Ldexp(1, -p.Bits) }

// Verdict is one check of a kernel's output against the float64 reference.
type Verdict struct {
	// Err is the problem's error measure (its Tolerance says which); math.MaxFloat64 when the
	// output held NaN or Inf where checked. Tol is the bound it must not exceed.
	Err, Tol float64
	OK       bool
	// Checked is how many output entries were compared.
	Checked int
	// Bad, when Err is math.MaxFloat64, is the output entry that made it so: NaN or an infinity
	// where the reference is finite, or any value where the reference is a NaN or an infinity
	// (an input moved as it is) that it does not match.
	Bad float64
}

// Check compares got, the output buffer's n-sized contents in float64, with the reference for the
// inputs bufs (as Inputs returned them), for a kernel computing in prec. which, if not nil, lists the
// output entries to compare (those a sampled launch wrote, or a random sample of a large output);
// nil compares all. A problem whose full reference is too costly at n (SampledCheck) needs which.
func (p *Problem) Check(ctx context.Context, n int, bufs [][]float64, got []float64, which []int, prec Precision, dtype string) (Verdict, error) {
	v := Verdict{Tol: p.tol(n, prec, dtype)}
	var want, scale []float64
	switch {
	case which != nil && p.refAt != nil:
		want = make([]float64, len(got))
		for c, i := range which {
			if c%256 == 0 && ctx.Err() != nil {
				return v, ctx.Err()
			}
			want[i] = p.refAt(n, bufs, i)
		}
	case p.SampledCheck(n):
		return v, fmt.Errorf("%s at n=%d: the full reference is too costly; check a sample", p.Name, n)
	default:
		var err error
		if want, scale, err = p.ref(ctx, n, bufs); err != nil {
			return v, err
		}
	}
	if which == nil {
		which = make([]int, len(got))
		for i := range which {
			which[i] = i
		}
	}
	v.Checked = len(which)
	v.Err, v.Bad = measure(got, want, scale, which, p.frobenius)
	v.OK = v.Err <= v.Tol && v.Checked > 0
	return v, ctx.Err()
}

// SampledCheck reports whether Check at n needs which, a sample of the output's entries: the full
// float64 reference is too costly above n = 1024 for matmul (n³ multiply-adds) and above n = 512 for
// attention (2n²·d); every other problem is checked in full at every n it allows.
func (p *Problem) SampledCheck(n int) bool { return p.fullRef > 0 && n > p.fullRef }

// measure is ‖got − want‖_F / ‖want‖_F over which (frobenius; 0 when both are zero), or the largest
// |got − want| / scale over which; math.MaxFloat64 for NaN or Inf where want is finite, or for an
// entry whose want is NaN or an infinity (an input moved as it is) that got does not match; bad is
// then that entry of got.
func measure(got, want, scale []float64, which []int, frobenius bool) (err, bad float64) {
	var num, den, worst float64
	for _, i := range which {
		g, w := got[i], want[i]
		if math.IsNaN(w) || math.IsInf(w, 0) {
			if g != w && !(math.IsNaN(g) && math.IsNaN(w)) {
				return math.MaxFloat64, g
			}
			continue
		}
		if math.IsNaN(g) || math.IsInf(g, 0) {
			return math.MaxFloat64, g
		}
		d := math.Abs(g - w)
		if frobenius {
			num += d * d
			den += w * w
			continue
		}
		switch {
		case scale[i] > 0:
			worst = math.Max(worst, d/scale[i])
		case d > 0:
			return math.MaxFloat64, math.Inf(1)
		}
	}
	if !frobenius {
		return worst, 0
	}
	switch {
	case den > 0:
		if e := finite(math.Sqrt(num / den)); e != math.MaxFloat64 {
			return e, 0
		}
		return math.MaxFloat64, math.Inf(1)
	case num > 0:
		return math.MaxFloat64, math.Inf(1)
	}
	return 0, 0
}

func finite(x float64) float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return math.MaxFloat64
	}
	return x
}

// MatmulTolerance is the largest relative Frobenius error accepted for a length-k dot-product
// result (C = A·B with k = n) computed in p from inputs in [-1, 1): the float32 and float64 bounds of
// numeric.Tolerance (1e-4, 1e-12), or 4·√k·u where that is larger. The worst-case bound of a dot
// product is |error| ≤ γ_k·Σ|a||b| with γ_k = k·u/(1 − k·u) (Higham, §3.1); rounding errors of
// random sign grow like √k·u (Higham and Mary, "A New Approach to Probabilistic Rounding Error
// Analysis", SIAM J. Sci. Comput. 41(5), 2019), and the factor 4 is the margin. So fp16 and tf32 at
// k = 512 accept 0.044, bf16 0.35; at k = 1, 2e-3 and 1.6e-2, gpu.Tolerance's values for 16-bit
// inputs.
func MatmulTolerance(k int, p Precision, dtype string) float64 {
	floor := 1e-4
	if dtype == "float64" {
		floor = 1e-12
	}
	return math.Max(floor, 4*math.Sqrt(float64(k))*p.U())
}

// sumTolerance is the bound on |ŝ − s| / Σ|x| for sums of n of the wholes in p: γ_{n−1} ≈ (n−1)·u
// (Higham, §4.2, eq. 4.4, for any order of summation), which is 0 while every partial sum is a whole
// number p holds exactly (b·n ≤ 2^t, wholes): then any order gives the exact sum, and the check
// demands it (in fp32, for every n a cell may ask).
func sumTolerance(n int, p Precision, _ string) float64 {
	if exactSums(n, p) {
		return 0
	}
	return float64(n-1) * p.U()
}

// PrecisionNote says, for a failed check v of a kernel at n checked in prec, that the `precision:`
// value computes (the format the kernel's executed code converts to: "fp16", "bf16", "tf32",
// "fp32"), lower than prec, would pass it: the cell has not declared that its kernel computes in
// that precision, and its error fits that precision's tolerance. "" when the check passed, computes
// is "" (a kernel in the cell's own precision is wrong, not imprecise) or not below prec, the error
// is not finite, or it is over computes's tolerance too (the kernel is wrong at its own precision).
func (p *Problem) PrecisionNote(n int, v Verdict, prec Precision, dtype, computes string) string {
	if v.OK || v.Err == math.MaxFloat64 || math.IsNaN(v.Err) || math.IsInf(v.Err, 0) || computes == "" {
		return ""
	}
	q, err := LookupPrecision(computes)
	if err != nil || q.Bits >= prec.Bits {
		return ""
	}
	tol := p.tol(n, q, dtype)
	if v.Err > tol {
		return ""
	}
	return fmt.Sprintf("the error %.3g is over %s's tolerance %.3g but within %s's %.3g: the kernel's code converts to %s; "+
		"a kernel that computes in lower precision says so with the cell key `precision: %s`, which checks it at that precision's tolerance",
		v.Err, prec.Name, v.Tol, q.Name, tol, q.Name, q.Name)
}
