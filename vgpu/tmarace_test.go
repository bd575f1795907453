package vgpu

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
)

// tmaMulticastAsm adds the multicast 2-D copy (PTX ISA 8.x, "cp.async.bulk.tensor") to tmaAsm.
const tmaMulticastAsm = tmaAsm + `
__device__ __forceinline__ void tma_2d_mc(unsigned dst, const CUtensorMap* m, int x, int y, unsigned bar, unsigned short mask) {
	asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster [%0], [%1, {%2, %3}], [%4], %5;"
		:: "r"(dst), "l"(m), "r"(x), "r"(y), "r"(bar), "h"(mask) : "memory");
}
`

// tmaMulticast: clusters of 2 CTAs; each CTA's thread 0 initialises its barrier and announces the
// box's 512 bytes (with bug set, rank 1 only arrives), cluster.sync(), rank 0's thread 0 multicasts the 16×8 box at
// (16·cluster, 0) to both CTAs (mask 0b11), and every CTA waits on its own barrier, writes its
// tile out, and waits for the cluster before exiting.
const tmaMulticast = tmaMulticastAsm + `
extern "C" __global__ void __cluster_dims__(2, 1, 1) k(const __grid_constant__ CUtensorMap tmap, float* out, int bug) {
	__shared__ alignas(128) float tile[8 * 16];
	__shared__ unsigned long long bar;
	unsigned rank;
	asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
	if (threadIdx.x == 0) {
		mb_init(smem(&bar), 1);
		if (rank == 0 || !bug) mb_arrive_tx(smem(&bar), 512); else mb_arrive(smem(&bar));
	}
	asm volatile("barrier.cluster.arrive.aligned;\n\tbarrier.cluster.wait.aligned;" ::: "memory");
	if (rank == 0 && threadIdx.x == 0) tma_2d_mc(smem(tile), &tmap, 16 * (blockIdx.x / 2), 0, smem(&bar), 3); // the multicast
	mb_wait_parity(smem(&bar), 0);
	for (int i = threadIdx.x; i < 128; i += blockDim.x) out[blockIdx.x * 128 + i] = tile[i]; // the read
	asm volatile("barrier.cluster.arrive.aligned;\n\tbarrier.cluster.wait.aligned;" ::: "memory");
}
`

func launchMulticast(t *testing.T, m *Module, bug bool) ([]float32, []float32, Counts, error) {
	t.Helper()
	const W, H = 40, 20
	a := make([]float32, W*H)
	for i := range a {
		a[i] = float32(i + 1)
	}
	A, out := Float32Buffer("A", a), NewOutput("out", 4*128*4, Poisoned)
	tm := TensorMapArg(TensorMap{Buffer: A, ElemBytes: 4, Dims: []int{W, H}, Strides: []int64{4 * W}, Box: []int{16, 8}})
	c, err := Launch(context.Background(), m, "k", LaunchConfig{Grid: [3]int{4}, Block: [3]int{64},
		Params: []Arg{tm, Ptr(out), S32(map[bool]int32{true: 1}[bug])}, Buffers: []*Buffer{A, out}})
	return a, out.Float32s(), c, err
}

// A multicast TMA copy lands in the shared memory of every CTA of its mask, at the same offset,
// and completes its bytes on each one's barrier: both CTAs of each cluster hold the cluster's box.
// Each copy is one TMA request reading its 512 bytes once and writing them twice.
//
// With bug, rank 1 arrives on its barrier without announcing the multicast's bytes: its phase
// completes before the tile lands, and its read of the tile races with the copy rank 0 issued (a
// hazard naming both, whichever of the two the schedule meets first).
func TestTMAMulticast(t *testing.T) {
	m := compileSM90(t, tmaMulticast)
	a, got, c, err := launchMulticast(t, m, false)
	if err != nil {
		t.Fatal(err)
	}
	for b := range 4 {
		for r := range 8 {
			for col := range 16 {
				if g, want := got[b*128+r*16+col], a[r*40+16*(b/2)+col]; g != want {
					t.Fatalf("block %d tile[%d][%d] = %v, want %v", b, r, col, g, want)
				}
			}
		}
	}
	if c.TMARequests != 2 || c.TMABytes != 2*512 || c.TMAMulticastBytes != 2*2*512 {
		t.Errorf("TMA requests %d, bytes %d, multicast bytes %d; want 2, 1024, 2048", c.TMARequests, c.TMABytes, c.TMAMulticastBytes)
	}
	_, _, _, err = launchMulticast(t, m, true)
	var f *Fault
	if !errors.As(err, &f) || f.Kind != "hazard" || !strings.Contains(f.Instr+f.OtherInstr, "multicast::cluster") ||
		!strings.Contains(f.Instr+f.OtherInstr, "ld.shared") || f.Line == 0 || f.OtherLine == 0 {
		t.Fatalf("got %v, want a hazard between the multicast and rank 1's read", err)
	}
}

