package vgpu

import (
	"context"
	"testing"
)

// Counts as Nsight Compute reports them (docs/vgpu-metrics.md): shared wavefronts against their
// ideal, atomic passes, branch efficiency and predicated-off lanes.

// sharedAccessPTX is one warp accessing shared memory at sm + tid·stride bytes with the
// instruction access (operands %f1–%f4 and the address %r6).
func sharedAccessPTX(access string) string {
	return header + `
.visible .entry sh(.param .u32 stride)
{
	.reg .b32 %r<8>;
	.reg .f32 %f<5>;
	.shared .align 16 .b8 sm[16384];
	ld.param.u32 %r1, [stride];
	mov.u32 %r2, %tid.x;
	mul.lo.s32 %r3, %r2, %r1;
	mov.u32 %r5, sm;
	add.s32 %r6, %r5, %r3;
	` + access + `
	ret;
}
`
}

// The expectations are what Nsight Compute 2025.3 counted for the same accesses on an H100
// (bench/gpucheck/shared.cu, docs/vgpu-metrics.md).
func TestSharedWavefrontsAndIdeal(t *testing.T) {
	const (
		f32  = "ld.shared.f32 %f1, [%r6];"
		v2   = "ld.shared.v2.f32 {%f1, %f2}, [%r6];"
		v4   = "ld.shared.v4.f32 {%f1, %f2, %f3, %f4}, [%r6];"
		stv4 = "st.shared.v4.f32 [%r6], {%f1, %f2, %f3, %f4};"
	)
	for _, tc := range []struct {
		name                       string
		access                     string
		stride                     uint32 // bytes between lanes
		wave, ideal, conflicts     int64
		lineWave, lineIdeal, lines int64 // the access's own line
	}{
		{"f32 conflict-free", f32, 4, 1, 1, 0, 1, 1, 1},
		{"f32 stride 2 words (2-way)", f32, 8, 2, 1, 1, 2, 1, 1},
		{"f32 stride 32 words (32-way)", f32, 128, 32, 1, 31, 32, 1, 1},
		{"f32 broadcast", f32, 0, 1, 1, 0, 1, 1, 1},
		{"v2 contiguous (2 half-warp phases)", v2, 8, 2, 2, 0, 2, 2, 1},
		{"v4 contiguous (4 quarter-warp phases)", v4, 16, 4, 4, 0, 4, 4, 1},
		{"v4 stride 32 bytes (2-way per phase)", v4, 32, 8, 4, 4, 8, 4, 1},
		{"st v4 contiguous", stv4, 16, 4, 4, 0, 4, 4, 1},
		{"st v4 stride 32 bytes", stv4, 32, 8, 4, 4, 8, 4, 1},
		// broadcasts: up to 8 bytes the whole warp is one pass, 16 bytes one per half-warp
		{"v2 broadcast", v2, 0, 1, 1, 0, 1, 1, 1},
		{"v4 broadcast", v4, 0, 2, 2, 0, 2, 2, 1},
		{"v2 stride 16 bytes (2-way)", v2, 16, 4, 2, 2, 4, 2, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := sharedAccessPTX(tc.access)
			c, err := Launch(context.Background(), mustParse(t, src), "sh", LaunchConfig{Block: [3]int{32}, Params: []Arg{U32(tc.stride)}})
			if err != nil {
				t.Fatal(err)
			}
			got := [3]int64{c.SharedWavefronts, c.SharedIdealWavefronts, c.BankConflicts()}
			if want := [3]int64{tc.wave, tc.ideal, tc.conflicts}; got != want {
				t.Errorf("wavefronts, ideal, conflicts = %v, want %v", got, want)
			}
			l := lineCount(t, c, lineOf(t, src, tc.access))
			if got, want := [3]int64{l.Wavefronts, l.IdealWavefronts, l.SharedRequests}, [3]int64{tc.lineWave, tc.lineIdeal, tc.lines}; got != want {
				t.Errorf("line: wavefronts, ideal, requests = %v, want %v", got, want)
			}
		})
	}
}

