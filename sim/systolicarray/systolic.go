// Package systolicarray simulates, cycle by cycle, a weight-stationary systolic array of N×N
// multiply-accumulate cells (PEs), the matrix unit of Google's TPUs (Jouppi et al., "In-Datacenter
// Performance Analysis of a Tensor Processing Unit", ISCA 2017: a 256×256 array at 700 MHz in TPU v1;
// Jouppi et al., "TPU v4", ISCA 2023: 128×128 MXUs), and computes C = A·B for any shapes by tiling.
//
// The dataflow: a tile of B (N×N: rows are k, columns are n) is loaded into the PEs, one row per cycle
// (N cycles). Rows of A then stream in from the left edge, row i of the array skewed by i cycles; every
// cycle each PE adds a·w to the partial sum from the PE above and passes a to the right and the sum
// down, with no register file in between. PE(i,j) at cycle t holds A[t−i−j][i], and the bottom of column
// j emits C[t−j−(N−1)][j]: one tile of m rows takes m + 2N − 2 cycles to fill, stream and drain.
// Partial sums of successive k-tiles are added in accumulators below the array.
package systolicarray

import (
	"context"
	"fmt"
)

// Stats is what a product cost.
type Stats struct {
	// Cycles is every cycle of the run: weight loads plus compute (fill, stream, drain) per tile.
	Cycles int64
	// WeightCycles of them load weights.
	WeightCycles int64
	Tiles        int
	// MACs is the useful multiply-accumulates, m·n·k.
	MACs int64
}

// Utilisation is useful MACs over what N×N PEs could do in Cycles (1 = every PE busy every cycle).
func (s Stats) Utilisation(n int) float64 {
	if s.Cycles == 0 {
		return 0
	}
	return float64(s.MACs) / (float64(n) * float64(n) * float64(s.Cycles))
}

// FLOPS is the throughput in FLOP/s at clock hz (2 FLOPs per MAC).
func (s Stats) FLOPS(hz float64) float64 {
	if s.Cycles == 0 {
		return 0
	}
	return 2 * float64(s.MACs) / (float64(s.Cycles) / hz)
}

// Cycles is the closed form of the simulator's count for an N×N array and an m×k by k×n product:
// ⌈k/N⌉·⌈n/N⌉ tiles, each N weight-load cycles plus m + 2N − 2 compute cycles.
func Cycles(N, m, n, k int) Stats {
	tiles := ceilDiv(k, N) * ceilDiv(n, N)
	return Stats{
		Cycles:       int64(tiles) * int64(N+m+2*N-2),
		WeightCycles: int64(tiles) * int64(N),
		Tiles:        tiles,
		MACs:         int64(m) * int64(n) * int64(k),
	}
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// Frame is the array's state after one compute cycle, for the animation.
type Frame struct {
	// Tile is the tile index (0-based) and K0, N0 its first k and n; Cycle counts within the tile's
	// compute phase.
	Tile  int `json:"tile"`
	K0    int `json:"k0"`
	N0    int `json:"n0"`
	Cycle int `json:"cycle"`
	// A[i][j] is the activation in PE(i,j) (0 where none) and P[i][j] its partial sum; W the weights.
	A [][]float32 `json:"a"`
	P [][]float32 `json:"p"`
	W [][]float32 `json:"w"`
	// Out lists the outputs that left the bottom edge this cycle: C[Row][Col] += Value.
	Out []Output `json:"out,omitempty"`
}

// Output is one partial sum leaving the array.
type Output struct {
	Row   int     `json:"row"`
	Col   int     `json:"col"`
	Value float32 `json:"value"`
}

// Multiply computes C = A·B (row-major: a m×k, b k×n) on an N×N array and returns C and the cycle
// counts. frame, if not nil, is called after every compute cycle (use it only for small arrays). It
// returns ctx's error when cancelled (checked every cycle).
func Multiply(ctx context.Context, N int, a, b []float32, m, n, k int, frame func(Frame)) ([]float32, Stats, error) {
	if N < 1 || m < 1 || n < 1 || k < 1 {
		return nil, Stats{}, fmt.Errorf("systolic: array %d and shape %d×%d×%d must be positive", N, m, n, k)
	}
	c := make([]float32, m*n)
	w, act, psum := grid(N), grid(N), grid(N)
	nextA, nextP := grid(N), grid(N)
	var st Stats
	tile := 0
	for k0 := 0; k0 < k; k0 += N {
		for n0 := 0; n0 < n; n0 += N {
			// Load the weight tile: N cycles (one row per cycle, shifted down).
			for i := range N {
				for j := range N {
					w[i][j] = 0
					if k0+i < k && n0+j < n {
						w[i][j] = b[(k0+i)*n+n0+j]
					}
				}
				clear(act[i])
				clear(psum[i])
			}
			st.Cycles += int64(N)
			st.WeightCycles += int64(N)
			for t := 0; t < m+2*N-2; t++ {
				if err := ctx.Err(); err != nil {
					return nil, st, err
				}
				for i := range N {
					for j := range N {
						var in float32 // from the left neighbour, or the skewed input at the edge
						if j > 0 {
							in = act[i][j-1]
						} else if r := t - i; r >= 0 && r < m && k0+i < k {
							in = a[r*k+k0+i]
						}
						var above float32
						if i > 0 {
							above = psum[i-1][j]
						}
						nextA[i][j] = in
						nextP[i][j] = above + in*w[i][j]
					}
				}
				act, nextA = nextA, act
				psum, nextP = nextP, psum
				var outs []Output
				for j := range N {
					r := t - j - (N - 1)
					if r >= 0 && r < m && n0+j < n {
						c[r*n+n0+j] += psum[N-1][j]
						if frame != nil {
							outs = append(outs, Output{r, n0 + j, psum[N-1][j]})
						}
					}
				}
				st.Cycles++
				if frame != nil {
					frame(Frame{Tile: tile, K0: k0, N0: n0, Cycle: t, A: copyGrid(act), P: copyGrid(psum), W: copyGrid(w), Out: outs})
				}
			}
			tile++
		}
	}
	st.Tiles = tile
	st.MACs = int64(m) * int64(n) * int64(k)
	return c, st, nil
}

func grid(n int) [][]float32 {
	g := make([][]float32, n)
	for i := range g {
		g[i] = make([]float32, n)
	}
	return g
}

func copyGrid(g [][]float32) [][]float32 {
	out := grid(len(g))
	for i := range g {
		copy(out[i], g[i])
	}
	return out
}
