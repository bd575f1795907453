package vgpu

import (
	"encoding/binary"
	"math"
	"math/bits"
)

// The warp-level tensor-core instructions below the wmma API: ldmatrix (PTX ISA 8.x, section
// 9.7.14.5.15 "ldmatrix") and mma.sync (section 9.7.14.5.14 "mma", with the fragment layouts of
// section 9.7.14.5.8 "Matrix Fragments for mma.m16n8k16 with floating point type" and 9.7.14.5.7
// for m16n8k8). Unlike wmma's, these layouts are specified by the ISA, so a kernel may build or
// read fragments with ordinary loads, shuffles and stores, and the virtual GPU follows them exactly.

// ldmatrixOp is a decoded ldmatrix.sync.aligned.m8n8.{x1,x2,x4}{.trans}{.shared}.b16.
type ldmatrixOp struct {
	num   int  // matrices: 1, 2 or 4
	trans bool // each matrix transposed on its way to the registers
	dst   [4]int32
}

func (d *decoder) decodeLdmatrix(in *inst, m mods, s pinst) error {
	op := &ldmatrixOp{}
	shape := false
	for _, w := range m.words {
		switch w {
		case "sync", "aligned":
		case "m8n8":
			shape = true
		case "x1", "x2", "x4":
			op.num = int(w[1] - '0')
		case "trans":
			op.trans = true
		default:
			return d.errf("unknown modifier .%s (ldmatrix.sync.aligned.m8n8.{x1,x2,x4}{.trans}.shared.b16 is supported)", w)
		}
	}
	if !shape || op.num == 0 || len(m.types) != 1 || m.types[0].name != "b16" {
		return d.errf("only ldmatrix.sync.aligned.m8n8.{x1,x2,x4}{.trans}.shared.b16 is supported")
	}
	if m.hasSp && m.space != spShared {
		return d.errf("ldmatrix reads .shared memory only")
	}
	if err := d.nargs(s, 2); err != nil {
		return err
	}
	regs := []operand{s.args[0]}
	if s.args[0].kind == oVec {
		regs = s.args[0].elems
	}
	if len(regs) != op.num {
		return d.errf(".x%d needs %d destination registers, found %d", op.num, op.num, len(regs))
	}
	for i, o := range regs {
		r, err := d.dst(o)
		if err != nil {
			return err
		}
		op.dst[i] = r
	}
	if s.args[1].kind != oAddr {
		return d.errf("expects an address operand [..]")
	}
	in.space = spGeneric // no state space: a generic address (of shared memory)
	if m.hasSp {
		in.space = m.space
	}
	if err := d.address(in, s.args[1], in.space); err != nil {
		return err
	}
	in.ldm = op
	in.size, in.nvec = 16, 1
	in.class = ClassLoad
	in.exec = execLdmatrix
	return nil
}

// execLdmatrix loads num 8×8 matrices of 16-bit elements: lane 8i+r gives the shared address of
// row r of matrix i (16 bytes, 16-byte aligned; lanes past 8·num give none), and lane 4r+c receives
// in destination register i the elements (r, 2c) and (r, 2c+1) of matrix i, the first in the low
// half; with .trans, the elements (2c, r) and (2c+1, r). Counts: one shared request whose
// wavefronts are, per matrix, the most of its 8 rows' 16-byte pieces that fall in one bank group
// (a matrix's 128 bytes fill the 32 banks once when its rows' banks differ: ideally 1 wavefront
// per matrix; rows 128 bytes apart all hit the same 4 banks: 8).
func execLdmatrix(w *warp, in *inst, m uint32) {
	wmmaConverged(w, in, m)
	c, op := w.c, in.ldm
	lanes := uint32(1)<<(8*op.num) - 1
	if op.num == 4 {
		lanes = fullMask
	}
	var rows [4][8][16]byte
	var sm uint32
	for t := lanes; t != 0; t &= t - 1 {
		l := bits.TrailingZeros32(t)
		addr := uint64(in.off)
		if in.a >= 0 {
			addr += w.regs[in.a][l]
		}
		mem, sp, off := c.resolve(w, in, l, addr, 16, in.space, accLoad)
		if sp != spShared {
			c.fault(&Fault{Kind: "unsupported", Msg: "ldmatrix of ." + spaceNames[sp] + " memory (only .shared)"}, w, l, in)
		}
		copy(rows[l/8][l%8][:], mem)
		w.addr[l] = off
		sm |= 1 << l
	}
	if c.sFull < len(c.swritten) {
		c.initShared(w, in, sm, 16, accLoad)
	}
	if c.L.racecheck {
		c.racecheck(w, in, sm, 16, false)
	}
	ic := &c.wk.counts[in.self]
	ic.sReq++
	for i := range op.num {
		s := c.sortBuf[:32]
		for r := range 8 {
			for j := range 4 {
				s[4*r+j] = w.addr[8*i+r]>>2 + uint64(j)
			}
		}
		wv, id := bankPass(s)
		ic.sWave += wv
		ic.sIdeal += id
	}
	for i := range op.num {
		d := &w.regs[op.dst[i]]
		for l := range warpSize {
			r, col := l/4, 2*(l%4)
			var lo, hi uint16
			if op.trans {
				lo = binary.LittleEndian.Uint16(rows[i][col][2*r:])
				hi = binary.LittleEndian.Uint16(rows[i][col+1][2*r:])
			} else {
				lo = binary.LittleEndian.Uint16(rows[i][r][2*col:])
				hi = binary.LittleEndian.Uint16(rows[i][r][2*col+2:])
			}
			d[l] = uint64(lo) | uint64(hi)<<16
		}
	}
}