// im2col is refused naming the instruction and the mode; a multicast needs its CTA mask.
func TestTMAIm2colUnsupported(t *testing.T) {
	_, err := decodeOne(t, "cp.async.bulk.tensor.3d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes [%r1], [%rd1, {%r2, %r3, %r4}], [%r5], {%r6}")
	var u *UnsupportedError
	if !errors.As(err, &u) || !strings.Contains(err.Error(), "im2col") || !strings.Contains(err.Error(), "cp.async.bulk.tensor") {
		t.Errorf("im2col: %v, want an UnsupportedError naming cp.async.bulk.tensor and im2col", err)
	}
	_, err = decodeOne(t, "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster [%r1], [%rd1, {%r2, %r3}], [%r5]")
	if !errors.As(err, &u) || !strings.Contains(err.Error(), "ctaMask") {
		t.Errorf("multicast without a mask: %v, want an error asking for the ctaMask", err)
	}
	if _, err := decodeOne(t, "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster [%r1], [%rd1], %r2, [%r3], %r4"); err != nil {
		t.Errorf("a 1-D multicast: %v", err)
	}
}

// reissueKernel: a block loads a tile with TMA, every thread reads its element, and thread 0
// refills the tile with the next box (with sync set, after the __syncthreads() that orders the
// reads before the refill).
const reissueKernel = tmaAsm + `
extern "C" __global__ void k(const __grid_constant__ CUtensorMap tmap, float* out, int sync) {
	__shared__ alignas(128) float tile[8 * 16];
	__shared__ unsigned long long bar;
	int t = threadIdx.x;
	if (t == 0) mb_init(smem(&bar), 1);
	__syncthreads();
	if (t == 0) { mb_arrive_tx(smem(&bar), 512); tma_2d(smem(tile), &tmap, 0, 0, smem(&bar)); }
	mb_wait_parity(smem(&bar), 0);
	float v = tile[t]; // the read
	if (sync) __syncthreads();
	if (t == 0) { mb_arrive_tx(smem(&bar), 512); tma_2d(smem(tile), &tmap, 16, 0, smem(&bar)); } // the refill
	mb_wait_parity(smem(&bar), 1);
	out[(blockIdx.y * gridDim.x + blockIdx.x) * 128 + t] = v + tile[t];
}
`

