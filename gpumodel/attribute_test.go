package gpumodel

import (
	"context"
	"math"
	"testing"

	"github.com/gpuplayground/playground/gpu/nvidia"
	"github.com/gpuplayground/playground/vgpu"
)

// A dependent chain load → fma → store: the latency term's warp-cycles are unchanged (705 a warp on
// the H100: the fma waits 700 for DRAM, the store 4 for the fma), and LatencyByLine charges the wait
// to the instruction that waits, the fma, as stall sampling would.
func TestLatencyByLineChargesTheWaitToTheWaiter(t *testing.T) {
	g := GPUs[0]
	c := vgpu.Counts{Warps: 100, Blocks: 25, GridBlocks: 25, Lines: []vgpu.LineCount{
		{Line: 10, Text: "ld.global.f32 %f1, [%rd1];", Warp: 100},
		{Line: 11, Text: "fma.rn.f32 %f2, %f1, %f1, %f1;", Warp: 100},
		{Line: 12, Text: "st.global.f32 [%rd2], %f2;", Warp: 100},
	}}
	if got, want := warpCycles(c, g.Latency, 1, pipes{}), 100*(1+g.Latency.DRAM+g.Latency.ALU); got != want {
		t.Errorf("warpCycles %v, want %v", got, want)
	}
	perLine := map[int]float64{}
	total := warpCyclesByLine(c, g.Latency, 1, pipes{}, perLine)
	if total != warpCycles(c, g.Latency, 1, pipes{}) || math.Abs(perLine[10]+perLine[11]+perLine[12]-total) > 1e-9*total {
		t.Errorf("total %v, lines %v", total, perLine)
	}
	o := Occupancy{Result: OccupancyResult{WarpsPerSM: 64}}
	s := Attribute(c, g, o, "latency")
	if math.Abs(s.Lines[10]+s.Lines[11]+s.Lines[12]-1) > 1e-12 || s.Lines[11] < 0.99 {
		t.Errorf("latency shares %v, want the fma's over 99%%", s.Lines)
	}
	// a run whose issue takes longer than its chain (64 warps in step) is shared by its instructions
	s.Lines = map[int]float64{}
	if total := warpCyclesByLine(c, g.Latency, 1000, pipes{}, s.Lines); total != 100*3000 || s.Lines[10] != 100*1000 || s.Lines[12] != 100*1000 {
		t.Errorf("issue-bound run: total %v, lines %v", total, s.Lines)
	}
}

// The L1/shared pipe's term divides into each line's shared wavefronts and its estimated global
// lines (the launch's, in proportion to sectors); issue into warp instructions; DRAM without the
// cache model into load and store sectors; atomics into the passes that limit them.
func TestAttributeByTerm(t *testing.T) {
	g := GPUs[0]
	c := vgpu.Counts{GlobalLines: 10, Lines: []vgpu.LineCount{
		{Line: 1, Text: "ld.global.f32 %f1, [%rd1];", Warp: 4, Thread: 128, Requests: 4, Sectors: 40},
		{Line: 2, Text: "ld.shared.f32 %f2, [%rd2];", Warp: 4, Thread: 128, SharedRequests: 4, Wavefronts: 90, IdealWavefronts: 4},
		{Line: 3, Text: "add.f32 %f3, %f1, %f2;", Warp: 2, Thread: 64},
		{Line: 4, Text: "atom.global.add.u32 %r1, [%rd3], 1;", Warp: 2, Thread: 64, Requests: 2, Sectors: 2, AtomicPasses: 64},
	}}
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-12 }
	// 10 lines over 42 sectors: 40 × 10/42 for line 1, 2 × 10/42 for line 4; 90 wavefronts for line 2
	if s := Attribute(c, g, Occupancy{}, "shared memory"); !near(s.Lines[2], 0.9) || !near(s.Lines[1], 0.1*40/42) || s.Approx == "" {
		t.Errorf("shared memory: %+v", s)
	}
	if s := Attribute(c, g, Occupancy{}, "issue"); !near(s.Lines[1], 1.0/3) || !near(s.Lines[3], 1.0/6) || s.Approx != "" {
		t.Errorf("issue: %+v", s)
	}
	if s := Attribute(c, g, Occupancy{}, "DRAM"); !near(s.Lines[1], 1) || len(s.Lines) != 1 {
		t.Errorf("DRAM without the cache model: %+v", s)
	}
	if s := Attribute(c, g, Occupancy{}, "compute"); !near(s.Lines[3], 1) {
		t.Errorf("compute: %+v", s)
	}
	c.Atomics, c.GlobalAtomicPasses, c.GlobalAtomicRequests = 64, 64, 2
	if s := Attribute(c, g, Occupancy{}, "atomics"); !near(s.Lines[4], 1) {
		t.Errorf("atomics: %+v", s)
	}
	if s := Attribute(c, g, Occupancy{}, "launch"); s.Lines != nil {
		t.Errorf("launch: %+v", s)
	}
}

