package simt

import (
	"testing"

	"github.com/gpuplayground/playground/kernels/cuda"
)

// The emulated ladder launches with the GPU kernel table's shapes (kernels/cuda/ladder.go), the ones
// the GPU worker launches the CUDA kernels with, and emulates the entry points the table names.
func TestLadderShapesAreTheTables(t *testing.T) {
	for _, m := range Ladder() {
		row, ok := cuda.LookupKernel("cuda-" + m.Name)
		if !ok || m.CUDA.Name != row.Name || m.CUDA.Entry != "cuda_"+m.Name {
			t.Errorf("%s emulates row %q (entry %q); table has it: %v", m.Name, m.CUDA.Name, m.CUDA.Entry, ok)
			continue
		}
		for _, n := range []int{1, 33, 128, 500} {
			A, B, C := NewGlobal("A", make([]float32, n*n)), NewGlobal("B", make([]float32, n*n)), NewGlobal("C", make([]float32, n*n))
			grid, block, _ := m.Launch(A, B, C, n, Shape{})
			l := row.LaunchFor(n, 90, "float32")
			if grid != (Dim3{l.Grid[0], l.Grid[1], l.Grid[2]}) || block != (Dim3{l.Block[0], l.Block[1], l.Block[2]}) {
				t.Errorf("%s n=%d: emulator launches grid %v block %v; the table %v %v", m.Name, n, grid, block, l.Grid, l.Block)
			}
		}
	}
	rb, _ := cuda.LookupKernel("cuda-regblock")
	if rbBN != rb.Tile[0] || rbBM != rb.Tile[1] || rbThreads != rb.Block[0]*rb.Block[1]*rb.Block[2] || rbThreads*rbTM*rbTN != rbBM*rbBN {
		t.Errorf("RegBlock's tiling %d×%d by %d threads of %d×%d does not match the table's tile %v, block %v",
			rbBM, rbBN, rbThreads, rbTM, rbTN, rb.Tile, rb.Block)
	}
}

// A shape overrides the table's default: naive and coalesced take the block, smem the tile.
func TestLadderShapeOverrides(t *testing.T) {
	const n = 40
	A, B, C := NewGlobal("A", make([]float32, n*n)), NewGlobal("B", make([]float32, n*n)), NewGlobal("C", make([]float32, n*n))
	for _, tt := range []struct {
		kernel      string
		shape       Shape
		grid, block Dim3
	}{
		{"naive", Shape{Block: Dim3{16, 16, 1}}, Dim3{3, 3, 1}, Dim3{16, 16, 1}},
		{"coalesced", Shape{Block: Dim3{64, 2, 0}}, Dim3{1, 20, 1}, Dim3{64, 2, 1}},
		{"smem", Shape{Tile: 8}, Dim3{5, 5, 1}, Dim3{8, 8, 1}},
		{"regblock", Shape{Block: Dim3{16, 16, 1}, Tile: 8}, Dim3{1, 1, 1}, Dim3{256, 1, 1}},
	} {
		m, err := LadderKernel(tt.kernel)
		if err != nil {
			t.Fatal(err)
		}
		if grid, block, _ := m.Launch(A, B, C, n, tt.shape); grid != tt.grid || block != tt.block {
			t.Errorf("%s with %+v: grid %v block %v, want %v %v", tt.kernel, tt.shape, grid, block, tt.grid, tt.block)
		}
	}
}
