package vgpu

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// The sanitizer on learner-style CUDA compiled by NVRTC: correct kernels that synchronise within a
// warp (or write different bytes of one word) run with no hazard; buggy ones report theirs on the
// right lines with both threads; reads of memory no thread wrote are notes.

// srcLine is the 1-based line of src holding mark, as .loc numbers it.
func srcLine(t *testing.T, src, mark string) int {
	t.Helper()
	return lineOf(t, src, mark)
}

// launch1 runs entry over grid × block threads with the buffers as pointer arguments, then extra.
func launch1(t *testing.T, m *Module, entry string, grid, block int, bufs []*Buffer, extra ...Arg) (Counts, error) {
	t.Helper()
	var params []Arg
	for _, b := range bufs {
		params = append(params, Ptr(b))
	}
	return Launch(context.Background(), m, entry, LaunchConfig{Grid: [3]int{grid}, Block: [3]int{block},
		Params: append(params, extra...), Buffers: bufs})
}

func int32s(b *Buffer) []int32 {
	out := make([]int32, len(b.Data)/4)
	for i := range out {
		out[i] = int32(readN(b.Data[4*i:], 4))
	}
	return out
}

const correctCorpus = `
extern "C" __global__ void halves(const unsigned short *in, unsigned *out) {
	__shared__ unsigned short h[64];
	int t = threadIdx.x;
	h[t] = in[t]; // lanes 2k and 2k+1 write the two halves of word k
	__syncthreads();
	if (t < 32) out[t] = ((unsigned *)h)[t];
}

// WMMA-style staging: 256 threads store a 16x16 f16 tile of A and of B to shared memory, one
// 16-bit element each, then warp 0 multiplies them on the tensor cores.
extern "C" __global__ void wmma_staged(const unsigned short *A, const unsigned short *B, float *C, int K) {
	__shared__ __align__(32) unsigned short As[256];
	__shared__ __align__(32) unsigned short Bs[256];
	int t = threadIdx.x;
	float d0 = 0, d1 = 0, d2 = 0, d3 = 0, d4 = 0, d5 = 0, d6 = 0, d7 = 0;
	for (int k0 = 0; k0 < K; k0 += 16) {
		As[t] = A[(t / 16) * K + k0 + t % 16];
		Bs[t] = B[(k0 + t / 16) * 16 + t % 16];
		__syncthreads();
		if (t < 32) {
			unsigned a0, a1, a2, a3, a4, a5, a6, a7, b0, b1, b2, b3, b4, b5, b6, b7;
			asm volatile("wmma.load.a.sync.aligned.row.m16n16k16.f16 {%0,%1,%2,%3,%4,%5,%6,%7}, [%8], 16;"
				: "=r"(a0), "=r"(a1), "=r"(a2), "=r"(a3), "=r"(a4), "=r"(a5), "=r"(a6), "=r"(a7) : "l"(As));
			asm volatile("wmma.load.b.sync.aligned.row.m16n16k16.f16 {%0,%1,%2,%3,%4,%5,%6,%7}, [%8], 16;"
				: "=r"(b0), "=r"(b1), "=r"(b2), "=r"(b3), "=r"(b4), "=r"(b5), "=r"(b6), "=r"(b7) : "l"(Bs));
			asm volatile("wmma.mma.sync.aligned.row.row.m16n16k16.f32.f32 "
				"{%0,%1,%2,%3,%4,%5,%6,%7}, {%8,%9,%10,%11,%12,%13,%14,%15}, "
				"{%16,%17,%18,%19,%20,%21,%22,%23}, {%0,%1,%2,%3,%4,%5,%6,%7};"
				: "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3), "+f"(d4), "+f"(d5), "+f"(d6), "+f"(d7)
				: "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(a4), "r"(a5), "r"(a6), "r"(a7),
				  "r"(b0), "r"(b1), "r"(b2), "r"(b3), "r"(b4), "r"(b5), "r"(b6), "r"(b7));
		}
		__syncthreads();
	}
	if (t < 32)
		asm volatile("wmma.store.d.sync.aligned.row.m16n16k16.global.f32 [%0], {%1,%2,%3,%4,%5,%6,%7,%8}, 16;"
			:: "l"(C), "f"(d0), "f"(d1), "f"(d2), "f"(d3), "f"(d4), "f"(d5), "f"(d6), "f"(d7) : "memory");
}

// The last warp of a tree reduction synchronises with __syncwarp instead of __syncthreads.
extern "C" __global__ void lastwarp(const float *in, float *out) {
	__shared__ float s[256];
	int t = threadIdx.x;
	s[t] = in[blockIdx.x * 256 + t];
	__syncthreads();
	for (int k = 128; k >= 64; k >>= 1) {
		if (t < k) s[t] += s[t + k];
		__syncthreads();
	}
	if (t < 32) {
		float v = s[t] + s[t + 32];
		__syncwarp();
		s[t] = v;
		for (int k = 16; k > 0; k >>= 1) {
			__syncwarp();
			v += s[t + k];
			__syncwarp();
			s[t] = v;
		}
		if (t == 0) out[blockIdx.x] = v;
	}
}

extern "C" __global__ void shflsum(const float *in, float *out) {
	__shared__ float part[8];
	int t = threadIdx.x;
	float v = in[blockIdx.x * 256 + t];
	for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffff, v, o);
	if ((t & 31) == 0) part[t >> 5] = v;
	__syncthreads();
	if (t < 32) {
		v = t < 8 ? part[t] : 0.0f;
		for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffff, v, o);
		if (t == 0) out[blockIdx.x] = v;
	}
}

// A shuffle and a vote order the lanes of their member masks, as __syncwarp does.
extern "C" __global__ void collectives(int *out) {
	__shared__ int s[32];
	int l = threadIdx.x;
	s[l] = 3 * l;
	int x = __shfl_sync(0xffffffff, l, 0); // orders the stores before the loads
	int y = s[(l + 1) & 31];
	unsigned b = __ballot_sync(0xffffffff, l & 1); // orders the loads before the stores
	s[l] = y;
	__syncwarp();
	out[l] = s[31 - l] + x + __popc(b);
}

// match.sync and redux.sync compute their results and order their lanes.
extern "C" __global__ void matchredux(int *out) {
	__shared__ int s[32];
	int l = threadIdx.x;
	s[l] = l;
	int sum = __reduce_add_sync(0xffffffff, l); // orders the stores before the loads
	int mn = __reduce_min_sync(0xffffffff, 5 - l);
	int y = s[31 - l];
	unsigned same = __match_any_sync(0xffffffff, l & 3); // orders the loads before the stores
	int pred;
	unsigned all = __match_all_sync(0xffffffff, 7, &pred);
	s[l] = y;
	out[l] = y + sum + mn + __popc(same) + (all == 0xffffffff) + pred;
}

// Half a warp synchronises; lane 2 learns of lane 0's store through lane 1 (0 with 1, then 1 with 2).
extern "C" __global__ void partial(int *out, int chain) {
	__shared__ int s[32];
	int l = threadIdx.x;
	s[l] = l;
	if (l < 16) {
		__syncwarp(0xffff);
		out[l] = s[15 - l];
		__syncwarp(0xffff);
	}
	if (l == 0) s[0] = 100;
	if (l < 2) __syncwarp(3);
	if (chain && (l == 1 || l == 2)) __syncwarp(6);
	if (l == 2) out[16] = s[0]; // CHAIN READ
}
`

