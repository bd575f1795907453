package vgpu

import (
	"math"
	"math/big"
)

// Floating-point rounding. PTX ISA 8.x, section 9.7.3 "Floating-Point Instructions" and 4.6
// "Rounding modifiers": .rn (nearest, ties to even), .rz (toward zero), .rm (toward −∞), .rp
// (toward +∞). Results are computed in float64 together with the sign of the rounding error of that
// float64 (esign: exact − computed), which makes one rounding to the target format exact: no double
// rounding.

const (
	rmNearest uint8 = iota
	rmZero
	rmDown
	rmUp
)

func roundMode(s string) uint8 {
	switch s {
	case "rz", "rzi":
		return rmZero
	case "rm", "rmi":
		return rmDown
	case "rp", "rpi":
		return rmUp
	}
	return rmNearest
}

type ffmt struct {
	mant    uint // stored mantissa bits
	expBits uint
	bias    int
}

var (
	fmtF32  = ffmt{23, 8, 127}
	fmtF16  = ffmt{10, 5, 15}
	fmtBF16 = ffmt{7, 8, 127}
)

func sgn(x float64) int {
	switch {
	case x > 0:
		return 1
	case x < 0:
		return -1
	}
	return 0
}

// roundFmt rounds x (whose exact value is x plus a tiny amount of sign esign) to format f.
func roundFmt(x float64, mode uint8, esign int, f ffmt) uint64 {
	total := 1 + f.expBits + f.mant
	expAll := uint64(1)<<f.expBits - 1
	if math.IsNaN(x) {
		return expAll<<f.mant | 1<<(f.mant-1)
	}
	var sign uint64
	if math.Signbit(x) {
		sign = 1
	}
	if math.IsInf(x, 0) {
		return sign<<(total-1) | expAll<<f.mant
	}
	ax := math.Abs(x)
	md := esign
	if sign == 1 {
		md = -esign
	}
	if ax == 0 && md <= 0 {
		if md < 0 { // exact is a tiny number of the opposite sign
			sign ^= 1
			md = 1
		} else {
			return sign << (total - 1)
		}
	}
	mag := magnitudeRounding(mode, sign)
	emin := 1 - f.bias
	E := emin
	if ax != 0 {
		_, e := math.Frexp(ax)
		E = max(e-1, emin)
	}
	n := math.Ldexp(ax, int(f.mant)-E)
	fl := math.Floor(n)
	r := roundScaled(fl, n-fl, mag, md)
	one := math.Ldexp(1, int(f.mant))
	if r >= 2*one {
		r /= 2
		E++
	}
	if r < one && E > emin && r >= 0 && fl >= one {
		r = 2*r + 1
		E--
	}
	if E > f.bias {
		if mag == 1 {
			return sign<<(total-1) | (expAll-1)<<f.mant | (1<<f.mant - 1)
		}
		return sign<<(total-1) | expAll<<f.mant
	}
	ri := uint64(r)
	var ef uint64
	if ri >= uint64(one) {
		ef = uint64(E + f.bias)
		ri -= uint64(one)
	}
	return sign<<(total-1) | ef<<f.mant | ri
}

// magnitudeRounding is how rounding mode mode rounds the magnitude of a number of sign sign (1:
// negative): 0 to nearest, 1 toward zero (truncate), 2 away from zero.
func magnitudeRounding(mode uint8, sign uint64) int {
	switch mode {
	case rmZero:
		return 1
	case rmDown:
		if sign == 1 {
			return 2
		}
		return 1
	case rmUp:
		if sign == 1 {
			return 1
		}
		return 2
	}
	return 0
}

// roundScaled rounds a scaled magnitude fl+frac (fl an integer, 0 ≤ frac < 1, whose exact value
// is a tiny amount of sign md more) to an integer by magnitude rounding mag (magnitudeRounding).
func roundScaled(fl, frac float64, mag, md int) float64 {
	switch mag {
	case 0:
		switch {
		case frac > 0.5 || (frac == 0.5 && md > 0):
			return fl + 1
		case frac == 0.5 && md == 0 && math.Mod(fl, 2) == 1:
			return fl + 1
		}
	case 1:
		if frac == 0 && md < 0 {
			return fl - 1
		}
	case 2:
		if frac > 0 || md > 0 {
			return fl + 1
		}
	}
	return fl
}

