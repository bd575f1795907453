package vgpu

import (
	"context"
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"
)

// tmaAsm declares the tensor map type (cuda.h's CUtensorMap, which the headers NVRTC finds here
// may lack) and the inline-asm forms of the TMA copies (PTX ISA 8.x, "cp.async.bulk.tensor"). It
// includes no header: libcu++'s <cuda/barrier>, which declared CUtensorMap's name here before, took
// about 0.6 CPU s of each compile (against 0.04 s without), and the kernels use none of it
// (the libcu++ tests compile it where they do: libcuxxKernels).
const tmaAsm = `typedef struct CUtensorMap_st CUtensorMap;
struct alignas(64) CUtensorMap_st { unsigned long long opaque[16]; };
` + mbarrierAsm + `
__device__ __forceinline__ void tma_2d(unsigned dst, const CUtensorMap* m, int x, int y, unsigned bar) {
	asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
		:: "r"(dst), "l"(m), "r"(x), "r"(y), "r"(bar) : "memory");
}
__device__ __forceinline__ void bulk_1d(unsigned dst, const void* src, unsigned n, unsigned bar) {
	asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
		:: "r"(dst), "l"(src), "r"(n), "r"(bar) : "memory");
}
`

// tileKernel: block (bx, by) loads the 8×16 box at (16·bx, 8·by) with one TMA copy whose bytes
// thread 0 announces with arrive.expect_tx (EXPECT), waits on the phase, and writes the tile out.
const tileKernel = tmaAsm + `
extern "C" __global__ void k(const __grid_constant__ CUtensorMap tmap, float* out) {
	__shared__ alignas(128) float tile[8 * 16];
	__shared__ unsigned long long bar;
	if (threadIdx.x == 0) mb_init(smem(&bar), 1);
	__syncthreads();
	if (threadIdx.x == 0) {
		mb_arrive_tx(smem(&bar), EXPECT);
		tma_2d(smem(tile) + DSTOFF, &tmap, 16 * blockIdx.x + XOFF, 8 * blockIdx.y, smem(&bar));
	}
	mb_wait_parity(smem(&bar), 0); // the wait
	int b = blockIdx.y * gridDim.x + blockIdx.x;
	for (int i = threadIdx.x; i < 128; i += blockDim.x) out[b * 128 + i] = tile[i];
}
`

func tileSource(expect, dstOff, xOff int) string {
	return strings.NewReplacer("EXPECT", strconv.Itoa(expect), "DSTOFF", strconv.Itoa(dstOff), "XOFF", strconv.Itoa(xOff)).Replace(tileKernel)
}

// launchTile runs a tile kernel over a 40×20 float matrix (3×3 boxes of 16×8, the last column
// and row of boxes partly outside it).
func launchTile(t *testing.T, m *Module, swz Swizzle, box []int) ([]float32, *Buffer, Counts, error) {
	t.Helper()
	return launchTileChecked(t, m, swz, box, true)
}

// launchTileChecked is launchTile with the hazard check on or off (race).
func launchTileChecked(t *testing.T, m *Module, swz Swizzle, box []int, race bool) ([]float32, *Buffer, Counts, error) {
	t.Helper()
	const W, H = 40, 20
	a := make([]float32, W*H)
	for i := range a {
		a[i] = float32(i + 1)
	}
	A := Float32Buffer("A", a)
	out := NewOutput("out", 9*128*4, Poisoned)
	tm := TensorMapArg(TensorMap{Buffer: A, ElemBytes: 4, Dims: []int{W, H}, Strides: []int64{4 * W}, Box: box, Swizzle: swz})
	c, err := Launch(context.Background(), m, "k", LaunchConfig{Grid: [3]int{3, 3}, Block: [3]int{64},
		Params: []Arg{tm, Ptr(out)}, Buffers: []*Buffer{A, out}, NoRacecheck: !race})
	return a, out, c, err
}

