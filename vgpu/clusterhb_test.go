package vgpu

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"
)

// clusterFlag: clusters of 2; rank 1's threads write 32 floats into rank 0's buffer through
// distributed shared memory, __syncthreads(), and thread 0 sets a flag; rank 0's threads spin on
// the flag and read the buffer. How the flag is set is MODE's: 0 st.release.cluster of rank 0's
// flag (in its shared memory); 1 st.relaxed.cluster with no fence before it; 2 fence.acq_rel.cluster
// then st.relaxed.cluster; 3 st.release.cluster of another flag, then st.relaxed.cluster of this
// one; 4 no flag at all: rank 0 waits on an mbarrier phase its own thread completes; 5
// __threadfence() then an atomicExch on a flag in global memory, which rank 0 polls with
// atomicAdd(flag, 0); 6 that atomicExch with no fence.
const clusterFlag = mbarrierAsm + clusterSyncFn + `
__device__ __forceinline__ unsigned mapa0(const void* p) {
	unsigned r;
	asm volatile("mapa.shared::cluster.u32 %0, %1, 0;" : "=r"(r) : "r"(smem(p)));
	return r;
}
extern "C" __global__ void __cluster_dims__(2, 1, 1) k(float* out, unsigned* g, int mode) {
	__shared__ float buf[32];
	__shared__ unsigned flag, other;
	__shared__ unsigned long long bar;
	unsigned rank, t = threadIdx.x, seen;
	unsigned* gflag = g + blockIdx.x / 2;
	asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
	if (t == 0) { flag = 0; other = 0; mb_init(smem(&bar), 1); }
	cluster_sync();
	if (rank == 1) {
		asm volatile("st.shared::cluster.f32 [%0], %1;" :: "r"(mapa0(&buf[t])), "f"(t + 0.5f) : "memory"); // the remote write
		__syncthreads();
		if (t == 0 && mode == 0) asm volatile("st.release.cluster.shared::cluster.u32 [%0], 1;" :: "r"(mapa0(&flag)) : "memory");
		if (t == 0 && mode == 2) asm volatile("fence.acq_rel.cluster;" ::: "memory");
		if (t == 0 && (mode == 1 || mode == 2)) asm volatile("st.relaxed.cluster.shared::cluster.u32 [%0], 1;" :: "r"(mapa0(&flag)) : "memory");
		if (t == 0 && mode == 3) asm volatile("st.release.cluster.shared::cluster.u32 [%0], 1;\n\tst.relaxed.cluster.shared::cluster.u32 [%1], 1;"
			:: "r"(mapa0(&other)), "r"(mapa0(&flag)) : "memory");
		if (t == 0 && mode == 5) __threadfence();
		if (t == 0 && mode >= 5) atomicExch(gflag, 1);
	} else {
		if (mode == 4) {
			if (t == 0) mb_arrive(smem(&bar));
			mb_wait_parity(smem(&bar), 0);
		} else if (mode >= 5) {
			while (atomicAdd(gflag, 0) == 0) {}
		} else {
			do asm volatile("ld.acquire.cluster.shared::cta.u32 %0, [%1];" : "=r"(seen) : "r"(smem(&flag)) : "memory"); while (seen == 0);
		}
		out[blockIdx.x / 2 * 32 + t] = buf[t]; // the read
	}
	cluster_sync();
}
`

// The cluster's happens-before follows the PTX memory model's release and acquire patterns: a
// flag set with st.release.cluster, or with fence.acq_rel.cluster and a relaxed store, and read
// with ld.acquire.cluster, or a global flag set by an atomic after __threadfence() and read by an
// atomic, hands rank 1's remote writes to rank 0's reads with no finding (and rank 0's spin does
// not keep rank 1 from its __syncthreads()); a relaxed store or atomic with no fence, a release of
// another location, or an mbarrier phase that only rank 0's own thread completes orders nothing,
// and the read is a hazard naming the remote write.
func TestClusterReleaseAcquire(t *testing.T) {
	m := compileSM90(t, clusterFlag)
	line := func(s string) string { return "k.cu:" + strconv.Itoa(lineOf(t, clusterFlag, s)) }
	launch := func(mode int32) ([]float32, error) {
		out, g := NewOutput("out", 2*32*4, Poisoned), NewOutput("g", 2*4, Zeroed)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a guard: a kernel whose spin never ends fails instead of hanging the test
		defer cancel()
		_, err := Launch(ctx, m, "k", LaunchConfig{Grid: [3]int{4}, Block: [3]int{32},
			Params: []Arg{Ptr(out), Ptr(g), S32(mode)}, Buffers: []*Buffer{out, g}})
		return out.Float32s(), err
	}
	for _, mode := range []int32{0, 2, 5} {
		out, err := launch(mode)
		if err != nil {
			t.Fatalf("mode %d: %v", mode, err)
		}
		for i, got := range out {
			if want := float32(i%32) + 0.5; got != want {
				t.Fatalf("mode %d: out[%d] = %v, want %v", mode, i, got, want)
			}
		}
	}
	for _, mode := range []int32{1, 3, 4, 6} {
		_, err := launch(mode)
		var f *Fault
		if !errors.As(err, &f) || f.Kind != "hazard" || f.Space != "shared::cluster" || !strings.Contains(f.Msg, "read after write") ||
			f.Source != line("// the read") || f.OtherSource != line("// the remote write") {
			t.Errorf("mode %d: got %v, want a read-after-write hazard at the read naming the remote write", mode, err)
		}
	}
}