func TestRacecheckCorrectKernels(t *testing.T) {
	m := compileCUDA(t, correctCorpus)
	t.Run("16-bit halves of one word", func(t *testing.T) {
		xs := make([]uint16, 64)
		for i := range xs {
			xs[i] = uint16(1000 + i)
		}
		in, out := Uint16Buffer("in", xs), NewOutput("out", 4*32, Poisoned)
		c, err := launch1(t, m, "halves", 1, 64, []*Buffer{in, out})
		if err != nil {
			t.Fatal(err)
		}
		for i, got := range int32s(out) {
			if want := int32(xs[2*i]) | int32(xs[2*i+1])<<16; got != want {
				t.Errorf("out[%d] = %#x, want %#x", i, got, want)
			}
		}
		noNotes(t, c)
	})
	t.Run("wmma staged through shared memory", func(t *testing.T) {
		const K = 32
		a, b := make([]uint16, 16*K), make([]uint16, K*16)
		af, bf := make([]float64, len(a)), make([]float64, len(b))
		for i := range a {
			af[i], bf[i] = float64(i%5-2), float64(i%7-3)
			a[i], b[i] = roundF16(af[i], rmNearest, 0), roundF16(bf[i], rmNearest, 0)
		}
		A, B, C := Uint16Buffer("A", a), Uint16Buffer("B", b), NewOutput("C", 4*256, Poisoned)
		c, err := launch1(t, m, "wmma_staged", 1, 256, []*Buffer{A, B, C}, S32(K))
		if err != nil {
			t.Fatal(err)
		}
		got := C.Float32s()
		for i := range 16 {
			for j := range 16 {
				var want float64
				for k := range K {
					want += af[i*K+k] * bf[k*16+j]
				}
				if float64(got[i*16+j]) != want {
					t.Fatalf("C[%d][%d] = %v, want %v", i, j, got[i*16+j], want)
				}
			}
		}
		noNotes(t, c)
	})
	for _, entry := range []string{"lastwarp", "shflsum"} {
		t.Run(entry, func(t *testing.T) {
			xs := make([]float32, 3*256)
			for i := range xs {
				xs[i] = float32(i%17) - 8
			}
			in, out := Float32Buffer("in", xs), NewOutput("out", 4*3, Poisoned)
			c, err := launch1(t, m, entry, 3, 256, []*Buffer{in, out})
			if err != nil {
				t.Fatal(err)
			}
			for blk, got := range out.Float32s() {
				var want float32
				for _, x := range xs[blk*256 : (blk+1)*256] {
					want += x
				}
				if got != want {
					t.Errorf("block %d: sum %v, want %v", blk, got, want)
				}
			}
			noNotes(t, c)
		})
	}
	t.Run("shuffle and vote order lanes", func(t *testing.T) {
		out := NewOutput("out", 4*32, Poisoned)
		if _, err := launch1(t, m, "collectives", 1, 32, []*Buffer{out}); err != nil {
			t.Fatal(err)
		}
		for l, got := range int32s(out) {
			if want := int32(3*((32-l)&31)) + 16; got != want {
				t.Errorf("out[%d] = %d, want %d", l, got, want)
			}
		}
	})
	t.Run("match and redux", func(t *testing.T) {
		out := NewOutput("out", 4*32, Poisoned)
		c, err := launch1(t, m, "matchredux", 1, 32, []*Buffer{out})
		if err != nil {
			t.Fatal(err)
		}
		for l, got := range int32s(out) {
			if want := int32(31-l) + 496 + (5 - 31) + 8 + 1 + 1; got != want {
				t.Errorf("out[%d] = %d, want %d", l, got, want)
			}
		}
		noNotes(t, c)
	})
	t.Run("partial masks, transitively", func(t *testing.T) {
		out := NewOutput("out", 4*17, Poisoned)
		if _, err := launch1(t, m, "partial", 1, 32, []*Buffer{out}, S32(1)); err != nil {
			t.Fatal(err)
		}
		if got := int32s(out)[16]; got != 100 {
			t.Errorf("out[16] = %d, want 100", got)
		}
		// without the second synchronisation nothing orders lane 0's store before lane 2's load
		_, err := launch1(t, m, "partial", 1, 32, []*Buffer{out}, S32(0))
		f := wantHazard(t, err)
		if f.Thread != [3]int{2, 0, 0} || f.OtherThread != [3]int{0, 0, 0} || !strings.HasSuffix(f.Source, fmt.Sprintf("k.cu:%d", srcLine(t, correctCorpus, "CHAIN READ"))) {
			t.Errorf("hazard %v", f)
		}
	})
}