// A 2-D TMA tile load matches a CPU reference: each block's box, zero-filled where it lies
// outside the 40×20 tensor (the right column of boxes covers x 32..47, the bottom row y 16..23).
// Each copy is one TMA request of 512 bytes, none of them a global load request.
func TestTMATileLoadMatchesReference(t *testing.T) {
	m := compileSM90(t, tileSource(512, 0, 0))
	a, out, c, err := launchTile(t, m, SwizzleNone, []int{16, 8})
	if err != nil {
		t.Fatal(err)
	}
	got := out.Float32s()
	for by := range 3 {
		for bx := range 3 {
			for r := range 8 {
				for col := range 16 {
					x, y := 16*bx+col, 8*by+r
					want := float32(0)
					if x < 40 && y < 20 {
						want = a[y*40+x]
					}
					if g := got[(by*3+bx)*128+r*16+col]; g != want {
						t.Fatalf("block (%d,%d) tile[%d][%d] = %v, want %v", bx, by, r, col, g, want)
					}
				}
			}
		}
	}
	if c.TMARequests != 9 || c.TMABytes != 9*512 || c.GlobalLoadRequests != 0 {
		t.Errorf("TMA requests %d, bytes %d, global load requests %d; want 9, 4608, 0", c.TMARequests, c.TMABytes, c.GlobalLoadRequests)
	}
}

// With a 128-byte swizzle the 16-byte chunk j of row r of a 32-float-wide box lands at chunk
// j ^ (r % 8): the kernel reads the tile back unswizzled and writes it raw; the raw tile is the
// permutation.
func TestTMASwizzle128B(t *testing.T) {
	src := strings.Replace(tileSource(1024, 0, 0), "float tile[8 * 16]", "float tile[8 * 32]", 1)
	src = strings.Replace(src, "__shared__ alignas(128)", "__shared__ alignas(1024)", 1)
	src = strings.Replace(src, "i < 128; i += blockDim.x) out[b * 128 + i]", "i < 256; i += blockDim.x) out[b * 256 + i]", 1)
	m := compileSM90(t, src)
	const W, H = 40, 20
	a := make([]float32, W*H)
	for i := range a {
		a[i] = float32(i + 1)
	}
	A := Float32Buffer("A", a)
	out := NewOutput("out", 256*4, Poisoned)
	tm := TensorMapArg(TensorMap{Buffer: A, ElemBytes: 4, Dims: []int{W, H}, Strides: []int64{4 * W}, Box: []int{32, 8}, Swizzle: Swizzle128B})
	if _, err := Launch(context.Background(), m, "k", LaunchConfig{Grid: [3]int{1}, Block: [3]int{64},
		Params: []Arg{tm, Ptr(out)}, Buffers: []*Buffer{A, out}}); err != nil {
		t.Fatal(err)
	}
	got := out.Float32s()
	for r := range 8 {
		for j := range 8 { // the 16-byte chunks of the row
			for e := range 4 {
				want := a[r*W+4*j+e]
				if g := got[r*32+4*(j^r)+e]; g != want {
					t.Fatalf("row %d chunk %d element %d at chunk %d = %v, want %v", r, j, e, j^r, g, want)
				}
			}
		}
	}
}

// The 1-D bulk copy completes its bytes on the mbarrier: 64 floats (256 bytes) copied and read
// back after the wait; a copy is a TMA request, not a global load.
func TestTMABulkCopy1D(t *testing.T) {
	m := compileSM90(t, tmaAsm+`
extern "C" __global__ void k(const float* in, float* out) {
	__shared__ alignas(128) float buf[64];
	__shared__ unsigned long long bar;
	if (threadIdx.x == 0) mb_init(smem(&bar), 1);
	__syncthreads();
	if (threadIdx.x == 0) {
		mb_arrive_tx(smem(&bar), 256);
		bulk_1d(smem(buf), in + 64 * blockIdx.x, 256, smem(&bar));
	}
	mb_wait_parity(smem(&bar), 0);
	out[64 * blockIdx.x + threadIdx.x] = 2 * buf[threadIdx.x];
}
`)
	in := make([]float32, 128)
	for i := range in {
		in[i] = float32(i) - 3
	}
	out, c, err := launchMbar(t, m, 64, in)
	if err != nil {
		t.Fatal(err)
	}
	for i, g := range out.Float32s() {
		if want := 2 * in[i]; g != want {
			t.Fatalf("out[%d] = %v, want %v", i, g, want)
		}
	}
	if c.TMARequests != 2 || c.TMABytes != 512 || c.GlobalLoadRequests != 0 {
		t.Errorf("TMA requests %d, bytes %d, global loads %d; want 2, 512, 0", c.TMARequests, c.TMABytes, c.GlobalLoadRequests)
	}
}

