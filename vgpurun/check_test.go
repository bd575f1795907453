package vgpurun

import (
	"bytes"
	"context"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/gpuplayground/playground/gpu"
	"github.com/gpuplayground/playground/numeric"
	"github.com/gpuplayground/playground/vgpu"
)

// dots gives each entry, in the order asked, the product summed in k order, bit for bit, though
// it takes the entries column by column (entries repeated and in shared columns included).
func TestDotsAreEntrywiseProducts(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	n, p := 100, 103 // A and B padded, as a launch's; more columns than dots gathers at once
	in := &launchInputs{n: n, p: p, kind: elementsOf("float64"), a: make([]byte, 8*p*p), b: make([]byte, 8*p*p)}
	a, b := make([]float64, n*n), make([]float64, n*n)
	for i := range n {
		for k := range n {
			a[i*n+k], b[i*n+k] = rng.NormFloat64(), rng.NormFloat64()
			in.kind.put(in.a[8*(i*p+k):], a[i*n+k:i*n+k+1])
			in.kind.put(in.b[8*(i*p+k):], b[i*n+k:i*n+k+1])
		}
	}
	entries := make([][2]int, 600)
	for c := range entries {
		entries[c] = [2]int{rng.IntN(n), rng.IntN(n / (1 + 3*(c%2)))} // every column, and many in a quarter of them
	}
	got, err := in.dots(context.Background(), entries)
	if err != nil {
		t.Fatal(err)
	}
	for c, e := range entries {
		var want float64
		for k := range n {
			want += a[e[0]*n+k] * b[k*n+e[1]]
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

// inputs lays out what numeric.Random draws for A, then for B, rounded to the precision the kernel
// reads, as the kernel reads it (float32 and float64 as IEEE numbers, bf16 and f16 as 16-bit words,
// padded with zeros to p×p), reads back exactly the rounded draw, and hands the kernel copies.
func TestInputsAreTheRoundedDraw(t *testing.T) {
	n, p := 5, 8
	for _, c := range []struct {
		precision string
		round     func(float64) float64
		bytes     func(float64) []byte
	}{
		{"float32", func(v float64) float64 { return float64(float32(v)) },
			func(v float64) []byte { return binary.LittleEndian.AppendUint32(nil, math.Float32bits(float32(v))) }},
		{"float64", func(v float64) float64 { return v },
			func(v float64) []byte { return binary.LittleEndian.AppendUint64(nil, math.Float64bits(v)) }},
		{"bf16", func(v float64) float64 { return float64(gpu.FromBF16(gpu.BF16(float32(v)))) },
			func(v float64) []byte { return binary.LittleEndian.AppendUint16(nil, gpu.BF16(float32(v))) }},
		{"f16", func(v float64) float64 { return float64(float16From(gpu.F16(float32(v)))) },
			func(v float64) []byte { return binary.LittleEndian.AppendUint16(nil, gpu.F16(float32(v))) }},
	} {
		in := inputs(rand.New(rand.NewPCG(9, 10)), n, p, c.precision)
		drawn := rand.New(rand.NewPCG(9, 10))
		for _, m := range []struct {
			name string
			x    []byte
			buf  *vgpu.Buffer
			at   func(i, k int) float64
		}{{"A", in.a, in.A, in.aAt}, {"B", in.b, in.B, in.bAt}} {
			want := make([]float64, n*n)
			numeric.Random(drawn, want)
			var layout []byte
			for i := range p {
				for k := range p {
					v := 0.0
					if i < n && k < n {
						v = want[i*n+k]
						if got := m.at(i, k); math.Float64bits(got) != math.Float64bits(c.round(v)) {
							t.Errorf("%s %s[%d][%d] = %v, want %v", c.precision, m.name, i, k, got, c.round(v))
						}
					}
					layout = append(layout, c.bytes(v)...)
				}
			}
			if !bytes.Equal(m.x, layout) || !bytes.Equal(m.buf.Data, layout) || &m.buf.Data[0] == &m.x[0] {
				t.Errorf("%s %s: drawn bytes %x, buffer %x (shared: %v), want %x", c.precision, m.name, m.x, m.buf.Data, &m.buf.Data[0] == &m.x[0], layout)
			}
		}
	}
}
