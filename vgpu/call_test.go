package vgpu

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// A recursive .func with a local array in its frame, called by only some lanes (divergent call),
// with clang/NVRTC's call sequence: .param variables in a { } scope, st.param, call, ld.param.
const callPTX = header + `
.func (.param .b32 func_retval0) fib(.param .b32 fib_param_0);

.func (.param .b32 func_retval0) fib(
	.param .b32 fib_param_0
)
{
	.local .align 4 .b8 __local_depot0[16];
	.reg .b64 %SPL;
	.reg .pred %p<2>;
	.reg .b32 %r<10>;
	.reg .b64 %rd<4>;
	mov.u64 %SPL, __local_depot0;
	ld.param.u32 %r1, [fib_param_0];
	st.local.u32 [%SPL+8], %r1;              // a local variable that must survive the calls
	setp.lt.s32 %p1, %r1, 2;
	@%p1 bra BASE;
	add.s32 %r2, %r1, -1;
	{
	.param .b32 param0;
	st.param.b32 [param0+0], %r2;
	.param .b32 retval0;
	call.uni (retval0), fib, (param0);
	ld.param.b32 %r3, [retval0+0];
	}
	add.s32 %r4, %r1, -2;
	{
	.param .b32 param0;
	st.param.b32 [param0+0], %r4;
	.param .b32 retval0;
	call.uni (retval0), fib, (param0);
	ld.param.b32 %r5, [retval0+0];
	}
	ld.local.u32 %r6, [%SPL+8];
	setp.ne.s32 %p1, %r6, %r1;
	@%p1 trap;                               // the frame was clobbered
	add.s32 %r7, %r3, %r5;
	st.param.b32 [func_retval0+0], %r7;
	ret;
BASE:
	st.param.b32 [func_retval0+0], %r1;
	ret;
}

.func (.param .b32 func_retval0) twice(.param .b32 twice_param_0)
{
	.reg .b32 %r<3>;
	ld.param.u32 %r1, [twice_param_0];
	add.s32 %r2, %r1, %r1;
	st.param.b32 [func_retval0+0], %r2;
	ret;
}

.visible .entry k(.param .u64 out)
{
	.reg .pred %p<2>;
	.reg .b32 %r<8>;
	.reg .b64 %rd<4>;
	ld.param.u64 %rd1, [out];
	mov.u32 %r1, %tid.x;
	mov.u32 %r2, -1;
	and.b32 %r3, %r1, 15;
	setp.gt.u32 %p1, %r1, 20;                // lanes 21.. skip the call
	@%p1 bra SKIP;
	{
	.param .b32 param0;
	st.param.b32 [param0+0], %r3;
	.param .b32 retval0;
	call.uni (retval0), fib, (param0);
	ld.param.b32 %r2, [retval0+0];
	}
SKIP:
	{
	.param .b32 param0;
	st.param.b32 [param0+0], %r2;
	.param .b32 retval0;
	call.uni (retval0), twice, (param0);
	ld.param.b32 %r4, [retval0+0];
	}
	mul.wide.u32 %rd2, %r1, 4;
	add.s64 %rd3, %rd1, %rd2;
	st.global.u32 [%rd3], %r4;
	ret;
}
`

func TestCallsRecursionAndDivergence(t *testing.T) {
	m := mustParse(t, callPTX)
	out := NewBuffer("out", 4*64)
	c, err := Launch(context.Background(), m, "k", LaunchConfig{Block: [3]int{64}, Params: []Arg{Ptr(out)}, Buffers: []*Buffer{out}})
	if err != nil {
		t.Fatal(err)
	}
	fib := func(n int) int {
		a, b := 0, 1
		for range n {
			a, b = b, a+b
		}
		return a
	}
	for i := range 64 {
		want := -2
		if i <= 20 {
			want = 2 * fib(i&15)
		}
		if got := int32(readN(out.Data[4*i:], 4)); int(got) != want {
			t.Errorf("thread %d: %d, want %d", i, got, want)
		}
	}
	if c.ThreadInstructions == 0 || c.Classes[ClassBranch].Warp == 0 {
		t.Errorf("counts: %+v", c.Classes)
	}
	// the calls reconverge: the store after them runs once per warp
	line := lineOf(t, callPTX, "st.global.u32 [%rd3], %r4;")
	for _, lc := range c.Lines {
		if lc.Line == line && lc.Warp != 2 {
			t.Errorf("the store after the calls issued %d times for 2 warps", lc.Warp)
		}
	}
}

