package vgpu

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// ldmatrixPTX stages 1024 bytes of src in shared memory (32 bytes a thread), then each lane gives
// ldmatrix the shared offset addrs[lane] and stores the registers it receives at out + 16·lane.
func ldmatrixPTX(form string, nregs int) string {
	regs := []string{"%r10", "%r11", "%r12", "%r13"}[:nregs]
	dst := "{" + strings.Join(regs, ", ") + "}"
	return header + `.visible .entry k(.param .u64 src, .param .u64 addrs, .param .u64 out)
{
	.reg .b32 %r<20>;
	.reg .b64 %rd<12>;
	.shared .align 16 .b8 tile[1024];
	ld.param.u64 %rd1, [src];
	ld.param.u64 %rd2, [addrs];
	ld.param.u64 %rd3, [out];
	mov.u32 %r1, %tid.x;
	mul.wide.u32 %rd4, %r1, 32;
	add.s64 %rd5, %rd1, %rd4;
	ld.global.v4.u32 {%r2, %r3, %r4, %r5}, [%rd5];
	ld.global.v4.u32 {%r6, %r7, %r8, %r9}, [%rd5+16];
	mov.u32 %r14, tile;
	shl.b32 %r15, %r1, 5;
	add.u32 %r16, %r14, %r15;
	st.shared.v4.u32 [%r16], {%r2, %r3, %r4, %r5};
	st.shared.v4.u32 [%r16+16], {%r6, %r7, %r8, %r9};
	bar.sync 0;
	mul.wide.u32 %rd6, %r1, 4;
	add.s64 %rd7, %rd2, %rd6;
	ld.global.u32 %r17, [%rd7];
	add.u32 %r18, %r14, %r17;
	ldmatrix.sync.aligned.m8n8.` + form + `.shared.b16 ` + dst + `, [%r18];
	mul.wide.u32 %rd8, %r1, 16;
	add.s64 %rd9, %rd3, %rd8;
	st.global.v4.u32 [%rd9], {%r10, %r11, %r12, %r13};
	ret;
}
`
}

// TestLdmatrix checks every form against the PTX ISA's definition (9.7.14.5.15): lane 8i+r names
// row r of matrix i; lane 4r+c receives in register i the word at byte 4c of that row, or with
// .trans the 16-bit elements at column r of rows 2c and 2c+1 (low half first).
func TestLdmatrix(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	src := make([]byte, 1024)
	for i := range src {
		src[i] = byte(rng.IntN(256))
	}
	for _, tc := range []struct {
		form  string
		num   int
		trans bool
	}{{"x1", 1, false}, {"x2", 2, false}, {"x4", 4, false}, {"x1.trans", 1, true}, {"x2.trans", 2, true}, {"x4.trans", 4, true}} {
		t.Run(tc.form, func(t *testing.T) {
			rows := rng.Perm(64) // 64 rows of 16 bytes: each lane names a distinct one
			addrs := make([]uint32, 32)
			for l := range addrs {
				addrs[l] = uint32(16 * rows[l])
			}
			m := mustParse(t, ldmatrixPTX(tc.form, tc.num))
			S, A, O := NewBuffer("src", 1024), uint32Buffer("addrs", addrs), NewBuffer("out", 16*32)
			copy(S.Data, src)
			if _, err := Launch(context.Background(), m, "k", LaunchConfig{Block: [3]int{32},
				Params: []Arg{Ptr(S), Ptr(A), Ptr(O)}, Buffers: []*Buffer{S, A, O}}); err != nil {
				t.Fatal(err)
			}
			h := func(row uint32, col int) uint32 { return uint32(binary.LittleEndian.Uint16(src[int(row)+2*col:])) }
			for l := range 32 {
				for i := range 4 {
					got := binary.LittleEndian.Uint32(O.Data[16*l+4*i:])
					want := uint32(0)
					r, c := l/4, l%4
					switch {
					case i >= tc.num:
					case tc.trans:
						want = h(addrs[8*i+2*c], r) | h(addrs[8*i+2*c+1], r)<<16
					default:
						want = binary.LittleEndian.Uint32(src[int(addrs[8*i+r])+4*c:])
					}
					if got != want {
						t.Fatalf("lane %d register %d = %#x, want %#x", l, i, got, want)
					}
				}
			}
		})
	}
}

