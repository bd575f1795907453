// Command gen writes the micro-kernels of package simd in Go assembly with avo: run it through
// `go generate ./kernels/simd`. Each micro-kernel adds the product of a packed A panel (MR rows) and a
// packed B panel (NR columns), both k deep, to an MR×NR tile of C held in vector registers:
//
//	for p in 0..k: load B[p][0:NR] into two vectors; for each of the MR rows i:
//	    broadcast A[p][i] to every lane, then fused multiply-add it with both B vectors into row i's
//	    two accumulators
//
// and finally adds the accumulators to C (row stride ldc elements). MR = 6 rows × 2 vectors gives 12
// accumulators: enough independent FMAs to cover their latency (K. Goto and R. van de Geijn,
// "Anatomy of High-Performance Matrix Multiplication", ACM TOMS 34(3), 2008).
//
// It also writes the FMA-throughput loops that measure the CPU's arithmetic peak: FMAAcc independent
// accumulator vectors, each updated acc = a·acc + b once per iteration, with no loads or stores in the
// loop, so that nothing but the FMA units limits it (see fmaLoop).
package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// MR is the rows of every micro-kernel here.
const MR = 6

// FMAAcc is the number of independent accumulator vectors of the FMA-throughput loops. A core keeps
// latency × FMA units FMAs in flight: 4 cycles × 2 units = 8 on Intel since Skylake and on AMD Zen 4
// and 5 (Intel optimization reference manual; AMD software optimization guides for families 19h and
// 1Ah); 12 leaves headroom for a 5- or 6-cycle FMA and still fits the 16 registers AVX2 has, beside a
// and b. It must equal simd.FMAAcc (the package's tests would see the difference).
const FMAAcc = 12

type variant struct {
	name, typ, doc, isa string
	elem, lanes         int // bytes per element, elements per vector
	regs                func(i int) VecPhysical
	zero                func(r VecPhysical)
	bcast               func(m Mem, r VecPhysical)
	fma                 func(b, a, acc VecPhysical) // acc += a·b
	fma213              func(b, a, acc VecPhysical) // acc = a·acc + b
	load                func(m Mem, r VecPhysical)
	store               func(r VecPhysical, m Mem)
	addMem              func(m Mem, r VecPhysical) // r += m
}

func ymm(i int) VecPhysical {
	return []VecPhysical{Y0, Y1, Y2, Y3, Y4, Y5, Y6, Y7, Y8, Y9, Y10, Y11, Y12, Y13, Y14, Y15}[i]
}
func zmm(i int) VecPhysical {
	return []VecPhysical{Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7, Z8, Z9, Z10, Z11, Z12, Z13, Z14, Z15}[i]
}

func main() {
	variants := []variant{
		{name: "microF32AVX2", typ: "float32", elem: 4, lanes: 8, regs: ymm, isa: "AVX2 + FMA (ymm)", doc: "AVX2 + FMA, 6×16 float32",
			zero: func(r VecPhysical) { VXORPS(r, r, r) }, bcast: func(m Mem, r VecPhysical) { VBROADCASTSS(m, r) },
			fma:    func(b, a, acc VecPhysical) { VFMADD231PS(b, a, acc) },
			fma213: func(b, a, acc VecPhysical) { VFMADD213PS(b, a, acc) }, load: func(m Mem, r VecPhysical) { VMOVUPS(m, r) },
			store: func(r VecPhysical, m Mem) { VMOVUPS(r, m) }, addMem: func(m Mem, r VecPhysical) { VADDPS(m, r, r) }},
		{name: "microF64AVX2", typ: "float64", elem: 8, lanes: 4, regs: ymm, isa: "AVX2 + FMA (ymm)", doc: "AVX2 + FMA, 6×8 float64",
			zero: func(r VecPhysical) { VXORPD(r, r, r) }, bcast: func(m Mem, r VecPhysical) { VBROADCASTSD(m, r) },
			fma:    func(b, a, acc VecPhysical) { VFMADD231PD(b, a, acc) },
			fma213: func(b, a, acc VecPhysical) { VFMADD213PD(b, a, acc) }, load: func(m Mem, r VecPhysical) { VMOVUPD(m, r) },
			store: func(r VecPhysical, m Mem) { VMOVUPD(r, m) }, addMem: func(m Mem, r VecPhysical) { VADDPD(m, r, r) }},
		{name: "microF32AVX512", typ: "float32", elem: 4, lanes: 16, regs: zmm, isa: "AVX-512F (zmm)", doc: "AVX-512F, 6×32 float32",
			zero: func(r VecPhysical) { VPXORD(r, r, r) }, bcast: func(m Mem, r VecPhysical) { VBROADCASTSS(m, r) },
			fma:    func(b, a, acc VecPhysical) { VFMADD231PS(b, a, acc) },
			fma213: func(b, a, acc VecPhysical) { VFMADD213PS(b, a, acc) }, load: func(m Mem, r VecPhysical) { VMOVUPS(m, r) },
			store: func(r VecPhysical, m Mem) { VMOVUPS(r, m) }, addMem: func(m Mem, r VecPhysical) { VADDPS(m, r, r) }},
		{name: "microF64AVX512", typ: "float64", elem: 8, lanes: 8, regs: zmm, isa: "AVX-512F (zmm)", doc: "AVX-512F, 6×16 float64",
			zero: func(r VecPhysical) { VPXORQ(r, r, r) }, bcast: func(m Mem, r VecPhysical) { VBROADCASTSD(m, r) },
			fma:    func(b, a, acc VecPhysical) { VFMADD231PD(b, a, acc) },
			fma213: func(b, a, acc VecPhysical) { VFMADD213PD(b, a, acc) }, load: func(m Mem, r VecPhysical) { VMOVUPD(m, r) },
			store: func(r VecPhysical, m Mem) { VMOVUPD(r, m) }, addMem: func(m Mem, r VecPhysical) { VADDPD(m, r, r) }},
	}
	for _, v := range variants {
		micro(v)
	}
	for _, v := range variants {
		fmaLoop(v)
	}
	Generate()
}

