package nvidia

import (
	"fmt"

	"github.com/gpuplayground/playground/kernels"
)

// GEMMs is GEMMsOn(reason, 0): the GPU GEMM kernels of a server whose GPU's compute capability is
// not known, where the Hopper rungs are Unavailable.
func GEMMs(reason string) []kernels.Kernel { return GEMMsOn(reason, 0) }

// GEMMsOn lists the GPU GEMM kernels a cell may name, in ladder order, one per row of the GPU kernel
// table (Kernels, gpu/nvidia/ladder.go): cuBLAS SGEMM/DGEMM, cuBLAS on tensor cores (TF32, and BF16
// inputs with FP32 accumulation), the project's own CUDA kernels from gpu/nvidia/src/matmul.cu and
// the Hopper rungs of src/hopper.cu. With a reason they are Unavailable and cost nothing; without one
// they are Remote, with the table's run-time estimate, but for the Hopper rungs (rows with an Arch)
// on a GPU other than compute capability cc = 90 (major×10 + minor; 0: unknown), where they are
// Unavailable with HopperUnavailable(cc), and cells emulate them instead: their compute_90a PTX
// runs on sm_90 only, and the worker refuses them elsewhere.
func GEMMsOn(reason string, cc int) []kernels.Kernel {
	var ks []kernels.Kernel
	for _, row := range Kernels() {
		why := reason
		if why == "" && row.Arch != "" && cc != 90 {
			why = HopperUnavailable(cc)
		}
		k := kernels.Kernel{Name: row.Name, Summary: row.Summary, Unavailable: why, Remote: why == "", OnGPU: true, DTypes: row.DTypes}
		if why == "" {
			k.Estimate = row.EstimateSeconds
		}
		ks = append(ks, k)
	}
	return ks
}

// HopperUnavailable is why a GPU server of compute capability cc (0: unknown) does not measure the
// Hopper rungs: hopper.cu's compute_90a PTX runs on sm_90 only.
func HopperUnavailable(cc int) string {
	gpu := "this server's GPU is not known to be sm_90"
	if cc > 0 {
		gpu = fmt.Sprintf("this server's GPU is sm_%d", cc)
	}
	return "runs on an sm_90 GPU only (hopper.cu's compute_90a PTX), and " + gpu + ": the virtual GPU runs it instead"
}