func TestStackOverflowIsAFault(t *testing.T) {
	src := header + `
.func (.param .b32 r) down(.param .b32 a)
{
	.reg .b32 %r<3>;
	ld.param.u32 %r1, [a];
	{
	.param .b32 p0;
	st.param.b32 [p0+0], %r1;
	.param .b32 r0;
	call.uni (r0), down, (p0);
	ld.param.b32 %r2, [r0+0];
	}
	st.param.b32 [r+0], %r2;
	ret;
}
.visible .entry k()
{
	.reg .b32 %r<3>;
	{
	.param .b32 p0;
	st.param.b32 [p0+0], 1;
	.param .b32 r0;
	call.uni (r0), down, (p0);
	ld.param.b32 %r2, [r0+0];
	}
	ret;
}
`
	m := mustParse(t, src)
	_, err := Launch(context.Background(), m, "k", LaunchConfig{Block: [3]int{32}})
	var f *Fault
	if !errors.As(err, &f) || f.Kind != "stack overflow" {
		t.Fatalf("got %v, want a stack overflow fault", err)
	}
}

func TestCallToUnknownExternIsUnsupported(t *testing.T) {
	src := header + `
.extern .func (.param .b64 r) malloc(.param .b64 n);
.visible .entry k()
{
	.reg .b64 %rd<3>;
	{
	.param .b64 p0;
	st.param.b64 [p0+0], 16;
	.param .b64 r0;
	call.uni (r0), malloc, (p0);
	ld.param.b64 %rd1, [r0+0];
	}
	ret;
}
`
	m := mustParse(t, src)
	_, err := Launch(context.Background(), m, "k", LaunchConfig{})
	var u *UnsupportedError
	if !errors.As(err, &u) || !strings.Contains(u.Error(), "malloc") || u.Line != lineOf(t, src, "call.uni") {
		t.Fatalf("got %v, want an *UnsupportedError naming malloc at the call", err)
	}
}

// printf and assert as NVRTC emits them: the format in .global, the arguments in a local buffer.
const printfPTX = header + `
.extern .func (.param .b32 func_retval0) vprintf(.param .b64 vprintf_param_0, .param .b64 vprintf_param_1);
.extern .func __assertfail(.param .b64 p0, .param .b64 p1, .param .b32 p2, .param .b64 p3, .param .b64 p4);
.global .align 1 .b8 $str[28] = {116, 61, 37, 100, 32, 120, 61, 37, 48, 52, 120, 32, 102, 61, 37, 46, 50, 102, 32, 115, 61, 37, 115, 10, 0};
.global .align 1 .b8 $str$1[3] = {104, 105, 0};
.global .align 1 .b8 $msg[6] = {116, 32, 60, 32, 51, 0};
.global .align 1 .b8 $file[5] = {107, 46, 99, 117, 0};
.global .align 1 .b8 $fn[2] = {107, 0};

.visible .entry k(.param .u64 out)
{
	.local .align 8 .b8 __local_depot0[24];
	.reg .b64 %SP;
	.reg .b64 %SPL;
	.reg .pred %p<2>;
	.reg .b32 %r<8>;
	.reg .f64 %fd<2>;
	.reg .b64 %rd<12>;
	mov.u64 %SPL, __local_depot0;
	cvta.local.u64 %SP, %SPL;
	ld.param.u64 %rd9, [out];
	mov.u32 %r1, %tid.x;
	st.local.u32 [%SPL], %r1;
	mul.lo.s32 %r2, %r1, 255;
	st.local.u32 [%SPL+4], %r2;
	cvt.rn.f64.u32 %fd1, %r1;
	st.local.f64 [%SPL+8], %fd1;
	mov.u64 %rd1, $str$1;
	cvta.global.u64 %rd2, %rd1;
	st.local.u64 [%SPL+16], %rd2;
	mov.u64 %rd3, $str;
	cvta.global.u64 %rd4, %rd3;
	{
	.param .b64 param0;
	st.param.b64 [param0+0], %rd4;
	.param .b64 param1;
	st.param.b64 [param1+0], %SP;
	.param .b32 retval0;
	call.uni (retval0), vprintf, (param0, param1);
	ld.param.b32 %r3, [retval0+0];
	}
	mul.wide.u32 %rd10, %r1, 4;
	add.s64 %rd11, %rd9, %rd10;
	st.global.u32 [%rd11], %r3;
	setp.lt.u32 %p1, %r1, 3;
	@%p1 bra DONE;
	mov.u64 %rd5, $msg;
	cvta.global.u64 %rd5, %rd5;
	mov.u64 %rd6, $file;
	cvta.global.u64 %rd6, %rd6;
	mov.u64 %rd7, $fn;
	cvta.global.u64 %rd7, %rd7;
	{
	.param .b64 param0;
	st.param.b64 [param0+0], %rd5;
	.param .b64 param1;
	st.param.b64 [param1+0], %rd6;
	.param .b32 param2;
	st.param.b32 [param2+0], 19;
	.param .b64 param3;
	st.param.b64 [param3+0], %rd7;
	.param .b64 param4;
	st.param.b64 [param4+0], 1;
	call.uni __assertfail, (param0, param1, param2, param3, param4);
	}
DONE:
	ret;
}
`

