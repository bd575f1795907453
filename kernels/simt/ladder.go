package simt

import (
	"fmt"

	"github.com/gpuplayground/playground/kernels/cuda"
)

// The ladder: Go versions of kernels/cuda/src/matmul.cu with the same indexing, computing C = A·B for
// row-major A (M×K), B (K×N), C (M×N) in float32. Their default launch shapes are those of the GPU
// kernel table (kernels/cuda/ladder.go) that the GPU worker launches the CUDA kernels with.

// Matmul is one emulated ladder kernel: its name, the row of the GPU kernel table it emulates, and its
// launch for n×n×n.
type Matmul struct {
	Name string
	// CUDA is the row of cuda.Kernels it emulates ("cuda-" + Name): its default grid and block.
	CUDA cuda.Kernel
	// Launch returns the grid, block and kernel for C = A·B with square n×n matrices and shape.
	Launch func(A, B, C *Global[float32], n int, shape Shape) (grid, block Dim3, k Kernel)
}

// Shape adjusts a ladder kernel's launch: Block for naive and coalesced (default the table's, 32×8 as
// in matmul.cu), Tile for smem (default the table's 32: a Tile×Tile block stages Tile×Tile tiles).
// regblock's shape is fixed. Zero fields take the defaults.
type Shape struct {
	Block Dim3
	Tile  int
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// dim3 converts a launch dimension of the table.
func dim3(d [3]int) Dim3 { return Dim3{d[0], d[1], d[2]} }

// row returns the table's row for an emulated kernel; the table and this file are one program, so a
// missing row is a programming error.
func row(name string) cuda.Kernel {
	k, ok := cuda.LookupKernel("cuda-" + name)
	if !ok {
		panic("simt: no row cuda-" + name + " in the GPU kernel table")
	}
	return k
}

// tableLaunch is the table's grid and block for row k at size n.
func tableLaunch(k cuda.Kernel, n int) (grid, block Dim3) {
	_, g, b := k.Shape(n)
	return dim3(g), dim3(b)
}

// Ladder lists the emulated kernels in the order of lessons 6 and 7: naive, coalesced, smem, regblock.
func Ladder() []Matmul {
	// perThread launches one thread per element of C, with the table's block unless shape has one.
	perThread := func(name string, kernel func(A, B, C *Global[float32], M, N, K int) Kernel) Matmul {
		r := row(name)
		return Matmul{name, r, func(A, B, C *Global[float32], n int, s Shape) (Dim3, Dim3, Kernel) {
			grid, block := tableLaunch(r, n)
			if s.Block.X != 0 {
				block = s.Block.norm()
				grid = Dim3{ceilDiv(n, block.X), ceilDiv(n, block.Y), 1}
			}
			return grid, block, kernel(A, B, C, n, n, n)
		}}
	}
	smem, regblock := row("smem"), row("regblock")
	return []Matmul{
		perThread("naive", Naive),
		perThread("coalesced", Coalesced),
		{"smem", smem, func(A, B, C *Global[float32], n int, s Shape) (Dim3, Dim3, Kernel) {
			grid, block := tableLaunch(smem, n)
			t := smem.Tile[0]
			if s.Tile != 0 {
				t = s.Tile
				grid, block = Dim3{ceilDiv(n, t), ceilDiv(n, t), 1}, Dim3{t, t, 1}
			}
			return grid, block, Smem(A, B, C, n, n, n, t)
		}},
		{"regblock", regblock, func(A, B, C *Global[float32], n int, _ Shape) (Dim3, Dim3, Kernel) {
			grid, block := tableLaunch(regblock, n)
			return grid, block, RegBlock(A, B, C, n, n, n)
		}},
	}
}

// LadderKernel finds a ladder kernel by name.
func LadderKernel(name string) (Matmul, error) {
	for _, m := range Ladder() {
		if m.Name == name {
			return m, nil
		}
	}
	return Matmul{}, fmt.Errorf("unknown emulated kernel %q; known: naive, coalesced, smem, regblock", name)
}

// Naive is cuda_naive: threadIdx.x runs down a column of C, so a warp's loads of A are K floats
// apart and its stores N floats apart. Block (32, 8).
func Naive(A, B, C *Global[float32], M, N, K int) Kernel {
	return func(t *Thread) {
		row := t.BlockIdx.X*t.BlockDim.X + t.ThreadIdx.X
		col := t.BlockIdx.Y*t.BlockDim.Y + t.ThreadIdx.Y
		if row < M && col < N {
			var sum float32
			for p := 0; p < K; p++ {
				sum = FMA(t, A.Load(t, row*K+p), B.Load(t, p*N+col), sum)
			}
			C.Store(t, row*N+col, sum)
		}
	}
}

// Coalesced is cuda_coalesced: threadIdx.x runs along a row of C. Block (32, 8).
func Coalesced(A, B, C *Global[float32], M, N, K int) Kernel {
	return func(t *Thread) {
		col := t.BlockIdx.X*t.BlockDim.X + t.ThreadIdx.X
		row := t.BlockIdx.Y*t.BlockDim.Y + t.ThreadIdx.Y
		if row < M && col < N {
			var sum float32
			for p := 0; p < K; p++ {
				sum = FMA(t, A.Load(t, row*K+p), B.Load(t, p*N+col), sum)
			}
			C.Store(t, row*N+col, sum)
		}
	}
}

// Smem is cuda_smem with tiles of tile×tile (cuda_smem's is the table's, 32) staged in shared memory.
// Block (tile, tile).
func Smem(A, B, C *Global[float32], M, N, K, tile int) Kernel {
	smemTile := tile
	return func(t *Thread) {
		As := SharedArray[float32](t, "As", smemTile*smemTile)
		Bs := SharedArray[float32](t, "Bs", smemTile*smemTile)
		tx, ty := t.ThreadIdx.X, t.ThreadIdx.Y
		row := t.BlockIdx.Y*smemTile + ty
		col := t.BlockIdx.X*smemTile + tx
		var sum float32
		for k0 := 0; k0 < K; k0 += smemTile {
			var a, b float32
			if row < M && k0+tx < K {
				a = A.Load(t, row*K+k0+tx)
			}
			As.Store(t, ty*smemTile+tx, a)
			if k0+ty < K && col < N {
				b = B.Load(t, (k0+ty)*N+col)
			}
			Bs.Store(t, ty*smemTile+tx, b)
			t.SyncThreads()
			for p := 0; p < smemTile; p++ {
				sum = FMA(t, As.Load(t, ty*smemTile+p), Bs.Load(t, p*smemTile+tx), sum)
			}
			t.SyncThreads()
		}
		if row < M && col < N {
			C.Store(t, row*N+col, sum)
		}
	}
}

// regblock's tiling, as matmul.cu's RB_* defines; TestLadderShapesAreTheTables ties rbBM, rbBN and
// rbThreads to the cuda-regblock row.
const (
	rbBM, rbBN, rbBK, rbTM, rbTN = 128, 128, 8, 8, 8
	rbThreads                    = 256
	// rbPad pads each row of the transposed A tile: without it a warp's 32 stores As[c][r] land on
	// only 4 banks (8-way conflicts); with a row of 132 words the bank is (4c + r) mod 32, all distinct.
	rbPad = 4
)

// RegBlock is cuda_regblock: each of 256 threads keeps 8×8 outputs of a 128×128 block of C in
// registers (8 consecutive rows; 8 columns 16 apart, so that a warp reads 16 consecutive words of the
// B tile instead of hitting 4 banks); A (stored transposed, rows padded) and B tiles of depth 8 are
// staged in shared memory. Block 256.
func RegBlock(A, B, C *Global[float32], M, N, K int) Kernel {
	return func(t *Thread) {
		As := SharedArray[float32](t, "As", rbBK*(rbBM+rbPad))
		Bs := SharedArray[float32](t, "Bs", rbBK*rbBN)
		tid := t.ThreadIdx.X
		tRow, tCol := tid/(rbBN/rbTN), tid%(rbBN/rbTN)
		bRow, bCol := t.BlockIdx.Y*rbBM, t.BlockIdx.X*rbBN
		var acc [rbTM][rbTN]float32
		var regA [rbTM]float32
		var regB [rbTN]float32
		for k0 := 0; k0 < K; k0 += rbBK {
			for i := tid; i < rbBM*rbBK; i += rbThreads {
				r, c := i/rbBK, i%rbBK
				var v float32
				if bRow+r < M && k0+c < K {
					v = A.Load(t, (bRow+r)*K+k0+c)
				}
				As.Store(t, c*(rbBM+rbPad)+r, v)
			}
			for i := tid; i < rbBK*rbBN; i += rbThreads {
				r, c := i/rbBN, i%rbBN
				var v float32
				if k0+r < K && bCol+c < N {
					v = B.Load(t, (k0+r)*N+bCol+c)
				}
				Bs.Store(t, r*rbBN+c, v)
			}
			t.SyncThreads()
			for kk := 0; kk < rbBK; kk++ {
				for i := range rbTM {
					regA[i] = As.Load(t, kk*(rbBM+rbPad)+tRow*rbTM+i)
				}
				for j := range rbTN {
					regB[j] = Bs.Load(t, kk*rbBN+tCol+j*(rbBN/rbTN))
				}
				for i := range rbTM {
					for j := range rbTN {
						acc[i][j] = FMA(t, regA[i], regB[j], acc[i][j])
					}
				}
			}
			t.SyncThreads()
		}
		for i := range rbTM {
			r := bRow + tRow*rbTM + i
			if r >= M {
				break
			}
			for j := range rbTN {
				if c := bCol + tCol + j*(rbBN/rbTN); c < N {
					C.Store(t, r*N+c, acc[i][j])
				}
			}
		}
	}
}
