package kernelcell

import (
	"context"
	"strings"
	"testing"

	"github.com/gpuplayground/playground/cells/cellstest"
	"github.com/gpuplayground/playground/gpu/nvidia"
	"github.com/gpuplayground/playground/gpumodel"
	"github.com/gpuplayground/playground/vgpurun"
)

// A learner's kernel that reads C before writing it gets its row (WRONG: C starts poisoned) and a
// warning naming the read's line, rewritten by lines as the cell's own.
func TestEmulateWarnsOfUninitialisedReads(t *testing.T) {
	nv, err := nvidia.LoadNVRTC()
	if err != nil {
		t.Skipf("no NVRTC: %v", err)
	}
	const src = `extern "C" __global__ void acc(const float *A, const float *B, float *C, int M, int N, int K) {
	int r = blockIdx.y * 16 + threadIdx.y, c = blockIdx.x * 16 + threadIdx.x;
	if (r >= M || c >= N) return;
	for (int k = 0; k < K; k++) C[r * N + c] += A[r * K + k] * B[k * N + c];
}
`
	ptx, _, err := nv.Compile(src, "cell.cu", "compute_80", "-lineinfo")
	if err != nil {
		t.Fatal(err)
	}
	rec := &cellstest.Recorder{}
	custom := func(ctx context.Context, n int, dtype string, g gpumodel.GPU) (vgpurun.Result, error) {
		return vgpurun.Run(ctx, vgpurun.Request{Kernel: "custom", PTX: ptx, Entry: "acc", Grid: [3]int{2, 2, 1}, Block: [3]int{16, 16, 1},
			N: n, DType: dtype, GPU: g})
	}
	lines := func(s string) string { return strings.ReplaceAll(s, "cell.cu:4", "line 14") }
	res, err := Emulate(context.Background(), rec, nil, nil, []int{32}, "float32", gpumodel.GPUs[0], custom, lines)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 1 || res[0].OK || len(rec.RowsOf(EmulatedTableID)) != 1 {
		t.Fatalf("results %+v, want one wrong row", res)
	}
	var warned bool
	for _, n := range rec.Notes {
		if n.Level == "warning" && strings.Contains(n.Message, "uninitialised read") && strings.Contains(n.Message, "line 14") {
			warned = true
		}
	}
	if !warned {
		t.Errorf("notes %+v, want a warning of the uninitialised read at line 14", rec.Notes)
	}
}
