package vgpu

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// Named barriers with thread counts (namedbar.go), on the warp-specialised patterns of Hopper
// kernels: consumer warps that synchronise among themselves while a producer warp keeps running,
// and a bar.arrive / bar.sync pingpong between two groups.
const namedBarCUDA = `
#define BAR_SYNC(id, n) asm volatile("bar.sync %0, %1;" :: "r"(id), "r"(n) : "memory")

// Warp 0 is the producer: it spins until a consumer sets flag, which the consumers do only
// after their barrier (id, n) completes: a barrier that needed the producer too would deadlock.
// Warps 1 and 2 (the consumers) exchange values through shared memory across the barrier, then
// overwrite them after a second phase of it.
// race: the producer also writes the shared word a consumer reads after the barrier, which the
// consumers' barrier does not order. vary: lanes give different barrier numbers. n > 64: the
// producer exits at once (the consumers' barrier then waits for a warp that never comes).
extern "C" __global__ void consumers(const int* in, int* out, unsigned id, unsigned n, int race, int vary) {
	__shared__ int s[64];
	__shared__ int flag;
	int t = threadIdx.x;
	if (t == 0) flag = 0;
	__syncthreads();
	if (t < 32) {
		if (race) s[t] = -1;
		if (n > 64) return;
		int spins = 0;
		while (atomicAdd(&flag, 0) == 0) spins++;
		out[128 + t] = spins > 0;
		return;
	}
	int c = t - 32;
	s[c] = in[c] * 10;
	BAR_SYNC(id + (vary ? (t & 1) : 0), n); // CONSUMER_BAR
	out[c] = s[(c + 32) % 64]; // CONSUMER_READ
	out[64 + c] = s[0]; // read by both consumer warps
	BAR_SYNC(id, n);
	s[c] = c; // overwrites what the other consumer warp (and, s[0], both) read before the barrier
	if (c == 0) atomicExch(&flag, 1);
}

// Two groups of one warp each take turns through barriers 1 and 2 (the FA3 pingpong): group A
// writes, arrives at 1 (without waiting) and waits at 2; group B waits at 1, writes, arrives at 2.
// The turn order is logged through a shared counter. Before its first wait, B spins until A has
// gone past its first bar.arrive: an arrive that waited would deadlock.
extern "C" __global__ void pingpong(int* out, int rounds) {
	__shared__ int cnt, log[16], started;
	int t = threadIdx.x, lane = t % 32;
	if (t == 0) { cnt = 0; started = 0; }
	__syncthreads();
	for (int r = 0; r < rounds; r++) {
		if (t < 32) {
			if (r > 0) asm volatile("bar.sync 2, 64;" ::: "memory");
			if (lane == 0) log[cnt++] = 0;
			asm volatile("bar.arrive 1, 64;" ::: "memory");
			if (r == 0 && lane == 0) atomicExch(&started, 1);
		} else {
			if (r == 0) while (atomicAdd(&started, 0) == 0) {}
			asm volatile("barrier.sync.aligned 1, 64;" ::: "memory");
			if (lane == 0) log[cnt++] = 1;
			asm volatile("barrier.arrive.aligned 2, 64;" ::: "memory");
		}
	}
	__syncthreads();
	if (t < 16) out[t] = t < cnt ? log[t] : -1;
}
`