func lineCount(t *testing.T, c Counts, line int) LineCount {
	t.Helper()
	for _, l := range c.Lines {
		if l.Line == line {
			return l
		}
	}
	t.Fatalf("no counts for PTX line %d", line)
	return LineCount{}
}

// wmmaTilePTX loads a 16×16 tile from shared memory with rows stride elements apart.
const wmmaTilePTX = header + `.visible .entry k(.param .u32 stride)
{
	.reg .b32 %r<40>;
	.reg .f32 %f<10>;
	.shared .align 16 .b8 tile[8192];
	ld.param.u32 %r30, [stride];
	mov.u32 %r20, tile;
	wmma.load.a.sync.aligned.row.m16n16k16.shared.bf16 {%r0, %r1, %r2, %r3}, [%r20], %r30;
	wmma.load.c.sync.aligned.row.m16n16k16.shared.f32 {%f0, %f1, %f2, %f3, %f4, %f5, %f6, %f7}, [%r20], %r30;
	ret;
}
`

func TestWmmaSharedTileWavefronts(t *testing.T) {
	m := mustParse(t, wmmaTilePTX)
	for _, tc := range []struct {
		stride                 uint32
		wave, ideal, conflicts int64
	}{
		// the bf16 a tile as the H100 reads it (4 warp-wide 32-bit accesses; Nsight Compute
		// counted 8, 4 and 32 wavefronts for these strides, 4 ideal), then the f32 c tile (one
		// pass: the most words in one bank, ideal its 1 KiB / 128)
		{16, 8 + 8, 4 + 8, 4 + 0},    // rows 32 bytes apart: rows 4 apart share banks
		{24, 4 + 8, 4 + 8, 0 + 0},    // padded to 48 bytes: conflict-free
		{64, 32 + 16, 4 + 8, 28 + 8}, // every row in the same 8 banks
	} {
		c, err := Launch(context.Background(), m, "k", LaunchConfig{Block: [3]int{32}, Params: []Arg{U32(tc.stride)}})
		if err != nil {
			t.Fatal(err)
		}
		got := [4]int64{c.SharedLoadRequests, c.SharedWavefronts, c.SharedIdealWavefronts, c.BankConflicts()}
		if want := [4]int64{2, tc.wave, tc.ideal, tc.conflicts}; got != want {
			t.Errorf("stride %d: requests, wavefronts, ideal, conflicts = %v, want %v", tc.stride, got, want)
		}
	}
}

// atomicPTX adds 1 to the word at tid·stride (global out, and shared memory) with atom and red.
const atomicPTX = header + `.visible .entry k(.param .u64 out, .param .u32 stride)
{
	.reg .b32 %r<10>;
	.reg .b64 %rd<6>;
	.shared .align 4 .b8 sm[4096];
	ld.param.u64 %rd1, [out];
	ld.param.u32 %r1, [stride];
	mov.u32 %r2, %tid.x;
	mul.lo.s32 %r3, %r2, %r1;
	mul.wide.u32 %rd2, %r3, 4;
	add.s64 %rd3, %rd1, %rd2;
	atom.global.add.u32 %r4, [%rd3], 1;
	red.global.add.u32 [%rd3], 1;
	mov.u32 %r5, sm;
	shl.b32 %r6, %r3, 2;
	add.s32 %r7, %r5, %r6;
	atom.shared.add.u32 %r8, [%r7], 1;
	ret;
}
`

