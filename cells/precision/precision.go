// Package precision is the `precision` cell kind: what storing gradients and weights in a narrow
// floating-point format does to them, emulated on the CPU (package numeric's Format: FP32, BF16,
// FP16, FP8 E5M2 and E4M3, round to nearest even). Two experiments, computed when the cell runs:
//
//   - gradients: count values with magnitudes spread evenly on a log scale between the two
//     bounds of `gradients` (random signs, a fixed seed) are multiplied by each loss scale, stored in
//     each format, and divided back in float64: how many flush to zero, go subnormal or overflow,
//     and the error of the rest;
//
//   - updates: a weight of 1 receives `steps` updates of `update` each (learning rate × gradient),
//     kept in each format, or in an FP32 master copy that is rounded to the format for use.
//
//     formats: [fp32, bf16, fp16, fp8-e5m2]  # default all five (fp8-e4m3 too)
//     loss_scale: [1, 1024, amax]            # powers of two, or amax: the largest power of two that
//     # keeps the largest gradient finite (per-tensor scaling)
//     gradients: [1e-12, 0.1]                # the smallest and largest magnitude (default)
//     count: 20000                           # gradients drawn (default 20,000)
//     update: 1e-4                           # each update to the weight of 1 (default 1e-4)
//     steps: 1000                            # updates (default 1,000)
//
// Nothing is measured and nothing is modelled: the numbers are exact consequences of the formats,
// for these synthetic gradients (not a real network's).
package precision

import (
	"context"
	_ "embed"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/gpuplayground/playground/cells"
	"github.com/gpuplayground/playground/chart"
	"github.com/gpuplayground/playground/numeric"
)

//go:embed render.js
var script string

// Spec is a parsed `precision` cell.
type Spec struct {
	Formats []numeric.Format
	// Scales are the loss scales, powers of two; 0 stands for amax (per-format, per-tensor scaling).
	Scales            []float64
	Smallest, Largest float64
	Count             int
	Update            float64
	Steps             int
}

type source struct {
	cells.Common `yaml:",inline"`
	Formats      cells.At[[]cells.At[string]]  `yaml:"formats"`
	LossScale    cells.At[[]cells.At[string]]  `yaml:"loss_scale"`
	Gradients    cells.At[[]cells.At[float64]] `yaml:"gradients"`
	Count        cells.At[int]                 `yaml:"count"`
	Update       cells.At[float64]             `yaml:"update"`
	Steps        cells.At[int]                 `yaml:"steps"`
}

// Caps on a cell: its work is formats × scales × count roundings and formats × 2 × steps.
const (
	MaxScales = 6
	MaxCount  = 200_000
	MaxSteps  = 1_000_000
)

// Parse reads a `precision` cell. Errors are *cells.SpecError values with line numbers.
func Parse(src string) (Spec, error) {
	var y source
	if err := cells.Decode(src, &y); err != nil {
		return Spec{}, err
	}
	s := Spec{Formats: numeric.Formats, Scales: []float64{1, 1024, 0}, Smallest: 1e-12, Largest: 0.1, Count: 20000, Update: 1e-4, Steps: 1000}
	var err error
	if y.Formats.Line > 0 {
		if s.Formats, err = formats(y.Formats); err != nil {
			return Spec{}, err
		}
	}
	if y.LossScale.Line > 0 {
		if s.Scales, err = scales(y.LossScale); err != nil {
			return Spec{}, err
		}
	}
	if y.Gradients.Line > 0 {
		g := y.Gradients.V
		if len(g) != 2 || !(g[0].V >= 1e-300 && g[0].V < g[1].V && g[1].V <= 1e300) {
			return Spec{}, cells.Errorf(y.Gradients.Line, "gradients is [smallest, largest]: two magnitudes, 1e-300 ≤ smallest < largest ≤ 1e300")
		}
		s.Smallest, s.Largest = g[0].V, g[1].V
	}
	if y.Count.Line > 0 {
		if s.Count = y.Count.V; s.Count < 1 || s.Count > MaxCount {
			return Spec{}, cells.Errorf(y.Count.Line, "count is %d; use 1 to %d", s.Count, MaxCount)
		}
	}
	if y.Update.Line > 0 {
		if s.Update = y.Update.V; !(s.Update > 0 && s.Update <= 1) {
			return Spec{}, cells.Errorf(y.Update.Line, "update is added to a weight of 1: more than 0, at most 1")
		}
	}
	if y.Steps.Line > 0 {
		if s.Steps = y.Steps.V; s.Steps < 1 || s.Steps > MaxSteps {
			return Spec{}, cells.Errorf(y.Steps.Line, "steps is %d; use 1 to %d", s.Steps, MaxSteps)
		}
	}
	return s, nil
}

func formats(list cells.At[[]cells.At[string]]) ([]numeric.Format, error) {
	if len(list.V) == 0 || len(list.V) > len(numeric.Formats) {
		return nil, cells.Errorf(list.Line, "formats lists 1 to %d formats", len(numeric.Formats))
	}
	var out []numeric.Format
	for _, n := range list.V {
		f, err := numeric.LookupFormat(n.V)
		if err != nil {
			return nil, cells.Errorf(n.Line, "%v", err)
		}
		if slices.Contains(out, f) {
			return nil, cells.Errorf(n.Line, "%s is listed twice", f.Name)
		}
		out = append(out, f)
	}
	return out, nil
}

