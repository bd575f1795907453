package vgpu

import (
	"errors"
	"math"
	"math/bits"
)

// The arithmetic and logic opcode table (PTX ISA 8.x, sections 9.7.1 "Integer Arithmetic
// Instructions", 9.7.3 "Floating-Point Instructions" and 9.7.8 "Logic and Shift Instructions"):
// one row an opcode, naming how many sources it takes, their types, the modifiers it accepts and
// the functions that choose its lane function for an integer and for a floating-point type.
// decodeALU (alu.go) reads the operands by the row and calls the builder of the type's kind.

// laneFunc is an instruction's per-lane operation on register bits (inst.f).
type laneFunc = func(a, b, c uint64) uint64

// aluRow is one arithmetic or logic opcode.
type aluRow struct {
	nsrc int      // source operands (the destination comes first)
	srcs srcShape // the sources' types
	word string   // the one opcode-specific modifier it accepts ("b4e", "shiftamt"), or ""
	// intSat: .sat is accepted on .s32 (add, sub, mad.hi)
	intSat bool
	// half: it also runs on f16, bf16 and their x2 pairs (decodeHalf, half.go)
	half bool
	// intOp and floatOp choose the lane function for an integer (.s, .u, .b) and a floating-point
	// (.f32, .f64) type; nil where the ISA does not define the opcode on that kind. A builder
	// that sets a specialised in.exec (exec.go) instead returns a nil laneFunc.
	intOp   func(k intKind, in *inst, m mods) (laneFunc, error)
	floatOp func(k floatKind, in *inst) laneFunc
	// decode, when set, decodes the whole instruction instead (lop3 and bfi, half.go).
	decode func(d *decoder, in *inst, m mods, s pinst, t ptype) error
}

// srcShape is the types of an ALU instruction's sources, given its type t.
type srcShape uint8

const (
	srcSame  srcShape = iota // every source has type t
	srcShift                 // the second is a .u32 shift amount (shl, shr)
	srcBfe                   // the second and third are .u32 position and length (bfe)
	srcMad                   // with .wide, the third has twice t's width (mad.wide)
)

func (sh srcShape) types(t ptype, m mods) [3]ptype {
	ts := [3]ptype{t, t, t}
	switch {
	case sh == srcShift:
		ts[1] = parseType("u32")
	case sh == srcBfe:
		ts[1], ts[2] = parseType("u32"), parseType("u32")
	case sh == srcMad && m.wide:
		ts[2] = ptype{t.name, t.size * 2, t.kind, true}
	}
	return ts
}

// aluOps is the arithmetic and logic table. To add an opcode, add a row and its builders.
var aluOps = map[string]aluRow{
	"add":      {nsrc: 2, intSat: true, half: true, intOp: intAdd, floatOp: floatAddSub(false)},
	"sub":      {nsrc: 2, intSat: true, half: true, intOp: intSub, floatOp: floatAddSub(true)},
	"mul":      {nsrc: 2, half: true, intOp: intMulMad(false), floatOp: floatMul},
	"mad":      {nsrc: 3, srcs: srcMad, intSat: true, intOp: intMulMad(true), floatOp: floatFma},
	"fma":      {nsrc: 3, half: true, floatOp: floatFma},
	"mul24":    {nsrc: 2, intOp: intMul24(false)},
	"mad24":    {nsrc: 3, intOp: intMul24(true)},
	"sad":      {nsrc: 3, intOp: intSad},
	"div":      {nsrc: 2, intOp: intDiv, floatOp: floatDiv},
	"rem":      {nsrc: 2, intOp: intRem},
	"min":      {nsrc: 2, half: true, intOp: intMinMax(false), floatOp: floatMinMax(false)},
	"max":      {nsrc: 2, half: true, intOp: intMinMax(true), floatOp: floatMinMax(true)},
	"abs":      {nsrc: 1, half: true, intOp: intAbs, floatOp: floatUnary(math.Abs)},
	"neg":      {nsrc: 1, half: true, intOp: intNeg, floatOp: floatNeg},
	"and":      {nsrc: 2, intOp: intLogic(func(a, b uint64) uint64 { return a & b })},
	"or":       {nsrc: 2, intOp: intLogic(func(a, b uint64) uint64 { return a | b })},
	"xor":      {nsrc: 2, intOp: intLogic(func(a, b uint64) uint64 { return a ^ b })},
	"not":      {nsrc: 1, intOp: intNot},
	"cnot":     {nsrc: 1, intOp: intCnot},
	"shl":      {nsrc: 2, srcs: srcShift, intOp: intShl},
	"shr":      {nsrc: 2, srcs: srcShift, intOp: intShr},
	"popc":     {nsrc: 1, intOp: intPopc},
	"clz":      {nsrc: 1, intOp: intClz},
	"bfind":    {nsrc: 1, word: "shiftamt", intOp: intBfind},
	"brev":     {nsrc: 1, intOp: intBrev},
	"bfe":      {nsrc: 3, srcs: srcBfe, intOp: intBfe},
	"prmt":     {nsrc: 3, word: "b4e", intOp: intPrmt},
	"lop3":     {decode: (*decoder).decodeLop3},
	"bfi":      {decode: (*decoder).decodeBfi},
	"sqrt":     {nsrc: 1, floatOp: floatSqrt},
	"rsqrt":    {nsrc: 1, floatOp: floatUnary(func(x float64) float64 { return 1 / math.Sqrt(x) })},
	"rcp":      {nsrc: 1, floatOp: floatRcp},
	"ex2":      {nsrc: 1, floatOp: floatUnary(math.Exp2)},
	"lg2":      {nsrc: 1, floatOp: floatUnary(math.Log2)},
	"sin":      {nsrc: 1, floatOp: floatUnary(math.Sin)},
	"cos":      {nsrc: 1, floatOp: floatUnary(math.Cos)},
	"tanh":     {nsrc: 1, floatOp: floatUnary(math.Tanh)},
	"copysign": {nsrc: 2, floatOp: floatCopysign},
}

