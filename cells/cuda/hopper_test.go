package cuda

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/gpuplayground/playground/cells"
	"github.com/gpuplayground/playground/cells/cellstest"
	kcuda "github.com/gpuplayground/playground/gpu/nvidia"
	"github.com/gpuplayground/playground/harness"
)

// clusterSumCell sums with two-block clusters (__cluster_dims__, which NVRTC refuses below
// compute_90) and fences the tensor-core proxy (wgmma.fence: sm_90a only): a cell naming the H100
// compiles it for compute_90a.
const clusterSumCell = `kernel: k
problem: reduce
gpu: H100 SXM
block: [128]
grid: ["2*ceil(n/256)"]
sizes: [1024]
---
extern "C" __global__ void __cluster_dims__(2, 1, 1) k(const float* in, float* out, int n) {
	asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) atomicAdd(out, in[i]);
}
`

// noteWith is the first note of rec that contains s, or "".
func noteWith(rec *cellstest.Recorder, s string) string {
	for _, n := range rec.Notes {
		if strings.Contains(n.Message, s) {
			return n.Message
		}
	}
	return ""
}

// A cell whose datasheet GPU is the H100 compiles for compute_90a, as the server compiles (the
// confined compile worker), ptxas reports sm_90a's registers, and the virtual GPU runs it; the
// same cell naming the A100 compiles for its server's compute_80, where __cluster_dims__ is an
// error on its line.
func TestHopperCellCompilesFor90a(t *testing.T) {
	needPtxas(t)
	if nv, err := kcuda.LoadNVRTC(); err != nil || !nv.ArchSpecific() {
		t.Skipf("skipping: no NVRTC 12 as the default (%v)", err)
	}
	m := workerMachine(t)
	rec := runCellOn(t, clusterSumCell, m)
	if noteWith(rec, "custom: k compiles for compute_90a") == "" {
		t.Errorf("notes %+v: want compute_90a", rec.Notes)
	}
	rows := rec.RowsOf("emulated")
	if len(rows) != 1 || rows[0].Bad {
		t.Fatalf("emulated rows %+v, want one ok", rows)
	}
	if text, _ := rows[0].Values[occupancyColumn(rec)].(string); !strings.Contains(text, "ptxas sm_90a") {
		t.Errorf("occupancy %q: want ptxas's sm_90a registers", text)
	}
	p := newShowPTX(cells.Env{Kernels: gpuAvailable(), Limits: harness.DefaultLimits(), GPU: m}, mustParse(t, clusterSumCell))
	prec := &cellstest.Recorder{}
	if err := p.Run(context.Background(), prec); err != nil || len(prec.Texts) == 0 || !strings.HasPrefix(prec.Texts[0].Title, "PTX of k for compute_90a") {
		t.Errorf("Show PTX: %v, %+v", err, prec.Texts)
	}
	nv12, err := kcuda.LoadNVRTCFrom([]string{"libnvrtc.so.12"})
	if err != nil {
		t.Fatal(err)
	}
	// Show SASS with ptxas and nvdisasm in this process (no time limit to outrun on a loaded machine)
	srec, err := showSASSOn(t, clusterSumCell, cellstest.NoGPU{NVRTC: nv12})
	if err != nil || len(srec.Texts) == 0 || !strings.Contains(srec.Texts[0].Title, "(sm_90a;") || !strings.Contains(srec.Texts[0].Body, "WARPGROUP") {
		t.Errorf("Show SASS: %v, %+v", err, srec.Texts)
	}
	a100 := strings.Replace(clusterSumCell, "gpu: H100 SXM", "gpu: A100 SXM", 1)
	_, err = (&run{env: cells.Env{GPU: m}, spec: mustParse(t, a100)}).compile(context.Background())
	if err == nil || !strings.Contains(err.Error(), "line 8: error") {
		t.Errorf("the A100 cell: got %v, want __cluster_dims__ refused on line 8 (compute_80)", err)
	}
}