func noNotes(t *testing.T, c Counts) {
	t.Helper()
	for _, n := range c.Notes {
		t.Errorf("note on a correct kernel: %v", n)
	}
}

func wantHazard(t *testing.T, err error) *Fault {
	t.Helper()
	var f *Fault
	if !errors.As(err, &f) || f.Kind != "hazard" {
		t.Fatalf("got %v, want a hazard", err)
	}
	return f
}

const buggyCorpus = `
// The pre-Volta warp-synchronous reduction: no __syncwarp between a lane's store and another
// lane's load of it.
extern "C" __global__ void nosyncwarp(const float *in, float *out) {
	__shared__ float s[64];
	int t = threadIdx.x;
	s[t] = in[t] + in[t + 64];
	__syncthreads();
	if (t < 32) {
		volatile float *vs = s;
		vs[t] += vs[t + 32]; // FIRST
		vs[t] += vs[t + 16]; // SECOND
		if (t == 0) out[0] = vs[0];
	}
}

// __syncwarp orders lanes of one warp only.
extern "C" __global__ void twowarps(int *out) {
	__shared__ int s[64];
	int t = threadIdx.x;
	s[t] = t; // STORE
	__syncwarp();
	out[t] = s[(t + 32) & 63]; // LOAD
}

// Every thread reads a word, then one thread overwrites it with no barrier.
extern "C" __global__ void readers(int *out) {
	__shared__ int s[1];
	int t = threadIdx.x;
	if (t == 0) s[0] = 7;
	__syncthreads();
	out[t] = s[0]; // READ
	if (t == 40) s[0] = 1; // OVERWRITE
}

// A 16-bit store read back by another lane as part of a 32-bit word, without a barrier.
extern "C" __global__ void halfrace(unsigned *out) {
	__shared__ unsigned short h[64];
	int t = threadIdx.x;
	h[t] = t; // HALF
	out[t] = ((unsigned *)h)[t / 2]; // WORD
}

extern "C" __global__ void vecreaders(float *out) {
	__shared__ float4 s[8];
	int t = threadIdx.x;
	if (t < 8) s[t] = make_float4(t, 1, 2, 3);
	__syncthreads();
	float4 v = s[t / 16]; // VECREAD
	float4 u = s[2 + t % 4];
	if (t == 0) s[0].y = 5.0f; // VECWRITE
	out[t] = v.x + v.y + u.z + u.w;
}
`

