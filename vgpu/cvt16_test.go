package vgpu

import "testing"

// cvt's packed two-source form, .relu, .satfinite, and what a NaN and the largest numbers become in
// an integer (PTX ISA 9.0, section 9.7.9.21 "cvt").
func TestCvtPackedReluSatfiniteAndNaNToInteger(t *testing.T) {
	st32 := "\n\tst.global.b32 [%rd15], %r0;"
	st64 := "\n\tst.global.b64 [%rd15], %rd0;"
	st16 := "\n\tst.global.b16 [%rd15], %h0;"
	for _, tc := range []struct {
		name, body string
		want       uint64
	}{
		{"f16x2: a in the upper half, b in the lower", "cvt.rn.f16x2.f32 %r0, 0f3F800000, 0fC0000000;" + st32, 0x3c00_c000},
		{"bf16x2: a in the upper half, b in the lower", "cvt.rn.bf16x2.f32 %r0, 0f3F800000, 0fC0000000;" + st32, 0x3f80_c000},
		{"f16x2 .rn ties to even, .rz truncates", "cvt.rn.f16x2.f32 %r1, 0f3F801000, 0f3F803000;\n\tcvt.rz.f16x2.f32 %r2, 0f3F803000, 0f477FF000;\n\txor.b32 %r0, %r1, %r2;" + st32,
			0x3c00_3c02 ^ 0x3c01_7bff},
		{"f16x2 overflow is infinity", "cvt.rn.f16x2.f32 %r0, 0f477FF000, 0fC77FF000;" + st32, 0x7c00_fc00},
		{"f16x2 .satfinite: the largest finite", "cvt.rn.satfinite.f16x2.f32 %r0, 0f7F800000, 0fC77FF000;" + st32, 0x7bff_fbff},
		{"f16x2 .satfinite keeps NaN", "cvt.rn.satfinite.f16x2.f32 %r0, 0f7FC00000, 0f00000000;\n\tshr.u32 %r0, %r0, 16;\n\tand.b32 %r0, %r0, 0x7c00;" + st32, 0x7c00},
		{"bf16x2 .relu clamps negatives to +0", "cvt.rn.relu.bf16x2.f32 %r0, 0fC0000000, 0f40000000;" + st32, 0x0000_4000},
		{"f16 .relu", "cvt.rn.relu.f16.f32 %h0, 0fBF800000;" + st16, 0},
		{"f16 .satfinite", "cvt.rn.satfinite.f16.f32 %h0, 0f7F800000;" + st16, 0x7bff},
		{"NaN to s32 is 0", "cvt.rni.s32.f32 %r0, 0f7FC00000;" + st32, 0},
		{"NaN to s64 is MININT", "cvt.rzi.s64.f32 %rd0, 0f7FC00000;" + st64, 1 << 63},
		{"NaN .f64 to u32 is 1<<31", "cvt.rzi.u32.f64 %r0, 0d7FF8000000000000;" + st32, 1 << 31},
		{"+inf to s64 is MAXINT", "cvt.rzi.s64.f32 %rd0, 0f7F800000;" + st64, 1<<63 - 1},
		{"e4m3x2 from f32: a in the upper byte, 512 saturates to 448", "cvt.rn.satfinite.e4m3x2.f32 %h0, 0f3F800000, 0f44000000;" + st16, 0x387e},
		{"e5m2x2 .relu", "cvt.rn.satfinite.relu.e5m2x2.f32 %h0, 0fBF800000, 0f3F800000;" + st16, 0x003c},
		{"e5m2x2 from f16x2: +inf saturates to 57344", "mov.b32 %r1, 0x7c003c00;\n\tcvt.rn.satfinite.e5m2x2.f16x2 %h0, %r1;" + st16, 0x7b3c},
		{"f16x2 from e4m3x2: NaN and 1", "mov.b16 %h1, 0x7f38;\n\tcvt.rn.f16x2.e4m3x2 %r0, %h1;\n\tand.b32 %r0, %r0, 0x7c00ffff;" + st32, 0x7c00_3c00},
		{"2^63 to s64 is MAXINT", "cvt.rzi.s64.f64 %rd0, 0d43E0000000000000;" + st64, 1<<63 - 1},
	} {
		got, err := evalPTX(t, tc.body)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if got != tc.want {
			t.Errorf("%s: got %#x, want %#x", tc.name, got, tc.want)
		}
	}
	for _, bad := range []string{
		"cvt.rm.f16x2.f32 %r0, %f1, %f2;",            // .frnd2 is .rn or .rz
		"cvt.rn.f16x2.f32 %r0, %f1;",                 // two sources
		"cvt.rn.relu.f32.f64 %f0, %fd1;",             // .relu only to 16-bit formats from .f32
		"cvt.rn.bogus.f16.f32 %h0, %f1;",             // unknown word
		"cvt.rn.f16x2.f16 %r0, %h1, %h2;",            // sources are .f32
		"cvt.rn.e4m3x2.f32 %h0, %f1, %f2;",           // .satfinite is required
		"cvt.rz.satfinite.e4m3x2.f32 %h0, %f1, %f2;", // .rn only
		"cvt.rn.satfinite.f16x2.e5m2x2 %r0, %h1;",    // no .satfinite to f16x2
	} {
		if _, err := evalPTX(t, bad); err == nil {
			t.Errorf("%s: accepted, want an error", bad)
		}
	}
}