// A TMA copy into a tile other threads read with no barrier between is a write-after-read hazard
// at the copy, naming a read; with __syncthreads() between, the two tiles add up.
func TestTMARefillRacesWithReaders(t *testing.T) {
	m := compileSM90(t, reissueKernel)
	a := make([]float32, 40*8)
	for i := range a {
		a[i] = float32(i + 1)
	}
	A := Float32Buffer("A", a)
	tm := TensorMapArg(TensorMap{Buffer: A, ElemBytes: 4, Dims: []int{40, 8}, Strides: []int64{160}, Box: []int{16, 8}})
	launch := func(sync int32) (*Buffer, error) {
		out := NewOutput("out", 128*4, Poisoned)
		_, err := Launch(context.Background(), m, "k", LaunchConfig{Grid: [3]int{1}, Block: [3]int{64},
			Params: []Arg{tm, Ptr(out), S32(sync)}, Buffers: []*Buffer{A, out}})
		return out, err
	}
	_, err := launch(0)
	var f *Fault
	if !errors.As(err, &f) || f.Kind != "hazard" || !strings.Contains(f.Msg, "write after read") ||
		!strings.Contains(f.Instr, "cp.async.bulk.tensor") || f.OtherSource != "k.cu:"+strconv.Itoa(lineOf(t, reissueKernel, "// the read")) {
		t.Fatalf("got %v, want a write-after-read hazard at the refill naming the read", err)
	}
	out, err := launch(1)
	if err != nil {
		t.Fatal(err)
	}
	for i, got := range out.Float32s()[:64] {
		if want := a[i/16*40+i%16] + a[i/16*40+16+i%16]; got != want {
			t.Fatalf("out[%d] = %v, want %v", i, got, want)
		}
	}
}

// A multicast pipeline over one stage: rank 0's thread 0 multicasts 3 boxes in turn into both
// CTAs' tile, each after waiting on its "empty" barrier, on which every thread of both CTAs arrives
// (remotely, mbarrier.arrive.release.cluster.shared::cluster) once it has read the tile. The refill
// of rank 1's tile is ordered after rank 1's reads by that barrier's phase: no hazard, and each
// thread's sum over the boxes matches the CPU.
func TestTMAMulticastPipeline(t *testing.T) {
	m := compileSM90(t, tmaMulticastAsm+`
extern "C" __global__ void __cluster_dims__(2, 1, 1) k(const __grid_constant__ CUtensorMap tmap, float* out) {
	__shared__ alignas(128) float tile[8 * 16];
	__shared__ unsigned long long full, empty;
	unsigned rank, remote, t = threadIdx.x;
	asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
	if (t == 0) { mb_init(smem(&full), 1); mb_init(smem(&empty), 2 * 32); }
	asm volatile("barrier.cluster.arrive.aligned;\n\tbarrier.cluster.wait.aligned;" ::: "memory");
	asm volatile("mapa.shared::cluster.u32 %0, %1, 0;" : "=r"(remote) : "r"(smem(&empty)));
	float acc = 0;
	for (int it = 0; it < 3; it++) {
		if (t == 0) {
			mb_arrive_tx(smem(&full), 512);
			if (rank == 0) {
				if (it > 0) mb_wait_parity(smem(&empty), (it - 1) & 1);
				tma_2d_mc(smem(tile), &tmap, 16 * it, 0, smem(&full), 3);
			}
		}
		mb_wait_parity(smem(&full), it & 1);
		acc += tile[t] * (it + 1);
		asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];" :: "r"(remote) : "memory");
	}
	out[blockIdx.x * 32 + t] = acc;
	asm volatile("barrier.cluster.arrive.aligned;\n\tbarrier.cluster.wait.aligned;" ::: "memory");
}
`)
	a := make([]float32, 48*8)
	for i := range a {
		a[i] = float32(i%7) - 3
	}
	A, out := Float32Buffer("A", a), NewOutput("out", 2*32*4, Poisoned)
	tm := TensorMapArg(TensorMap{Buffer: A, ElemBytes: 4, Dims: []int{48, 8}, Strides: []int64{192}, Box: []int{16, 8}})
	c, err := Launch(context.Background(), m, "k", LaunchConfig{Grid: [3]int{2}, Block: [3]int{32},
		Params: []Arg{tm, Ptr(out)}, Buffers: []*Buffer{A, out}})
	if err != nil {
		t.Fatal(err)
	}
	for i, got := range out.Float32s() {
		var want float32
		for it := range 3 {
			tt := i % 32
			want += a[tt/16*48+16*it+tt%16] * float32(it+1)
		}
		if got != want {
			t.Fatalf("out[%d] = %v, want %v", i, got, want)
		}
	}
	if c.TMAMulticastBytes != 3*2*512 {
		t.Errorf("multicast bytes %d, want %d", c.TMAMulticastBytes, 3*2*512)
	}
}
