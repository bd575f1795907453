package vgpu

import (
	"math"
	"math/bits"
)

// Arithmetic, logic, comparison and conversion instructions. Each decodes to a per-lane function
// on register bits (in.f, in.cmp) chosen by type and modifiers at decode time; the hottest forms
// have their own lane loops in exec.go.

func sext(v uint64, n uint) int64 { return int64(v<<(64-n)) >> (64 - n) }

func f32(v uint64) float32  { return math.Float32frombits(uint32(v)) }
func b32(x float32) uint64  { return uint64(math.Float32bits(x)) }
func f64(v uint64) float64  { return math.Float64frombits(v) }
func b64f(x float64) uint64 { return math.Float64bits(x) }
func boolBit(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

func (d *decoder) decodeALU(in *inst, m mods, s pinst) error {
	op := m.base
	if len(m.types) != 1 {
		return d.errf("expects one type suffix")
	}
	t := m.types[0]
	switch op {
	case "lop3":
		return d.decodeLop3(in, m, s, t)
	case "bfi":
		return d.decodeBfi(in, m, s, t)
	}
	if (t.name == "f16" || t.name == "bf16" || t.name == "f16x2" || t.name == "bf16x2") && halfOps[op] {
		return d.decodeHalf(in, m, s, t)
	}
	if t.name == "f16" || t.name == "bf16" || t.name == "f16x2" || t.name == "bf16x2" || t.name == "tf32" || t.size > 8 {
		return d.errf("%s arithmetic is not supported yet (convert to f32 with cvt)", t.name)
	}
	nsrc := map[string]int{"add": 2, "sub": 2, "mul": 2, "mad": 3, "fma": 3, "div": 2, "rem": 2, "min": 2,
		"max": 2, "abs": 1, "neg": 1, "and": 2, "or": 2, "xor": 2, "not": 1, "cnot": 1, "shl": 2, "shr": 2,
		"sqrt": 1, "rsqrt": 1, "rcp": 1, "ex2": 1, "lg2": 1, "sin": 1, "cos": 1, "tanh": 1, "copysign": 2,
		"popc": 1, "clz": 1, "bfind": 1, "brev": 1, "bfe": 3, "prmt": 3, "mul24": 2, "mad24": 3, "sad": 3}[op]
	if nsrc == 0 {
		return d.errf("")
	}
	if err := d.nargs(s, nsrc+1); err != nil {
		return err
	}
	for _, w := range m.words {
		if !(op == "prmt" && w == "b4e" || op == "bfind" && w == "shiftamt") {
			return d.errf("unknown modifier .%s", w)
		}
	}
	// source types: shifts take a .u32 amount; wide results have a double-width destination
	srcT := []ptype{t, t, t}
	switch op {
	case "shl", "shr":
		srcT[1] = parseType("u32")
	case "bfe":
		srcT[1], srcT[2] = parseType("u32"), parseType("u32")
	case "mad":
		if m.wide {
			srcT[2] = ptype{t.name, t.size * 2, t.kind, true}
		}
	}
	r, err := d.dst(s.args[0])
	if err != nil {
		return err
	}
	in.d = r
	regs := []*int32{&in.a, &in.b, &in.c}
	for i := 0; i < nsrc; i++ {
		x, err := d.src(s.args[1+i], srcT[i])
		if err != nil {
			return err
		}
		*regs[i] = x
	}
	in.exec = execALU
	if t.kind == 'f' {
		return d.floatOp(in, m, t)
	}
	return d.intOp(in, m, t)
}

// intOp: PTX ISA 8.x, section 9.7.1 "Integer Arithmetic Instructions" and 9.7.8 "Logic and Shift
// Instructions". Results wrap modulo 2^n; .sat (s32 add/sub/mad.hi) clamps.
func (d *decoder) intOp(in *inst, m mods, t ptype) error {
	n := t.bits()
	mask := sizeMask(t.size)
	signed := t.kind == 's'
	op := m.base
	if m.rnd != "" || m.ftz || m.approx || m.full {
		return d.errf("floating-point modifiers on an integer type")
	}
	if m.sat && !(signed && n == 32 && (op == "add" || op == "sub" || op == "mad")) {
		return d.errf(".sat applies only to s32 add, sub and mad.hi")
	}
	clamp32 := func(v int64) uint64 {
		if m.sat {
			v = max(min(v, math.MaxInt32), math.MinInt32)
		}
		return uint64(v) & mask
	}
	sx := func(v uint64) int64 {
		if signed {
			return sext(v, n)
		}
		return int64(v & mask)
	}
	// high half and wide products
	mulHi := func(a, b uint64) uint64 {
		if n == 64 {
			if signed {
				hi, _ := bits.Mul64(a, b)
				// signed correction: hi(a·b) − (a<0 ? b : 0) − (b<0 ? a : 0)
				if int64(a) < 0 {
					hi -= b
				}
				if int64(b) < 0 {
					hi -= a
				}
				return hi
			}
			hi, _ := bits.Mul64(a, b)
			return hi
		}
		return uint64(sx(a)*sx(b)) >> n & mask
	}
	wideMask := sizeMask(2 * t.size)
	switch op {
	case "add":
		if m.sat {
			in.f = func(a, b, _ uint64) uint64 { return clamp32(sext(a, 32) + sext(b, 32)) }
		} else if n == 32 {
			in.exec = execAddI32
		} else if n == 64 {
			in.exec = execAddI64
		} else {
			in.f = func(a, b, _ uint64) uint64 { return (a + b) & mask }
		}
	case "sub":
		if m.sat {
			in.f = func(a, b, _ uint64) uint64 { return clamp32(sext(a, 32) - sext(b, 32)) }
		} else {
			in.f = func(a, b, _ uint64) uint64 { return (a - b) & mask }
		}
	case "mul", "mad":
		isMad := op == "mad"
		switch {
		case m.wide:
			if n > 32 {
				return d.errf(".wide needs a 16- or 32-bit type")
			}
			if !isMad && signed && n == 32 {
				in.exec = execMulWideS32
				break
			}
			in.f = func(a, b, c uint64) uint64 {
				p := uint64(sx(a) * sx(b))
				if isMad {
					p += c
				}
				return p & wideMask
			}
		case m.hi:
			in.f = func(a, b, c uint64) uint64 {
				h := mulHi(a&mask, b&mask)
				if isMad {
					if m.sat {
						return clamp32(sext(h, 32) + sext(c, 32))
					}
					h += c
				}
				return h & mask
			}
		default: // .lo (required by the ISA for integer mul/mad; accepted when absent)
			if isMad && n == 32 {
				in.exec = execMadLo32
				break
			}
			in.f = func(a, b, c uint64) uint64 {
				p := a * b
				if isMad {
					p += c
				}
				return p & mask
			}
		}
	case "mul24", "mad24":
		// PTX ISA 8.x, 9.7.1.10 "mul24" and 9.7.1.11 "mad24": the product of the low 24 bits of a
		// and b (sign- or zero-extended) is 48 bits; .lo keeps bits 0–31, .hi bits 16–47
		if n != 32 || m.sat && !m.hi {
			return d.errf("takes .lo or .hi with .u32 or .s32")
		}
		if m.sat {
			return d.errf(".sat is not supported")
		}
		hi := m.hi
		mad := op == "mad24"
		in.f = func(a, b, c uint64) uint64 {
			var p int64
			if signed {
				p = sext(a&0xffffff, 24) * sext(b&0xffffff, 24)
			} else {
				p = int64(a&0xffffff) * int64(b&0xffffff)
			}
			r := uint64(p)
			if hi {
				r = uint64(p >> 16)
			}
			if mad {
				r += c
			}
			return r & 0xffffffff
		}
	case "sad":
		in.f = func(a, b, c uint64) uint64 {
			x, y := sx(a), sx(b)
			if signed && x < y || !signed && uint64(x) < uint64(y) {
				x, y = y, x
			}
			return (uint64(x-y) + c) & mask
		}
	case "div":
		// division by zero has no defined result in PTX; the virtual GPU returns all ones
		in.f = func(a, b, _ uint64) uint64 {
			if b&mask == 0 {
				return mask
			}
			if signed {
				x, y := sx(a), sx(b)
				if y == -1 {
					return uint64(-x) & mask
				}
				return uint64(x/y) & mask
			}
			return (a & mask) / (b & mask)
		}
	case "rem":
		// remainder by zero: the dividend; the sign follows the dividend (C semantics)
		in.f = func(a, b, _ uint64) uint64 {
			if b&mask == 0 {
				return a & mask
			}
			if signed {
				x, y := sx(a), sx(b)
				if y == -1 {
					return 0
				}
				return uint64(x%y) & mask
			}
			return (a & mask) % (b & mask)
		}
	case "min", "max":
		isMax := op == "max"
		in.f = func(a, b, _ uint64) uint64 {
			var less bool
			if signed {
				less = sx(a) < sx(b)
			} else {
				less = a&mask < b&mask
			}
			if less != isMax {
				return a & mask
			}
			return b & mask
		}
	case "abs":
		in.f = func(a, _, _ uint64) uint64 {
			x := sx(a)
			if x < 0 {
				x = -x
			}
			return uint64(x) & mask
		}
	case "neg":
		in.f = func(a, _, _ uint64) uint64 { return -a & mask }
	case "and":
		in.f = func(a, b, _ uint64) uint64 { return a & b & mask }
	case "or":
		in.f = func(a, b, _ uint64) uint64 { return (a | b) & mask }
	case "xor":
		in.f = func(a, b, _ uint64) uint64 { return (a ^ b) & mask }
	case "not":
		in.f = func(a, _, _ uint64) uint64 { return ^a & mask }
	case "cnot":
		in.f = func(a, _, _ uint64) uint64 { return boolBit(a&mask == 0) }
	case "shl":
		// shift amounts above the width clamp (PTX ISA 8.x, 9.7.8.7 "shl": result 0)
		in.f = func(a, b, _ uint64) uint64 {
			sh := uint32(b)
			if uint(sh) >= n {
				return 0
			}
			return a << sh & mask
		}
	case "shr":
		// 9.7.8.8 "shr": amounts above the width give 0, or the sign for .s types
		in.f = func(a, b, _ uint64) uint64 {
			sh := uint(uint32(b))
			if signed {
				if sh >= n {
					sh = n - 1
				}
				return uint64(sx(a)>>sh) & mask
			}
			if sh >= n {
				return 0
			}
			return (a & mask) >> sh
		}
	case "popc":
		in.f = func(a, _, _ uint64) uint64 { return uint64(bits.OnesCount64(a & mask)) }
	case "clz":
		in.f = func(a, _, _ uint64) uint64 { return uint64(bits.LeadingZeros64(a&mask) - (64 - int(n))) }
	case "bfind":
		// PTX ISA 8.x, "Integer Arithmetic Instructions: bfind": the position of the most
		// significant non-sign bit (of a negative signed value: its most significant 0),
		// 0xffffffff when there is none; .shiftamt: the left shift that moves that bit to the top
		shiftamt := oneOf(m, "shiftamt") != ""
		in.f = func(a, _, _ uint64) uint64 {
			v := a & mask
			if signed && v>>(n-1)&1 == 1 {
				v = ^v & mask
			}
			if v == 0 {
				return 0xffffffff
			}
			pos := uint64(63 - bits.LeadingZeros64(v))
			if shiftamt {
				return uint64(n-1) - pos
			}
			return pos
		}
	case "brev":
		in.f = func(a, _, _ uint64) uint64 { return bits.Reverse64(a) >> (64 - n) }
	case "bfe":
		// 9.7.8.5 "bfe": position and length from the low 8 bits; sign-extends for .s types
		in.f = func(a, b, c uint64) uint64 {
			pos, ln := uint(b&0xff), uint(c&0xff)
			if ln == 0 {
				return 0
			}
			var v uint64
			if pos < n {
				v = (a & mask) >> pos
			} else if signed {
				v = uint64(sx(a) >> (n - 1))
			}
			if ln >= n {
				ln = n
			}
			if ln < 64 {
				v &= 1<<ln - 1
			}
			if signed {
				sbit := pos + ln - 1
				if sbit >= n {
					sbit = n - 1
				}
				if a>>sbit&1 == 1 && ln < 64 {
					v |= ^uint64(0) << ln
				}
			}
			return v & mask
		}
	case "prmt":
		if t.name != "b32" {
			return d.errf("needs .b32")
		}
		// 9.7.8.9 "prmt", default mode: each selector nibble picks a byte of {b, a}; bit 3 replicates its sign
		in.f = func(a, b, c uint64) uint64 {
			src := uint64(uint32(a)) | uint64(uint32(b))<<32
			var r uint64
			for i := range 4 {
				sel := c >> (4 * i) & 0xf
				by := src >> (8 * (sel & 7)) & 0xff
				if sel&8 != 0 {
					if by&0x80 != 0 {
						by = 0xff
					} else {
						by = 0
					}
				}
				r |= by << (8 * i)
			}
			return r
		}
	default:
		return d.errf("")
	}
	return nil
}

// floatOp: PTX ISA 8.x, section 9.7.3 "Floating-Point Instructions" (f32 and f64).
func (d *decoder) floatOp(in *inst, m mods, t ptype) error {
	op := m.base
	mode := roundMode(m.rnd)
	is64 := t.name == "f64"
	if m.rnd != "" && (m.rnd == "rni" || m.rnd == "rzi" || m.rnd == "rmi" || m.rnd == "rpi" || m.rnd == "rna") {
		return d.errf("rounding .%s is for cvt", m.rnd)
	}
	ftz, sat := m.ftz && !is64, m.sat
	in.class = ClassFP
	in.mode = mode
	in.flops = 1
	post := func(f func(a, b, c uint64) uint64) func(a, b, c uint64) uint64 {
		if is64 {
			if !sat {
				return f
			}
			return func(a, b, c uint64) uint64 { return b64f(sat01(f64(f(a, b, c)))) }
		}
		if !ftz && !sat {
			return f
		}
		return func(a, b, c uint64) uint64 {
			if ftz {
				a, b, c = b32(ftz32(f32(a))), b32(ftz32(f32(b))), b32(ftz32(f32(c)))
			}
			r := f32(f(a, b, c))
			if ftz {
				r = ftz32(r)
			}
			if sat {
				r = float32(sat01(float64(r)))
			}
			return b32(r)
		}
	}
	var f func(a, b, c uint64) uint64
	switch op {
	case "add", "sub":
		neg := op == "sub"
		if is64 {
			f = func(a, b, _ uint64) uint64 {
				y := f64(b)
				if neg {
					y = -y
				}
				return b64f(addF64(f64(a), y, mode))
			}
		} else {
			if !neg && mode == rmNearest && !ftz && !sat {
				in.exec = execAddF32
				return nil
			}
			f = func(a, b, _ uint64) uint64 {
				y := f32(b)
				if neg {
					y = -y
				}
				return b32(addF32(f32(a), y, mode))
			}
		}
	case "mul":
		if is64 {
			f = func(a, b, _ uint64) uint64 { return b64f(mulF64(f64(a), f64(b), mode)) }
		} else {
			if mode == rmNearest && !ftz && !sat {
				in.exec = execMulF32
				return nil
			}
			f = func(a, b, _ uint64) uint64 { return b32(mulF32(f32(a), f32(b), mode)) }
		}
	case "fma", "mad":
		// mad.f32 with a rounding mode is fma (PTX ISA 8.x, 9.7.3.6 "mad": "mad.rnd.f32 … same as fma")
		in.flops = 2
		if is64 {
			f = func(a, b, c uint64) uint64 { return b64f(fmaF64(f64(a), f64(b), f64(c), mode)) }
		} else {
			in.class = ClassFMA32
			if mode == rmNearest && !ftz && !sat {
				in.exec = execFmaF32
				return nil
			}
			f = func(a, b, c uint64) uint64 { return b32(fmaF32(f32(a), f32(b), f32(c), mode)) }
		}
		in.f = post(f)
		return nil
	case "div":
		// .approx and .full are computed correctly rounded (at least as accurate as the hardware)
		if is64 {
			f = func(a, b, _ uint64) uint64 { return b64f(divF64(f64(a), f64(b), mode)) }
		} else {
			f = func(a, b, _ uint64) uint64 { return b32(divF32(f32(a), f32(b), mode)) }
		}
	case "rcp":
		if is64 {
			f = func(a, _, _ uint64) uint64 { return b64f(divF64(1, f64(a), mode)) }
		} else {
			f = func(a, _, _ uint64) uint64 { return b32(divF32(1, f32(a), mode)) }
		}
	case "sqrt":
		if is64 {
			f = func(a, _, _ uint64) uint64 { return b64f(sqrtF64(f64(a), mode)) }
		} else {
			f = func(a, _, _ uint64) uint64 { return b32(sqrtF32(f32(a), mode)) }
		}
	case "rsqrt":
		f = unaryF(is64, func(x float64) float64 { return 1 / math.Sqrt(x) })
	case "ex2":
		f = unaryF(is64, math.Exp2)
	case "lg2":
		f = unaryF(is64, math.Log2)
	case "sin":
		f = unaryF(is64, math.Sin)
	case "cos":
		f = unaryF(is64, math.Cos)
	case "tanh":
		f = unaryF(is64, math.Tanh)
	case "abs":
		f = unaryF(is64, math.Abs)
	case "neg":
		if is64 {
			f = func(a, _, _ uint64) uint64 { return a ^ 1<<63 }
		} else {
			f = func(a, _, _ uint64) uint64 { return (a ^ 1<<31) & 0xffffffff }
		}
	case "min", "max":
		// 9.7.3.10 "min": if one input is NaN the result is the other
		isMax := op == "max"
		g := func(x, y float64) float64 {
			switch {
			case math.IsNaN(x):
				return y
			case math.IsNaN(y):
				return x
			case x == y:
				if isMax != math.Signbit(x) {
					return x
				}
				return y
			case (x < y) != isMax:
				return x
			}
			return y
		}
		if is64 {
			f = func(a, b, _ uint64) uint64 { return b64f(g(f64(a), f64(b))) }
		} else {
			f = func(a, b, _ uint64) uint64 { return b32(float32(g(float64(f32(a)), float64(f32(b))))) }
		}
	case "copysign":
		f = func(a, b, _ uint64) uint64 {
			if is64 {
				return b64f(math.Copysign(f64(b), f64(a)))
			}
			return b32(float32(math.Copysign(float64(f32(b)), float64(f32(a)))))
		}
	default:
		return d.errf("")
	}
	in.f = post(f)
	return nil
}

// unaryF applies a float64 function and rounds once to the type: the .approx functions (ex2, lg2,
// sin, cos, tanh, rsqrt) are computed this way, more accurately than the hardware's approximations.
func unaryF(is64 bool, g func(float64) float64) func(a, b, c uint64) uint64 {
	if is64 {
		return func(a, _, _ uint64) uint64 { return b64f(g(f64(a))) }
	}
	return func(a, _, _ uint64) uint64 { return b32(float32(g(float64(f32(a))))) }
}

// decodePredLogic: and/or/xor/not/mov on .pred registers, as whole-warp masks.
func (d *decoder) decodePredLogic(in *inst, m mods, s pinst) error {
	n := map[string]int{"and": 2, "or": 2, "xor": 2, "not": 1, "mov": 1, "cnot": 1}[m.base]
	if n == 0 {
		return d.errf("not defined on predicates")
	}
	if err := d.nargs(s, n+1); err != nil {
		return err
	}
	dr, _, err := d.pred(s.args[0])
	if err != nil {
		return err
	}
	in.d = dr
	var neg [2]bool
	for i := 0; i < n; i++ {
		o := s.args[1+i]
		var r int32
		if o.kind == oImm { // a constant predicate, 0 or 1 (clang emits mov.pred %p, 0): mode bits 4<<i, value 16<<i
			in.mode |= 4 << i
			if o.bits != 0 {
				in.mode |= 16 << i
			}
			continue
		}
		r, neg[i], err = d.pred(o)
		if err != nil {
			return err
		}
		if i == 0 {
			in.a = r
		} else {
			in.b = r
		}
	}
	switch m.base {
	case "and":
		in.boolop = 0
	case "or":
		in.boolop = 1
	case "xor":
		in.boolop = 2
	case "not", "cnot":
		in.boolop = 3
	case "mov":
		in.boolop = 4
	}
	in.mode &^= 3
	if neg[0] {
		in.mode |= 1
	}
	if neg[1] {
		in.mode |= 2
	}
	in.exec = execPredLogic
	return nil
}

// decodeSetp: PTX ISA 8.x, section 9.7.4.2 "setp": compare, optionally combine with a predicate
// (.and/.or/.xor), write p and optionally q = !compare combined the same way.
func (d *decoder) decodeSetp(in *inst, m mods, s pinst) error {
	if len(m.types) != 1 || m.rnd != "" {
		return d.errf("expects one type suffix")
	}
	t := m.types[0]
	var cmpOp, boolOp string
	if m.lo { // .lo and .hi are comparisons here, not the multiply halves
		cmpOp = "lo"
	}
	if m.hi {
		cmpOp = "hi"
	}
	for _, w := range m.words {
		switch w {
		case "eq", "ne", "lt", "le", "gt", "ge", "lo", "ls", "hi", "hs", "equ", "neu", "ltu", "leu", "gtu", "geu", "num", "nan":
			cmpOp = w
		case "and", "or", "xor":
			boolOp = w
		default:
			return d.errf("unknown modifier .%s", w)
		}
	}
	if cmpOp == "" {
		return d.errf("needs a comparison")
	}
	want := 3
	if boolOp != "" {
		want = 4
	}
	if err := d.nargs(s, want); err != nil {
		return err
	}
	if t.name == "f16x2" || t.name == "bf16x2" {
		return d.errf("%s comparisons are not supported yet", t.name)
	}
	dst := s.args[0]
	in.d2 = -1
	if dst.kind == oPair {
		q, _, err := d.pred(dst.elems[1])
		if err != nil {
			return err
		}
		dst = dst.elems[0]
		in.d2 = q
	}
	p, _, err := d.pred(dst)
	if err != nil {
		return err
	}
	in.d = p
	if in.a, err = d.src(s.args[1], t); err != nil {
		return err
	}
	if in.b, err = d.src(s.args[2], t); err != nil {
		return err
	}
	in.c = -1
	if boolOp != "" {
		c, neg, err := d.pred(s.args[3])
		if err != nil {
			return err
		}
		in.c = c
		if neg {
			in.mode = 1
		}
		in.boolop = map[string]uint8{"and": 0, "or": 1, "xor": 2}[boolOp]
	}
	cmp, err := d.comparison(cmpOp, t, m.ftz)
	if err != nil {
		return err
	}
	in.cmp = cmp
	in.exec = execSetp
	if t.kind == 's' && t.size == 4 {
		switch cmpOp {
		case "lt":
			in.exec = execSetpLtS32
		case "ge":
			in.exec = execSetpGeS32
		}
	}
	if t.kind == 'f' {
		in.class = ClassFP
	}
	return nil
}

func (d *decoder) comparison(op string, t ptype, ftz bool) (func(a, b uint64) bool, error) {
	n := t.bits()
	mask := sizeMask(t.size)
	switch t.kind {
	case 'f':
		conv := func(v uint64) float64 {
			switch {
			case t.size == 8:
				return f64(v)
			case t.name == "f16": // scalar half precision (9.7.4.x "setp" on .f16 and .bf16)
				return decodeFmt(v&0xffff, fmtF16)
			case t.name == "bf16":
				return decodeFmt(v&0xffff, fmtBF16)
			}
			x := f32(v)
			if ftz {
				x = ftz32(x)
			}
			return float64(x)
		}
		ordered := func(c func(x, y float64) bool) func(a, b uint64) bool {
			return func(a, b uint64) bool {
				x, y := conv(a), conv(b)
				return !math.IsNaN(x) && !math.IsNaN(y) && c(x, y)
			}
		}
		unordered := func(c func(x, y float64) bool) func(a, b uint64) bool {
			return func(a, b uint64) bool {
				x, y := conv(a), conv(b)
				return math.IsNaN(x) || math.IsNaN(y) || c(x, y)
			}
		}
		cmps := map[string]func(x, y float64) bool{
			"eq": func(x, y float64) bool { return x == y }, "ne": func(x, y float64) bool { return x != y },
			"lt": func(x, y float64) bool { return x < y }, "le": func(x, y float64) bool { return x <= y },
			"gt": func(x, y float64) bool { return x > y }, "ge": func(x, y float64) bool { return x >= y },
		}
		switch op {
		case "num":
			return ordered(func(x, y float64) bool { return true }), nil
		case "nan":
			return unordered(func(x, y float64) bool { return false }), nil
		}
		if c, ok := cmps[op]; ok {
			return ordered(c), nil
		}
		if len(op) == 3 && op[2] == 'u' {
			if c, ok := cmps[op[:2]]; ok {
				return unordered(c), nil
			}
		}
		return nil, d.errf("comparison .%s is not defined on floats", op)
	case 'p':
		return nil, d.errf("setp on predicates")
	}
	signed := t.kind == 's'
	lt := func(a, b uint64) bool {
		if signed {
			return sext(a, n) < sext(b, n)
		}
		return a&mask < b&mask
	}
	switch op {
	case "eq":
		return func(a, b uint64) bool { return a&mask == b&mask }, nil
	case "ne":
		return func(a, b uint64) bool { return a&mask != b&mask }, nil
	case "lt", "lo":
		if op == "lo" {
			signed = false
		}
		return lt, nil
	case "le", "ls":
		if op == "ls" {
			signed = false
		}
		return func(a, b uint64) bool { return !lt(b, a) }, nil
	case "gt", "hi":
		if op == "hi" {
			signed = false
		}
		return func(a, b uint64) bool { return lt(b, a) }, nil
	case "ge", "hs":
		if op == "hs" {
			signed = false
		}
		return func(a, b uint64) bool { return !lt(a, b) }, nil
	}
	return nil, d.errf("comparison .%s is not defined on integers", op)
}

// decodeSelp: selp d, a, b, p (9.7.4.4); slct d, a, b, c: a if c ≥ 0 else b (9.7.4.5).
func (d *decoder) decodeSelp(in *inst, m mods, s pinst) error {
	if err := d.nargs(s, 4); err != nil {
		return err
	}
	slct := m.base == "slct"
	if (!slct && len(m.types) != 1) || (slct && len(m.types) != 2) || len(m.words) > 0 {
		return d.errf("wrong type suffixes")
	}
	t := m.types[0]
	var err error
	if in.d, err = d.dst(s.args[0]); err != nil {
		return err
	}
	if in.a, err = d.src(s.args[1], t); err != nil {
		return err
	}
	if in.b, err = d.src(s.args[2], t); err != nil {
		return err
	}
	if !slct {
		p, neg, err := d.pred(s.args[3])
		if err != nil {
			return err
		}
		in.c = p
		if neg {
			in.mode = 1
		}
		in.exec = execSelp
		return nil
	}
	ct := m.types[1]
	if in.c, err = d.src(s.args[3], ct); err != nil {
		return err
	}
	ftz := m.ftz
	in.f = func(a, b, c uint64) uint64 {
		var neg bool
		switch ct.name {
		case "s32":
			neg = int32(c) < 0
		case "f32":
			x := f32(c)
			if ftz {
				x = ftz32(x)
			}
			neg = x < 0 || math.Signbit(float64(x)) && false
		default:
			neg = int64(c) < 0
		}
		if neg {
			return b
		}
		return a
	}
	in.exec = execALU
	return nil
}

// decodeCvt: PTX ISA 8.x, section 9.7.9.21 "cvt". Float-to-integer conversions saturate to the
// destination range and turn NaN into 0; integer-to-integer conversions wrap unless .sat;
// narrowing float conversions round by the given mode (f16 and bf16 included).
func (d *decoder) decodeCvt(in *inst, m mods, s pinst) error {
	for _, w := range m.words {
		if _, ok := fp8Of(w); ok {
			return d.decodeCvtFP8(in, m, s)
		}
	}
	if len(m.types) != 2 {
		return d.errf("expects a destination and a source type")
	}
	dt, st := m.types[0], m.types[1]
	lim, err := d.cvtLimits(m, dt, st)
	if err != nil {
		return err
	}
	if dt.name == "f16x2" || dt.name == "bf16x2" {
		if st.name != "f32" {
			return d.errf("cvt to .%s takes two .f32 sources", dt.name)
		}
		return d.decodeCvtPair(in, m, s, dt, lim)
	}
	if err := d.nargs(s, 2); err != nil {
		return err
	}
	if dt.kind == 'p' || st.kind == 'p' || st.name == "f16x2" || st.name == "bf16x2" || st.name == "tf32" || dt.name == "tf32" {
		return d.errf("cvt to or from .%s is not supported", dt.name+"/."+st.name)
	}
	if in.d, err = d.dst(s.args[0]); err != nil {
		return err
	}
	if in.a, err = d.src(s.args[1], st); err != nil {
		return err
	}
	mode := roundMode(m.rnd)
	intRnd := m.rnd == "rni" || m.rnd == "rzi" || m.rnd == "rmi" || m.rnd == "rpi"
	ftz, sat := m.ftz, m.sat
	dmask := sizeMask(dt.size)
	in.exec = execALU
	// read the source as float64 (floats) or as an integer
	readF := func(v uint64) float64 {
		switch st.name {
		case "f16":
			return decodeFmt(v&0xffff, fmtF16)
		case "bf16":
			return decodeFmt(v&0xffff, fmtBF16)
		case "f32":
			x := f32(v)
			if ftz {
				x = ftz32(x)
			}
			return float64(x)
		}
		return f64(v)
	}
	readI := func(v uint64) uint64 {
		if st.kind == 's' {
			return uint64(sext(v, st.bits()))
		}
		return v & sizeMask(st.size)
	}
	// write a float64 value (with error sign) in the destination float format
	writeF := func(x float64, esign int) uint64 {
		if sat {
			x = sat01(x)
		}
		switch dt.name {
		case "f16":
			return lim.apply(roundF16(x, mode, esign), fmtF16)
		case "bf16":
			return lim.apply(roundBF16(x, mode, esign), fmtBF16)
		case "f32":
			r := roundF32(x, mode, esign)
			if ftz {
				r = ftz32(r)
			}
			return b32(r)
		}
		return b64f(roundF64(x, mode, esign))
	}
	switch {
	case st.kind == 'f' && dt.kind == 'f':
		if intRnd {
			if st.name != dt.name {
				return d.errf("integer rounding needs the same float type")
			}
			in.f = func(a, _, _ uint64) uint64 { return writeF(roundInt(readF(a), mode), 0) }
			return nil
		}
		if dt.size < st.size && m.rnd == "" {
			return d.errf("a narrowing float conversion needs a rounding mode")
		}
		in.f = func(a, _, _ uint64) uint64 { return writeF(readF(a), 0) }
	case st.kind == 'f':
		if !intRnd {
			return d.errf("a float-to-integer conversion needs .rni, .rzi, .rmi or .rpi")
		}
		lo, hi := intRange(dt)
		nan := nanToInt(st, dt)
		in.f = func(a, _, _ uint64) uint64 {
			x := roundInt(readF(a), mode)
			switch {
			case math.IsNaN(x):
				return nan
			case x <= lo:
				return uint64(int64(lo)) & dmask
			case x >= hi:
				if dt.kind == 's' {
					return dmask >> 1 // MAXINT (float64(hi) of .s64 is 2^63, past int64)
				}
				return dmask
			}
			if x >= 1<<63 {
				return uint64(x)
			}
			return uint64(int64(x)) & dmask
		}
	case dt.kind == 'f':
		if intRnd {
			return d.errf("an integer-to-float conversion takes .rn, .rz, .rm or .rp")
		}
		signed := st.kind == 's'
		in.f = func(a, _, _ uint64) uint64 {
			x, e := intToFloat(readI(a), signed, mode)
			return writeF(x, e)
		}
	default:
		if m.rnd != "" {
			return d.errf("integer-to-integer conversions take no rounding mode")
		}
		srcSigned := st.kind == 's'
		dstSigned := dt.kind == 's'
		lo, hi := intRange(dt)
		in.f = func(a, _, _ uint64) uint64 {
			v := readI(a)
			if sat {
				if srcSigned {
					x := int64(v)
					if float64(x) < lo {
						return uint64(int64(lo)) & dmask
					}
					if float64(x) > hi {
						if dstSigned {
							return uint64(int64(hi)) & dmask
						}
						return dmask
					}
				} else if float64(v) > hi {
					if dstSigned {
						return uint64(int64(hi)) & dmask
					}
					return dmask
				}
			}
			return v & dmask
		}
	}
	return nil
}

func intRange(t ptype) (lo, hi float64) {
	n := t.bits()
	if t.kind == 's' {
		return -math.Ldexp(1, int(n)-1), math.Ldexp(1, int(n)-1) - 1
	}
	return 0, math.Ldexp(1, int(n)) - 1
}
