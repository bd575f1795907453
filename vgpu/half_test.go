package vgpu

import "testing"

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
