package gpumodel

import (
	"encoding/csv"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
)

// The cases NVIDIA's documentation works through.
func TestDocumentedCases(t *testing.T) {
	for _, c := range []struct {
		source                string
		cc                    string
		threads, regs, shared int
		wantBlocks            int
		wantOccupancy         float64
		wantLimiting          string
	}{
		// CUDA C++ Best Practices Guide, "Occupancy" > "Calculating Occupancy": on compute capability
		// 7.0, 128-thread blocks with 37 registers per thread give 75% occupancy with 12 active blocks
		// per multiprocessor, …
		{"Best Practices Guide, 128 threads × 37 registers", "7.0", 128, 37, 0, 12, 0.75, LimitRegisters},
		// … whereas 320-thread blocks with the same 37 registers give 63% (62.5%), because only four
		// 320-thread blocks can reside on a multiprocessor.
		{"Best Practices Guide, 320 threads × 37 registers", "7.0", 320, 37, 0, 4, 0.625, LimitRegisters},
		// Same section: 65,536 registers and 2048 threads per SM (64 warps × 32): for 100% occupancy
		// each thread can use at most 32 registers.
		{"Best Practices Guide, 32 registers at 100%", "7.0", 256, 32, 0, 8, 1, "warps and registers"},
	} {
		got, err := OccupancyFor(c.cc, c.threads, c.regs, c.shared)
		if err != nil {
			t.Errorf("%s: %v", c.source, err)
			continue
		}
		if got.BlocksPerSM != c.wantBlocks || got.Occupancy != c.wantOccupancy || got.Limiting() != c.wantLimiting {
			t.Errorf("%s: got %d blocks, %.4g, %q; want %d, %.4g, %q", c.source, got.BlocksPerSM, got.Occupancy, got.Limiting(),
				c.wantBlocks, c.wantOccupancy, c.wantLimiting)
		}
	}
	// "at most 32": one register more and a 256-thread block no longer reaches 100%.
	if got, err := OccupancyFor("7.0", 256, 33, 0); err != nil || got.Occupancy >= 1 {
		t.Errorf("7.0, 33 registers: got %+v, %v; want under 100%%", got, err)
	}
	// NVIDIA Developer Forums, "How the Shared Memory Configuration Size is calculated?" (thread
	// 320732): on an RTX 3090 (8.6) a kernel with 4.22 KB static and 1.02 KB driver shared memory per
	// block under a 65.54 KB configuration; "if you raised the limit to 102.4 (the maximum), the block
	// limit would be 19".
	l, err := LookupLimits("8.6")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ carveout, want int }{{64 * kib, 12}, {100 * kib, 19}} {
		if got, err := l.Occupancy(256, 0, 4224, c.carveout); err != nil || got.SharedLimit != c.want || got.SharedPerBlock != 5248 {
			t.Errorf("8.6, 4224 B static at a %d B carve-out: got %+v, %v; want a shared limit of %d from 5248 B", c.carveout, got, err, c.want)
		}
	}
}

// ncuRow is one kernel of the kept Nsight Compute CSV: its launch and the occupancy metrics.
type ncuRow struct {
	kernel                       string
	threads, regs                int
	limRegs, limShared, limWarps int
	limBlocks                    int
	theoreticalPct               float64
}

// readNCU reads the occupancy columns of an Nsight Compute raw CSV (bench/vgpuvsncu/testdata).
func readNCU(t *testing.T, path string) []ncuRow {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	col := map[string]int{}
	for i, h := range recs[0] {
		col[h] = i
	}
	num := func(rec []string, name string) float64 {
		t.Helper()
		i, ok := col[name]
		if !ok {
			t.Fatalf("%s: no column %s", path, name)
		}
		v, err := strconv.ParseFloat(strings.ReplaceAll(rec[i], ",", ""), 64)
		if err != nil {
			t.Fatalf("%s: %s %q: %v", path, name, rec[i], err)
		}
		return v
	}
	var rows []ncuRow
	for _, rec := range recs[2:] { // row 1 is the units
		var x, y, z int
		if _, err := fmt.Sscanf(rec[col["Block Size"]], "(%d, %d, %d)", &x, &y, &z); err != nil {
			t.Fatalf("block %q: %v", rec[col["Block Size"]], err)
		}
		rows = append(rows, ncuRow{kernel: rec[col["Kernel Name"]], threads: x * y * z,
			regs: int(num(rec, "launch__registers_per_thread")), limRegs: int(num(rec, "launch__occupancy_limit_registers")),
			limShared: int(num(rec, "launch__occupancy_limit_shared_mem")), limWarps: int(num(rec, "launch__occupancy_limit_warps")),
			limBlocks: int(num(rec, "launch__occupancy_limit_blocks")), theoreticalPct: num(rec, "sm__maximum_warps_per_active_cycle_pct")})
	}
	return rows
}