func scales(list cells.At[[]cells.At[string]]) ([]float64, error) {
	if len(list.V) == 0 || len(list.V) > MaxScales {
		return nil, cells.Errorf(list.Line, "loss_scale lists 1 to %d scales", MaxScales)
	}
	var out []float64
	for _, v := range list.V {
		x := 0.0
		if v.V != "amax" {
			var err error
			x, err = strconv.ParseFloat(v.V, 64)
			if fr, e := math.Frexp(x); err != nil || fr != 0.5 || e < -126 || e > 129 {
				return nil, cells.Errorf(v.Line, "loss scale %q: a power of two from 2^-127 to 2^128 (such as 1, 1024 or 65536), or amax", v.V)
			}
		}
		if slices.Contains(out, x) {
			return nil, cells.Errorf(v.Line, "loss scale %s is listed twice", v.V)
		}
		out = append(out, x)
	}
	return out, nil
}

// New returns the precision kind (it needs nothing of env).
func New(cells.Env) cells.Kind {
	return cells.Define(cells.Def[Spec]{Name: "precision", Script: script, Parse: Parse,
		Run: func(s Spec, _ cells.Cell) cells.Run { return run{s} }})
}

type run struct{ spec Spec }

// Estimate: about 20 ns per rounding, on a slow core.
func (r run) Estimate() time.Duration {
	s := r.spec
	n := len(s.Formats) * (len(s.Scales)*s.Count + 2*s.Steps)
	return time.Millisecond + time.Duration(n)*20*time.Nanosecond
}

// Exclusive: the run times nothing, so it may share the machine.
func (run) Exclusive() bool { return false }

// Run computes both experiments and emits their tables and the chart of kept gradients by magnitude.
func (r run) Run(ctx context.Context, e cells.Emitter) error {
	s := r.spec
	grads := Gradients(s)
	amax := 0.0
	for _, g := range grads {
		amax = math.Max(amax, math.Abs(g))
	}
	e.Note("info", fmt.Sprintf("Emulated on this machine's CPU, computed now: %d gradients with magnitudes spread evenly on a log scale from %.3g to %.3g (random signs, a fixed seed: synthetic values, not a real network's), each multiplied by the loss scale, rounded to the format (nearest, ties to even) and divided back exactly.", s.Count, s.Smallest, s.Largest))
	e.Table(cells.Table{ID: "gradients", Caption: "Gradients stored in each format, after loss scaling (emulated rounding, computed now)", Columns: []cells.Column{
		{Label: "format", Primary: true}, {Label: "loss scale", Primary: true}, {Label: "kept", Unit: "%", Primary: true}, {Label: "flushed to zero", Unit: "%", Primary: true},
		{Label: "subnormal", Unit: "%", Primary: true}, {Label: "overflowed", Unit: "%", Primary: true}, {Label: "median relative error of kept", Primary: true}, {Label: "smallest kept"}}})
	// One panel per loss scale, one line per format in it: formats × scales lines in one plot are
	// more than a reader tells apart.
	panels := make([]chart.Panel, len(s.Scales))
	total := len(s.Formats) * len(s.Scales)
	for i, f := range s.Formats {
		for j, sc := range s.Scales {
			if err := ctx.Err(); err != nil {
				return err
			}
			scale, name := sc, "×"+strconv.FormatFloat(sc, 'g', -1, 64)
			if sc == 0 {
				scale = AmaxScale(f, amax)
				name = "amax (×" + strconv.FormatFloat(scale, 'g', 4, 64) + ")"
			}
			st := Store(f, scale, grads)
			e.Row(cells.Row{Table: "gradients", Values: []any{f.Name, name, st.Percent(st.Kept), st.Percent(st.Zero), st.Percent(st.Subnormal), st.Percent(st.Overflow), st.MedianError, st.SmallestKept}})
			x, y := st.KeptByDecade(s)
			panels[j].Title = "loss scale " + name
			if sc == 0 {
				panels[j].Title = "loss scale amax (per format)"
			}
			panels[j].Lines = append(panels[j].Lines, chart.Line{Label: f.Name, X: x, Y: y})
			e.Progress(i*len(s.Scales)+j+1, total+1)
		}
	}
	e.Chart(func() (string, error) {
		return chart.Fractions("Gradients kept (not flushed to zero, not overflowed) by each format, a panel per loss scale (emulated)", "gradient magnitude (log scale)", "% kept", panels)
	})
	r.updates(e)
	e.Progress(total+1, total+1)
	return ctx.Err()
}

// updates is the second experiment: a weight of 1 updated Steps times by Update, kept in the format
// itself or in an FP32 master copy.
func (r run) updates(e cells.Emitter) {
	s := r.spec
	exact := 1 + float64(s.Steps)*s.Update
	e.Table(cells.Table{ID: "updates", Caption: fmt.Sprintf("A weight of 1 after %d updates of %g (exact: %.6g), emulated rounding, computed now", s.Steps, s.Update, exact), Columns: []cells.Column{
		{Label: "weight kept in", Primary: true}, {Label: "kept weight", Primary: true}, {Label: "used as", Primary: true}, {Label: "final weight (as used)", Primary: true},
		{Label: "error (as used)", Unit: "%", Primary: true}, {Label: "format's gap above 1 (ε)"}}})
	master := Accumulate(numeric.FP32, numeric.FP32, s.Update, s.Steps)
	for _, f := range s.Formats {
		w := Accumulate(f, f, s.Update, s.Steps)
		e.Row(cells.Row{Table: "updates", Values: []any{f.Name, w, f.Name, w, 100 * math.Abs(w-exact) / exact, f.Epsilon()}})
		if f != numeric.FP32 {
			// The master copy keeps the updates (kept weight); only its rounding to f for use can
			// lose them again, as in FP8, whose gap above 1 is larger than the whole change.
			w := Accumulate(numeric.FP32, f, s.Update, s.Steps)
			e.Row(cells.Row{Table: "updates", Values: []any{"fp32 master", master, f.Name, w, 100 * math.Abs(w-exact) / exact, f.Epsilon()}})
		}
	}
}
