package vgpu

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
)

// clusterReduce: clusters of 4 CTAs; each CTA puts its input in shared memory, cluster.sync(),
// rank 0 sums the 4 values through distributed shared memory (map_shared_rank: mapa and generic
// loads) and writes the cluster's sum; the final cluster.sync() keeps the others' shared memory
// alive until it has read it (FINAL).
const clusterReduce = `#include <cooperative_groups.h>
namespace cg = cooperative_groups;
extern "C" __global__ void __cluster_dims__(4, 1, 1) k(const float* in, float* out) {
	__shared__ float part;
	cg::cluster_group cluster = cg::this_cluster();
	unsigned rank = cluster.block_rank();
	if (threadIdx.x == 0) part = in[blockIdx.x];
	cluster.sync();
	if (rank == 0 && threadIdx.x == 0) {
		float s = 0;
		for (unsigned r = 0; r < cluster.num_blocks(); r++) s += *cluster.map_shared_rank(&part, r); // the read
		out[blockIdx.x / 4] = s;
	}
	FINAL
}
`

func launchCluster(t *testing.T, m *Module, grid int, in []float32, outN int) (*Buffer, Counts, error) {
	t.Helper()
	In, out := Float32Buffer("in", in), NewOutput("out", 4*outN, Poisoned)
	c, err := Launch(context.Background(), m, "k", LaunchConfig{Grid: [3]int{grid}, Block: [3]int{64},
		Params: []Arg{Ptr(In), Ptr(out)}, Buffers: []*Buffer{In, out}})
	return out, c, err
}

// A cluster reduction through distributed shared memory matches the CPU's sums; rank 0's 4 reads
// per cluster are DSMEM accesses.
func TestClusterReductionThroughDSMEM(t *testing.T) {
	m := compileSM90(t, strings.Replace(clusterReduce, "FINAL", "cluster.sync();", 1))
	in := make([]float32, 12)
	for i := range in {
		in[i] = float32(i*i) + 0.5
	}
	out, c, err := launchCluster(t, m, 12, in, 3)
	if err != nil {
		t.Fatal(err)
	}
	for ci, got := range out.Float32s() {
		want := in[4*ci] + in[4*ci+1] + in[4*ci+2] + in[4*ci+3]
		if got != want {
			t.Errorf("cluster %d sum = %v, want %v", ci, got, want)
		}
	}
	if c.DSMEMAccesses != 12 {
		t.Errorf("DSMEM accesses %d, want 12 (4 per cluster)", c.DSMEMAccesses)
	}
}

// Without the final cluster.sync() the other CTAs may exit before rank 0 reads their shared
// memory: a fault at the read, naming the exited rank.
func TestClusterReadOfExitedBlock(t *testing.T) {
	src := strings.Replace(clusterReduce, "FINAL", "", 1)
	m := compileSM90(t, src)
	_, _, err := launchCluster(t, m, 8, make([]float32, 8), 2)
	var f *Fault
	if !errors.As(err, &f) || f.Kind != "out of bounds" || !strings.Contains(f.Msg, "has exited") {
		t.Fatalf("got %v, want a fault for a read of an exited CTA's shared memory", err)
	}
	if want := "k.cu:" + strconv.Itoa(lineOf(t, src, "// the read")); f.Source != want {
		t.Errorf("fault at %s, want %s", f.Source, want)
	}
}

// The cluster special registers, mapa.shared::cluster with st.shared::cluster, and the split
// barrier.cluster.arrive/wait in inline asm: each CTA stores its value (plus 1000·clusterid) in
// the next rank's shared memory; after the barrier each reads what its predecessor stored.
func TestClusterRegistersAndRemoteStore(t *testing.T) {
	src := `
__device__ __forceinline__ unsigned sreg(int which) {
	unsigned v;
	if (which == 0) asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(v));
	else if (which == 1) asm volatile("mov.u32 %0, %%cluster_nctarank;" : "=r"(v));
	else asm volatile("mov.u32 %0, %%clusterid.x;" : "=r"(v));
	return v;
}
extern "C" __global__ void __cluster_dims__(2, 1, 1) k(const float* in, float* out) {
	__shared__ float got;
	unsigned rank = sreg(0), n = sreg(1), id = sreg(2);
	unsigned remote, local = (unsigned)__cvta_generic_to_shared(&got);
	asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(local), "r"((rank + 1) % n));
	if (threadIdx.x == 0) asm volatile("st.shared::cluster.f32 [%0], %1;" :: "r"(remote), "f"(in[blockIdx.x] + 1000.0f * id) : "memory");
	asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::: "memory"); // SYNC
	if (threadIdx.x == 0) out[blockIdx.x] = got;
	asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}
`
	m := compileSM90(t, src)
	in := []float32{1, 2, 3, 4, 5, 6}
	out, _, err := launchCluster(t, m, 6, in, 6)
	if err != nil {
		t.Fatal(err)
	}
	for b, got := range out.Float32s() {
		pred := b ^ 1 // clusters of 2: the other rank
		if want := in[pred] + 1000*float32(b/2); got != want {
			t.Errorf("block %d got %v, want %v", b, got, want)
		}
	}
}

