package systolicarray

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/gpuplayground/playground/kernels"
	"github.com/gpuplayground/playground/numeric"
)

// Product is one product on an Array×Array array: C (M×N) = A (M×K) · B (K×N), with the clock in
// MHz that its throughput figure assumes (TPU v1 ran at 700 MHz).
type Product struct {
	Array, M, N, K int
	ClockMHz       float64
}

// MaxAnimated is the largest array a systolic cell animates: its every cycle's state is copied into
// a Frame, which makes each cycle dearer (package calibrate prices such arrays at their own rate).
const MaxAnimated = 16

// Result is a simulated product: its cycle counts, utilisation and throughput at the
// product's clock. Simulated, not measured (a systolic cell's product table shows it).
type Result struct {
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

// Simulate multiplies random matrices (numeric.Random) as p on the simulated array, passing every
// cycle's state to frame (nil: none; each Frame copies the array's state, which costs time), and
// checks C against gonum's float64 product.
func Simulate(ctx context.Context, p Product, frame func(Frame)) (Result, error) {
	s := p
	rng := rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	a, b := make([]float32, s.M*s.K), make([]float32, s.K*s.N)
	numeric.Random(rng, a)
	numeric.Random(rng, b)
	start := time.Now()
	c, st, err := Multiply(ctx, s.Array, a, b, s.M, s.N, s.K, frame)
	if err != nil {
		return Result{}, err
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
		return Result{}, err
	}
	return Result{
		Array: s.Array, M: s.M, N: s.N, K: s.K, Cycles: st.Cycles, WeightCycles: st.WeightCycles, Tiles: st.Tiles,
		MACs: st.MACs, Utilisation: st.Utilisation(s.Array), ClockMHz: s.ClockMHz, TFLOPS: st.FLOPS(s.ClockMHz*1e6) / 1e12,
		Correct: numeric.RelFrobenius(c, ref) <= numeric.Tolerance("float32"), SimulationSeconds: took,
	}, nil
}
