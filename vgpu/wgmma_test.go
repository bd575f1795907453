package vgpu

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestWgmmaDescriptorDecode(t *testing.T) {
	// start 0x1420, LBO 256, SBO 1024, base offset 5, 64-byte swizzle (mode 2)
	v := uint64(0x1420>>4) | uint64(256>>4)<<16 | uint64(1024>>4)<<32 | 5<<49 | 2<<62
	got, want := decodeDesc(v), smemDesc{start: 0x1420, lbo: 256, sbo: 1024, base: 5, swizzle: 64}
	if got != want {
		t.Errorf("decodeDesc(%#x) = %+v, want %+v", v, got, want)
	}
	for mode, w := range []uint32{0, 128, 64, 32} {
		if got := decodeDesc(uint64(mode) << 62).swizzle; got != w {
			t.Errorf("mode %d: swizzle %d, want %d", mode, got, w)
		}
	}
	// the address fields keep 14 bits of (x & 0x3FFFF) >> 4: bits past them are not the start's
	if got := decodeDesc(0x3fff | 1<<14).start; got != 0x3fff0 {
		t.Errorf("start = %#x, want 0x3fff0", got)
	}
}

// The K-major swizzle atoms of PTX ISA 8.x, section 9.7.15.5.1.2 (Table 38 and its figures "K
// major 128B/64B/32B swizzling"): row r of the atom (8 rows of W bytes) holds its logical 16-byte
// chunk c at the physical chunk table[r][c].
var kMajorAtoms = map[uint32][8][]int{
	128: {{0, 1, 2, 3, 4, 5, 6, 7}, {1, 0, 3, 2, 5, 4, 7, 6}, {2, 3, 0, 1, 6, 7, 4, 5}, {3, 2, 1, 0, 7, 6, 5, 4},
		{4, 5, 6, 7, 0, 1, 2, 3}, {5, 4, 7, 6, 1, 0, 3, 2}, {6, 7, 4, 5, 2, 3, 0, 1}, {7, 6, 5, 4, 3, 2, 1, 0}},
	64: {{0, 1, 2, 3}, {0, 1, 2, 3}, {1, 0, 3, 2}, {1, 0, 3, 2}, {2, 3, 0, 1}, {2, 3, 0, 1}, {3, 2, 1, 0}, {3, 2, 1, 0}},
	32: {{0, 1}, {0, 1}, {0, 1}, {0, 1}, {1, 0}, {1, 0}, {1, 0}, {1, 0}},
	0:  {{0}, {0}, {0}, {0}, {0}, {0}, {0}, {0}},
}

func TestWgmmaKMajorSwizzleAtoms(t *testing.T) {
	for w, table := range kMajorAtoms {
		rowBytes := max(w, 16)
		d := smemDesc{start: 2048, sbo: 8 * rowBytes, lbo: 4096, swizzle: w}
		seen := map[uint32]bool{}
		for r := range 8 {
			for c, phys := range table[r] {
				for e := range 8 { // the 8 16-bit elements of the chunk
					got := d.addr16(r, 8*c+e, false)
					want := 2048 + uint32(r)*rowBytes + uint32(phys)*16 + uint32(e)*2
					if got != want {
						t.Fatalf("swizzle %d: element (%d, %d) at %d, want %d", w, r, 8*c+e, got, want)
					}
					seen[got] = true
				}
			}
		}
		if got := len(seen); got != int(8*rowBytes/2) {
			t.Errorf("swizzle %d: the atom covers %d elements, want %d (Table 38: 8x%d 128-bit elements)", w, got, 8*rowBytes/2, rowBytes/16)
		}
	}
}