func micro(v variant) {
	TEXT(v.name, NOSPLIT, fmt.Sprintf("func(k int, a, b, c *%s, ldc int)", v.typ))
	Doc(fmt.Sprintf("%s adds a packed A panel (%d rows) times a packed B panel (%d columns), k deep, to the", v.name, MR, 2*v.lanes),
		fmt.Sprintf("%d×%d tile of C at c (row stride ldc elements): %s.", MR, 2*v.lanes, v.doc))
	k := Load(Param("k"), GP64())
	a := Load(Param("a"), GP64())
	b := Load(Param("b"), GP64())
	c := Load(Param("c"), GP64())
	ldc := Load(Param("ldc"), GP64())
	SHLQ(Imm(map[int]uint64{4: 2, 8: 3}[v.elem]), ldc) // elements → bytes

	acc := func(i, j int) VecPhysical { return v.regs(2*i + j) }
	b0, b1, bc := v.regs(12), v.regs(13), v.regs(14)
	for i := range MR {
		v.zero(acc(i, 0))
		v.zero(acc(i, 1))
	}
	Label("loop")
	v.load(Mem{Base: b}, b0)
	v.load(Mem{Base: b, Disp: v.lanes * v.elem}, b1)
	for i := range MR {
		v.bcast(Mem{Base: a, Disp: i * v.elem}, bc)
		v.fma(b0, bc, acc(i, 0))
		v.fma(b1, bc, acc(i, 1))
	}
	ADDQ(Imm(uint64(MR*v.elem)), a)
	ADDQ(Imm(uint64(2*v.lanes*v.elem)), b)
	DECQ(k)
	JNZ(LabelRef("loop"))

	for i := range MR {
		v.addMem(Mem{Base: c}, acc(i, 0))
		v.store(acc(i, 0), Mem{Base: c})
		v.addMem(Mem{Base: c, Disp: v.lanes * v.elem}, acc(i, 1))
		v.store(acc(i, 1), Mem{Base: c, Disp: v.lanes * v.elem})
		ADDQ(ldc, c)
	}
	VZEROUPPER()
	RET()
}

// fmaLoop writes the FMA-throughput loop of variant v, named like its micro-kernel with "fma" for
// "micro" (fmaF32AVX2, …):
//
//	load FMAAcc vectors from acc; broadcast ab[0] (a) and ab[1] (b) to every lane
//	n times: acc[i] = a·acc[i] + b for each of the FMAAcc vectors (independent of each other)
//	store the vectors back to acc
//
// The loop body is FMAAcc register-to-register FMAs and a counted branch: no memory traffic, so its
// speed is the core's FMA throughput. Each iteration does FMAAcc × lanes FMAs, two FLOPs each.
func fmaLoop(v variant) {
	name := "fma" + v.name[len("micro"):]
	TEXT(name, NOSPLIT, fmt.Sprintf("func(n int, acc *%s, ab *%s)", v.typ, v.typ))
	Doc(fmt.Sprintf("%s sets acc[i] = a·acc[i] + b, n times over, for the %d×%d %s values at acc (%d", name, FMAAcc, v.lanes, v.typ, FMAAcc),
		fmt.Sprintf("independent vectors), with a = ab[0] and b = ab[1]: %d FMAs per iteration, %s.", FMAAcc*v.lanes, v.isa))
	n := Load(Param("n"), GP64())
	acc := Load(Param("acc"), GP64())
	ab := Load(Param("ab"), GP64())
	ra, rb := v.regs(FMAAcc), v.regs(FMAAcc+1)
	v.bcast(Mem{Base: ab}, ra)
	v.bcast(Mem{Base: ab, Disp: v.elem}, rb)
	for i := range FMAAcc {
		v.load(Mem{Base: acc, Disp: i * v.lanes * v.elem}, v.regs(i))
	}
	TESTQ(n, n)
	JZ(LabelRef("done"))
	Label("loop")
	for i := range FMAAcc {
		v.fma213(rb, ra, v.regs(i))
	}
	DECQ(n)
	JNZ(LabelRef("loop"))
	Label("done")
	for i := range FMAAcc {
		v.store(v.regs(i), Mem{Base: acc, Disp: i * v.lanes * v.elem})
	}
	VZEROUPPER()
	RET()
}