// ---- integer lane functions: results wrap modulo 2^n; .sat (s32 add/sub/mad.hi) clamps ----

// intKind is what an integer lane function needs of the instruction's type and modifiers.
type intKind struct {
	t      ptype
	n      uint   // bits
	mask   uint64 // the low n bits
	signed bool
	sat    bool
}

// sx reads v as an n-bit integer (sign-extended for signed types).
func (k intKind) sx(v uint64) int64 {
	if k.signed {
		return sext(v, k.n)
	}
	return int64(v & k.mask)
}

// clamp32 clamps v to the s32 range under .sat and keeps its low n bits.
func (k intKind) clamp32(v int64) uint64 {
	if k.sat {
		v = max(min(v, math.MaxInt32), math.MinInt32)
	}
	return uint64(v) & k.mask
}

// mulHi is the high n bits of the 2n-bit product of a and b.
func (k intKind) mulHi(a, b uint64) uint64 {
	if k.n == 64 {
		hi, _ := bits.Mul64(a, b)
		if k.signed {
			// signed correction: hi(a·b) − (a<0 ? b : 0) − (b<0 ? a : 0)
			if int64(a) < 0 {
				hi -= b
			}
			if int64(b) < 0 {
				hi -= a
			}
		}
		return hi
	}
	return uint64(k.sx(a)*k.sx(b)) >> k.n & k.mask
}

func intAdd(k intKind, in *inst, m mods) (laneFunc, error) {
	mask := k.mask
	switch {
	case k.sat:
		return func(a, b, _ uint64) uint64 { return k.clamp32(sext(a, 32) + sext(b, 32)) }, nil
	case k.n == 32:
		in.exec = execAddI32
	case k.n == 64:
		in.exec = execAddI64
	default:
		return func(a, b, _ uint64) uint64 { return (a + b) & mask }, nil
	}
	return nil, nil
}

func intSub(k intKind, in *inst, m mods) (laneFunc, error) {
	mask := k.mask
	if k.sat {
		return func(a, b, _ uint64) uint64 { return k.clamp32(sext(a, 32) - sext(b, 32)) }, nil
	}
	return func(a, b, _ uint64) uint64 { return (a - b) & mask }, nil
}

// intMulMad builds mul (isMad false) or mad: .wide (a double-width product), .hi (its high half)
// or .lo (its low half; required by the ISA for integers, accepted when absent).
func intMulMad(isMad bool) func(k intKind, in *inst, m mods) (laneFunc, error) {
	return func(k intKind, in *inst, m mods) (laneFunc, error) {
		mask, sat := k.mask, m.sat
		switch {
		case m.wide:
			if k.n > 32 {
				return nil, errors.New(".wide needs a 16- or 32-bit type")
			}
			if !isMad && k.signed && k.n == 32 {
				in.exec = execMulWideS32
				return nil, nil
			}
			wideMask := sizeMask(2 * k.t.size)
			return func(a, b, c uint64) uint64 {
				p := uint64(k.sx(a) * k.sx(b))
				if isMad {
					p += c
				}
				return p & wideMask
			}, nil
		case m.hi:
			return func(a, b, c uint64) uint64 {
				h := k.mulHi(a&mask, b&mask)
				if isMad {
					if sat {
						return k.clamp32(sext(h, 32) + sext(c, 32))
					}
					h += c
				}
				return h & mask
			}, nil
		}
		if isMad && k.n == 32 {
			in.exec = execMadLo32
			return nil, nil
		}
		return func(a, b, c uint64) uint64 {
			p := a * b
			if isMad {
				p += c
			}
			return p & mask
		}, nil
	}
}

