package vgpurun

import (
	"bytes"
	"context"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/gpuplayground/playground/gpu"
	"github.com/gpuplayground/playground/gpumodel"
	"github.com/gpuplayground/playground/numeric"
	pt "github.com/gpuplayground/playground/problems/problemstest"
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

// A sampled launch's check takes as written the entries of C whose bytes are not the poison's,
// whatever their value (a NaN or an infinity a kernel wrote included), and those whose bytes are the
// poison's but which a store wrote (C's marks; TestWrittenNaNIsChecked): not the untouched poison.
func TestWrittenAreTheEntriesStored(t *testing.T) {
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
		nans := 0
		for i := range n {
			for j := range n {
				entry := in.C.Data[elem*(i*p+j) : elem*(i*p+j+1)]
				if slices.ContainsFunc(entry, func(b byte) bool { return b != vgpu.Poison }) {
					want = append(want, [2]int{i, j})
					if math.IsNaN(in.at(i, j)) {
						nans++
					}
				}
			}
		}
		if got := in.written(); len(want) < 20 || nans == 0 || !slices.Equal(got, want) {
			t.Errorf("%d-byte C: written %v, want %v (%d NaNs)", elem, got, want, nans)
		}
	}
}

// A NaN a learner's kernel writes in a sampled launch is checked, and fails it: a transpose that
// writes a NaN in one entry of seven, above the problem's FullN, is wrong, with a NaN error (it
// passed when a NaN in the output was taken for the poison of an entry no block wrote).
func TestWrittenNaNIsChecked(t *testing.T) {
	compile, tr := nvrtcTranspose(t)
	src := strings.Replace(pt.NaiveTranspose, "= in[r * cols + c];", "= (r + c) % 7 ? in[r * cols + c] : __int_as_float(0x7fc00000);", 1)
	n := (tr.FullN/16 + 5) * 16
	r, err := Run(context.Background(), Request{Kernel: "custom", PTX: compile(src), Entry: "k", Problem: tr,
		Grid: pt.Tiles(16)(n), Block: [3]int{16, 16, 1}, N: n, DType: "float32", GPU: gpumodel.GPUs[0]})
	if err != nil || !r.Sampled || r.OK || !math.IsNaN(r.RelError) || r.Checked != SampledBlocks*256 {
		t.Errorf("a transpose writing NaN at n=%d: ok %v, sampled %v, error %v over %d entries, %v; want wrong, sampled, NaN over %d", n, r.OK, r.Sampled, r.RelError, r.Checked, err, SampledBlocks*256)
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
