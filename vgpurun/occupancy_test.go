package vgpurun

import (
	"context"
	"encoding/csv"
	"os"
	"slices"
	"strconv"
	"testing"

	"github.com/gpuplayground/playground/gpu/nvidia"
	"github.com/gpuplayground/playground/gpumodel"
	"github.com/gpuplayground/playground/vgpu"
)

// ncuRegisters reads, from the kept Nsight Compute CSVs of the H100 and of the H200 (the same GH100
// SM and sm_90 ptxas), each kernel's registers per thread and theoretical occupancy in percent, by
// the kernel's name as Nsight Compute gives it.
func ncuRegisters(t *testing.T) (regs map[string]int, pct map[string]float64) {
	t.Helper()
	regs, pct = map[string]int{}, map[string]float64{}
	// the first ladder's kernels, then the rungs added later (bench/gpucheck/run.sh's newrungs step),
	// then the tensor-core rungs, first run on an H200 (2026-11-26)
	for _, file := range []string{"h100-ncu-4096.csv", "h100-ncu-newrungs-4096.csv", "h200-ncu-newrungs-4096.csv"} {
		f, err := os.Open("../bench/vgpuvsncu/testdata/" + file)
		if err != nil {
			t.Fatal(err)
		}
		recs, err := csv.NewReader(f).ReadAll()
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		name, r, p := slices.Index(recs[0], "Kernel Name"), slices.Index(recs[0], "launch__registers_per_thread"), slices.Index(recs[0], "sm__maximum_warps_per_active_cycle_pct")
		if name < 0 || r < 0 || p < 0 {
			t.Fatalf("%s: columns missing from %v", file, recs[0])
		}
		for _, rec := range recs[2:] {
			n, err1 := strconv.Atoi(rec[r])
			x, err2 := strconv.ParseFloat(rec[p], 64)
			if err1 != nil || err2 != nil {
				t.Fatalf("%s: %v: %v, %v", file, rec, err1, err2)
			}
			regs[rec[name]], pct[rec[name]] = n, x
		}
	}
	return regs, pct
}

// The table's kernels on the H100: the registers ptxas allocates for sm_90 (nvidia.RungResources;
// equal to what Nsight Compute measured up to the allocation unit of 8, and known for the kernels not
// yet measured), the static shared memory of their PTX and their launch shapes give Nsight Compute's
// theoretical occupancy, shown with the resource that limits it; the PTX's declared registers are
// several times the measured ones.
func TestOccupancyOfOwnKernels(t *testing.T) {
	regs, pct := ncuRegisters(t)
	want := map[string]string{"cuda-naive": "100% (warps and registers)", "cuda-coalesced": "100% (warps and registers)",
		"cuda-smem": "100% (warps and registers)", "cuda-regblock": "25% (registers)", "cuda-wmma": "75% (registers)",
		"cuda-blocktile1d": "50% (registers)", "cuda-vectorized": "25% (registers)", "cuda-warptile": "25% (registers)",
		// measured on an H200: 121–128 registers for 256 threads allow two blocks; the warp tiles of
		// 64×64 (128 FP32 accumulators a thread) take 236, one block
		"cuda-mma": "25% (registers)", "cuda-mma-async": "25% (registers)",
		"cuda-mma-swizzle": "25% (registers)", "cuda-mma-warptile": "12.5% (registers)",
		// ptxas for sm_90a, with the rows' dynamic shared memory: 4 stages of 32 KiB hold one block
		// of 8 warps, 4 of 48 KiB one of 12 warps at 168 registers
		"cuda-wgmma": "25% (registers)", "cuda-wgmma-tma": "12.5% (shared memory)",
		"cuda-wgmma-ws": "18.8% (registers and shared memory)", "cuda-wgmma-persistent": "18.8% (registers and shared memory)",
		// not measured: ptxas's 127 registers for sm_90 (rungs.gen.go), two blocks of 256 threads;
		// cuda-autotuned is the tile search's pick on the H100, the 128×256 tiles since 2026-11-29
		// (186 registers, one block)
		"cuda-doublebuf": "25% (registers)", "cuda-autotuned": "12.5% (registers)",
		"cuda-wgmma-multicast": "18.8% (registers and shared memory)"}
	for _, row := range nvidia.Kernels() {
		if row.Entry == "" {
			continue
		}
		mod, cc, err := rowModule(row)
		if err != nil {
			t.Fatal(err)
		}
		l := row.LaunchFor(64, cc, "float32")
		got := theoretical(mod, l.Entry, true, l.Block, row.SharedBytes, gpumodel.GPUs[0])
		if got.Text != want[row.Name] {
			t.Errorf("%s: got %q, want %q", row.Name, got.Text, want[row.Name])
		}
		measured, ok := regs[l.Entry]
		if got.Registers == 0 {
			t.Errorf("%s: registers unknown (%q); ptxas reported them (nvidia.RungResources)", row.Name, got.Text)
			continue
		}
		if row.Registers == 0 {
			if ok {
				t.Errorf("%s: Nsight Compute measured %d registers, the table has none", row.Name, measured)
			}
			continue
		}
		// ptxas here and the driver's there are other releases: equal in the allocation unit of 8
		// registers a thread, which is what the occupancy calculator counts
		if !ok || (got.Registers+7)/8 != (measured+7)/8 || 100*got.Result.Occupancy != pct[l.Entry] {
			t.Errorf("%s: %d registers, %g%%; Nsight Compute measured %d (found %v), %g%%", row.Name, got.Registers, 100*got.Result.Occupancy, measured, ok, pct[l.Entry])
		}
		if got.Declared < 3*got.Registers {
			t.Errorf("%s: the PTX declares %d registers, under 3× the %d allocated", row.Name, got.Declared, got.Registers)
		}
		t.Logf("%s: %d declared, %d measured, %d B static shared, %s", row.Name, got.Declared, got.Registers, got.SharedBytes, got.Text)
	}
	// Run fills it in (the emulated table's row shows it: cells/shared/kernelcell)
	r, err := Run(context.Background(), Request{Kernel: "cuda-regblock", N: 64, DType: "float32", GPU: gpumodel.GPUs[0]})
	if err != nil || r.Occupancy.Text != "25% (registers)" {
		t.Errorf("cuda-regblock's occupancy: %q, %v; want 25%% (registers)", r.Occupancy.Text, err)
	}
}