func mustParse(t *testing.T, cell string) Spec {
	t.Helper()
	s, err := Parse(cell, gpuAvailable(), harness.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// deviceGPU is a server with a GPU of compute capability cc, whose compiles are NVRTC 12's here.
type deviceGPU struct {
	testGPU
	cc int
}

func (g *deviceGPU) Device() *kcuda.Device {
	return &kcuda.Device{Name: "test GPU", ComputeCapability: g.cc}
}

// On a server whose GPU is not a Hopper, compute_90a PTX is never launched there: the cell says so
// and the virtual GPU runs it; on an sm_90 GPU it is measured.
func TestHopperCellNotLaunchedOnOtherGPUs(t *testing.T) {
	nv, err := kcuda.LoadNVRTCFrom([]string{"libnvrtc.so.12"})
	if err != nil {
		t.Skipf("skipping: no NVRTC 12 (%v)", err)
	}
	ampere := &deviceGPU{testGPU{nv: nv, device: true}, 80}
	rec := runCellOn(t, clusterSumCell, ampere)
	if len(ampere.requests) != 0 {
		t.Errorf("sm_80: %d worker requests, want none", len(ampere.requests))
	}
	if noteWith(rec, "compute_90a PTX, which runs on sm_90 GPUs only, and this server's GPU (test GPU) is sm_80") == "" {
		t.Errorf("sm_80: notes %+v, want why it is emulated only", rec.Notes)
	}
	if rows := rec.RowsOf("emulated"); len(rows) != 1 || rows[0].Bad {
		t.Errorf("sm_80: emulated rows %+v, want one ok", rows)
	}
	hopper := &deviceGPU{testGPU{nv: nv, device: true}, 90}
	runCellOn(t, clusterSumCell, hopper)
	if len(hopper.requests) != 1 {
		t.Errorf("sm_90: %d worker requests, want one", len(hopper.requests))
	}
}

// A compiler without compute_90a (NVRTC 11.8) compiles the H100's cell for compute_90, and the cell
// warns what that loses.
func TestHopperCellOnNVRTC11(t *testing.T) {
	nv, err := kcuda.LoadNVRTCFrom([]string{"libnvrtc.so.11.2"})
	if err != nil {
		t.Skipf("skipping: no NVRTC 11 (%v)", err)
	}
	rec := runCellOn(t, clusterSumCell, &testGPU{nv: nv})
	if noteWith(rec, "compiles for compute_90, not the H100 SXM's compute_90a") == "" {
		t.Errorf("notes %+v: want the compute_90 warning", rec.Notes)
	}
}

// hopperCase is a Hopper kernel run through a cell: ok, or a mistake in it, which the run must
// report (want, in an error note at both sizes) on the cell line holding at.
type hopperCase struct {
	name, cell string
	want, at   string
}

// bug is cell with the first of each old replaced by its new (pairs), which must be there.
func bug(t *testing.T, cell string, pairs ...string) string {
	t.Helper()
	for i := 0; i < len(pairs); i += 2 {
		if !strings.Contains(cell, pairs[i]) {
			t.Fatalf("%q is not in the cell", pairs[i])
		}
		cell = strings.Replace(cell, pairs[i], pairs[i+1], 1)
	}
	return cell
}

// lineOf is the cell line (1-based) of the first line of cell holding s, or 0.
func lineOf(cell, s string) int {
	for i, l := range strings.Split(cell, "\n") {
		if strings.Contains(l, s) {
			return i + 1
		}
	}
	return 0
}

// The hidden set's kinds of Hopper kernel run in cuda cells without a GPU: a wgmma GEMM fed by TMA
// through a two-stage mbarrier pipeline, its warp-specialised form (setmaxnreg, full and empty
// barriers) and a cluster reduction over distributed shared memory compute their problems (the
// GEMMs checked at BF16's tolerance against the float64 reference); and each mistake is reported
// with its line: a wgmma reading what threads wrote without fence.proxy.async; an expect_tx count
// too high (a hang at the wait, not a timeout) and too low (the phase completes before the copy);
// wgmma accumulators read before wgmma.wait_group; a TMA box outside the tensor (coordinates in
// bytes); a producer refilling a stage without waiting on the consumers' empty barrier; a block
// exiting while its cluster partner reads its shared memory.
func TestHopperKernelsInCells(t *testing.T) {
	nv, err := kcuda.LoadNVRTCFrom([]string{"libnvrtc.so.12"})
	if err != nil {
		t.Skipf("skipping: no NVRTC 12 (%v)", err)
	}
	const bytesF32, tx = "(BM * BK + BK * BN) * sizeof(float)", "TILE_BYTES = "
	cases := []hopperCase{
		{name: "wgmma GEMM", cell: hopperGEMMCell},
		{name: "warp-specialised GEMM", cell: hopperWSCell},
		{name: "cluster reduction", cell: clusterReduceCell},
		{"no fence.proxy.async", bug(t, hopperGEMMCell, "\t\tasm volatile(\"fence.proxy.async.shared::cta;\" ::: \"memory\"); // FENCE\n", ""),
			"written through the generic proxy", `"l"(descriptor(a))`},
		{"expect_tx too high", bug(t, hopperGEMMCell, tx+bytesF32, tx+bytesF32+" + 16"),
			"hang: thread (0,0,0) of block (0,0,0)", `"=r"(done)`},
		{"expect_tx too low", bug(t, hopperGEMMCell, tx+bytesF32, tx+"(BM * BK + BK * BN) * sizeof(__nv_bfloat16)"),
			"which completed without them", `"l"(tmB)`},
		{"accumulators read before wgmma.wait_group", bug(t, hopperGEMMCell, "sizes: [80]", "sizes: [16]",
			"\t\tasm volatile(\"wgmma.wait_group.sync.aligned 0;\" ::: \"memory\"); // WAIT\n", ""),
			"wgmma", "C[row * N + col] = d[j]"},
		{"TMA box outside the tensor", bug(t, hopperGEMMCell, `"l"(tmA), "r"(k0)`, `"l"(tmA), "r"(k0 * (int)sizeof(float))`),
			"lies entirely outside its tensor", `"l"(tmA)`},
		{"producer refills a stage before the consumers' empty arrival", bug(t, hopperWSCell, "\t\t\tif (kt >= STAGES) wait(&empty[s], (kt / STAGES - 1) & 1); // EMPTY\n", ""),
			"with no mbarrier wait or barrier ordering the write", "a16[s] + core(i / BK"},
		{"no cluster.sync before exiting", bug(t, clusterReduceCell, "\tcluster.sync(); // LAST", "\t// LAST"),
			"which has exited: its shared memory is gone", "map_shared_rank"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			k := New(cells.Env{Kernels: gpuAvailable(), Limits: harness.DefaultLimits(), GPU: &testGPU{nv: nv}})
			r, err := k.Parse(cells.Cell{Source: c.cell})
			if err != nil {
				t.Fatal(err)
			}
			rec := &cellstest.Recorder{}
			if err := r.Run(context.Background(), rec); err != nil {
				t.Fatal(err)
			}
			if noteWith(rec, "compiles for compute_90a") == "" {
				t.Errorf("notes %+v: want compute_90a", rec.Notes)
			}
			var faults []string
			for _, n := range rec.Notes {
				if n.Level == "error" {
					faults = append(faults, n.Message)
				}
			}
			if c.want == "" {
				rows, sizes := rec.RowsOf("emulated"), strings.Count(c.cell[:strings.Index(c.cell, "\n---")], ",")
				if len(faults) > 0 || len(rows) == 0 || len(rows) > sizes+1 {
					t.Fatalf("faults %q, %d rows; want one ok row per size", faults, len(rows))
				}
				for _, row := range rows {
					if row.Bad || row.Values[5] != "ok" {
						t.Errorf("row %v: want ok", row.Values)
					}
				}
				return
			}
			line := fmt.Sprintf("line %d:", lineOf(c.cell, c.at))
			if len(faults) == 0 {
				t.Fatalf("no fault reported; notes %+v", rec.Notes)
			}
			for _, f := range faults {
				if !strings.Contains(f, c.want) || !strings.Contains(f, line) {
					t.Errorf("fault %q: want %q at %s", f, c.want, line)
				}
			}
		})
	}
}

// The Hopper kernels a learner writes in cuda cells (issue 37's bars), written fresh for these
// tests, and the mistakes each invites.

// hopperHelpers are the GEMMs' shared device code: the wgmma operand layout and descriptor, an
// mbarrier parity wait, the TMA loads of one k-step's tiles, and one wgmma.m64n64k16.
const hopperHelpers = `#include <cuda.h>
#include <cuda_bf16.h>

// 64×64 tiles of C with wgmma.m64n64k16 (BF16 in, FP32 accumulators); TMA brings FP32 tiles of A
// and B, 16 columns of k at a time, which the threads convert to BF16 in wgmma's layout.
constexpr int BM = 64, BN = 64, BK = 16, STAGES = 2;
constexpr unsigned TILE_BYTES = (BM * BK + BK * BN) * sizeof(float);

__device__ __forceinline__ unsigned sh(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }

// Byte offset of element (row, k) of a 64×16 BF16 operand, K-major without swizzle: 8×8 core
// matrices of 128 bytes, the two along k 128 bytes apart (LBO), the next 8 rows 256 bytes on (SBO).
__device__ __forceinline__ int core(int row, int k) { return (row / 8) * 256 + (row % 8) * 16 + (k / 8) * 128 + (k % 8) * 2; }

__device__ __forceinline__ unsigned long long descriptor(const void* p) {
	return (unsigned long long)((sh(p) & 0x3FFFF) >> 4) | (unsigned long long)(128 >> 4) << 16 | (unsigned long long)(256 >> 4) << 32;
}

__device__ __forceinline__ void wait(unsigned long long* bar, unsigned parity) {
	unsigned done = 0;
	while (!done)
		asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
			: "=r"(done) : "r"(sh(bar)), "r"(parity) : "memory");
}

__device__ __forceinline__ void load(unsigned long long* bar, float* a, float* b, const CUtensorMap* tmA, const CUtensorMap* tmB, int m0, int n0, int k0) {
	asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(sh(bar)), "r"(TILE_BYTES) : "memory");
	asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
		:: "r"(sh(a)), "l"(tmA), "r"(k0), "r"(m0), "r"(sh(bar)) : "memory");
	asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
		:: "r"(sh(b)), "l"(tmB), "r"(n0), "r"(k0), "r"(sh(bar)) : "memory");
}

__device__ __forceinline__ void zero(float (&d)[32]) {
#pragma unroll
	for (int j = 0; j < 32; j++) d[j] = 0.f;
}

__device__ __forceinline__ void mma(float (&d)[32], const void* a, const void* b) {
	asm volatile("{ .reg .pred p; setp.ne.b32 p, 1, 0;\n"
		"wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 "
		"{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
		"%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, %32, %33, p, 1, 1, 0, 0; }"
		: "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
		  "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
		  "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
		  "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
		: "l"(descriptor(a)), "l"(descriptor(b)));
}

`

// hopperGEMMHeader and hopperWSHeader are the GEMM cells' headers: matmul in BF16, one 64×64 tile
// of C per block, TMA maps over A (16 columns × 64 rows) and B (64 columns × 16 rows).
const hopperGEMMHeader = `kernel: gemm
problem: matmul
gpu: H100 SXM
precision: bf16
block: [128]
grid: ["ceil(n/64)", "ceil(n/64)"]
sizes: [80]
tensor_maps: [{param: tmA, of: A, box: [16, 64]}, {param: tmB, of: B, box: [64, 16]}]
---
`

const hopperWSHeader = `kernel: gemm_ws
problem: matmul
gpu: H100 SXM
precision: bf16
block: [256]
grid: ["ceil(n/64)", "ceil(n/64)"]
sizes: [80]
tensor_maps: [{param: tmA, of: A, box: [16, 64]}, {param: tmB, of: B, box: [64, 16]}]
---
`

// hopperGEMMCell is the wgmma GEMM with TMA loads and a two-stage mbarrier pipeline.
const hopperGEMMCell = hopperGEMMHeader + hopperHelpers + `// One warpgroup: a two-stage ring of TMA copies (one mbarrier per stage, its transaction count the
// tile bytes); the threads convert each tile, fence the async proxy, and the warpgroup multiplies.
extern "C" __global__ void __launch_bounds__(128) gemm(const float* A, const float* B, float* C, int M, int N, int K,
		const __grid_constant__ CUtensorMap tmA, const __grid_constant__ CUtensorMap tmB) {
	__shared__ alignas(128) float stA[STAGES][BM * BK]; // as TMA writes the boxes: row-major
	__shared__ alignas(128) float stB[STAGES][BK * BN];
	__shared__ alignas(128) __nv_bfloat16 a16[BM * BK];
	__shared__ alignas(128) __nv_bfloat16 b16[BN * BK];
	__shared__ alignas(8) unsigned long long full[STAGES];
	int t = threadIdx.x, m0 = blockIdx.y * BM, n0 = blockIdx.x * BN, tiles = (K + BK - 1) / BK;
	if (t == 0) {
		for (int s = 0; s < STAGES; s++)
			asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(sh(&full[s])) : "memory");
		asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
	}
	__syncthreads();
	if (t == 0)
		for (int s = 0; s < STAGES && s < tiles; s++) load(&full[s], stA[s], stB[s], &tmA, &tmB, m0, n0, s * BK);
	float d[32];
	zero(d);
	for (int kt = 0; kt < tiles; kt++) {
		int s = kt % STAGES;
		wait(&full[s], (kt / STAGES) & 1);
		for (int i = t; i < BM * BK; i += 128)
			*(__nv_bfloat16*)((char*)a16 + core(i / BK, i % BK)) = __float2bfloat16(stA[s][i]);
		for (int i = t; i < BK * BN; i += 128)
			*(__nv_bfloat16*)((char*)b16 + core(i % BN, i / BN)) = __float2bfloat16(stB[s][i]);
		asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); // FENCE
		__syncthreads();
		if (t == 0 && kt + STAGES < tiles) load(&full[s], stA[s], stB[s], &tmA, &tmB, m0, n0, (kt + STAGES) * BK);
		asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
		mma(d, a16, b16);
		asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
		asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory"); // WAIT
		__syncthreads(); // a16 and b16 are written again next
	}
	int warp = t / 32, g = (t % 32) / 4, q = t % 4;
#pragma unroll
	for (int j = 0; j < 32; j++) {
		int row = m0 + 16 * warp + g + 8 * ((j >> 1) & 1), col = n0 + 8 * (j >> 2) + 2 * q + (j & 1);
		if (row < M && col < N) C[row * N + col] = d[j];
	}
}
`

// hopperWSCell is the warp-specialised GEMM: setmaxnreg, full and empty mbarriers.
const hopperWSCell = hopperWSHeader + hopperHelpers + `// Warp-specialised: warpgroup 0 produces (TMA, conversion to BF16) with few registers, warpgroup
// 1 consumes (wgmma) with many; a two-stage ring of BF16 tiles passes between them through full and
// empty mbarriers.
__device__ __forceinline__ void arrive(unsigned long long* bar) {
	asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(sh(bar)) : "memory");
}

extern "C" __global__ void __launch_bounds__(256, 1) gemm_ws(const float* A, const float* B, float* C, int M, int N, int K,
		const __grid_constant__ CUtensorMap tmA, const __grid_constant__ CUtensorMap tmB) {
	__shared__ alignas(128) float stA[STAGES][BM * BK];
	__shared__ alignas(128) float stB[STAGES][BK * BN];
	__shared__ alignas(128) __nv_bfloat16 a16[STAGES][BM * BK];
	__shared__ alignas(128) __nv_bfloat16 b16[STAGES][BN * BK];
	__shared__ alignas(8) unsigned long long landed[STAGES], full[STAGES], empty[STAGES];
	int t = threadIdx.x % 128, wg = threadIdx.x / 128, m0 = blockIdx.y * BM, n0 = blockIdx.x * BN, tiles = (K + BK - 1) / BK;
	if (threadIdx.x == 0) {
		for (int s = 0; s < STAGES; s++) {
			asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(sh(&landed[s])) : "memory");
			asm volatile("mbarrier.init.shared::cta.b64 [%0], 128;" :: "r"(sh(&full[s])) : "memory");
			asm volatile("mbarrier.init.shared::cta.b64 [%0], 128;" :: "r"(sh(&empty[s])) : "memory");
		}
		asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
	}
	__syncthreads();
	if (wg == 0) { // the producer
		asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
		for (int kt = 0; kt < tiles; kt++) {
			int s = kt % STAGES;
			if (kt >= STAGES) wait(&empty[s], (kt / STAGES - 1) & 1); // EMPTY
			if (t == 0) load(&landed[s], stA[s], stB[s], &tmA, &tmB, m0, n0, kt * BK);
			wait(&landed[s], (kt / STAGES) & 1);
			for (int i = t; i < BM * BK; i += 128)
				*(__nv_bfloat16*)((char*)a16[s] + core(i / BK, i % BK)) = __float2bfloat16(stA[s][i]);
			for (int i = t; i < BK * BN; i += 128)
				*(__nv_bfloat16*)((char*)b16[s] + core(i % BN, i / BN)) = __float2bfloat16(stB[s][i]);
			asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
			arrive(&full[s]);
		}
		return;
	}
	asm volatile("setmaxnreg.inc.sync.aligned.u32 232;"); // the consumer
	float d[32];
	zero(d);
	for (int kt = 0; kt < tiles; kt++) {
		int s = kt % STAGES;
		wait(&full[s], (kt / STAGES) & 1);
		asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
		mma(d, a16[s], b16[s]);
		asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
		asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
		arrive(&empty[s]);
	}
	int warp = t / 32, g = (t % 32) / 4, q = t % 4;
#pragma unroll
	for (int j = 0; j < 32; j++) {
		int row = m0 + 16 * warp + g + 8 * ((j >> 1) & 1), col = n0 + 8 * (j >> 2) + 2 * q + (j & 1);
		if (row < M && col < N) C[row * N + col] = d[j];
	}
}
`

// clusterSumCell is the cluster reduction: partial sums read through distributed shared memory.
const clusterReduceCell = `kernel: cluster_sum
problem: reduce
gpu: H100 SXM
block: [256]
grid: ["4*ceil(n/4096)"]
sizes: [3000, 8192]
---
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

// Clusters of four blocks: each block sums its 1024 inputs in shared memory, then block rank 0
// adds its partners' partial sums, read from their shared memory (distributed shared memory), and
// adds the cluster's total to out with one atomic.
extern "C" __global__ void __cluster_dims__(4, 1, 1) cluster_sum(const float* in, float* out, int n) {
	__shared__ float part[256];
	cg::cluster_group cluster = cg::this_cluster();
	int t = threadIdx.x, base = blockIdx.x * 1024;
	float s = 0.f;
	for (int i = base + t; i < base + 1024 && i < n; i += 256) s += in[i];
	part[t] = s;
	__syncthreads();
	for (int w = 128; w > 0; w /= 2) {
		if (t < w) part[t] += part[t + w];
		__syncthreads();
	}
	cluster.sync(); // every block's part[0] is ready
	if (cluster.block_rank() == 0 && t == 0) {
		float total = part[0];
		for (unsigned r = 1; r < cluster.num_blocks(); r++) total += *cluster.map_shared_rank(&part[0], r);
		atomicAdd(out, total);
	}
	cluster.sync(); // LAST: the partners' shared memory stays until rank 0 has read it
}
`
