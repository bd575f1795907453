package cellstest

import (
	"context"
	"errors"
	"sync"

	"github.com/gpuplayground/playground/gpu"
	"github.com/gpuplayground/playground/gpu/nvidia"
	"github.com/gpuplayground/playground/harness"
	"github.com/gpuplayground/playground/vgpurun"
)

// NoGPU is a cells.GPU for tests: a server without a CUDA device, whose CUDA compiles go to NVRTC
// in this process when NVRTC is set (compute_80), and fail without it. With Memo set, a source
// compiled before is not compiled again; with Emulations set, a launch of the virtual GPU its cells
// ran before is not run again (it is a vgpurun.Emulator).
type NoGPU struct {
	NVRTC      *nvidia.NVRTC
	Memo       *CompileMemo
	Emulations *EmulationMemo
}

// CompileMemo holds NoGPU's compiles by source and name (NVRTC makes the same PTX of the same
// source each time): a cell's run and its Show PTX, or a lesson cell that several tests run,
// compile once. Its zero value is empty and ready; it is safe for concurrent use.
type CompileMemo struct {
	mu   sync.Mutex
	done map[[3]string]memoCompile
}

// memoCompile is one compile's PTX and error.
type memoCompile struct {
	ptx string
	err error
}

func (NoGPU) Unavailable() string    { return "no CUDA device: libcuda.so.1 not found (test)" }
func (NoGPU) Device() *nvidia.Device { return nil }
func (NoGPU) Arch() int              { return 80 }

// Measure fails: there is no GPU to time a kernel on.
func (NoGPU) Measure(context.Context, gpu.Request, func(int)) (harness.Result, error) {
	return harness.Result{}, errors.New("no GPU here")
}

// Emulate runs req in the virtual GPU (vgpurun.Run), through g.Emulations where it is set.
func (g NoGPU) Emulate(ctx context.Context, req vgpurun.Request) (vgpurun.Result, error) {
	if g.Emulations == nil {
		return vgpurun.Run(ctx, req)
	}
	return g.Emulations.Emulate(ctx, req)
}

// Compile compiles src to compute_<arch> PTX ("": compute_80) with NVRTC, or fails when the test
// has none; with a Memo, a src, name and arch compiled before give what they gave then.
func (g NoGPU) Compile(ctx context.Context, src, name, arch string) (string, error) {
	if g.NVRTC == nil {
		return "", errors.New("no NVRTC")
	}
	if g.Memo == nil {
		return g.compile(ctx, src, name, arch)
	}
	g.Memo.mu.Lock()
	defer g.Memo.mu.Unlock()
	key := [3]string{src, name, arch}
	c, ok := g.Memo.done[key]
	if !ok {
		c.ptx, c.err = g.compile(ctx, src, name, arch)
		if g.Memo.done == nil {
			g.Memo.done = map[[3]string]memoCompile{}
		}
		g.Memo.done[key] = c
	}
	return c.ptx, c.err
}

func (g NoGPU) compile(ctx context.Context, src, name, arch string) (string, error) {
	if arch == "" {
		return nvidia.CompileArch(g.NVRTC, src, name, 80)
	}
	return nvidia.CompileFor(ctx, g.NVRTC, nil, nvidia.FindHeaders(g.NVRTC), src, name, arch)
}