// decodeFmt returns the value of bits in format f.
func decodeFmt(bits uint64, f ffmt) float64 {
	total := 1 + f.expBits + f.mant
	sign := bits >> (total - 1) & 1
	e := int(bits >> f.mant & (1<<f.expBits - 1))
	m := bits & (1<<f.mant - 1)
	var v float64
	switch {
	case e == 1<<f.expBits-1:
		if m != 0 {
			return math.NaN()
		}
		v = math.Inf(1)
	case e == 0 && f.expBits > 8: // a subnormal whose scale is no normal float64
		v = math.Ldexp(float64(m), 1-f.bias-int(f.mant))
	case e == 0: // a subnormal: m·2^(1-bias-mant), exact (m has at most 23 bits)
		v = float64(m) * pow2(1-f.bias-int(f.mant))
	default: // the exponent and mantissa moved into a float64's fields, exact
		v = math.Float64frombits(uint64(e-f.bias+1023)<<52 | m<<(52-f.mant))
	}
	if sign == 1 {
		v = -v
	}
	return v
}

// halfF32 is decodeFmt's value of the 16-bit bits (bf16 when bf16 is set, else f16) as a float32,
// which holds both exactly; the tensor-core instructions widen their inputs with it.
func halfF32(bits uint64, bf16 bool) float32 {
	sign := uint32(bits>>15&1) << 31
	switch e, m := uint32(bits>>10&31), uint32(bits&1023); {
	case bf16 && bits&0x7fff > 0x7f80, !bf16 && e == 31 && m != 0:
		return float32(math.NaN())
	case bf16: // the high half of a float32
		return math.Float32frombits(uint32(bits&0xffff) << 16)
	case e == 31:
		return math.Float32frombits(sign | 0x7f800000)
	case e == 0: // a subnormal: m·2^-24
		return math.Float32frombits(sign | math.Float32bits(float32(m)*0x1p-24))
	default:
		return math.Float32frombits(sign | (e+127-15)<<23 | m<<13)
	}
}

// pow2 is 2^k for k at least -1022 (a normal float64).
func pow2(k int) float64 { return math.Float64frombits(uint64(k+1023) << 52) }

func roundF16(x float64, mode uint8, esign int) uint16 {
	return uint16(roundFmt(x, mode, esign, fmtF16))
}
func roundBF16(x float64, mode uint8, esign int) uint16 {
	return uint16(roundFmt(x, mode, esign, fmtBF16))
}

// roundF32 rounds x (exact value x + tiny·esign) to float32.
func roundF32(x float64, mode uint8, esign int) float32 {
	if mode == rmNearest {
		if esign == 0 {
			return float32(x)
		}
		// only a float64 lying exactly halfway between two float32s can round wrongly
		if math.Abs(x) >= 0x1p-126 && math.Float64bits(x)&(1<<29-1) != 1<<28 {
			return float32(x)
		}
	}
	return math.Float32frombits(uint32(roundFmt(x, mode, esign, fmtF32)))
}

// twoSum returns a+b rounded and the sign of its error (Knuth's TwoSum).
func twoSum(a, b float64) (float64, int) {
	s := a + b
	if math.IsInf(s, 0) || math.IsNaN(s) {
		return s, 0
	}
	bb := s - a
	e := (a - (s - bb)) + (b - bb)
	return s, sgn(e)
}

// roundF64 applies a directed rounding to s, an RN result whose error has sign esign.
func roundF64(s float64, mode uint8, esign int) float64 {
	if esign == 0 || mode == rmNearest || math.IsInf(s, 0) || math.IsNaN(s) {
		return s
	}
	switch mode {
	case rmZero:
		if (s > 0 && esign < 0) || (s < 0 && esign > 0) {
			return math.Nextafter(s, 0)
		}
	case rmDown:
		if esign < 0 {
			return math.Nextafter(s, math.Inf(-1))
		}
	case rmUp:
		if esign > 0 {
			return math.Nextafter(s, math.Inf(1))
		}
	}
	return s
}

func bigMode(mode uint8) big.RoundingMode {
	switch mode {
	case rmZero:
		return big.ToZero
	case rmDown:
		return big.ToNegativeInf
	case rmUp:
		return big.ToPositiveInf
	}
	return big.ToNearestEven
}

// fmaF64 is a·b+c rounded once in mode (math.FMA for .rn, big.Float for the directed modes).
func fmaF64(a, b, c float64, mode uint8) float64 {
	if mode == rmNearest {
		return math.FMA(a, b, c)
	}
	r := math.FMA(a, b, c)
	if math.IsInf(r, 0) || math.IsNaN(r) || math.IsInf(a, 0) || math.IsInf(b, 0) || math.IsInf(c, 0) {
		return r
	}
	x := new(big.Float).SetPrec(0).SetMode(big.ToNearestEven)
	x.Mul(big.NewFloat(a).SetPrec(106), big.NewFloat(b))
	y := new(big.Float).SetPrec(2200).Add(x, big.NewFloat(c))
	if y.Sign() == 0 {
		return r
	}
	z, _ := new(big.Float).SetPrec(53).SetMode(bigMode(mode)).Set(y).Float64()
	return z
}

