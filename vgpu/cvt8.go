package vgpu

import (
	"math"
	"strings"
)

// Conversions to and from the 8-bit float pairs .e4m3x2 and .e5m2x2 (PTX ISA 9.0, section 9.7.9.21
// "cvt"; PTX ISA 7.8, sm_89; what cuda_fp8.h's intrinsics compile to for sm_90):
//
//	cvt.rn.satfinite{.relu}.f8x2type.f32   d, a, b; // d (.b16): a's value in the upper byte, b's in the lower
//	cvt.rn.satfinite{.relu}.f8x2type.f16x2 d, a;    // the upper half of a to the upper byte
//	cvt.rn{.relu}.f16x2.f8x2type           d, a;    // the upper byte of a to the upper half of d
//
// E4M3 has 4 exponent bits (bias 7) and 3 mantissa bits, no infinity, S.1111.111 its NaN and 448
// its largest number; E5M2 is IEEE-like (bias 15, 2 mantissa bits, infinities) with 57344 its
// largest. Rounding is to nearest even; .satfinite makes a result past the largest finite number
// (an infinity included) that number with its sign, and a NaN stays a NaN (0x7f); .relu makes a
// negative result +0 and a NaN the canonical NaN.

// fp8Format is one of the 8-bit formats.
type fp8Format struct {
	mant int // stored mantissa bits
	bias int
	max  float64
}

var (
	fmtE4M3 = fp8Format{mant: 3, bias: 7, max: 448}
	fmtE5M2 = fp8Format{mant: 2, bias: 15, max: 57344}
)

// fp8Of reads the 8-bit float pair word of an opcode part ("e4m3x2", "e5m2x2").
func fp8Of(w string) (fp8Format, bool) {
	switch w {
	case "e4m3x2":
		return fmtE4M3, true
	case "e5m2x2":
		return fmtE5M2, true
	}
	return fp8Format{}, false
}

// round is x rounded to nearest even in f, saturated to its largest finite number; relu clamps a
// negative result to +0.
func (f fp8Format) round(x float64, relu bool) uint64 {
	if math.IsNaN(x) {
		return 0x7f
	}
	var sign uint64
	if math.Signbit(x) {
		if relu {
			return 0
		}
		sign = 0x80
	}
	a := math.Abs(x)
	emin := 1 - f.bias
	e := emin
	if a >= math.Ldexp(1, emin) {
		_, fe := math.Frexp(a) // a = fr·2^fe, 1/2 ≤ fr < 1
		e = fe - 1
	}
	q := math.Ldexp(1, e-f.mant) // the quantum of a's binade (of the subnormals below 2^emin)
	r := math.RoundToEven(a/q) * q
	if r > f.max || math.IsInf(a, 0) {
		r = f.max
	}
	if r == 0 {
		return sign
	}
	if r < math.Ldexp(1, emin) {
		return sign | uint64(r/math.Ldexp(1, emin-f.mant))
	}
	fr, fe := math.Frexp(r)
	m := uint64(math.Ldexp(fr, f.mant+1)) - 1<<f.mant
	return sign | uint64(fe-1+f.bias)<<f.mant | m
}

// decode is the value of the 8 bits b in f.
func (f fp8Format) decode(b uint64) float64 {
	expAll := uint64(1)<<(7-f.mant) - 1
	e, m := b>>f.mant&expAll, b&(1<<f.mant-1)
	s := 1.0
	if b&0x80 != 0 {
		s = -1
	}
	switch {
	case f.mant == 3 && e == expAll && m == 7, f.mant == 2 && e == expAll && m != 0:
		return math.NaN()
	case f.mant == 2 && e == expAll:
		return s * math.Inf(1)
	case e == 0:
		return s * math.Ldexp(float64(m), 1-f.bias-f.mant)
	}
	return s * math.Ldexp(1+float64(m)/float64(uint64(1)<<f.mant), int(e)-f.bias)
}

// decodeCvtFP8 decodes the cvt forms above, its destination and source read from the opcode's
// parts in order (m has the 8-bit formats among its words).
func (d *decoder) decodeCvtFP8(in *inst, m mods, s pinst) error {
	var parts []string // the destination and source type parts, in order
	relu, satfinite := false, false
	for _, w := range strings.Split(s.op, ".")[1:] {
		switch _, fp8 := fp8Of(w); {
		case fp8 || parseType(w).valid:
			parts = append(parts, w)
		case w == "relu":
			relu = true
		case w == "satfinite":
			satfinite = true
		case w != "rn":
			return d.errf("cvt with .%s is not supported on 8-bit floats", w)
		}
	}
	if m.rnd != "rn" || len(parts) != 2 {
		return d.errf("cvt on 8-bit float pairs takes .rn and two types")
	}
	var err error
	if in.d, err = d.dst(s.args[0]); err != nil {
		return err
	}
	in.exec = execALU
	if f, ok := fp8Of(parts[1]); ok { // to f16x2
		if parts[0] != "f16x2" || satfinite {
			return d.errf("8-bit floats convert to .f16x2 (without .satfinite)")
		}
		if err := d.nargs(s, 2); err != nil {
			return err
		}
		if in.a, err = d.src(s.args[1], parseType("b16")); err != nil {
			return err
		}
		lim := cvtLimit{relu: relu}
		half := func(b uint64) uint64 {
			return lim.apply(uint16(roundFmt(f.decode(b&0xff), rmNearest, 0, fmtF16)), fmtF16)
		}
		in.f = func(a, _, _ uint64) uint64 { return half(a>>8)<<16 | half(a) }
		return nil
	}
	f, _ := fp8Of(parts[0])
	if !satfinite {
		return d.errf("cvt to 8-bit floats needs .satfinite")
	}
	switch parts[1] {
	case "f32":
		if err := d.nargs(s, 3); err != nil {
			return err
		}
		f32t := parseType("f32")
		if in.a, err = d.src(s.args[1], f32t); err != nil {
			return err
		}
		if in.b, err = d.src(s.args[2], f32t); err != nil {
			return err
		}
		in.f = func(a, b, _ uint64) uint64 { return f.round(float64(f32(a)), relu)<<8 | f.round(float64(f32(b)), relu) }
	case "f16x2":
		if err := d.nargs(s, 2); err != nil {
			return err
		}
		if in.a, err = d.src(s.args[1], parseType("b32")); err != nil {
			return err
		}
		in.f = func(a, _, _ uint64) uint64 {
			return f.round(decodeFmt(a>>16&0xffff, fmtF16), relu)<<8 | f.round(decodeFmt(a&0xffff, fmtF16), relu)
		}
	default:
		return d.errf("cvt to 8-bit floats takes .f32 or .f16x2")
	}
	return nil
}
