package vgpurun

import (
	"context"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gpuplayground/playground/gpu"
	"github.com/gpuplayground/playground/gpu/nvidia"
	"github.com/gpuplayground/playground/gpumodel"
	"github.com/gpuplayground/playground/vgpu"
)

// Every own kernel of the table, emulated from the embedded PTX, is right at ragged and even sizes,
// with counts and a modelled time.
func TestOwnKernelsEmulated(t *testing.T) {
	for _, row := range nvidia.Kernels() {
		if row.Entry == "" {
			continue
		}
		for _, n := range []int{1, 33, 64} {
			r, err := Run(context.Background(), Request{Kernel: row.Name, N: n, DType: "float32", GPU: gpumodel.GPUs[0]})
			if err != nil {
				t.Fatalf("%s n=%d: %v", row.Name, n, err)
			}
			if !r.OK || r.Counts.ThreadInstructions == 0 || !(r.Model.Seconds > 0) || r.Model.Bound == "" {
				t.Errorf("%s n=%d: ok %v (rel %g), %d thread instructions, model %+v", row.Name, n, r.OK, r.RelError, r.Counts.ThreadInstructions, r.Model)
			}
			for _, f := range r.Notes {
				t.Errorf("%s n=%d: %v", row.Name, n, f)
			}
		}
	}
}

// A learner's kernel given as PTX runs with its own launch shape; a wrong kernel is flagged, not
// hidden, and an out-of-bounds write is the sanitizer's fault.
func TestCustomKernel(t *testing.T) {
	src, err := nvidia.PTX.ReadFile(nvidia.PTXName("matmul.cu", Arch))
	if err != nil {
		t.Fatal(err)
	}
	req := Request{Kernel: "custom", PTX: string(src), Entry: "cuda_coalesced", Grid: [3]int{2, 2, 1}, Block: [3]int{32, 32, 1}, N: 40, DType: "float32", GPU: gpumodel.GPUs[2]}
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
		r, err := Run(context.Background(), Request{Kernel: kernel, N: 1000, DType: "float32", GPU: gpumodel.GPUs[0]})
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

// C starts poisoned at every size, as the GPU worker fills it: a kernel that accumulates into C
// without writing it first is wrong in full and in sampled runs alike, and its read of C is an
// uninitialised-read note naming the line; the same kernel summing in a register is right.
func TestOutputStartsPoisoned(t *testing.T) {
	if got, want := uint32(gpu.PoisonWord), uint32(vgpu.Poison)*0x01010101; got != want {
		t.Fatalf("the GPU worker poisons C with %#x, the virtual GPU with %#x", got, want)
	}
	nv, err := nvidia.LoadNVRTC()
	if err != nil {
		t.Skipf("no NVRTC: %v", err)
	}
	const src = `extern "C" __global__ void acc(const float *A, const float *B, float *C, int M, int N, int K) {
	int r = blockIdx.y * 16 + threadIdx.y, c = blockIdx.x * 16 + threadIdx.x;
	if (r >= M || c >= N) return;
	for (int k = 0; k < K; k++) C[r * N + c] += A[r * K + k] * B[k * N + c];
}
extern "C" __global__ void sum(const float *A, const float *B, float *C, int M, int N, int K) {
	int r = blockIdx.y * 16 + threadIdx.y, c = blockIdx.x * 16 + threadIdx.x;
	if (r >= M || c >= N) return;
	float s = 0;
	for (int k = 0; k < K; k++) s += A[r * K + k] * B[k * N + c];
	C[r * N + c] = s;
}
`
	ptx, _, err := nv.Compile(src, "cell.cu", "compute_80", "-lineinfo")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{64, MaxN + 88} {
		g := (n + 15) / 16
		req := Request{Kernel: "custom", PTX: ptx, Entry: "acc", Grid: [3]int{g, g, 1}, Block: [3]int{16, 16, 1}, N: n, DType: "float32", GPU: gpumodel.GPUs[0]}
		r, err := Run(context.Background(), req)
		if err != nil {
			t.Fatalf("n=%d: %v", n, err)
		}
		if r.OK || len(r.Notes) != 1 || r.Notes[0].Kind != "uninitialised read" || !strings.HasSuffix(r.Notes[0].Source, "cell.cu:4") {
			t.Errorf("C += at n=%d: ok %v, notes %v; want wrong, with one uninitialised read at cell.cu:4", n, r.OK, r.Notes)
		}
		want := "4-byte read of buffer C at element 0 = row 0, col 0, which no thread has written"
		if r.Sampled { // a run of blocks from a random one: its first block's first read
			want = "which no thread has written"
		}
		if len(r.Notes) == 1 && !strings.Contains(r.Notes[0].Msg, "4-byte read of buffer C at element ") || len(r.Notes) == 1 && !strings.Contains(r.Notes[0].Msg, want) {
			t.Errorf("C += at n=%d: note %q, want it to say %q", n, r.Notes[0].Msg, want)
		}
		req.Entry = "sum"
		if r, err = Run(context.Background(), req); err != nil || !r.OK || len(r.Notes) != 0 {
			t.Errorf("C = at n=%d: ok %v, notes %v, %v", n, r.OK, r.Notes, err)
		}
	}
}

// A sampled launch runs a run of SampledBlocks blocks consecutive in dispatch order (x fastest, then
// y, then z), going on at block 0 past the last: from block (0,0,0) when its trace is wanted, else
// from a start drawn so that every block is run equally often.
func TestSampleIsARunInDispatchOrder(t *testing.T) {
	grid := [3]int{5, 3, 2}
	total := 30
	linear := func(b [3]int) int { return b[0] + grid[0]*(b[1]+grid[1]*b[2]) }
	rng := rand.New(rand.NewPCG(1, 2))
	if got := sample(grid, rng, true, SampledBlocks); len(got) != SampledBlocks || got[0] != [3]int{} || got[7] != [3]int{2, 1, 0} {
		t.Errorf("sample from block 0: %v", got)
	}
	runs := make([]int, total)
	const draws = 30000
	for range draws {
		got := sample(grid, rng, false, SampledBlocks)
		if len(got) != SampledBlocks {
			t.Fatalf("%d blocks, want %d", len(got), SampledBlocks)
		}
		for i, b := range got {
			if i > 0 && linear(b) != (linear(got[i-1])+1)%total {
				t.Fatalf("%v: block %v does not follow %v in dispatch order", got, b, got[i-1])
			}
			runs[linear(b)]++
		}
	}
	for i, c := range runs {
		if want := draws * SampledBlocks / total; math.Abs(float64(c-want)) > 0.1*float64(want) {
			t.Errorf("block %d ran %d times in %d draws, want about %d", i, c, draws, want)
		}
	}
	if got := sample([3]int{3, 1, 1}, rng, false, SampledBlocks); len(got) != 3 {
		t.Errorf("a grid of 3 blocks: sampled %v", got)
	}
}