// Dominant is the bound, or under a launch-bound time the largest term of the kernel's work.
func TestDominant(t *testing.T) {
	terms := []Term{{Name: "issue", Seconds: 1e-7}, {Name: "latency", Seconds: 2e-7}, {Name: "launch", Seconds: 2.3e-6}}
	if got := Dominant(Time{Bound: "launch", Terms: terms}); got.Name != "latency" {
		t.Errorf("launch-bound: %+v", got)
	}
	if got := Dominant(Time{Bound: "issue", Terms: terms}); got.Name != "issue" {
		t.Errorf("issue-bound: %+v", got)
	}
}

// ptxFLOPs, read from the opcodes, adds up to the virtual GPU's FLOPs of a compiled kernel.
func TestPTXFLOPsAddUp(t *testing.T) {
	nv, err := nvidia.LoadNVRTC()
	if err != nil {
		t.Skipf("no NVRTC: %v", err)
	}
	const src = `extern "C" __global__ void k(const float *A, const float *B, float *C, int M, int N, int K) {
	int r = blockIdx.y * 16 + threadIdx.y, c = blockIdx.x * 16 + threadIdx.x;
	if (r >= M || c >= N) return;
	float s = 0;
	for (int k = 0; k < K; k++) s += A[r * K + k] * B[k * N + c] - 0.5f * fabsf(A[k]);
	C[r * N + c] = fmaxf(s, 1.0f) / (double)K;
}`
	ptx, _, err := nv.Compile(src, "cell.cu", "compute_80", "-lineinfo")
	if err != nil {
		t.Fatal(err)
	}
	mod, err := vgpu.ParseModule(ptx)
	if err != nil {
		t.Fatal(err)
	}
	const n = 32
	in := make([]float32, n*n)
	for i := range in {
		in[i] = float32(i%7) - 3
	}
	A, B, C := vgpu.Float32Buffer("A", in), vgpu.Float32Buffer("B", in), vgpu.NewOutput("C", 4*n*n, vgpu.Poisoned)
	c, err := vgpu.Launch(context.Background(), mod, "k", vgpu.LaunchConfig{Grid: [3]int{2, 2, 1}, Block: [3]int{16, 16, 1},
		Params:  []vgpu.Arg{vgpu.Ptr(A), vgpu.Ptr(B), vgpu.Ptr(C), vgpu.S32(n), vgpu.S32(n), vgpu.S32(n)},
		Buffers: []*vgpu.Buffer{A, B, C}})
	if err != nil {
		t.Fatal(err)
	}
	var flops float64
	for _, l := range c.Lines {
		flops += float64(l.Thread) * ptxFLOPs(l.Text)
	}
	if flops != float64(c.FLOPs) || flops == 0 {
		t.Errorf("FLOPs from the opcodes %v, counted %d", flops, c.FLOPs)
	}
}

// A warp's 4-byte stores down a column (32 sectors, 4 bytes each) against its coalesced load (4
// full sectors): 28 of the store's sectors count as partly written (the lower bound: 32 − 128/32),
// each taking PartialStoreSlots sectors' time in the L2 term, and the per-line view gives the store
// line the same weight.
func TestPartialStoresWeighInTheL2(t *testing.T) {
	g := GPUs[0]
	c := vgpu.Counts{Warps: 1, Blocks: 1, GridBlocks: 1, Cached: true, LoadSectors: 4, StoreSectors: 32, L2Sectors: 36,
		Lines: []vgpu.LineCount{
			{Line: 10, Text: "ld.global.f32 %f1, [%rd1];", Warp: 1, Requests: 1, Sectors: 4, BytesUsed: 128},
			{Line: 11, Text: "st.global.f32 [%rd2], %f1;", Warp: 1, Requests: 1, Sectors: 32, BytesUsed: 128},
		}}
	if got := PartialStoreSectors(c); got != 28 {
		t.Fatalf("PartialStoreSectors = %d, want 28", got)
	}
	slots := PartialStoreSlots()
	if slots < 4 || slots > 6 {
		t.Errorf("PartialStoreSlots = %.2f, want about 5 (the H100's measured rate)", slots)
	}
	want := 32 * (8 + 28*slots) / (g.L2PerClock * g.Clock)
	for _, term := range Model(c, g).Terms {
		if term.Name == "L2" && math.Abs(term.Seconds-want) > 1e-9*want {
			t.Errorf("L2 term %g s, want %g", term.Seconds, want)
		}
	}
	s := Attribute(c, g, Occupancy{}, "L2")
	if got, want := s.Lines[11], (4+28*slots)/(8+28*slots); math.Abs(got-want) > 1e-12 {
		t.Errorf("store line's share of the L2 term %.4f, want %.4f", got, want)
	}
}

