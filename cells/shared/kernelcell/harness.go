package kernelcell

import (
	"context"

	"github.com/gpuplayground/playground/cells"
	"github.com/gpuplayground/playground/gpu"
	"github.com/gpuplayground/playground/harness"
)

// Harness is the timing harness's view of env: its kernels, with GPU kernels (Remote) measured by
// env.GPU's worker, and its noise check.
func Harness(env cells.Env) harness.Env {
	return harness.Env{Kernels: env.Kernels, Remote: func(ctx context.Context, kernel string, n int, s harness.Spec, progress func(int)) (harness.Result, error) {
		return env.GPU.Measure(ctx, gpu.Request{Kernel: kernel, N: n, DType: s.DType, Repeats: s.Repeats, Transfers: s.Transfers}, progress)
	}, Noise: env.Noise}
}
