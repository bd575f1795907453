package cuda

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gpuplayground/playground/cells"
	"github.com/gpuplayground/playground/cells/cellstest"
	kcuda "github.com/gpuplayground/playground/gpu/nvidia"
	"github.com/gpuplayground/playground/harness"
	"github.com/gpuplayground/playground/vgpu/emulate"
)

// A sampled emulation whose blocks would take longer than the size's share runs fewer of them, at
// least one; one that fits, or a grid run in full, keeps its blocks.
func TestSampleWithin(t *testing.T) {
	for _, tt := range []struct {
		blocks, grid int
		sec, share   float64
		want         int
	}{
		{8, 1024, 4, 10, 8},  // fits
		{8, 1024, 40, 10, 2}, // a quarter of the time: 2 of 8 blocks
		{8, 1024, 800, 10, 1},
		{8, 8, 40, 10, 8},        // the whole grid runs: not sampled
		{1, 1024, 40, 10, 1},     // one block already
		{256, 256, 400, 10, 256}, // in full
	} {
		p := emulate.Probe{Blocks: tt.blocks, GridBlocks: tt.grid}
		if got := sampleWithin(p, tt.sec, tt.share); got != tt.want {
			t.Errorf("%d of %d blocks in %g s, share %g s: %d blocks, want %d", tt.blocks, tt.grid, tt.sec, tt.share, got, tt.want)
		}
	}
}

// oneBlockMatmul computes all of C in one block of 32×32 threads: at n = 512, 134 million
// multiply-adds in one block, many seconds of emulation.
const oneBlockMatmul = `kernel: one_block
block: [32, 32]
grid: ["1", "1"]
sizes: [512]
---
extern "C" __global__ void one_block(const float* A, const float* B, float* C, int M, int N, int K) {
    for (int r = threadIdx.y; r < M; r += 32)
        for (int c = threadIdx.x; c < N; c += 32) {
            float s = 0;
            for (int k = 0; k < K; k++) s += A[r * K + k] * B[k * N + c];
            C[r * N + c] = s;
        }
}
`

// A kernel whose one block alone runs past its share of the run time limit is refused after the
// compile, from a probe of that block, with the reason, instead of being emulated until the limit
// stops it (the limit is 1 s here: the probe stops at 0.5 s, and the emulation of that block takes
// many seconds at any speed the virtual GPU reaches).
func TestCellRefusedWhenOneBlockOutrunsTheLimit(t *testing.T) {
	nv, err := kcuda.LoadNVRTC()
	if err != nil {
		t.Skipf("skipping: no NVRTC (%v)", err)
	}
	spec, err := Parse(oneBlockMatmul, gpuAvailable(), harness.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	lim := harness.DefaultLimits()
	lim.RunTimeout = time.Second
	r := &run{env: cells.Env{Kernels: gpuAvailable(), Limits: lim, GPU: &testGPU{nv: nv}}, spec: spec}
	start := time.Now()
	err = r.Run(context.Background(), &cellstest.Recorder{})
	if err == nil || !strings.Contains(err.Error(), "one thread block of it runs longer than") {
		t.Fatalf("got %v, want the block refused", err)
	}
	t.Logf("refused after %s: %v", time.Since(start).Round(time.Millisecond), err)
}