// A thread that waits at barrier.cluster.wait while the other threads of its block wait at a
// __syncthreads() is a deadlock: a hang at the cluster wait's line.
func TestClusterBarrierHang(t *testing.T) {
	src := `
extern "C" __global__ void __cluster_dims__(2, 1, 1) k(const float* in, float* out) {
	if (threadIdx.x == 0) {
		asm volatile("barrier.cluster.arrive.aligned;\n\tbarrier.cluster.wait.aligned;" ::: "memory"); // WAIT
	}
	__syncthreads();
	out[blockIdx.x * 64 + threadIdx.x] = in[threadIdx.x];
}
`
	m := compileSM90(t, src)
	_, _, err := launchCluster(t, m, 2, make([]float32, 64), 128)
	var f *Fault
	if !errors.As(err, &f) || f.Kind != "hang" || !strings.Contains(f.Instr, "barrier.cluster.wait") {
		t.Fatalf("got %v, want a hang at the barrier.cluster.wait", err)
	}
	if want := "k.cu:" + strconv.Itoa(lineOf(t, src, "// WAIT")); f.Source != want {
		t.Errorf("hang at %s, want %s", f.Source, want)
	}
}

// The cluster shape is checked against the grid.
func TestClusterShapeChecked(t *testing.T) {
	m := compileSM90(t, strings.Replace(clusterReduce, "FINAL", "cluster.sync();", 1))
	if _, _, err := launchCluster(t, m, 6, make([]float32, 6), 2); err == nil || !strings.Contains(err.Error(), "whole number of clusters") {
		t.Errorf("a grid of 6 with clusters of 4: got %v, want an error", err)
	}
}

// Sampled execution (LaunchConfig.Only) runs the whole clusters of the blocks it names: block 5
// is in cluster 1 (blocks 4..7), whose sum is right; cluster 0 did not run.
func TestClusterOnlyRunsWholeClusters(t *testing.T) {
	m := compileSM90(t, strings.Replace(clusterReduce, "FINAL", "cluster.sync();", 1))
	in := []float32{1, 2, 3, 4, 5, 6, 7, 8}
	In, out := Float32Buffer("in", in), NewOutput("out", 8, Poisoned)
	c, err := Launch(context.Background(), m, "k", LaunchConfig{Grid: [3]int{8}, Block: [3]int{64}, Only: [][3]int{{5, 0, 0}},
		Params: []Arg{Ptr(In), Ptr(out)}, Buffers: []*Buffer{In, out}})
	if err != nil {
		t.Fatal(err)
	}
	if got := out.Float32s()[1]; got != 26 {
		t.Errorf("cluster 1 sum = %v, want 26", got)
	}
	if c.Blocks != 4 {
		t.Errorf("blocks run = %d, want the 4 of one cluster", c.Blocks)
	}
}

// cluster.sync() orders a block's own shared-memory accesses like __syncthreads(): thread 0
// writes, every thread reads after the cluster barrier, and no hazard is reported.
func TestClusterBarrierOrdersSharedAccesses(t *testing.T) {
	m := compileSM90(t, `#include <cooperative_groups.h>
namespace cg = cooperative_groups;
extern "C" __global__ void __cluster_dims__(2, 1, 1) k(const float* in, float* out) {
	__shared__ float v;
	if (threadIdx.x == 0) v = in[blockIdx.x];
	cg::this_cluster().sync();
	out[blockIdx.x * 64 + threadIdx.x] = v;
	cg::this_cluster().sync();
	if (threadIdx.x == 1) v = 0;
}
`)
	out, _, err := launchCluster(t, m, 2, []float32{3, 4}, 128)
	if err != nil {
		t.Fatal(err)
	}
	if got := out.Float32s(); got[5] != 3 || got[64+9] != 4 {
		t.Errorf("out[5], out[73] = %v, %v; want 3, 4", got[5], got[64+9])
	}
}

