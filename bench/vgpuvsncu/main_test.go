package main

import (
	"context"
	"math"
	"os"
	"testing"

	"github.com/gpuplayground/playground/emulate"
	"github.com/gpuplayground/playground/kernels/cuda"
	"github.com/gpuplayground/playground/vgpu"
)

// The virtual GPU's global-memory counts for the project's FP32 kernels equal what Nsight Compute
// read from the same kernels (same PTX, same launch shapes) on an H100 on 2026-11-25
// (testdata/h100-ncu-4096.csv, made by bench/gpucheck/run.sh's ncu step; docs/benchmarks.md).
// Requests and load sectors must agree exactly; the hardware's store-sector count is a little below
// the exact one (a few sectors in 10^4), so stores agree within 0.1%. Branch efficiency is 100% on
// both: no branch of these kernels diverges at a multiple of their tiles. At n = 4096 the virtual GPU
// runs two thread blocks and scales: the kernels are uniform over full tiles, so scaling is exact.
func TestGlobalCountsMatchNsightCompute(t *testing.T) {
	f, err := os.Open("testdata/h100-ncu-4096.csv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	hw, err := readNCU(f)
	if err != nil {
		t.Fatal(err)
	}
	src, err := cuda.PTX.ReadFile(cuda.PTXName("matmul.cu", emulate.Arch))
	if err != nil {
		t.Fatal(err)
	}
	mod, err := vgpu.ParseModule(string(src))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"cuda-naive", "cuda-coalesced", "cuda-smem", "cuda-regblock"} {
		k, ok := cuda.LookupKernel(name)
		if !ok {
			t.Fatalf("%s is not in the kernel table", name)
		}
		row, ok := hw[k.LaunchFor(4096, emulate.Arch, "float32").Entry]
		if !ok {
			t.Fatalf("%s: no Nsight Compute row", name)
		}
		c := sampledCounts(t, mod, k.LaunchFor(4096, emulate.Arch, "float32"))
		for _, m := range []struct {
			metric string
			got    float64
			tol    float64
		}{
			{"l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum", float64(c.GlobalLoadRequests), 0},
			{"l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", float64(c.LoadSectors), 0},
			{"l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum", float64(c.StoreSectors), 1e-3},
			// every branch uniform on both (PTX bra against SASS BRA)
			{"smsp__sass_average_branch_targets_threads_uniform.pct", c.BranchEfficiency(), 0},
		} {
			want := num(row[m.metric])
			if want == 0 || math.Abs(m.got-want) > m.tol*want {
				t.Errorf("%s %s: virtual GPU %.0f, Nsight Compute %.0f", name, m.metric, m.got, want)
			}
		}
	}
}

// sampledCounts launches l in the virtual GPU on zero inputs (the counts of these kernels do not
// depend on the values), running two thread blocks, and returns the counts scaled to the grid.
func sampledCounts(t *testing.T, mod *vgpu.Module, l cuda.Launch) vgpu.Counts {
	t.Helper()
	a, b, c := vgpu.NewBuffer("A", 4*l.N*l.N), vgpu.NewBuffer("B", 4*l.N*l.N), vgpu.NewBuffer("C", 4*l.N*l.N)
	n := vgpu.S32(int32(l.N))
	cnt, err := vgpu.Launch(context.Background(), mod, l.Entry, vgpu.LaunchConfig{Grid: l.Grid, Block: l.Block,
		Only:    [][3]int{{0, 0, 0}, {l.Grid[0] - 1, l.Grid[1] - 1, 0}},
		Params:  []vgpu.Arg{vgpu.Ptr(a), vgpu.Ptr(b), vgpu.Ptr(c), n, n, n},
		Buffers: []*vgpu.Buffer{a, b, c}})
	if err != nil {
		t.Fatalf("%s: %v", l.Entry, err)
	}
	return cnt.Scaled()
}

func TestReadNCUScalesUnits(t *testing.T) {
	if got, want := scale("1,500", "usecond"), "1500000"; got != want {
		t.Errorf("scale(1,500 usecond) = %s, want %s", got, want)
	}
	if got, want := scale("12", "byte"), "12"; got != want {
		t.Errorf("scale(12 byte) = %s, want %s", got, want)
	}
}
