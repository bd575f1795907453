package vgpu

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
)

// lastBlockSrc is the CUDA Samples' threadFenceReduction pattern: each block reduces its 64 inputs
// in shared memory, thread 0 writes the block's partial sum, FENCE, and takes a ticket with
// atomicInc; the block that draws the last ticket sums the partials into out[0].
const lastBlockSrc = `extern "C" __global__ void k(const float* in, float* partial, unsigned* count, float* out) {
	__shared__ float s[64];
	__shared__ bool last;
	int t = threadIdx.x;
	s[t] = in[blockIdx.x * 64 + t];
	__syncthreads();
	for (int h = 32; h > 0; h >>= 1) {
		if (t < h) s[t] += s[t + h];
		__syncthreads();
	}
	if (t == 0) {
		partial[blockIdx.x] = s[0];
		FENCE;
		unsigned ticket = atomicInc(count, gridDim.x);
		last = ticket == gridDim.x - 1;
	}
	__syncthreads();
	if (last && t == 0) {
		float sum = 0;
		for (int b = 0; b < gridDim.x; b++) sum += partial[b];
		out[0] = sum;
	}
}
`

// runLastBlock runs lastBlockSrc with FENCE defined as fence over 8 blocks on workers and returns
// the launch's error and out[0] (want 0+1+…+511).
func runLastBlock(t *testing.T, fence string, workers int) (error, float32) {
	t.Helper()
	m := compileCUDA(t, "#define FENCE "+fence+"\n"+lastBlockSrc)
	xs := make([]float32, 512)
	for i := range xs {
		xs[i] = float32(i)
	}
	in, partial, count, out := Float32Buffer("in", xs), NewBuffer("partial", 4*8), NewBuffer("count", 4), NewBuffer("out", 4)
	_, err := Launch(context.Background(), m, "k", LaunchConfig{Grid: [3]int{8}, Block: [3]int{64}, Workers: workers,
		Params: []Arg{Ptr(in), Ptr(partial), Ptr(count), Ptr(out)}, Buffers: []*Buffer{in, partial, count, out}})
	return err, out.Float32s()[0]
}

// A last-block reduction with __threadfence() between the partial's store and the atomic is
// ordered (PTX memory model: release pattern, then the last block's atomic observes it), on one
// worker or several.
func TestGlobalRaceLastBlockWithFenceIsClean(t *testing.T) {
	for _, workers := range []int{1, 4} {
		err, got := runLastBlock(t, "__threadfence()", workers)
		if err != nil {
			t.Fatalf("workers %d: got %v, want no fault", workers, err)
		}
		if want := float32(511 * 512 / 2); got != want {
			t.Errorf("workers %d: sum %v, want %v", workers, got, want)
		}
	}
}

// Without the fence the last block's reads of the other blocks' partials are not ordered after
// their writes: a global hazard naming the reading line (21) and the writing line (13).
func TestGlobalRaceLastBlockWithoutFenceIsFlagged(t *testing.T) {
	for _, fence := range []string{"(void)0", "__threadfence_block()"} {
		err, _ := runLastBlock(t, fence, 1)
		checkGlobalRace(t, err, 21, 13)
	}
}

// checkGlobalRace asserts err is a global-memory hazard between blocks at source line read, the
// other access at line write.
func checkGlobalRace(t *testing.T, err error, read, write int) {
	t.Helper()
	var f *Fault
	if !errors.As(err, &f) || f.Kind != "hazard" || f.Space != "global" {
		t.Fatalf("got %v, want a global-memory hazard", err)
	}
	if !strings.HasSuffix(f.Source, ":"+strconv.Itoa(read)) || !strings.HasSuffix(f.OtherSource, ":"+strconv.Itoa(write)) {
		t.Errorf("read at %q, write at %q; want lines %d and %d: %v", f.Source, f.OtherSource, read, write, err)
	}
	if !strings.Contains(err.Error(), "between blocks") || !strings.Contains(err.Error(), "compute-sanitizer") {
		t.Errorf("message %q does not say it is a race between blocks beyond compute-sanitizer", err)
	}
}