// f32 operations with a rounding mode: the float64 result and its error sign, then one rounding.
func addF32(a, b float32, mode uint8) float32 {
	if mode == rmNearest {
		return a + b
	}
	s, e := twoSum(float64(a), float64(b))
	return roundF32(s, mode, e)
}

func mulF32(a, b float32, mode uint8) float32 {
	if mode == rmNearest {
		return a * b
	}
	return roundF32(float64(a)*float64(b), mode, 0) // exact in float64
}

func fmaF32(a, b, c float32, mode uint8) float32 {
	p := float64(a) * float64(b) // exact
	s, e := twoSum(p, float64(c))
	return roundF32(s, mode, e)
}

func divF32(a, b float32, mode uint8) float32 {
	if mode == rmNearest {
		return a / b
	}
	q := float64(a) / float64(b)
	if math.IsInf(q, 0) || math.IsNaN(q) || q == 0 {
		return roundF32(q, mode, 0)
	}
	r := math.FMA(-q, float64(b), float64(a))
	return roundF32(q, mode, sgn(r)*sgn(float64(b)))
}

func sqrtF32(a float32, mode uint8) float32 {
	q := math.Sqrt(float64(a))
	if mode == rmNearest || math.IsNaN(q) || math.IsInf(q, 0) || q == 0 {
		return float32(q)
	}
	return roundF32(q, mode, sgn(math.FMA(-q, q, float64(a))))
}

func addF64(a, b float64, mode uint8) float64 {
	s, e := twoSum(a, b)
	return roundF64(s, mode, e)
}

func mulF64(a, b float64, mode uint8) float64 {
	p := a * b
	if mode == rmNearest || math.IsInf(p, 0) || math.IsNaN(p) {
		return p
	}
	return roundF64(p, mode, sgn(math.FMA(a, b, -p)))
}

func divF64(a, b float64, mode uint8) float64 {
	q := a / b
	if mode == rmNearest || math.IsInf(q, 0) || math.IsNaN(q) || q == 0 {
		return q
	}
	return roundF64(q, mode, sgn(math.FMA(-q, b, a))*sgn(b))
}

func sqrtF64(a float64, mode uint8) float64 {
	q := math.Sqrt(a)
	if mode == rmNearest || math.IsInf(q, 0) || math.IsNaN(q) || q == 0 {
		return q
	}
	return roundF64(q, mode, sgn(math.FMA(-q, q, a)))
}

// ftz32 flushes a subnormal float32 to a zero of the same sign (PTX ISA 8.x, section 9.7.3,
// ".ftz": subnormal inputs and results are flushed to sign-preserving zero).
func ftz32(x float32) float32 {
	if x != 0 && math.Abs(float64(x)) < 0x1p-126 {
		return float32(math.Copysign(0, float64(x)))
	}
	return x
}

// sat01 clamps to [0, 1], NaN to 0 (PTX ISA 8.x, section 9.7.3, ".sat").
func sat01(x float64) float64 {
	switch {
	case math.IsNaN(x) || x <= 0:
		if x == 0 {
			return x * 0 // keeps +0; -0 becomes +0 below
		}
		return 0
	case x > 1:
		return 1
	}
	return x
}

// roundInt rounds x to an integer value by a cvt integer rounding mode.
func roundInt(x float64, mode uint8) float64 {
	switch mode {
	case rmZero:
		return math.Trunc(x)
	case rmDown:
		return math.Floor(x)
	case rmUp:
		return math.Ceil(x)
	}
	return math.RoundToEven(x)
}

// intToFloat converts an integer (signed or not) exactly, then rounds once to f in mode.
func intToFloat(v uint64, signed bool, mode uint8) (float64, int) {
	if signed {
		s := float64(int64(v))
		if math.Abs(s) < 1<<53 {
			return s, 0
		}
		bf := new(big.Float).SetInt64(int64(v))
		c := bf.Cmp(big.NewFloat(s))
		return s, c
	}
	s := float64(v)
	if v < 1<<53 {
		return s, 0
	}
	bf := new(big.Float).SetUint64(v)
	c := bf.Cmp(big.NewFloat(s))
	return s, c
}