// A kernel with cluster.sync() launched without clusters is a cluster of one CTA: the barrier
// works as a __syncthreads().
func TestClusterOfOne(t *testing.T) {
	m := compileSM90(t, `#include <cooperative_groups.h>
namespace cg = cooperative_groups;
extern "C" __global__ void k(const float* in, float* out) {
	__shared__ float v;
	if (threadIdx.x == 0) v = in[blockIdx.x] + cg::this_cluster().num_blocks();
	cg::this_cluster().sync();
	out[blockIdx.x * 64 + threadIdx.x] = v;
}
`)
	out, _, err := launchCluster(t, m, 2, []float32{3, 4}, 128)
	if err != nil {
		t.Fatal(err)
	}
	if got := out.Float32s(); got[5] != 4 || got[64+9] != 5 {
		t.Errorf("out[5], out[73] = %v, %v; want 4, 5", got[5], got[64+9])
	}
}

// mbarrier.arrive.release.cluster.shared::cluster on a barrier mapped into rank 0: each CTA's
// thread 0 stores its value into rank 0's shared memory and arrives on rank 0's barrier (count:
// the cluster's 4 CTAs); rank 0 waits on its barrier and sums.
func TestClusterRemoteMbarrierArrive(t *testing.T) {
	m := compileSM90(t, mbarrierAsm+`
extern "C" __global__ void __cluster_dims__(4, 1, 1) k(const float* in, float* out) {
	__shared__ unsigned long long bar;
	__shared__ float vals[4];
	unsigned rank, rbar, rval;
	asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
	if (threadIdx.x == 0 && rank == 0) mb_init(smem(&bar), 4);
	asm volatile("barrier.cluster.arrive.aligned;\n\tbarrier.cluster.wait.aligned;" ::: "memory");
	asm volatile("mapa.shared::cluster.u32 %0, %1, 0;" : "=r"(rbar) : "r"(smem(&bar)));
	asm volatile("mapa.shared::cluster.u32 %0, %1, 0;" : "=r"(rval) : "r"(smem(&vals[rank])));
	if (threadIdx.x == 0) {
		asm volatile("st.shared::cluster.f32 [%0], %1;" :: "r"(rval), "f"(in[blockIdx.x]) : "memory");
		asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];" :: "r"(rbar) : "memory");
	}
	if (rank == 0) {
		mb_wait_parity(smem(&bar), 0);
		if (threadIdx.x == 0) out[blockIdx.x / 4] = vals[0] + vals[1] + vals[2] + vals[3];
	}
	asm volatile("barrier.cluster.arrive.aligned;\n\tbarrier.cluster.wait.aligned;" ::: "memory");
}
`)
	in := []float32{1, 2, 3, 4, 10, 20, 30, 40}
	out, _, err := launchCluster(t, m, 8, in, 2)
	if err != nil {
		t.Fatal(err)
	}
	if got := out.Float32s(); got[0] != 10 || got[1] != 100 {
		t.Errorf("sums = %v, want [10 100]", got)
	}
}

// A cluster reduction by atomics into rank 0's shared memory (cluster.map_shared_rank and atomicAdd:
// a generic atom on a mapped address) and by atom.shared::cluster in inline asm: every thread of the
// 4 CTAs adds 1, and rank 0 writes the cluster's count after cluster.sync().
func TestClusterAtomicsIntoRankZero(t *testing.T) {
	src := `#include <cooperative_groups.h>
namespace cg = cooperative_groups;
extern "C" __global__ void __cluster_dims__(4, 1, 1) k(const float* in, float* out) {
	__shared__ unsigned count, viaAsm;
	cg::cluster_group cluster = cg::this_cluster();
	if (threadIdx.x == 0) count = 0, viaAsm = 0;
	cluster.sync();
	atomicAdd(cluster.map_shared_rank(&count, 0), 1u);
	unsigned remote, local = (unsigned)__cvta_generic_to_shared(&viaAsm);
	asm volatile("mapa.shared::cluster.u32 %0, %1, 0;" : "=r"(remote) : "r"(local));
	asm volatile("red.shared::cluster.add.u32 [%0], 2;" :: "r"(remote) : "memory");
	cluster.sync();
	if (cluster.block_rank() == 0 && threadIdx.x == 0) out[blockIdx.x / 4] = count + 1000.0f * viaAsm;
}
`
	m := compileSM90(t, src)
	out, _, err := launchCluster(t, m, 8, make([]float32, 8), 2)
	if err != nil {
		t.Fatal(err)
	}
	for ci, got := range out.Float32s() {
		if want := float32(4*64 + 1000*2*4*64); got != want {
			t.Errorf("cluster %d: got %v, want %v (256 adds of 1 and 256 of 2)", ci, got, want)
		}
	}
}