func TestWgmmaLayoutStrides(t *testing.T) {
	// K-major without swizzle: 8x16-byte core matrices, the next 8 k at LBO, the next 8 rows at SBO
	d := smemDesc{lbo: 128, sbo: 512}
	for _, c := range []struct{ mn, k, want int }{{0, 0, 0}, {1, 0, 16}, {0, 1, 2}, {0, 8, 128}, {8, 0, 512}, {9, 9, 512 + 16 + 128 + 2}} {
		if got := d.addr16(c.mn, c.k, false); got != uint32(c.want) {
			t.Errorf("K-major (%d, %d) at %d, want %d", c.mn, c.k, got, c.want)
		}
	}
	// MN-major without swizzle: 16-byte units of 8 mn, k rows 16 bytes apart; next 8 mn at SBO, next 8 k at LBO
	for _, c := range []struct{ mn, k, want int }{{1, 0, 2}, {0, 1, 16}, {8, 0, 512}, {0, 8, 128}} {
		if got := d.addr16(c.mn, c.k, true); got != uint32(c.want) {
			t.Errorf("MN-major (%d, %d) at %d, want %d", c.mn, c.k, got, c.want)
		}
	}
	// MN-major 128-byte swizzle: k rows of 64 mn; chunk mn/8 of row k is at chunk (mn/8)^k;
	// the next 64 mn at LBO, the next 8 k at SBO
	s := smemDesc{lbo: 8192, sbo: 1024, swizzle: 128}
	for _, c := range []struct{ mn, k, want int }{{0, 1, 128 + 16}, {9, 1, 128 + 0 + 2}, {64, 0, 8192}, {0, 8, 1024}, {17, 3, 3*128 + (2^3)*16 + 2}} {
		if got := s.addr16(c.mn, c.k, true); got != uint32(c.want) {
			t.Errorf("MN-major 128B (%d, %d) at %d, want %d", c.mn, c.k, got, c.want)
		}
	}
	// advancing the start by 32 bytes inside a 128-byte swizzled row is the next 16 k (as K-loops do)
	a, b := smemDesc{sbo: 1024, swizzle: 128}, smemDesc{start: 32, sbo: 1024, swizzle: 128}
	for r := range 16 {
		for k := range 16 {
			if got, want := b.addr16(r, k, false), a.addr16(r, k+16, false); got != want {
				t.Fatalf("start+32: (%d, %d) at %d, want %d", r, k, got, want)
			}
		}
	}
}

// wgCase is a CUDA kernel for one block of 128 threads: C (64×n, f32) = A (64×kt) · Bᵀ for a B
// given as n×kt, both bf16 (or f16), staged in shared memory with swizzle width w (0, 32, 64, 128 bytes:
// kt = w/2, or 16·steps without swizzle), B K-major or N-major (transB: imm-trans-b = 1),
// multiplied in kt/16 wgmma steps with A from shared memory or from registers (regA), negated with
// imm-scale-a = -1 (neg). noFence drops the fence.proxy.async between the stores and the wgmma;
// perStep commits a group after each step (else one after the loop); beforeWait is code after
// the last commit.
type wgCase struct {
	n, w, kt                   int
	regA, neg, transB, noFence bool
	perStep, halfB             bool // halfB: stage only the first half of B
	f16                        bool // f16 inputs, else bf16
	transA                     bool // A M-major (imm-trans-a = 1)
	beforeWait                 string
	noWait                     bool // no wgmma.wait_group before C is stored
	rolled                     bool // #pragma unroll 1 on the K loop (NVVM copies the accumulators)
	noRace                     bool // launched with NoRacecheck
	afterMma                   string
}

func (c wgCase) typ() string {
	if c.f16 {
		return "f16"
	}
	return "bf16"
}