// The buggy variants are caught at their lines: an expect_tx of more bytes than the copy moves
// leaves the phase incomplete (a hang at the wait, naming the outstanding bytes); a box entirely
// outside the tensor and a destination not 128-byte aligned are faults at the copy.
func TestTMABuggyVariants(t *testing.T) {
	for _, tc := range []struct {
		name                 string
		expect, dstOff, xOf  int
		kind, at, instr, msg string
	}{ // a fault's line is the last line of the inline function's asm statement (its .loc)
		{"expect too many bytes", 1024, 0, 0, "hang", `: "=r"(ok) : "r"(a), "r"(parity)`, "mbarrier.try_wait", "tx-count of 512 bytes"},
		{"box outside the tensor", 512, 0, 48, "out of bounds", `"l"(m), "r"(x), "r"(y)`, "cp.async.bulk.tensor", "entirely outside"},
		{"misaligned destination", 512, 16, 0, "misaligned", `"l"(m), "r"(x), "r"(y)`, "cp.async.bulk.tensor", "128-byte aligned"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := tileSource(tc.expect, tc.dstOff, tc.xOf)
			m := compileSM90(t, src)
			_, _, _, err := launchTile(t, m, SwizzleNone, []int{16, 8})
			var f *Fault
			if !errors.As(err, &f) || f.Kind != tc.kind || !strings.Contains(f.Msg, tc.msg) {
				t.Fatalf("got %v, want a %q fault saying %q", err, tc.kind, tc.msg)
			}
			if want := "k.cu:" + strconv.Itoa(lineOf(t, src, tc.at)); f.Source != want || !strings.Contains(f.Instr, tc.instr) {
				t.Errorf("fault at %s (%s), want %s (%s)", f.Source, f.Instr, want, tc.instr)
			}
		})
	}
}

// Launch checks a tensor map as cuTensorMapEncodeTiled would.
func TestTensorMapArgChecked(t *testing.T) {
	m := compileSM90(t, tileSource(512, 0, 0))
	A, out := NewBuffer("A", 40*20*4), NewOutput("out", 9*128*4, Poisoned)
	for _, tc := range []struct {
		tm   TensorMap
		want string
	}{
		{TensorMap{Buffer: A, ElemBytes: 4, Dims: []int{40, 20}, Strides: []int64{160}, Box: []int{3, 8}}, "multiple of 16"},
		{TensorMap{Buffer: A, ElemBytes: 4, Dims: []int{40, 20}, Strides: []int64{168}, Box: []int{16, 8}}, "stride"},
		{TensorMap{Buffer: A, ElemBytes: 4, Dims: []int{40, 40}, Strides: []int64{160}, Box: []int{16, 8}}, "ends at byte"},
		{TensorMap{Buffer: A, ElemBytes: 4, Dims: []int{40, 20}, Strides: []int64{160}, Box: []int{16, 8}, Swizzle: Swizzle32B}, "swizzle span"},
	} {
		_, err := Launch(context.Background(), m, "k", LaunchConfig{Grid: [3]int{3, 3}, Block: [3]int{64},
			Params: []Arg{TensorMapArg(tc.tm), Ptr(out)}, Buffers: []*Buffer{A, out}})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: got %v, want an error saying %q", tc.tm, err, tc.want)
		}
	}
}

