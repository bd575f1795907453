package emulate

import (
	"context"
	"testing"

	"github.com/gpuplayground/playground/datasheet"
	"github.com/gpuplayground/playground/kernels/cuda"
)

// Every own kernel of the table, emulated from the embedded PTX, is right at ragged and even sizes,
// with counts and a modelled time.
func TestOwnKernelsEmulated(t *testing.T) {
	for _, row := range cuda.Kernels() {
		if row.Entry == "" {
			continue
		}
		for _, n := range []int{1, 33, 64} {
			r, err := Run(context.Background(), Request{Kernel: row.Name, N: n, DType: "float32", GPU: datasheet.GPUs[0]})
			if err != nil {
				t.Fatalf("%s n=%d: %v", row.Name, n, err)
			}
			if !r.OK || r.Counts.ThreadInstructions == 0 || !(r.Model.Seconds > 0) || r.Model.Bound == "" {
				t.Errorf("%s n=%d: ok %v (rel %g), %d thread instructions, model %+v", row.Name, n, r.OK, r.RelError, r.Counts.ThreadInstructions, r.Model)
			}
		}
	}
}

// A learner's kernel given as PTX runs with its own launch shape; a wrong kernel is flagged, not
// hidden, and an out-of-bounds write is the sanitizer's fault.
func TestCustomKernel(t *testing.T) {
	src, err := cuda.PTX.ReadFile(cuda.PTXName("matmul.cu", Arch))
	if err != nil {
		t.Fatal(err)
	}
	req := Request{Kernel: "custom", PTX: string(src), Entry: "cuda_coalesced", Grid: [3]int{2, 2, 1}, Block: [3]int{32, 32, 1}, N: 40, DType: "float32", GPU: datasheet.GPUs[2]}
	r, err := Run(context.Background(), req)
	if err != nil || !r.OK {
		t.Fatalf("custom coalesced: %+v, %v", r, err)
	}
	req.Grid = [3]int{1, 1, 1} // a grid too small: most of C is never written
	if r, err := Run(context.Background(), req); err != nil || r.OK {
		t.Errorf("a grid that leaves C unwritten: ok %v, %v; want a wrong result", r.OK, err)
	}
	req.Grid, req.N = [3]int{2, 2, 1}, 40
	req.Entry = "no_such_kernel"
	if _, err := Run(context.Background(), req); err == nil {
		t.Error("an unknown entry ran")
	}
}

// Above MaxN a few blocks run: the entries they wrote are checked, the counts scaled to the grid.
func TestSampled(t *testing.T) {
	for _, kernel := range []string{"cuda-coalesced", "cuda-regblock"} {
		r, err := Run(context.Background(), Request{Kernel: kernel, N: 1000, DType: "float32", GPU: datasheet.GPUs[0]})
		if err != nil {
			t.Fatal(err)
		}
		c := r.Counts
		// 2·n³ FLOPs in all; scaled from 8 blocks, a ragged edge block drawn makes it an estimate.
		if !r.Sampled || !r.OK || r.Checked == 0 || c.Blocks != c.GridBlocks || c.FLOPs < 1.5e9 || c.FLOPs > 2.5e9 {
			t.Errorf("%s: sampled %v ok %v checked %d, blocks %d of %d, %d FLOPs", kernel, r.Sampled, r.OK, r.Checked, c.Blocks, c.GridBlocks, c.FLOPs)
		}
	}
}