// A block reading what another block wrote, with no atomic or fence at all, is flagged; with a
// fence and a volatile flag (the release pattern) and a fence after the consumer's wait it is not.
func TestGlobalRaceProducerConsumer(t *testing.T) {
	const src = `extern "C" __global__ void k(float* data, volatile int* flag, float* out) {
	int t = threadIdx.x;
	if (blockIdx.x == 0) {
		data[t] = t * 2.0f;
		PUBLISH;
	} else {
		WAIT;
		out[t] = data[t] + 1;
	}
}
`
	for _, tc := range []struct {
		name, publish, wait string
		race                bool
	}{
		{"no ordering", "(void)0", "(void)0", true},
		{"flag without fence", "if (t == 0) *flag = 1", "while (*flag == 0) {}", true},
		{"fence and flag", "__threadfence(); __syncthreads(); if (t == 0) *flag = 1", "if (t == 0) while (*flag == 0) {} __syncthreads(); __threadfence()", false},
		{"atomic flag after fence", "__threadfence(); __syncthreads(); if (t == 0) atomicExch((int*)flag, 1)", "if (t == 0) while (atomicAdd((int*)flag, 0) == 0) {} __syncthreads()", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := compileCUDA(t, "#define PUBLISH "+tc.publish+"\n#define WAIT "+tc.wait+"\n"+src)
			data, flag, out := NewBuffer("data", 4*32), NewBuffer("flag", 4), NewBuffer("out", 4*32)
			_, err := Launch(context.Background(), m, "k", LaunchConfig{Grid: [3]int{2}, Block: [3]int{32}, Workers: 1,
				Params: []Arg{Ptr(data), Ptr(flag), Ptr(out)}, Buffers: []*Buffer{data, flag, out}})
			if tc.race {
				checkGlobalRace(t, err, 10, 6)
				return
			}
			if err != nil {
				t.Fatalf("got %v, want no fault", err)
			}
			if got := out.Float32s()[5]; got != 11 {
				t.Errorf("out[5] = %v, want 11", got)
			}
		})
	}
}

// Kernels whose blocks meet only through atomics (a histogram), or write what only they read, are
// clean.
func TestGlobalRaceAtomicsOnlyIsClean(t *testing.T) {
	m := compileCUDA(t, `extern "C" __global__ void k(const int* in, int* hist, int* total, int* own) {
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	atomicAdd(&hist[in[i] % 16], 1);
	atomicAdd(total, in[i]);
	own[i] = in[i] + atomicAdd(total, 0) * 0;
}
`)
	in := NewBuffer("in", 4*256)
	for i := range 256 {
		writeN(in.Data[4*i:], 4, uint64(i*7))
	}
	hist, total, own := NewBuffer("hist", 4*16), NewBuffer("total", 4), NewBuffer("own", 4*256)
	if _, err := Launch(context.Background(), m, "k", LaunchConfig{Grid: [3]int{8}, Block: [3]int{32}, Workers: 1,
		Params: []Arg{Ptr(in), Ptr(hist), Ptr(total), Ptr(own)}, Buffers: []*Buffer{in, hist, total, own}}); err != nil {
		t.Fatalf("got %v, want no fault", err)
	}
}

// Past maxRaceWords of written buffers the check stops, and the launch's notes say so.
func TestGlobalRaceLimitIsNoted(t *testing.T) {
	m := compileCUDA(t, `extern "C" __global__ void k(float* small, float* big) {
	small[threadIdx.x] = 1;
	big[threadIdx.x] = 2;
}
`)
	for _, tc := range []struct {
		words int
		noted bool
	}{{1024, false}, {maxRaceWords, true}} {
		small, big := NewBuffer("small", 4*32), NewBuffer("big", 4*tc.words)
		c, err := Launch(context.Background(), m, "k", LaunchConfig{Grid: [3]int{1}, Block: [3]int{32},
			Params: []Arg{Ptr(small), Ptr(big)}, Buffers: []*Buffer{small, big}})
		if err != nil {
			t.Fatal(err)
		}
		noted := false
		for _, n := range c.Notes {
			noted = noted || n.Kind == "global race check stopped" && strings.Contains(n.Msg, `"big"`)
		}
		if noted && !strings.HasPrefix(fmt.Sprint(c.Notes[len(c.Notes)-1]), "global race check stopped: the global-memory race check tracks") {
			t.Errorf("note %q does not say what stopped", c.Notes[len(c.Notes)-1])
		}
		if noted != tc.noted {
			t.Errorf("%d words: noted %v, want %v (notes %v)", tc.words, noted, tc.noted, c.Notes)
		}
	}
}

// Ordering is transitive through blocks: block 0 releases to m1, block 1 acquires m1 and releases
// to m2, block 2 acquires m2 and reads block 0's data. Without block 0's fence the read is flagged.
func TestGlobalRaceTransitiveChain(t *testing.T) {
	const src = `extern "C" __global__ void k(float* data, unsigned* m1, unsigned* m2, float* out) {
	int t = threadIdx.x;
	if (blockIdx.x == 0) {
		data[t] = t;
		__syncthreads();
		if (t == 0) { FENCE; atomicAdd(m1, 1); }
	} else if (blockIdx.x == 1) {
		if (t == 0) { while (atomicAdd(m1, 0) == 0) {} __threadfence(); atomicAdd(m2, 1); }
	} else {
		if (t == 0) while (atomicAdd(m2, 0) == 0) {}
		__syncthreads();
		out[t] = data[t];
	}
}
`
	for _, fence := range []string{"__threadfence()", "(void)0"} {
		m := compileCUDA(t, "#define FENCE "+fence+"\n"+src)
		data, m1, m2, out := NewBuffer("data", 4*32), NewBuffer("m1", 4), NewBuffer("m2", 4), NewBuffer("out", 4*32)
		_, err := Launch(context.Background(), m, "k", LaunchConfig{Grid: [3]int{3}, Block: [3]int{32}, Workers: 1,
			Params: []Arg{Ptr(data), Ptr(m1), Ptr(m2), Ptr(out)}, Buffers: []*Buffer{data, m1, m2, out}})
		if fence == "(void)0" {
			checkGlobalRace(t, err, 13, 5)
			continue
		}
		if err != nil {
			t.Fatalf("got %v, want no fault", err)
		}
	}
}

