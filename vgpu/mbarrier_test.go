package vgpu

import (
	"context"
	"encoding/binary"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/gpuplayground/playground/gpu/nvidia"
)

// compileSM90 compiles src for compute_90 with CUDA's headers (libcu++'s cuda::barrier), skipped
// where no NVRTC 12 is there. A source is compiled once for the test binary (sm90Modules): a
// compile is about half a CPU second, and some tests launch another's kernel as it is.
func compileSM90(t *testing.T, src string) *Module {
	t.Helper()
	n, err := nvidia.LoadNVRTC()
	if err != nil {
		t.Skipf("no NVRTC: %v", err)
	}
	if archs, err := n.SupportedArchs(); err != nil || archs[len(archs)-1] < 90 {
		t.Skipf("NVRTC without sm_90: %v %v", archs, err)
	}
	if m, ok := sm90Modules.Load(src); ok {
		return m.(*Module)
	}
	ptx, err := nvidia.CompileWithHeaders(context.Background(), n, nil, nvidia.FindHeaders(n), src, "k.cu", 90)
	if err != nil {
		t.Fatal(err)
	}
	m, err := ParseModule(ptx)
	if err != nil {
		t.Fatalf("%v\n%s", err, ptx)
	}
	sm90Modules.Store(src, m)
	return m
}

// sm90Modules are the modules compileSM90 made, by source (a Module is launched as often as asked,
// read only).
var sm90Modules sync.Map

// libcuxxKernels are the kernels of the libcu++ tests (TestMbarrierLibcuxxBarrierMemcpyAsync,
// TestMbarrierLibcuxxPipeline, TestTMALibcuxxBarrier) in one source: NVRTC compiles libcu++'s
// headers once for the three (about a CPU second each time).
const libcuxxKernels = `#include <cuda/barrier>
#include <cuda/pipeline>
#include <cooperative_groups.h>
struct alignas(64) CUtensorMap_st { unsigned long long opaque[16]; };
extern "C" __global__ void barrier_memcpy_async(const float* in, float* out) {
	__shared__ float tile[64];
	__shared__ cuda::barrier<cuda::thread_scope_block> bar;
	auto block = cooperative_groups::this_thread_block();
	if (block.thread_rank() == 0) init(&bar, block.size());
	block.sync();
	cuda::memcpy_async(block, tile, in + blockIdx.x * 64, sizeof(tile), bar);
	bar.arrive_and_wait();
	float v = tile[63 - threadIdx.x];
	auto tok = bar.arrive();
	bar.wait(std::move(tok));
	tile[threadIdx.x] = v * 2.0f;
	bar.arrive_and_wait();
	out[blockIdx.x * 64 + threadIdx.x] = tile[threadIdx.x] + tile[63 - threadIdx.x];
}
extern "C" __global__ void pipeline2(const float* in, float* out) {
	__shared__ float tile[2][64];
	auto block = cooperative_groups::this_thread_block();
	__shared__ cuda::pipeline_shared_state<cuda::thread_scope_block, 2> st;
	auto pipe = cuda::make_pipeline(block, &st);
	const float* src = in + blockIdx.x * 512;
	for (int f = 0; f < 2; f++) {
		pipe.producer_acquire();
		cuda::memcpy_async(block, tile[f], src + 64 * f, sizeof(tile[f]), pipe);
		pipe.producer_commit();
	}
	for (int i = 0; i < 8; i++) {
		pipe.consumer_wait();
		out[blockIdx.x * 512 + 64 * i + threadIdx.x] = 2 * tile[i % 2][63 - threadIdx.x];
		pipe.consumer_release();
		if (i + 2 < 8) {
			pipe.producer_acquire();
			cuda::memcpy_async(block, tile[i % 2], src + 64 * (i + 2), sizeof(tile[0]), pipe);
			pipe.producer_commit();
		}
	}
}
using barrier = cuda::barrier<cuda::thread_scope_block>;
namespace cde = cuda::device::experimental;
extern "C" __global__ void tma_barrier(const __grid_constant__ CUtensorMap tmap, const float* in, float* out) {
	__shared__ alignas(128) float tile[8 * 16];
	__shared__ alignas(16) float buf[64];
	#pragma nv_diag_suppress static_var_with_dynamic_init
	__shared__ barrier bar;
	if (threadIdx.x == 0) {
		init(&bar, blockDim.x);
		cde::fence_proxy_async_shared_cta();
	}
	__syncthreads();
	barrier::arrival_token token;
	if (threadIdx.x == 0) {
		cde::cp_async_bulk_tensor_2d_global_to_shared(tile, &tmap, 16 * blockIdx.x, 0, bar);
		cuda::memcpy_async(buf, in, cuda::aligned_size_t<16>(256), bar);
		token = cuda::device::barrier_arrive_tx(bar, 1, sizeof(tile));
	} else {
		token = bar.arrive();
	}
	bar.wait(std::move(token));
	out[blockIdx.x * 128 + threadIdx.x] = tile[threadIdx.x] + buf[threadIdx.x % 64];
}
`

