// Package problems is the table of what a learner's `cuda` cell may compute: for each problem its
// kernel's fixed signature, its buffers and int parameters as functions of the cell's size n, how
// its inputs are drawn, its float64 CPU reference and check, and its FLOPs and minimal DRAM bytes.
// It is the one place a problem is defined: the virtual GPU (package vgpurun), the GPU worker
// (package gpu) and the cell's spec (package cells/cuda) all read it.
package problems

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
)

// Elem is the element type of a buffer.
type Elem int

const (
	// Real is the cell's dtype: float (4 bytes) for float32, double (8 bytes) for float64.
	Real Elem = iota
	// Uint32 is unsigned int (4 bytes), whatever the dtype.
	Uint32
)

// Buffer is one pointer parameter of a problem's kernel.
type Buffer struct {
	// Name is the kernel parameter's name (in, out, bins, …): faults and errors name it.
	Name string
	Elem Elem
	// Len is the buffer's length in elements for size n.
	Len func(n int) int
	// Matrix says the buffer is a row-major n×n matrix (faults name an element's row and column).
	Matrix bool
	// Output says the kernel writes it (exactly one buffer of a problem is the output).
	Output bool
	// Zeroed says the output is all zeros before every launch (the kernel accumulates into it);
	// otherwise its entries are undefined until the kernel writes them.
	Zeroed bool
}

// Problem is one row of the table.
type Problem struct {
	// Name is the `problem:` key's value.
	Name string
	// Summary says what the kernel computes, with shapes.
	Summary string
	// Signature is the kernel's parameter list in CUDA C++ (float is the cell's dtype).
	Signature string
	Buffers   []Buffer
	// ParamNames and Params are the int parameters after the pointers, from n.
	ParamNames []string
	Params     func(n int) []int32
	// FLOPs is the arithmetic of one launch at n; Bytes its minimal DRAM traffic (each input read
	// once, the output written once) with elem bytes per Real element.
	FLOPs func(n int) float64
	Bytes func(n, elem int) float64
	// Rate is the natural rate of the problem: "GFLOP/s" (FLOPs per second, compute-bound) or
	// "GB/s" (Bytes per second, memory-bound).
	Rate string
	// MaxN is the largest n a cell may ask for (the server's memory limit also applies).
	MaxN int
	// FullN is the largest n the virtual GPU runs in full; up to SampledN it runs SampledBlocks
	// blocks (only where each block writes its own outputs, so that a sample is checkable: matmul,
	// transpose, softmax); SampledN == FullN where blocks depend on each other (atomics into one
	// output, a scan's carries), and larger n are refused there.
	FullN, SampledN int
	// Instructions is a rough count of the thread instructions a simple kernel executes at n, for
	// estimating an emulation's time before it runs.
	Instructions func(n int) float64

	fill  func(rng *rand.Rand, n int, dtype string, bufs [][]float64)
	ref   func(ctx context.Context, n int, in [][]float64) (want, scale []float64, err error)
	refAt func(n int, in [][]float64, i int) float64
	tol   func(n int, p Precision, dtype string) float64
	// frobenius: the error is ‖got − want‖_F / ‖want‖_F; otherwise the largest |got − want| / scale.
	frobenius bool
	// fullRef is the n above which ref is too costly and the check uses refAt on a sample.
	fullRef int
}

// Default is the problem of a cell without `problem:`.
const Default = "matmul"

// All is the table, in the order the docs list it.
func All() []*Problem {
	return []*Problem{matmul(), transpose(), reduce(), histogram(), softmax(), scan(), attention()}
}

// Lookup finds the problem called name; its error lists the valid names.
func Lookup(name string) (*Problem, error) {
	var names []string
	for _, p := range All() {
		if p.Name == name {
			return p, nil
		}
		names = append(names, p.Name)
	}
	return nil, fmt.Errorf("unknown problem %q; use one of %s", name, strings.Join(names, ", "))
}

// Out is the index of the output buffer.
func (p *Problem) Out() int {
	for i, b := range p.Buffers {
		if b.Output {
			return i
		}
	}
	panic("problems: " + p.Name + " has no output")
}

// ElemBytes is the bytes of one element of b in dtype ("float32", "float64").
func (b Buffer) ElemBytes(dtype string) int {
	if b.Elem == Real && dtype == "float64" {
		return 8
	}
	return 4
}

