package vgpu

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/gpuplayground/playground/gpu/nvidia"
)

// compileSM90 compiles src for compute_90 with CUDA's headers (libcu++'s cuda::barrier), skipped
// where no NVRTC 12 is there.
func compileSM90(t *testing.T, src string) *Module {
	t.Helper()
	n, err := nvidia.LoadNVRTC()
	if err != nil {
		t.Skipf("no NVRTC: %v", err)
	}
	if archs, err := n.SupportedArchs(); err != nil || archs[len(archs)-1] < 90 {
		t.Skipf("NVRTC without sm_90: %v %v", archs, err)
	}
	ptx, err := nvidia.CompileWithHeaders(context.Background(), n, nil, nvidia.FindHeaders(n), src, "k.cu", 90)
	if err != nil {
		t.Fatal(err)
	}
	m, err := ParseModule(ptx)
	if err != nil {
		t.Fatalf("%v\n%s", err, ptx)
	}
	return m
}

// mbarrierAsm are the exact inline-asm forms of the PTX ISA 8.x mbarrier instructions.
const mbarrierAsm = `
__device__ __forceinline__ unsigned smem(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }
__device__ __forceinline__ void mb_init(unsigned a, unsigned n) {
	asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(a), "r"(n) : "memory");
}
__device__ __forceinline__ unsigned long long mb_arrive(unsigned a) {
	unsigned long long s;
	asm volatile("mbarrier.arrive.release.cta.shared::cta.b64 %0, [%1];" : "=l"(s) : "r"(a) : "memory");
	return s;
}
__device__ __forceinline__ void mb_arrive_tx(unsigned a, unsigned tx) {
	asm volatile("mbarrier.arrive.expect_tx.release.cta.shared::cta.b64 _, [%0], %1;" :: "r"(a), "r"(tx) : "memory");
}
__device__ __forceinline__ void mb_expect_tx(unsigned a, unsigned tx) {
	asm volatile("mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [%0], %1;" :: "r"(a), "r"(tx) : "memory");
}
__device__ __forceinline__ void mb_complete_tx(unsigned a, unsigned tx) {
	asm volatile("mbarrier.complete_tx.relaxed.cta.shared::cta.b64 [%0], %1;" :: "r"(a), "r"(tx) : "memory");
}
__device__ __forceinline__ bool mb_try_parity(unsigned a, unsigned parity) {
	unsigned ok;
	asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.acquire.cta.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
		: "=r"(ok) : "r"(a), "r"(parity) : "memory");
	return ok;
}
__device__ __forceinline__ void mb_wait_parity(unsigned a, unsigned parity) { while (!mb_try_parity(a, parity)) {} }
`

func launchMbar(t *testing.T, m *Module, block int, in []float32) (*Buffer, Counts, error) {
	t.Helper()
	In, out := Float32Buffer("in", in), NewOutput("out", 4*len(in), Poisoned)
	c, err := Launch(context.Background(), m, "k", LaunchConfig{Grid: [3]int{2}, Block: [3]int{block},
		Params: []Arg{Ptr(In), Ptr(out)}, Buffers: []*Buffer{In, out}})
	return out, c, err
}

// A producer warp and a consumer warp of one block pass 8 tiles through a ring of 2 shared slots,
// each with a "full" and an "empty" mbarrier (arrive + try_wait.parity loops): every barrier goes
// through 4 phases, the parity flipping. The consumer's results are the producer's tiles doubled,
// in order, and no hazard is reported: a completed phase orders the producer's writes before the
// consumer's reads, and the consumer's reads before the producer's next writes of the slot.
func TestMbarrierProducerConsumerPhases(t *testing.T) {
	m := compileSM90(t, mbarrierAsm+`
extern "C" __global__ void k(const float* in, float* out) {
	__shared__ float buf[2][32];
	__shared__ unsigned long long full[2], empty[2];
	int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
	if (threadIdx.x == 0) {
		for (int s = 0; s < 2; s++) { mb_init(smem(&full[s]), 32); mb_init(smem(&empty[s]), 32); }
	}
	__syncthreads();
	const float* src = in + blockIdx.x * 256;
	for (int it = 0; it < 8; it++) {
		int s = it % 2;
		unsigned phase = (it / 2) & 1;
		if (warp == 0) {
			mb_wait_parity(smem(&empty[s]), phase ^ 1);
			buf[s][lane] = src[it * 32 + lane];
			mb_arrive(smem(&full[s]));
		} else {
			mb_wait_parity(smem(&full[s]), phase);
			out[blockIdx.x * 256 + it * 32 + lane] = 2 * buf[s][lane];
			mb_arrive(smem(&empty[s]));
		}
	}
}
`)
	in := make([]float32, 512)
	for i := range in {
		in[i] = float32(i)
	}
	out, c, err := launchMbar(t, m, 64, in)
	if err != nil {
		t.Fatal(err)
	}
	for i, got := range out.Float32s() {
		if want := 2 * in[i]; got != want {
			t.Fatalf("out[%d] = %v, want %v", i, got, want)
		}
	}
	var arrives int64
	for _, l := range c.Lines {
		if strings.Contains(l.Text, "mbarrier.arrive") {
			arrives += l.Warp
		}
	}
	// 2 blocks × 2 warps × 8 arrivals, each one warp instruction of class "barrier"
	if arrives != 32 {
		t.Errorf("mbarrier.arrive warp instructions = %d, want 32", arrives)
	}
	if c.Classes[ClassBarrier].Warp < arrives {
		t.Errorf("barrier-class warp instructions %d, want at least the %d arrivals", c.Classes[ClassBarrier].Warp, arrives)
	}
}

