package vgpu

import (
	"context"
	"fmt"
	"testing"
)

func TestLop3BfiMul24AndHalfArithmetic(t *testing.T) {
	st32 := "\n\tst.global.b32 [%rd15], %r0;"
	st16 := "\n\tst.global.b16 [%rd15], %h0;"
	for _, tc := range []struct {
		body string
		want uint64
	}{
		// 9.7.8.6 lop3: 0x96 is a^b^c, 0xE8 the majority
		{"lop3.b32 %r0, 0xF0F0, 0xCCCC, 0xAAAA, 0x96;" + st32, 0xF0F0 ^ 0xCCCC ^ 0xAAAA},
		{"lop3.b32 %r0, 0xF0F0, 0xCCCC, 0xAAAA, 0xE8;" + st32, 0xF0F0&0xCCCC | 0xF0F0&0xAAAA | 0xCCCC&0xAAAA},
		{"lop3.b32 %r0, 0, 0, 0, 0x01;" + st32, 0xffffffff},
		// 9.7.1.21 bfi
		{"bfi.b32 %r0, 0xF, 0xFFFF0000, 4, 8;" + st32, 0xFFFF00F0},
		{"bfi.b32 %r0, 0xFF, 0, 30, 8;" + st32, 0xC0000000},
		{"bfi.b32 %r0, 0xFF, 0x1234, 4, 0;" + st32, 0x1234},
		{"bfi.b32 %r0, 0xFF, 0x1234, 32, 4;" + st32, 0x1234},
		{"bfi.b64 %rd0, 1, 0, 63, 1;\n\tst.global.b64 [%rd15], %rd0;", 1 << 63},
		// 9.7.1.10 mul24, 9.7.1.11 mad24
		{"mul24.lo.u32 %r0, 0x1000001, 2;" + st32, 2},
		{"mul24.hi.s32 %r0, 0x800000, 2;" + st32, 0xFFFFFF00},
		{"mul24.hi.u32 %r0, 0xFFFFFF, 0xFFFFFF;" + st32, 0xFFFFFE00},
		{"mad24.lo.u32 %r0, 3, 4, 5;" + st32, 17},
		// 9.7.4 half precision: round to nearest even
		{"mov.b16 %h1, 0x3C00;\n\tmov.b16 %h2, 0x1000;\n\tadd.f16 %h0, %h1, %h2;" + st16, 0x3C00},
		{"mov.b16 %h1, 0x3C01;\n\tmov.b16 %h2, 0x1000;\n\tadd.rn.f16 %h0, %h1, %h2;" + st16, 0x3C02},
		{"mov.b16 %h1, 0x4000;\n\tmov.b16 %h2, 0x4200;\n\tmul.f16 %h0, %h1, %h2;" + st16, 0x4600},
		{"mov.b16 %h1, 0x4000;\n\tmov.b16 %h2, 0x4200;\n\tsub.f16 %h0, %h1, %h2;" + st16, 0xBC00},
		{"mov.b16 %h1, 0x3C00;\n\tadd.sat.f16 %h0, %h1, %h1;" + st16, 0x3C00},
		{"mov.b16 %h1, 0x3C00;\n\tneg.f16 %h0, %h1;" + st16, 0xBC00},
		{"mov.b16 %h1, 0x3F80;\n\tadd.rn.bf16 %h0, %h1, %h1;" + st16, 0x4000},
		{"mov.b32 %r1, 0x42004000;\n\tmov.b32 %r2, 0x40004200;\n\tmov.b32 %r3, 0x3C003C00;\n\tfma.rn.f16x2 %r0, %r1, %r2, %r3;" + st32, 0x47004700},
		// fma rounds once: (1+3·2⁻¹⁰)² − 1 keeps its 9·2⁻²⁰ term (0x1E00 with a rounded product)
		{"mov.b16 %h1, 0x3C03;\n\tmov.b16 %h2, 0xBC00;\n\tfma.rn.f16 %h0, %h1, %h1, %h2;" + st16, 0x1E02},
	} {
		got, err := evalPTX(t, tc.body)
		if err != nil {
			t.Errorf("%s: %v", tc.body, err)
			continue
		}
		if got != tc.want {
			t.Errorf("%s: %#x, want %#x", tc.body, got, tc.want)
		}
	}
}

