package main

import (
	"context"
	"encoding/csv"
	"math"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/gpuplayground/playground/gpu/nvidia"
	"github.com/gpuplayground/playground/gpumodel"
	"github.com/gpuplayground/playground/vgpu"
	"github.com/gpuplayground/playground/vgpurun"
)

// The virtual GPU's global-memory counts for the project's FP32 kernels equal what Nsight Compute
// read from the same kernels (same PTX, same launch shapes) on an H100 on 2026-11-25
// (testdata/h100-ncu-4096.csv, made by bench/gpucheck/run.sh's ncu step; docs/benchmarks.md).
// Requests and load sectors must agree exactly; the hardware's store-sector count is a little below
// the exact one (a few sectors in 10^4), so stores agree within 0.1%. Branch efficiency is 100% on
// both: no branch of these kernels diverges at a multiple of their tiles. At n = 4096 the virtual GPU
// runs a cell's sampled launch (vgpurun.Run: 8 consecutive thread blocks, scaled), the one the GEMM
// ladder's test models (sharedRuns): the kernels are uniform over full tiles, so scaling is exact.
func TestGlobalCountsMatchNsightCompute(t *testing.T) {
	hw := readCSV(t, "h100-ncu-4096.csv")
	g, err := gpumodel.LookupGPU("H100 SXM")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"cuda-naive", "cuda-coalesced", "cuda-smem", "cuda-regblock"} {
		k, ok := nvidia.LookupKernel(name)
		if !ok {
			t.Fatalf("%s is not in the kernel table", name)
		}
		row, ok := hw[k.LaunchFor(4096, vgpurun.Arch, "float32").Entry]
		if !ok {
			t.Fatalf("%s: no Nsight Compute row", name)
		}
		res, err := sharedRuns.run(context.Background(), vgpurun.Request{Kernel: name, N: 4096, DType: "float32", GPU: g, Seed: 1})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !res.Sampled {
			t.Fatalf("%s at 4096 ran in full, want sampled", name)
		}
		c := res.Counts
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

// The hardware rows are labelled with the device Nsight Compute names in the CSV (the H100's and the
// H200's CSVs), unless -hw names it; a CSV without the column says only "GPU".
func TestHardwareLabel(t *testing.T) {
	for _, tt := range []struct{ file, entry, hw, want string }{
		{"h100-ncu-4096.csv", "cuda_naive", "", "NVIDIA H100 80GB HBM3 (Nsight Compute)"},
		{"h200-ncu-tensor-4096.csv", "cuda_mma_swizzle", "", "NVIDIA H200 (Nsight Compute)"},
		{"h200-ncu-tensor-4096.csv", "cuda_mma_swizzle", "H200 SXM 141GB", "H200 SXM 141GB (Nsight Compute)"},
	} {
		row, ok := readCSV(t, tt.file)[tt.entry]
		if !ok {
			t.Fatalf("%s: no row %s", tt.file, tt.entry)
		}
		if got := hardwareLabel(row, tt.hw); got != tt.want {
			t.Errorf("%s, -hw %q: got %q, want %q", tt.file, tt.hw, got, tt.want)
		}
	}
	if got, want := hardwareLabel(map[string]string{"Kernel Name": "k"}, ""), "GPU (Nsight Compute)"; got != want {
		t.Errorf("no device column: got %q, want %q", got, want)
	}
}

func TestReadNCUScalesUnits(t *testing.T) {
	if got, want := scale("1,500", "usecond"), "1500000"; got != want {
		t.Errorf("scale(1,500 usecond) = %s, want %s", got, want)
	}
	if got, want := scale("12", "byte"), "12"; got != want {
		t.Errorf("scale(12 byte) = %s, want %s", got, want)
	}
}

// The three transposes of Shared-memory tiling (the same source as bench/gpucheck/launch.cu's), compiled here,
// count in the virtual GPU what Nsight Compute counted on an H100 at n = 4096
// (testdata/h100-ncu-transpose-4096.csv): global load and store sectors within 0.1%, and shared
// bank conflicts within a quarter of a wavefront per shared request (the hardware reports some
// conflicts the virtual GPU does not, docs/vgpu-metrics.md: 55,000 for the padded tile and 1.3% more
// than the 31 per column read for the unpadded one, against 16.5 million for the unpadded tile).
func TestTransposeCountsMatchNsightCompute(t *testing.T) {
	if _, _, err := nvidia.ChosenCompiler(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	hw := readCSV(t, "h100-ncu-transpose-4096.csv")
	mod, err := lessonModule(context.Background()) // Shared-memory tiling's transposes, among others
	if err != nil {
		t.Fatal(err)
	}
	const n = 4096
	for _, k := range []struct{ entry, ncu string }{
		{"transpose_naive", "transpose_naive"}, {"transpose_tiled", "void transpose_tiled<0>"}, {"transpose_padded", "void transpose_tiled<1>"},
	} {
		grid := [3]int{n / 32, n / 32, 1}
		if k.entry == "transpose_naive" {
			grid[1] = n / 8
		}
		in, out := vgpu.NewBuffer("in", 4*n*n), vgpu.NewBuffer("out", 4*n*n)
		cnt, err := vgpu.Launch(context.Background(), mod, k.entry, vgpu.LaunchConfig{Grid: grid, Block: [3]int{32, 8, 1},
			Only:    [][3]int{{0, 0, 0}, {grid[0] - 1, grid[1] - 1, 0}},
			Params:  []vgpu.Arg{vgpu.Ptr(in), vgpu.Ptr(out), vgpu.S32(n), vgpu.S32(n)},
			Buffers: []*vgpu.Buffer{in, out}})
		if err != nil {
			t.Fatalf("%s: %v", k.entry, err)
		}
		c := cnt.Scaled()
		row, ok := hw[k.ncu]
		if !ok {
			t.Fatalf("%s: no Nsight Compute row %q", k.entry, k.ncu)
		}
		near := func(what string, got int64, want, tol float64) {
			t.Helper()
			if math.Abs(float64(got)-want) > tol {
				t.Errorf("%s %s: virtual GPU %d, Nsight Compute %.0f", k.entry, what, got, want)
			}
		}
		ld, st := num(row["l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"]), num(row["l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum"])
		near("load sectors", c.LoadSectors, ld, 1e-3*ld)
		near("store sectors", c.StoreSectors, st, 1e-3*st)
		requests := float64(c.SharedLoadRequests + c.SharedStoreRequests)
		near("bank conflicts", c.BankConflicts(), num(row["l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum"]), 0.25*requests)
	}
}

// readCSV reads one of testdata's Nsight Compute CSVs.
func readCSV(t *testing.T, name string) map[string]map[string]string {
	t.Helper()
	f, err := os.Open("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := readNCU(f)
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// The limits model against the H100's measurements at n = 4096 (docs/benchmarks.md, "The modelled
// time against the measured"): what agrees is kept. The GEMM ladder's modelled times are within a
// factor of 1.5 of the measured ones for naive, coalesced, smem and regblock, and order as the
// measurements do, naive far above coalesced and smem, which are above regblock; the roofline
// before it was 2× off for naive and 4× for coalesced. (coalesced against smem is not kept: the
// model has them within 6% of each other in the wrong order, docs/benchmarks.md says why.) The
// ladder runs 8 sampled blocks each, whose L1 hit rates are kept within 2 points of the
// measurements for naive and coalesced.
//
// The 8 blocks are consecutive in dispatch order (vgpurun's sample), so the L2 sees the data that
// neighbouring blocks share, as the hardware's does; 8 scattered blocks shared almost none (L2 hit
// rates of 2.7–26%, DRAM reads 1.3–9× the measured). Their DRAM reads blend each wave of resident
// blocks in step (its unique sectors) and staggered (the run's replay), weight 1/√w for wave w
// (gpumodel's wave.go): naive, coalesced and smem, 62 waves, come within 1.5× of the measured (0.86,
// 1.36 and 1.00 on 2026-11-25); regblock's in-step estimate, its waves' unique sectors built from
// the sampled blocks' streams, within 1.25× of its measured reads (0.99), which its 3.9 waves read
// nearly wholly in step; the blend lies between the two estimates. Every L2 hit rate is above 15%
// and no more than 15 points above the measured one (smem's is 12 above: its DRAM reads match, its
// L2 lookups do not).
func TestModelAgreesOnTheGEMMLadder(t *testing.T) {
	g := gpumodel.GPUs[0]
	rows := readCSV(t, "h100-ncu-4096.csv")
	for name := range rows {
		if name != "cuda_naive" && name != "cuda_coalesced" && name != "cuda_smem" && name != "cuda_regblock" {
			delete(rows, name)
		}
	}
	cs, err := compareAll(context.Background(), sharedRuns.run, rows, 4096, 0, g)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]comparison{}
	for _, c := range cs {
		got[c.Kernel] = c
		if r := c.After.Seconds / c.measuredSeconds(); r < 1/1.5 || r > 1.5 {
			t.Errorf("%s: modelled %.3g s, measured %.3g s (×%.2f)", c.Kernel, c.After.Seconds, c.measuredSeconds(), r)
		}
	}
	if len(got) != 4 {
		t.Fatalf("compared %d kernels, want 4", len(got))
	}
	at := func(k string) float64 { return got[k].After.Seconds }
	if !(at("cuda-naive") > 10*at("cuda-coalesced") && at("cuda-naive") > 10*at("cuda-smem") &&
		min(at("cuda-coalesced"), at("cuda-smem")) > 2*at("cuda-regblock")) {
		t.Errorf("modelled naive %.3g, coalesced %.3g, smem %.3g, regblock %.3g s: want naive ≫ coalesced, smem > 2 × regblock",
			at("cuda-naive"), at("cuda-coalesced"), at("cuda-smem"), at("cuda-regblock"))
	}
	for _, k := range []string{"cuda-naive", "cuda-coalesced"} {
		c := got[k]
		if got, want := c.Counts.L1HitRate(), num(c.HW["l1tex__t_sector_hit_rate.pct"]); math.Abs(got-want) > 2 {
			t.Errorf("%s L1 hit rate: modelled %.1f%%, measured %.1f%%", k, got, want)
		}
	}
	for k, c := range got {
		measured := num(c.HW["dram__bytes_read.sum"])
		r := float64(c.Counts.DRAMReadBytes) / measured
		if k != "cuda-regblock" && (r < 1/1.5 || r > 1.5) {
			t.Errorf("%s DRAM reads: modelled %.0f MB, ×%.2f the measured", k, float64(c.Counts.DRAMReadBytes)/1e6, r)
		}
		w := c.Wave
		if w.Why != "" || c.Counts.DRAMReadBytes < w.InStep || c.Counts.DRAMReadBytes > w.Staggered {
			t.Errorf("%s DRAM reads %d: want between in step and staggered, %+v", k, c.Counts.DRAMReadBytes, w)
		}
		if r := float64(w.InStep) / measured; k == "cuda-regblock" && (r < 1/1.25 || r > 1.25) {
			t.Errorf("%s in-step DRAM reads: %.0f MB, ×%.2f the measured", k, float64(w.InStep)/1e6, r)
		}
		l2, want := c.Counts.L2HitRate(), num(c.HW["lts__t_sector_hit_rate.pct"])
		if l2 < 15 || l2 > want+15 {
			t.Errorf("%s L2 hit rate: modelled %.1f%%, measured %.1f%%", k, l2, want)
		}
	}
}

// The copy and Shared-memory tiling's transposes at n = 4096 (testdata/h100-ncu-transpose-4096.csv), 256
// blocks of each run: the copy's DRAM reads are its input, as measured within 0.1%, and its and
// the tiled transposes' L2 hit rates are within 1 point of the measured 50% (every load a miss,
// every store a hit). The tiled transpose with bank conflicts is modelled slower than the padded
// one, by more than 1.5×, as measured (2×): the model's shared-memory term counts the
// conflicts' wavefronts. The naive transpose is modelled slower than the tiled one, as measured
// (289 against 122 µs): its stores write 4 bytes of each sector, which the L2 term charges at the
// H100's measured rate for partly written sectors (gpumodel.PartialStoreSlots; before, it was
// modelled 3.6× too fast, below the tiled one).
func TestModelAgreesOnCopyAndTransposes(t *testing.T) {
	if _, _, err := nvidia.ChosenCompiler(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	cs, err := compareAll(context.Background(), sharedRuns.run, readCSV(t, "h100-ncu-transpose-4096.csv"), 4096, 256, gpumodel.GPUs[0])
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]comparison{}
	for _, c := range cs {
		got[c.Kernel] = c
	}
	cp := got["mem_copy"]
	if got, want := float64(cp.Counts.DRAMReadBytes), num(cp.HW["dram__bytes_read.sum"]); math.Abs(got-want) > 1e-3*want {
		t.Errorf("copy DRAM read bytes: modelled %.0f, measured %.0f", got, want)
	}
	for _, k := range []string{"mem_copy", "transpose_tiled", "transpose_padded"} {
		c := got[k]
		if got, want := c.Counts.L2HitRate(), num(c.HW["lts__t_sector_hit_rate.pct"]); math.Abs(got-want) > 1 {
			t.Errorf("%s L2 hit rate: modelled %.1f%%, measured %.1f%%", k, got, want)
		}
	}
	tiled, padded := got["transpose_tiled"].After, got["transpose_padded"].After
	if naive := got["transpose_naive"].After; !(naive.Seconds > tiled.Seconds) || naive.Bound != "L2" {
		t.Errorf("naive transpose %.3g s (%s), tiled %.3g s: want the naive one slower, bound by the L2", naive.Seconds, naive.Bound, tiled.Seconds)
	}
	if !(tiled.Seconds > 1.5*padded.Seconds) || tiled.Bound != "shared memory" {
		t.Errorf("tiled %.3g s (%s), padded %.3g s (%s): want tiled > 1.5 × padded, bound by shared memory", tiled.Seconds, tiled.Bound, padded.Seconds, padded.Bound)
	}
}

// boehmCuBLAS is the cuBLAS SGEMM rate Simon Boehm measured on the RTX A6000 at 4092, in GFLOP/s
// (the same worklog's table as boehmA6000, its row 0).
const boehmCuBLAS = 23249.6

// The project's ladder modelled on the RTX A6000's datasheet, charging the SASS that ptxas 12.4
// makes for sm_86, against Simon Boehm's measurements of the same steps on that GPU at 4092
// (published.go; docs/benchmarks.md, "The model against a published ladder" has the table), the
// bars of issue 37 item 3:
//   - the rungs come in the published order, each faster than the one before;
//   - none is modelled above the rate Boehm measured for cuBLAS there (23.2 TFLOP/s), which no FP32
//     kernel of these steps reaches (cuda-warptile was 0.5% above it until the wave estimate's
//     in-step share followed the L2's size, 2026-11-29: its global loads then miss the A6000's 6 MB
//     L2 more often, and its latency term waits longer);
//   - each within 1.5× of its measurement, cuda-coalesced included (×1.68 until the same change:
//     its reads were blended from waves in step whose 68 MB of shared sectors the L2 was taken to
//     keep whatever its size; ×1.49 since).
func TestModelAgreesWithPublishedLadder(t *testing.T) {
	g, err := gpumodel.LookupGPU("RTX A6000")
	if err != nil {
		t.Fatal(err)
	}
	ms, err := modelLadder(context.Background(), sharedRuns.run, boehmA6000, boehmN, g)
	if err != nil {
		t.Fatal(err)
	}
	for i, m := range ms {
		r := m.GFLOPS() / m.rung.GFLOPS
		t.Logf("%s (%s): modelled %.0f GFLOP/s (%s), measured %.0f (×%.2f)", m.Kernel, m.Step, m.GFLOPS(), m.Model.Bound, m.rung.GFLOPS, r)
		if r < 1/1.5 || r > 1.5 {
			t.Errorf("%s (%s): modelled %.0f GFLOP/s, measured %.0f (×%.2f): not within 1.5×", m.Kernel, m.Step, m.GFLOPS(), m.rung.GFLOPS, r)
		}
		if m.GFLOPS() >= boehmCuBLAS {
			t.Errorf("%s: modelled %.0f GFLOP/s, not under cuBLAS's measured %.0f", m.Kernel, m.GFLOPS(), boehmCuBLAS)
		}
		if i > 0 && m.GFLOPS() <= ms[i-1].GFLOPS() {
			t.Errorf("%s modelled at %.0f GFLOP/s, not above %s's %.0f", m.Kernel, m.GFLOPS(), ms[i-1].Kernel, ms[i-1].GFLOPS())
		}
	}
}

// The latency and launch terms against the H100's measurements at n = 512 (testdata/h100-ncu-512.csv,
// docs/benchmarks.md): regblock, 16 blocks of 8 warps (2 per scheduler), was modelled issue-bound at
// half its measured time; with its warps' load and dependent-instruction waits (gpumodel.ModelAt) it
// is latency-bound within 1.5× of the measurement. The copy, transposes and reductions, launches of
// 3–17 µs that the limits alone put 2–20× too fast, come within 1.5× with the launch floor and the
// latency term, each closer than before.
func TestModelLatencyAtSmallSizes(t *testing.T) {
	if _, _, err := nvidia.ChosenCompiler(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	rows := readCSV(t, "h100-ncu-512.csv")
	for _, drop := range []string{"cuda_naive", "cuda_coalesced", "cuda_smem", "cuda_wmma_bf16"} {
		delete(rows, drop)
	}
	cs, err := compareAll(context.Background(), sharedRuns.run, rows, 512, 0, gpumodel.GPUs[0])
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 7 {
		t.Fatalf("compared %d kernels, want regblock and the six of launch.cu", len(cs))
	}
	for _, c := range cs {
		before, after := c.Limits.Seconds/c.measuredSeconds(), c.After.Seconds/c.measuredSeconds()
		if after < 1/1.5 || after > 1.5 || math.Abs(math.Log(after)) >= math.Abs(math.Log(before)) && before < 1 {
			t.Errorf("%s: limits ×%.2f, with latency and launch ×%.2f (%s) of the measured %.1f µs", c.Kernel, before, after, c.After.Bound, c.measuredSeconds()*1e6)
		}
		if c.Kernel == "cuda-regblock" && (c.After.Bound != "latency" || before > 0.6) {
			t.Errorf("regblock: limits ×%.2f (%s), model %s-bound: want the limits at about half, the model latency-bound", before, c.Limits.Bound, c.After.Bound)
		}
	}
}

// The launch floor the model adds (gpumodel.LaunchSeconds) is the one measured on an H100
// (testdata/h100-ncu-launch.csv, bench/gpucheck/launch_floor.cu): no more than the shortest empty
// launch, within 10% of it.
func TestLaunchFloorIsMeasured(t *testing.T) {
	rows, err := os.Open("testdata/h100-ncu-launch.csv")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	r := csv.NewReader(rows)
	r.FieldsPerRecord = -1
	all, err := r.ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	h := 0 // ncu's own lines and the program's output come first
	for h < len(all) && !slices.Contains(all[h], "Kernel Name") {
		h++
	}
	if h+2 > len(all) {
		t.Fatal("no Nsight Compute header")
	}
	col := map[string]int{}
	for i, name := range all[h] {
		col[name] = i
	}
	d := col["gpu__time_duration.sum"]
	shortest := math.Inf(1)
	for _, row := range all[h+2:] {
		if row[col["Kernel Name"]] == "empty" {
			shortest = min(shortest, num(scale(row[d], all[h+1][d]))*1e-9)
		}
	}
	if got := gpumodel.LaunchSeconds(gpumodel.GPUs[0]); got > shortest || got < 0.9*shortest {
		t.Errorf("launch floor %.3g s, shortest measured empty launch %.3g s", got, shortest)
	}
}

// The transpose steps written as a learner writes them (testdata/transpose_steps.cu), modelled on the
// H100 SXM's datasheet at n = 32768 (a run of 1024 blocks, scaled), against Yen Cal's measurements
// of the same steps on an H100 at that size (published_transpose.go; docs/benchmarks.md, "The model
// against a published transpose"): each within 2× of its published GB/s, and in the published
// order: naive below the tile with bank conflicts, below the padded tile. The padded tile with one
// element per thread and with four tie in the model (both DRAM-bound: the model has no term for
// the memory-level parallelism that 1024-thread blocks with one load each lack, docs/benchmarks.md),
// so only "not below" is asserted there.
func TestModelAgreesWithPublishedTranspose(t *testing.T) {
	mod := transposeModuleOrSkip(t)
	ms, err := modelTranspose(context.Background(), mod, yencalH100, yencalN, transposeSampledBlocks, gpumodel.GPUs[0])
	if err != nil {
		t.Fatal(err)
	}
	for i, m := range ms {
		if r := m.GBps() / m.transposeStep.GBps; r < 0.5 || r > 2 {
			t.Errorf("%s (%s): modelled %.0f GB/s, measured %.0f (×%.2f, %s-bound)", m.Entry, m.Step, m.GBps(), m.transposeStep.GBps, r, m.Model.Bound)
		}
		if i == 0 {
			continue
		}
		if prev := ms[i-1]; m.GBps() < prev.GBps() || i < 3 && m.GBps() <= prev.GBps() {
			t.Errorf("%s modelled at %.0f GB/s, below %s's %.0f", m.Entry, m.GBps(), prev.Entry, prev.GBps())
		}
	}
}

// The transpose steps transpose: each, launched over a whole 80×80 matrix of distinct values (a
// ragged edge for the 32-wide tiles: the bounds checks run), writes out = inᵀ.
func TestTransposeStepsTranspose(t *testing.T) {
	mod := transposeModuleOrSkip(t)
	const n = 80
	xs := make([]float32, n*n)
	for i := range xs {
		xs[i] = float32(i)
	}
	for _, s := range yencalH100 {
		in, out := vgpu.Float32Buffer("in", xs), vgpu.NewBuffer("out", 4*n*n)
		_, err := vgpu.Launch(context.Background(), mod, s.Entry, vgpu.LaunchConfig{Grid: [3]int{(n + 31) / 32, (n + 31) / 32, 1}, Block: s.Block,
			Params: []vgpu.Arg{vgpu.Ptr(in), vgpu.Ptr(out), vgpu.S32(n)}, Buffers: []*vgpu.Buffer{in, out}})
		if err != nil {
			t.Fatalf("%s: %v", s.Entry, err)
		}
		got := out.Float32s()
		for r := range n {
			for c := range n {
				if got[c*n+r] != xs[r*n+c] {
					t.Fatalf("%s: out[%d][%d] = %v, want in[%d][%d] = %v", s.Entry, c, r, got[c*n+r], r, c, xs[r*n+c])
				}
			}
		}
	}
}

// The measurement the model's rate for partly written store sectors comes from
// (gpumodel.PartialStoreSlots) is the kept CSV's: the naive transpose's first launch in
// testdata/h100-ncu-transpose-4096.csv, its store sectors, time and SM clock; and the virtual GPU
// counts that launch's partly written sectors as the rate's derivation does (every store sector but
// the n²·4/32 its bytes could fill).
func TestPartialStoreRateIsTheMeasuredOne(t *testing.T) {
	f, err := os.Open("testdata/h100-ncu-transpose-4096.csv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	all, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	col := map[string]int{}
	var first []string
	for i, row := range all {
		if slices.Contains(row, "Kernel Name") {
			for j, h := range row {
				col[h] = j
			}
			for _, r := range all[i+2:] {
				if strings.HasPrefix(r[col["Kernel Name"]], "transpose_naive") {
					first = r
					break
				}
			}
			break
		}
	}
	if first == nil {
		t.Fatal("no transpose_naive launch in the CSV")
	}
	sectors := num(first[col["l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum"]])
	ns := num(first[col["gpu__time_duration.sum"]])
	hz := num(first[col["sm__cycles_elapsed.avg.per_second"]])
	perClock := (sectors - 4096*4096*4/32) / (ns * 1e-9 * hz)
	if got, want := gpumodel.PartialStoreSlots(), 5120/32/perClock; math.Abs(got-want) > 1e-6*want {
		t.Errorf("PartialStoreSlots() = %.6f, the CSV gives %.6f", got, want)
	}
	mod, err := lessonModule(context.Background())
	if err != nil {
		t.Skip(err)
	}
	c, _, err := lessonCounts(context.Background(), mod, lessonKernels()[1], 4096, [3]int{128, 512, 1}, 16, 16, gpumodel.GPUs[0])
	if err != nil {
		t.Fatal(err)
	}
	if got, want := gpumodel.PartialStoreSectors(c), c.StoreSectors-4096*4096*4/32; got != want {
		t.Errorf("partly written store sectors of the naive transpose: %d, want %d (of %d)", got, want, c.StoreSectors)
	}
}

// transposeModuleOrSkip compiles testdata/transpose_steps.cu, or skips the test without a CUDA
// compiler (fails in CI, which has one).
func transposeModuleOrSkip(t *testing.T) *vgpu.Module {
	t.Helper()
	if _, _, err := nvidia.ChosenCompiler(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	mod, err := transposeModule(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return mod
}