// A phase with a transaction count completes only when its pending arrivals and its tx-count are
// both zero: warp 0 arrives with expect_tx of 128 bytes and waits; warp 1's 32 lanes each count
// themselves in shared memory and then complete 4 bytes. The waiters see all 32 counts; a phase
// that completed at the last arrival alone would release them before warp 1 ran.
func TestMbarrierExpectTxCompletesOnTransactionCount(t *testing.T) {
	m := compileSM90(t, mbarrierAsm+`
extern "C" __global__ void k(const float* in, float* out) {
	__shared__ unsigned long long bar;
	__shared__ int done;
	int warp = threadIdx.x / 32;
	if (threadIdx.x == 0) { mb_init(smem(&bar), 1); done = 0; }
	__syncthreads();
	if (warp == 0) {
		if (threadIdx.x == 0) mb_arrive_tx(smem(&bar), 96);
		if (threadIdx.x == 1) mb_expect_tx(smem(&bar), 32);
		mb_wait_parity(smem(&bar), 0);
		out[blockIdx.x * 64 + threadIdx.x] = atomicAdd(&done, 0);
	} else {
		atomicAdd(&done, 1);
		mb_complete_tx(smem(&bar), 4);
		out[blockIdx.x * 64 + threadIdx.x] = -1;
	}
}
`)
	out, _, err := launchMbar(t, m, 64, make([]float32, 128))
	if err != nil {
		t.Fatal(err)
	}
	for i, got := range out.Float32s() {
		want := float32(32)
		if i%64 >= 32 {
			want = -1
		}
		if got != want {
			t.Fatalf("out[%d] = %v, want %v", i, got, want)
		}
	}
}

// Waiting on a phase that can never complete (init counts 64 arrivals, only 32 threads arrive) is
// a "hang" fault at the wait's source line, not a time-out.
func TestMbarrierHangReportedAtTheWait(t *testing.T) {
	m := compileSM90(t, mbarrierAsm+`
extern "C" __global__ void k(const float* in, float* out) {
	__shared__ unsigned long long bar;
	if (threadIdx.x == 0) mb_init(smem(&bar), 64);
	__syncthreads();
	if (threadIdx.x < 32) mb_arrive(smem(&bar));
	unsigned ok = 0;
	while (!ok) asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], 0; selp.u32 %0, 1, 0, p; }" : "=r"(ok) : "r"(smem(&bar)) : "memory");
	out[blockIdx.x * 64 + threadIdx.x] = in[threadIdx.x];
}
`)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	In, out := Float32Buffer("in", make([]float32, 128)), NewOutput("out", 4*128, Poisoned)
	_, err := Launch(ctx, m, "k", LaunchConfig{Grid: [3]int{2}, Block: [3]int{64},
		Params: []Arg{Ptr(In), Ptr(out)}, Buffers: []*Buffer{In, out}})
	var f *Fault
	if !errors.As(err, &f) || f.Kind != "hang" {
		t.Fatalf("got %v, want a hang", err)
	}
	lines := strings.Count(mbarrierAsm, "\n")
	if want := "k.cu:" + strconv.Itoa(lines+8); // the kernel starts on the line after mbarrierAsm; the wait is its 7th; f.Source != want || !strings.Contains(f.Instr, "try_wait") ||
	!strings.Contains(f.Msg, "32 of 64 arrivals") || f.Block != [3]int{} {
		t.Errorf("got %+v, want the wait at %s with 32 of 64 arrivals pending", f, want)
	}
}
