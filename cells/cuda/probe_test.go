package cuda

import (
	"context"
	"strings"
	"testing"
	"time"

	pt "github.com/gpuplayground/playground/problems/problemstest"

	"github.com/gpuplayground/playground/cells"
	"github.com/gpuplayground/playground/cells/cellstest"
	kcuda "github.com/gpuplayground/playground/gpu/nvidia"
	"github.com/gpuplayground/playground/harness"
	"github.com/gpuplayground/playground/vgpurun"
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
		p := vgpurun.Probe{Blocks: tt.blocks, GridBlocks: tt.grid}
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

// hugeGrid launches 2·10¹² threads at n = 64 (a grid of 2·10⁹ blocks of 1,024), all of them
// emulated at that size: days of emulation.
const hugeGrid = `kernel: huge
block: [32, 32]
grid: ["2000000", "1000"]
sizes: [64]
---
extern "C" __global__ void huge(const float* A, const float* B, float* C, int M, int N, int K) {
    int r = blockIdx.y * 32 + threadIdx.y, c = blockIdx.x * 32 + threadIdx.x;
    if (r < M && c < N) C[r * N + c] = A[r * K] * B[c];
}
`

// Show PTX launches the virtual GPU as the run does, and goes through the same guard: a cell whose
// run is refused after the compile, from the probe of one block, as too costly, has its Show PTX
// refused with the same reason, instead of emulated until the run time limit stops it. (The
// context's deadline only keeps a regression from emulating for days; the refusal comes first.)
func TestShowPTXRefusedAsTheRunIs(t *testing.T) {
	nv, err := kcuda.LoadNVRTC()
	if err != nil {
		t.Skipf("skipping: no NVRTC (%v)", err)
	}
	k := New(cells.Env{Kernels: gpuAvailable(), Limits: harness.DefaultLimits(), GPU: &testGPU{nv: nv}})
	refusal := func(action string) error {
		t.Helper()
		r, err := cells.Parse(k, action, cells.Cell{Source: hugeGrid})
		if err != nil {
			t.Fatalf("%q: %v", action, err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		err = r.Run(ctx, &cellstest.Recorder{})
		if ctx.Err() != nil {
			t.Fatalf("%q: emulated until the context's deadline (%v), want refused from the probe", action, err)
		}
		return err
	}
	run, ptx := refusal(""), refusal("ptx")
	const want = "custom: its emulation is estimated, from one thread block of it at each size, at about"
	if run == nil || !strings.Contains(run.Error(), want) {
		t.Fatalf("run: got %v, want %q", run, want)
	}
	if ptx == nil || ptx.Error() != run.Error() {
		t.Errorf("Show PTX: got %v, want the run's refusal %q", ptx, run)
	}
}

// Show PTX runs the learner's kernel alone at the cell's smallest size: a variant whose launch
// would be refused as too costly (here a grid of 2·10⁹ blocks) does not refuse it, nor is it
// probed or priced.
func TestShowPTXLeavesTheVariantsOut(t *testing.T) {
	nv, err := kcuda.LoadNVRTC()
	if err != nil {
		t.Skipf("skipping: no NVRTC (%v)", err)
	}
	k := New(cells.Env{Kernels: gpuAvailable(), Limits: harness.DefaultLimits(), GPU: &testGPU{nv: nv}})
	cell := strings.Replace(tiledTransposeCell, "sizes:", `variants: [{registers: 64, grid: ["2000000", "1000"]}]`+"\nsizes:", 1) + pt.TiledTranspose
	r, err := cells.Parse(k, "ptx", cells.Cell{Source: cell})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := r.Run(ctx, &cellstest.Recorder{}); err != nil {
		t.Errorf("Show PTX of a cell with a costly variant: %v", err)
	}
}