// intMul24 builds mul24 or mad24 (PTX ISA 8.x, 9.7.1.10 "mul24" and 9.7.1.11 "mad24"): the
// product of the low 24 bits of a and b (sign- or zero-extended) is 48 bits; .lo keeps bits 0–31,
// .hi bits 16–47.
func intMul24(mad bool) func(k intKind, in *inst, m mods) (laneFunc, error) {
	return func(k intKind, in *inst, m mods) (laneFunc, error) {
		if k.n != 32 || m.sat && !m.hi {
			return nil, errors.New("takes .lo or .hi with .u32 or .s32")
		}
		if m.sat {
			return nil, errors.New(".sat is not supported")
		}
		hi, signed := m.hi, k.signed
		return func(a, b, c uint64) uint64 {
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
		}, nil
	}
}

func intSad(k intKind, in *inst, m mods) (laneFunc, error) {
	mask, signed := k.mask, k.signed
	return func(a, b, c uint64) uint64 {
		x, y := k.sx(a), k.sx(b)
		if signed && x < y || !signed && uint64(x) < uint64(y) {
			x, y = y, x
		}
		return (uint64(x-y) + c) & mask
	}, nil
}

// intDiv: division by zero has no defined result in PTX; the virtual GPU returns all ones.
func intDiv(k intKind, in *inst, m mods) (laneFunc, error) {
	mask, signed := k.mask, k.signed
	return func(a, b, _ uint64) uint64 {
		if b&mask == 0 {
			return mask
		}
		if signed {
			x, y := k.sx(a), k.sx(b)
			if y == -1 {
				return uint64(-x) & mask
			}
			return uint64(x/y) & mask
		}
		return (a & mask) / (b & mask)
	}, nil
}

// intRem: remainder by zero is the dividend; the sign follows the dividend (C semantics).
func intRem(k intKind, in *inst, m mods) (laneFunc, error) {
	mask, signed := k.mask, k.signed
	return func(a, b, _ uint64) uint64 {
		if b&mask == 0 {
			return a & mask
		}
		if signed {
			x, y := k.sx(a), k.sx(b)
			if y == -1 {
				return 0
			}
			return uint64(x%y) & mask
		}
		return (a & mask) % (b & mask)
	}, nil
}

func intMinMax(isMax bool) func(k intKind, in *inst, m mods) (laneFunc, error) {
	return func(k intKind, in *inst, m mods) (laneFunc, error) {
		mask, signed := k.mask, k.signed
		return func(a, b, _ uint64) uint64 {
			var less bool
			if signed {
				less = k.sx(a) < k.sx(b)
			} else {
				less = a&mask < b&mask
			}
			if less != isMax {
				return a & mask
			}
			return b & mask
		}, nil
	}
}

func intAbs(k intKind, in *inst, m mods) (laneFunc, error) {
	mask := k.mask
	return func(a, _, _ uint64) uint64 {
		x := k.sx(a)
		if x < 0 {
			x = -x
		}
		return uint64(x) & mask
	}, nil
}

func intNeg(k intKind, in *inst, m mods) (laneFunc, error) {
	mask := k.mask
	return func(a, _, _ uint64) uint64 { return -a & mask }, nil
}

// intLogic builds a bitwise and, or or xor from op.
func intLogic(op func(a, b uint64) uint64) func(k intKind, in *inst, m mods) (laneFunc, error) {
	return func(k intKind, in *inst, m mods) (laneFunc, error) {
		mask := k.mask
		return func(a, b, _ uint64) uint64 { return op(a, b) & mask }, nil
	}
}

func intNot(k intKind, in *inst, m mods) (laneFunc, error) {
	mask := k.mask
	return func(a, _, _ uint64) uint64 { return ^a & mask }, nil
}

func intCnot(k intKind, in *inst, m mods) (laneFunc, error) {
	mask := k.mask
	return func(a, _, _ uint64) uint64 { return boolBit(a&mask == 0) }, nil
}

