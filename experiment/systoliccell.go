package experiment

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/gpuplayground/playground/kernels"
	"github.com/gpuplayground/playground/kernels/systolic"
	"gopkg.in/yaml.v3"
)

// SystolicSpec is a parsed `systolic` cell, which multiplies on a simulated weight-stationary
// systolic array:
//
//	array: 8          # an array of N×N multiply-accumulate cells (animated up to 16×16)
//	m: 8              # C (m×n) = A (m×k) · B (k×n)
//	n: 16
//	k: 16
//	clock_mhz: 700    # for the throughput figure (TPU v1 ran at 700 MHz)
type SystolicSpec struct {
	Array, M, N, K int
	ClockMHz       float64
}

// Limits of a systolic cell: sizes, the largest animated array, and the simulation's work
// (PE-cycles), about 10 ns each on one core.
const (
	MaxSystolicArray  = 256
	MaxSystolicDim    = 1024
	MaxAnimatedArray  = 16
	MaxAnimatedFrames = 300
	maxSystolicPEWork = 4e8
)

// ParseSystolic reads a `systolic` cell. Errors are *SpecError values with line numbers.
func ParseSystolic(src string) (SystolicSpec, error) {
	s := SystolicSpec{ClockMHz: 700}
	err := eachKey(src, "array, m, n, k, clock_mhz", func(key, val *yaml.Node) error {
		var err error
		dim := func(dst *int, limit int) {
			if err = decode(val, dst, "a whole number"); err == nil && (*dst < 1 || *dst > limit) {
				err = errAt(val, "%s is %d; use 1 to %d", key.Value, *dst, limit)
			}
		}
		switch key.Value {
		case "array":
			dim(&s.Array, MaxSystolicArray)
		case "m":
			dim(&s.M, MaxSystolicDim)
		case "n":
			dim(&s.N, MaxSystolicDim)
		case "k":
			dim(&s.K, MaxSystolicDim)
		case "clock_mhz":
			if err = decode(val, &s.ClockMHz, "a number of MHz"); err == nil && !(s.ClockMHz > 0 && s.ClockMHz <= 1e5) {
				err = errAt(val, "clock_mhz must be positive")
			}
		default:
			err = errAt(key, "unknown key %q; known keys: array, m, n, k, clock_mhz", key.Value)
		}
		if err != nil {
			return err
		}
		return nil
	})
	if err != nil {
		return SystolicSpec{}, err
	}
	if s.Array == 0 || s.M == 0 || s.N == 0 || s.K == 0 {
		return SystolicSpec{}, &SpecError{Line: 1, Msg: "a systolic cell needs array, m, n and k"}
	}
	st := systolic.Cycles(s.Array, s.M, s.N, s.K)
	if work := float64(st.Cycles) * float64(s.Array) * float64(s.Array); work > maxSystolicPEWork {
		return SystolicSpec{}, &SpecError{Msg: "this product is too big to simulate cycle by cycle here: use a smaller array or smaller m, n, k (the chart of real arrays uses the closed form)"}
	}
	return s, nil
}

// SystolicResult is a simulated product: its cycle counts, utilisation and throughput at the
// cell's clock. Simulated, not measured. Its JSON form is the body of the websocket `systolic` message.
type SystolicResult struct {
	Array        int     `json:"array"`
	M            int     `json:"m"`
	N            int     `json:"n"`
	K            int     `json:"k"`
	Cycles       int64   `json:"cycles"`
	WeightCycles int64   `json:"weight_cycles"`
	Tiles        int     `json:"tiles"`
	MACs         int64   `json:"macs"`
	Utilisation  float64 `json:"utilisation"`
	ClockMHz     float64 `json:"clock_mhz"`
	// TFLOPS is 2·MACs / (Cycles / clock) / 1e12.
	TFLOPS float64 `json:"tflops"`
	// Correct reports C equal to gonum's product.
	Correct bool `json:"correct"`
	// SimulationSeconds is how long the simulation took on this CPU (measured).
	SimulationSeconds float64 `json:"simulation_seconds"`
}

// RunSystolic multiplies random matrices on the simulated array, passing every cycle's state to
// frame for arrays up to MaxAnimatedArray (the first MaxAnimatedFrames cycles; nil frame skips them),
// then the result to emit.
func RunSystolic(ctx context.Context, s SystolicSpec, frame func(systolic.Frame), emit func(SystolicResult)) error {
	rng := rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	a, b := make([]float32, s.M*s.K), make([]float32, s.K*s.N)
	kernels.Random(rng, a)
	kernels.Random(rng, b)
	var fn func(systolic.Frame)
	if frame != nil && s.Array <= MaxAnimatedArray {
		sent := 0
		fn = func(f systolic.Frame) {
			if sent < MaxAnimatedFrames {
				frame(f)
				sent++
			}
		}
	}
	start := time.Now()
	c, st, err := systolic.Multiply(ctx, s.Array, a, b, s.M, s.N, s.K, fn)
	if err != nil {
		return err
	}
	took := time.Since(start).Seconds()
	a64, b64 := make([]float64, len(a)), make([]float64, len(b))
	for i, v := range a {
		a64[i] = float64(v)
	}
	for i, v := range b {
		b64[i] = float64(v)
	}
	ref := make([]float64, s.M*s.N)
	if err := kernels.Gonum(ctx, ref, a64, b64, s.M, s.N, s.K, kernels.Options{}); err != nil {
		return err
	}
	emit(SystolicResult{
		Array: s.Array, M: s.M, N: s.N, K: s.K, Cycles: st.Cycles, WeightCycles: st.WeightCycles, Tiles: st.Tiles,
		MACs: st.MACs, Utilisation: st.Utilisation(s.Array), ClockMHz: s.ClockMHz, TFLOPS: st.FLOPS(s.ClockMHz*1e6) / 1e12,
		Correct: kernels.RelFrobenius(c, ref) <= kernels.Tolerance("float32"), SimulationSeconds: took,
	})
	return nil
}
