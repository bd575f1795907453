package emulate

import (
	"math"
	"testing"

	"github.com/gpuplayground/playground/datasheet"
	"github.com/gpuplayground/playground/vgpu"
)

// Same-address atomics are charged in the modelled time: one L2 atomic operation per global pass
// at one per clock, one shared pass per clock per SM; without atomics the roofline stands.
func TestModelChargesAtomics(t *testing.T) {
	g := datasheet.GPUs[0]
	base := vgpu.Counts{FLOPs: 2e6, LoadSectors: 1000}
	roof := datasheet.Roofline(2e6, 32*1000, g)
	for _, tc := range []struct {
		name          string
		global, share int64
		want          datasheet.Model
	}{
		{"no atomics", 0, 0, roof},
		{"a few", 10, 0, roof},
		{"a warp per counter", 32 << 20, 0, datasheet.Model{Seconds: float64(32<<20) / g.Clock, Bound: "atomics"}},
		{"shared", 0, 32 << 20, datasheet.Model{Seconds: float64(32<<20) / (g.Clock * float64(g.SMs)), Bound: "atomics"}},
	} {
		c := base
		c.GlobalAtomicPasses, c.SharedAtomicPasses = tc.global, tc.share
		got := Model(c, g)
		if got.Bound != tc.want.Bound || math.Abs(got.Seconds-tc.want.Seconds) > 1e-9*tc.want.Seconds {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
	for _, g := range datasheet.GPUs {
		if !(g.Clock > 0.5e9 && g.Clock < 3e9) {
			t.Errorf("%s: boost clock %g Hz", g.Name, g.Clock)
		}
	}
}

// A row has a value per column; the atomics columns are empty without atomics and hold the
// requests and the extra passes with them.
func TestRowAtomicsColumns(t *testing.T) {
	cols := Table("H100 SXM").Columns
	at := -1
	for i, c := range cols {
		if c.Label == "atomic requests (global + shared)" {
			at = i
		}
	}
	if at < 0 {
		t.Fatal("no atomic requests column")
	}
	r := Result{Kernel: "k", N: 64, OK: true, Model: datasheet.Model{Seconds: 1e-6, Bound: "memory"},
		Counts: vgpu.Counts{WarpInstructions: 10, ThreadInstructions: 300}}
	row := Row(r)
	if got, want := len(row.Values), len(cols); got != want {
		t.Fatalf("%d values for %d columns", got, want)
	}
	if got := row.Values[at]; got != "" {
		t.Errorf("no atomics: %v in the atomics column, want empty", got)
	}
	r.Counts.GlobalAtomicRequests, r.Counts.GlobalAtomicPasses = 4, 4*32
	row = Row(r)
	if got, want := [2]any{row.Values[at], row.Values[at+1]}, [2]any{int64(4), int64(4 * 31)}; got != want {
		t.Errorf("atomics: %v, want %v", got, want)
	}
}
