package kernels

import (
	"slices"
	"strings"
	"testing"

	"github.com/gpuplayground/playground/gpu/nvidia"
)

// GPU is the table of gpu/nvidia/ladder.go, row for row and in its order; a kernel that will run
// on a worker carries the table's estimate, and one that will not costs nothing.
func TestGPUKernelsComeFromTheTable(t *testing.T) {
	rows := nvidia.Kernels()
	want := []string{"cublas", "cublas-tf32", "cublas-bf16", "cuda-naive", "cuda-coalesced", "cuda-smem", "cuda-blocktile1d", "cuda-regblock", "cuda-vectorized", "cuda-warptile", "cuda-wmma"}
	for _, reason := range []string{"", "no CUDA device (test)"} {
		ks := GPU(reason)
		if got := Names(ks); got != strings.Join(want, ", ") {
			t.Fatalf("GPU(%q) = %s, want %v", reason, got, want)
		}
		for i, k := range ks {
			row := rows[i]
			if k.Summary != row.Summary || !k.OnGPU || k.F32 != nil || k.F64 != nil || k.Unavailable != reason || k.Remote != (reason == "") {
				t.Errorf("GPU(%q)[%d] = %+v, from row %+v", reason, i, k, row)
			}
			for _, n := range []int{256, 4096} {
				est, rowEst := k.EstimateSeconds(n, "float32", 1), row.EstimateSeconds(n, "float32")
				if reason != "" && est != 0 {
					t.Errorf("%s unavailable: estimate %g s, want 0", k.Name, est)
				}
				if reason == "" && (est != rowEst || est <= 0) {
					t.Errorf("%s at %d: estimate %g s, table %g s", k.Name, n, est, rowEst)
				}
			}
		}
	}
	cublas, _ := Lookup(GPU(""), "cublas")
	if f32, f64 := cublas.EstimateSeconds(2048, "float32", 1), cublas.EstimateSeconds(2048, "float64", 1); f64 <= f32 {
		t.Errorf("cuBLAS DGEMM estimated at %g s, SGEMM %g s: FP64 should be the slower", f64, f32)
	}
	if !slices.Equal(want, namesOf(rows)) {
		t.Errorf("table order %v", namesOf(rows))
	}
}

func namesOf(rows []nvidia.Kernel) []string {
	var out []string
	for _, r := range rows {
		out = append(out, r.Name)
	}
	return out
}