// wmma.load.a from shared memory: a tile staged in shared memory times the identity (from global).
const wmmaSharedPTX = header + `.visible .entry k(.param .u64 a, .param .u64 b, .param .u64 d)
{
	.reg .b32 %r<40>;
	.reg .f32 %f<20>;
	.reg .b64 %rd<8>;
	.shared .align 16 .b8 tile[512];
	ld.param.u64 %rd1, [a];
	ld.param.u64 %rd2, [b];
	ld.param.u64 %rd3, [d];
	mov.u32 %r30, %tid.x;
	mul.wide.u32 %rd4, %r30, 16;
	add.s64 %rd5, %rd1, %rd4;
	ld.global.v4.u32 {%r31, %r32, %r33, %r34}, [%rd5];
	mov.u32 %r20, tile;
	shl.b32 %r35, %r30, 4;
	add.u32 %r36, %r20, %r35;
	st.shared.v4.u32 [%r36], {%r31, %r32, %r33, %r34};
	bar.sync 0;
	wmma.load.a.sync.aligned.row.m16n16k16.shared.f16 {%r0, %r1, %r2, %r3, %r4, %r5, %r6, %r7}, [%r20], 16;
	wmma.load.b.sync.aligned.row.m16n16k16.global.f16 {%r8, %r9, %r10, %r11, %r12, %r13, %r14, %r15}, [%rd2], 16;
	mov.f32 %f0, 0f00000000;
	mov.f32 %f1, 0f00000000;
	mov.f32 %f2, 0f00000000;
	mov.f32 %f3, 0f00000000;
	mov.f32 %f4, 0f00000000;
	mov.f32 %f5, 0f00000000;
	mov.f32 %f6, 0f00000000;
	mov.f32 %f7, 0f00000000;
	wmma.mma.sync.aligned.row.row.m16n16k16.f32.f32 {%f10, %f11, %f12, %f13, %f14, %f15, %f16, %f17}, {%r0, %r1, %r2, %r3, %r4, %r5, %r6, %r7}, {%r8, %r9, %r10, %r11, %r12, %r13, %r14, %r15}, {%f0, %f1, %f2, %f3, %f4, %f5, %f6, %f7};
	wmma.store.d.sync.aligned.row.m16n16k16.global.f32 [%rd3], {%f10, %f11, %f12, %f13, %f14, %f15, %f16, %f17}, 16;
	ret;
}
`

func TestWmmaFromSharedMemory(t *testing.T) {
	m := mustParse(t, wmmaSharedPTX)
	a, id := make([]uint16, 256), make([]uint16, 256)
	for i := range a {
		a[i] = roundF16(float64(i%17)-8, rmNearest, 0)
		if i/16 == i%16 {
			id[i] = 0x3C00
		}
	}
	A, B, D := Uint16Buffer("a", a), Uint16Buffer("b", id), NewBuffer("d", 4*256)
	c, err := Launch(context.Background(), m, "k", LaunchConfig{Block: [3]int{32}, Params: []Arg{Ptr(A), Ptr(B), Ptr(D)}, Buffers: []*Buffer{A, B, D}})
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range D.Float32s() {
		if v != float32(i%17-8) {
			t.Fatalf("d[%d] = %v, want %v", i, v, i%17-8)
		}
	}
	// the staging store (512 contiguous bytes: 4 wavefronts, none conflicts) and the wmma load, read
	// as the hardware does: 4 warp-wide 32-bit accesses, each 2-way (rows 32 bytes apart: rows 4
	// apart share banks), 8 wavefronts, 4 conflicts
	if c.SharedLoadRequests != 1 || c.SharedWavefronts != 4+8 {
		t.Errorf("shared: %d load requests, %d wavefronts", c.SharedLoadRequests, c.SharedWavefronts)
	}
	if got, want := c.BankConflicts(), int64(4); got != want {
		t.Errorf("bank conflicts %d, want %d", got, want)
	}
}

