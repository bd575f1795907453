package vgpu

import "math"

// lop3, bfi and half-precision arithmetic.

// decodeLop3: lop3.b32 d, a, b, c, immLut (PTX ISA 8.x, section 9.7.8.6 "lop3"): bit i of d is bit
// (a_i·4 + b_i·2 + c_i) of immLut, the truth table of F(0xF0, 0xCC, 0xAA).
func (d *decoder) decodeLop3(in *inst, m mods, s pinst, t ptype) error {
	if t.name != "b32" || len(m.words) != 0 {
		return d.errf("only lop3.b32 (without a predicate result) is supported")
	}
	if err := d.nargs(s, 5); err != nil {
		return err
	}
	if s.args[4].kind != oImm {
		return d.errf("immLut must be a constant")
	}
	lut := s.args[4].bits & 0xff
	var err error
	if in.d, err = d.dst(s.args[0]); err != nil {
		return err
	}
	for i, r := range []*int32{&in.a, &in.b, &in.c} {
		if *r, err = d.src(s.args[1+i], t); err != nil {
			return err
		}
	}
	in.f = func(a, b, c uint64) uint64 {
		var r uint64
		for i := range uint(8) {
			if lut>>i&1 == 0 {
				continue
			}
			x, y, z := a, b, c
			if i&4 == 0 {
				x = ^x
			}
			if i&2 == 0 {
				y = ^y
			}
			if i&1 == 0 {
				z = ^z
			}
			r |= x & y & z
		}
		return r & 0xffffffff
	}
	in.exec = execALU
	return nil
}

// decodeBfi: bfi.b32/.b64 f, a, b, c, d (PTX ISA 8.x, section 9.7.1.21 "bfi"): insert the low d
// bits of a into b at bit c (c and d taken modulo 256; bits past the top are dropped).
func (d *decoder) decodeBfi(in *inst, m mods, s pinst, t ptype) error {
	if (t.name != "b32" && t.name != "b64") || len(m.words) != 0 {
		return d.errf("bfi takes .b32 or .b64")
	}
	if err := d.nargs(s, 5); err != nil {
		return err
	}
	var err error
	if in.d, err = d.dst(s.args[0]); err != nil {
		return err
	}
	u32 := parseType("u32")
	for i, r := range []*int32{&in.a, &in.b, &in.c, &in.vec[0]} {
		tt := t
		if i >= 2 {
			tt = u32
		}
		if *r, err = d.src(s.args[1+i], tt); err != nil {
			return err
		}
	}
	size := uint64(t.bits())
	mask := sizeMask(t.size)
	in.exec = func(w *warp, in *inst, msk uint32) {
		a, b, c, ln := &w.regs[in.a], &w.regs[in.b], &w.regs[in.c], &w.regs[in.vec[0]]
		dst := w.dst(in.d, msk)
		for l := range warpSize {
			pos, n := c[l]&0xff, ln[l]&0xff
			r := b[l] & mask
			if n != 0 && pos < size {
				n = min(n, size-pos)
				field := (uint64(1)<<n - 1) << pos
				if n == 64 {
					field = math.MaxUint64
				}
				r = r&^field | a[l]<<pos&field
			}
			dst[l] = r
		}
		w.commit(in.d, msk)
	}
	return nil
}

// decodeHalf: add, sub, mul, fma (.rn, the default; .sat), neg, abs, min and max on f16, bf16 and
// their x2 packed pairs (PTX ISA 8.x, section 9.7.4 "Half Precision Floating-Point Instructions"):
// computed exactly in float64 (an f16 or bf16 product is exact there; fma's sum is rounded once with
// the sign of its error) and rounded to the 16-bit format. min and max return the other operand
// when one is NaN, the canonical NaN when both are, and order -0 below +0.
func (d *decoder) decodeHalf(in *inst, m mods, s pinst, t ptype) error {
	op := m.base
	if m.rnd != "" && m.rnd != "rn" || m.ftz || m.approx || len(m.words) != 0 {
		return d.errf("only .rn (and .sat) are supported on .%s", t.name)
	}
	nsrc := map[string]int{"add": 2, "sub": 2, "mul": 2, "fma": 3, "neg": 1, "abs": 1, "min": 2, "max": 2}[op]
	if err := d.nargs(s, nsrc+1); err != nil {
		return err
	}
	var err error
	if in.d, err = d.dst(s.args[0]); err != nil {
		return err
	}
	for i, r := range []*int32{&in.a, &in.b, &in.c}[:nsrc] {
		if *r, err = d.src(s.args[1+i], t); err != nil {
			return err
		}
	}
	f := ffmt(fmtF16)
	if t.name == "bf16" || t.name == "bf16x2" {
		f = fmtBF16
	}
	sat := m.sat
	in.class = ClassFP
	in.flops = 1
	if op == "fma" {
		in.flops = 2
	}
	pair := t.size == 4
	if pair {
		in.flops *= 2
	}
	one := func(a, b, c uint64) uint64 {
		switch op {
		case "neg":
			return a ^ 0x8000
		case "abs":
			return a &^ 0x8000
		}
		x, y, z := decodeFmt(a, f), decodeFmt(b, f), decodeFmt(c, f)
		if op == "min" || op == "max" {
			return halfMinMax(op == "min", a, b, x, y, f)
		}
		var r float64
		esign := 0
		switch op {
		case "add":
			r, esign = twoSum(x, y)
		case "sub":
			r, esign = twoSum(x, -y)
		case "mul":
			r = x * y
		case "fma":
			r, esign = twoSum(x*y, z)
		}
		if sat {
			r = sat01(r)
			esign = 0
		}
		return roundFmt(r, rmNearest, esign, f)
	}
	if pair {
		in.f = func(a, b, c uint64) uint64 {
			lo := one(a&0xffff, b&0xffff, c&0xffff)
			hi := one(a>>16&0xffff, b>>16&0xffff, c>>16&0xffff)
			return lo | hi<<16
		}
	} else {
		in.f = func(a, b, c uint64) uint64 { return one(a&0xffff, b&0xffff, c&0xffff) }
	}
	in.exec = execALU
	return nil
}

// halfMinMax is min (or max) of the 16-bit values a and b, whose values are x and y, in format f.
func halfMinMax(isMin bool, a, b uint64, x, y float64, f ffmt) uint64 {
	switch {
	case x != x && y != y:
		return roundFmt(math.NaN(), rmNearest, 0, f)
	case x != x:
		return b
	case y != y:
		return a
	}
	less := x < y || x == y && a&0x8000 != 0 && b&0x8000 == 0 // -0 before +0
	if less == isMin {
		return a
	}
	return b
}
