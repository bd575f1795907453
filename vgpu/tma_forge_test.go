package vgpu

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// forgeKernel: thread 0 points m at a tensor map (MAKE: the parameter, a copy of it in global
// memory, or one it writes itself) and does one TMA copy (COPY) with it.
const forgeKernel = tmaAsm + `
extern "C" __global__ void k(const __grid_constant__ CUtensorMap tmap, unsigned* forge, float* out) {
	__shared__ alignas(128) float tile[8 * 16];
	__shared__ unsigned long long bar;
	if (threadIdx.x == 0) {
		mb_init(smem(&bar), 1);
		const CUtensorMap* m = &tmap;
		unsigned long long* f8 = (unsigned long long*)forge;
		MAKE
		__threadfence();
		COPY
	}
}
`

const (
	forgeLoad  = `mb_arrive_tx(smem(&bar), 512); tma_2d(smem(tile), m, 0, 0, smem(&bar)); mb_wait_parity(smem(&bar), 0); out[0] = tile[0];`
	forgeStore = `asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];" :: "l"(m), "r"(0), "r"(0), "r"(smem(tile)) : "memory");`
	// forged writes the layout of tma.go's tmapLayout over forge: 2-D, ELEM-byte elements, the
	// tensor in out, dims 16×8, box BOX0×BOX1, row stride 64 bytes.
	forged = `for (int i = 0; i < 32; i++) forge[i] = 0;
		forge[0] = 0x4d546776u; forge[1] = 2u | (ELEMu << 8); f8[1] = (unsigned long long)out;
		forge[4] = 16; forge[5] = 8; forge[9] = BOX0u; forge[10] = BOX1u; f8[7] = 64;
		m = (const CUtensorMap*)forge;`
)

// A tensor map is only a TensorMapArg parameter: a copy of one in global memory, or 128 bytes a
// kernel writes in the virtual GPU's layout (a plausible map, or one whose box would be 2^40
// elements of 16 bytes), is a "tensor map" fault at the copy, for loads and stores, before any
// box is read or allocated; the parameter itself works.
func TestTMAForgedTensorMapFaults(t *testing.T) {
	plausible := strings.NewReplacer("ELEM", "4", "BOX0", "16", "BOX1", "8").Replace(forged)
	huge := strings.NewReplacer("ELEM", "16", "BOX0", "1048576", "BOX1", "1048576").Replace(forged)
	copied := `for (int i = 0; i < 32; i++) forge[i] = ((const unsigned*)&tmap)[i]; m = (const CUtensorMap*)forge;`
	cases := []struct {
		name, make, copy string
		wantFault        bool
	}{
		{"the parameter", "", forgeLoad, false},
		{"a copy in global memory", copied, forgeLoad, true},
		{"a plausible forged map", plausible, forgeLoad, true},
		{"a forged map with a huge box", huge, forgeLoad, true},
		{"a forged map to store with", plausible, forgeStore, true},
		{"a forged map with a huge box to store with", huge, forgeStore, true},
	}
	// One module, kernel k<i> for case i: one compile with the CUDA headers, not one a case.
	var src strings.Builder
	src.WriteString(tmaAsm)
	for i, tc := range cases {
		src.WriteString(strings.NewReplacer("MAKE", tc.make, "COPY", tc.copy, "void k(", fmt.Sprintf("void k%d(", i)).Replace(forgeKernel[len(tmaAsm):]))
	}
	m := compileSM90(t, src.String())
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			A := Float32Buffer("A", make([]float32, 16*8))
			forge, out := NewOutput("forge", 128, Poisoned), NewOutput("out", 512, Poisoned)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a hang fails, not blocks
			defer cancel()
			tm := TensorMapArg(TensorMap{Buffer: A, ElemBytes: 4, Dims: []int{16, 8}, Strides: []int64{64}, Box: []int{16, 8}})
			_, err := Launch(ctx, m, fmt.Sprintf("k%d", i), LaunchConfig{Grid: [3]int{1}, Block: [3]int{32},
				Params: []Arg{tm, Ptr(forge), Ptr(out)}, Buffers: []*Buffer{A, forge, out}})
			var f *Fault
			switch {
			case !tc.wantFault && err != nil:
				t.Fatalf("got %v, want no error", err)
			case tc.wantFault && (!errors.As(err, &f) || f.Kind != "tensor map" || !strings.Contains(f.Msg, "the launcher made")):
				t.Fatalf("got %v, want a \"tensor map\" fault", err)
			}
		})
	}
}