// compileLibcuxx is libcuxxKernels compiled (compileSM90).
func compileLibcuxx(t *testing.T) *Module {
	t.Helper()
	return compileSM90(t, libcuxxKernels)
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
	return launchMbarEntry(t, m, "k", block, in)
}

// launchMbarEntry is launchMbar of m's kernel entry.
func launchMbarEntry(t *testing.T, m *Module, entry string, block int, in []float32) (*Buffer, Counts, error) {
	t.Helper()
	In, out := Float32Buffer("in", in), NewOutput("out", 4*len(in), Poisoned)
	c, err := Launch(context.Background(), m, entry, LaunchConfig{Grid: [3]int{2}, Block: [3]int{block},
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

// libcu++'s cuda::barrier as NVRTC 12.4 compiles it: init, cuda::memcpy_async onto the barrier
// (cp.async + cp.async.mbarrier.arrive), arrive_and_wait and arrive/wait with a token
// (mbarrier.arrive with a count, try_wait with a state, inval at the barrier's destruction).
func TestMbarrierLibcuxxBarrierMemcpyAsync(t *testing.T) {
	m := compileLibcuxx(t)
	in := make([]float32, 128)
	for i := range in {
		in[i] = float32(i)
	}
	out, c, err := launchMbarEntry(t, m, "barrier_memcpy_async", 64, in)
	if err != nil {
		t.Fatal(err)
	}
	for i, got := range out.Float32s() {
		b, x := i/64, i%64
		if want := 2*in[b*64+63-x] + 2*in[b*64+x]; got != want {
			t.Fatalf("out[%d] = %v, want %v", i, got, want)
		}
	}
	var cpArrive bool
	for _, l := range c.Lines {
		cpArrive = cpArrive || strings.Contains(l.Text, "cp.async.mbarrier.arrive") && l.Warp > 0
	}
	if !cpArrive {
		t.Error("no cp.async.mbarrier.arrive executed")
	}
}

// The __mbarrier_* primitives of cuda_awbarrier_primitives.h: arrive, try_wait with a time hint,
// arrive_and_drop (later phases expect one arrival fewer per thread) and test_wait.
func TestMbarrierPrimitivesArriveDropTestWait(t *testing.T) {
	m := compileSM90(t, `#include <cuda_awbarrier_primitives.h>
extern "C" __global__ void k(const float* in, float* out) {
	__shared__ __mbarrier_t bar;
	__shared__ float s[64];
	if (threadIdx.x == 0) __mbarrier_init(&bar, blockDim.x);
	__syncthreads();
	s[threadIdx.x] = in[blockIdx.x * 64 + threadIdx.x];
	__mbarrier_token_t t = __mbarrier_arrive(&bar);
	while (!__mbarrier_try_wait(&bar, t, 1000)) {}
	float v = s[63 - threadIdx.x];
	if (threadIdx.x >= 32) {
		t = __mbarrier_arrive_and_drop(&bar);
		while (!__mbarrier_test_wait(&bar, t)) {}
		out[blockIdx.x * 64 + threadIdx.x] = v;
		return;
	}
	t = __mbarrier_arrive(&bar);
	while (!__mbarrier_test_wait(&bar, t)) {}
	t = __mbarrier_arrive(&bar); // a phase of the 32 threads left
	while (!__mbarrier_test_wait(&bar, t)) {}
	out[blockIdx.x * 64 + threadIdx.x] = v + 1000;
}
`)
	in := make([]float32, 128)
	for i := range in {
		in[i] = float32(i)
	}
	out, _, err := launchMbar(t, m, 64, in)
	if err != nil {
		t.Fatal(err)
	}
	for i, got := range out.Float32s() {
		b, x := i/64, i%64
		want := in[b*64+63-x]
		if x < 32 {
			want += 1000
		}
		if got != want {
			t.Fatalf("out[%d] = %v, want %v", i, got, want)
		}
	}
}

// An arrive on an mbarrier no thread initialised is a "barrier" fault at the arrive's line.
func TestMbarrierArriveOnUninitialisedBarrier(t *testing.T) {
	m := compileSM90(t, mbarrierAsm+`
extern "C" __global__ void k(const float* in, float* out) {
	__shared__ unsigned long long bar[2];
	if (threadIdx.x == 0) mb_init(smem(&bar[0]), 64);
	__syncthreads();
	asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(smem(&bar[1])) : "memory");
	out[blockIdx.x * 64 + threadIdx.x] = in[threadIdx.x];
}
`)
	_, _, err := launchMbar(t, m, 64, make([]float32, 128))
	var f *Fault
	lines := strings.Count(mbarrierAsm, "\n")
	if !errors.As(err, &f) || f.Kind != "barrier" || !strings.Contains(f.Msg, "no mbarrier.init") ||
		f.Source != "k.cu:"+strconv.Itoa(lines+6) || f.Address != 8 {
		t.Fatalf("got %v, want a barrier fault at the arrive on offset 8", err)
	}
}

// An arrival count beyond the phase's pending arrivals (init counts 32, one thread arrives for
// 40) is a "barrier" fault; 64 threads arriving once each on a barrier of 32 are 2 phases, not an
// error.
func TestMbarrierTooManyArrivals(t *testing.T) {
	for _, tc := range []struct {
		arrive string
		fault  bool
	}{
		{"mb_arrive(smem(&bar));", false},
		{`if (threadIdx.x == 0) asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0], 40;" :: "r"(smem(&bar)) : "memory");`, true},
	} {
		m := compileSM90(t, mbarrierAsm+`
extern "C" __global__ void k(const float* in, float* out) {
	__shared__ unsigned long long bar;
	if (threadIdx.x == 0) mb_init(smem(&bar), 32);
	__syncthreads();
	`+tc.arrive+`
	out[blockIdx.x * 64 + threadIdx.x] = in[threadIdx.x];
}
`)
		_, _, err := launchMbar(t, m, 64, make([]float32, 128))
		var f *Fault
		if got := errors.As(err, &f) && f.Kind == "barrier" && strings.Contains(f.Msg, "count 40") && f.Thread == [3]int{}; got != tc.fault || !tc.fault && err != nil {
			t.Errorf("%s: got %v, want a fault: %v", tc.arrive, err, tc.fault)
		}
	}
}

// %globaltimer and %clock64 (libcu++'s wait reads them) only grow.
func TestClocksGrow(t *testing.T) {
	m := compileSM90(t, `
extern "C" __global__ void k(const float* in, float* out) {
	unsigned long long a, b, c;
	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(a));
	c = clock64();
	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(b));
	out[blockIdx.x * 64 + threadIdx.x] = (b > a) + (c > a);
}
`)
	out, _, err := launchMbar(t, m, 64, make([]float32, 128))
	if err != nil {
		t.Fatal(err)
	}
	for i, got := range out.Float32s() {
		if got != 2 {
			t.Fatalf("out[%d] = %v, want 2 (both later reads larger)", i, got)
		}
	}
}

// elect.sync elects the lowest lane of its member mask: d is its lane id in every lane, p true in
// it alone; with lanes 0–4 branched away (mask __activemask()) the leader is lane 5. The
// fence.proxy.async each thread then executes is counted per warp.
func TestElectSyncAndProxyFence(t *testing.T) {
	m := compileSM90(t, `
extern "C" __global__ void k(const float* in, float* out) {
	int lane = threadIdx.x % 32;
	float r = -1;
	if (lane >= 5 || threadIdx.x >= 32) {
		unsigned d, mask = __activemask(), p;
		asm volatile("{ .reg .pred q; elect.sync %0|q, %2; selp.u32 %1, 1, 0, q; }" : "=r"(d), "=r"(p) : "r"(mask));
		r = d * 10 + p;
	}
	asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
	out[blockIdx.x * 64 + threadIdx.x] = r;
}
`)
	out, c, err := launchMbar(t, m, 64, make([]float32, 128))
	if err != nil {
		t.Fatal(err)
	}
	for i, got := range out.Float32s() {
		x := i % 64
		var want float32
		switch {
		case x < 5:
			want = -1
		case x < 32:
			want = 50
			if x == 5 {
				want = 51
			}
		default: // warp 1: all its lanes, the leader lane 0
			want = 0
			if x == 32 {
				want = 1
			}
		}
		if got != want {
			t.Errorf("out[%d] = %v, want %v", i, got, want)
		}
	}
	if got, want := c.AsyncProxyFences, int64(4); got != want {
		t.Errorf("AsyncProxyFences = %d, want %d (2 blocks × 2 warps)", got, want)
	}
	if got := (Counts{Blocks: 1, GridBlocks: 4, AsyncProxyFences: 2}).Scaled().AsyncProxyFences; got != 8 {
		t.Errorf("a sampled launch's AsyncProxyFences scale to %d, want 8", got)
	}
}

// txPTX is hand-written PTX (no compiler needed): warp 0's lane 0 arrives on a barrier of one
// arrival expecting 128 bytes, and warp 0 waits on phase 0; each lane of warp 1 completes tx
// bytes, then writes out. Warp 0 writes 1 after its wait.
const txPTX = `.version 8.0
.target sm_90
.address_size 64
.visible .entry k(.param .u64 out, .param .u32 tx)
{
	.reg .pred %p<3>;
	.reg .b32 %r<8>;
	.reg .b64 %rd<6>;
	.shared .align 8 .b64 bar;
	mov.u32 %r1, %tid.x;
	mov.u32 %r2, bar;
	ld.param.u32 %r3, [tx];
	ld.param.u64 %rd2, [out];
	cvta.to.global.u64 %rd2, %rd2;
	mul.wide.u32 %rd3, %r1, 4;
	add.s64 %rd2, %rd2, %rd3;
	setp.ne.u32 %p1, %r1, 0;
	@%p1 bra L1;
	mbarrier.init.shared::cta.b64 [%r2], 1;
L1:
	bar.sync 0;
	setp.ge.u32 %p1, %r1, 32;
	@%p1 bra PRODUCER;
	setp.ne.u32 %p2, %r1, 0;
	@%p2 bra WAIT;
	mbarrier.arrive.expect_tx.release.cta.shared::cta.b64 %rd1, [%r2], 128;
WAIT:
	mbarrier.try_wait.parity.acquire.cta.shared::cta.b64 %p2, [%r2], 0;
	@!%p2 bra WAIT;
	st.global.u32 [%rd2], 1;
	exit;
PRODUCER:
	mbarrier.complete_tx.relaxed.cta.shared::cta.b64 [%r2], %r3;
	st.global.u32 [%rd2], 2;
	exit;
}
`

// With 32 × 4 bytes completed the phase completes; with 32 × 2 it never does: a "hang" at the
// try_wait (PTX line 28) with 64 bytes of the tx-count outstanding.
func TestMbarrierTransactionCountPTX(t *testing.T) {
	m, err := ParseModule(txPTX)
	if err != nil {
		t.Fatal(err)
	}
	for _, tx := range []uint32{4, 2} {
		out := NewOutput("out", 4*64, Poisoned)
		_, err := Launch(context.Background(), m, "k", LaunchConfig{Grid: [3]int{1}, Block: [3]int{64},
			Params: []Arg{Ptr(out), U32(tx)}, Buffers: []*Buffer{out}})
		if tx == 4 {
			if err != nil {
				t.Fatal(err)
			}
			for i := range 64 {
				if got, want := binary.LittleEndian.Uint32(out.Data[4*i:]), uint32(1+i/32); got != want {
					t.Fatalf("out[%d] = %d, want %d", i, got, want)
				}
			}
			continue
		}
		var f *Fault
		if !errors.As(err, &f) || f.Kind != "hang" || f.Line != 28 || !strings.Contains(f.Msg, "tx-count of 64 bytes") {
			t.Errorf("tx %d: got %v, want a hang at PTX line 28 with 64 bytes outstanding", tx, err)
		}
	}
}

// cuda::pipeline with two stages (NVRTC 12.4: producer_acquire/consumer_release on the
// pipeline's mbarriers with try_wait.parity, memcpy_async through cp.async, inval at its end):
// 8 tiles flow through the ring, each phase of each stage's barriers reused 4 times.
func TestMbarrierLibcuxxPipeline(t *testing.T) {
	m := compileLibcuxx(t)
	in := make([]float32, 1024)
	for i := range in {
		in[i] = float32(i)
	}
	out, _, err := launchMbarEntry(t, m, "pipeline2", 64, in)
	if err != nil {
		t.Fatal(err)
	}
	for i, got := range out.Float32s() {
		if want := 2 * in[i/64*64+63-i%64]; got != want {
			t.Fatalf("out[%d] = %v, want %v", i, got, want)
		}
	}
}

// An mbarrier used by threads that no __syncthreads() orders after its init is a "barrier" fault
// naming the init's thread and line: the init is not yet visible to them.
func TestMbarrierInitWithoutSyncthreads(t *testing.T) {
	m := compileSM90(t, mbarrierAsm+`
extern "C" __global__ void k(const float* in, float* out) {
	__shared__ unsigned long long bar;
	if (threadIdx.x == 0) mb_init(smem(&bar), 64);
	mb_arrive(smem(&bar));
	mb_wait_parity(smem(&bar), 0);
	out[blockIdx.x * 64 + threadIdx.x] = in[threadIdx.x];
}
`)
	_, _, err := launchMbar(t, m, 64, make([]float32, 128))
	var f *Fault
	if !errors.As(err, &f) || f.Kind != "barrier" || !strings.Contains(f.Msg, "no __syncthreads() between") ||
		f.OtherThread != [3]int{} || !strings.Contains(f.OtherInstr, "mbarrier.init") || f.Thread == [3]int{} {
		t.Fatalf("got %v, want a barrier fault naming thread 0's init", err)
	}
}

// Producer and consumer lanes in one warp, either order of their paths: the consumers park at the
// wait while the producer lanes of their own warp go on, and resume when the producers' last
// arrival completes the phase, 3 phases in a row.
func TestMbarrierProducerConsumerInOneWarp(t *testing.T) {
	for _, cond := range []string{"lane < 16", "lane >= 16"} {
		m := compileSM90(t, mbarrierAsm+`
extern "C" __global__ void k(const float* in, float* out) {
	__shared__ float buf[16];
	__shared__ unsigned long long full, empty;
	int lane = threadIdx.x, j = lane % 16;
	if (lane == 0) { mb_init(smem(&full), 16); mb_init(smem(&empty), 16); }
	__syncthreads();
	for (int it = 0; it < 3; it++) {
		if (`+cond+`) {
			mb_wait_parity(smem(&empty), (it & 1) ^ 1);
			buf[j] = in[blockIdx.x * 48 + it * 16 + j];
			mb_arrive(smem(&full));
		} else {
			mb_wait_parity(smem(&full), it & 1);
			out[blockIdx.x * 48 + it * 16 + j] = buf[15 - j] + 1;
			mb_arrive(smem(&empty));
		}
	}
}
`)
		in := make([]float32, 96)
		for i := range in {
			in[i] = float32(i)
		}
		In, out := Float32Buffer("in", in), NewOutput("out", 4*96, Poisoned)
		_, err := Launch(context.Background(), m, "k", LaunchConfig{Grid: [3]int{2}, Block: [3]int{32},
			Params: []Arg{Ptr(In), Ptr(out)}, Buffers: []*Buffer{In, out}})
		if err != nil {
			t.Fatalf("%s: %v", cond, err)
		}
		for i, got := range out.Float32s() {
			if want := in[i/16*16+15-i%16] + 1; got != want {
				t.Fatalf("%s: out[%d] = %v, want %v", cond, i, got, want)
			}
		}
	}
}

// A consumer that waits for one tile more than its producer makes, while the producer waits at
// the final __syncthreads(): a hang at the consumer's wait, in phase 3 of its barrier, saying
// the others wait at a __syncthreads().
func TestMbarrierHangPhaseNeverArrives(t *testing.T) {
	m := compileSM90(t, mbarrierAsm+`
extern "C" __global__ void k(const float* in, float* out) {
	__shared__ unsigned long long full;
	int lane = threadIdx.x % 32;
	if (threadIdx.x == 0) mb_init(smem(&full), 32);
	__syncthreads();
	float acc = 0;
	if (threadIdx.x < 32) {
		for (int it = 0; it < 3; it++) { mb_arrive(smem(&full)); mb_wait_parity(smem(&full), it & 1); }
	} else {
		for (int it = 0; it < 4; it++) { mb_wait_parity(smem(&full), it & 1); acc += lane; }
	}
	__syncthreads();
	out[blockIdx.x * 64 + threadIdx.x] = acc;
}
`)
	_, _, err := launchMbar(t, m, 64, make([]float32, 128))
	var f *Fault
	if !errors.As(err, &f) || f.Kind != "hang" || f.Thread != [3]int{32, 0, 0} ||
		!strings.Contains(f.Msg, "phase 3 ") || !strings.Contains(f.Msg, "32 of them at a __syncthreads()") {
		t.Fatalf("got %v, want a hang of thread 32 in phase 3 while 32 threads wait at a __syncthreads()", err)
	}
}

// cpArrivePTX: thread 0 copies a word with cp.async, has the barrier (count 1) track it with
// cp.async.mbarrier.arrive{MODE}, waits on phase 0 and stores the copied word.
const cpArrivePTX = `.version 8.0
.target sm_90
.address_size 64
.visible .entry k(.param .u64 in, .param .u64 out)
{
	.reg .pred %p<3>;
	.reg .b32 %r<8>;
	.reg .b64 %rd<6>;
	.shared .align 8 .b64 bar;
	.shared .align 4 .b32 word;
	ld.param.u64 %rd1, [in];
	ld.param.u64 %rd2, [out];
	cvta.to.global.u64 %rd1, %rd1;
	cvta.to.global.u64 %rd2, %rd2;
	mov.u32 %r2, bar;
	mov.u32 %r3, word;
	mbarrier.init.shared.b64 [%r2], 1;
	cp.async.ca.shared.global [%r3], [%rd1], 4;
	cp.async.mbarrier.arrive{MODE}.shared.b64 [%r2];
WAIT:
	mbarrier.try_wait.parity.shared.b64 %p1, [%r2], 0;
	@!%p1 bra WAIT;
	ld.shared.u32 %r4, [%r3];
	st.global.u32 [%rd2], %r4;
	ret;
}
`

// With .noinc the copies' completion is the phase's one arrival: the word arrives; without it the
// pending count is raised first, so the phase still waits for an arrival that never comes: a hang.
func TestMbarrierCpAsyncArrive(t *testing.T) {
	for _, mode := range []string{".noinc", ""} {
		m, err := ParseModule(strings.Replace(cpArrivePTX, "{MODE}", mode, 1))
		if err != nil {
			t.Fatal(err)
		}
		In, out := NewBuffer("in", 4), NewOutput("out", 4, Poisoned)
		binary.LittleEndian.PutUint32(In.Data, 0xC0FFEE)
		_, err = Launch(context.Background(), m, "k", LaunchConfig{Block: [3]int{1},
			Params: []Arg{Ptr(In), Ptr(out)}, Buffers: []*Buffer{In, out}})
		var f *Fault
		switch {
		case mode == ".noinc" && (err != nil || binary.LittleEndian.Uint32(out.Data) != 0xC0FFEE):
			t.Errorf(".noinc: got %v and %#x, want 0xc0ffee", err, out.Data)
		case mode == "" && (!errors.As(err, &f) || f.Kind != "hang" || f.Line != 21):
			t.Errorf("without .noinc: got %v, want a hang at PTX line 21", err)
		}
	}
}

// A complete_tx before its expect_tx takes the tx-count below zero; the phase completes when the
// expect_tx brings it back to zero after the last arrival.
func TestMbarrierCompleteTxBeforeExpectTx(t *testing.T) {
	m, err := ParseModule(`.version 8.0
.target sm_90
.address_size 64
.visible .entry k(.param .u64 out)
{
	.reg .pred %p<3>;
	.reg .b32 %r<8>;
	.reg .b64 %rd<6>;
	.shared .align 8 .b64 bar;
	ld.param.u64 %rd2, [out];
	cvta.to.global.u64 %rd2, %rd2;
	mov.u32 %r2, bar;
	mbarrier.init.shared::cta.b64 [%r2], 1;
	mbarrier.complete_tx.shared::cta.b64 [%r2], 64;
	mbarrier.arrive.shared::cta.b64 %rd1, [%r2];
	mbarrier.expect_tx.shared::cta.b64 [%r2], 64;
	mbarrier.test_wait.shared::cta.b64 %p1, [%r2], %rd1;
	selp.u32 %r3, 1, 2, %p1;
	st.global.u32 [%rd2], %r3;
	ret;
}
`)
	if err != nil {
		t.Fatal(err)
	}
	out := NewOutput("out", 4, Poisoned)
	if _, err := Launch(context.Background(), m, "k", LaunchConfig{Block: [3]int{1}, Params: []Arg{Ptr(out)}, Buffers: []*Buffer{out}}); err != nil {
		t.Fatal(err)
	}
	if got := binary.LittleEndian.Uint32(out.Data); got != 1 {
		t.Errorf("test_wait = %d, want 1 (true)", got)
	}
}

// A barrier invalidated (mbarrier.inval) while a lane waits on it is a "barrier" fault naming the
// invalidation, not an internal error.
func TestMbarrierInvalidatedWhileWaiting(t *testing.T) {
	src := strings.Replace(txPTX, "mbarrier.complete_tx.relaxed.cta.shared::cta.b64 [%r2], %r3;", "mbarrier.inval.shared::cta.b64 [%r2];", 1)
	m, err := ParseModule(src)
	if err != nil {
		t.Fatal(err)
	}
	out := NewOutput("out", 4*64, Poisoned)
	_, err = Launch(context.Background(), m, "k", LaunchConfig{Grid: [3]int{1}, Block: [3]int{64},
		Params: []Arg{Ptr(out), U32(4)}, Buffers: []*Buffer{out}})
	var f *Fault
	if !errors.As(err, &f) || f.Kind != "barrier" || !strings.Contains(f.Msg, "invalidated while it waited") {
		t.Fatalf("got %v, want a barrier fault saying the barrier was invalidated while a lane waited", err)
	}
}
