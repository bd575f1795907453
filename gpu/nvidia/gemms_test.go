package nvidia

import (
	"slices"
	"strings"
	"testing"

	"github.com/gpuplayground/playground/estimate"
	"github.com/gpuplayground/playground/kernels"
)

// GEMMs is the table of gpu/nvidia/ladder.go, row for row and in its order; a kernel that will run
// on a worker carries the table's estimate, and one that will not costs nothing.
func TestGEMMsComeFromTheTable(t *testing.T) {
	rows := Kernels()
	want := []string{"cublas", "cublas-tf32", "cublas-bf16", "cuda-naive", "cuda-coalesced", "cuda-smem", "cuda-blocktile1d", "cuda-regblock", "cuda-vectorized", "cuda-warptile", "cuda-doublebuf", "cuda-autotuned", "cuda-wmma", "cuda-mma", "cuda-mma-async", "cuda-mma-swizzle", "cuda-mma-warptile",
		"cuda-wgmma", "cuda-wgmma-tma", "cuda-wgmma-ws", "cuda-wgmma-persistent", "cuda-wgmma-multicast"}
	if got, want := HopperUnavailable(100), "runs on an sm_90 GPU only (hopper.cu's compute_90a PTX), and this server's GPU is sm_100: the virtual GPU runs it instead"; got != want {
		t.Errorf("HopperUnavailable(100) = %q, want %q", got, want)
	}
	for _, tt := range []struct {
		reason string
		cc     int
	}{{"", 0}, {"", 80}, {"", 90}, {"", 100}, {"no CUDA device (test)", 90}} {
		reason := tt.reason
		ks := GEMMsOn(reason, tt.cc)
		if got := kernels.Names(ks); got != strings.Join(want, ", ") {
			t.Fatalf("GEMMs(%q) = %s, want %v", reason, got, want)
		}
		for i, k := range ks {
			row := rows[i]
			why := reason // the Hopper rungs run on an sm_90 server's worker only
			if why == "" && row.Arch != "" && tt.cc != 90 {
				why = HopperUnavailable(tt.cc)
			}
			if k.Summary != row.Summary || !k.OnGPU || k.F32 != nil || k.F64 != nil || k.Unavailable != why || k.Remote != (why == "") {
				t.Errorf("GEMMs(%q)[%d] = %+v, from row %+v", reason, i, k, row)
			}
			for _, n := range []int{256, 4096} {
				est, rowEst := k.EstimateSeconds(estimate.Defaults(), n, "float32", 1), row.EstimateSeconds(n, "float32")
				if why != "" && est != 0 {
					t.Errorf("%s unavailable: estimate %g s, want 0", k.Name, est)
				}
				if why == "" && (est != rowEst || est <= 0) {
					t.Errorf("%s at %d: estimate %g s, table %g s", k.Name, n, est, rowEst)
				}
			}
		}
	}
	cublas, _ := kernels.Lookup(GEMMs(""), "cublas")
	if f32, f64 := cublas.EstimateSeconds(estimate.Defaults(), 2048, "float32", 1), cublas.EstimateSeconds(estimate.Defaults(), 2048, "float64", 1); f64 <= f32 {
		t.Errorf("cuBLAS DGEMM estimated at %g s, SGEMM %g s: FP64 should be the slower", f64, f32)
	}
	if !slices.Equal(want, rowNames(rows)) {
		t.Errorf("table order %v", rowNames(rows))
	}
}

func rowNames(rows []Kernel) []string {
	var out []string
	for _, r := range rows {
		out = append(out, r.Name)
	}
	return out
}

// A kernel that cannot run here costs nothing, whatever its rates.
func TestUnavailableCostsNothing(t *testing.T) {
	for _, k := range GEMMs("no CUDA device (test)") {
		if s := k.EstimateSeconds(estimate.Defaults(), 4096, "float32", 1); s != 0 {
			t.Errorf("%s: %g s", k.Name, s)
		}
	}
}
