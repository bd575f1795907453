package vgpu

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

const header = ".version 7.8\n.target sm_80\n.address_size 64\n\n"

// lineOf returns the 1-based line of the first line of src containing s.
func lineOf(t *testing.T, src, s string) int {
	t.Helper()
	for i, l := range strings.Split(src, "\n") {
		if strings.Contains(l, s) {
			return i + 1
		}
	}
	t.Fatalf("no line contains %q", s)
	return 0
}

func mustParse(t *testing.T, src string) *Module {
	t.Helper()
	m, err := ParseModule(src)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// A warp loads and stores float32s stride words apart (stride 0: all lanes the same word).
const stridePTX = header + `
.visible .entry strided(.param .u64 p, .param .u32 stride)
{
	.reg .b32 %r<4>;
	.reg .b64 %rd<4>;
	.reg .f32 %f<2>;
	ld.param.u64 %rd1, [p];
	ld.param.u32 %r1, [stride];
	mov.u32 %r2, %tid.x;
	mul.lo.s32 %r3, %r2, %r1;
	mul.wide.s32 %rd2, %r3, 4;
	add.s64 %rd3, %rd1, %rd2;
	ld.global.f32 %f1, [%rd3];          // LOAD
	st.global.f32 [%rd3], %f1;          // STORE
	ret;
}
`

func TestGlobalSectorsAndCoalescing(t *testing.T) {
	m := mustParse(t, stridePTX)
	for _, tc := range []struct {
		stride           uint32
		sectors          int64
		used, coalescing float64
	}{
		{1, 4, 128, 1},           // 32 consecutive floats: 128 bytes, 4 sectors
		{32, 32, 128, 0.125},     // one float per 128-byte row: 32 sectors for 128 useful bytes
		{0, 1, 4, 4.0 / 32},      // a broadcast: one sector, one distinct word
		{2, 8, 128, 128.0 / 256}, // every other float
	} {
		buf := NewBuffer("x", 4*32*32)
		c, err := Launch(context.Background(), m, "strided", LaunchConfig{Block: [3]int{32},
			Params: []Arg{Ptr(buf), U32(tc.stride)}, Buffers: []*Buffer{buf}})
		if err != nil {
			t.Fatal(err)
		}
		if c.GlobalLoadRequests != 1 || c.GlobalStoreRequests != 1 {
			t.Errorf("stride %d: requests %d/%d, want 1/1", tc.stride, c.GlobalLoadRequests, c.GlobalStoreRequests)
		}
		if c.LoadSectors != tc.sectors || c.StoreSectors != tc.sectors {
			t.Errorf("stride %d: sectors %d/%d, want %d", tc.stride, c.LoadSectors, c.StoreSectors, tc.sectors)
		}
		if c.GlobalBytesUsed != int64(2*tc.used) {
			t.Errorf("stride %d: bytes used %d, want %v", tc.stride, c.GlobalBytesUsed, 2*tc.used)
		}
		if got := c.Coalescing(); got != tc.coalescing {
			t.Errorf("stride %d: coalescing %v, want %v", tc.stride, got, tc.coalescing)
		}
		if c.WarpInstructions != 9 || c.ThreadInstructions != 9*32 || c.ActiveLanes() != 32 {
			t.Errorf("stride %d: %d warp / %d thread instructions", tc.stride, c.WarpInstructions, c.ThreadInstructions)
		}
		if c.Classes[ClassLoad].Warp != 3 || c.Classes[ClassStore].Warp != 1 {
			t.Errorf("stride %d: classes %+v", tc.stride, c.Classes)
		}
		ln := lineOf(t, stridePTX, "// LOAD")
		found := false
		for _, l := range c.Lines {
			if l.Line == ln {
				found = true
				if l.Sectors != tc.sectors || l.Requests != 1 || l.Warp != 1 || l.Thread != 32 {
					t.Errorf("stride %d: line %d counts %+v", tc.stride, ln, l)
				}
			}
		}
		if !found {
			t.Errorf("no counts for PTX line %d", ln)
		}
	}
}

const banksPTX = header + `
.visible .entry banks(.param .u32 stride)
{
	.reg .b32 %r<8>;
	.reg .f32 %f<2>;
	.shared .align 4 .b8 sm[8192];
	ld.param.u32 %r1, [stride];
	mov.u32 %r2, %tid.x;
	mul.lo.s32 %r3, %r2, %r1;
	shl.b32 %r4, %r3, 2;
	mov.u32 %r5, sm;
	add.s32 %r6, %r5, %r4;
	ld.shared.f32 %f1, [%r6];
	ret;
}
`

func TestSharedBankConflicts(t *testing.T) {
	m := mustParse(t, banksPTX)
	for _, tc := range []struct {
		stride uint32
		wave   int64
	}{{1, 1}, {32, 32}, {0, 1}, {2, 2}, {33, 1}, {16, 16}} {
		c, err := Launch(context.Background(), m, "banks", LaunchConfig{Block: [3]int{32}, Params: []Arg{U32(tc.stride)}})
		if err != nil {
			t.Fatal(err)
		}
		if c.SharedLoadRequests != 1 || c.SharedWavefronts != tc.wave || c.BankConflicts() != tc.wave-1 {
			t.Errorf("stride %d: %d requests, %d wavefronts; want 1, %d", tc.stride, c.SharedLoadRequests, c.SharedWavefronts, tc.wave)
		}
	}
}

const divergePTX = header + `
.visible .entry diverge(.param .u64 out)
{
	.reg .pred %p<2>;
	.reg .b32 %r<6>;
	.reg .b64 %rd<4>;
	ld.param.u64 %rd1, [out];
	mov.u32 %r1, %tid.x;
	and.b32 %r2, %r1, 1;
	setp.eq.u32 %p1, %r2, 0;
	@%p1 bra EVEN;
	mov.u32 %r3, 100;           // ODD
	bra.uni DONE;
EVEN:
	mov.u32 %r3, 200;           // EVEN
DONE:
	add.s32 %r4, %r3, %r1;      // JOIN
	mul.wide.u32 %rd2, %r1, 4;
	add.s64 %rd3, %rd1, %rd2;
	st.global.u32 [%rd3], %r4;
	ret;
}
`

func TestDivergenceAndReconvergence(t *testing.T) {
	m := mustParse(t, divergePTX)
	out := NewBuffer("out", 4*32)
	c, err := Launch(context.Background(), m, "diverge", LaunchConfig{Block: [3]int{32}, Params: []Arg{Ptr(out)}, Buffers: []*Buffer{out}})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 32 {
		want := uint64(100 + i)
		if i%2 == 0 {
			want = uint64(200 + i)
		}
		if got := readN(out.Data[4*i:], 4); got != want {
			t.Errorf("lane %d: %d, want %d", i, got, want)
		}
	}
	byLine := map[int]LineCount{}
	for _, l := range c.Lines {
		byLine[l.Line] = l
	}
	for _, tc := range []struct {
		mark         string
		warp, thread int64
	}{{"// ODD", 1, 16}, {"// EVEN", 1, 16}, {"// JOIN", 1, 32}} {
		l := byLine[lineOf(t, divergePTX, tc.mark)]
		if l.Warp != tc.warp || l.Thread != tc.thread {
			t.Errorf("%s: %d warp, %d thread instructions; want %d, %d", tc.mark, l.Warp, l.Thread, tc.warp, tc.thread)
		}
	}
	if a := c.ActiveLanes(); a >= 32 || a <= 16 {
		t.Errorf("mean active lanes %v, want between 16 and 32", a)
	}
}

const barrierPTX = header + `
.visible .entry bars(.param .u32 split)
{
	.reg .pred %p<2>;
	.reg .b32 %r<4>;
	ld.param.u32 %r2, [split];
	mov.u32 %r1, %tid.x;
	setp.lt.u32 %p1, %r1, %r2;
	@%p1 bra A;
	bar.sync 0;                 // BAR1
	bra.uni END;
A:
	bar.sync 0;                 // BAR2
END:
	ret;
}
`

func TestBarriers(t *testing.T) {
	m := mustParse(t, barrierPTX)
	// everyone at the same barrier: one barrier completed per block
	c, err := Launch(context.Background(), m, "bars", LaunchConfig{Grid: [3]int{3}, Block: [3]int{64}, Params: []Arg{U32(0)}})
	if err != nil || c.Barriers != 3 {
		t.Fatalf("uniform barrier: %v, %d barriers (want 3)", err, c.Barriers)
	}
	// threads split between two barriers: an error naming both, not a hang
	_, err = Launch(context.Background(), m, "bars", LaunchConfig{Block: [3]int{64}, Params: []Arg{U32(16)}})
	var f *Fault
	if !errors.As(err, &f) || f.Kind != "barrier" {
		t.Fatalf("split barrier: %v, want a barrier fault", err)
	}
	l1, l2 := lineOf(t, barrierPTX, "// BAR1"), lineOf(t, barrierPTX, "// BAR2")
	if !(f.Line == l1 && f.OtherLine == l2 || f.Line == l2 && f.OtherLine == l1) {
		t.Errorf("fault lines %d and %d, want %d and %d: %v", f.Line, f.OtherLine, l1, l2, err)
	}
	if !strings.Contains(err.Error(), "bar.sync") {
		t.Errorf("error does not name the barrier: %v", err)
	}
}

func TestInfiniteLoopStopsOnCancel(t *testing.T) {
	m := mustParse(t, header+`.visible .entry spin()
{
L:
	bra.uni L;
}
`)
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(50 * time.Millisecond); cancel() }()
	_, err := Launch(ctx, m, "spin", LaunchConfig{Grid: [3]int{4}, Block: [3]int{64}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
}

const oobPTX = header + `
.visible .entry oob(.param .u64 out, .param .u32 skew)
{
	.reg .b32 %r<4>;
	.reg .b64 %rd<6>;
	ld.param.u64 %rd1, [out];
	ld.param.u32 %r2, [skew];
	mov.u32 %r1, %tid.x;
	mul.wide.u32 %rd2, %r1, 4;
	add.s64 %rd3, %rd1, %rd2;
	cvt.u64.u32 %rd4, %r2;
	add.s64 %rd5, %rd3, %rd4;
	st.global.u32 [%rd5], %r1;   // STORE
	ret;
}
`

func TestSanitizerOutOfBoundsAndMisaligned(t *testing.T) {
	m := mustParse(t, oobPTX)
	out := NewBuffer("out", 4*32)
	run := func(block int, skew uint32) error {
		_, err := Launch(context.Background(), m, "oob", LaunchConfig{Grid: [3]int{2}, Block: [3]int{block},
			Params: []Arg{Ptr(out), U32(skew)}, Buffers: []*Buffer{out}})
		return err
	}
	if err := run(32, 0); err != nil {
		t.Fatalf("in bounds: %v", err)
	}
	err := run(33, 0)
	var f *Fault
	if !errors.As(err, &f) || f.Kind != "out of bounds" {
		t.Fatalf("33 threads into 32 words: %v, want out of bounds", err)
	}
	if f.Thread != [3]int{32, 0, 0} || f.Line != lineOf(t, oobPTX, "// STORE") || f.Space != "global" {
		t.Errorf("fault %+v", f)
	}
	if !strings.Contains(err.Error(), "st.global.u32") {
		t.Errorf("error does not show the instruction: %v", err)
	}
	err = run(32, 2)
	if !errors.As(err, &f) || f.Kind != "misaligned" || f.Thread != [3]int{0, 0, 0} {
		t.Fatalf("skewed by 2 bytes: %v, want misaligned at thread 0", err)
	}
	if want := `misaligned 4-byte global store at byte 2 of buffer "out": the address of a 4-byte access must be a multiple of 4`; !strings.Contains(err.Error(), want) {
		t.Errorf("got %v, want it to say %s", err, want)
	}
}

const hazardPTX = header + `
.visible .entry hazard(.param .u32 sync)
{
	.reg .pred %p<2>;
	.reg .b32 %r<10>;
	.shared .align 4 .b8 sm[1024];
	ld.param.u32 %r9, [sync];
	mov.u32 %r1, %tid.x;
	mov.u32 %r2, %ntid.x;
	mov.u32 %r3, sm;
	shl.b32 %r4, %r1, 2;
	add.s32 %r5, %r3, %r4;
	st.shared.u32 [%r5], %r1;        // WRITE
	setp.eq.u32 %p1, %r9, 0;
	@%p1 bra SKIP;
	bar.sync 0;
SKIP:
	add.s32 %r6, %r1, 1;
	rem.u32 %r6, %r6, %r2;
	shl.b32 %r7, %r6, 2;
	add.s32 %r8, %r3, %r7;
	ld.shared.u32 %r6, [%r8];        // READ
	ret;
}
`

func TestSanitizerSharedHazard(t *testing.T) {
	m := mustParse(t, hazardPTX)
	if _, err := Launch(context.Background(), m, "hazard", LaunchConfig{Block: [3]int{64}, Params: []Arg{U32(1)}}); err != nil {
		t.Fatalf("with the barrier: %v", err)
	}
	_, err := Launch(context.Background(), m, "hazard", LaunchConfig{Block: [3]int{64}, Params: []Arg{U32(0)}})
	var f *Fault
	if !errors.As(err, &f) || f.Kind != "hazard" {
		t.Fatalf("without the barrier: %v, want a hazard", err)
	}
	w, r := lineOf(t, hazardPTX, "// WRITE"), lineOf(t, hazardPTX, "// READ")
	if !(f.Line == w && f.OtherLine == r || f.Line == r && f.OtherLine == w) {
		t.Errorf("hazard lines %d and %d, want %d and %d: %v", f.Line, f.OtherLine, w, r, err)
	}
	// turned off, the same launch runs
	if _, err := Launch(context.Background(), m, "hazard", LaunchConfig{Block: [3]int{64}, Params: []Arg{U32(0)}, NoRacecheck: true}); err != nil {
		t.Fatal(err)
	}
}

// The tiled kernel of matmul.cu with its second __syncthreads() removed: the next tile overwrites
// shared memory other warps are still reading.
func TestSanitizerMissingSyncthreadsInSmem(t *testing.T) {
	src, err := loadPTXText(80)
	if err != nil {
		t.Fatal(err)
	}
	start := strings.Index(src, ".visible .entry cuda_smem(")
	body := src[start:]
	first := strings.Index(body, "bar.sync")
	second := first + 1 + strings.Index(body[first+1:], "bar.sync")
	lineEnd := strings.Index(body[second:], "\n")
	planted := src[:start] + body[:second] + "// removed" + body[second+lineEnd:]
	m := mustParse(t, planted)
	n := 64
	A, B, C := NewBuffer("A", 4*n*n), NewBuffer("B", 4*n*n), NewBuffer("C", 4*n*n)
	_, err = Launch(context.Background(), m, "cuda_smem", LaunchConfig{Grid: [3]int{2, 2}, Block: [3]int{32, 32},
		Params: []Arg{Ptr(A), Ptr(B), Ptr(C), S32(int32(n)), S32(int32(n)), S32(int32(n))}, Buffers: []*Buffer{A, B, C}})
	var f *Fault
	if !errors.As(err, &f) || f.Kind != "hazard" || f.OtherLine == 0 {
		t.Fatalf("got %v, want a shared-memory hazard", err)
	}
}

func loadPTXText(arch int) (string, error) {
	b, err := ptxFS(arch)
	return string(b), err
}

func TestUnsupportedNamesOpcodeAndLine(t *testing.T) {
	src := header + `.visible .entry k()
{
	.reg .b32 %r<4>;
	mov.u32 %r1, 1;
	redux.sync.add.f32 %r2, %r1, -1;
	ret;
}
`
	m := mustParse(t, src)
	_, err := Launch(context.Background(), m, "k", LaunchConfig{})
	var u *UnsupportedError
	if !errors.As(err, &u) || u.Line != lineOf(t, src, "redux") || !strings.Contains(err.Error(), "redux.sync.add.f32") {
		t.Fatalf("got %v, want an unsupported-opcode error at line %d", err, lineOf(t, src, "redux"))
	}
}

func TestParseErrorsNameTheLine(t *testing.T) {
	for _, tc := range []struct{ src, mark string }{
		{header + ".visible .entry k()\n{\n\tmov.u32 %r1 1;\n}\n", "mov.u32"},
		{header + ".visible .entry k()\n{\n\t.reg .b32 %r<2>;\n\tbra NOWHERE;\n}\n", "NOWHERE"},
		{header + ".visible .entry k(\n\t.param .q32 x\n)\n{\n}\n", ".q32"},
		{header + ".visible .entry k()\n{\n\tld.global.f32 %f1, [%rd1+];\n}\n", "[%rd1+]"},
	} {
		_, err := ParseModule(tc.src)
		var pe *ParseError
		if !errors.As(err, &pe) {
			// an unknown register is a decode error, reported at launch; check both kinds of line
			m, perr := ParseModule(tc.src)
			if perr == nil {
				_, err = Launch(context.Background(), m, "k", LaunchConfig{})
			}
		}
		want := fmt.Sprintf("PTX line %d", lineOf(t, tc.src, tc.mark))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: got %v, want an error naming %s", tc.mark, err, want)
		}
	}
}

const locPTX = header + `.file 1 "kernel.cu"
.visible .entry k(.param .u64 out)
{
	.reg .b32 %r<4>;
	.reg .b64 %rd<4>;
	.loc 1 3 5
	ld.param.u64 %rd1, [out];
	mov.u32 %r1, %tid.x;
	.loc 1 4 9, function_name $L__info_string0, inlined_at 1 9 3
	mul.wide.u32 %rd2, %r1, 4;
	add.s64 %rd3, %rd1, %rd2;
	st.global.u32 [%rd3], %r1;
	ret;
}
`

func TestCountsPerSourceLineAndFaultSource(t *testing.T) {
	m := mustParse(t, locPTX)
	out := NewBuffer("out", 4*32)
	c, err := Launch(context.Background(), m, "k", LaunchConfig{Block: [3]int{32}, Params: []Arg{Ptr(out)}, Buffers: []*Buffer{out}})
	if err != nil {
		t.Fatal(err)
	}
	want := []LineCount{{File: "kernel.cu", Line: 3, Warp: 2, Thread: 64},
		{File: "kernel.cu", Line: 4, Warp: 4, Thread: 128, Requests: 1, Sectors: 4, BytesUsed: 128}}
	if len(c.Sources) != 2 || c.Sources[0] != want[0] || c.Sources[1] != want[1] {
		t.Errorf("sources %+v, want %+v", c.Sources, want)
	}
	// the same kernel writing past its buffer reports the CUDA line
	_, err = Launch(context.Background(), m, "k", LaunchConfig{Block: [3]int{33}, Params: []Arg{Ptr(out)}, Buffers: []*Buffer{out}})
	var f *Fault
	if !errors.As(err, &f) || f.Source != "kernel.cu:4" || !strings.Contains(err.Error(), "kernel.cu:4") {
		t.Fatalf("got %v, want a fault at kernel.cu:4", err)
	}
}
