package vgpurun

import (
	"strings"

	"github.com/gpuplayground/playground/gpu/nvidia"
)

// Ladder names the GPU kernel table's own kernels (gpu/nvidia/ladder.go), which the virtual GPU runs
// from matmul.cu's PTX, without their "cuda-" prefix: a simt cell's kernel names and the keys of
// estimate.Rates.SIMT.
func Ladder() []string {
	var out []string
	for _, row := range nvidia.Kernels() {
		if row.Entry != "" {
			out = append(out, strings.TrimPrefix(row.Name, "cuda-"))
		}
	}
	return out
}