func (c wgCase) kernel() string {
	var dregs, dops []string
	for j := range c.n / 2 {
		dregs = append(dregs, fmt.Sprintf("%%%d", j))
		dops = append(dops, fmt.Sprintf(`"+f"(d[%d])`, j))
	}
	p := c.n / 2
	sa := map[bool]string{false: "1", true: "-1"}[c.neg]
	ta, tb := map[bool]string{false: "0", true: "1"}[c.transA], map[bool]string{false: "0", true: "1"}[c.transB]
	mma := fmt.Sprintf(`asm volatile("{ .reg .pred p; setp.ne.b32 p, %%%d, 0; wgmma.mma_async.sync.aligned.m64n%dk16.f32.%s.%s {%s}, %%%d, %%%d, p, %s, 1, %s, %s; }" : %s : "l"(da), "l"(db), "r"(scale) : "memory");`,
		p+2, c.n, c.typ(), c.typ(), strings.Join(dregs, ", "), p, p+1, sa, ta, tb, strings.Join(dops, ", "))
	if c.regA {
		mma = fmt.Sprintf(`asm volatile("{ .reg .pred p; setp.ne.b32 p, %%%d, 0; wgmma.mma_async.sync.aligned.m64n%dk16.f32.%s.%s {%s}, {%%%d, %%%d, %%%d, %%%d}, %%%d, p, %s, 1, %s; }" : %s : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(scale) : "memory");`,
			p+5, c.n, c.typ(), c.typ(), strings.Join(dregs, ", "), p, p+1, p+2, p+3, p+4, sa, tb, strings.Join(dops, ", "))
	}
	fence := `asm volatile("fence.proxy.async.shared::cta;" ::: "memory");`
	if c.noFence {
		fence = ""
	}
	step, last := "", `asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");`
	if c.perStep {
		step, last = last, ""
	}
	mode := map[int]int{0: 0, 128: 1, 64: 2, 32: 3}[c.w]
	return fmt.Sprintf(`#define N %d
#define W %d
#define KT %d
#define MODE %dull
#define TRANSA %s
#define TRANSB %s
#define HALFB %d
__device__ unsigned swz(unsigned a) { return W == 0 ? a : a ^ (((a >> 7) & (W / 16 - 1)) << 4); }
__device__ unsigned off(int r, int k) { // K-major
	if (W == 0) return (r / 8) * (16 * KT) + (k / 8) * 128 + (r %% 8) * 16 + (k %% 8) * 2;
	return swz((r / 8) * (8 * W) + (r %% 8) * W + k * 2);
}
__device__ unsigned offN(int n, int k, int rows) { // M- or N-major, rows: M or N
	if (W == 0) return (n / 8) * 128 + (n %% 8) * 2 + (k / 8) * (16 * rows) + (k %% 8) * 16;
	return swz((n / (W / 2)) * (W * KT) + (k / 8) * (8 * W) + (k %% 8) * W + (n %% (W / 2)) * 2);
}
__device__ unsigned long long enc(const void* p, unsigned adv, unsigned long long lbo, unsigned long long sbo) {
	unsigned a = (unsigned)__cvta_generic_to_shared(p) + adv;
	return ((a & 0x3FFFF) >> 4) | ((lbo >> 4) << 16) | ((sbo >> 4) << 32) | (MODE << 62);
}
__device__ unsigned long long desc(const void* p, int ks) {
	return enc(p, W == 0 ? ks * 256 : ks * 32, 128, W == 0 ? 16 * KT : 8 * W);
}
__device__ unsigned long long descN(const void* p, int ks, int rows) {
	if (W == 0) return enc(p, ks * 32 * rows, 16 * rows, 128);
	return enc(p, ks * 16 * W, W * KT, 8 * W);
}
extern "C" __global__ void __launch_bounds__(128) k(const unsigned short* A, const unsigned short* B, float* C) {
	__shared__ __align__(1024) unsigned short sA[64 * KT];
	__shared__ __align__(1024) unsigned short sB[N * KT];
	int t = threadIdx.x;
	for (int i = t; i < 64 * KT; i += 128) sA[(TRANSA ? offN(i / KT, i %% KT, 64) : off(i / KT, i %% KT)) / 2] = A[i];
	for (int i = t; i < N * KT / (HALFB + 1); i += 128) sB[(TRANSB ? offN(i / KT, i %% KT, N) : off(i / KT, i %% KT)) / 2] = B[i];
	%s
	__syncthreads();
	float d[N / 2];
	for (int j = 0; j < N / 2; j++) d[j] = 12345.0f;
	int wq = t / 32, g = (t %% 32) / 4, tt = t %% 4;
	asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
	%s
	for (int ks = 0; ks < KT / 16; ks++) {
		unsigned long long da = TRANSA ? descN(sA, ks, 64) : desc(sA, ks), db = TRANSB ? descN(sB, ks, N) : desc(sB, ks);
		unsigned scale = ks > 0;
		unsigned a[4];
		for (int j = 0; j < 4; j++) {
			int row = 16 * wq + g + 8 * (j & 1), col = 16 * ks + 2 * tt + 8 * (j >> 1);
			a[j] = (unsigned)A[row * KT + col] | (unsigned)A[row * KT + col + 1] << 16;
		}
		(void)da; (void)a;
		%s
		%s
		%s
	}
	%s
	%s
	%s
	for (int j = 0; j < N / 2; j++) {
		int row = 16 * wq + g + 8 * ((j >> 1) & 1), col = 8 * (j >> 2) + 2 * tt + (j & 1);
		C[row * N + col] = d[j];
	}
}
`, c.n, c.w, c.kt, mode, ta, tb, map[bool]int{false: 0, true: 1}[c.halfB], fence, map[bool]string{true: "#pragma unroll 1"}[c.rolled],
		mma, c.afterMma, step, last, c.beforeWait, map[bool]string{false: `asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");`}[c.noWait])
}