// A learner's kernel's registers are unknown: its occupancy is the bound without them, or a range
// down to the most registers its directives allow.
func TestOccupancyOfLearnersKernel(t *testing.T) {
	const head = ".version 7.8\n.target sm_80\n.address_size 64\n"
	kernel := func(directives, body string) string {
		return head + ".visible .entry k()\n" + directives + "{\n\t.reg .b32 %r<4>;\n" + body + "\tret;\n}\n"
	}
	h100 := gpumodel.GPUs[0]
	for _, c := range []struct {
		name, ptx string
		block     [3]int
		gpu       gpumodel.GPU
		want      string
	}{
		{"plain", kernel("", ""), [3]int{32, 8, 1}, h100, "≤ 100% (warps; registers unknown)"},
		{".maxnreg", kernel(".maxnreg 64\n", ""), [3]int{256, 1, 1}, h100, "50–100% (warps; registers ≤ 64: .maxnreg)"},
		{"__launch_bounds__(256, 2)", kernel(".maxntid 256, 1, 1\n.minnctapersm 2\n", ""), [3]int{256, 1, 1}, h100, "25–100% (warps; registers ≤ 128: .minnctapersm)"},
		{"48 KiB static shared", kernel("", "\t.shared .align 4 .b8 s[49152];\n"), [3]int{128, 1, 1}, h100, "≤ 25% (shared memory; registers unknown)"},
		{"a T4's 32 warps", kernel("", ""), [3]int{1024, 1, 1}, gpumodel.GPUs[2], "≤ 100% (warps; registers unknown)"},
		{"a T4's 64 KiB", kernel("", "\t.shared .align 4 .b8 s[49152];\n"), [3]int{128, 1, 1}, gpumodel.GPUs[2], "≤ 12.5% (shared memory; registers unknown)"},
		{"a GPU without a compute capability", kernel("", ""), [3]int{32, 1, 1}, gpumodel.GPU{Name: "X"}, "– (no limits for X)"},
	} {
		m, err := vgpu.ParseModule(c.ptx)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got := theoretical(m, "k", false, c.block, 0, c.gpu); got.Text != c.want || got.Registers != 0 {
			t.Errorf("%s: got %q (%d registers), want %q", c.name, got.Text, got.Registers, c.want)
		}
	}
	// the table's PTX run as a learner's: no measured registers for it
	src, err := nvidia.PTX.ReadFile(nvidia.PTXName("matmul.cu", Arch))
	if err != nil {
		t.Fatal(err)
	}
	r, err := Run(context.Background(), Request{Kernel: "custom", PTX: string(src), Entry: "cuda_smem", Grid: [3]int{2, 2, 1}, Block: [3]int{32, 32, 1}, N: 64, DType: "float32", GPU: h100})
	if err != nil || r.Occupancy.Text != "≤ 100% (warps; registers unknown)" {
		t.Errorf("custom cuda_smem: %q, %v", r.Occupancy.Text, err)
	}
	// with shared_bytes of dynamic shared memory on top of its 8 KiB static: 49 KiB a block with the
	// reserve, 4 blocks of 4 warps in 228 KiB
	r, err = Run(context.Background(), Request{Kernel: "custom", PTX: string(src), Entry: "cuda_smem", Grid: [3]int{2, 2, 1}, Block: [3]int{32, 4, 1}, SharedBytes: 40 << 10, N: 64, DType: "float32", GPU: h100})
	if err != nil || r.Occupancy.Text != "≤ 25% (shared memory; registers unknown)" || r.Occupancy.SharedBytes != 48<<10 {
		t.Errorf("custom cuda_smem with 40 KiB dynamic: %q (%d B), %v", r.Occupancy.Text, r.Occupancy.SharedBytes, err)
	}
}

// Each datasheet GPU's occupancy of the table's kernels uses the registers ptxas allocates for that
// GPU's architecture (a T4's sm_75 gives cuda_naive 49, where the H100 measured 32), never "unknown".
func TestOccupancyUsesPtxasPerArchitecture(t *testing.T) {
	checked := 0
	for _, g := range gpumodel.GPUs {
		for _, row := range nvidia.Kernels() {
			if row.Entry == "" {
				continue
			}
			r, ok := nvidia.RungResources(row.Entry, g.CC)
			if !ok {
				continue
			}
			mod, cc, err := rowModule(row)
			if err != nil {
				t.Fatal(err)
			}
			l := row.LaunchFor(64, cc, "float32")
			got := theoretical(mod, l.Entry, true, l.Block, row.SharedBytes, g)
			if got.Registers != r.Registers {
				t.Errorf("%s on %s (%s): %d registers (%q), ptxas allocates %d", row.Name, g.Name, g.CC, got.Registers, got.Text, r.Registers)
			}
			checked++
		}
	}
	if checked == 0 {
		t.Fatal("no rung has ptxas's registers")
	}
}