// mmaOp is a decoded mma.sync.aligned.{m16n8k16,m16n8k8}.row.col.f32.{f16,bf16}.{f16,bf16}.f32.
type mmaOp struct {
	k     int    // 16 or 8
	etype string // "f16" or "bf16"
	d, c  [4]int32
	a     [4]int32 // k/4 registers
	b     [2]int32 // k/8 registers
}

func (d *decoder) decodeMma(in *inst, m mods, s pinst) error {
	op := &mmaOp{}
	var row, col bool
	for _, w := range m.words {
		switch w {
		case "sync", "aligned":
		case "m16n8k16":
			op.k = 16
		case "m16n8k8":
			op.k = 8
		case "row":
			row = true
		case "col":
			col = true
		default:
			return d.errf("unknown modifier .%s (mma.sync.aligned.m16n8k16 or m16n8k8 .row.col with f32 accumulators and f16 or bf16 inputs is supported)", w)
		}
	}
	ts := m.types
	if op.k == 0 || !row || !col || len(ts) != 4 || ts[0].name != "f32" || ts[3].name != "f32" ||
		ts[1].name != ts[2].name || (ts[1].name != "f16" && ts[1].name != "bf16") {
		return d.errf("only mma.sync.aligned.m16n8k16 and m16n8k8 .row.col.f32.{f16,bf16}.{f16,bf16}.f32 are supported")
	}
	op.etype = ts[1].name
	if err := d.nargs(s, 4); err != nil {
		return err
	}
	b32 := parseType("b32")
	want := []int{4, op.k / 4, op.k / 8, 4}
	dst := [][]int32{op.d[:], op.a[:], op.b[:], op.c[:]}
	for i, o := range s.args {
		if o.kind != oVec || len(o.elems) != want[i] {
			return d.errf("operand %d must be a vector of %d registers", i+1, want[i])
		}
		for j, e := range o.elems {
			var r int32
			var err error
			if i == 0 {
				r, err = d.dst(e)
			} else {
				r, err = d.src(e, b32)
			}
			if err != nil {
				return err
			}
			dst[i][j] = r
		}
	}
	in.mma = op
	in.class = ClassTensor
	in.flops = uint16(2 * 16 * 8 * op.k / warpSize)
	in.exec = execMma
	return nil
}

// half16 is 16-bit element h (0 low, 1 high) of lane l's register r.
func half16(w *warp, r int32, l, h int) uint64 {
	return w.regs[r][l] >> (16 * h) & 0xffff
}

// execMma is D = A·B + C for a 16×k A (row-major fragments), a k×8 B (column-major fragments) and
// 16×8 f32 C and D, with the fragment layouts of the PTX ISA: lane l = 4g+t holds
//
//	A: register j (k16: j = 0..3; k8: 0..1), half h: row g + 8·(j&1), column 2t + h + 8·(j>>1)
//	B: register j (k16: 0..1; k8: 0), half h: row 2t + h + 8·j, column g
//	C, D: register j (0..3): row g + 8·(j>>1), column 2t + (j&1)
//
// The products of the 16-bit inputs are exact in f32; they are accumulated in f32 in k order
// starting from C (the hardware's order is unspecified by the ISA).
func execMma(w *warp, in *inst, m uint32) {
	wmmaConverged(w, in, m)
	op := in.mma
	bf16 := op.etype == "bf16"
	var A [16][16]float32
	var Bt [8][16]float32 // B transposed: Bt[n][k] = B[k][n], each dot product's two rows contiguous
	var C [16][8]float32
	for l := range warpSize {
		g, t := l/4, l%4
		for j := range op.k / 4 {
			for h := range 2 {
				A[g+8*(j&1)][2*t+h+8*(j>>1)] = halfF32(half16(w, op.a[j], l, h), bf16)
			}
		}
		for j := range op.k / 8 {
			for h := range 2 {
				Bt[g][2*t+h+8*j] = halfF32(half16(w, op.b[j], l, h), bf16)
			}
		}
		for j := range 4 {
			C[g+8*(j>>1)][2*t+(j&1)] = math.Float32frombits(uint32(w.regs[op.c[j]][l]))
		}
	}
	for l := range warpSize {
		g, t := l/4, l%4
		for j := range 4 {
			i, n := g+8*(j>>1), 2*t+(j&1)
			acc := C[i][n]
			a := A[i][:op.k]
			b := Bt[n][:len(a)]
			for k, x := range a {
				acc += float32(x * b[k])
			}
			w.regs[op.d[j]][l] = uint64(math.Float32bits(acc))
		}
	}
}