// decodeTmap accepts what encode writes and rejects each field encode would not write.
func TestDecodeTmapChecksEveryField(t *testing.T) {
	A := NewBuffer("A", 16*8*4)
	tm := TensorMap{Buffer: A, ElemBytes: 4, Dims: []int{16, 8}, Strides: []int64{64}, Box: []int{16, 8}}
	good, err := tm.encode(2 << windowShift)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := decodeTmap(good, 2); !ok {
		t.Fatal("decodeTmap rejects what encode wrote")
	}
	for _, tc := range []struct {
		name string
		at   int
		b    byte
	}{
		{"rank 6", 4, 6}, {"element size 0", 5, 0}, {"element size 16", 5, 16}, {"swizzle 3", 6, 3},
		{"base in no buffer", 13, 0x7f}, {"dimension 0 of size 0", 16, 0}, {"box 0", 36, 0},
		{"box 512", 37, 2}, {"stride 65", 56, 65}, {"inner box of 20 bytes", 36, 5},
	} {
		b := append([]byte(nil), good...)
		b[tc.at] = tc.b
		if tc.name == "dimension 0 of size 0" {
			b[17] = 0
		}
		if _, ok := decodeTmap(b, 2); ok {
			t.Errorf("%s: decodeTmap accepts it", tc.name)
		}
	}
}

// A box larger than the block's shared memory faults before its bytes are read.
func TestTMABoxLargerThanSharedFaults(t *testing.T) {
	m := compileSM90(t, strings.NewReplacer("MAKE", "", "COPY", forgeLoad).Replace(forgeKernel))
	A := Float32Buffer("A", make([]float32, 256*256))
	forge, out := NewOutput("forge", 128, Poisoned), NewOutput("out", 512, Poisoned)
	tm := TensorMapArg(TensorMap{Buffer: A, ElemBytes: 4, Dims: []int{256, 256}, Strides: []int64{1024}, Box: []int{256, 256}})
	_, err := Launch(context.Background(), m, "k", LaunchConfig{Grid: [3]int{1}, Block: [3]int{32},
		Params: []Arg{tm, Ptr(forge), Ptr(out)}, Buffers: []*Buffer{A, forge, out}})
	var f *Fault
	if !errors.As(err, &f) || f.Kind != "out of bounds" || !strings.Contains(f.Msg, "262144 bytes, more than the block's") {
		t.Fatalf("got %v, want an out-of-bounds fault naming the box's 262144 bytes", err)
	}
}

// The bytes of bulk copies in flight are bounded by twice the block's shared memory: one thread
// issuing 1 KiB copies into a 1 KiB tile without waiting faults at the third.
func TestTMABytesInFlightBounded(t *testing.T) {
	m := compileSM90(t, tmaAsm+`
extern "C" __global__ void k(const float* src, float* out) {
	__shared__ alignas(128) float tile[256];
	__shared__ unsigned long long bar;
	if (threadIdx.x == 0) {
		mb_init(smem(&bar), 1);
		mb_arrive_tx(smem(&bar), 16 * sizeof(tile));
		for (int i = 0; i < 16; i++) bulk_1d(smem(tile), src, sizeof(tile), smem(&bar));
		mb_wait_parity(smem(&bar), 0);
		out[0] = tile[0];
	}
}
`)
	src, out := Float32Buffer("src", make([]float32, 256)), NewOutput("out", 4, Poisoned)
	_, err := Launch(context.Background(), m, "k", LaunchConfig{Grid: [3]int{1}, Block: [3]int{32},
		Params: []Arg{Ptr(src), Ptr(out)}, Buffers: []*Buffer{src, out}, NoRacecheck: true}) // with it, the second copy is a hazard
	var f *Fault
	if !errors.As(err, &f) || f.Kind != "unsupported" || !strings.Contains(f.Msg, "bytes of bulk copies in flight") {
		t.Fatalf("got %v, want an unsupported fault about the bytes in flight", err)
	}
}