func TestRacecheckBuggyKernels(t *testing.T) {
	m := compileCUDA(t, buggyCorpus)
	line := func(mark string) string { return fmt.Sprintf("k.cu:%d", srcLine(t, buggyCorpus, mark)) }
	t.Run("no __syncwarp", func(t *testing.T) {
		in, out := NewBuffer("in", 4*128), NewOutput("out", 4, Poisoned)
		_, err := launch1(t, m, "nosyncwarp", 1, 64, []*Buffer{in, out})
		f := wantHazard(t, err)
		// lane t reads s[t + 16], which lane t + 16 wrote in the statement before
		if !strings.HasSuffix(f.Source, line("SECOND")) || !strings.HasSuffix(f.OtherSource, line("FIRST")) ||
			f.OtherThread[0] != f.Thread[0]+16 || f.Thread[0] >= 16 {
			t.Errorf("hazard %v", f)
		}
	})
	t.Run("__syncwarp across warps", func(t *testing.T) {
		out := NewOutput("out", 4*64, Poisoned)
		_, err := launch1(t, m, "twowarps", 1, 64, []*Buffer{out})
		f := wantHazard(t, err)
		// warp 0 loads before warp 1 stores: a write after read at the store
		if !strings.HasSuffix(f.Source, line("STORE")) || !strings.HasSuffix(f.OtherSource, line("LOAD")) || f.Thread[0]/32 == f.OtherThread[0]/32 {
			t.Errorf("hazard %v", f)
		}
	})
	t.Run("write after several reads names a reader", func(t *testing.T) {
		out := NewOutput("out", 4*64, Poisoned)
		_, err := launch1(t, m, "readers", 1, 64, []*Buffer{out})
		f := wantHazard(t, err)
		if f.Thread != [3]int{40, 0, 0} || f.OtherThread[0] >= 32 || !strings.HasSuffix(f.Source, line("OVERWRITE")) ||
			!strings.HasSuffix(f.OtherSource, line("READ")) || !strings.Contains(f.Msg, "write after read") {
			t.Errorf("hazard %v", f)
		}
	})
	t.Run("write after a warp's 16-byte reads names another lane", func(t *testing.T) {
		// lanes 0–15 read s[0] in one ld.shared.v4 (each lane after the first by its lane bit
		// alone), then lane 0 writes a word of it with no __syncwarp()
		out := NewOutput("out", 4*32, Poisoned)
		_, err := launch1(t, m, "vecreaders", 1, 32, []*Buffer{out})
		f := wantHazard(t, err)
		if f.Thread != [3]int{} || f.OtherThread[0] < 1 || f.OtherThread[0] >= 16 || !strings.HasSuffix(f.Source, line("VECWRITE")) ||
			!strings.HasSuffix(f.OtherSource, line("VECREAD")) || !strings.Contains(f.Msg, "write after read") {
			t.Errorf("hazard %v", f)
		}
	})
	t.Run("16-bit store, 32-bit load", func(t *testing.T) {
		out := NewOutput("out", 4*64, Poisoned)
		_, err := launch1(t, m, "halfrace", 1, 64, []*Buffer{out})
		f := wantHazard(t, err)
		// thread t reads the word of h[t&^1] and h[t|1]: the other half is another lane's
		if !strings.HasSuffix(f.Source, line("WORD")) || !strings.HasSuffix(f.OtherSource, line("HALF")) ||
			f.OtherThread[0]/2 != f.Thread[0]/2 || f.OtherThread == f.Thread {
			t.Errorf("hazard %v", f)
		}
	})
}

