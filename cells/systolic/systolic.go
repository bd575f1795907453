// Package systolic is the `systolic` cell kind: a product on a simulated weight-stationary systolic
// array (package sim/systolicarray), animated for small arrays, with its cycle counts and a chart of
// utilisation against size for real TPU arrays; simulated, never measured.
package systolic

import (
	"context"
	_ "embed"
	"fmt"
	"math"
	"time"

	"github.com/gpuplayground/playground/cells"
	"github.com/gpuplayground/playground/chart"
	"github.com/gpuplayground/playground/estimate"
	"github.com/gpuplayground/playground/sim/systolicarray"
)

// Spec is a parsed `systolic` cell, which multiplies on a simulated weight-stationary
// systolic array:
//
//	array: 8          # an array of N×N multiply-accumulate cells (animated up to 16×16)
//	m: 8              # C (m×n) = A (m×k) · B (k×n)
//	n: 16
//	k: 16
//	clock_mhz: 700    # for the throughput figure (TPU v1 ran at 700 MHz)
type Spec struct {
	Array, M, N, K int
	ClockMHz       float64
}

// Limits of a systolic cell: sizes, the largest animated array, and the simulation's work
// (PE-cycles; the run's estimate, from measured rates, is also held to the run time limit).
const (
	MaxArray          = 256
	MaxDim            = 1024
	MaxAnimatedArray  = systolicarray.MaxAnimated
	MaxAnimatedFrames = 300
	maxPEWork         = 4e8
)

type source struct {
	cells.Common `yaml:",inline"`
	Array        cells.At[int]     `yaml:"array"`
	M            cells.At[int]     `yaml:"m"`
	N            cells.At[int]     `yaml:"n"`
	K            cells.At[int]     `yaml:"k"`
	ClockMHz     cells.At[float64] `yaml:"clock_mhz"`
}

// Parse reads a `systolic` cell. Errors are *cells.SpecError values with line numbers.
func Parse(src string) (Spec, error) {
	var y source
	if err := cells.Decode(src, &y); err != nil {
		return Spec{}, err
	}
	s := Spec{ClockMHz: 700}
	for _, d := range []struct {
		name  string
		at    cells.At[int]
		dst   *int
		limit int
	}{{"array", y.Array, &s.Array, MaxArray}, {"m", y.M, &s.M, MaxDim}, {"n", y.N, &s.N, MaxDim}, {"k", y.K, &s.K, MaxDim}} {
		if d.at.Line == 0 {
			continue
		}
		if *d.dst = d.at.V; *d.dst < 1 || *d.dst > d.limit {
			return Spec{}, cells.Errorf(d.at.Line, "%s is %d; use 1 to %d", d.name, *d.dst, d.limit)
		}
	}
	if y.ClockMHz.Line > 0 {
		if s.ClockMHz = y.ClockMHz.V; !(s.ClockMHz > 0 && s.ClockMHz <= 1e5) {
			return Spec{}, cells.Errorf(y.ClockMHz.Line, "clock_mhz must be positive")
		}
	}
	if s.Array == 0 || s.M == 0 || s.N == 0 || s.K == 0 {
		return Spec{}, &cells.SpecError{Line: 1, Msg: "a systolic cell needs array, m, n and k"}
	}
	if s.work() > maxPEWork {
		return Spec{}, &cells.SpecError{Msg: "this product is too big to simulate cycle by cycle here: use a smaller array or smaller m, n, k (the chart of real arrays uses the closed form)"}
	}
	return s, nil
}

// work is the simulation's PE-cycles.
func (s Spec) work() float64 {
	st := systolicarray.Cycles(s.Array, s.M, s.N, s.K)
	return float64(st.Cycles) * float64(s.Array) * float64(s.Array)
}

// Simulate multiplies random matrices on the simulated array (systolicarray.Simulate), passing every
// cycle's state to frame for arrays up to MaxAnimatedArray (the first MaxAnimatedFrames cycles; nil
// frame skips them), then the result to emit.
func Simulate(ctx context.Context, s Spec, frame func(systolicarray.Frame), emit func(systolicarray.Result)) error {
	_, _, err := simulate(ctx, s, frame, emit)
	return err
}

// simulate is Simulate, reporting how many frames it passed to frame and how many cycles it could
// have animated (0 for an array too large to animate).
func simulate(ctx context.Context, s Spec, frame func(systolicarray.Frame), emit func(systolicarray.Result)) (sent, offered int, err error) {
	var fn func(systolicarray.Frame)
	if frame != nil && s.Array <= MaxAnimatedArray {
		fn = func(f systolicarray.Frame) {
			offered++
			if sent < MaxAnimatedFrames {
				frame(f)
				sent++
			}
		}
	}
	res, err := systolicarray.Simulate(ctx, systolicarray.Product(s), fn)
	if err != nil {
		return sent, offered, err
	}
	emit(res)
	return sent, offered, nil
}

