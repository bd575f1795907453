package emulate

import (
	"math"
	"testing"

	"github.com/gpuplayground/playground/datasheet"
	"github.com/gpuplayground/playground/vgpu"
)

// Atomics are charged in the modelled time at the H100's measured rates (bench/gpucheck/atomics.cu):
// each launch below is one of that program's, so the model gives its measured time; without
// atomics the roofline stands.
func TestModelChargesAtomics(t *testing.T) {
	g := datasheet.GPUs[0]
	const ops = 1024 * 256 * 16 // threads × adds each
	base := vgpu.Counts{FLOPs: 2e6, LoadSectors: 1000}
	roof := datasheet.Roofline(2e6, 32*1000, g)
	for _, tc := range []struct {
		name                string
		passes, hot, shared int64
		want                datasheet.Model
	}{
		{"no atomics", 0, 0, 0, roof},
		{"one address (measured 7.39 ms)", ops, ops, 0, datasheet.Model{Seconds: 7.39e-3, Bound: "atomics"}},
		{"one address per warp (measured 74.8 µs)", ops, 0, 0, datasheet.Model{Seconds: 74.8e-6, Bound: "atomics"}},
		{"every thread its own (measured 13.7 µs)", ops / 32, 0, 0, datasheet.Model{Seconds: 13.7e-6, Bound: "atomics"}},
		{"shared, one address per block", 0, 0, ops, datasheet.Model{Seconds: ops / (g.Clock * float64(g.SMs)), Bound: "atomics"}},
	} {
		c := base
		if tc.passes+tc.shared > 0 {
			c.Atomics = ops
		}
		c.GlobalAtomicPasses, c.GlobalAtomicHotOps, c.SharedAtomicPasses = tc.passes, tc.hot, tc.shared
		got := Model(c, g)
		if got.Bound != tc.want.Bound || math.Abs(got.Seconds-tc.want.Seconds) > 0.01*tc.want.Seconds {
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