// The initcheck of an ldmatrix looks at each lane's row, whatever the shared access before it
// found: after a load of consecutive words (one run of written bytes), lane 5's row in the half
// of the tile no thread wrote is an uninitialised read, though lanes 0 and 31 name written rows
// either side of the others.
func TestLdmatrixInitcheckAfterARun(t *testing.T) {
	src := header + `.visible .entry k(.param .u64 addrs, .param .u64 out)
{
	.reg .b32 %r<20>;
	.reg .b64 %rd<12>;
	.shared .align 16 .b8 tile[1024];
	ld.param.u64 %rd2, [addrs];
	ld.param.u64 %rd3, [out];
	mov.u32 %r1, %tid.x;
	mov.u32 %r14, tile;
	shl.b32 %r15, %r1, 4;
	add.u32 %r16, %r14, %r15;
	st.shared.v4.u32 [%r16], {%r1, %r1, %r1, %r1};
	bar.sync 0;
	shl.b32 %r15, %r1, 2;
	add.u32 %r16, %r14, %r15;
	ld.shared.u32 %r2, [%r16];
	mul.wide.u32 %rd6, %r1, 4;
	add.s64 %rd7, %rd2, %rd6;
	ld.global.u32 %r17, [%rd7];
	add.u32 %r18, %r14, %r17;
	ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%r10, %r11, %r12, %r13}, [%r18];
	add.u32 %r10, %r10, %r2;
	mul.wide.u32 %rd8, %r1, 16;
	add.s64 %rd9, %rd3, %rd8;
	st.global.v4.u32 [%rd9], {%r10, %r11, %r12, %r13};
	ret;
}
`
	addrs := make([]uint32, 32)
	for l := range addrs {
		addrs[l] = uint32(16 * (1 + l%8)) // written rows (the first 512 bytes) between lane 0's and lane 31's
	}
	addrs[0], addrs[31], addrs[5] = 0, 16*31, 16*40
	m := mustParse(t, src)
	A, O := uint32Buffer("addrs", addrs), NewBuffer("out", 16*32)
	c, err := Launch(context.Background(), m, "k", LaunchConfig{Block: [3]int{32}, Params: []Arg{Ptr(A), Ptr(O)}, Buffers: []*Buffer{A, O}})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Notes) != 1 || c.Notes[0].Kind != "uninitialised read" || c.Notes[0].Thread != [3]int{5, 0, 0} || !strings.Contains(c.Notes[0].Instr, "ldmatrix") {
		t.Errorf("notes %v, want lane 5's ldmatrix row as an uninitialised read", c.Notes)
	}
}

func uint32Buffer(name string, xs []uint32) *Buffer {
	b := NewBuffer(name, 4*len(xs))
	for i, x := range xs {
		binary.LittleEndian.PutUint32(b.Data[4*i:], x)
	}
	return b
}

// lineCounts returns the counts of the PTX line of src containing s.
func lineCounts(t *testing.T, c Counts, src, s string) LineCount {
	t.Helper()
	n := lineOf(t, src, s)
	for _, lc := range c.Lines {
		if lc.Line == n {
			return lc
		}
	}
	t.Fatalf("no counts for line %d (%s)", n, s)
	return LineCount{}
}

// An ldmatrix.x4 reads 4 matrices of 8 rows of 16 bytes: rows that fill the 32 banks once per
// matrix take 1 wavefront each; rows 128 bytes apart all fall in the same 4 banks: 8 each; an XOR
// swizzle of the 16-byte column by the row (col ^ row%8) spreads them again.
func TestLdmatrixBankConflicts(t *testing.T) {
	src := ldmatrixPTX("x4", 4)
	m := mustParse(t, src)
	for _, tc := range []struct {
		name      string
		addr      func(l int) int
		wave, ide int64
	}{
		{"contiguous", func(l int) int { return 16 * l }, 4, 4},
		{"rows 128 bytes apart", func(l int) int { return 128*(l%8) + 16*(l/8) }, 32, 4},
		{"rows 64 bytes apart", func(l int) int { return 64*(l%8) + 16*(l/8) }, 16, 4},
		{"swizzled", func(l int) int { return 128*(l%8) + 16*((l/8)^(l%8)) }, 4, 4},
	} {
		addrs := make([]uint32, 32)
		for l := range addrs {
			addrs[l] = uint32(tc.addr(l))
		}
		S, A, O := NewBuffer("src", 1024), uint32Buffer("addrs", addrs), NewBuffer("out", 16*32)
		c, err := Launch(context.Background(), m, "k", LaunchConfig{Block: [3]int{32},
			Params: []Arg{Ptr(S), Ptr(A), Ptr(O)}, Buffers: []*Buffer{S, A, O}})
		if err != nil {
			t.Fatal(err)
		}
		lc := lineCounts(t, c, src, "ldmatrix")
		if lc.SharedRequests != 1 || lc.Wavefronts != tc.wave || lc.IdealWavefronts != tc.ide {
			t.Errorf("%s: %d requests, %d wavefronts (ideal %d), want 1, %d (%d)", tc.name, lc.SharedRequests, lc.Wavefronts, lc.IdealWavefronts, tc.wave, tc.ide)
		}
	}
}

