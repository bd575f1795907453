package nvidia

import (
	"github.com/gpuplayground/playground/kernels"
)

// GEMMs lists the GPU GEMM kernels a cell may name, in ladder order, one per row of the GPU kernel table
// (Kernels, gpu/nvidia/ladder.go): cuBLAS SGEMM/DGEMM, cuBLAS on tensor cores (TF32, and BF16
// inputs with FP32 accumulation), and the project's own CUDA kernels from gpu/nvidia/src/matmul.cu.
// With a reason they are Unavailable and cost nothing; without one they are Remote, with the
// table's run-time estimate.
func GEMMs(reason string) []kernels.Kernel {
	var ks []kernels.Kernel
	for _, row := range Kernels() {
		k := kernels.Kernel{Name: row.Name, Summary: row.Summary, Unavailable: reason, Remote: reason == "", OnGPU: true, DTypes: row.DTypes}
		if reason == "" {
			k.Estimate = row.EstimateSeconds
		}
		ks = append(ks, k)
	}
	return ks
}
