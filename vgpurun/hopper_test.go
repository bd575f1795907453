package vgpurun

import (
	"context"
	"testing"
	"time"

	"github.com/gpuplayground/playground/estimate"
	"github.com/gpuplayground/playground/gpu"
	"github.com/gpuplayground/playground/gpu/nvidia"
	"github.com/gpuplayground/playground/vgpu"
)

// quarters are count multiples of 1/4 in [-1, 1], exact in BF16, whose products and sums of a few
// hundred are exact in FP32 too, in any order.
func quarters(count, seed int) []float32 {
	x := make([]float32, count)
	for i := range x {
		x[i] = float32((i*7+seed*13+i/5)%9-4) / 4
	}
	return x
}

// bf16Bits are x rounded to BF16, as bits.
func bf16Bits(x []float32) []uint16 {
	out := make([]uint16, len(x))
	for i, v := range x {
		out[i] = gpu.BF16(v)
	}
	return out
}

// launchHopper runs row (a Hopper rung) on a (m×k) and b (k×n) with grid, as the table launches it
// but at a shape of its own, and returns its counts and C.
func launchHopper(t *testing.T, row nvidia.Kernel, grid [3]int, a, b []float32, m, n, k int) (vgpu.Counts, []float32) {
	t.Helper()
	mod, _, err := rowModule(row)
	if err != nil {
		t.Fatal(err)
	}
	A, B, C := vgpu.Uint16Buffer("A", bf16Bits(a)), vgpu.Uint16Buffer("B", bf16Bits(b)), vgpu.NewOutput("C", 4*m*n, vgpu.Poisoned)
	params := append([]vgpu.Arg{vgpu.Ptr(A), vgpu.Ptr(B), vgpu.Ptr(C), vgpu.S32(int32(m)), vgpu.S32(int32(n)), vgpu.S32(int32(k))},
		tableTensorMaps(row.TensorMaps, A, B, m, n, k)...)
	cnt, err := vgpu.Launch(context.Background(), mod, row.Entry, vgpu.LaunchConfig{Grid: grid, Block: row.Block,
		DynamicShared: row.SharedBytes, Params: params, Buffers: []*vgpu.Buffer{A, B, C}})
	if err != nil {
		t.Fatalf("%s grid %v: %v", row.Name, grid, err)
	}
	for _, f := range cnt.Notes {
		t.Errorf("%s grid %v: %v", row.Name, grid, f)
	}
	return cnt, C.Float32s()
}

// Each Hopper rung, emulated from the embedded compute_90a PTX, computes exactly the CPU's product
// of inputs whose products and sums are exact in FP32, with 2×2 tiles of C (1×2 for the 128×256
// tiles) and a K loop of 6 stages, longer than the ring of 4: it runs wgmma as often as its tiles
// need, and the TMA rungs move all of A and B by TMA copies, none through ld.global. The persistent
// rung runs with fewer blocks than tiles too, each block looping over its tiles. The multicast rung's
// 1×2 clusters read half of B's bytes from global memory (TMABytes) and write all of them into the
// CTAs' shared memory by multicast (TMAMulticastBytes).
func TestHopperRungsExact(t *testing.T) {
	const m, n, k = 256, 256, 384
	a, b := quarters(m*k, 1), quarters(k*n, 2)
	want := make([]float32, m*n)
	for i := range m {
		for j := range n {
			var acc float32
			for p := range k {
				acc += a[i*k+p] * b[p*n+j]
			}
			want[i*n+j] = acc
		}
	}
	rows := 0
	for _, row := range nvidia.Kernels() {
		if row.Arch != nvidia.HopperArch {
			continue
		}
		rows++
		tiles := (n / row.Tile[0]) * (m / row.Tile[1])
		grids := [][3]int{{n / row.Tile[0], m / row.Tile[1], 1}}
		if row.Persistent > 0 {
			grids = [][3]int{{1, 1, 1}, {tiles, 1, 1}}
		}
		for _, grid := range grids {
			cnt, got := launchHopper(t, row, grid, a, b, m, n, k)
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("%s grid %v: C[%d][%d] = %v, want %v", row.Name, grid, i/n, i%n, got[i], want[i])
				}
			}
			// a warpgroup's m64nNk16 is 4 warp instructions; N is 128 or 256, the tile's width
			if got, want := cnt.GmmaInstructions, int64(4*m*n*k/(64*row.Tile[0]*16)); got != want {
				t.Errorf("%s: %d wgmma warp instructions, want %d", row.Name, got, want)
			}
			stagedB := int64(tiles * (k / 64) * 2 * 64 * row.Tile[0]) // bytes of B staged
			staged := stagedB + int64(tiles*(k/64)*2*64*row.Tile[1])  // and of A
			read, multicast := staged, int64(0)                       // read from global memory; written by multicasts
			if row.Name == "cuda-wgmma-multicast" {                   // each CTA of a 1×2 cluster reads half of its B
				read, multicast = staged-stagedB/2, stagedB
			}
			if row.TensorMaps != nil && (cnt.TMABytes != read || cnt.TMAMulticastBytes != multicast || cnt.LoadSectors != 0) {
				t.Errorf("%s: %d TMA bytes, %d multicast and %d load sectors, want %d, %d and none", row.Name, cnt.TMABytes, cnt.TMAMulticastBytes, cnt.LoadSectors, read, multicast)
			}
			if row.TensorMaps == nil && (cnt.TMABytes != 0 || cnt.LoadSectors != staged/32) {
				t.Errorf("%s: %d TMA bytes and %d load sectors, want none and %d", row.Name, cnt.TMABytes, cnt.LoadSectors, staged/32)
			}
		}
	}
	if rows != 5 {
		t.Errorf("%d Hopper rungs in the table, want 5", rows)
	}
}

// A sampled launch of the persistent rung runs as many blocks as make about SampledBlocks tiles (2
// blocks of 4 tiles at n = 4096), and is priced by its tiles: about what the same rung without
// the scheduler costs for its sampled blocks and probe, at the same emulation rate per tile.
func TestPersistentSampleAndEstimate(t *testing.T) {
	ws, _ := nvidia.LookupKernel("cuda-wgmma-ws")
	p, _ := nvidia.LookupKernel("cuda-wgmma-persistent")
	if got := persistentSample(p, 4096); got != 2 || tilesPerBlock(p, 4096) != 4 || tiles(p, 4096) != 512 {
		t.Errorf("n=4096: %d blocks sampled of %d tiles each, %d tiles; want 2, 4, 512", got, tilesPerBlock(p, 4096), tiles(p, 4096))
	}
	if tilesPerBlock(ws, 4096) != 1 || tiles(ws, 4096) != 512 {
		t.Errorf("ws at 4096: %d tiles per block, %d tiles", tilesPerBlock(ws, 4096), tiles(ws, 4096))
	}
	r := &estimate.Rates{SIMT: map[string]float64{"wgmma-ws": 1e-8, "wgmma-persistent": 1e-8},
		SIMTN: map[string]int{"wgmma-ws": 256, "wgmma-persistent": 256}, SIMTExp: map[string]float64{}}
	fixed := Estimate(&estimate.Rates{}, "cuda-wgmma-ws", 4096) // drawing the inputs and the check
	got, want := Estimate(r, "cuda-wgmma-persistent", 4096)-fixed, (Estimate(r, "cuda-wgmma-ws", 4096)-fixed)*8/9
	if d := got - want; d < -time.Millisecond || d > time.Millisecond {
		t.Errorf("persistent at 4096 estimated %v, want %v (8 of ws's 9 blocks' tiles)", got, want)
	}
}
