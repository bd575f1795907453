package precision

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/gpuplayground/playground/cells"
	"github.com/gpuplayground/playground/cells/cellstest"
	"github.com/gpuplayground/playground/numeric"
)

func mustParse(t *testing.T, src string) Spec {
	t.Helper()
	s, err := Parse(src)
	if err != nil {
		t.Fatalf("%q: %v", src, err)
	}
	return s
}

func TestParse(t *testing.T) {
	s := mustParse(t, "formats: [fp16, BF16]\nloss_scale: [1, 0.5, amax]\ngradients: [1e-9, 1]\ncount: 10\nupdate: 0.001\nsteps: 5")
	if len(s.Formats) != 2 || s.Formats[1] != numeric.BF16 || len(s.Scales) != 3 || s.Scales[1] != 0.5 || s.Scales[2] != 0 ||
		s.Smallest != 1e-9 || s.Largest != 1 || s.Count != 10 || s.Update != 0.001 || s.Steps != 5 {
		t.Errorf("got %+v", s)
	}
	for src, want := range map[string]string{
		"formats: [fp4]":                       `line 1: unknown format "fp4"`,
		"formats: [fp16,\n  fp16]":             "line 2: fp16 is listed twice",
		"formats: []":                          "line 1: formats lists 1 to 5",
		"loss_scale: [1000]":                   `line 1: loss scale "1000": a power of two`,
		"loss_scale: [lots]":                   `line 1: loss scale "lots"`,
		"loss_scale: [0]":                      `line 1: loss scale "0"`,
		"loss_scale: [1, 2, 4, 8, 16, 32, 64]": "line 1: loss_scale lists 1 to 6",
		"loss_scale: [amax, amax]":             "line 1: loss scale amax is listed twice",
		"gradients: [1]":                       "line 1: gradients is [smallest, largest]",
		"gradients: [1, 0.1]":                  "line 1: gradients is [smallest, largest]",
		"count: 0":                             "line 1: count is 0",
		"count: 300000":                        "line 1: count is 300000",
		"update: 2":                            "line 1: update is added to a weight of 1",
		"steps: 0":                             "line 1: steps is 0",
		"count: 5\nspeed: 1":                   `line 2: unknown key "speed"`,
	} {
		_, err := Parse(src)
		var se *cells.SpecError
		if !errors.As(err, &se) || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: got %v, want a *cells.SpecError with %q", src, err, want)
		}
	}
}

// The lesson's claims, as the formats make them: without loss scaling FP16 flushes every gradient
// below half its smallest subnormal (2^-25) to zero; scaling by 2^16 keeps those down to 2^-41; BF16
// keeps them all unscaled, with a larger error than FP16 on the values FP16 holds as normals.
func TestUnderflowAndLossScaling(t *testing.T) {
	s := mustParse(t, "gradients: [1e-12, 0.1]\ncount: 20000")
	g := Gradients(s)
	below := 0
	for _, x := range g {
		if math.Abs(x) < 0x1p-25 {
			below++
		}
	}
	plain := Store(numeric.FP16, 1, g)
	if plain.Zero < below || plain.Zero == 0 || plain.Overflow != 0 {
		t.Errorf("fp16 unscaled: %d flushed to zero, %d overflowed; %d values lie below 2^-25", plain.Zero, plain.Overflow, below)
	}
	scaled := Store(numeric.FP16, 65536, g)
	if scaled.Zero >= plain.Zero/10 || scaled.Overflow != 0 {
		t.Errorf("fp16 scaled by 2^16: %d flushed (unscaled %d), %d overflowed", scaled.Zero, plain.Zero, scaled.Overflow)
	}
	// 0.1 × 2^20 = 104,858 > 65,504: a loss scale too large overflows the largest gradients.
	if over := Store(numeric.FP16, 1<<20, g); over.Overflow == 0 {
		t.Error("fp16 scaled by 2^20: nothing overflowed")
	}
	bf := Store(numeric.BF16, 1, g)
	if bf.Kept != len(g) || bf.MedianError <= Store(numeric.FP16, 65536, g).MedianError {
		t.Errorf("bf16 unscaled: kept %d of %d, median error %g (fp16 scaled: %g)", bf.Kept, len(g), bf.MedianError, scaled.MedianError)
	}
	// Per-tensor (amax) scaling puts E4M3's largest value just under 448.
	sc := AmaxScale(numeric.FP8E4M3, 0.1)
	if sc != 4096 || 0.1*sc > 448 || 0.2*sc <= 448 {
		t.Errorf("amax scale of 0.1 for E4M3: %g, want 4096 (0.1 × 4096 = 409.6 ≤ 448)", sc)
	}
}