// mmaPTX multiplies a row-major 16×k A by a row-major k×8 B (16-bit elements) with one
// mma.sync.m16n8k<k>, its fragments loaded by ldmatrix (A: .x4 or .x2; B: .trans), adding C (f32,
// 16×8 row-major) and storing D (f32) by the ISA's accumulator layout.
func mmaPTX(k int, etype string) string {
	aLoad := "ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%r20, %r21, %r22, %r23}, [%r8];"
	bLoad := "ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%r24, %r25}, [%r9];"
	aRegs, bRegs := "{%r20, %r21, %r22, %r23}", "{%r24, %r25}"
	// A's rows are 2k bytes; lane l names row l%16 at column 8·(l/16)
	aAddr := "and.b32 %r5, %r1, 15;\n\tmul.lo.u32 %r5, %r5, " + fmt.Sprint(2*k) + ";\n\tshr.u32 %r6, %r1, 4;\n\tshl.b32 %r6, %r6, 4;\n\tadd.u32 %r5, %r5, %r6;"
	if k == 8 {
		aLoad = "ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%r20, %r21}, [%r8];"
		bLoad = "ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16 {%r24}, [%r9];"
		aRegs, bRegs = "{%r20, %r21}", "{%r24}"
	}
	return header + `.visible .entry k(.param .u64 a, .param .u64 b, .param .u64 c, .param .u64 d)
{
	.reg .b32 %r<40>;
	.reg .f32 %f<12>;
	.reg .b64 %rd<16>;
	.reg .pred %p<2>;
	.shared .align 16 .b8 ta[512];
	.shared .align 16 .b8 tb[256];
	ld.param.u64 %rd1, [a];
	ld.param.u64 %rd2, [b];
	ld.param.u64 %rd3, [c];
	ld.param.u64 %rd4, [d];
	mov.u32 %r1, %tid.x;
	shl.b32 %r2, %r1, 4;
	setp.lt.u32 %p1, %r2, ` + fmt.Sprint(32*k) + `;
	@!%p1 bra SKIPA;
	cvt.u64.u32 %rd5, %r2;
	add.s64 %rd6, %rd1, %rd5;
	ld.global.v4.u32 {%r10, %r11, %r12, %r13}, [%rd6];
	mov.u32 %r3, ta;
	add.u32 %r3, %r3, %r2;
	st.shared.v4.u32 [%r3], {%r10, %r11, %r12, %r13};
SKIPA:
	setp.lt.u32 %p1, %r2, ` + fmt.Sprint(16*k) + `;
	@!%p1 bra SKIPB;
	cvt.u64.u32 %rd5, %r2;
	add.s64 %rd6, %rd2, %rd5;
	ld.global.v4.u32 {%r10, %r11, %r12, %r13}, [%rd6];
	mov.u32 %r3, tb;
	add.u32 %r3, %r3, %r2;
	st.shared.v4.u32 [%r3], {%r10, %r11, %r12, %r13};
SKIPB:
	bar.sync 0;
	` + aAddr + `
	mov.u32 %r8, ta;
	add.u32 %r8, %r8, %r5;
	and.b32 %r7, %r1, 15;
	shl.b32 %r7, %r7, 4;
	mov.u32 %r9, tb;
	add.u32 %r9, %r9, %r7;
	` + aLoad + `
	` + bLoad + `
	shr.u32 %r14, %r1, 2;
	and.b32 %r15, %r1, 3;
	shl.b32 %r16, %r14, 3;
	shl.b32 %r17, %r15, 1;
	add.u32 %r16, %r16, %r17;
	mul.wide.u32 %rd7, %r16, 4;
	add.s64 %rd8, %rd3, %rd7;
	ld.global.v2.f32 {%f0, %f1}, [%rd8];
	ld.global.v2.f32 {%f2, %f3}, [%rd8+256];
	mma.sync.aligned.m16n8k` + fmt.Sprint(k) + `.row.col.f32.` + etype + `.` + etype + `.f32 {%f4, %f5, %f6, %f7}, ` + aRegs + `, ` + bRegs + `, {%f0, %f1, %f2, %f3};
	add.s64 %rd9, %rd4, %rd7;
	st.global.v2.f32 [%rd9], {%f4, %f5};
	st.global.v2.f32 [%rd9+256], {%f6, %f7};
	ret;
}
`
}