// halfInputs are small multiples of 1/4, exact in bf16 and f16, so the f32 products and sums are
// exact; the bits are f16's with f16, else bf16's.
func halfInputs(count, seed int, f16 bool) ([]float32, []uint16) {
	f := make([]float32, count)
	h := make([]uint16, count)
	for i := range f {
		f[i] = float32((i*7+seed*13)%9-4) / 4
		h[i] = uint16(math.Float32bits(f[i]) >> 16)
		if f16 {
			h[i] = roundF16(float64(f[i]), rmNearest, 0)
		}
	}
	return f, h
}

func runWgmma(t *testing.T, c wgCase) (Counts, []float32, []float32, error) {
	t.Helper()
	n, kt := c.n, c.kt
	m := compileSM90(t, c.kernel())
	af, ah := halfInputs(64*kt, 1, c.f16)
	bf, bh := halfInputs(n*kt, 2, c.f16)
	A, B := Uint16Buffer("A", ah), Uint16Buffer("B", bh)
	C := NewOutput("C", 4*64*n, Poisoned)
	cnt, err := Launch(context.Background(), m, "k", LaunchConfig{Grid: [3]int{1}, Block: [3]int{128},
		Params: []Arg{Ptr(A), Ptr(B), Ptr(C)}, Buffers: []*Buffer{A, B, C}, NoRacecheck: c.noRace})
	want := make([]float32, 64*n)
	for i := range 64 {
		for j := range n {
			var acc float32
			for k := range kt {
				acc += af[i*kt+k] * bf[j*kt+k]
			}
			if c.neg {
				acc = -acc
			}
			want[i*n+j] = acc
		}
	}
	return cnt, C.Float32s(), want, err
}

func TestWgmmaGEMM(t *testing.T) {
	cases := []struct {
		name         string
		c            wgCase
		gmmaPerBlock int64
	}{
		{"m64n16k16 no swizzle", wgCase{n: 16, kt: 16}, 4},
		{"m64n16 K-loop 64 no swizzle", wgCase{n: 16, kt: 64}, 16},
		{"m64n64 K-loop 128B swizzle", wgCase{n: 64, w: 128, kt: 64}, 16},
		{"m64n24 64B swizzle scale-a -1", wgCase{n: 24, w: 64, kt: 32, neg: true}, 8},
		{"m64n8 32B swizzle", wgCase{n: 8, w: 32, kt: 16}, 4},
		{"m64n32 f16 128B swizzle", wgCase{n: 32, w: 128, kt: 64, f16: true}, 16},
		{"m64n16 f16 register A", wgCase{n: 16, kt: 32, regA: true, f16: true}, 8},
		{"m64n16 M-major A no swizzle", wgCase{n: 16, kt: 32, transA: true}, 8},
		{"m64n64 M-major A and N-major B 128B swizzle", wgCase{n: 64, w: 128, kt: 64, transA: true, transB: true}, 16},
		{"m64n256 128B swizzle register A", wgCase{n: 256, w: 128, kt: 64, regA: true}, 16},
		{"m64n16 N-major B no swizzle", wgCase{n: 16, kt: 32, transB: true}, 8},
		{"m64n64 N-major B 128B swizzle", wgCase{n: 64, w: 128, kt: 64, transB: true}, 16},
		{"m64n128 N-major B 128B swizzle register A, a group per step", wgCase{n: 128, w: 128, kt: 64, transB: true, regA: true, perStep: true}, 16},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.c
			cnt, got, want, err := runWgmma(t, c)
			if err != nil {
				t.Fatal(err)
			}
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("C[%d][%d] = %v, want %v", i/c.n, i%c.n, got[i], want[i])
				}
			}
			if cnt.GmmaInstructions != tc.gmmaPerBlock {
				t.Errorf("GmmaInstructions = %d, want %d", cnt.GmmaInstructions, tc.gmmaPerBlock)
			}
			wantBytes := int64(2*c.n*c.kt) + int64(2*64*c.kt) // B once per warpgroup, A from shared
			if c.regA {
				wantBytes = int64(2 * c.n * c.kt)
			}
			if cnt.GmmaSharedBytes != wantBytes {
				t.Errorf("GmmaSharedBytes = %d, want %d", cnt.GmmaSharedBytes, wantBytes)
			}
			if got, want := cnt.TensorFLOPs, int64(2*64*c.n*c.kt); got != want {
				t.Errorf("TensorFLOPs = %d, want %d", got, want)
			}
		})
	}
}

