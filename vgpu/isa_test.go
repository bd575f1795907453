package vgpu

import (
	"context"
	"fmt"
	"testing"
)

// evalPTX runs body in one thread with %rd15 pointing at an 8-byte zeroed output and returns it.
func evalPTX(t *testing.T, body string) (uint64, error) {
	t.Helper()
	src := header + `.visible .entry k(.param .u64 out)
{
	.reg .pred %p<4>;
	.reg .b16 %h<8>;
	.reg .b32 %r<16>;
	.reg .b64 %rd<16>;
	.reg .f32 %f<16>;
	.reg .f64 %fd<16>;
	ld.param.u64 %rd15, [out];
` + body + `
	ret;
}
`
	m, err := ParseModule(src)
	if err != nil {
		return 0, err
	}
	out := NewBuffer("out", 8)
	if _, err := Launch(context.Background(), m, "k", LaunchConfig{Params: []Arg{Ptr(out)}, Buffers: []*Buffer{out}}); err != nil {
		return 0, err
	}
	return readN(out.Data, 8), nil
}

// Each case follows the PTX ISA 8.x semantics of its instruction (the section is in the name).
func TestInstructionSemantics(t *testing.T) {
	st32 := "\n\tst.global.b32 [%rd15], %r0;"
	st64 := "\n\tst.global.b64 [%rd15], %rd0;"
	st16 := "\n\tst.global.b16 [%rd15], %h0;"
	for _, tc := range []struct {
		name, body string
		want       uint64
	}{
		{"9.7.8.7 shl clamps amounts over the width", "mov.u32 %r1, 1;\n\tshl.b32 %r0, %r1, 40;" + st32, 0},
		{"9.7.8.8 shr.s fills with the sign", "mov.u32 %r1, -8;\n\tshr.s32 %r0, %r1, 40;" + st32, 0xffffffff},
		{"9.7.8.8 shr.u", "mov.u32 %r1, 0x80000000;\n\tshr.u32 %r0, %r1, 31;" + st32, 1},
		{"9.7.1.1 add wraps", "mov.u32 %r1, 0x7fffffff;\n\tadd.s32 %r0, %r1, 1;" + st32, 0x80000000},
		{"9.7.1.1 add.sat.s32 clamps", "mov.u32 %r1, 0x7fffffff;\n\tadd.sat.s32 %r0, %r1, 1;" + st32, 0x7fffffff},
		{"9.7.1.3 mul.hi.s32", "mov.u32 %r1, -2;\n\tmul.hi.s32 %r0, %r1, 3;" + st32, 0xffffffff},
		{"9.7.1.3 mul.wide.u32", "mov.u32 %r1, 0xffffffff;\n\tmul.wide.u32 %rd0, %r1, %r1;" + st64, 0xfffffffe00000001},
		{"9.7.1.3 mul.hi.u64", "mov.u64 %rd1, -1;\n\tmul.hi.u64 %rd0, %rd1, %rd1;" + st64, 0xfffffffffffffffe},
		{"9.7.1.3 mul.hi.s64", "mov.u64 %rd1, -1;\n\tmul.hi.s64 %rd0, %rd1, %rd1;" + st64, 0},
		{"9.7.1.4 mad.lo.s32", "mov.u32 %r1, 7;\n\tmad.lo.s32 %r0, %r1, %r1, -50;" + st32, 0xffffffff},
		{"9.7.1.8 div.s32 truncates", "mov.u32 %r1, -7;\n\tdiv.s32 %r0, %r1, 2;" + st32, 0xfffffffd},
		{"9.7.1.9 rem.s32 keeps the dividend's sign", "mov.u32 %r1, -7;\n\trem.s32 %r0, %r1, 2;" + st32, 0xffffffff},
		{"9.7.1.11 min.u32 vs min.s32", "mov.u32 %r1, -1;\n\tmin.u32 %r2, %r1, 5;\n\tmin.s32 %r3, %r1, 5;\n\tadd.s32 %r0, %r2, %r3;" + st32, 4},
		{"9.7.8.5 bfe.u32", "mov.u32 %r1, 0xf0;\n\tbfe.u32 %r0, %r1, 4, 4;" + st32, 0xf},
		{"9.7.8.5 bfe.s32 sign-extends", "mov.u32 %r1, 0xf0;\n\tbfe.s32 %r0, %r1, 4, 4;" + st32, 0xffffffff},
		{"9.7.8.2 popc", "mov.u32 %r1, 0xff00ff;\n\tpopc.b32 %r0, %r1;" + st32, 16},
		{"9.7.8.3 clz", "mov.u32 %r1, 1;\n\tclz.b32 %r0, %r1;" + st32, 31},
		{"bfind.u32", "mov.u32 %r1, 0x100;\n\tbfind.u32 %r0, %r1;" + st32, 8},
		{"bfind.shiftamt.u32", "mov.u32 %r1, 0x100;\n\tbfind.shiftamt.u32 %r0, %r1;" + st32, 23},
		{"bfind.u32 of 0 finds none", "mov.u32 %r1, 0;\n\tbfind.u32 %r0, %r1;" + st32, 0xffffffff},
		{"bfind.s32 of a negative finds its top 0", "mov.u32 %r1, -256;\n\tbfind.s32 %r0, %r1;" + st32, 7},
		{"bfind.s32 of -1 finds none", "mov.u32 %r1, -1;\n\tbfind.shiftamt.s32 %r0, %r1;" + st32, 0xffffffff},
		{"bfind.u64", "mov.u64 %rd1, 0x10000000000;\n\tbfind.u64 %r0, %rd1;" + st32, 40},
		{"elect.sync _|p", "elect.sync _|%p1, 0xffffffff;\n\tselp.u32 %r0, 7, 9, %p1;" + st32, 7},
		{"elect.sync d|p", "elect.sync %r0|%p1, 1;" + st32, 0},
		{"setmaxnreg keeps the registers", "mov.u32 %r0, 5;\n\tsetmaxnreg.inc.sync.aligned.u32 240;\n\tsetmaxnreg.dec.sync.aligned.u32 40;" + st32, 5},
		{"9.7.8.4 brev", "mov.u32 %r1, 1;\n\tbrev.b32 %r0, %r1;" + st32, 0x80000000},
		{"9.7.8.9 prmt", "mov.u32 %r1, 0x44332211;\n\tmov.u32 %r2, 0x88776655;\n\tprmt.b32 %r0, %r1, %r2, 0x7531;" + st32, 0x88664422},
		{"9.7.9.21 cvt.rni ties to even", "mov.f32 %f1, 0f40200000;\n\tcvt.rni.s32.f32 %r0, %f1;" + st32, 2},
		{"9.7.9.21 cvt.rni 3.5", "mov.f32 %f1, 0f40600000;\n\tcvt.rni.s32.f32 %r0, %f1;" + st32, 4},
		{"9.7.9.21 cvt.rzi", "mov.f32 %f1, 0fC02CCCCD;\n\tcvt.rzi.s32.f32 %r0, %f1;" + st32, 0xfffffffe},
		{"9.7.9.21 cvt.rmi", "mov.f32 %f1, 0fC02CCCCD;\n\tcvt.rmi.s32.f32 %r0, %f1;" + st32, 0xfffffffd},
		{"9.7.9.21 cvt.rpi", "mov.f32 %f1, 0fC02CCCCD;\n\tcvt.rpi.s32.f32 %r0, %f1;" + st32, 0xfffffffe},
		{"9.7.9.21 cvt float→int saturates", "mov.f32 %f1, 0f501502F9;\n\tcvt.rzi.s32.f32 %r0, %f1;" + st32, 0x7fffffff},
		{"9.7.9.21 cvt negative → unsigned is 0", "mov.f32 %f1, 0fBF800000;\n\tcvt.rzi.u32.f32 %r0, %f1;" + st32, 0},
		{"9.7.9.21 cvt NaN → 0", "mov.f32 %f1, 0f7FC00000;\n\tcvt.rzi.s32.f32 %r0, %f1;" + st32, 0},
		{"9.7.9.21 cvt.rn.f16.f32", "mov.f32 %f1, 0f3F800000;\n\tcvt.rn.f16.f32 %h0, %f1;" + st16, 0x3c00},
		{"9.7.9.21 cvt.rn.f16 overflows to inf", "mov.f32 %f1, 0f477FF000;\n\tcvt.rn.f16.f32 %h0, %f1;" + st16, 0x7c00},
		{"9.7.9.21 cvt.rz.f16 stays finite", "mov.f32 %f1, 0f477FF000;\n\tcvt.rz.f16.f32 %h0, %f1;" + st16, 0x7bff},
		{"9.7.9.21 cvt.rn.bf16 tie to even (down)", "mov.f32 %f1, 0f3F808000;\n\tcvt.rn.bf16.f32 %h0, %f1;" + st16, 0x3f80},
		{"9.7.9.21 cvt.rn.bf16 tie to even (up)", "mov.f32 %f1, 0f3F818000;\n\tcvt.rn.bf16.f32 %h0, %f1;" + st16, 0x3f82},
		{"9.7.9.21 cvt.f32.f16", "mov.b16 %h1, 0xc000;\n\tcvt.f32.f16 %f1, %h1;\n\tmov.b32 %r0, %f1;" + st32, 0xc0000000},
		{"9.7.9.21 cvt.rn.f32.f64 tie", "mov.f64 %fd1, 0d3FF0000010000000;\n\tcvt.rn.f32.f64 %f1, %fd1;\n\tmov.b32 %r0, %f1;" + st32, 0x3f800000},
		{"9.7.9.21 cvt.rp.f32.f64", "mov.f64 %fd1, 0d3FF0000010000000;\n\tcvt.rp.f32.f64 %f1, %fd1;\n\tmov.b32 %r0, %f1;" + st32, 0x3f800001},
		{"9.7.9.21 cvt.rn.f32.s32 rounds", "mov.u32 %r1, 16777217;\n\tcvt.rn.f32.s32 %f1, %r1;\n\tmov.b32 %r0, %f1;" + st32, 0x4b800000},
		{"9.7.9.21 cvt.rp.f32.s32", "mov.u32 %r1, 16777217;\n\tcvt.rp.f32.s32 %f1, %r1;\n\tmov.b32 %r0, %f1;" + st32, 0x4b800001},
		{"9.7.9.21 cvt.u16.u32 truncates", "mov.u32 %r1, 0x12345;\n\tcvt.u16.u32 %h0, %r1;" + st16, 0x2345},
		{"9.7.9.21 cvt.sat.u8.s32", "mov.u32 %r1, 300;\n\tcvt.sat.u8.s32 %r0, %r1;" + st32, 255},
		{"9.7.9.21 cvt.s64.s32 sign-extends", "mov.u32 %r1, -2;\n\tcvt.s64.s32 %rd0, %r1;" + st64, 0xfffffffffffffffe},
		{"9.7.3.5 fma rounds once", "mov.f32 %f1, 0f3F800800;\n\tfma.rn.f32 %f2, %f1, %f1, 0fBF801000;\n\tmov.b32 %r0, %f2;" + st32, 0x33800000},
		{"9.7.3.4 mul then add rounds twice", "mov.f32 %f1, 0f3F800800;\n\tmul.rn.f32 %f3, %f1, %f1;\n\tadd.rn.f32 %f2, %f3, 0fBF801000;\n\tmov.b32 %r0, %f2;" + st32, 0},
		{"9.7.3.1 add.rz", "add.rz.f32 %f2, 0f3F800000, 0f30800000;\n\tmov.b32 %r0, %f2;" + st32, 0x3f800000},
		{"9.7.3.1 add.rp", "add.rp.f32 %f2, 0f3F800000, 0f30800000;\n\tmov.b32 %r0, %f2;" + st32, 0x3f800001},
		{"9.7.3.1 add.rm of a negative", "add.rm.f32 %f2, 0fBF800000, 0fB0800000;\n\tmov.b32 %r0, %f2;" + st32, 0xbf800001},
		{"9.7.3.1 add.sat.f32", "add.sat.f32 %f2, 0f3F800000, 0f3F800000;\n\tmov.b32 %r0, %f2;" + st32, 0x3f800000},
		{"9.7.3.10 min.f32 ignores NaN", "min.f32 %f2, 0f7FC00000, 0f3F800000;\n\tmov.b32 %r0, %f2;" + st32, 0x3f800000},
		{"9.7.3.8 div.rn.f32", "div.rn.f32 %f2, 0f3F800000, 0f40400000;\n\tmov.b32 %r0, %f2;" + st32, 0x3eaaaaab},
		{"9.7.3.8 div.rz.f32", "div.rz.f32 %f2, 0f3F800000, 0f40400000;\n\tmov.b32 %r0, %f2;" + st32, 0x3eaaaaaa},
		{"9.7.3.5 fma.rn.f64", "fma.rn.f64 %fd1, 0d3FF0000000000001, 0d3FF0000000000001, 0dBFF0000000000002;\n\tmov.b64 %rd0, %fd1;" + st64, 0x3970000000000000},
		{"9.7.4.2 setp with .and and a negated predicate", "mov.u32 %r1, 5;\n\tsetp.gt.s32 %p1, %r1, 3;\n\tsetp.lt.and.s32 %p2|%p3, %r1, 10, !%p1;\n\tselp.u32 %r0, 1, 2, %p3;" + st32, 2},
		{"9.7.4.2 setp.lo unsigned", "mov.u32 %r1, -1;\n\tsetp.lo.u32 %p1, %r1, 3;\n\tselp.u32 %r0, 1, 2, %p1;" + st32, 2},
		{"9.7.4.2 setp.nan", "setp.nan.f32 %p1, 0f7FC00000, 0f3F800000;\n\tselp.u32 %r0, 1, 2, %p1;" + st32, 1},
		{"9.7.4.2 setp.ltu unordered", "setp.ltu.f32 %p1, 0f7FC00000, 0f3F800000;\n\tselp.u32 %r0, 1, 2, %p1;" + st32, 1},
		{"9.7.4.2 setp.lt ordered", "setp.lt.f32 %p1, 0f7FC00000, 0f3F800000;\n\tselp.u32 %r0, 1, 2, %p1;" + st32, 2},
		{"9.7.4.5 slct", "mov.u32 %r1, -3;\n\tslct.u32.s32 %r0, 7, 9, %r1;" + st32, 9},
		{"9.7.9.1 mov packs", "mov.u32 %r1, 1;\n\tmov.u32 %r2, 2;\n\tmov.b64 %rd0, {%r1, %r2};" + st64, 0x200000001},
		{"9.7.9.1 mov unpacks", "mov.u64 %rd1, 0x300000004;\n\tmov.b64 {%r1, %r2}, %rd1;\n\tsub.s32 %r0, %r2, %r1;" + st32, 0xffffffff},
		{"9.7.12 predicated instructions", "mov.u32 %r0, 1;\n\tsetp.eq.u32 %p1, %r0, 2;\n\t@%p1 mov.u32 %r0, 5;\n\t@!%p1 add.s32 %r0, %r0, 10;" + st32, 11},
		{"special registers", "mov.u32 %r1, %ntid.x;\n\tmov.u32 %r2, %nctaid.y;\n\tmov.u32 %r3, %laneid;\n\tadd.s32 %r0, %r1, %r2;\n\tadd.s32 %r0, %r0, %r3;" + st32, 2},
		{"local memory", ".local .align 8 .b8 stack[16];\n\tmov.u64 %rd1, stack;\n\tmov.u32 %r1, 42;\n\tst.local.u32 [%rd1+4], %r1;\n\tld.local.u32 %r0, [stack+4];" + st32, 42},
		{"generic addressing of local memory", ".local .align 8 .b8 stack[16];\n\tmov.u64 %rd1, stack;\n\tcvta.local.u64 %rd2, %rd1;\n\tmov.u32 %r1, 43;\n\tst.u32 [%rd2+8], %r1;\n\tld.local.u32 %r0, [%rd1+8];" + st32, 43},
		{"ld.global.nc and .v2", "mov.u64 %rd1, 0x0000000700000005;\n\tst.global.u64 [%rd15], %rd1;\n\tld.global.nc.v2.u32 {%r1, %r2}, [%rd15];\n\tmul.lo.s32 %r0, %r1, %r2;" + st32, 0x700000023},
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
}

func TestModuleConstantsAndDynamicShared(t *testing.T) {
	src := header + `.const .align 4 .b32 table[4] = {10, 20, 30, 40};
.extern .shared .align 16 .b8 dyn[];
.visible .entry k(.param .u64 out)
{
	.reg .b32 %r<8>;
	.reg .b64 %rd<4>;
	ld.param.u64 %rd1, [out];
	mov.u32 %r1, %tid.x;
	shl.b32 %r2, %r1, 2;
	mov.u32 %r3, table;
	ld.const.u32 %r4, [table+8];
	mov.u32 %r5, dyn;
	add.s32 %r6, %r5, %r2;
	st.shared.u32 [%r6], %r4;
	bar.sync 0;
	ld.shared.u32 %r7, [dyn+4];
	add.s32 %r7, %r7, %r1;
	mul.wide.u32 %rd2, %r1, 4;
	add.s64 %rd3, %rd1, %rd2;
	st.global.u32 [%rd3], %r7;
	ret;
}
`
	m := mustParse(t, src)
	out := NewBuffer("out", 4*8)
	if _, err := Launch(context.Background(), m, "k", LaunchConfig{Block: [3]int{8}, DynamicShared: 32,
		Params: []Arg{Ptr(out)}, Buffers: []*Buffer{out}}); err != nil {
		t.Fatal(err)
	}
	for i := range 8 {
		if got := readN(out.Data[4*i:], 4); got != uint64(30+i) {
			t.Errorf("thread %d: %d, want %d", i, got, 30+i)
		}
	}
	// without dynamic shared memory, dyn+4 is out of bounds
	_, err := Launch(context.Background(), m, "k", LaunchConfig{Block: [3]int{8}, Params: []Arg{Ptr(out)}, Buffers: []*Buffer{out}})
	if err == nil {
		t.Fatal("dynamic shared memory access without any was not caught")
	}
	_ = fmt.Sprint
}
