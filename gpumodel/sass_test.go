package gpumodel

import (
	"testing"

	"github.com/gpuplayground/playground/vgpu"
)

// sassCounts is a launch of 100 warps, one block each, that ran three independent ALU lines
// 1,000 times a warp: issue-bound.
func sassCounts() vgpu.Counts {
	c := vgpu.Counts{Warps: 100, Blocks: 100, GridBlocks: 100, WarpInstructions: 300000}
	for i, text := range []string{"add.s64 %rd1, %rd2, %rd3;", "add.s32 %r1, %r2, %r3;", "setp.lt.s32 %p1, %r4, %r5;"} {
		c.Lines = append(c.Lines, vgpu.LineCount{Line: 10 + i, Text: text, Warp: 100000})
	}
	return c
}

// The SASS count weighs each line's warp executions by its SASS per execution (an add.s64 two, a
// setp folded away: 0.5), the issue term counts it, and a nil SASSPerLine leaves the PTX count.
func TestSASSWarpInstructions(t *testing.T) {
	c := sassCounts()
	sass := func(line int) float64 { return map[int]float64{10: 2, 11: 1, 12: 0.5}[line] }
	if got, want := SASSWarpInstructions(c, sass), int64(350000); got != want {
		t.Errorf("SASS warp instructions %d, want %d", got, want)
	}
	if got := SASSWarpInstructions(c, nil); got != c.WarpInstructions {
		t.Errorf("without SASS: %d, want the PTX's %d", got, c.WarpInstructions)
	}
	g := GPUs[0]
	o := Occupancy{Result: OccupancyResult{WarpsPerSM: 64}}
	ptx, withSASS := ModelAt(c, g, o), ModelAtSASS(c, g, o, sass)
	issue := func(m Time) float64 {
		for _, term := range m.Terms {
			if term.Name == "issue" {
				return term.Seconds
			}
		}
		return 0
	}
	if r := issue(withSASS) / issue(ptx); r < 1.1666 || r > 1.1667 {
		t.Errorf("issue term ×%.4f with SASS, want 350/300", r)
	}
	if got, want := ModelAtSASS(c, g, o, nil), ptx; got.Seconds != want.Seconds || got.Bound != want.Bound {
		t.Errorf("ModelAtSASS without SASS %+v, ModelAt %+v", got, want)
	}
}

// The latency term's runs issue the SASS slots of their lines: a run of 3 PTX instructions that
// ptxas made 3.5 SASS takes 3.5 issue cycles a warp in step, not 3.
func TestLatencyIssuesSASSSlots(t *testing.T) {
	c := sassCounts()
	sass := func(line int) float64 { return map[int]float64{10: 2, 11: 1, 12: 0.5}[line] }
	g := GPUs[0]
	ptx := warpCycles(c, g.Latency, 1000, pipes{})
	withSASS := warpCycles(c, g.Latency, 1000, pipes{SASS: sass})
	if ptx != 100000*1000*3 || withSASS != 100000*1000*3.5 {
		t.Errorf("warp-cycles %v with PTX, %v with SASS; want %v and %v", ptx, withSASS, 100000*1000*3.0, 100000*1000*3.5)
	}
}
