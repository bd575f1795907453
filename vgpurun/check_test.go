package vgpurun

import (
	"context"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/gpuplayground/playground/vgpu"
)

// dots gives each entry, in the order asked, the product summed in k order, bit for bit, though
// it takes the entries column by column (entries repeated and in shared columns included).
func TestDotsAreEntrywiseProducts(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	n := 37
	in := &launchInputs{n: n, a: make([]float64, n*n), b: make([]float64, n*n)}
	for i := range in.a {
		in.a[i], in.b[i] = rng.NormFloat64(), rng.NormFloat64()
	}
	entries := make([][2]int, 300)
	for c := range entries {
		entries[c] = [2]int{rng.IntN(n), rng.IntN(n / 4)}
	}
	got, err := in.dots(context.Background(), entries)
	if err != nil {
		t.Fatal(err)
	}
	for c, e := range entries {
		var want float64
		for k := range n {
			want += in.a[e[0]*n+k] * in.b[k*n+e[1]]
		}
		if math.Float64bits(got[c]) != math.Float64bits(want) {
			t.Fatalf("entry %d (%d, %d): got %v, want %v", c, e[0], e[1], got[c], want)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := in.dots(ctx, entries); err == nil {
		t.Error("a cancelled check returned no error")
	}
}

// written finds the entries of C's n×n that are not NaN, as reading each one does, in C of
// float32 and of float64 padded to p: poison left around single written entries and pairs, NaNs
// and infinities a kernel wrote, and numbers in the padding (not C's).
func TestWrittenAreTheEntriesNotNaN(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	values := []float64{1.5, -0, math.Inf(1), math.Inf(-1), math.NaN(), -math.NaN()}
	for _, elem := range []int{4, 8} {
		n, p := 13, 16
		in := &launchInputs{n: n, p: p, elem: elem, C: vgpu.NewOutput("C", elem*p*p, vgpu.Poisoned)}
		for range 60 {
			k, v := rng.IntN(p*p), values[rng.IntN(len(values))]
			if elem == 8 {
				binary.LittleEndian.PutUint64(in.C.Data[8*k:], math.Float64bits(v))
			} else {
				binary.LittleEndian.PutUint32(in.C.Data[4*k:], math.Float32bits(float32(v)))
			}
		}
		var want [][2]int
		for i := range n {
			for j := range n {
				if !math.IsNaN(in.at(i, j)) {
					want = append(want, [2]int{i, j})
				}
			}
		}
		if got := in.written(); len(want) < 20 || !slices.Equal(got, want) {
			t.Errorf("%d-byte C: written %v, want %v", elem, got, want)
		}
	}
}