func TestAtomicPasses(t *testing.T) {
	m := mustParse(t, atomicPTX)
	for _, tc := range []struct {
		stride                        uint32
		global, shared, serialis, hot int64
	}{
		{0, 2 * 32, 32, 3 * 31, 2 * 32}, // every lane at one address: 32 passes per request
		{1, 2, 1, 0, 2},                 // distinct addresses: one pass, 2 operations each
	} {
		out := NewBuffer("out", 4*32)
		c, err := Launch(context.Background(), m, "k", LaunchConfig{Block: [3]int{32}, Params: []Arg{Ptr(out), U32(tc.stride)}, Buffers: []*Buffer{out}})
		if err != nil {
			t.Fatal(err)
		}
		got := [5]int64{c.GlobalAtomicRequests, c.SharedAtomicRequests, c.GlobalAtomicPasses, c.SharedAtomicPasses, c.AtomicSerialisation()}
		if want := [5]int64{2, 1, tc.global, tc.shared, tc.serialis}; got != want {
			t.Errorf("stride %d: requests global/shared, passes global/shared, serialisation = %v, want %v", tc.stride, got, want)
		}
		if got, want := c.Atomics, int64(3*32); got != want {
			t.Errorf("stride %d: %d thread atomics, want %d", tc.stride, got, want)
		}
		if got, want := c.GlobalAtomicHotOps, tc.hot; got != want {
			t.Errorf("stride %d: %d global atomics on the hottest address, want %d", tc.stride, got, want)
		}
	}
}

// branchPTX loops 4 times (a uniform branch: every lane the same trip count) and then branches on
// tid < split (divergent when 0 < split < 32); lanes with tid < 16 store, a guard that is not a
// branch.
const branchPTX = header + `.visible .entry k(.param .u64 out, .param .u32 split)
{
	.reg .pred %p<4>;
	.reg .b32 %r<10>;
	.reg .b64 %rd<6>;
	ld.param.u64 %rd1, [out];
	ld.param.u32 %r1, [split];
	mov.u32 %r2, %tid.x;
	mov.u32 %r3, 0;
LOOP:
	add.s32 %r3, %r3, 1;
	setp.lt.u32 %p1, %r3, 4;
	@%p1 bra LOOP;              // LOOP BRANCH
	setp.lt.u32 %p2, %r2, %r1;
	@%p2 bra SKIP;              // SPLIT BRANCH
	add.s32 %r3, %r3, 10;
SKIP:
	setp.lt.u32 %p3, %r2, 16;
	mul.wide.u32 %rd2, %r2, 4;
	add.s64 %rd3, %rd1, %rd2;
	@%p3 st.global.u32 [%rd3], %r3;   // GUARDED STORE
	ret;
}
`

func TestBranchEfficiencyAndPredicatedOffLanes(t *testing.T) {
	m := mustParse(t, branchPTX)
	for _, tc := range []struct {
		split                 uint32
		branches, divergent   int64
		efficiency            float64
		active, predicatedOff float64 // ActiveLanes, and predicated-off thread instructions
	}{
		// uniform: the loop branch 4 times, the split branch once, all lanes the same way;
		// predicated off: all 32 lanes at the loop's last branch, 16 at the store, and at the
		// split branch all (split 0) or none (split 32)
		{0, 5, 0, 100, 32, 32 + 32 + 16},
		{32, 5, 0, 100, 32, 32 + 0 + 16},
		// tid < 16 take the split branch, the others do not: 1 of 5 diverges, and the 16 that
		// fall through run the add alone
		{16, 5, 1, 80, 0, 32 + 16 + 16},
	} {
		out := NewBuffer("out", 4*32)
		c, err := Launch(context.Background(), m, "k", LaunchConfig{Block: [3]int{32}, Params: []Arg{Ptr(out), U32(tc.split)}, Buffers: []*Buffer{out}})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := [2]int64{c.Branches, c.DivergentBranches}, [2]int64{tc.branches, tc.divergent}; got != want {
			t.Errorf("split %d: branches, divergent = %v, want %v", tc.split, got, want)
		}
		if got, want := c.BranchEfficiency(), tc.efficiency; got != want {
			t.Errorf("split %d: branch efficiency %v%%, want %v%%", tc.split, got, want)
		}
		if got, want := float64(c.PredicatedOffThreadInstructions), tc.predicatedOff; got != want {
			t.Errorf("split %d: %v predicated-off thread instructions, want %v", tc.split, got, want)
		}
		if tc.active != 0 {
			if got, want := c.ActiveLanes(), tc.active; got != want {
				t.Errorf("split %d: %v active lanes, want %v (predicated-off lanes are active)", tc.split, got, want)
			}
			if got := c.PredicatedOnLanes(); got >= 32 {
				t.Errorf("split %d: %v predicated-on lanes, want fewer than 32", tc.split, got)
			}
		} else if got := c.ActiveLanes(); got >= 32 {
			t.Errorf("split %d: %v active lanes, want fewer than 32 (a divergent branch)", tc.split, got)
		}
		l := lineCount(t, c, lineOf(t, branchPTX, "// GUARDED STORE"))
		if got, want := [2]int64{l.Thread, l.PredicatedOff}, [2]int64{16, 16}; got != want {
			t.Errorf("split %d: guarded store: thread, predicated off = %v, want %v", tc.split, got, want)
		}
	}
}

