package vgpu

// Conversions to the 16-bit float formats with .relu and .satfinite, the packed two-source forms,
// and what a NaN becomes in an integer.

// cvtLimit is what cvt's .relu and .satfinite do to a result in a 16-bit float format (PTX ISA
// 9.0, section 9.7.9.21 "cvt"; .relu since PTX ISA 7.0, .satfinite on these since 8.1): .relu
// clamps a negative result to +0 and makes a NaN the canonical NaN; .satfinite turns a result past
// the largest finite number (an infinity, the input's or the rounding's) into that number with
// its sign, and leaves NaN a NaN.
type cvtLimit struct{ relu, satfinite bool }

// cvtLimits reads cvt's .relu and .satfinite words, allowed only on conversions from .f32 to
// .f16, .bf16, .f16x2 and .bf16x2; any other word is an error.
func (d *decoder) cvtLimits(m mods, dt, st ptype) (cvtLimit, error) {
	var lim cvtLimit
	for _, w := range m.words {
		switch w {
		case "relu":
			lim.relu = true
		case "satfinite":
			lim.satfinite = true
		default:
			return lim, d.errf("cvt.%s is not supported", w)
		}
	}
	if (lim.relu || lim.satfinite) && (st.name != "f32" || dt.name != "f16" && dt.name != "bf16" && dt.name != "f16x2" && dt.name != "bf16x2") {
		return lim, d.errf(".relu and .satfinite are for cvt from .f32 to .f16, .bf16, .f16x2 or .bf16x2")
	}
	return lim, nil
}

// apply limits the 16-bit result r of format f.
func (lim cvtLimit) apply(r uint16, f ffmt) uint64 {
	expAll := uint16(1)<<f.expBits - 1
	isNaN := r>>f.mant&expAll == expAll && r&(1<<f.mant-1) != 0
	isInf := r>>f.mant&expAll == expAll && r&(1<<f.mant-1) == 0
	switch {
	case isNaN && lim.relu:
		return uint64(expAll<<f.mant | 1<<(f.mant-1))
	case isNaN:
		return uint64(r)
	case lim.relu && r&0x8000 != 0:
		return 0
	case lim.satfinite && isInf:
		return uint64(r&0x8000 | (expAll-1)<<f.mant | (1<<f.mant - 1))
	}
	return uint64(r)
}

// decodeCvtPair: cvt.frnd2{.relu}{.satfinite}.f16x2.f32 d, a, b and the same to .bf16x2 (PTX ISA
// 9.0, section 9.7.9.21 "cvt"; PTX ISA 7.0, sm_80): a and b are rounded to the 16-bit format
// (.rn or .rz) and packed with a's value in the upper half of d and b's in the lower half.
func (d *decoder) decodeCvtPair(in *inst, m mods, s pinst, dt ptype, lim cvtLimit) error {
	if m.rnd != "rn" && m.rnd != "rz" || m.ftz || m.sat {
		return d.errf("cvt to .%s takes .rn or .rz (with .relu or .satfinite), nothing else", dt.name)
	}
	if err := d.nargs(s, 3); err != nil {
		return err
	}
	var err error
	if in.d, err = d.dst(s.args[0]); err != nil {
		return err
	}
	f32t := parseType("f32")
	if in.a, err = d.src(s.args[1], f32t); err != nil {
		return err
	}
	if in.b, err = d.src(s.args[2], f32t); err != nil {
		return err
	}
	f := fmtF16
	if dt.name == "bf16x2" {
		f = fmtBF16
	}
	mode := roundMode(m.rnd)
	one := func(v uint64) uint64 { return lim.apply(uint16(roundFmt(float64(f32(v)), mode, 0, f)), f) }
	in.f = func(a, b, _ uint64) uint64 { return one(a)<<16 | one(b) }
	in.exec = execALU
	return nil
}

// nanToInt is what a NaN of source type st becomes in the integer type dt (PTX ISA 9.0, section
// 9.7.9.21 "cvt", float-to-integer conversions): 0, unless the source is .f64 or the destination
// is 64-bit, when it is 1 << (bits of dt − 1): MININT for a signed type, (MAXINT >> 1) + 1 for
// an unsigned one.
func nanToInt(st, dt ptype) uint64 {
	if st.name != "f64" && dt.size != 8 {
		return 0
	}
	return uint64(1) << (dt.bits() - 1)
}