// animationNotes say why the animation is not shown, or not whole: an array over MaxAnimatedArray
// is not animated at all, and only the first MaxAnimatedFrames cycles of a long product are.
func animationNotes(s Spec, sent, offered int) []string {
	if s.Array > MaxAnimatedArray {
		return []string{fmt.Sprintf("No animation: a %d×%d array is too large to animate (this kind animates arrays up to %d×%d; set array: %d or less to watch one). The table and chart below cover the whole product.",
			s.Array, s.Array, MaxAnimatedArray, MaxAnimatedArray, MaxAnimatedArray)}
	}
	if offered > sent {
		return []string{fmt.Sprintf("The animation shows the first %d of the product's %d animated cycles; the table and chart below cover all of them. Use smaller m, n or k to watch the whole product.",
			sent, offered)}
	}
	return nil
}

//go:embed render.js
var script string

// New returns the systolic kind for env, whose Rates price its runs (nil: estimate.Defaults).
func New(env cells.Env) cells.Kind {
	return cells.Define(cells.Def[Spec]{Name: "systolic", Script: script, Parse: Parse,
		Run: func(s Spec, _ cells.Cell) cells.Run { return run{s, env.Rates} }})
}

type run struct {
	Spec
	rates *estimate.Current
}

// Estimate prices the simulation's cycles at the systolic simulator's rate measured on this machine
// (estimate.Rates.SystolicSeconds, from package calibrate; the defaults before): per cycle a fixed cost
// plus one per PE, higher for animated arrays (N ≤ MaxAnimatedArray), whose state is copied every cycle.
func (r run) Estimate() time.Duration {
	rates := r.rates.Get()
	st := systolicarray.Cycles(r.Array, r.M, r.N, r.K)
	s := rates.SystolicSeconds(r.Array, st.Cycles, r.Array <= MaxAnimatedArray) + rates.FillSeconds(r.M*r.K+r.K*r.N) + rates.PointSeconds
	return time.Duration(s * float64(time.Second))
}

// Run simulates the product, sending the animation's frames (weights only on a tile's first cycle,
// values to 3 decimals: they are for the eye), then the result table and the utilisation chart.
func (r run) Run(ctx context.Context, e cells.Emitter) error {
	if r.Array > MaxAnimatedArray { // said first: the learner watches for an animation
		for _, n := range animationNotes(r.Spec, 0, 0) {
			e.Note("info", n)
		}
	}
	sent, offered, err := simulate(ctx, r.Spec, func(f systolicarray.Frame) {
		if f.Cycle != 0 {
			f.W = nil
		}
		for _, g := range [][][]float32{f.A, f.P, f.W} {
			for _, row := range g {
				for i, v := range row {
					row[i] = float32(math.Round(float64(v)*1000) / 1000)
				}
			}
		}
		e.Frames(f)
	}, func(res systolicarray.Result) {
		e.Table(cells.Table{ID: "product", Caption: "Simulated systolic array (cycle counts from the simulator, not a measured TPU)", Columns: []cells.Column{
			{Label: "array"}, {Label: "m×n×k"}, {Label: "tiles"}, {Label: "cycles"}, {Label: "weight-load cycles"}, {Label: "MAC utilisation", Unit: "%"},
			{Label: fmt.Sprintf("throughput at %g MHz", res.ClockMHz), Unit: "TFLOP/s"}, {Label: "check"}, {Label: "simulation", Unit: "s"}}})
		check := "ok"
		if !res.Correct {
			check = "WRONG"
		}
		e.Row(cells.Row{Table: "product", Bad: !res.Correct, Values: []any{fmt.Sprintf("%d×%d", res.Array, res.Array), fmt.Sprintf("%d×%d×%d", res.M, res.N, res.K),
			res.Tiles, res.Cycles, res.WeightCycles, res.Utilisation * 100, res.TFLOPS, check, res.SimulationSeconds}})
		arrays := []chart.Array{{Label: "TPU v1: 256×256", N: 256}, {Label: "TPU v4 MXU: 128×128", N: 128}}
		if res.Array != 256 && res.Array != 128 {
			arrays = append(arrays, chart.Array{Label: fmt.Sprintf("this cell: %d×%d", res.Array, res.Array), N: res.Array})
		}
		e.Chart(func() (string, error) {
			return chart.Utilisation(arrays, func(N, n int) (int64, int64) {
				st := systolicarray.Cycles(N, n, n, n)
				return st.MACs, st.Cycles
			})
		})
	})
	if err == nil && r.Array <= MaxAnimatedArray {
		for _, n := range animationNotes(r.Spec, sent, offered) {
			e.Note("info", n)
		}
	}
	return err
}

// Exclusive is false: the systolic simulator times nothing (cells.Exclusive).
func (r run) Exclusive() bool { return false }