// hazardAt runs c and checks that it stops with a hazard at an instruction containing at whose
// other access contains other, with msg in its message.
func hazardAt(t *testing.T, c wgCase, at, other, msg string) {
	t.Helper()
	_, _, _, err := runWgmma(t, c)
	var f *Fault
	if !errors.As(err, &f) {
		t.Fatalf("err = %v, want a hazard fault", err)
	}
	if f.Kind != "hazard" || !strings.Contains(f.Instr, at) || !strings.Contains(f.OtherInstr, other) ||
		!strings.Contains(f.Msg, msg) || f.Line == 0 || f.OtherLine == 0 {
		t.Errorf("fault = %+v, want a hazard at %s naming %s and %s", f, at, other, msg)
	}
}

func TestWgmmaWithoutProxyFence(t *testing.T) {
	hazardAt(t, wgCase{n: 16, w: 128, kt: 64, noFence: true}, "wgmma.mma_async", "st.shared", "fence.proxy.async")
}

func TestWgmmaOperandOverwrittenBeforeWait(t *testing.T) {
	// the next tile's B written into the buffer the wgmma group still reads
	hazardAt(t, wgCase{n: 16, w: 128, kt: 64, beforeWait: "sB[t] = B[t];"}, "st.shared", "wgmma.mma_async", "wgmma.wait_group")
	// after the wait and a barrier, the same write is no hazard (without the barrier, another warp's
	// wgmma may not have read it yet: a proxy hazard)
	c := wgCase{n: 16, w: 128, kt: 64, beforeWait: `asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory"); __syncthreads(); sB[t] = B[t];`}
	if _, _, _, err := runWgmma(t, c); err != nil {
		t.Errorf("a write after wgmma.wait_group 0: %v", err)
	}
}

func TestWgmmaWaitGroupLeavesTheLatestPending(t *testing.T) {
	// four steps, a group each: wait_group 1 completes all but the last step's group
	first := `for (int i = t; i < N * KT; i += 128) if (i % KT < 16) sB[off(i / KT, i % KT) / 2] = B[i];`
	second := `for (int i = t; i < N * KT; i += 128) if (i % KT >= 48) sB[off(i / KT, i % KT) / 2] = B[i];`
	wait1 := `asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory"); __syncthreads(); `
	c := wgCase{n: 16, w: 128, kt: 64, perStep: true, beforeWait: wait1 + first}
	if _, _, _, err := runWgmma(t, c); err != nil {
		t.Errorf("overwriting the first step's B after wait_group 1: %v", err)
	}
	c.beforeWait = wait1 + second
	hazardAt(t, c, "st.shared", "wgmma.mma_async", "wgmma.wait_group")
}

func TestWgmmaAsyncWriteClearsTheProxyRecord(t *testing.T) {
	s := &wgState{rec: make([]proxyRec, 64), read: make([]wgRead, 64)}
	c, w := &cta{}, &warp{}
	w.addr[0] = 8
	s.markGeneric(c, w, &inst{self: 3}, 1, 4)
	if got, want := s.rec[9], (proxyRec{fence: 1, self: 3}); got != want {
		t.Fatalf("after a generic write: record %+v, want %+v", got, want)
	}
	c.proxyFences = 0
	s.markAsync(c, w, 0, &inst{}, 8, 2)
	if got := s.rec[9]; got != (proxyRec{}) {
		t.Errorf("after an async-proxy write: record %+v, want none", got)
	}
	if got := s.rec[10]; got.fence != 1 {
		t.Errorf("a byte past the async write lost its record: %+v", got)
	}
	s.checkProxy(c, w, &inst{}, 8) // no generic write left at 8..9: no fault
}

