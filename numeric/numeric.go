// Package numeric holds the arithmetic every measurement of a kernel shares, whoever runs it (the
// CPU harness, the GPU worker, the virtual GPU, the simulators): fresh random inputs, the relative
// Frobenius error against a float64 reference and the tolerance it is held to per precision, and
// repeated timing with its median.
package numeric

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"time"
)

// Float is the element type of a matrix: float32 or float64.
type Float interface{ ~float32 | ~float64 }

// Timing summarises repeated timed calls of one kernel, in seconds of wall-clock time.
type Timing struct {
	Median, Min, Max float64
	// Samples holds every timed run, in order.
	Samples []float64
}

// GFLOPS returns flops / Median / 1e9, the throughput in GFLOP/s at the median time.
func (t Timing) GFLOPS(flops float64) float64 {
	if t.Median <= 0 {
		return 0
	}
	return flops / t.Median / 1e9
}

// Measure calls run once untimed (the warm-up), then repeats more times, timing each with the
// monotonic clock. after, if not nil, is called after each call (warm-up included) with the number of
// calls made so far. It returns the first error from run, which stops the measurement.
func Measure(ctx context.Context, repeats int, run func(context.Context) error, after func(done int)) (Timing, error) {
	if err := run(ctx); err != nil {
		return Timing{}, err
	}
	if after != nil {
		after(1)
	}
	samples := make([]float64, 0, repeats)
	for r := range repeats {
		start := time.Now()
		if err := run(ctx); err != nil {
			return Timing{}, err
		}
		samples = append(samples, time.Since(start).Seconds())
		if after != nil {
			after(r + 2)
		}
	}
	return Timing{Median: Median(samples), Min: slices.Min(samples), Max: slices.Max(samples), Samples: samples}, nil
}

// Random fills xs with fresh uniform random numbers in [-1, 1) that are never exactly zero, so a kernel
// that skips work or leaves its output untouched cannot pass the reference check.
func Random[T Float](rng *rand.Rand, xs []T) {
	for i := range xs {
		v := T(0)
		for v == 0 {
			v = T(2*rng.Float64() - 1)
		}
		xs[i] = v
	}
}

// RelFrobenius returns ‖got − want‖_F / ‖want‖_F, computed in float64. It returns +Inf when got
// contains NaN or Inf, and 0 when both are all zero.
func RelFrobenius[T Float](got []T, want []float64) float64 {
	var num, den float64
	for i, w := range want {
		g := float64(got[i])
		if math.IsNaN(g) || math.IsInf(g, 0) {
			return math.Inf(1)
		}
		d := g - w
		num += d * d
		den += w * w
	}
	if den == 0 {
		if num == 0 {
			return 0
		}
		return math.Inf(1)
	}
	return math.Sqrt(num / den)
}

// Tolerance is the largest relative Frobenius error accepted for a result computed in the given
// precision ("float32" or "float64") from inputs in [-1, 1). Rounding error of a length-k dot product
// grows like √k·ε (Higham, Accuracy and Stability of Numerical Algorithms, 2nd ed., §3.1); the bounds
// leave a wide margin over that for k ≤ 4096: float32 ε ≈ 6e-8, float64 ε ≈ 1.1e-16.
func Tolerance(dtype string) float64 {
	if dtype == "float64" {
		return 1e-12
	}
	return 1e-4
}

// Median returns the median of xs (the mean of the middle two for even lengths); xs is not modified.
// It returns 0 for an empty slice.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	h := len(s) / 2
	if len(s)%2 == 1 {
		return s[h]
	}
	return (s[h-1] + s[h]) / 2
}