// Warps in step share the pipes within a run: two warps on a scheduler each issuing four
// independent mma.sync wait for the scheduler's tensor cores (2 × 4 × 4,096 FLOPs at p.MMAPerClock),
// and issue in order, so the add after them starts only once both warps have issued the last (2
// clocks), and takes 2 clocks itself; eight warps in step on the SM reading 4 wavefronts each of
// ldmatrix wait 8 × 4 clocks for the pipe, the representative warp's data half-way through it,
// after the shared latency, and the add after it takes the group's 2 clocks. Without the pipes, the
// chains are the latencies and the group's issue alone.
func TestPipesOfWarpsInStep(t *testing.T) {
	g := GPUs[0]
	mma := func(line int, acc string) vgpu.LineCount {
		return vgpu.LineCount{Line: line, Warp: 2, Text: "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {" + acc + "}, {%r1,%r2,%r3,%r4}, {%r5,%r6}, {" + acc + "};"}
	}
	c := vgpu.Counts{Lines: []vgpu.LineCount{mma(1, "%f1,%f2,%f3,%f4"), mma(2, "%f5,%f6,%f7,%f8"), mma(3, "%f9,%f10,%f11,%f12"),
		mma(4, "%f13,%f14,%f15,%f16"), {Line: 5, Warp: 2, Text: "add.s32 %r7, %r8, 1;"}}}
	p := pipes{MMAPerClock: 672}
	hold := 2 * 4096 / 672.0
	// the fourth mma starts after three holds, the add two clocks after it: its chain is 3·hold + 4
	if got, want := warpCycles(c, g.Latency, 2, p), 2*(3*hold+4); math.Abs(got-want) > 1e-9 {
		t.Errorf("tensor pipe: %v warp-cycles, want %v", got, want)
	}
	if got, want := warpCycles(c, g.Latency, 2, pipes{}), 2*max(2*5, 5.0); got != want {
		t.Errorf("no pipes: %v warp-cycles, want %v", got, want)
	}
	ld := vgpu.Counts{Lines: []vgpu.LineCount{
		{Line: 1, Warp: 8, Wavefronts: 32, Text: "ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%r1,%r2,%r3,%r4}, [%r9];"},
		{Line: 2, Warp: 8, Text: "add.s32 %r5, %r1, %r4;"}}}
	// the add waits for the ldmatrix's data: issued at 0, its 8 warps × 4 wavefronts take the pipe
	// 32 clocks, the representative warp's come at 16 plus the latency; the add's chain ends the
	// group's 2 clocks later
	if got, want := warpCycles(ld, g.Latency, 2, pipes{SMWarps: 8}), 8*(16+g.Latency.Shared+2); math.Abs(got-want) > 1e-9 {
		t.Errorf("shared pipe: %v warp-cycles, want %v", got, want)
	}
	if got, want := warpCycles(ld, g.Latency, 2, pipes{}), 8*(g.Latency.Shared+2); got != want {
		t.Errorf("no pipes: %v warp-cycles, want %v", got, want)
	}
}

// cp.async's copies do not pass the L1's data pipe: a cp.async.cg line gets none of the L1/shared
// term (neither its shared writes nor its sectors' share of the global lines), a .ca line only its
// global lines' share, and the ldmatrix and the store the rest.
func TestAttributeLeavesCopiesOutOfTheL1Term(t *testing.T) {
	g := GPUs[0]
	c := vgpu.Counts{GlobalLines: 8, Lines: []vgpu.LineCount{
		{Line: 1, Text: "@%p1 cp.async.cg.shared.global [%r1], [%rd1], 16, %r2;", Warp: 1, Requests: 1, Sectors: 16, SharedRequests: 1, Wavefronts: 4},
		{Line: 2, Text: "cp.async.ca.shared.global [%r3], [%rd2], 4;", Warp: 1, Requests: 1, Sectors: 4, SharedRequests: 1, Wavefronts: 1},
		{Line: 3, Text: "cp.async.commit_group;", Warp: 1},
		{Line: 4, Text: "ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%r4,%r5,%r6,%r7}, [%r8];", Warp: 1, SharedRequests: 1, Wavefronts: 4},
		{Line: 5, Text: "st.global.v4.u32 [%rd3], {%r4,%r5,%r6,%r7};", Warp: 1, Requests: 1, Sectors: 4},
	}}
	s := Attribute(c, g, Occupancy{}, "shared memory")
	// the global lines (8) shared by the 8 sectors of the .ca copy and the store: 4 each; the
	// ldmatrix's 4 wavefronts: 12 in all
	want := map[int]float64{2: 4.0 / 12, 4: 4.0 / 12, 5: 4.0 / 12}
	for line, w := range want {
		if math.Abs(s.Lines[line]-w) > 1e-12 {
			t.Errorf("line %d: share %v, want %v (all %v)", line, s.Lines[line], w, s.Lines)
		}
	}
	if s.Lines[1] != 0 || s.Lines[3] != 0 {
		t.Errorf("the .cg copy and the commit got %v and %v, want none", s.Lines[1], s.Lines[3])
	}
}
