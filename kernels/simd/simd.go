package simd

import "unsafe"

// Micro is a micro-kernel for element type T: it adds the product of a packed A panel (MR rows, k
// deep: a[p*MR+i]) and a packed B panel (NR columns: b[p*NR+j]) to the MR×NR tile of C at c, whose
// rows are ldc elements apart. k must be at least 1.
type Micro[T ~float32 | ~float64] struct {
	// Name says which instructions it uses, e.g. "AVX-512 6×32".
	Name   string
	MR, NR int
	Fn     func(k int, a, b, c *T, ldc int)
}

// GoF32 and GoF64 are the portable micro-kernels: 4×4 register tiles in plain Go, for machines
// without AVX2 and for the `packed` rung of the ladder.
var (
	GoF32 = Micro[float32]{Name: "Go 4×4", MR: 4, NR: 4, Fn: goMicro[float32]}
	GoF64 = Micro[float64]{Name: "Go 4×4", MR: 4, NR: 4, Fn: goMicro[float64]}
)

// BestF32 and BestF64 return the fastest micro-kernel this CPU supports: AVX-512, then AVX2 + FMA,
// then the portable Go one.
func BestF32() Micro[float32] { return bestF32() }
func BestF64() Micro[float64] { return bestF64() }

// goMicro is the portable 4×4 micro-kernel: sixteen accumulators the compiler keeps in registers.
func goMicro[T ~float32 | ~float64](k int, a, b, c *T, ldc int) {
	ap := unsafe.Slice(a, 4*k)
	bp := unsafe.Slice(b, 4*k)
	var c00, c01, c02, c03, c10, c11, c12, c13, c20, c21, c22, c23, c30, c31, c32, c33 T
	for len(ap) >= 4 && len(bp) >= 4 { // shrinking the slices lets the compiler drop bounds checks
		a0, a1, a2, a3 := ap[0], ap[1], ap[2], ap[3]
		b0, b1, b2, b3 := bp[0], bp[1], bp[2], bp[3]
		ap, bp = ap[4:], bp[4:]
		c00 += a0 * b0
		c01 += a0 * b1
		c02 += a0 * b2
		c03 += a0 * b3
		c10 += a1 * b0
		c11 += a1 * b1
		c12 += a1 * b2
		c13 += a1 * b3
		c20 += a2 * b0
		c21 += a2 * b1
		c22 += a2 * b2
		c23 += a2 * b3
		c30 += a3 * b0
		c31 += a3 * b1
		c32 += a3 * b2
		c33 += a3 * b3
	}
	cs := unsafe.Slice(c, 3*ldc+4)
	r0, r1, r2, r3 := cs[0:4:4], cs[ldc:ldc+4:ldc+4], cs[2*ldc:2*ldc+4:2*ldc+4], cs[3*ldc:3*ldc+4:3*ldc+4]
	r0[0], r0[1], r0[2], r0[3] = r0[0]+c00, r0[1]+c01, r0[2]+c02, r0[3]+c03
	r1[0], r1[1], r1[2], r1[3] = r1[0]+c10, r1[1]+c11, r1[2]+c12, r1[3]+c13
	r2[0], r2[1], r2[2], r2[3] = r2[0]+c20, r2[1]+c21, r2[2]+c22, r2[3]+c23
	r3[0], r3[1], r3[2], r3[3] = r3[0]+c30, r3[1]+c31, r3[2]+c32, r3[3]+c33
}