// intShl: shift amounts past the width give 0 (PTX ISA 8.x, 9.7.8.7 "shl").
func intShl(k intKind, in *inst, m mods) (laneFunc, error) {
	n, mask := k.n, k.mask
	return func(a, b, _ uint64) uint64 {
		sh := uint32(b)
		if uint(sh) >= n {
			return 0
		}
		return a << sh & mask
	}, nil
}

// intShr: amounts past the width give 0, or the sign for .s types (9.7.8.8 "shr").
func intShr(k intKind, in *inst, m mods) (laneFunc, error) {
	n, mask, signed := k.n, k.mask, k.signed
	return func(a, b, _ uint64) uint64 {
		sh := uint(uint32(b))
		if signed {
			if sh >= n {
				sh = n - 1
			}
			return uint64(k.sx(a)>>sh) & mask
		}
		if sh >= n {
			return 0
		}
		return (a & mask) >> sh
	}, nil
}

func intPopc(k intKind, in *inst, m mods) (laneFunc, error) {
	mask := k.mask
	return func(a, _, _ uint64) uint64 { return uint64(bits.OnesCount64(a & mask)) }, nil
}

func intClz(k intKind, in *inst, m mods) (laneFunc, error) {
	n, mask := k.n, k.mask
	return func(a, _, _ uint64) uint64 { return uint64(bits.LeadingZeros64(a&mask) - (64 - int(n))) }, nil
}

// intBfind (PTX ISA 8.x, "Integer Arithmetic Instructions: bfind"): the position of the most
// significant non-sign bit (of a negative signed value: its most significant 0), 0xffffffff when
// there is none; .shiftamt: the left shift that moves that bit to the top.
func intBfind(k intKind, in *inst, m mods) (laneFunc, error) {
	n, mask, signed := k.n, k.mask, k.signed
	shiftamt := oneOf(m, "shiftamt") != ""
	return func(a, _, _ uint64) uint64 {
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
	}, nil
}

func intBrev(k intKind, in *inst, m mods) (laneFunc, error) {
	n := k.n
	return func(a, _, _ uint64) uint64 { return bits.Reverse64(a) >> (64 - n) }, nil
}

// intBfe (9.7.8.5 "bfe"): position and length from the low 8 bits; sign-extends for .s types.
func intBfe(k intKind, in *inst, m mods) (laneFunc, error) {
	n, mask, signed := k.n, k.mask, k.signed
	return func(a, b, c uint64) uint64 {
		pos, ln := uint(b&0xff), uint(c&0xff)
		if ln == 0 {
			return 0
		}
		var v uint64
		if pos < n {
			v = (a & mask) >> pos
		} else if signed {
			v = uint64(k.sx(a) >> (n - 1))
		}
		if ln >= n {
			ln = n
		}
		if ln < 64 {
			v &= 1<<ln - 1
		}
		if signed {
			sbit := min(pos+ln-1, n-1)
			if a>>sbit&1 == 1 && ln < 64 {
				v |= ^uint64(0) << ln
			}
		}
		return v & mask
	}, nil
}

// intPrmt (9.7.8.9 "prmt", default mode): each selector nibble picks a byte of {b, a}; bit 3
// replicates its sign.
func intPrmt(k intKind, in *inst, m mods) (laneFunc, error) {
	if k.t.name != "b32" {
		return nil, errors.New("needs .b32")
	}
	return func(a, b, c uint64) uint64 {
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
	}, nil
}

// ---- floating-point lane functions (f32 and f64) ----

// floatKind is what a floating-point lane function needs of the instruction's type and modifiers.
type floatKind struct {
	is64 bool
	mode uint8 // rounding mode (float.go)
	ftz  bool  // .ftz on f32: subnormal inputs and results flush to sign-preserving zero
	sat  bool  // .sat: the result clamps to [0, 1]
}

// fast says the f32 form can use a specialised lane loop: round to nearest, no .ftz or .sat.
func (k floatKind) fast() bool { return !k.is64 && k.mode == rmNearest && !k.ftz && !k.sat }