func TestWgmmaUninitialisedOperand(t *testing.T) {
	cnt, _, _, err := runWgmma(t, wgCase{n: 16, w: 128, kt: 64, halfB: true})
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, f := range cnt.Notes {
		found = found || f.Kind == "uninitialised read" && strings.Contains(f.Instr, "wgmma.mma_async")
	}
	if !found {
		t.Errorf("notes %v, want an uninitialised read at the wgmma", cnt.Notes)
	}
	cnt, _, _, err = runWgmma(t, wgCase{n: 16, w: 128, kt: 64})
	if err != nil || len(cnt.Notes) != 0 {
		t.Errorf("a fully staged B: notes %v, err %v", cnt.Notes, err)
	}
}

func TestWgmmaDecode(t *testing.T) {
	in, err := decodeOne(t, "wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%f1, %f2, %f3, %f4}, {%r1, %r2, %r3, %r4}, %rd1, %p1, -1, 1, 1")
	if err != nil {
		t.Fatal(err)
	}
	if op := in.wg; op == nil || op.aDesc || !op.negA || op.negB || !op.transB || op.n != 8 || op.bf16 || op.scaleD < 0 {
		t.Errorf("decoded %+v", in.wg)
	}
	if got, want := in.flops, uint16(2*64*8*16/128); got != want {
		t.Errorf("flops per lane = %d, want %d", got, want)
	}
	if in, err := decodeOne(t, "wgmma.wait_group.sync.aligned 3"); err != nil || in.wg.wait != 3 {
		t.Errorf("wait_group 3: %+v, %v", in.wg, err)
	}
	for _, bad := range []string{
		"wgmma.mma_async.sync.aligned.m64n8k16.f16.f16.f16 {%r1, %r2}, %rd1, %rd2, 1, 1, 1, 0, 0", // f16 accumulators
		"wgmma.mma_async.sync.aligned.m64n12k16.f32.bf16.bf16 {%f1, %f2, %f3, %f4, %f5, %f6}, %rd1, %rd2, 1, 1, 1, 0, 0",
		"wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 {%f1, %f2}, %rd1, %rd2, 1, 1, 1, 0, 0", // too few accumulators
		"wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 {%f1, %f2, %f3, %f4}, %rd1, %rd2, 1, 2, 1, 0, 0",
		"wgmma.mma_async.sp.sync.aligned.m64n8k32.f32.bf16.bf16 {%f1, %f2, %f3, %f4}, %rd1, %rd2, %r1, 0, 1, 1, 1, 0, 0",
		"wgmma.mma_async.sync.aligned.m64n8k32.f32.e4m3.e4m3 {%f1, %f2, %f3, %f4}, %rd1, %rd2, 1, 1, 1",
		"wgmma.wait_group.sync.aligned %r1",
	} {
		_, err := decodeOne(t, bad)
		var u *UnsupportedError
		if !errors.As(err, &u) || !strings.HasPrefix(u.Opcode, "wgmma") {
			t.Errorf("%s: err %v, want an UnsupportedError", bad, err)
		}
	}
}

func TestWgmmaIncompleteWarpgroup(t *testing.T) {
	m := compileSM90(t, wgCase{n: 16, kt: 16}.kernel())
	_, ah := halfInputs(64*16, 1, false)
	_, bh := halfInputs(16*16, 2, false)
	A, B, C := Uint16Buffer("A", ah), Uint16Buffer("B", bh), NewOutput("C", 4*64*16, Poisoned)
	_, err := Launch(context.Background(), m, "k", LaunchConfig{Grid: [3]int{1}, Block: [3]int{64},
		Params: []Arg{Ptr(A), Ptr(B), Ptr(C)}, Buffers: []*Buffer{A, B, C}})
	var f *Fault
	if !errors.As(err, &f) || f.Kind != "barrier" || !strings.Contains(f.Msg, "warpgroup") || !strings.Contains(f.Instr, "wgmma") {
		t.Errorf("a wgmma in a block of 64 threads: %v, want a barrier fault naming the incomplete warpgroup", err)
	}
}