// Reading the TMA destination before waiting on the barrier is a hazard at the read naming the
// copy (tmarace.go). Without the hazard check it reads what was there before the copy (the copy
// completes at the wait): the block's poison, an uninitialised-read note at the read.
func TestTMAReadBeforeWait(t *testing.T) {
	src := strings.Replace(tileSource(512, 0, 0), "mb_wait_parity(smem(&bar), 0); // the wait", "float early = tile[threadIdx.x]; // the early read\n\tmb_wait_parity(smem(&bar), 0);\n\tout[threadIdx.x] = early;", 1)
	src = strings.Replace(src, "for (int i = threadIdx.x;", "if (0) for (int i = threadIdx.x;", 1)
	m := compileSM90(t, src)
	want := lineOf(t, src, "// the early read")
	_, _, _, err := launchTile(t, m, SwizzleNone, []int{16, 8})
	var f *Fault
	if !errors.As(err, &f) || f.Kind != "hazard" || f.Source != "k.cu:"+strconv.Itoa(want) ||
		!strings.Contains(f.OtherInstr, "cp.async.bulk.tensor") || !strings.Contains(f.Msg, "TMA copy in flight") {
		t.Fatalf("got %v, want a hazard at k.cu:%d naming the copy", err, want)
	}
	_, out, c, err := launchTileChecked(t, m, SwizzleNone, []int{16, 8}, false)
	if err != nil {
		t.Fatal(err)
	}
	if got := out.Float32s()[0]; !math.IsNaN(float64(got)) { // poison reads as NaN
		t.Errorf("early read = %v, want the poison (NaN)", got)
	}
	if len(c.Notes) == 0 || c.Notes[0].Kind != "uninitialised read" || c.Notes[0].Source != "k.cu:"+strconv.Itoa(want) {
		t.Errorf("notes %+v, want an uninitialised read at k.cu:%d", c.Notes, want)
	}
}

// The libcu++ (CUDA 12.4) way: cuda::barrier, cde::cp_async_bulk_tensor_2d_global_to_shared,
// cuda::memcpy_async with aligned_size_t<16> (a 1-D bulk copy on sm_90) and barrier_arrive_tx,
// every thread arriving and waiting with a token; the tile plus the copied row match the CPU.
func TestTMALibcuxxBarrier(t *testing.T) {
	m := compileLibcuxx(t)
	const W, H = 40, 20
	a := make([]float32, W*H)
	for i := range a {
		a[i] = float32(i + 1)
	}
	in := make([]float32, 64)
	for i := range in {
		in[i] = float32(-i)
	}
	A, In := Float32Buffer("A", a), Float32Buffer("in", in)
	out := NewOutput("out", 3*128*4, Poisoned)
	tm := TensorMapArg(TensorMap{Buffer: A, ElemBytes: 4, Dims: []int{W, H}, Strides: []int64{4 * W}, Box: []int{16, 8}})
	if _, err := Launch(context.Background(), m, "tma_barrier", LaunchConfig{Grid: [3]int{3}, Block: [3]int{128},
		Params: []Arg{tm, Ptr(In), Ptr(out)}, Buffers: []*Buffer{A, In, out}}); err != nil {
		t.Fatal(err)
	}
	for i, got := range out.Float32s() {
		b, e := i/128, i%128
		x, y := 16*b+e%16, e/16
		want := in[e%64]
		if x < W {
			want += a[y*W+x]
		}
		if got != want {
			t.Fatalf("out[%d] = %v, want %v", i, got, want)
		}
	}
}