func TestPrintfAndAssert(t *testing.T) {
	m := mustParse(t, printfPTX)
	out := NewBuffer("out", 4*4)
	c, err := Launch(context.Background(), m, "k", LaunchConfig{Block: [3]int{3}, Params: []Arg{Ptr(out)}, Buffers: []*Buffer{out}})
	if err != nil {
		t.Fatal(err)
	}
	want := "t=0 x=0000 f=0.00 s=hi\nt=1 x=00ff f=1.00 s=hi\nt=2 x=01fe f=2.00 s=hi\n"
	if c.Printf != want {
		t.Errorf("printf output %q, want %q", c.Printf, want)
	}
	if got := readN(out.Data, 4); got != 4 {
		t.Errorf("printf returned %d, want 4 (arguments)", got)
	}
	// thread 3 fails its assertion; the output before it is kept
	c, err = Launch(context.Background(), m, "k", LaunchConfig{Block: [3]int{4}, Params: []Arg{Ptr(out)}, Buffers: []*Buffer{out}})
	var f *Fault
	if !errors.As(err, &f) || f.Kind != "assertion" {
		t.Fatalf("got %v, want an assertion fault", err)
	}
	if !strings.Contains(f.Msg, "Assertion `t < 3` failed in k") || f.Source != "k.cu:19" || f.Thread != [3]int{3, 0, 0} {
		t.Errorf("fault %+v", f)
	}
	if !strings.HasPrefix(c.Printf, "t=0 x=0000") || !strings.Contains(c.Printf, "t=3 x=02fd") {
		t.Errorf("printf output before the assertion: %q", c.Printf)
	}
}

func TestPrintfTruncated(t *testing.T) {
	m := mustParse(t, printfPTX)
	n := 4000 // 4000 lines of ~24 bytes: over 64 KiB
	out := NewBuffer("out", 4*1024)
	c, err := Launch(context.Background(), m, "k", LaunchConfig{Grid: [3]int{n / 3}, Block: [3]int{3}, Workers: 1, Params: []Arg{Ptr(out)}, Buffers: []*Buffer{out}})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Printf) > MaxPrintfBytes+len(printfTruncated)+1 || !strings.HasSuffix(c.Printf, printfTruncated) {
		t.Errorf("output of %d bytes ends %q", len(c.Printf), c.Printf[max(0, len(c.Printf)-40):])
	}
}

func TestFormatPrintf(t *testing.T) {
	// an argument buffer: each value aligned to its size
	type arg struct {
		size int
		v    uint64
	}
	run := func(f string, args ...arg) string {
		var buf []byte
		for _, a := range args {
			for len(buf)%a.size != 0 {
				buf = append(buf, 0)
			}
			b := make([]byte, a.size)
			writeN(b, a.size, a.v)
			buf = append(buf, b...)
		}
		s, _ := formatPrintf(f, func(off, size int) uint64 { return readN(buf[off:], size) },
			func(addr uint64) string { return map[uint64]string{7: "str"}[addr] })
		return s
	}
	i32 := func(x int32) arg { return arg{4, uint64(uint32(x))} }
	i64 := func(x int64) arg { return arg{8, uint64(x)} }
	f64 := func(x float64) arg { return arg{8, b64f(x)} }
	for _, tc := range []struct {
		got, want string
	}{
		{run("%d %i %5d|%-5d|%05d", i32(-3), i32(4), i32(42), i32(42), i32(42)), "-3 4    42|42   |00042"},
		{run("%u %x %X %#x %o", i32(-1), i32(255), i32(255), i32(255), i32(8)), "4294967295 ff FF 0xff 10"},
		{run("%ld %lld %lu %lx", i64(-5), i64(1<<40), i64(-1), i64(1<<40)), "-5 1099511627776 18446744073709551615 10000000000"},
		{run("%f %.2f %e %g %g %g", f64(1.5), f64(3.14159), f64(12345.678), f64(0.0001), f64(1e6), f64(1.0/3)), "1.500000 3.14 1.234568e+04 0.0001 1e+06 0.333333"},
		{run("%f %f %F", f64(posInf()), f64(negInf()), f64(nan())), "inf -inf NAN"},
		{run("%s|%5s|%.2s|%c%c", arg{8, 7}, arg{8, 7}, arg{8, 7}, i32('o'), i32('k')), "str|  str|st|ok"},
		{run("%p %p", arg{8, 0x1000}, arg{8, 0}), "0x1000 (nil)"},
		{run("100%% %*d %hd %hhd", i32(4), i32(7), i32(65537), i32(257)), "100%    7 1 1"},
		{run("%d %ld", i32(1), i64(2)), "1 2"}, // 8-byte arguments are aligned
		{run("%q %d", i32(5)), "%q 5"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}

func posInf() float64 { return f64(0x7ff0000000000000) }
func negInf() float64 { return f64(0xfff0000000000000) }
func nan() float64    { return f64(0x7ff8000000000000) }
