package nvidia

import (
	"fmt"
	"slices"
	"strings"
)

// The FP32 tile search (S. Boehm's worklog, kernel 12: autotuning): matmul.cu's tile_gemm, the
// double-buffered warptiled kernel, compiled for a few tile shapes (one entry point each), and
// `go generate` (internal/gentune) emulating each in the virtual GPU at TuneN on each of TuneGPUs and
// recording the time the timing model gives it (tune.gen.go). The cuda-autotuned row launches the
// shape the model puts fastest on TuneTarget. The choice is modelled, never timed: on a lent GPU
// bench/gpucheck's launch harness times every candidate (docs/gpu.md).

// TileShape is one point of the search: a block computes a BM×BN tile of C stepping along K by BK,
// each warp a WM×WN piece of it in 32×16 sub-tiles of 4×4 outputs per lane.
type TileShape struct{ BM, BN, BK, WM, WN int }

// TuneCandidates are the shapes the search tries, cuda_doublebuf's (cuda_warptile's tiles) first.
func TuneCandidates() []TileShape {
	return []TileShape{
		{128, 128, 8, 64, 32}, {128, 64, 16, 32, 32}, {128, 256, 8, 64, 64}, {256, 128, 8, 64, 64},
	}
}

// TuneN is the size, TuneGPUs the datasheet GPUs (gpumodel) and TuneTarget the one whose pick the
// cuda-autotuned row launches.
const (
	TuneN      = 4096
	TuneTarget = "H100 SXM"
)

// TuneGPUs are the datasheet GPUs the search models each candidate on: the lessons' default and
// the RTX A6000 of Boehm's worklog.
var TuneGPUs = []string{"H100 SXM", "RTX A6000"}

// Threads is the shape's threads per block: one warp per WM×WN piece.
func (s TileShape) Threads() int { return (s.BM / s.WM) * (s.BN / s.WN) * 32 }

// String is the shape as matmul.cu names it: "128x128x8_w64x32".
func (s TileShape) String() string {
	return fmt.Sprintf("%dx%dx%d_w%dx%d", s.BM, s.BN, s.BK, s.WM, s.WN)
}

// Kernel is the shape as a row of the kernel table would be: "cuda-doublebuf" and its entry for the
// first candidate, "cuda-tile-<shape>" (hyphens) and "cuda_tile_<shape>" for the others.
func (s TileShape) Kernel() Kernel {
	name, entry := "cuda-doublebuf", "cuda_doublebuf"
	if s != TuneCandidates()[0] {
		name, entry = "cuda-tile-"+strings.ReplaceAll(s.String(), "_", "-"), "cuda_tile_"+s.String()
	}
	return Kernel{Name: name, Summary: fmt.Sprintf("tile search candidate: %d×%d block tiles, BK %d, %d×%d warp tiles, double-buffered", s.BM, s.BN, s.BK, s.WM, s.WN),
		Source: "gpu/nvidia/src/matmul.cu", Entry: entry, DTypes: []string{"float32"},
		Block: [3]int{s.Threads(), 1, 1}, Tile: [2]int{s.BN, s.BM}, GFLOPS: 500}
}

// TuneRecord is one candidate modelled on one GPU by go generate: the modelled seconds of one
// launch at TuneN and the term that bounds it (gpumodel), the registers per thread ptxas gives its
// entry on that GPU's architecture (0: not known), its theoretical occupancy as the tables show it
// ("25% (registers)") and the blocks the virtual GPU ran of the grid (a sample, scaled).
type TuneRecord struct {
	GPU, Entry        string
	Seconds           float64
	Bound             string
	Registers         int
	Occupancy         string
	BlocksRun, Blocks int64
}

// TuneRecords returns what go generate recorded (tune.gen.go), in TuneGPUs then TuneCandidates order.
func TuneRecords() []TuneRecord { return slices.Clone(tuneRecords) }

// TunedShape is the candidate the recorded model puts fastest on gpu; false when nothing was
// recorded for it.
func TunedShape(gpu string) (TileShape, bool) {
	best, found := TileShape{}, false
	bestSec := 0.0
	for _, r := range tuneRecords {
		if r.GPU != gpu || r.Seconds <= 0 {
			continue
		}
		for _, s := range TuneCandidates() {
			if s.Kernel().Entry == r.Entry && (!found || r.Seconds < bestSec) {
				best, bestSec, found = s, r.Seconds, true
			}
		}
	}
	return best, found
}

// autotunedRow is the cuda-autotuned row: TuneTarget's pick (the first candidate before any record).
func autotunedRow() Kernel {
	s, ok := TunedShape(TuneTarget)
	if !ok {
		s = TuneCandidates()[0]
	}
	k := s.Kernel()
	k.Name = "cuda-autotuned"
	k.Summary = fmt.Sprintf("the tile search's pick for the %s, modelled by go generate: %d×%d block tiles, BK %d, %d×%d warp tiles, double-buffered",
		TuneTarget, s.BM, s.BN, s.BK, s.WM, s.WN)
	return k
}

// LookupRow finds a row of Kernels by name, or else a candidate of the tile search
// (TuneCandidates' Kernel), which the virtual GPU and launch harness run but cells do not list.
func LookupRow(name string) (Kernel, bool) {
	if k, ok := LookupKernel(name); ok {
		return k, true
	}
	for _, s := range TuneCandidates() {
		if k := s.Kernel(); k.Name == name {
			return k, true
		}
	}
	return Kernel{}, false
}

// doublebufRow is the cuda-doublebuf row: the search's first candidate, cuda_warptile's tiles.
func doublebufRow() Kernel {
	k := TuneCandidates()[0].Kernel()
	k.Summary = "cuda-warptile double-buffered: two shared-memory stages, the next tiles' global loads in flight while this one computes, one barrier per step"
	return k
}

// LaunchRows is Kernels followed by the tile search's candidates whose entry point no row launches:
// what bench/gpucheck's launch harness (kernels.gen.h) runs, so that a lent GPU times every
// candidate of the search, not only the model's pick.
func LaunchRows() []Kernel {
	rows := Kernels()
	seen := map[string]bool{}
	for _, k := range rows {
		seen[k.Entry] = true
	}
	for _, s := range TuneCandidates() {
		if k := s.Kernel(); !seen[k.Entry] {
			rows = append(rows, k)
		}
	}
	return rows
}
