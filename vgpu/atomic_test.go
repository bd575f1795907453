package vgpu

import (
	"context"
	"fmt"
	"math"
	"testing"
)

// atomPTX runs, in one thread, init → mem; op; and returns (mem, old) for 32- or 64-bit types.
func atomCase(t *testing.T, typ, op string, init, b uint64, c ...uint64) (mem, old uint64) {
	t.Helper()
	bits := "32"
	reg := "%r"
	if typ[len(typ)-2:] == "64" {
		bits, reg = "64", "%rd"
	}
	operands := fmt.Sprintf("%s1, [%%rd15], %s2", reg, reg)
	setup := fmt.Sprintf("\tmov.b%s %s3, %d;\n\tst.global.b%s [%%rd15], %s3;\n\tmov.b%s %s2, %d;\n", bits, reg, init, bits, reg, bits, reg, b)
	if len(c) > 0 {
		setup += fmt.Sprintf("\tmov.b%s %s4, %d;\n", bits, reg, c[0])
		operands += ", " + reg + "4"
	}
	src := header + `.visible .entry k(.param .u64 out)
{
	.reg .b32 %r<8>;
	.reg .b64 %rd<16>;
	ld.param.u64 %rd15, [out];
` + setup + "\tatom.global." + op + "." + typ + " " + operands + ";\n" +
		fmt.Sprintf("\tst.global.b%s [%%rd15+8], %s1;\n", bits, reg) + "\tret;\n}\n"
	m := mustParse(t, src)
	out := NewBuffer("out", 16)
	cnt, err := Launch(context.Background(), m, "k", LaunchConfig{Params: []Arg{Ptr(out)}, Buffers: []*Buffer{out}})
	if err != nil {
		t.Fatalf("%s.%s: %v", op, typ, err)
	}
	if cnt.Atomics != 1 || cnt.GlobalAtomicRequests != 1 || cnt.Classes[ClassAtomic].Warp != 1 {
		t.Errorf("%s.%s: atomics %d, requests %d", op, typ, cnt.Atomics, cnt.GlobalAtomicRequests)
	}
	n := 4
	if bits == "64" {
		n = 8
	}
	return readN(out.Data, n), readN(out.Data[8:], n)
}

// PTX ISA 8.x, section 9.7.13.5 "atom": d = old value; *a = op(*a, b[, c]).
func TestAtomSemantics(t *testing.T) {
	f32b := func(x float32) uint64 { return uint64(math.Float32bits(x)) }
	neg := func(x int32) uint64 { return uint64(uint32(x)) }
	for _, tc := range []struct {
		typ, op       string
		init, b       uint64
		c             []uint64
		wantMem, want uint64
	}{
		{"u32", "add", 0xffffffff, 2, nil, 1, 0xffffffff}, // wraps
		{"s32", "add", 5, neg(-7), nil, neg(-2), 5},
		{"u64", "add", 1 << 40, 3, nil, 1<<40 + 3, 1 << 40},
		{"f32", "add", f32b(1.5), f32b(2.25), nil, f32b(3.75), f32b(1.5)},
		{"f32", "add", f32b(1e-40), f32b(0), nil, f32b(0), f32b(1e-40)}, // subnormals flushed
		{"f64", "add", math.Float64bits(0.5), math.Float64bits(0.25), nil, math.Float64bits(0.75), math.Float64bits(0.5)},
		{"s32", "min", neg(-3), 4, nil, neg(-3), neg(-3)},
		{"u32", "min", neg(-3), 4, nil, 4, neg(-3)}, // unsigned: 0xfffffffd > 4
		{"s32", "max", neg(-3), 4, nil, 4, neg(-3)},
		{"u64", "max", 7, 9, nil, 9, 7},
		{"s64", "min", 7, uint64(math.MaxUint64), nil, uint64(math.MaxUint64), 7}, // -1 < 7
		{"b32", "exch", 11, 22, nil, 22, 11},
		{"b64", "exch", 11, 1 << 50, nil, 1 << 50, 11},
		{"b32", "cas", 5, 5, []uint64{9}, 9, 5}, // equal: swapped
		{"b32", "cas", 6, 5, []uint64{9}, 6, 6}, // not equal: unchanged
		{"b64", "cas", 1 << 40, 1 << 40, []uint64{3}, 3, 1 << 40},
		{"b32", "and", 0b1100, 0b1010, nil, 0b1000, 0b1100},
		{"b32", "or", 0b1100, 0b1010, nil, 0b1110, 0b1100},
		{"b32", "xor", 0b1100, 0b1010, nil, 0b0110, 0b1100},
		{"b64", "or", 1 << 60, 1, nil, 1<<60 | 1, 1 << 60},
		{"u32", "inc", 3, 5, nil, 4, 3},
		{"u32", "inc", 5, 5, nil, 0, 5}, // old >= b: wraps to 0
		{"u32", "inc", 9, 5, nil, 0, 9},
		{"u32", "dec", 3, 5, nil, 2, 3},
		{"u32", "dec", 0, 5, nil, 5, 0}, // old == 0: wraps to b
		{"u32", "dec", 9, 5, nil, 5, 9}, // old > b: b
	} {
		mem, old := atomCase(t, tc.typ, tc.op, tc.init, tc.b, tc.c...)
		if mem != tc.wantMem || old != tc.want {
			t.Errorf("atom.%s.%s init %#x b %#x: memory %#x old %#x, want %#x %#x", tc.op, tc.typ, tc.init, tc.b, mem, old, tc.wantMem, tc.want)
		}
	}
}