// TestMmaSync multiplies through ldmatrix and mma.sync and compares with the CPU: small integers
// and halves, exact in f16, bf16 and their f32 sums, so any misplaced element shows.
func TestMmaSync(t *testing.T) {
	for _, k := range []int{16, 8} {
		for _, et := range []string{"f16", "bf16"} {
			t.Run(fmt.Sprintf("m16n8k%d.%s", k, et), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(uint64(k), 7))
				enc := func(x float64) uint16 {
					if et == "f16" {
						return roundF16(x, rmNearest, 0)
					}
					return roundBF16(x, rmNearest, 0)
				}
				a, b := make([]float64, 16*k), make([]float64, k*8)
				c := make([]float32, 16*8)
				ah, bh := make([]uint16, len(a)), make([]uint16, len(b))
				for i := range a {
					a[i] = float64(rng.IntN(15)-7) / 2
					ah[i] = enc(a[i])
				}
				for i := range b {
					b[i] = float64(rng.IntN(9) - 4)
					bh[i] = enc(b[i])
				}
				for i := range c {
					c[i] = float32(rng.IntN(5))
				}
				src := mmaPTX(k, et)
				m := mustParse(t, src)
				A, B, C, D := Uint16Buffer("a", ah), Uint16Buffer("b", bh), Float32Buffer("c", c), NewOutput("d", 4*16*8, Poisoned)
				cnt, err := Launch(context.Background(), m, "k", LaunchConfig{Block: [3]int{32},
					Params: []Arg{Ptr(A), Ptr(B), Ptr(C), Ptr(D)}, Buffers: []*Buffer{A, B, C, D}})
				if err != nil {
					t.Fatal(err)
				}
				got := D.Float32s()
				for i := range 16 {
					for j := range 8 {
						want := float64(c[i*8+j])
						for x := range k {
							want += a[i*k+x] * b[x*8+j]
						}
						if float64(got[i*8+j]) != want {
							t.Fatalf("d[%d][%d] = %v, want %v", i, j, got[i*8+j], want)
						}
					}
				}
				if got, want := cnt.TensorFLOPs, int64(2*16*8*k); got != want || cnt.FLOPs != want {
					t.Errorf("tensor FLOPs %d (of %d), want %d", got, cnt.FLOPs, want)
				}
				if len(cnt.Notes) != 0 {
					t.Errorf("notes: %v", cnt.Notes[0])
				}
			})
		}
	}
}

// mma.sync and ldmatrix are warp-collective: a divergent warp is a fault, as wmma's.
func TestMmaDivergent(t *testing.T) {
	src := strings.Replace(mmaPTX(16, "f16"), "\tmma.sync", "\tsetp.lt.u32 %p1, %r1, 16;\n\t@%p1 mma.sync", 1)
	m := mustParse(t, src)
	bufs := []*Buffer{NewBuffer("a", 512), NewBuffer("b", 256), NewBuffer("c", 512), NewBuffer("d", 512)}
	_, err := launch1(t, m, "k", 1, 32, bufs)
	var f *Fault
	if !errors.As(err, &f) || f.Kind != "divergent warp sync" {
		t.Fatalf("got %v, want a divergent warp sync fault", err)
	}
}

