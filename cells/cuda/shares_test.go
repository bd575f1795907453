package cuda

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/gpuplayground/playground/cells"
	"github.com/gpuplayground/playground/cells/cellstest"
	kcuda "github.com/gpuplayground/playground/gpu/nvidia"
	"github.com/gpuplayground/playground/gpumodel"
	"github.com/gpuplayground/playground/harness"
	"github.com/gpuplayground/playground/vgpu"
	"github.com/gpuplayground/playground/vgpurun"
)

// lineInfoGPU compiles as the server does: with line information, so the PTX has .loc lines.
type lineInfoGPU struct{ testGPU }

func (g *lineInfoGPU) Compile(ctx context.Context, src, name, arch string) (string, error) {
	return kcuda.CompileFor(ctx, g.nv, nil, kcuda.FindHeaders(g.nv), src, name, archOr(arch, "80"))
}

// emulated compiles cell's kernel as the server does and runs it once in the virtual GPU at n.
func emulated(t *testing.T, cell string, n int) (string, vgpurun.Result, gpumodel.GPU) {
	t.Helper()
	nv, err := kcuda.LoadNVRTC()
	if err != nil {
		t.Skipf("skipping: no NVRTC (%v)", err)
	}
	g := &lineInfoGPU{testGPU{nv: nv}}
	spec, err := Parse(cell, gpuAvailable(), harness.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	ptx, err := (&run{env: cells.Env{GPU: g}, spec: spec}).compile(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	req, err := spec.request(ptx, n)
	if err != nil {
		t.Fatal(err)
	}
	req.N, req.DType, req.GPU = n, spec.DType, gpumodel.Or(spec.GPU)
	res, err := vgpurun.Run(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	return ptx, res, req.GPU
}

// showPTXOf runs cell's Show PTX action as a server without a GPU does.
func showPTXOf(t *testing.T, cell string) *cellstest.Recorder {
	t.Helper()
	nv, err := kcuda.LoadNVRTC()
	if err != nil {
		t.Skipf("skipping: no NVRTC (%v)", err)
	}
	g := &lineInfoGPU{testGPU{nv: nv}}
	spec, err := Parse(cell, gpuAvailable(), harness.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	rec := &cellstest.Recorder{}
	if err := newShowPTX(cells.Env{Kernels: gpuAvailable(), Limits: harness.DefaultLimits(), GPU: g}, spec).Run(context.Background(), rec); err != nil {
		t.Fatal(err)
	}
	return rec
}

const conflictingTransposeCell = `kernel: k
problem: transpose
block: [32, 8]
grid: ["ceil(n/32)", "ceil(n/32)"]
sizes: [64]
---
#define T 32
extern "C" __global__ void k(const float* in, float* out, int rows, int cols) {
    __shared__ float tile[T][T];  // not padded: a column of the tile is in one bank
    int x = blockIdx.x * T + threadIdx.x, y = blockIdx.y * T + threadIdx.y;
    for (int j = 0; j < T; j += 8)
        if (x < cols && y + j < rows) tile[threadIdx.y + j][threadIdx.x] = in[(y + j) * cols + x];
    __syncthreads();
    x = blockIdx.y * T + threadIdx.x; y = blockIdx.x * T + threadIdx.y;
    for (int j = 0; j < T; j += 8)
        if (x < rows && y + j < cols) out[(y + j) * rows + x] = tile[threadIdx.x][threadIdx.y + j];
}
`

// matmulLoadsCell has its two loads on lines of their own (kernel lines 7 and 8): with ROW taken
// from threadIdx.x a warp's 32 loads of A are 32 rows apart (32 sectors, 32 lines per request) and
// its loads of B one word (1 sector); with COL from threadIdx.x, A's are one word and B's 32
// neighbours (4 sectors, 1 line).
const matmulLoadsCell = `kernel: k
block: [32, 8]
grid: ["ceil(n/32)", "ceil(n/8)"]
sizes: [128]
dtype: float32
---
extern "C" __global__ void k(const float* A, const float* B, float* C, int M, int N, int K) {
    int ROW = blockIdx.x * blockDim.x + threadIdx.x;
    int COL = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < M && col < N) {
        float sum = 0.0f;
        for (int p = 0; p < K; ++p) {
            float a = A[row * K + p];
            float b = B[p * N + col];
            sum += a * b;
        }
        C[row * N + col] = sum;
    }
}
`

func matmulLoads(uncoalesced bool) string {
	if uncoalesced {
		return strings.NewReplacer("ROW", "row", "COL", "col").Replace(matmulLoadsCell)
	}
	return strings.NewReplacer("ROW", "col", "COL", "row").Replace(matmulLoadsCell)
}

// sumOf is the sum of shares' values.
func sumOf(shares map[int]float64) float64 {
	var s float64
	for _, f := range shares {
		s += f
	}
	return s
}

// The line whose shared-memory reads conflict (a column of an unpadded tile: 32 wavefronts a
// request) takes most of the shared-memory term; padded, its share falls to about its part of the
// requests.
func TestShareOfBankConflictingLine(t *testing.T) {
	const read = 10 // the kernel's line that reads the tile by columns
	for _, padded := range []bool{false, true} {
		cell := conflictingTransposeCell
		if padded {
			cell = strings.Replace(cell, "tile[T][T];", "tile[T][T + 1];", 1)
		}
		ptx, res, gpu := emulated(t, cell, 64)
		s := gpumodel.Attribute(res.Counts, gpu, res.Occupancy, "shared memory")
		src := sourceShares(ptx, s)
		if got := sumOf(src); math.Abs(got-1) > 1e-9 {
			t.Errorf("padded %v: the lines' shares sum to %v, want 1", padded, got)
		}
		switch got := src[read]; {
		case !padded && got < 0.9:
			t.Errorf("unpadded: the conflicting line takes %.1f%% of the shared-memory time, want over 90%% (%v)", 100*got, src)
		case padded && (got < 0.3 || got > 0.7):
			t.Errorf("padded: the column read takes %.1f%% of the shared-memory time, want about half (%v)", 100*got, src)
		}
	}
}

// The load whose warps touch 32 lines a request takes nearly all of the L1 term, and more of the L2
// and DRAM terms than the load beside it; coalesced, the loads' shares turn round.
func TestShareOfUncoalescedLoad(t *testing.T) {
	const a, b = 7, 8 // the kernel's lines loading A and B
	for _, uncoalesced := range []bool{true, false} {
		ptx, res, gpu := emulated(t, matmulLoads(uncoalesced), 128)
		if !res.OK {
			t.Fatalf("wrong result: %v", res.RelError)
		}
		for _, term := range []string{"L1", "L2", "DRAM"} {
			src := sourceShares(ptx, gpumodel.Attribute(res.Counts, gpu, res.Occupancy, term))
			if got := sumOf(src); math.Abs(got-1) > 1e-9 {
				t.Errorf("%s: the lines' shares sum to %v, want 1", term, got)
			}
			switch {
			case uncoalesced && term == "L1" && src[a] < 0.9:
				t.Errorf("uncoalesced: A's load takes %.1f%% of the L1 time, want over 90%% (%v)", 100*src[a], src)
			case uncoalesced && src[a] <= src[b]:
				t.Errorf("uncoalesced: A's load takes %.1f%% of the %s time, B's %.1f%%: want A's the larger", 100*src[a], term, 100*src[b])
			case !uncoalesced && src[b] <= src[a]:
				t.Errorf("coalesced: A's load takes %.1f%% of the %s time, B's %.1f%%: want B's the larger", 100*src[a], term, 100*src[b])
			}
		}
	}
}

// Every term of every kernel here divides among its lines in full: the PTX lines' shares, and the
// kernel source lines' they add up to, sum to 100%.
func TestSharesSumTo100(t *testing.T) {
	for name, cell := range map[string]string{"conflicts": conflictingTransposeCell, "uncoalesced": matmulLoads(true), "coalesced": matmulLoads(false)} {
		ptx, res, gpu := emulated(t, cell, 64)
		for _, term := range res.Model.Terms {
			s := gpumodel.Attribute(res.Counts, gpu, res.Occupancy, term.Name)
			if term.Name == "launch" || term.Seconds == 0 {
				if len(s.Lines) != 0 {
					t.Errorf("%s: %s (%g s) has shares %v", name, term.Name, term.Seconds, s.Lines)
				}
				continue
			}
			if got := sumOf(s.Lines); math.Abs(got-1) > 1e-9 {
				t.Errorf("%s: the PTX lines' shares of %s sum to %v, want 1", name, term.Name, got)
			}
			if got := sumOf(sourceShares(ptx, s)); math.Abs(got-1) > 1e-9 {
				t.Errorf("%s: the source lines' shares of %s sum to %v, want 1", name, term.Name, got)
			}
		}
	}
}

// Show PTX on a shared-memory-bound launch: the per-line table's last column is each line's share of
// the modelled shared-memory time (summing to 100% but for rounding), the conflicting read's PTX
// line says its share, and a note names the cell line that takes most of it.
func TestShowPTXSharesOfSharedMemoryTime(t *testing.T) {
	cell := strings.Replace(conflictingTransposeCell, "sizes: [64]", "sizes: [1024]", 1)
	rec := showPTXOf(t, cell)
	if len(rec.Tables) != 1 {
		t.Fatalf("tables %+v", rec.Tables)
	}
	cols := rec.Tables[0].Columns
	if last := cols[len(cols)-1]; last.Label != "share of modelled shared-memory time" || last.Unit != "%" {
		t.Fatalf("last column %+v", last)
	}
	var sum float64
	rows := rec.RowsOf("lines")
	for _, r := range rows {
		sum += r.Values[len(r.Values)-1].(float64)
	}
	if math.Abs(sum-100) > 0.05*float64(len(rows)) {
		t.Errorf("the share column sums to %v%%, want 100%%", sum)
	}
	var note string
	for _, n := range rec.Notes {
		if strings.HasPrefix(n.Message, "Where the time goes") {
			note = n.Message
		}
	}
	// cell line 16 is the kernel's line 10, which reads the tile by columns
	if !strings.Contains(note, "bound by shared memory") || !strings.Contains(note, "Line 16 (`if (x < rows && y + j < cols) out[(y + j) * rows + x] = tile[threadIdx.x][threadIdx.y + j];`) takes 9") ||
		!strings.Contains(note, "% of the shared-memory time") {
		t.Errorf("note %q", note)
	}
	if len(rec.Texts) != 1 {
		t.Fatalf("texts %d", len(rec.Texts))
	}
	for _, line := range strings.Split(rec.Texts[0].Body, "\n") {
		if strings.Contains(line, "ld.shared") && !strings.Contains(line, "% of modelled shared-memory time") {
			t.Errorf("no share on the conflicting read: %q", line)
		}
	}
}

// AnnotateShares writes the share of the lines with the largest, after their counts.
func TestAnnotateShares(t *testing.T) {
	ptx := "ld.shared.f32\nst.global.f32\nadd.s32"
	lines := []vgpu.LineCount{
		{Line: 1, Thread: 32, SharedRequests: 1, Wavefronts: 32, IdealWavefronts: 1},
		{Line: 2, Thread: 32, Requests: 1, Sectors: 4},
		{Line: 3, Thread: 32},
	}
	s := gpumodel.Shares{Term: "shared memory", Lines: map[int]float64{1: 0.94, 2: 0.055, 3: 0.005}}
	want := "ld.shared.f32\t// 32 thr; 1 req, 32.0 wavefronts/req, 31 bank conflicts; 94% of modelled shared-memory time\n" +
		"st.global.f32\t// 32 thr; 1 req, 4.0 sectors/req; 5.5% of modelled shared-memory time\n" +
		"add.s32\t// 32 thr"
	if got := AnnotateShares(ptx, lines, s); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}
