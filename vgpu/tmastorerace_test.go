package vgpu

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
)

// tmaStoreKernel: each of 2 blocks fills its 16×8 tile of floats, fences the generic proxy's
// writes before the async proxy's read, synchronises, and thread 0 stores the tile with TMA into
// its box of D, commits and waits for the group; then every thread overwrites the tile, and the
// block that counts last reads a word of the other block's box. Each bug leaves one step out.
const tmaStoreKernel = tmaAsm + `
extern "C" __global__ void k(const __grid_constant__ CUtensorMap dmap, float* D, float* out, unsigned* count, int bug) {
	__shared__ alignas(128) float tile[8 * 16];
	int t = threadIdx.x, b = blockIdx.x;
	for (int i = t; i < 128; i += 64) tile[i] = i + 1000 * b; // the write
	if (bug != 1) asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
	if (bug != 2) __syncthreads();
	if (t == 0) {
		asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];"
			:: "l"(&dmap), "r"(16 * b), "r"(0), "r"(smem(tile)) : "memory"); // the store
		asm volatile("cp.async.bulk.commit_group;" ::: "memory");
		if (bug == 4) out[2 + b] = D[16 * b + 1]; // the early read
		if (bug == 7) tile[16] = -2; // the second row
		if (bug == 6) asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
		else if (bug != 3) asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
	}
	if (bug != 5) __syncthreads();
	tile[t] = -1; // the overwrite
	if (t == 0) {
		__threadfence();
		if (atomicAdd(count, 1) == gridDim.x - 1) out[b] = D[16 * (1 - b) + 2]; // the other block's read
	}
}
`

// The TMA store's checks, each bug on its lines: the correct kernel stores both tiles with no
// finding; without fence.proxy.async the store reads generic-proxy writes (named); without the
// __syncthreads() before it, it reads other threads' writes (named); without any wait, the
// overwrite hits the source the store may still read; reading D's box before the wait, or the
// overwrite by other threads with no barrier after the wait, are hazards naming the store; with
// only wait_group.read before the fence and the counter, the last block's read of the other
// block's box is a global race naming the store (its writes are not complete at that fence); and
// thread 0's write of the tile's second row before its wait is a hazard when the box has 8 rows,
// none when it has 1.
func TestTMAStoreHazards(t *testing.T) {
	m := compileSM90(t, tmaStoreKernel)
	src := tmaStoreKernel
	line := func(s string) string { return "k.cu:" + strconv.Itoa(lineOf(t, src, s)) }
	launchBox := func(bug int32, rows int) ([]float32, error) {
		D, out, count := NewOutput("D", 32*8*4, Poisoned), NewOutput("out", 4*4, Zeroed), NewOutput("count", 4, Zeroed)
		tm := TensorMapArg(TensorMap{Buffer: D, ElemBytes: 4, Dims: []int{32, 8}, Strides: []int64{128}, Box: []int{16, rows}})
		_, err := Launch(context.Background(), m, "k", LaunchConfig{Grid: [3]int{2}, Block: [3]int{64},
			Params: []Arg{tm, Ptr(D), Ptr(out), Ptr(count), S32(bug)}, Buffers: []*Buffer{D, out, count}})
		return D.Float32s(), err
	}
	launch := func(bug int32) ([]float32, error) { return launchBox(bug, 8) }
	d, err := launch(0)
	if err != nil {
		t.Fatal(err)
	}
	for i, got := range d {
		b, x, y := i%32/16, i%16, i/32
		if want := float32(y*16 + x + 1000*b); got != want {
			t.Fatalf("D[%d] = %v, want %v", i, got, want)
		}
	}
	for _, tc := range []struct {
		bug              int32
		space, at, other string // the fault's space, its source line and the other access's
		msg              string
	}{
		{1, "shared", "// the store", "// the write", "fence.proxy.async"},
		{2, "shared", "// the store", "// the write", "read after write"},
		{3, "shared", "// the overwrite", "// the store", "cp.async.bulk.wait_group.read"},
		{4, "global", "// the early read", "// the store", "cp.async.bulk.wait_group"},
		{5, "shared", "// the overwrite", "// the store", "write after read"},
		{6, "global", "// the other block's read", "// the store", "TMA store"},
		{7, "shared", "// the second row", "// the store", "cp.async.bulk.wait_group.read"},
	} {
		_, err := launch(tc.bug)
		var f *Fault
		if !errors.As(err, &f) || f.Kind != "hazard" || f.Space != tc.space || f.Source != line(tc.at) ||
			f.OtherSource != line(tc.other) || !strings.Contains(f.Msg, tc.msg) {
			t.Errorf("bug %d: got %v (at %s, other %s), want a %s hazard at %q naming %q, saying %q", tc.bug, err,
				fSource(f), fOther(f), tc.space, tc.at, tc.other, tc.msg)
		}
	}
	// a one-row box is the store's whole source: the second row is not (though within the 128
	// bytes a swizzled box's rows span)
	if _, err := launchBox(7, 1); err != nil {
		t.Errorf("a write outside a one-row box before the wait: %v", err)
	}
}

