package cellstest

import (
	"context"
	"errors"
	"fmt"

	"github.com/gpuplayground/playground/gpu"
	"github.com/gpuplayground/playground/gpu/nvidia"
)

// Disassemble is Show SASS's compile in this process, unconfined (tests only): src compiled with
// NVRTC to compute_<arch> PTX ("": compute_80, or sm's where older) with line information, then
// ptxas -v -lineinfo and nvdisasm -g for sm_<sm> (sm_<sm>a for compute_<sm>a PTX;
// gpu.Machine.Disassemble does the same in a confined worker). Without ptxas or nvdisasm
// the SASS is nil and SASSError says why (SASSTools tells a test beforehand).
func (g NoGPU) Disassemble(ctx context.Context, src, name, arch string, sm int) (gpu.Compiled, error) {
	if g.NVRTC == nil {
		return gpu.Compiled{}, errors.New("no NVRTC")
	}
	if arch == "" {
		arch = fmt.Sprint(min(80, sm))
	}
	ptx, _, err := g.NVRTC.Compile(src, name, "compute_"+arch, "--generate-line-info")
	if err != nil {
		return gpu.Compiled{}, err
	}
	out := gpu.Compiled{PTX: ptx}
	px, nvdisasm, err := SASSTools()
	if err != nil {
		out.SASSError = err.Error()
		return out, nil
	}
	s, res, err := px.Disassemble(ctx, ptx, sm, nvdisasm)
	out.Resources = res
	if err != nil {
		out.SASSError = err.Error()
		return out, nil
	}
	out.SASS = &s
	return out, nil
}

// SASSTools are this machine's ptxas and nvdisasm, or why one is missing.
func SASSTools() (*nvidia.Ptxas, string, error) {
	px, err := nvidia.FindPtxas()
	if err != nil {
		return nil, "", err
	}
	nvdisasm := nvidia.LookNvdisasm()
	if nvdisasm == "" {
		return nil, "", fmt.Errorf("nvdisasm not found (tried %v)", nvidia.NvdisasmPaths())
	}
	return px, nvdisasm, nil
}