// post wraps f with .ftz (inputs and result) and .sat (result).
func (k floatKind) post(f laneFunc) laneFunc {
	ftz, sat := k.ftz, k.sat
	if k.is64 {
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

func floatAddSub(neg bool) func(k floatKind, in *inst) laneFunc {
	return func(k floatKind, in *inst) laneFunc {
		mode := k.mode
		if k.is64 {
			return func(a, b, _ uint64) uint64 {
				y := f64(b)
				if neg {
					y = -y
				}
				return b64f(addF64(f64(a), y, mode))
			}
		}
		if !neg && k.fast() {
			in.exec = execAddF32
			return nil
		}
		return func(a, b, _ uint64) uint64 {
			y := f32(b)
			if neg {
				y = -y
			}
			return b32(addF32(f32(a), y, mode))
		}
	}
}

func floatMul(k floatKind, in *inst) laneFunc {
	mode := k.mode
	if k.is64 {
		return func(a, b, _ uint64) uint64 { return b64f(mulF64(f64(a), f64(b), mode)) }
	}
	if k.fast() {
		in.exec = execMulF32
		return nil
	}
	return func(a, b, _ uint64) uint64 { return b32(mulF32(f32(a), f32(b), mode)) }
}

// floatFma: fma, and mad on floats (mad.f32 with a rounding mode is fma: PTX ISA 8.x, 9.7.3.6
// "mad": "mad.rnd.f32 … same as fma").
func floatFma(k floatKind, in *inst) laneFunc {
	mode := k.mode
	in.flops = 2
	if k.is64 {
		return func(a, b, c uint64) uint64 { return b64f(fmaF64(f64(a), f64(b), f64(c), mode)) }
	}
	in.class = ClassFMA32
	if k.fast() {
		in.exec = execFmaF32
		return nil
	}
	return func(a, b, c uint64) uint64 { return b32(fmaF32(f32(a), f32(b), f32(c), mode)) }
}

// floatDiv: .approx and .full are computed correctly rounded (at least as accurate as the
// hardware).
func floatDiv(k floatKind, in *inst) laneFunc {
	mode := k.mode
	if k.is64 {
		return func(a, b, _ uint64) uint64 { return b64f(divF64(f64(a), f64(b), mode)) }
	}
	return func(a, b, _ uint64) uint64 { return b32(divF32(f32(a), f32(b), mode)) }
}

func floatRcp(k floatKind, in *inst) laneFunc {
	mode := k.mode
	if k.is64 {
		return func(a, _, _ uint64) uint64 { return b64f(divF64(1, f64(a), mode)) }
	}
	return func(a, _, _ uint64) uint64 { return b32(divF32(1, f32(a), mode)) }
}

func floatSqrt(k floatKind, in *inst) laneFunc {
	mode := k.mode
	if k.is64 {
		return func(a, _, _ uint64) uint64 { return b64f(sqrtF64(f64(a), mode)) }
	}
	return func(a, _, _ uint64) uint64 { return b32(sqrtF32(f32(a), mode)) }
}

// floatUnary builds a function computed in float64 and rounded once to the type (unaryF).
func floatUnary(g func(float64) float64) func(k floatKind, in *inst) laneFunc {
	return func(k floatKind, in *inst) laneFunc { return unaryF(k.is64, g) }
}

// unaryF applies a float64 function and rounds once to the type: the .approx functions (ex2, lg2,
// sin, cos, tanh, rsqrt) are computed this way, more accurately than the hardware's approximations.
func unaryF(is64 bool, g func(float64) float64) laneFunc {
	if is64 {
		return func(a, _, _ uint64) uint64 { return b64f(g(f64(a))) }
	}
	return func(a, _, _ uint64) uint64 { return b32(float32(g(float64(f32(a))))) }
}

func floatNeg(k floatKind, in *inst) laneFunc {
	if k.is64 {
		return func(a, _, _ uint64) uint64 { return a ^ 1<<63 }
	}
	return func(a, _, _ uint64) uint64 { return (a ^ 1<<31) & 0xffffffff }
}

// floatMinMax (9.7.3.10 "min"): if one input is NaN the result is the other.
func floatMinMax(isMax bool) func(k floatKind, in *inst) laneFunc {
	return func(k floatKind, in *inst) laneFunc {
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
		if k.is64 {
			return func(a, b, _ uint64) uint64 { return b64f(g(f64(a), f64(b))) }
		}
		return func(a, b, _ uint64) uint64 { return b32(float32(g(float64(f32(a)), float64(f32(b))))) }
	}
}

func floatCopysign(k floatKind, in *inst) laneFunc {
	is64 := k.is64
	return func(a, b, _ uint64) uint64 {
		if is64 {
			return b64f(math.Copysign(f64(b), f64(a)))
		}
		return b32(float32(math.Copysign(float64(f32(b)), float64(f32(a)))))
	}
}
