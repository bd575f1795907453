package main

import (
	"context"
	"reflect"
	"sync"
	"testing"

	"github.com/gpuplayground/playground/gpumodel"
	"github.com/gpuplayground/playground/vgpurun"
)

// runKey is what decides a seeded launch of a table kernel (vgpurun.Request without a trace).
type runKey struct {
	kernel, dtype, gpu string
	n                  int
	seed               uint64
	blockXY            [2]int
	sampleBlocks       int
}

// runCache hands back a table kernel's seeded launch that a test of this binary already ran. A
// launch with a Seed draws the same inputs and the same sampled blocks each time, so it counts the
// same (TestSharedRunsAreTheRunsAgain): the tests that hold the same kernels at the same size on the
// same datasheet against different measurements (the GEMM ladder, its tensor-core rungs and their
// SASS against Nsight Compute on the H100 SXM at 4096) run each launch once. Costly: a sampled launch at 4096 is about 6 CPU s.
type runCache struct {
	mu   sync.Mutex
	done map[runKey]vgpurun.Result
}

// sharedRuns is the launches this test binary has run.
var sharedRuns runCache

// run is vgpurun.Run(ctx, req), from c if req was run before; a request without a Seed, with a
// trace or of a learner's kernel runs afresh.
func (c *runCache) run(ctx context.Context, req vgpurun.Request) (vgpurun.Result, error) {
	if req.Seed == 0 || req.Trace != nil || req.Kernel == "custom" {
		return vgpurun.Run(ctx, req)
	}
	key := runKey{kernel: req.Kernel, dtype: req.DType, gpu: req.GPU.Name, n: req.N, seed: req.Seed, blockXY: req.BlockXY, sampleBlocks: req.SampleBlocks}
	c.mu.Lock()
	defer c.mu.Unlock()
	if res, ok := c.done[key]; ok {
		return res, nil
	}
	res, err := vgpurun.Run(ctx, req)
	if err != nil {
		return res, err
	}
	if c.done == nil {
		c.done = map[runKey]vgpurun.Result{}
	}
	c.done[key] = res
	return res, nil
}

// A seeded sampled launch run twice counts, checks and models the same: what runCache hands back
// is what the launch would give again. Two runs of cuda-coalesced just above vgpurun.MaxN (sampled, as
// the comparisons at 4096 are), and the cache's answer the second time.
func TestSharedRunsAreTheRunsAgain(t *testing.T) {
	req := vgpurun.Request{Kernel: "cuda-smem", N: vgpurun.MaxN + 128, DType: "float32", GPU: gpumodel.GPUs[0], Seed: 1}
	var c runCache
	first, err := c.run(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if !first.Sampled {
		t.Fatalf("n = %d ran in full, want sampled", req.N)
	}
	again, err := vgpurun.Run(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	kept, err := c.run(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if first.SASS == nil {
		t.Fatal("no SASS per line for the H100's architecture")
	}
	first.SASS = nil // a function (vgpurun.OwnSASS of the GPU): SASSInstructions is what it gave
	for _, r := range []vgpurun.Result{again, kept} {
		r.EmulationSeconds, r.SASS = first.EmulationSeconds, nil // measured, not counted; as first's
		if !reflect.DeepEqual(r, first) {
			t.Errorf("got %d warp instructions, %d SASS, model %+v; the first run %d, %d, %+v",
				r.Counts.WarpInstructions, r.SASSInstructions, r.Model, first.Counts.WarpInstructions, first.SASSInstructions, first.Model)
		}
	}
	other := req
	other.GPU = gpumodel.GPUs[1]
	if res, err := c.run(context.Background(), other); err != nil || res.GPU != other.GPU.Name {
		t.Errorf("another GPU: %s, %v; want a run of its own on %s", res.GPU, err, other.GPU.Name)
	}
}
