package gpumodel

import (
	"math"
	"testing"

	"github.com/gpuplayground/playground/vgpu"
)

// Atomics are charged in the modelled time at the H100's measured rates (bench/gpucheck/atomics.cu):
// each launch below is one of that program's, so the model gives its measured time; without
// atomics the roofline stands. Shared-memory atomics are charged at the shared pass rate only, not
// at the global operation rate measured in the L2.
func TestModelChargesAtomics(t *testing.T) {
	g := GPUs[0]
	const ops = 1024 * 256 * 16 // threads × adds each
	base := vgpu.Counts{FLOPs: 2e6, LoadSectors: 1000}
	roof := Roofline(2e6, 32*1000, g)
	for _, tc := range []struct {
		name                string
		passes, hot, shared int64
		want                Time
	}{
		{"no atomics", 0, 0, 0, roof},
		{"one address (measured 7.39 ms)", ops, ops, 0, Time{Seconds: 7.39e-3, Bound: "atomics"}},
		{"one address per warp (measured 74.8 µs)", ops, 0, 0, Time{Seconds: 74.8e-6, Bound: "atomics"}},
		{"every thread its own (measured 13.7 µs)", ops / 32, 0, 0, Time{Seconds: 13.7e-6, Bound: "atomics"}},
		{"shared, one address per block", 0, 0, ops, Time{Seconds: ops / (g.Clock * float64(g.SMs)), Bound: "atomics"}},
	} {
		c := base
		if tc.passes+tc.shared > 0 {
			c.Atomics = ops
		}
		if tc.passes > 0 {
			c.GlobalAtomics = ops
		}
		c.GlobalAtomicPasses, c.GlobalAtomicHotOps, c.SharedAtomicPasses = tc.passes, tc.hot, tc.shared
		got := Model(c, g)
		if got.Bound != tc.want.Bound || math.Abs(got.Seconds-tc.want.Seconds) > 0.01*tc.want.Seconds {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
	for _, g := range GPUs {
		if !(g.Clock > 0.5e9 && g.Clock < 3e9) {
			t.Errorf("%s: boost clock %g Hz", g.Name, g.Clock)
		}
	}
}

// The model's time is its largest limit, named in Bound: DRAM bytes from the cache model when the
// counts have one, the L2's sectors, the L1/shared data pipe (named after the larger share), the
// warp instructions at four per clock per SM, and the per-SM terms spread over no more SMs than
// the grid has blocks.
func TestModelLimits(t *testing.T) {
	g := GPUs[0]
	sm := g.Clock * float64(g.SMs)
	for _, tc := range []struct {
		name string
		c    vgpu.Counts
		want Time
	}{
		{"DRAM from the cache model", vgpu.Counts{Cached: true, LoadSectors: 1e9, DRAMReadBytes: 3.35e6, DRAMWriteBytes: 1e6, L2DirtyBytes: 1e6},
			Time{Seconds: 5.35e6 / g.DRAM, Bound: "DRAM"}},
		{"L2", vgpu.Counts{Cached: true, L2Sectors: 1e8}, Time{Seconds: 32e8 / (g.L2PerClock * g.Clock), Bound: "L2"}},
		{"L1 lines", vgpu.Counts{GlobalLines: 1e8, SharedWavefronts: 1e7}, Time{Seconds: 1.1e8 / sm, Bound: "L1"}},
		{"shared wavefronts", vgpu.Counts{GlobalLines: 1e7, SharedWavefronts: 1e8}, Time{Seconds: 1.1e8 / sm, Bound: "shared memory"}},
		{"issue", vgpu.Counts{WarpInstructions: 1e9}, Time{Seconds: 1e9 / (4 * sm), Bound: "issue"}},
		{"issue on a grid of 4 blocks", vgpu.Counts{WarpInstructions: 1e9, GridBlocks: 4}, Time{Seconds: 1e9 / (4 * 4 * g.Clock), Bound: "issue"}},
		{"compute", vgpu.Counts{FLOPs: 1e12, WarpInstructions: 1e6}, Time{Seconds: 1e12 / g.FP32, Bound: "compute"}},
	} {
		got := Model(tc.c, g)
		if got.Bound != tc.want.Bound || math.Abs(got.Seconds-tc.want.Seconds) > 1e-9*tc.want.Seconds {
			t.Errorf("%s: %v (%s), want %v (%s)", tc.name, got.Seconds, got.Bound, tc.want.Seconds, tc.want.Bound)
		}
	}
}

// The L1 a block sees is the SM's combined L1 and shared memory less the carve-out its resident
// blocks' shared memory needs, shared among them: on an H100, 8 blocks with the 1 KB each reserves
// take the 8 KB carve-out and share the other 248 KB; 2 blocks of 48 KB take the 100 KB one.
func TestCacheFor(t *testing.T) {
	g := GPUs[0]
	for _, tc := range []struct {
		blocks, shared, want int
	}{{8, 1 << 10, (256 - 8) << 10 / 8}, {2, 49 << 10, (256 - 100) << 10 / 2}} {
		o := Occupancy{}
		o.Result.BlocksPerSM, o.Result.SharedPerBlock = tc.blocks, tc.shared
		c := CacheFor(g, o)
		if c == nil || c.L1Bytes != tc.want || c.L2Bytes != g.L2 {
			t.Errorf("%d blocks of %d bytes: %+v, want an L1 of %d bytes and the %d-byte L2", tc.blocks, tc.shared, c, tc.want, g.L2)
		}
	}
	if c := CacheFor(GPU{Name: "X"}, Occupancy{}); c != nil {
		t.Errorf("a GPU without cache sizes: %+v, want none", c)
	}
}