func TestNoBranchesIsFullEfficiency(t *testing.T) {
	c, err := Launch(context.Background(), mustParse(t, sharedAccessPTX("ld.shared.f32 %f1, [%r6];")), "sh",
		LaunchConfig{Block: [3]int{32}, Params: []Arg{U32(4)}})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := [2]float64{float64(c.Branches), c.BranchEfficiency()}, [2]float64{0, 100}; got != want {
		t.Errorf("branches, efficiency = %v, want %v", got, want)
	}
}

// mixedV4PTX: lanes 0–7 read float4 0, lanes 8–15 float4 8 (the same banks), lanes 16–31 float4 1.
const mixedV4PTX = header + `
.visible .entry mix()
{
	.reg .pred %p<3>;
	.reg .b32 %r<8>;
	.reg .f32 %f<5>;
	.shared .align 16 .b8 sm[1024];
	mov.u32 %r1, %tid.x;
	setp.lt.u32 %p1, %r1, 8;
	setp.lt.u32 %p2, %r1, 16;
	selp.u32 %r2, 128, 16, %p2;
	selp.u32 %r3, 0, %r2, %p1;
	mov.u32 %r4, sm;
	add.s32 %r5, %r4, %r3;
	ld.shared.v4.f32 {%f1, %f2, %f3, %f4}, [%r5];
	ret;
}
`

// A 128-bit access is served per half-warp: the first half's two float4s share banks (2
// wavefronts, 1 ideal), the second half's one float4 is 1; the H100 counted 3 and 1 conflict.
// (Quarter-warp phases would give 4, the whole warp at once 2.)
func TestSharedV4HalfWarps(t *testing.T) {
	c, err := Launch(context.Background(), mustParse(t, mixedV4PTX), "mix", LaunchConfig{Block: [3]int{32}})
	if err != nil {
		t.Fatal(err)
	}
	got := [3]int64{c.SharedWavefronts, c.SharedIdealWavefronts, c.BankConflicts()}
	if want := [3]int64{3, 2, 1}; got != want {
		t.Errorf("wavefronts, ideal, conflicts = %v, want %v", got, want)
	}
}

// The hottest address's operations add up over the grid's CTAs (whichever worker ran them); a
// launch whose atomics touch more than MaxHotAddresses addresses is not tallied (0).
func TestAtomicHotAddress(t *testing.T) {
	m := mustParse(t, atomicPTX)
	for _, tc := range []struct {
		grid, block int
		stride      uint32
		hot         int64
	}{
		{4, 32, 0, 4 * 2 * 32}, // every thread of 4 CTAs at one address, atom and red
		{1, 256, 1, 2},         // 256 addresses: still tallied
		{1, 320, 1, 0},         // 320 addresses: spread
	} {
		out := NewBuffer("out", 4*320)
		c, err := Launch(context.Background(), m, "k", LaunchConfig{Grid: [3]int{tc.grid}, Block: [3]int{tc.block}, Workers: 2,
			Params: []Arg{Ptr(out), U32(tc.stride)}, Buffers: []*Buffer{out}})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := c.GlobalAtomicHotOps, tc.hot; got != want {
			t.Errorf("grid %d × %d, stride %d: hottest address %d operations, want %d", tc.grid, tc.block, tc.stride, got, want)
		}
	}
}