// A warp that commits groups in a loop without waiting keeps a bounded list (PTX lets a program
// commit any number of groups, empty ones included), and wait_group N still completes exactly
// what an unbounded list of every committed group would: all but the latest N groups.
func TestWgmmaCommitGroupsStayBounded(t *testing.T) {
	var g wgWarp
	var all []uint32 // every pending group's last number, unbounded
	done := uint32(0)
	rng := rand.New(rand.NewPCG(1, 2))
	for step := range 100000 {
		switch r := rng.IntN(10); {
		case r < 3:
			g.issued++
		case r < 9:
			g.commit()
			all = append(all, g.issued)
		default:
			n := rng.IntN(maxWgWait + 1)
			g.wait(n)
			if k := len(all) - n; k > 0 {
				done, all = all[k-1], all[k:]
			}
		}
		if got, want := g.done, done; got != want {
			t.Fatalf("step %d: done %d, want %d", step, got, want)
		}
		if got := len(g.groups); got > maxWgWait+1 {
			t.Fatalf("step %d: %d pending groups kept, want at most %d", step, got, maxWgWait+1)
		}
	}
	for range 100000 {
		g.commit() // empty groups in a loop
	}
	if got := cap(g.groups); got > 2*(maxWgWait+1) {
		t.Errorf("after 100000 empty commits the list holds %d, want at most %d", got, 2*(maxWgWait+1))
	}
	g.wait(0)
	if got, want := g.done, g.issued; got != want {
		t.Errorf("after wait_group 0: done %d, want %d (every mma_async complete)", got, want)
	}
}

// wgmma.mma_async's accumulators hold their old values until the wgmma.wait_group that completes
// its group (PTX ISA 8.x, 9.7.15.7.3): reading them earlier is stopped at the read with the hazard
// check on, and sees the old values (the kernel's 12345 before the wgmma) with it off.
func TestWgmmaResultsHeldUntilWait(t *testing.T) {
	early := wgCase{n: 16, w: 128, kt: 64, noWait: true}
	_, _, _, err := runWgmma(t, early)
	var f *Fault
	if !errors.As(err, &f) || f.Kind != "hazard" || !strings.Contains(f.Instr, "st.global") ||
		!strings.Contains(f.OtherInstr, "wgmma.mma_async") || !strings.Contains(f.Msg, "wgmma.wait_group") || f.Line == 0 {
		t.Fatalf("C stored with no wgmma.wait_group: %v, want a hazard at the st.global naming the wgmma", err)
	}
	early.noRace = true
	_, got, _, err := runWgmma(t, early)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range got {
		if v != 12345 {
			t.Fatalf("without the wait, C[%d] = %v, want the accumulator's old 12345", i, v)
		}
	}
	// a copy of a held accumulator is held too: storing the copy before the wait is the same hazard
	copied := wgCase{n: 16, w: 128, kt: 64, beforeWait: `{ float e; asm volatile("mov.f32 %0, %1;" : "=f"(e) : "f"(d[0])); C[t] = e; }`}
	_, _, _, err = runWgmma(t, copied)
	if !errors.As(err, &f) || f.Kind != "hazard" || !strings.Contains(f.Instr, "st.global") || !strings.Contains(f.OtherInstr, "wgmma.mma_async") {
		t.Fatalf("a copy of an accumulator stored before the wait: %v, want a hazard at the st.global naming the wgmma", err)
	}
	// a rolled K loop chains the held accumulators; movs of them (NVVM's copies of loop-carried
	// values, ptxas's coalesced registers) carry the pending values
	copies := `for (int j = 0; j < N / 2; j++) { float e; asm volatile("mov.f32 %0, %1;" : "=f"(e) : "f"(d[j])); asm volatile("mov.f32 %0, %1;" : "=f"(d[j]) : "f"(e)); }`
	for _, c := range []wgCase{{n: 16, w: 128, kt: 64, rolled: true, afterMma: copies}, {n: 16, w: 128, kt: 64, rolled: true, perStep: true,
		beforeWait: `asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory");`}} {
		_, got, want, err := runWgmma(t, c)
		if err != nil {
			t.Fatalf("%+v: %v", c, err)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("%+v: C[%d] = %v, want %v", c, i, got[i], want[i])
			}
		}
	}
}
