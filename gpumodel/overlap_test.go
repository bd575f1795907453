package gpumodel

import (
	"math"
	"testing"

	"github.com/gpuplayground/playground/vgpu"
)

// fmaRun is a run of warps warp executions: a shared load into %f1, then eight FMAs, each reading
// %f1 when use is true (the stream of a blocktiled step: the step's operands, then the FMAs that
// consume them) or only registers written before the run when it is false.
func fmaRun(warps int64, use bool) vgpu.Counts {
	src := "%f9"
	if use {
		src = "%f1"
	}
	c := vgpu.Counts{Lines: []vgpu.LineCount{{Line: 1, Warp: warps, Text: "ld.shared.f32 %f1, [%r1];"}}}
	for i := range 8 {
		c.Lines = append(c.Lines, vgpu.LineCount{Line: 2 + i, Warp: warps, Text: "fma.rn.f32 %f2, " + src + ", %f3, %f2;"})
	}
	return c
}

// The group's issue and a load's wait add where the stream makes the FMAs wait for the load, and
// overlap where it does not. Four warps in step on a scheduler: the FMAs that read the load's result
// start after its 21 cycles and then take 4 clocks each (the four warps in turn), 21 + 8 × 4; the
// same FMAs on other registers issue behind the load, and the run takes its issue, 9 × 4.
func TestIssueAddsToTheWaitItFollows(t *testing.T) {
	lat := GPUs[0].Latency
	if got, want := warpCycles(fmaRun(1, true), lat, 4, pipes{}), lat.Shared+8*4; got != want {
		t.Errorf("FMAs after their load: %v warp-cycles, want %v", got, want)
	}
	if got, want := warpCycles(fmaRun(1, false), lat, 4, pipes{}), 9*4.0; got != want {
		t.Errorf("FMAs beside the load: %v warp-cycles, want %v", got, want)
	}
}

// A store waiting for a global load does not hold up the next load's address (ptxas sinks the
// store): the two loads of a tile are in flight together, and the run takes one DRAM latency and
// the stores' issue, not two latencies.
func TestStoresDoNotHoldUpTheNextLoad(t *testing.T) {
	lat := GPUs[0].Latency
	c := vgpu.Counts{Lines: []vgpu.LineCount{
		{Line: 1, Warp: 1, Text: "ld.global.f32 %f1, [%rd1];"},
		{Line: 2, Warp: 1, Text: "st.shared.f32 [%r1], %f1;"},
		{Line: 3, Warp: 1, Text: "add.s64 %rd3, %rd2, 4;"},
		{Line: 4, Warp: 1, Text: "ld.global.f32 %f2, [%rd3];"},
		{Line: 5, Warp: 1, Text: "st.shared.f32 [%r2], %f2;"},
	}}
	// the second load issues when the add's result is ready (an ALU latency), its store at that
	// plus DRAM, a clock long
	if got, want := warpCycles(c, lat, 1, pipes{}), lat.ALU+lat.DRAM+1; got != want {
		t.Errorf("%v warp-cycles, want %v (one DRAM latency)", got, want)
	}
}

// A line ptxas folded into others (no SASS instruction) takes no issue and has no latency of its
// own: a dependent add after it waits for nothing. And a shared load ptxas merged into another
// line's wider load (half a SASS instruction an execution) passes the pipe half the time.
func TestFoldedLinesCostNothing(t *testing.T) {
	lat := GPUs[0].Latency
	c := vgpu.Counts{Lines: []vgpu.LineCount{
		{Line: 1, Warp: 1, Text: "add.s32 %r1, %r2, 1;"},
		{Line: 2, Warp: 1, Text: "add.s32 %r3, %r1, 1;"},
	}}
	folded := pipes{SASS: func(line int) float64 { return map[int]float64{1: 0, 2: 1}[line] }}
	if got, want := warpCycles(c, lat, 1, folded), 1.0; got != want {
		t.Errorf("folded: %v warp-cycles, want %v", got, want)
	}
	if got, want := warpCycles(c, lat, 1, pipes{}), lat.ALU+1; got != want {
		t.Errorf("not folded: %v warp-cycles, want %v", got, want)
	}
	ld := vgpu.Counts{Lines: []vgpu.LineCount{
		{Line: 1, Warp: 8, Wavefronts: 8, Text: "ld.shared.f32 %f1, [%r1];"},
		{Line: 2, Warp: 8, Text: "add.f32 %f2, %f1, %f1;"}}}
	half := pipes{SMWarps: 8, SASS: func(int) float64 { return 0.5 }}
	// 8 warps × 1 wavefront × ½: the representative warp's data after 2 clocks and the latency; the
	// add then issues for the group's 8 warps, half an instruction each
	if got, want := warpCycles(ld, lat, 8, half), 8*(2+lat.Shared+4); math.Abs(got-want) > 1e-9 {
		t.Errorf("merged load: %v warp-cycles, want %v", got, want)
	}
}

// The resident blocks of a kernel with barriers are in step: two blocks of 8 warps on an SM make
// 4 warps in step on each scheduler and 16 on the SM's pipe, one block 2 and 8, and a kernel
// without barriers 1 (its warps drift apart) and no shared pipe.
func TestResidentBlocksAreInStep(t *testing.T) {
	c := vgpu.Counts{Warps: 64, Blocks: 8, Barriers: 8}
	for _, tt := range []struct{ w, group, smWarps float64 }{{16, 4, 16}, {8, 2, 8}, {4, 2, 8}} {
		if got := inStep(c, tt.w); got != tt.group {
			t.Errorf("%g warps resident: %g in step a scheduler, want %g", tt.w, got, tt.group)
		}
		if got := pipesFor(c, GPUs[0], tt.w).SMWarps; got != tt.smWarps {
			t.Errorf("%g warps resident: %g on the pipe, want %g", tt.w, got, tt.smWarps)
		}
	}
	c.Barriers = 0
	if got := inStep(c, 16); got != 1 || pipesFor(c, GPUs[0], 16).SMWarps != 0 {
		t.Errorf("no barriers: %g in step, want 1 and no pipe", got)
	}
}
