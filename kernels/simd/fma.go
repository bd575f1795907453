package simd

import (
	"fmt"
	"unsafe"
)

// FMAAcc is the number of independent accumulators (vectors; scalars for the Go loop) of every
// FMA-throughput loop. A core keeps FMA latency × FMA units operations in flight, 4 × 2 = 8 on Intel
// cores since Skylake and AMD Zen 4 and 5; 12 leaves headroom for a longer latency.
const FMAAcc = 12

// FMALoop is an FMA-throughput loop for element type T: it updates FMAAcc independent accumulator
// vectors acc = a·acc + b, over and over, in registers, with no memory traffic in the loop, so that
// only the core's arithmetic units limit its speed. Timed on every core it measures the CPU's peak
// GFLOP/s for T: the figure a GEMM kernel can approach but not pass.
type FMALoop[T ~float32 | ~float64] struct {
	// Name is the instruction set, e.g. "AVX-512 FMA" or "AVX2 FMA"; the portable loop is
	// "Go scalar multiply-add".
	Name string
	// Bits is the width of one vector register (512, 256), or of one element for the scalar Go loop;
	// Lanes is the elements per vector (1 for the Go loop).
	Bits, Lanes int
	// Vector is false for the portable Go loop: one element at a time, and on amd64 a separate
	// multiply and add (Go fuses a·x + b into one FMA instruction on arm64, ppc64 and s390x, and on
	// amd64 only when built with GOAMD64=v3 or later). It measures scalar arithmetic, a small fraction
	// of a vector unit's peak: a floor, not the CPU's peak.
	Vector bool

	fn func(n int, acc, ab *T)
}

// Len is the number of elements of acc that Run updates: FMAAcc × Lanes.
func (f FMALoop[T]) Len() int { return FMAAcc * f.Lanes }

// FLOPs is the arithmetic of n iterations: FMAAcc × Lanes multiply-adds per iteration, 2 FLOPs each.
func (f FMALoop[T]) FLOPs(n int) float64 { return 2 * float64(n) * float64(f.Len()) }

// Run sets acc[i] = a·acc[i] + b, n times over, for each of the first Len() elements of acc (each
// element on its own, in order: the result does not depend on the vector width), and returns the
// FLOPs it did. acc must hold at least Len() elements; n may be 0.
func (f FMALoop[T]) Run(n int, acc []T, a, b T) float64 {
	if len(acc) < f.Len() {
		panic(fmt.Sprintf("simd: %s FMA loop needs %d accumulators, got %d", f.Name, f.Len(), len(acc)))
	}
	if n <= 0 {
		return 0
	}
	ab := [2]T{a, b}
	f.fn(n, &acc[0], &ab[0])
	return f.FLOPs(n)
}

// GoFMAF32 and GoFMAF64 are the portable loops, for machines with neither AVX2 + FMA nor AVX-512.
var (
	GoFMAF32 = FMALoop[float32]{Name: "Go scalar multiply-add", Bits: 32, Lanes: 1, fn: goFMA[float32]}
	GoFMAF64 = FMALoop[float64]{Name: "Go scalar multiply-add", Bits: 64, Lanes: 1, fn: goFMA[float64]}
)

// BestFMAF32 and BestFMAF64 return the widest FMA loop this CPU supports: AVX-512, then AVX2 + FMA,
// then the portable Go one. (The widest is not always the fastest: AMD Zen 4 splits a 512-bit FMA
// into two 256-bit halves. A measurement times every loop FMALoops lists.)
func BestFMAF32() FMALoop[float32] { f32, _ := FMALoops(); return f32[len(f32)-1] }
func BestFMAF64() FMALoop[float64] { _, f64 := FMALoops(); return f64[len(f64)-1] }

// goFMA is the portable loop: FMAAcc scalar accumulators the compiler keeps in registers.
func goFMA[T ~float32 | ~float64](n int, acc, ab *T) {
	s := unsafe.Slice(acc, FMAAcc)
	a, b := *ab, *(*T)(unsafe.Add(unsafe.Pointer(ab), unsafe.Sizeof(*ab)))
	x0, x1, x2, x3, x4, x5 := s[0], s[1], s[2], s[3], s[4], s[5]
	x6, x7, x8, x9, x10, x11 := s[6], s[7], s[8], s[9], s[10], s[11]
	for range n {
		x0 = a*x0 + b
		x1 = a*x1 + b
		x2 = a*x2 + b
		x3 = a*x3 + b
		x4 = a*x4 + b
		x5 = a*x5 + b
		x6 = a*x6 + b
		x7 = a*x7 + b
		x8 = a*x8 + b
		x9 = a*x9 + b
		x10 = a*x10 + b
		x11 = a*x11 + b
	}
	s[0], s[1], s[2], s[3], s[4], s[5] = x0, x1, x2, x3, x4, x5
	s[6], s[7], s[8], s[9], s[10], s[11] = x6, x7, x8, x9, x10, x11
}
