package cuda

import (
	"context"
	"strings"
	"testing"

	kcuda "github.com/gpuplayground/playground/gpu/nvidia"
	"github.com/gpuplayground/playground/harness"
)

// noHeadersGPU compiles with NVRTC as a server without CUDA's headers does.
type noHeadersGPU struct{ testGPU }

func (g *noHeadersGPU) Compile(ctx context.Context, src, name string) (string, error) {
	return kcuda.CompileWithHeaders(ctx, g.nv, nil, "", src, name, 80)
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
	_, err = compile(context.Background(), &noHeadersGPU{testGPU{nv: nv}}, spec)
	want := "line 7: error: cuda_fp16.h: " + kcuda.MissingHeadersNote
	if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "open source file") {
		t.Errorf("got %v, want %q", err, want)
	}
}
