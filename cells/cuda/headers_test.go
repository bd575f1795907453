package cuda

import (
	"context"
	"strings"
	"testing"

	"github.com/gpuplayground/playground/cells"
	"github.com/gpuplayground/playground/cells/cellstest"
	kcuda "github.com/gpuplayground/playground/gpu/nvidia"
	"github.com/gpuplayground/playground/harness"
)

// noHeadersGPU compiles with NVRTC as a server without CUDA's headers does.
type noHeadersGPU struct{ testGPU }

func (g *noHeadersGPU) Compile(ctx context.Context, src, name, arch string) (string, error) {
	return kcuda.CompileFor(ctx, g.nv, nil, "", src, name, archOr(arch, "80"))
}

// A cell that includes a CUDA header on a server without them says, on the cell's #include line,
// what to install: one line, not the compiler's "cannot open".
func TestMissingHeadersNoteOnTheCellsLine(t *testing.T) {
	nv, err := kcuda.LoadNVRTC()
	if err != nil {
		t.Skipf("skipping: no NVRTC (%v)", err)
	}
	cell := "kernel: k\nproblem: transpose\nblock: [32, 8]\ngrid: [\"ceil(n/32)\", \"ceil(n/32)\"]\nsizes: [40]\n---\n" +
		"#include <cuda_fp16.h>\n__global__ void k(const float* in, float* out, int n) { out[0] = __half2float(__float2half(in[0])); }\n"
	spec, err := Parse(cell, gpuAvailable(), harness.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	_, err = (&run{env: cells.Env{GPU: &noHeadersGPU{testGPU{nv: nv}}}, spec: spec}).compile(context.Background())
	want := "line 7: error: cuda_fp16.h: " + kcuda.MissingHeadersNote
	if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "open source file") {
		t.Errorf("got %v, want %q", err, want)
	}
}

// deviceOnlyGPU compiles as the compile worker does: CompileWithHeaders with CUDA's headers where
// the machine has them, host code left out.
type deviceOnlyGPU struct{ testGPU }

func (g *deviceOnlyGPU) Compile(ctx context.Context, src, name, arch string) (string, error) {
	return kcuda.CompileFor(ctx, g.nv, nil, kcuda.FindHeaders(g.nv), src, name, archOr(arch, "80"))
}

// A kernel as a repository ships it (its #include lines, one commented out, a comment that says
// "include", host code with main and <<<…>>>, no extern "C") runs in a cell by the name written.
func TestRepositoryKernelRunsInACell(t *testing.T) {
	nv, err := kcuda.LoadNVRTC()
	if err != nil {
		t.Skipf("skipping: no NVRTC (%v)", err)
	}
	cell := "kernel: transpose_naive\nproblem: transpose\nblock: [32, 8]\ngrid: [\"ceil(n/32)\", \"ceil(n/8)\"]\nsizes: [40]\n---\n" + `#include <stdio.h>
#include <cuda_runtime.h>
// #include <cublas_v2.h>

// We include no halo cells: each thread moves one element.
__global__ void transpose_naive(const float *in, float *out, int rows, int cols) {
  int x = blockIdx.x * 32 + threadIdx.x, y = blockIdx.y * 8 + threadIdx.y;
  if (x < cols && y < rows) out[x * rows + y] = in[y * cols + x];
}

int main() {
  float *d_in, *d_out;
  cudaMalloc(&d_in, 40 * 40 * sizeof(float));
  cudaMalloc(&d_out, 40 * 40 * sizeof(float));
  transpose_naive<<<dim3(2, 5), dim3(32, 8)>>>(d_in, d_out, 40, 40);
  cudaDeviceSynchronize();
  printf("done\n");
  return 0;
}
`
	g := &deviceOnlyGPU{testGPU{nv: nv}}
	k := New(cells.Env{Kernels: gpuAvailable(), Limits: harness.DefaultLimits(), GPU: g})
	r, err := k.Parse(cells.Cell{Source: cell})
	if err != nil {
		t.Fatal(err)
	}
	rec := &cellstest.Recorder{}
	if err := r.Run(context.Background(), rec); err != nil {
		t.Fatal(err)
	}
	rows := rec.RowsOf("emulated")
	if len(rows) != 1 || rows[0].Bad || rows[0].Values[5] != "ok" {
		t.Errorf("emulated rows %+v, want one checked ok", rows)
	}
}