func TestAtomUnsupportedTypes(t *testing.T) {
	for _, line := range []string{
		"atom.global.inc.s32 %r1, [%rd15], 1;",
		"atom.global.add.f16 %r1, [%rd15], %r2;",
		"atom.global.and.f32 %r1, [%rd15], %r2;",
		"red.global.cas.b32 [%rd15], %r1, %r2;",
		"atom.local.add.u32 %r1, [%rd15], 1;",
	} {
		src := header + ".visible .entry k(.param .u64 out)\n{\n\t.reg .b32 %r<4>;\n\t.reg .b64 %rd<16>;\n\t" + line + "\n\tret;\n}\n"
		m := mustParse(t, src)
		_, err := Launch(context.Background(), m, "k", LaunchConfig{Params: []Arg{U64(0)}})
		if _, ok := err.(*UnsupportedError); !ok {
			t.Errorf("%s: got %v, want an *UnsupportedError", line, err)
		}
	}
}

// A histogram: each CTA counts its values into shared bins with atom.shared, then adds its bins to
// the global histogram with red.global; many CTAs run in parallel.
const histPTX = header + `.visible .entry hist(.param .u64 in, .param .u64 bins, .param .u32 n)
{
	.reg .pred %p<4>;
	.reg .b32 %r<16>;
	.reg .b64 %rd<16>;
	.shared .align 4 .b8 sbins[64];
	ld.param.u64 %rd1, [in];
	ld.param.u64 %rd2, [bins];
	ld.param.u32 %r1, [n];
	mov.u32 %r2, %ctaid.x;
	mov.u32 %r3, %ntid.x;
	mov.u32 %r4, %tid.x;
	setp.ge.u32 %p2, %r4, 16;
	shl.b32 %r10, %r4, 2;
	mov.u32 %r11, sbins;
	add.u32 %r12, %r11, %r10;
	@!%p2 st.shared.u32 [%r12], 0;
	bar.sync 0;
	mad.lo.s32 %r5, %r2, %r3, %r4;
	setp.ge.s32 %p1, %r5, %r1;
	@%p1 bra SKIP;
	mul.wide.s32 %rd3, %r5, 4;
	add.s64 %rd4, %rd1, %rd3;
	ld.global.u32 %r6, [%rd4];
	and.b32 %r6, %r6, 15;
	shl.b32 %r7, %r6, 2;
	add.u32 %r8, %r11, %r7;
	atom.shared.add.u32 %r9, [%r8], 1;
SKIP:
	bar.sync 0;
	@%p2 bra DONE;
	ld.shared.u32 %r13, [%r12];
	mul.wide.u32 %rd5, %r4, 4;
	add.s64 %rd6, %rd2, %rd5;
	red.global.add.u32 [%rd6], %r13;
	cvta.global.u64 %rd7, %rd2;
	atom.add.u32 %r14, [%rd7+64], %r13;       // generic: a total
DONE:
	ret;
}
`