// InputTypes names the element types of p's input buffers in dtype, each once, in buffer order:
// "float32" for a matmul in float32, "uint32" for a histogram (its input is unsigned int whatever
// the dtype), "float64 and uint32" for a mix.
func (p *Problem) InputTypes(dtype string) string {
	var names []string
	for _, b := range p.Buffers {
		name := dtype
		if b.Elem == Uint32 {
			name = "uint32"
		}
		if !b.Output && !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	return strings.Join(names, " and ")
}

// CType is the C++ type of b's elements in dtype: "float", "double" or "unsigned int".
func (b Buffer) CType(dtype string) string {
	switch {
	case b.Elem == Uint32:
		return "unsigned int"
	case dtype == "float64":
		return "double"
	}
	return "float"
}

// Memory is the bytes of all the buffers at n.
func (p *Problem) Memory(n int, dtype string) int64 {
	var total int64
	for _, b := range p.Buffers {
		total += int64(b.Len(n)) * int64(b.ElemBytes(dtype))
	}
	return total
}

// Prototype is the kernel's declaration as a learner writes it: extern "C" __global__ void entry(…),
// with double for float in float64.
func (p *Problem) Prototype(entry, dtype string) string {
	sig := p.Signature
	if dtype == "float64" {
		sig = strings.ReplaceAll(sig, "float*", "double*")
	}
	return fmt.Sprintf("extern \"C\" __global__ void %s%s", entry, sig)
}

// RateOf is the problem's natural rate (in Rate's unit) of one launch at n taking seconds.
func (p *Problem) RateOf(n, elem int, seconds float64) float64 {
	if seconds <= 0 {
		return 0
	}
	if p.Rate == "GB/s" {
		return p.Bytes(n, elem) / seconds / 1e9
	}
	return p.FLOPs(n) / seconds / 1e9
}

// Inputs draws fresh inputs for size n and returns every buffer's host values in float64, in the
// buffers' order: the inputs exactly representable in their element type (float values rounded to
// dtype); nil for the output, which the caller allocates on its side (Buffer.Bytes).
func (p *Problem) Inputs(rng *rand.Rand, n int, dtype string) [][]float64 {
	bufs := make([][]float64, len(p.Buffers))
	for i, b := range p.Buffers {
		if !b.Output {
			bufs[i] = make([]float64, b.Len(n))
		}
	}
	p.fill(rng, n, dtype, bufs)
	return bufs
}

// Bytes is the size of b at n in dtype.
func (b Buffer) Bytes(n int, dtype string) int { return b.Len(n) * b.ElemBytes(dtype) }

// uniform fills xs with numbers in [lo, hi) that are never zero, rounded to dtype.
func uniform(rng *rand.Rand, xs []float64, lo, hi float64, dtype string) {
	for i := range xs {
		v := 0.0
		for v == 0 {
			v = lo + (hi-lo)*rng.Float64()
		}
		if dtype != "float64" {
			v = float64(float32(v))
		}
		xs[i] = v
	}
}

// MaxVector is the largest n of the vector problems (reduce, histogram, scan): 2^24 entries, 64 MiB
// of float32, the most whose sums wholes keeps exact in float32.
const MaxVector = 1 << 24

// wholeBound is the bound b of the wholes drawn for n entries: 4, halved while b·n > 2^24, at
// least 1 (so b·n ≤ 2^24 for every n ≤ MaxVector).
func wholeBound(n int) int {
	b := 4
	for b > 1 && b*n > 1<<24 {
		b /= 2
	}
	return b
}

// wholes fills xs with whole numbers in [−b, b), b = wholeBound(len(xs)): any partial sum of them,
// in any order, is a whole number of magnitude at most b·n, exact in a precision of t significand
// bits while b·n ≤ 2^t (float32: every n ≤ MaxVector).
func wholes(rng *rand.Rand, xs []float64) {
	b := wholeBound(len(xs))
	for i := range xs {
		xs[i] = float64(rng.IntN(2*b) - b)
	}
}

// exactSums reports whether every partial sum of n of the wholes is exact in p.
func exactSums(n int, p Precision) bool {
	return float64(wholeBound(n))*float64(n) <= math.Ldexp(1, p.Bits)
}

func square(n int) int { return n * n }
func one(int) int      { return 1 }
func same(n int) int   { return n }

// Encode lays xs out as b's elements in dtype, little-endian, as the kernel reads them.
func (b Buffer) Encode(xs []float64, dtype string) []byte {
	size := b.ElemBytes(dtype)
	out := make([]byte, size*len(xs))
	for i, x := range xs {
		switch {
		case b.Elem == Uint32:
			binary.LittleEndian.PutUint32(out[4*i:], uint32(x))
		case size == 8:
			binary.LittleEndian.PutUint64(out[8*i:], math.Float64bits(x))
		default:
			binary.LittleEndian.PutUint32(out[4*i:], math.Float32bits(float32(x)))
		}
	}
	return out
}

// Decode reads b's elements in dtype from data (Encode's layout) into float64.
func (b Buffer) Decode(data []byte, dtype string) []float64 {
	size := b.ElemBytes(dtype)
	out := make([]float64, len(data)/size)
	for i := range out {
		switch {
		case b.Elem == Uint32:
			out[i] = float64(binary.LittleEndian.Uint32(data[4*i:]))
		case size == 8:
			out[i] = math.Float64frombits(binary.LittleEndian.Uint64(data[8*i:]))
		default:
			out[i] = float64(math.Float32frombits(binary.LittleEndian.Uint32(data[4*i:])))
		}
	}
	return out
}
