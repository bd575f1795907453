package cuda

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/gpuplayground/playground/cells"
	"github.com/gpuplayground/playground/cells/cellstest"
	kcuda "github.com/gpuplayground/playground/gpu/nvidia"
	"github.com/gpuplayground/playground/harness"
	"github.com/gpuplayground/playground/sim/datasheet"
	"github.com/gpuplayground/playground/vgpu/emulate"
)

// lineInfoGPU compiles as the server does: with line information, so the PTX has .loc lines.
type lineInfoGPU struct{ testGPU }

func (g *lineInfoGPU) Compile(ctx context.Context, src, name string) (string, error) {
	return kcuda.CompileWith(ctx, g.nv, nil, src, name, 80)
}

// emulated compiles cell's kernel as the server does and runs it once in the virtual GPU at n.
func emulated(t *testing.T, cell string, n int) (Spec, string, emulate.Result, *lineInfoGPU) {
	t.Helper()
	nv, err := kcuda.LoadNVRTC()
	if err != nil {
		t.Skipf("skipping: no NVRTC (%v)", err)
	}
	g := &lineInfoGPU{testGPU{nv: nv}}
	spec, err := Parse(cell, gpuAvailable(), harness.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	ptx, err := compile(context.Background(), g, spec)
	if err != nil {
		t.Fatal(err)
	}
	req, err := spec.request(ptx, n)
	if err != nil {
		t.Fatal(err)
	}
	req.N, req.DType, req.GPU = n, spec.DType, datasheet.Or(spec.GPU)
	res, err := emulate.Run(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	return spec, ptx, res, g
}

// showPTXOf runs cell's Show PTX action as a server without a GPU does.
func showPTXOf(t *testing.T, cell string) *cellstest.Recorder {
	t.Helper()
	nv, err := kcuda.LoadNVRTC()
	if err != nil {
		t.Skipf("skipping: no NVRTC (%v)", err)
	}
	g := &lineInfoGPU{testGPU{nv: nv}}
	spec, err := Parse(cell, gpuAvailable(), harness.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	rec := &cellstest.Recorder{}
	if err := (&showPTX{env: cells.Env{Kernels: gpuAvailable(), Limits: harness.DefaultLimits(), GPU: g}, spec: spec}).Run(context.Background(), rec); err != nil {
		t.Fatal(err)
	}
	return rec
}

const conflictingTransposeCell = `kernel: k
problem: transpose
block: [32, 8]
grid: ["ceil(n/32)", "ceil(n/32)"]
sizes: [64]
---
#define T 32
extern "C" __global__ void k(const float* in, float* out, int rows, int cols) {
    __shared__ float tile[T][T];  // not padded: a column of the tile is in one bank
    int x = blockIdx.x * T + threadIdx.x, y = blockIdx.y * T + threadIdx.y;
    for (int j = 0; j < T; j += 8)
        if (x < cols && y + j < rows) tile[threadIdx.y + j][threadIdx.x] = in[(y + j) * cols + x];
    __syncthreads();
    x = blockIdx.y * T + threadIdx.x; y = blockIdx.x * T + threadIdx.y;
    for (int j = 0; j < T; j += 8)
        if (x < rows && y + j < cols) out[(y + j) * rows + x] = tile[threadIdx.x][threadIdx.y + j];
}
`

func TestShowSharesPrint(t *testing.T) {
	for _, cell := range []string{conflictingTransposeCell} {
		rec := showPTXOf(t, cell)
		for _, x := range rec.Texts {
			t.Log(x.Title + "\n" + x.Body)
		}
		for _, x := range rec.Notes {
			t.Log(x.Level, x.Message)
		}
		for _, x := range rec.Tables {
			t.Log(x.Caption, x.Columns)
		}
		for _, x := range rec.Rows {
			t.Log(x.Values)
		}
	}
}

var _ = math.Abs
var _ = strings.Contains