func fSource(f *Fault) string {
	if f == nil {
		return ""
	}
	return f.Source
}

func fOther(f *Fault) string {
	if f == nil {
		return ""
	}
	return f.OtherSource
}

// dsmemIntoCopy: clusters of 2; rank 1's thread 0 copies 32 floats of in into its tile (1-D bulk
// copy), and while that copy is in flight (rank 1 waits on its mbarrier only after the
// cluster.sync()), rank 0 writes 32 floats into rank 1's other buffer through distributed shared
// memory; rank 1 then sums the two. With bug 1 the remote write goes into rank 1's tile, with bug 2
// rank 0 multicasts a copy into it.
const dsmemIntoCopy = tmaAsm + clusterSyncFn + `
extern "C" __global__ void __cluster_dims__(2, 1, 1) k(const float* in, float* out, int bug) {
	__shared__ alignas(128) float tile[32], other[32];
	__shared__ unsigned long long bar;
	unsigned rank, remote, t = threadIdx.x;
	asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
	if (t == 0) mb_init(smem(&bar), 1);
	cluster_sync();
	if (rank == 1 && t == 0) { mb_arrive_tx(smem(&bar), 128); bulk_1d(smem(tile), in, 128, smem(&bar)); }
	asm volatile("mapa.shared::cluster.u32 %0, %1, 1;" : "=r"(remote) : "r"(smem(bug == 1 ? &tile[t] : &other[t])));
	if (rank == 0) asm volatile("st.shared::cluster.f32 [%0], %1;" :: "r"(remote), "f"(float(t)) : "memory"); // the remote write
	if (rank == 0 && t == 0 && bug == 2)
		asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster [%0], [%1], 128, [%2], 2;"
			:: "r"(smem(tile)), "l"(in + 32), "r"(smem(&bar)) : "memory"); // the multicast
	cluster_sync();
	if (rank == 1) { mb_wait_parity(smem(&bar), 0); out[blockIdx.x / 2 * 32 + t] = tile[t] + other[t]; }
	cluster_sync();
}
`

// clusterSyncFn is cluster.sync() (barrier.cluster.arrive.release, wait.acquire).
const clusterSyncFn = `
__device__ __forceinline__ void cluster_sync() {
	asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}
`

// Another CTA's write into a CTA's TMA copy destination while the copy is in flight is a hazard at
// the remote store naming the copy, and so is a multicast copy into it; the remote write into
// another buffer is handed over by the cluster.sync() with no finding.
func TestDSMEMWriteIntoCopyInFlight(t *testing.T) {
	m := compileSM90(t, dsmemIntoCopy)
	line := func(s string) string { return "k.cu:" + strconv.Itoa(lineOf(t, dsmemIntoCopy, s)) }
	in := make([]float32, 64)
	for i := range in {
		in[i] = float32(i)*0.5 + 1
	}
	launch := func(bug int32) ([]float32, error) {
		In, out := Float32Buffer("in", in), NewOutput("out", 2*32*4, Poisoned)
		_, err := Launch(context.Background(), m, "k", LaunchConfig{Grid: [3]int{4}, Block: [3]int{32},
			Params: []Arg{Ptr(In), Ptr(out), S32(bug)}, Buffers: []*Buffer{In, out}})
		return out.Float32s(), err
	}
	out, err := launch(0)
	if err != nil {
		t.Fatal(err)
	}
	for i, got := range out {
		if want := in[i%32] + float32(i%32); got != want {
			t.Fatalf("out[%d] = %v, want %v", i, got, want)
		}
	}
	for bug, at := range map[int32]string{1: "// the remote write", 2: "// the multicast"} {
		_, err := launch(bug)
		var f *Fault
		if !errors.As(err, &f) || f.Kind != "hazard" || f.Source != line(at) || f.OtherLine == 0 || // the copy's line is bulk_1d's asm
			!strings.HasPrefix(f.OtherInstr, "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [") || !strings.Contains(f.Msg, "TMA copy in flight") {
			t.Errorf("bug %d: got %v, want a hazard at %q naming the copy", bug, err, at)
		}
	}
}
