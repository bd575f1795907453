package vgpu

import (
	"errors"
	"strconv"
	"strings"
	"testing"
)

// dsmemHandoff: clusters of 2 CTAs; rank 1's threads store WRITTEN of the 64 floats into rank 0's
// buffer through distributed shared memory (mapa, st.shared::cluster), SYNC orders them (or not)
// before rank 0's threads read the buffer, and a final cluster.sync() keeps rank 0's memory alive.
const dsmemHandoff = `
extern "C" __global__ void __cluster_dims__(2, 1, 1) k(const float* in, float* out) {
	__shared__ float buf[64];
	unsigned rank, remote, t = threadIdx.x;
	asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
	asm volatile("mapa.shared::cluster.u32 %0, %1, 0;" : "=r"(remote) : "r"((unsigned)__cvta_generic_to_shared(&buf[t])));
	if (rank == 1 && t < WRITTEN) asm volatile("st.shared::cluster.f32 [%0], %1;" :: "r"(remote), "f"(in[blockIdx.x / 2 * 64 + t]) : "memory"); // the remote write
	SYNC
	if (rank == 0) out[blockIdx.x / 2 * 64 + t] = buf[t]; // the owner's read
	asm volatile("barrier.cluster.arrive.aligned;\n\tbarrier.cluster.wait.aligned;" ::: "memory");
}
`

func dsmemSource(written int, sync string) string {
	return strings.NewReplacer("WRITTEN", strconv.Itoa(written), "SYNC", sync).Replace(dsmemHandoff)
}

const clusterSync = `asm volatile("barrier.cluster.arrive.aligned;\n\tbarrier.cluster.wait.aligned;" ::: "memory");`

// A remote write ordered before the owner's read by cluster.sync() hands the data over with no
// hazard and no uninitialised-read note (the remote stores mark the owner's bytes written); with
// only __syncthreads() between (which orders nothing for the other CTA) the owner's read is a
// hazard naming rank 1's write; bytes no CTA wrote are an uninitialised read at the owner's read.
func TestDSMEMHandoffChecked(t *testing.T) {
	in := make([]float32, 128)
	for i := range in {
		in[i] = float32(i) + 0.25
	}
	m := compileSM90(t, dsmemSource(64, clusterSync))
	out, c, err := launchCluster(t, m, 4, in, 128)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Notes) != 0 {
		t.Errorf("notes %+v, want none: rank 1 wrote every byte rank 0 reads", c.Notes)
	}
	for i, got := range out.Float32s() {
		if got != in[i] {
			t.Fatalf("out[%d] = %v, want %v", i, got, in[i])
		}
	}

	src := dsmemSource(64, "__syncthreads();")
	_, _, err = launchCluster(t, compileSM90(t, src), 4, in, 128)
	var f *Fault
	if !errors.As(err, &f) || f.Kind != "hazard" || !strings.Contains(f.Msg, "read after write") || !strings.Contains(f.Msg, "CTA rank 1") ||
		f.Source != "k.cu:"+strconv.Itoa(lineOf(t, src, "// the owner's read")) || f.OtherSource != "k.cu:"+strconv.Itoa(lineOf(t, src, "// the remote write")) {
		t.Fatalf("got %v, want a read-after-write hazard at the owner's read naming rank 1's remote write", err)
	}

	src = dsmemSource(32, clusterSync)
	_, c, err = launchCluster(t, compileSM90(t, src), 4, in, 128)
	if err != nil {
		t.Fatal(err)
	}
	if want := "k.cu:" + strconv.Itoa(lineOf(t, src, "// the owner's read")); len(c.Notes) != 1 || c.Notes[0].Kind != "uninitialised read" || c.Notes[0].Source != want {
		t.Errorf("notes %+v, want one uninitialised read at %s", c.Notes, want)
	}
}

// Rank 0 reading rank 1's buffer, which no thread wrote, through distributed shared memory is an
// uninitialised read at the remote load.
func TestDSMEMRemoteUninitialisedRead(t *testing.T) {
	src := `
extern "C" __global__ void __cluster_dims__(2, 1, 1) k(const float* in, float* out) {
	__shared__ float buf[64];
	unsigned remote, t = threadIdx.x;
	float v = 0;
	asm volatile("mapa.shared::cluster.u32 %0, %1, 1;" : "=r"(remote) : "r"((unsigned)__cvta_generic_to_shared(&buf[t])));
	if (blockIdx.x % 2 == 0) asm volatile("ld.shared::cluster.f32 %0, [%1];" : "=f"(v) : "r"(remote) : "memory"); // the remote read
	out[blockIdx.x * 64 + t] = v;
	asm volatile("barrier.cluster.arrive.aligned;\n\tbarrier.cluster.wait.aligned;" ::: "memory");
}
`
	_, c, err := launchCluster(t, compileSM90(t, src), 2, make([]float32, 2), 128)
	if err != nil {
		t.Fatal(err)
	}
	if want := "k.cu:" + strconv.Itoa(lineOf(t, src, "// the remote read")); len(c.Notes) != 1 || c.Notes[0].Kind != "uninitialised read" || c.Notes[0].Source != want {
		t.Errorf("notes %+v, want one uninitialised read at %s", c.Notes, want)
	}
}
