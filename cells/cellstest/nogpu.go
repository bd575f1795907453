package cellstest

import (
	"context"
	"errors"

	"github.com/gpuplayground/playground/gpu"
	"github.com/gpuplayground/playground/gpu/nvidia"
	"github.com/gpuplayground/playground/harness"
)

// NoGPU is a cells.GPU for tests: a server without a CUDA device, whose CUDA compiles go to NVRTC
// in this process when NVRTC is set (compute_80), and fail without it.
type NoGPU struct{ NVRTC *nvidia.NVRTC }

func (NoGPU) Unavailable() string    { return "no CUDA device: libcuda.so.1 not found (test)" }
func (NoGPU) Device() *nvidia.Device { return nil }
func (NoGPU) Arch() int              { return 80 }

// Measure fails: there is no GPU to time a kernel on.
func (NoGPU) Measure(context.Context, gpu.Request, func(int)) (harness.Result, error) {
	return harness.Result{}, errors.New("no GPU here")
}

// Compile compiles src to compute_<arch> PTX ("": compute_80) with NVRTC, or fails when the test
// has none.
func (g NoGPU) Compile(ctx context.Context, src, name, arch string) (string, error) {
	if g.NVRTC == nil {
		return "", errors.New("no NVRTC")
	}
	if arch == "" {
		return nvidia.CompileArch(g.NVRTC, src, name, 80)
	}
	return nvidia.CompileFor(ctx, g.NVRTC, nil, nvidia.FindHeaders(g.NVRTC), src, name, arch)
}