// A TMA load then a TMA store (cp.async.bulk.tensor.2d.global.shared::cta.bulk_group, commit and
// wait_group.read) copies a 40×20 matrix through shared memory in 32×8 boxes, partly outside it:
// the copy is exact, with and without the 128-byte swizzle (applied on the way in and undone on
// the way out), and each block makes one TMA load and one TMA store.
func TestTMAStoreRoundTrip(t *testing.T) {
	m := compileSM90(t, tmaAsm+`
extern "C" __global__ void k(const __grid_constant__ CUtensorMap src, const __grid_constant__ CUtensorMap dst) {
	__shared__ alignas(1024) float tile[8 * 32];
	__shared__ unsigned long long bar;
	if (threadIdx.x == 0) mb_init(smem(&bar), 1);
	__syncthreads();
	if (threadIdx.x == 0) {
		mb_arrive_tx(smem(&bar), sizeof(tile));
		tma_2d(smem(tile), &src, 32 * blockIdx.x, 8 * blockIdx.y, smem(&bar));
	}
	mb_wait_parity(smem(&bar), 0);
	if (threadIdx.x == 0) {
		asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];"
			:: "l"(&dst), "r"(32 * blockIdx.x), "r"(8 * blockIdx.y), "r"(smem(tile)) : "memory");
		asm volatile("cp.async.bulk.commit_group;");
		asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
	}
}
`)
	const W, H = 40, 20
	a := make([]float32, W*H)
	for i := range a {
		a[i] = float32(i) * 0.25
	}
	for _, swz := range []Swizzle{SwizzleNone, Swizzle128B} {
		A, B := Float32Buffer("A", a), NewOutput("B", 4*W*H, Poisoned)
		tm := func(b *Buffer) Arg {
			return TensorMapArg(TensorMap{Buffer: b, ElemBytes: 4, Dims: []int{W, H}, Strides: []int64{4 * W}, Box: []int{32, 8}, Swizzle: swz})
		}
		c, err := Launch(context.Background(), m, "k", LaunchConfig{Grid: [3]int{2, 3}, Block: [3]int{32},
			Params: []Arg{tm(A), tm(B)}, Buffers: []*Buffer{A, B}})
		if err != nil {
			t.Fatal(err)
		}
		for i, got := range B.Float32s() {
			if got != a[i] {
				t.Fatalf("swizzle %d: B[%d] = %v, want %v", swz, i, got, a[i])
			}
		}
		if c.TMARequests != 12 || c.GlobalStoreRequests != 0 || len(c.Notes) != 0 {
			t.Errorf("swizzle %d: TMA requests %d, global stores %d, notes %v; want 12, 0, none", swz, c.TMARequests, c.GlobalStoreRequests, c.Notes)
		}
	}
}

// A warp-specialised pipeline: warp 0's lane 0 produces 8 chunks of 64 floats with 1-D bulk
// copies into a ring of 2 stages (waiting on each stage's "empty" barrier, announcing the bytes
// on its "full" barrier), warps 1 and 2 consume them (waiting on "full", arriving on "empty"):
// each consumer thread's sum over the chunks matches the CPU's, and no hazard is reported.
func TestTMAWarpSpecialisedPipeline(t *testing.T) {
	m := compileSM90(t, tmaAsm+`
extern "C" __global__ void k(const float* in, float* out) {
	__shared__ alignas(128) float ring[2][64];
	__shared__ unsigned long long full[2], empty[2];
	int warp = threadIdx.x / 32;
	if (threadIdx.x == 0) {
		for (int s = 0; s < 2; s++) { mb_init(smem(&full[s]), 1); mb_init(smem(&empty[s]), 64); }
	}
	__syncthreads();
	if (warp == 0) {
		if (threadIdx.x == 0) {
			for (int it = 0; it < 8; it++) {
				int s = it % 2;
				mb_wait_parity(smem(&empty[s]), ((it / 2) & 1) ^ 1);
				mb_arrive_tx(smem(&full[s]), 256);
				bulk_1d(smem(ring[s]), in + 64 * it, 256, smem(&full[s]));
			}
		}
		return;
	}
	int c = threadIdx.x - 32;
	float acc = 0;
	for (int it = 0; it < 8; it++) {
		int s = it % 2;
		mb_wait_parity(smem(&full[s]), (it / 2) & 1);
		acc += ring[s][c] * (it + 1);
		mb_arrive(smem(&empty[s]));
	}
	out[blockIdx.x * 64 + c] = acc;
}
`)
	in := make([]float32, 512)
	for i := range in {
		in[i] = float32(i%13) - 6
	}
	In, out := Float32Buffer("in", in), NewOutput("out", 2*64*4, Poisoned)
	c, err := Launch(context.Background(), m, "k", LaunchConfig{Grid: [3]int{2}, Block: [3]int{96},
		Params: []Arg{Ptr(In), Ptr(out)}, Buffers: []*Buffer{In, out}})
	if err != nil {
		t.Fatal(err)
	}
	for i, got := range out.Float32s() {
		var want float32
		for it := range 8 {
			want += in[64*it+i%64] * float32(it+1)
		}
		if got != want {
			t.Fatalf("out[%d] = %v, want %v", i, got, want)
		}
	}
	if c.TMARequests != 16 || c.TMABytes != 16*256 {
		t.Errorf("TMA requests %d, bytes %d; want 16, 4096", c.TMARequests, c.TMABytes)
	}
}