func TestAtomicHistogram(t *testing.T) {
	m := mustParse(t, histPTX)
	const n = 10000
	vals := make([]uint32, n)
	in := NewBuffer("in", 4*n)
	want := make([]uint32, 16)
	for i := range vals {
		v := uint32(i*7919) % 1000
		writeN(in.Data[4*i:], 4, uint64(v))
		want[v&15]++
	}
	bins := NewBuffer("bins", 4*17)
	block := 128
	grid := (n + block - 1) / block
	c, err := Launch(context.Background(), m, "hist", LaunchConfig{Grid: [3]int{grid}, Block: [3]int{block}, Workers: 4,
		Params: []Arg{Ptr(in), Ptr(bins), U32(n)}, Buffers: []*Buffer{in, bins}})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 16 {
		if got := uint32(readN(bins.Data[4*i:], 4)); got != want[i] {
			t.Errorf("bin %d = %d, want %d", i, got, want[i])
		}
	}
	if got := readN(bins.Data[64:], 4); got != n {
		t.Errorf("total %d, want %d", got, n)
	}
	if c.Atomics != n+2*16*int64(grid) {
		t.Errorf("atomics %d, want %d", c.Atomics, n+2*16*grid)
	}
	if c.SharedAtomicRequests != int64(n+31)/32 || c.GlobalAtomicRequests != 2*int64(grid) {
		t.Errorf("requests: shared %d global %d", c.SharedAtomicRequests, c.GlobalAtomicRequests)
	}
	if c.GlobalLoadRequests != int64(n+31)/32 || c.GlobalBytesUsed != 4*n {
		t.Errorf("loads %d, bytes %d: atomics must not count as loads", c.GlobalLoadRequests, c.GlobalBytesUsed)
	}
}

// atomicAdd float reduction over many CTAs (integers, so the sum is exact in any order), and a
// compare-and-swap loop incrementing one counter from every thread.
const reducePTX = header + `.visible .entry reduce(.param .u64 x, .param .u64 out, .param .u32 n)
{
	.reg .pred %p<4>;
	.reg .b32 %r<16>;
	.reg .f32 %f<4>;
	.reg .f64 %fd<4>;
	.reg .b64 %rd<16>;
	ld.param.u64 %rd1, [x];
	ld.param.u64 %rd2, [out];
	ld.param.u32 %r1, [n];
	mov.u32 %r2, %ctaid.x;
	mov.u32 %r3, %ntid.x;
	mov.u32 %r4, %tid.x;
	mad.lo.s32 %r5, %r2, %r3, %r4;
	setp.ge.s32 %p1, %r5, %r1;
	@%p1 bra DONE;
	mul.wide.s32 %rd3, %r5, 4;
	add.s64 %rd4, %rd1, %rd3;
	ld.global.f32 %f1, [%rd4];
	atom.global.add.f32 %f2, [%rd2], %f1;
	cvt.f64.f32 %fd1, %f1;
	red.global.add.f64 [%rd2+8], %fd1;
	// cas loop: do { old = cas(p, assumed, assumed+1) } while (old != assumed)
	ld.volatile.global.u32 %r6, [%rd2+16];
LOOP:
	add.u32 %r7, %r6, 1;
	atom.global.cas.b32 %r8, [%rd2+16], %r6, %r7;
	setp.ne.u32 %p2, %r8, %r6;
	mov.u32 %r6, %r8;
	@%p2 bra LOOP;
DONE:
	ret;
}
`

func TestAtomicFloatReductionAndCASLoop(t *testing.T) {
	m := mustParse(t, reducePTX)
	const n = 5000
	xs := make([]float32, n)
	var want float64
	for i := range xs {
		xs[i] = float32(i%17) - 8
		want += float64(xs[i])
	}
	x := Float32Buffer("x", xs)
	out := NewBuffer("out", 24)
	// the counter starts at a value the first guess (a stale read) may miss
	writeN(out.Data[16:], 4, 1000)
	_, err := Launch(context.Background(), m, "reduce", LaunchConfig{Grid: [3]int{(n + 255) / 256}, Block: [3]int{256}, Workers: 8,
		Params: []Arg{Ptr(x), Ptr(out), U32(n)}, Buffers: []*Buffer{x, out}, NoRacecheck: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := math.Float32frombits(uint32(readN(out.Data, 4))); float64(got) != want {
		t.Errorf("f32 sum %v, want %v", got, want)
	}
	if got := math.Float64frombits(readN(out.Data[8:], 8)); got != want {
		t.Errorf("f64 sum %v, want %v", got, want)
	}
	if got := readN(out.Data[16:], 4); got != 1000+n {
		t.Errorf("cas counter %d, want %d", got, 1000+n)
	}
}