// cpAsyncPTX copies n bytes of src into shared memory with one 16-byte cp.async per thread (the
// src-size of the last ones short, then 0: zero-filled), then each thread stores the 16 bytes its
// neighbour (lane + 1) copied to out. before is put between the copy and the wait, after between
// the wait and the read; read names the 16 bytes read (default: the neighbour's).
func cpAsyncPTX(before, after, wait string) string {
	return header + `.visible .entry k(.param .u64 src, .param .u64 out, .param .u32 n)
{
	.reg .b32 %r<30>;
	.reg .b64 %rd<12>;
	.shared .align 16 .b8 buf[1024];
	ld.param.u64 %rd1, [src];
	ld.param.u64 %rd2, [out];
	ld.param.u32 %r2, [n];
	mov.u32 %r1, %tid.x;
	shl.b32 %r3, %r1, 4;
	sub.s32 %r4, %r2, %r3;
	min.s32 %r4, %r4, 16;
	max.s32 %r4, %r4, 0;
	mov.u32 %r5, buf;
	add.u32 %r6, %r5, %r3;
	cvt.u64.u32 %rd3, %r3;
	add.s64 %rd4, %rd1, %rd3;
	cp.async.cg.shared.global [%r6], [%rd4], 16, %r4;
	cp.async.commit_group;
	` + before + `
	` + wait + `
	` + after + `
	add.u32 %r7, %r1, 1;
	and.b32 %r7, %r7, 31;
	shl.b32 %r7, %r7, 4;
	add.u32 %r8, %r5, %r7;
	ld.shared.v4.u32 {%r10, %r11, %r12, %r13}, [%r8];
	add.s64 %rd5, %rd2, %rd3;
	st.global.v4.u32 [%rd5], {%r10, %r11, %r12, %r13};
	ret;
}
`
}

// checkCpAsyncCopies runs cpAsyncPTX with each wait and checks the copies, the zero-fill of the
// lanes past n = 200 and the counts (TestCpAsync).
func checkCpAsyncCopies(t *testing.T, run func(*testing.T, string) (Counts, *Buffer, error), in []byte) {
	t.Helper()
	const n = 200
	for _, wait := range []string{"cp.async.wait_group 0;", "cp.async.wait_all;"} {
		src := cpAsyncPTX("", "", wait+"\n\tbar.sync 0;")
		c, O, err := run(t, src)
		if err != nil {
			t.Fatal(err)
		}
		for l := range 32 {
			for b := range 16 {
				x := 16*((l+1)%32) + b
				want := byte(0)
				if x < n {
					want = in[x]
				}
				if got := O.Data[16*l+b]; got != want {
					t.Fatalf("%s: out[%d] = %d, want %d", wait, 16*l+b, got, want)
				}
			}
		}
		if len(c.Notes) != 0 {
			t.Errorf("notes: %v", c.Notes[0])
		}
		// one global load request of the 13 lanes with bytes to read (208 bytes: 7 sectors)
		// and one shared store of 32 × 16 contiguous bytes (4 wavefronts)
		lc := lineCounts(t, c, src, "cp.async.cg")
		if lc.Requests != 1 || lc.Sectors != 7 || lc.SharedRequests != 1 || lc.Wavefronts != 4 || lc.IdealWavefronts != 4 {
			t.Errorf("cp.async counts %+v", lc)
		}
		if c.GlobalLoadRequests != 1 || c.SharedStoreRequests != 1 || c.SharedLoadRequests != 1 {
			t.Errorf("global loads %d, shared stores %d, shared loads %d; want 1, 1, 1", c.GlobalLoadRequests, c.SharedStoreRequests, c.SharedLoadRequests)
		}
		// the copy's writes and its L1-bypassing lines are counted apart (as Nsight Compute
		// counts an LDGSTS): the copy's 208 bytes span 2 lines; the launch's shared wavefronts
		// are the ld.shared.v4's alone and its global lines the st.global.v4's (4 each: 32
		// lanes × 16 bytes)
		if c.AsyncCopyWavefronts != 4 || c.AsyncCopyLines != 2 || c.SharedWavefronts != 4 || c.GlobalLines != 4 {
			t.Errorf("async copy wavefronts %d, lines %d; shared wavefronts %d, global lines %d; want 4, 2, 4, 4",
				c.AsyncCopyWavefronts, c.AsyncCopyLines, c.SharedWavefronts, c.GlobalLines)
		}
	}
}

