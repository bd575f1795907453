package vgpurun

import (
	"context"
	"strings"
	"testing"

	"github.com/gpuplayground/playground/estimate"
	"github.com/gpuplayground/playground/gpu/nvidia"
	"github.com/gpuplayground/playground/gpumodel"
)

// Every candidate of the tile search runs from the embedded PTX and is right against the float64
// reference at a ragged size (scalar loads, partial tiles) and a multiple of 4 that is no multiple of
// any tile (128-bit loads, a ragged last step along K for BK 16), with ptxas's registers in its
// occupancy.
func TestTileSearchCandidatesEmulated(t *testing.T) {
	for _, s := range nvidia.TuneCandidates() {
		k := s.Kernel()
		if got, ok := nvidia.LookupRow(k.Name); !ok || got.Entry != k.Entry {
			t.Fatalf("LookupRow(%q) = %+v, %v", k.Name, got, ok)
		}
		for _, n := range []int{33, 72} {
			r, err := Run(context.Background(), Request{Kernel: k.Name, N: n, DType: "float32", GPU: gpumodel.GPUs[0], Seed: 3})
			if err != nil {
				t.Fatalf("%s n=%d: %v", k.Name, n, err)
			}
			if !r.OK || r.Checked != n*n || !(r.Model.Seconds > 0) {
				t.Errorf("%s n=%d: ok %v (rel %g), %d checked, model %+v", k.Name, n, r.OK, r.RelError, r.Checked, r.Model)
			}
			if r.Occupancy.Registers == 0 {
				t.Errorf("%s: occupancy %+v without ptxas's registers", k.Name, r.Occupancy)
			}
			for _, f := range r.Notes {
				t.Errorf("%s n=%d: %v", k.Name, n, f)
			}
		}
	}
}

// cuda-doublebuf is cuda-warptile with two shared stages: the same FLOPs and global sectors, but
// one barrier per step along K (and one before the first) instead of two.
func TestDoubleBufferingHalvesTheBarriers(t *testing.T) {
	const n = 64 // one block of 128×128; K = 64 is 8 steps of 8
	counts := map[string]Result{}
	for _, k := range []string{"cuda-warptile", "cuda-doublebuf"} {
		r, err := Run(context.Background(), Request{Kernel: k, N: n, DType: "float32", GPU: gpumodel.GPUs[0], Seed: 5})
		if err != nil || !r.OK {
			t.Fatalf("%s: %v, ok %v", k, err, r.OK)
		}
		counts[k] = r
	}
	wt, db := counts["cuda-warptile"].Counts, counts["cuda-doublebuf"].Counts
	steps := int64(n / 8)
	per := wt.Barriers / (2 * steps) // barriers counted per step and side: one per warp
	if per == 0 || wt.Barriers != 2*steps*per || db.Barriers != (steps+1)*per {
		t.Errorf("barriers: warptile %d, doublebuf %d; want 2×%d and %d+1 steps of %d", wt.Barriers, db.Barriers, steps, steps, per)
	}
	if db.FLOPs != wt.FLOPs || db.LoadSectors != wt.LoadSectors {
		t.Errorf("doublebuf %d FLOPs, %d sectors; warptile %d, %d: want the same work", db.FLOPs, db.LoadSectors, wt.FLOPs, wt.LoadSectors)
	}
}

// A candidate of the tile search is priced as cuda-doublebuf (the same template), not as the naive
// kernel, the fallback for a kernel without a measured rate.
func TestTileSearchCandidatesArePricedAsDoublebuf(t *testing.T) {
	r := estimate.Defaults()
	cand := "cuda-tile-" + strings.ReplaceAll(nvidia.TuneCandidates()[1].String(), "_", "-")
	got, db, naive := Estimate(r, cand, 128), Estimate(r, "cuda-doublebuf", 128), Estimate(r, "cuda-naive", 128)
	if got != db || got == naive {
		t.Errorf("%s at 128: %v; cuda-doublebuf %v, cuda-naive %v", cand, got, db, naive)
	}
}