// st.release publishes the block's earlier writes without a separate fence and ld.acquire
// observes it; st.relaxed does not publish them.
func TestGlobalRaceReleaseAcquire(t *testing.T) {
	const src = `extern "C" __global__ void k(float* data, unsigned* flag, float* out) {
	int t = threadIdx.x;
	if (blockIdx.x == 0) {
		data[t] = t * 2.0f;
		__syncthreads();
		if (t == 0) asm volatile("st." SEM ".gpu.global.u32 [%0], %1;" :: "l"(flag), "r"(1u) : "memory");
	} else {
		if (t == 0) {
			unsigned v;
			do { asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(flag) : "memory"); } while (v == 0);
		}
		__syncthreads();
		out[t] = data[t] + 1;
	}
}
`
	for _, sem := range []string{"release", "relaxed"} {
		m := compileCUDA(t, "#define SEM \""+sem+"\"\n"+src)
		data, flag, out := NewBuffer("data", 4*32), NewBuffer("flag", 4), NewBuffer("out", 4*32)
		_, err := Launch(context.Background(), m, "k", LaunchConfig{Grid: [3]int{2}, Block: [3]int{32}, Workers: 1,
			Params: []Arg{Ptr(data), Ptr(flag), Ptr(out)}, Buffers: []*Buffer{data, flag, out}})
		if sem == "relaxed" {
			checkGlobalRace(t, err, 14, 5)
			continue
		}
		if err != nil {
			t.Fatalf("got %v, want no fault", err)
		}
	}
}

// Blocks updating bytes in place, their ranges sharing words at the block boundaries, do not race:
// each reads only its own bytes.
func TestGlobalRaceSubWordInPlaceIsClean(t *testing.T) {
	m := compileCUDA(t, `extern "C" __global__ void k(unsigned char* x) {
	int i = blockIdx.x * 3 + threadIdx.x;
	x[i] = x[i] + 1;
}
`)
	x := NewBuffer("x", 12)
	if _, err := Launch(context.Background(), m, "k", LaunchConfig{Grid: [3]int{4}, Block: [3]int{3}, Workers: 1,
		Params: []Arg{Ptr(x)}, Buffers: []*Buffer{x}}); err != nil {
		t.Fatalf("got %v, want no fault", err)
	}
	if got := x.Data[11]; got != 1 {
		t.Errorf("x[11] = %d, want 1", got)
	}
}

// The location clocks' entries are counted across locations: a block that knows 3 others and
// releases at one location after another adds 4 entries a location (re-releasing adds none),
// and past the launch's budget the check stops with a note saying why.
func TestGlobalRaceClockEntriesBudget(t *testing.T) {
	g := newGlobalRace(0)
	if got, want := g.budget, maxSyncEntries; got != want {
		t.Fatalf("budget %d, want %d", got, want)
	}
	g.budget = 10
	k := &blockClock{released: 1, knows: map[int32]uint32{0: 1, 1: 2, 2: 1}}
	const self = 5
	mcs := []*syncClock{{at: map[int32]uint32{}}, {at: map[int32]uint32{}}, {at: map[int32]uint32{}}}
	for i, want := range []int{4, 8} {
		if !g.publish(mcs[i], k, self) {
			t.Fatalf("location %d: the check stopped at %d entries (budget 10)", i, g.entries)
		}
		if !g.publish(mcs[i], k, self) {
			t.Fatalf("location %d again: the check stopped", i)
		}
		if got := g.entries; got != want {
			t.Errorf("after location %d: %d entries, want %d", i, got, want)
		}
		if got := mcs[i].at[self]; got != 1 {
			t.Errorf("location %d: own entry %d, want 1", i, got)
		}
	}
	if g.publish(mcs[2], k, self) {
		t.Fatalf("a third location (12 entries, budget 10) did not stop the check")
	}
	notes := g.note()
	if len(notes) != 1 || notes[0].Kind != KindRaceCheckStopped || !strings.Contains(notes[0].Msg, "more than 10 block entries") {
		t.Errorf("notes %v, want one %q note naming the budget", notes, KindRaceCheckStopped)
	}
}