func TestNamedBarriers(t *testing.T) {
	m := compileCUDA(t, namedBarCUDA)
	in := make([]uint32, 64)
	for i := range in {
		in[i] = uint32(i + 1)
	}
	run := func(t *testing.T, id, n uint32, race, vary int32) ([]int32, Counts, error) {
		t.Helper()
		In, out := uint32Buffer("in", in), NewOutput("out", 4*160, Poisoned)
		c, err := launch1(t, m, "consumers", 1, 96, []*Buffer{In, out}, U32(id), U32(n), S32(race), S32(vary))
		return int32s(out), c, err
	}
	t.Run("consumers", func(t *testing.T) {
		got, c, err := run(t, 1, 64, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 64 {
			if want := int32(in[(i+32)%64] * 10); got[i] != want {
				t.Fatalf("out[%d] = %d, want %d (the other consumer warp's value)", i, got[i], want)
			}
		}
		for i := range 64 {
			if want := int32(in[0] * 10); got[64+i] != want {
				t.Fatalf("out[%d] = %d, want %d", 64+i, got[64+i], want)
			}
		}
		if got[128] != 1 {
			t.Errorf("the producer never spun: got %d, want 1", got[128])
		}
		// one __syncthreads() and two completions of barrier 1
		if got, want := c.Barriers, int64(3); got != want {
			t.Errorf("Counts.Barriers = %d, want %d", got, want)
		}
	})
	t.Run("never met", func(t *testing.T) {
		_, _, err := run(t, 1, 96, 0, 0) // the producer exits instead of arriving
		f := faultOf(t, err, "hang")
		if want := fmt.Sprintf("k.cu:%d", srcLine(t, namedBarCUDA, "// CONSUMER_BAR")); !strings.HasSuffix(f.Source, want) {
			t.Errorf("fault at %q, want %s", f.Source, want)
		}
		if !strings.HasPrefix(f.Instr, "bar.sync %r") {
			t.Errorf("instruction %q, want a bar.sync with register operands", f.Instr)
		}
		if !strings.Contains(f.Msg, "barrier 1 for 96 threads") || !strings.Contains(f.Msg, "64 have") {
			t.Errorf("message %q does not give the barrier, its count and its arrivals", f.Msg)
		}
	})
	t.Run("count not a multiple of 32", func(t *testing.T) {
		_, _, err := run(t, 1, 48, 0, 0)
		if f := faultOf(t, err, "barrier"); !strings.Contains(f.Msg, "thread count 48") {
			t.Errorf("message %q does not name the count", f.Msg)
		}
	})
	t.Run("lane-varying barrier number", func(t *testing.T) {
		_, _, err := run(t, 1, 64, 0, 1)
		if f := faultOf(t, err, "barrier"); !strings.Contains(f.Msg, "barrier number") {
			t.Errorf("message %q does not name the barrier number", f.Msg)
		}
	})
	t.Run("non-participant race", func(t *testing.T) {
		_, _, err := run(t, 1, 64, 1, 0)
		f := faultOf(t, err, "hazard")
		if f.Thread[0]/32 != 0 && f.OtherThread[0]/32 != 0 {
			t.Errorf("hazard between threads %v and %v, want one of them the producer's (warp 0)", f.Thread, f.OtherThread)
		}
		if !strings.Contains(f.Msg, "counted barrier") {
			t.Errorf("message %q does not say a counted barrier would order them", f.Msg)
		}
	})
	t.Run("pingpong", func(t *testing.T) {
		out := NewOutput("out", 4*16, Poisoned)
		c, err := launch1(t, m, "pingpong", 1, 64, []*Buffer{out}, S32(4))
		if err != nil {
			t.Fatal(err)
		}
		got := fmt.Sprint(int32s(out))
		if want := "[0 1 0 1 0 1 0 1 -1 -1 -1 -1 -1 -1 -1 -1]"; got != want {
			t.Errorf("turn order %s, want %s", got, want)
		}
		// 2 __syncthreads(), 4 completions of barrier 1, 3 of barrier 2 (B's last arrival has no
		// waiter and never completes)
		if got, want := c.Barriers, int64(2+4+3); got != want {
			t.Errorf("Counts.Barriers = %d, want %d", got, want)
		}
	})
}

// faultOf returns err's *Fault, failing unless it is one of kind.
func faultOf(t *testing.T, err error, kind string) *Fault {
	t.Helper()
	var f *Fault
	if !errors.As(err, &f) || f.Kind != kind {
		t.Fatalf("got %v, want a %q fault", err, kind)
	}
	return f
}

// The forms the decoder takes and refuses, on hand-written PTX (no NVRTC).
func TestNamedBarrierDecode(t *testing.T) {
	kernel := func(body string) string {
		return header + ".visible .entry k()\n{\n\t.reg .b32 %r<3>;\n\tmov.u32 %r1, 1;\n\tmov.u32 %r2, 32;\n\t" + body + "\n\tret;\n}\n"
	}
	for _, tc := range []struct{ body, err string }{
		{"bar.sync 1, 32;", ""},
		{"bar.sync %r1, %r2;", ""},
		{"barrier.sync.aligned 1, 32;", ""},
		{"bar.arrive 1, 64;", ""},
		{"barrier.arrive.aligned %r1, 64;", ""}, {"bar.sync %r1, 64;", "hang"},
		{"bar.sync %r1;", ""},
		{"bar.sync 1, 48;", "multiple of the warp size"},
		{"bar.sync 16, 32;", "out of range"},
		{"bar.arrive 1;", "needs a thread count"},
		{"bar.red.popc.u32 %r1, 0, 1;", "bar.red"},
	} {
		m, err := ParseModule(kernel(tc.body))
		if err == nil {
			_, err = Launch(context.Background(), m, "k", LaunchConfig{Block: [3]int{32}})
		}
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%s: %v", tc.body, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: got %v, want an error containing %q", tc.body, err, tc.err)
		}
	}
}

// Two warps arrive at one barrier with different counts: a barrier fault naming both lines.
func TestNamedBarrierCountMismatch(t *testing.T) {
	src := header + `.visible .entry k()
{
	.reg .pred %p<2>;
	.reg .b32 %r<2>;
	mov.u32 %r1, %tid.x;
	setp.lt.u32 %p1, %r1, 32;
	@%p1 bra A;
	bar.sync 1, 96;             // SECOND
	bra.uni END;
A:
	bar.sync 1, 64;             // FIRST
END:
	ret;
}
`
	m := mustParse(t, src)
	_, err := Launch(context.Background(), m, "k", LaunchConfig{Block: [3]int{64}})
	f := faultOf(t, err, "barrier")
	first, second := lineOf(t, src, "// FIRST"), lineOf(t, src, "// SECOND")
	if f.Line != second || f.OtherLine != first || !strings.Contains(f.Msg, "count of 96") {
		t.Errorf("fault at line %d (other %d): %v; want at %d naming %d and the count", f.Line, f.OtherLine, err, second, first)
	}
}