// 9.7.4.8 and 9.7.4.9 min and max (f16, bf16, x2): a NaN operand gives the other one, two NaNs the
// canonical NaN, and -0 is below +0.
func TestHalfMinMax(t *testing.T) {
	st16 := "\n\tst.global.b16 [%rd15], %h0;"
	two := func(op string, a, b uint16) string {
		return "mov.b16 %h1, " + hex16(a) + ";\n\tmov.b16 %h2, " + hex16(b) + ";\n\t" + op + " %h0, %h1, %h2;" + st16
	}
	for _, tc := range []struct {
		body string
		want uint64
	}{
		{two("max.f16", 0x3C00, 0x4000), 0x4000}, // max(1, 2) = 2
		{two("min.f16", 0x3C00, 0x4000), 0x3C00},
		{two("min.f16", 0xC000, 0x3C00), 0xC000}, // min(-2, 1) = -2
		{two("max.f16", 0x7E00, 0x3C00), 0x3C00}, // max(NaN, 1) = 1
		{two("min.f16", 0x3C00, 0x7E00), 0x3C00},
		{two("min.f16", 0x8000, 0x0000), 0x8000}, // min(-0, +0) = -0
		{two("max.f16", 0x8000, 0x0000), 0x0000},
		{two("max.bf16", 0x3F80, 0xC000), 0x3F80}, // max(1, -2) = 1 in bf16
		{"mov.b32 %r1, 0x40003C00;\n\tmov.b32 %r2, 0x3C004000;\n\tmax.f16x2 %r0, %r1, %r2;\n\tst.global.b32 [%rd15], %r0;", 0x40004000},
	} {
		got, err := evalPTX(t, tc.body)
		if err != nil {
			t.Errorf("%s: %v", tc.body, err)
			continue
		}
		if got != tc.want {
			t.Errorf("%s: %#x, want %#x", tc.body, got, tc.want)
		}
	}
	got, err := evalPTX(t, two("max.f16", 0x7E00, 0x7C01))
	if err != nil {
		t.Fatal(err)
	}
	if got&0x7C00 != 0x7C00 || got&0x3FF == 0 {
		t.Errorf("max(NaN, NaN) = %#x, want a NaN", got)
	}
}

func hex16(v uint16) string { return fmt.Sprintf("%#04x", v) }

// setp on scalar f16 and bf16 (what __hlt, __heq and < on __half compile to): ordered comparisons
// are false with a NaN, unordered ones true.
func TestHalfComparisons(t *testing.T) {
	cmp := func(op string, a, b uint16) string {
		return "mov.b16 %h1, " + hex16(a) + ";\n\tmov.b16 %h2, " + hex16(b) + ";\n\tsetp." + op + " %p1, %h1, %h2;\n\tselp.u32 %r0, 1, 0, %p1;\n\tst.global.b32 [%rd15], %r0;"
	}
	for _, tc := range []struct {
		body string
		want uint64
	}{
		{cmp("lt.f16", 0x3C00, 0x4000), 1}, // 1 < 2
		{cmp("lt.f16", 0x4000, 0x3C00), 0},
		{cmp("ge.f16", 0xC000, 0x3C00), 0}, // -2 >= 1
		{cmp("eq.f16", 0x8000, 0x0000), 1}, // -0 == +0
		{cmp("lt.f16", 0x7E00, 0x3C00), 0}, // NaN < 1
		{cmp("ltu.f16", 0x7E00, 0x3C00), 1},
		{cmp("gt.bf16", 0x4000, 0x3F80), 1}, // 2 > 1 in bf16
	} {
		got, err := evalPTX(t, tc.body)
		if err != nil {
			t.Errorf("%s: %v", tc.body, err)
			continue
		}
		if got != tc.want {
			t.Errorf("%s: %d, want %d", tc.body, got, tc.want)
		}
	}
}