func TestCpAsync(t *testing.T) {
	const n = 200 // 12 full copies, one of 8 bytes, 19 of none
	rng := rand.New(rand.NewPCG(3, 4))
	in := make([]byte, n)
	for i := range in {
		in[i] = byte(1 + rng.IntN(255))
	}
	run := func(t *testing.T, src string) (Counts, *Buffer, error) {
		m := mustParse(t, src)
		S, O := NewBuffer("src", n), NewOutput("out", 512, Poisoned)
		copy(S.Data, in)
		c, err := launch1(t, m, "k", 1, 32, []*Buffer{S, O}, U32(n))
		return c, O, err
	}
	t.Run("copies and zero-fills", func(t *testing.T) { checkCpAsyncCopies(t, run, in) })
	t.Run("read before the wait", func(t *testing.T) {
		// a thread reading its own destination before its wait_group sees the poison
		src := cpAsyncPTX("ld.shared.u32 %r20, [%r6];\n\tst.global.u32 [%rd2+4], %r20;", "bar.sync 0;", "cp.async.wait_group 0;")
		c, _, err := run(t, src)
		if err != nil {
			t.Fatal(err)
		}
		if len(c.Notes) != 1 || c.Notes[0].Kind != "uninitialised read" || c.Notes[0].Line != lineOf(t, src, "ld.shared.u32 %r20") {
			t.Fatalf("notes %v, want one uninitialised read at the early load", c.Notes)
		}
	})
	t.Run("no barrier after the wait", func(t *testing.T) {
		// the neighbour's copy is written at its wait: reading it without a barrier is a hazard
		src := cpAsyncPTX("", "", "cp.async.wait_group 0;")
		_, _, err := run(t, src)
		var f *Fault
		if !errors.As(err, &f) || f.Kind != "hazard" || f.OtherLine != lineOf(t, src, "cp.async.cg") {
			t.Fatalf("got %v, want a hazard with the cp.async", err)
		}
	})
	t.Run("wait_group 1 leaves the newest group", func(t *testing.T) {
		// a second group copies to buf+512 (offsets past n: zeros) and is not waited for: the
		// first group's bytes are there, the second's are not
		second := "add.u32 %r21, %r6, 512;\n\tcp.async.ca.shared.global [%r21], [%rd4], 16, %r4;\n\tcp.async.commit_group;"
		src := cpAsyncPTX(second, "bar.sync 0;\n\tld.shared.u32 %r22, [%r6+512];\n\tst.global.u32 [%rd2+508], %r22;", "cp.async.wait_group 1;")
		c, O, err := run(t, src)
		if err != nil {
			t.Fatal(err)
		}
		if got := O.Data[16*31]; got != in[0] {
			t.Errorf("first group: %d, want %d", got, in[0])
		}
		if len(c.Notes) != 1 || c.Notes[0].Line != lineOf(t, src, "ld.shared.u32 %r22") {
			t.Fatalf("notes %v, want one uninitialised read of the second group's bytes", c.Notes)
		}
	})
	t.Run("src-size past the buffer", func(t *testing.T) {
		// every thread asks for 16 bytes of the 200: the last one reads past the end
		m := mustParse(t, strings.Replace(cpAsyncPTX("", "bar.sync 0;", "cp.async.wait_all;"), ", 16, %r4;", ", 16;", 1))
		S, O := NewBuffer("src", n), NewOutput("out", 512, Poisoned)
		_, err := launch1(t, m, "k", 1, 32, []*Buffer{S, O}, U32(n))
		var f *Fault
		if !errors.As(err, &f) || f.Kind != "out of bounds" {
			t.Fatalf("got %v, want an out-of-bounds fault", err)
		}
	})
}

// TestTensorFLOPsScaled: TensorFLOPs scale with a sampled launch like FLOPs.
func TestTensorFLOPsScaled(t *testing.T) {
	c := Counts{Blocks: 1, GridBlocks: 4, FLOPs: 10, TensorFLOPs: 8}.Scaled()
	if c.TensorFLOPs != 32 || c.FLOPs != 40 {
		t.Errorf("scaled %d of %d, want 32 of 40", c.TensorFLOPs, c.FLOPs)
	}
}