// An update under half the format's gap above 1 is lost every step when the weight is kept in the
// format; an FP32 master copy keeps it.
func TestMasterWeights(t *testing.T) {
	if w := Accumulate(numeric.FP16, numeric.FP16, 1e-4, 1000); w != 1 {
		t.Errorf("fp16 weight: %g after 1,000 updates of 1e-4, want 1 (each under 2^-11)", w)
	}
	if w := Accumulate(numeric.FP32, numeric.FP16, 1e-4, 1000); math.Abs(w-1.1) > 1e-3 {
		t.Errorf("fp32 master used as fp16: %g, want about 1.1", w)
	}
	if w := Accumulate(numeric.BF16, numeric.BF16, 1e-3, 1000); w != 1 {
		t.Errorf("bf16 weight: %g after 1,000 updates of 1e-3, want 1 (each under 2^-8)", w)
	}
}

func TestRun(t *testing.T) {
	run, err := New(cells.Env{}).Parse(cells.Cell{Source: "formats: [fp16, bf16]\nloss_scale: [1, amax]\ncount: 1000\nsteps: 100"})
	if err != nil {
		t.Fatal(err)
	}
	var rec cellstest.Recorder
	if err := run.Run(context.Background(), &rec); err != nil {
		t.Fatal(err)
	}
	rows := rec.RowsOf("gradients")
	if len(rows) != 4 || rows[0].Values[0] != "fp16" || rows[0].Values[1] != "×1" || !strings.HasPrefix(rows[1].Values[1].(string), "amax (×") {
		t.Errorf("gradient rows %v", rows)
	}
	if n := len(rec.RowsOf("updates")); n != 4 { // fp16, fp32 master as fp16, bf16, fp32 master as bf16
		t.Errorf("%d update rows, want 4", n)
	}
	// The master row shows what the master copy kept (1 + 100·update, default update 1e-4) beside its
	// rounding for use.
	if m := rec.RowsOf("updates")[1].Values; m[0] != "fp32 master" || math.Abs(m[1].(float64)-1.01) > 1e-5 || m[2] != "fp16" {
		t.Errorf("master row %v, want fp32 master keeping about 1.01, used as fp16", m)
	}
	if rec.Charts == 0 {
		t.Error("no chart")
	}
	// The chart is faceted: a panel per loss scale, and a legend entry per format, not per pair.
	if got := strings.Count(rec.SVG, `<g id="chart-series-`); got != 2 {
		t.Errorf("%d legend entries, want 2 (fp16, bf16)", got)
	}
	for _, want := range []string{"loss scale ×1<", ">loss scale amax (per format)<"} {
		if !strings.Contains(rec.SVG, want) {
			t.Errorf("the chart lacks the panel title %q", want)
		}
	}
}

// Any source parses or fails with a line-numbered *cells.SpecError, and a parsed one runs within its
// caps and gives percentages that add up.
func FuzzParsePrecision(f *testing.F) {
	for _, s := range []string{"count: 8", "formats: [fp8-e4m3]\nloss_scale: [amax, 0x1p-127]\ngradients: [1e-300, 1e300]\ncount: 3", "loss_scale: [1e308]", "steps: 1\nupdate: 1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		s, err := Parse(src)
		if err != nil {
			var se *cells.SpecError
			if !errors.As(err, &se) {
				t.Fatalf("%q: error %v is not a *cells.SpecError", src, err)
			}
			return
		}
		if s.Count > MaxCount || s.Steps > MaxSteps || len(s.Scales) > MaxScales {
			t.Fatalf("%q: past the caps: %+v", src, s)
		}
		s.Count = min(s.Count, 50)
		g := Gradients(s)
		for _, f := range s.Formats {
			for _, sc := range s.Scales {
				if sc == 0 {
					sc = AmaxScale(f, s.Largest)
				}
				st := Store(f, sc, g)
				if st.Kept+st.Zero+st.Overflow != len(g) {
					t.Fatalf("%q: %s at %g: %+v does not add up", src, f.Name, sc, st)
				}
			}
		}
	})
}
