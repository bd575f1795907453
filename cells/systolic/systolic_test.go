package systolic

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/gpuplayground/playground/cells"
	"github.com/gpuplayground/playground/cells/cellstest"
	"github.com/gpuplayground/playground/estimate"
	"github.com/gpuplayground/playground/sim/systolicarray"
)

func TestParse(t *testing.T) {
	s, err := Parse("array: 4\nm: 5\nn: 6\nk: 7\nclock_mhz: 940")
	if err != nil || s != (Spec{4, 5, 6, 7, 940}) {
		t.Fatalf("got %+v, %v", s, err)
	}
	for src, want := range map[string]string{
		"array: 0\nm: 1\nn: 1\nk: 1":                "line 1: array is 0",
		"array: 4\nm: 1\nn: 1":                      "needs array, m, n and k",
		"array: 4\nm: 1\nn: 1\nk: 1\nx: 2":          `unknown key "x"`,
		"array: 256\nm: 1024\nn: 1024\nk: 1024":     "too big to simulate",
		"array: 4\nm: 1\nn: 1\nk: 1\nclock_mhz: -1": "clock_mhz must be positive",
	} {
		_, err := Parse(src)
		var se *cells.SpecError
		if !errors.As(err, &se) || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: got %v, want %q", src, err, want)
		}
	}
}

func TestSimulate(t *testing.T) {
	s := Spec{Array: 4, M: 6, N: 5, K: 9, ClockMHz: 700}
	frames := 0
	var res systolicarray.Result
	if err := Simulate(context.Background(), s, func(systolicarray.Frame) { frames++ }, func(r systolicarray.Result) { res = r }); err != nil {
		t.Fatal(err)
	}
	cf := systolicarray.Cycles(4, 6, 5, 9)
	if !res.Correct || res.Cycles != cf.Cycles || res.Tiles != 6 || frames != 6*(6+2*4-2) {
		t.Errorf("got %+v with %d frames; want correct, %d cycles, 6 tiles, 72 frames", res, frames, cf.Cycles)
	}
	if want := 2 * float64(6*5*9) / (float64(cf.Cycles) / 700e6) / 1e12; res.TFLOPS != want {
		t.Errorf("TFLOPS %g, want %g", res.TFLOPS, want)
	}
	big := Spec{Array: 32, M: 8, N: 8, K: 8, ClockMHz: 700}
	frames = 0
	if err := Simulate(context.Background(), big, func(systolicarray.Frame) { frames++ }, func(systolicarray.Result) {}); err != nil || frames != 0 {
		t.Errorf("a 32×32 array sent %d frames (%v), want none: too big to animate", frames, err)
	}
}

func FuzzParseSystolic(f *testing.F) {
	f.Add("array: 8\nm: 8\nn: 16\nk: 16\nclock_mhz: 700")
	f.Add("array: 256\nm: 1\nn: 1024\nk: 1024")
	f.Fuzz(func(t *testing.T, src string) {
		s, err := Parse(src)
		if err != nil {
			return
		}
		if s.Array < 1 || s.Array > MaxArray || s.M < 1 || s.N < 1 || s.K < 1 || s.M > MaxDim || !(s.ClockMHz > 0) {
			t.Fatalf("accepted %+v", s)
		}
		st := systolicarray.Cycles(s.Array, s.M, s.N, s.K)
		if float64(st.Cycles)*float64(s.Array)*float64(s.Array) > maxPEWork {
			t.Fatalf("accepted a simulation of %d cycles on %d×%d", st.Cycles, s.Array, s.Array)
		}
	})
}

// The estimate is the simulator's measured rate times the cycles (animated arrays at their own,
// higher rate), so the limits refuse what this machine cannot simulate in time.
func TestEstimateUsesMeasuredRates(t *testing.T) {
	rates := &estimate.Current{}
	rates.Set(&estimate.Rates{Systolic: estimate.SystolicRates{PE: 1e-9, AnimPE: 1e-7, AnimatedN: MaxAnimatedArray}})
	est := func(src string) time.Duration {
		run, err := New(cells.Env{Rates: rates}).Parse(cells.Cell{Source: src})
		if err != nil {
			t.Fatal(err)
		}
		return run.Estimate()
	}
	big := est("array: 128\nm: 512\nn: 512\nk: 512")
	if want := float64(systolicarray.Cycles(128, 512, 512, 512).Cycles) * 128 * 128 * 1e-9; math.Abs(big.Seconds()-want) > 1e-6 {
		t.Errorf("128×128 array: %v, want %.4f s", big, want)
	}
	animated := est("array: 16\nm: 512\nn: 512\nk: 512")
	if want := float64(systolicarray.Cycles(16, 512, 512, 512).Cycles) * 16 * 16 * 1e-7; math.Abs(animated.Seconds()-want) > 1e-6 {
		t.Errorf("animated 16×16 array: %v, want %.4f s", animated, want)
	}
}

// An animation not shown says why: an array over 16×16 (TPUs and systolic arrays' `array: 64`) is not animated,
// and a long product's animation stops at MaxAnimatedFrames cycles; a small product says nothing.
func TestAnimationNotShownSaysWhy(t *testing.T) {
	for _, c := range []struct {
		src, want string
		frames    int
	}{
		{"array: 64\nm: 64\nn: 64\nk: 64", "No animation: a 64×64 array is too large to animate (this kind animates arrays up to 16×16", 0},
		{"array: 4\nm: 200\nn: 8\nk: 8", "The animation shows the first 300 of the product's", MaxAnimatedFrames},
		{"array: 4\nm: 6\nn: 4\nk: 4", "", 6 + 2*4 - 2}, // one tile
	} {
		run, err := New(cells.Env{}).Parse(cells.Cell{Source: c.src})
		if err != nil {
			t.Fatal(err)
		}
		rec := &cellstest.Recorder{}
		if err := run.Run(context.Background(), rec); err != nil {
			t.Fatalf("%q: %v", c.src, err)
		}
		var notes []string
		for _, n := range rec.Notes {
			notes = append(notes, n.Message)
		}
		all := strings.Join(notes, "\n")
		if len(rec.Animation) != c.frames || (c.want == "") != (len(notes) == 0) || !strings.Contains(all, c.want) {
			t.Errorf("%q: %d frames, notes %q; want %d frames and a note containing %q", c.src, len(rec.Animation), notes, c.frames, c.want)
		}
	}
}