// staticShared is each measured kernel's static shared memory in bytes, from its source:
// gpu/nvidia/src/matmul.cu (cuda_smem: two 32×32 float tiles; cuda_regblock: As[RB_BK][RB_BM +
// RB_PAD] and Bs[RB_BK][RB_BN] floats, 8×132 + 8×128; the WMMA kernel loads from global memory, none)
// and bench/gpucheck/launch.cu (transpose_tiled<PAD>: float t[32][32 + PAD]; reduce_smem: float s[256]).
var staticShared = map[string]int{
	"cuda_naive": 0, "cuda_coalesced": 0, "cuda_smem": 2 * 32 * 32 * 4, "cuda_regblock": (8*132 + 8*128) * 4,
	"cuda_wmma_bf16": 0, "mem_copy": 0, "transpose_naive": 0, "transpose_tiled<0>": 32 * 32 * 4,
	"transpose_tiled<1>": 32 * 33 * 4, "reduce_smem": 256 * 4, "reduce_shfl": 0,
}

// shortName is the kernel's name without Nsight Compute's signature: "void transpose_tiled<1>(const
// float *, …)" → "transpose_tiled<1>".
func shortName(s string) string {
	s = strings.TrimPrefix(s, "void ")
	if i := strings.Index(s, "("); i >= 0 {
		s = s[:i]
	}
	return s
}

// Nsight Compute's occupancy figures for the own kernels and the memory-bound ones on an H100 SXM
// (compute capability 9.0, 2026-11-25; bench/vgpuvsncu/testdata): from the measured registers, the
// static shared memory and the block size, the warp, register and block limits and the theoretical
// occupancy come out exactly. The shared-memory limit is against the carve-out the driver configured
// for that launch (Nsight Compute's "Shared Memory Configuration Size", not among the kept
// columns), which is not the largest: exactly one of the 9.0 carve-outs gives each measured limit, and
// it never lowers the occupancy (the driver sizes it not to).
func TestNsightComputeH100(t *testing.T) {
	l, err := LookupLimits("9.0")
	if err != nil {
		t.Fatal(err)
	}
	rows := readNCU(t, "../bench/vgpuvsncu/testdata/h100-ncu-4096.csv")
	if len(rows) != 22 {
		t.Fatalf("got %d rows, want 22 (11 kernels, 2 launches each)", len(rows))
	}
	for _, r := range rows {
		name := shortName(r.kernel)
		shared, ok := staticShared[name]
		if !ok {
			t.Errorf("%s: no static shared memory known", name)
			continue
		}
		got, err := l.Occupancy(r.threads, r.regs, shared, l.SharedPerSM)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if got.WarpLimit != r.limWarps || got.RegisterLimit != r.limRegs || got.BlockLimit != r.limBlocks || 100*got.Occupancy != r.theoreticalPct {
			t.Errorf("%s: got limits warps %d, registers %d, blocks %d, occupancy %g%%; Nsight Compute %d, %d, %d, %g%%",
				name, got.WarpLimit, got.RegisterLimit, got.BlockLimit, 100*got.Occupancy, r.limWarps, r.limRegs, r.limBlocks, r.theoreticalPct)
		}
		var fits []int
		for _, c := range l.Carveouts {
			at, err := l.Occupancy(r.threads, r.regs, shared, c)
			if err == nil && at.SharedLimit == r.limShared {
				fits = append(fits, c/kib)
				if at.BlocksPerSM != got.BlocksPerSM {
					t.Errorf("%s: the %d KiB carve-out gives %d blocks, the largest %d", name, c/kib, at.BlocksPerSM, got.BlocksPerSM)
				}
			}
		}
		if len(fits) != 1 {
			t.Errorf("%s: carve-outs (KiB) %v give Nsight Compute's shared-memory limit of %d, want exactly one", name, fits, r.limShared)
		}
	}
}

// The limiting resource and the launch errors.
func TestLimitersAndErrors(t *testing.T) {
	for _, c := range []struct {
		cc                    string
		threads, regs, shared int
		want                  string
	}{
		{"9.0", 256, 111, 8320, LimitRegisters},      // cuda_regblock on the H100: 25%
		{"9.0", 64, 16, 0, LimitBlocks},              // 2 warps a block: the warp and block limits tie at 32
		{"9.0", 32, 16, 0, LimitBlocks},              // 1 warp a block: 32 blocks, 50%
		{"9.0", 128, 0, 48 * kib, LimitSharedMemory}, // 49 KiB a block: 4 in 228 KiB
		{"7.5", 256, 0, 0, LimitWarps},               // 32 warps per SM on Turing
		{"8.9", 32, 0, 0, LimitBlocks},               // 24 blocks on Ada
	} {
		got, err := OccupancyFor(c.cc, c.threads, c.regs, c.shared)
		if err != nil || !strings.Contains(got.Limiting(), c.want) {
			t.Errorf("%s, %d threads, %d registers, %d B: got %q (%+v), %v; want %s among the limiters", c.cc, c.threads, c.regs, c.shared, got.Limiting(), got, err, c.want)
		}
	}
	for _, c := range []struct {
		cc                    string
		threads, regs, shared int
	}{
		{"9.0", 1025, 32, 0}, {"9.0", 0, 32, 0}, {"9.0", 256, 256, 0}, {"9.0", 256, 0, 227*kib + 1},
		{"8.6", 256, 0, 100 * kib}, {"9.0", 1024, 255, 0}, {"6.1", 256, 32, 0},
	} {
		if got, err := OccupancyFor(c.cc, c.threads, c.regs, c.shared); err == nil {
			t.Errorf("%s, %d threads, %d registers, %d B: got %+v, want an error", c.cc, c.threads, c.regs, c.shared, got)
		}
	}
}
