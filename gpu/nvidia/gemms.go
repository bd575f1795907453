package nvidia

import (
	"github.com/gpuplayground/playground/kernels"
)

// GEMMs lists the GPU GEMM kernels a cell may name, in ladder order, one per row of the GPU kernel table
// (Kernels, gpu/nvidia/ladder.go): cuBLAS SGEMM/DGEMM, cuBLAS on tensor cores (TF32, and BF16
// inputs with FP32 accumulation), and the project's own CUDA kernels from gpu/nvidia/src/matmul.cu.
// With a reason they are Unavailable and cost nothing; without one they are Remote, with the
// table's run-time estimate, but for the Hopper rungs (rows with an Arch), which are Unavailable
// with HopperUnavailable: the worker does not launch them yet, and cells emulate them instead.
func GEMMs(reason string) []kernels.Kernel {
	var ks []kernels.Kernel
	for _, row := range Kernels() {
		why := reason
		if why == "" && row.Arch != "" {
			why = HopperUnavailable
		}
		k := kernels.Kernel{Name: row.Name, Summary: row.Summary, Unavailable: why, Remote: why == "", OnGPU: true, DTypes: row.DTypes}
		if why == "" {
			k.Estimate = row.EstimateSeconds
		}
		ks = append(ks, k)
	}
	return ks
}

// HopperUnavailable is why a GPU server does not measure the Hopper rungs: its worker loads
// matmul.cu's PTX and makes no tensor maps (gpu/run.go refuses them too).
const HopperUnavailable = "runs in the virtual GPU only for now: the GPU worker does not yet load hopper.cu's compute_90a PTX or make tensor maps"