const initCorpus = `
extern "C" __global__ void unwritten(float *out) {
	__shared__ float s[64];
	int t = threadIdx.x;
	if (t < 32) s[t] = 1.0f;
	__syncthreads();
	out[blockIdx.x * 64 + t] = s[t]; // SHARED READ
}

extern "C" __global__ void accumulate(const float *in, float *out, int n) {
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) out[i] += in[i]; // ACCUMULATE
}

extern "C" __global__ void assign(const float *in, float *out, int n) {
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) out[i] = in[i];
}

extern "C" __global__ void count(const int *in, unsigned *bins, int n) {
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) atomicAdd(&bins[in[i] & 7], 1u); // COUNT
}
`

func TestInitcheck(t *testing.T) {
	m := compileCUDA(t, initCorpus)
	line := func(mark string) string { return fmt.Sprintf("k.cu:%d", srcLine(t, initCorpus, mark)) }
	oneNote := func(t *testing.T, c Counts, err error, mark, space string) *Fault {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		if len(c.Notes) != 1 {
			t.Fatalf("got %d notes %v, want one", len(c.Notes), c.Notes)
		}
		f := c.Notes[0]
		if f.Kind != "uninitialised read" || f.Space != space || !strings.HasSuffix(f.Source, line(mark)) {
			t.Errorf("note %v, want an uninitialised %s read at %s", f, space, line(mark))
		}
		return f
	}
	t.Run("shared memory starts poisoned in every block", func(t *testing.T) {
		out := NewOutput("out", 4*64*4, Poisoned)
		c, err := launch1(t, m, "unwritten", 4, 64, []*Buffer{out})
		f := oneNote(t, c, err, "SHARED READ", "shared")
		if f.Block != [3]int{} || f.Thread != [3]int{32, 0, 0} || !strings.Contains(f.Msg, fmt.Sprintf("the first of %d such reads", 4*32)) {
			t.Errorf("note %v, want block (0,0,0) thread (32,0,0) and 128 reads", f)
		}
		for i, v := range int32s(out) {
			if want := int32(-1); i%64 >= 32 && v != want {
				t.Fatalf("out[%d] = %#x, want the poison %#x", i, v, want)
			}
		}
	})
	const n = 100
	xs := make([]float32, n)
	for i := range xs {
		xs[i] = float32(i)
	}
	args := func(out *Buffer) ([]*Buffer, Arg) { return []*Buffer{Float32Buffer("in", xs), out}, S32(n) }
	t.Run("accumulating into a poisoned output", func(t *testing.T) {
		out := NewOutput("out", 4*n, Poisoned)
		bufs, k := args(out)
		c, err := launch1(t, m, "accumulate", 2, 64, bufs, k)
		f := oneNote(t, c, err, "ACCUMULATE", "global")
		if !strings.Contains(f.Msg, "buffer out at byte 0") || f.Thread != [3]int{} {
			t.Errorf("note %v, want buffer out's byte 0 by thread 0", f)
		}
		if v := out.Float32s()[5]; v == v {
			t.Errorf("out[5] = %v, want NaN", v)
		}
	})
	t.Run("an output written by an earlier launch", func(t *testing.T) {
		out := NewOutput("out", 4*n, Poisoned)
		bufs, k := args(out)
		if _, err := launch1(t, m, "assign", 2, 64, bufs, k); err != nil {
			t.Fatal(err)
		}
		c, err := launch1(t, m, "accumulate", 2, 64, bufs, k)
		if err != nil {
			t.Fatal(err)
		}
		noNotes(t, c)
		if got := out.Float32s()[7]; got != 14 {
			t.Errorf("out[7] = %v, want 14", got)
		}
	})
	t.Run("atomics into zeroed and poisoned bins", func(t *testing.T) {
		in := NewBuffer("in", 4*n)
		for i := range n {
			writeN(in.Data[4*i:], 4, uint64(i))
		}
		bins := NewOutput("bins", 4*8, Zeroed)
		c, err := launch1(t, m, "count", 2, 64, []*Buffer{in, bins}, S32(n))
		if err != nil {
			t.Fatal(err)
		}
		noNotes(t, c)
		if got := int32s(bins); got[0] != 13 || got[4] != 12 {
			t.Errorf("bins %v, want 13 in bin 0 and 12 in bin 4", got)
		}
		c, err = launch1(t, m, "count", 2, 64, []*Buffer{in, NewOutput("bins", 4*8, Poisoned)}, S32(n))
		oneNote(t, c, err, "COUNT", "global")
	})
}
