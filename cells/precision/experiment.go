package precision

import (
	"math"
	"math/rand/v2"
	"slices"

	"github.com/gpuplayground/playground/numeric"
)

// Seed fixes the gradients' random draw, so a cell shows the same values every run.
const Seed = 2018

// Gradients are s.Count values with log10 of the magnitude uniform on [log10 Smallest, log10
// Largest] and random signs, from Seed.
func Gradients(s Spec) []float64 {
	rng := rand.New(rand.NewPCG(Seed, uint64(s.Count)))
	lo, hi := math.Log10(s.Smallest), math.Log10(s.Largest)
	g := make([]float64, s.Count)
	for i := range g {
		g[i] = math.Pow(10, lo+(hi-lo)*rng.Float64())
		if rng.IntN(2) == 0 {
			g[i] = -g[i]
		}
	}
	return g
}

// AmaxScale is per-tensor scaling's factor for values whose largest magnitude is amax: the largest
// power of two S with amax·S at most f's largest finite value (as FP8 recipes scale a tensor from
// its amax; P. Micikevicius et al., "FP8 Formats for Deep Learning", 2022, §2 and §4.3).
func AmaxScale(f numeric.Format, amax float64) float64 {
	e := min(math.Ilogb(f.MaxFinite())-math.Ilogb(amax), 1000) // at most 2^1000: finite in float64
	s := math.Ldexp(1, e)
	for amax*s > f.MaxFinite() { // the quotient's rounding can land a hair high
		s /= 2
	}
	return s
}

// Stored is what became of gradients stored in a format at a loss scale.
type Stored struct {
	N                               int
	Kept, Zero, Subnormal, Overflow int
	// MedianError is the median of |stored/scale − g| / |g| over the kept values (NaN if none);
	// SmallestKept the smallest kept magnitude (0 if none).
	MedianError, SmallestKept float64
	// values and kept mark each gradient's magnitude and whether it was kept, for KeptByDecade.
	mags []float64
	kept []bool
}

// Percent is n as a percentage of the gradients.
func (s Stored) Percent(n int) float64 { return 100 * float64(n) / float64(s.N) }

// Store multiplies each gradient by scale (exact: a power of two, within float64's range), rounds it
// to f, divides back, and counts the outcomes. A subnormal value is kept and also counted as subnormal.
func Store(f numeric.Format, scale float64, grads []float64) Stored {
	st := Stored{N: len(grads), mags: make([]float64, len(grads)), kept: make([]bool, len(grads))}
	var errs []float64
	for i, g := range grads {
		r := f.Round(g * scale)
		st.mags[i] = math.Abs(g)
		switch {
		case math.IsInf(r, 0) || math.IsNaN(r):
			st.Overflow++
		case r == 0:
			st.Zero++
		default:
			st.Kept++
			st.kept[i] = true
			if f.Subnormal(r) {
				st.Subnormal++
			}
			errs = append(errs, math.Abs(r/scale-g)/math.Abs(g))
			if st.SmallestKept == 0 || math.Abs(g) < st.SmallestKept {
				st.SmallestKept = math.Abs(g)
			}
		}
	}
	st.MedianError = math.NaN()
	if len(errs) > 0 {
		slices.Sort(errs)
		st.MedianError = errs[len(errs)/2]
		if len(errs)%2 == 0 {
			st.MedianError = (errs[len(errs)/2-1] + errs[len(errs)/2]) / 2
		}
	}
	return st
}

// KeptByDecade is the percentage kept among the gradients of each decade of magnitude (x: the
// decade's geometric middle), for the chart.
func (st Stored) KeptByDecade(s Spec) (x, y []float64) {
	lo, hi := math.Floor(math.Log10(s.Smallest)), math.Ceil(math.Log10(s.Largest))
	n := int(hi - lo)
	if n < 1 {
		n = 1
	}
	count, kept := make([]int, n), make([]int, n)
	for i, m := range st.mags {
		d := min(max(int(math.Log10(m)-lo), 0), n-1)
		count[d]++
		if st.kept[i] {
			kept[d]++
		}
	}
	for d := range n {
		if count[d] > 0 {
			x = append(x, math.Pow(10, lo+float64(d)+0.5))
			y = append(y, 100*float64(kept[d])/float64(count[d]))
		}
	}
	return x, y
}

// Accumulate adds update to a weight of 1 steps times, the weight kept in format keep (each sum
// rounded to it), and returns the weight as used: rounded to format use.
func Accumulate(keep, use numeric.Format, update float64, steps int) float64 {
	u := keep.Round(update)
	w := 1.0
	for range steps {
		w = keep.Round(w + u)
	}
	return use.Round(w)
}
