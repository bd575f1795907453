package gpumodel

import (
	"context"
	"math"
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
