package gpumodel

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// shiftOf finds the shift that moves one block's sectors onto another's, and only a shift.
func TestShiftOf(t *testing.T) {
	a := blockSectors{0: {0, 1, 2, 10}, 1: {100, 104}}
	b := blockSectors{0: {5, 6, 7, 15}, 1: {100, 104}}
	s, ok := shiftOf(a, b)
	if !ok || s[0] != 5 || s[1] != 0 {
		t.Errorf("shiftOf = %v, %v; want {0: 5, 1: 0}", s, ok)
	}
	for _, c := range []blockSectors{
		{0: {5, 6, 8, 15}, 1: {100, 104}}, // not a shift
		{0: {5, 6, 7}, 1: {100, 104}},     // fewer sectors
		{0: {5, 6, 7, 15}},                // a buffer missing
	} {
		if s, ok := shiftOf(a, c); ok {
			t.Errorf("shiftOf(%v, %v) = %v; want none", a, c, s)
		}
	}
}

// inStepReads counts each wave's distinct sectors: in a 4 × 2 grid whose blocks read a row panel
// (buffer 0, moving with y) and a column panel (buffer 1, moving with x), a wave of 4 blocks (one
// grid row) reads its row's panel once and the 4 column panels.
func TestInStepReads(t *testing.T) {
	base := blockSectors{0: {0, 1}, 1: {0, 1, 2}}
	sx := map[int]int64{0: 0, 1: 3}
	sy := map[int]int64{0: 2, 1: 0}
	got := inStepReads(context.Background(), base, [3]int{0, 0, 0}, sx, sy, [3]int{4, 2, 1}, 4, []int64{32 * 4, 32 * 12}, 0)
	want := []int64{32 * (2 + 12), 32 * (2 + 12)}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("inStepReads = %v; want %v", got, want)
	}
	// a wave of the whole grid reads both row panels and the column panels once
	got = inStepReads(context.Background(), base, [3]int{0, 0, 0}, sx, sy, [3]int{4, 2, 1}, 8, []int64{32 * 4, 32 * 12}, 0)
	if len(got) != 1 || got[0] != 32*(4+12) {
		t.Errorf("one wave: inStepReads = %v; want [%d]", got, 32*(4+12))
	}
}

// inStepReads counts as a walk over every pair of a sector and a distinct shift does
// (inStepReadsByPairs, the way it was counted first), whichever set it ORs as a bitset: on a dense
// footprint and a wave of shifts far apart (base as the bitset), a sparse footprint and shifts
// close together (the shifts as the bitset), both sparse (pair by pair), and random footprints,
// shifts (negative ones too), grids and buffers small enough that the moved footprints leave them.
func TestInStepReadsAsByPairs(t *testing.T) {
	type c struct {
		base   blockSectors
		b0     [3]int
		sx, sy map[int]int64
		grid   [3]int
		res    int
		sizes  []int64
	}
	run := func(from, n, step int64) []int64 {
		var out []int64
		for i := range n {
			out = append(out, from+i*step)
		}
		return out
	}
	cases := []c{
		{blockSectors{0: run(0, 200, 1)}, [3]int{0, 0, 0}, map[int]int64{0: 0}, map[int]int64{0: 1000}, [3]int{4, 9, 1}, 8, []int64{32 * 9000}},
		{blockSectors{0: run(3, 64, 512)}, [3]int{1, 0, 0}, map[int]int64{0: 2}, map[int]int64{0: 0}, [3]int{16, 4, 1}, 20, []int64{32 * 40000}},
		{blockSectors{0: run(5, 40, 300)}, [3]int{0, 1, 0}, map[int]int64{0: 1000}, map[int]int64{0: 70000}, [3]int{5, 3, 1}, 7, []int64{32 * 150000}},
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 300 {
		gx, gy := 1+rng.IntN(12), 1+rng.IntN(12)
		limit := int64(64 + rng.IntN(5000))
		x := c{base: blockSectors{}, b0: [3]int{rng.IntN(gx), rng.IntN(gy), 0}, sx: map[int]int64{}, sy: map[int]int64{},
			grid: [3]int{gx, gy, 1}, res: 1 + rng.IntN(gx*gy+3)}
		for k := range 1 + rng.IntN(3) {
			var s []int64
			for v := rng.Int64N(limit); v < limit && len(s) < 300; v += 1 + rng.Int64N(1+rng.Int64N(200)) {
				s = append(s, v)
			}
			x.base[k], x.sx[k], x.sy[k] = s, rng.Int64N(401)-200, rng.Int64N(4001)-2000
			x.sizes = append(x.sizes, 32*limit)
		}
		cases = append(cases, x)
	}
	for i, x := range cases {
		for _, maxWaves := range []int{0, 1} {
			got := inStepReads(context.Background(), x.base, x.b0, x.sx, x.sy, x.grid, x.res, x.sizes, maxWaves)
			want := inStepReadsByPairs(x.base, x.b0, x.sx, x.sy, x.grid, x.res, x.sizes, maxWaves)
			if !slices.Equal(got, want) {
				t.Errorf("case %d (grid %v, %d resident, max waves %d): %v; by pairs %v", i, x.grid, x.res, maxWaves, got, want)
			}
		}
	}
}

// inStepReadsByPairs is inStepReads as first written: every wave's distinct shifts in a map, and
// for each a walk over base's sectors setting a bit of a bitset of the whole buffer.
func inStepReadsByPairs(base blockSectors, b0 [3]int, sx, sy map[int]int64, grid [3]int, resident int, sizes []int64, maxWaves int) []int64 {
	total := grid[0] * grid[1]
	if maxWaves > 0 {
		total = min(total, maxWaves*resident)
	}
	var out []int64
	for start := 0; start < total; start += resident {
		var bytes int64
		for k, s := range base {
			seen := map[int64]bool{}
			shifts := map[int64]bool{}
			for i := start; i < min(start+resident, total); i++ {
				x, y := i%grid[0], i/grid[0]
				shifts[int64(x-b0[0])*sx[k]+int64(y-b0[1])*sy[k]] = true
			}
			for d := range shifts {
				for _, v := range s {
					if v += d; v >= 0 && v < sizes[k]/32 && !seen[v] {
						seen[v] = true
						bytes += 32
					}
				}
			}
		}
		out = append(out, bytes)
	}
	return out
}

// reach is this GPU's L2 window over the law's, each window capped at one loop: a GPU whose L2
// holds a tenth of its wave against the law's GPU holding half of the same wave is credited a
// fifth of the law's in-step share; where the law's GPU held the whole wave (window 1), reach is
// this GPU's window alone; where this GPU holds more of its wave than the law's did, above 1; a
// wave that reads nothing has window 1.
func TestReachIsTheWindowsRatio(t *testing.T) {
	for _, c := range []struct {
		l2, unique, lawL2, lawUnique int64
		want                         float64
	}{
		{6, 60, 50, 100, 0.2},  // both windows below one loop
		{6, 60, 50, 40, 0.1},   // the law's wave fits its L2
		{64, 80, 50, 100, 1.6}, // a larger share held than on the law's GPU
		{64, 32, 50, 100, 2},   // this wave fits: window 1 over 0.5
		{6, 0, 50, 100, 2},     // no reads: window 1
	} {
		if got := reach(c.l2, c.unique, c.lawL2, c.lawUnique); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("reach(%d, %d, %d, %d) = %g, want %g", c.l2, c.unique, c.lawL2, c.lawUnique, got, c.want)
		}
	}
}
