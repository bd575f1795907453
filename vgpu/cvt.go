package vgpu

import "math"

// decodeCvt: PTX ISA 8.x, section 9.7.9.21 "cvt". Float-to-integer conversions saturate to the
// destination range and turn NaN into 0; integer-to-integer conversions wrap unless .sat;
// narrowing float conversions round by the given mode (f16 and bf16 included). The lane function
// comes from cvtKinds, by whether the source and the destination are floats.
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
	in.exec = execALU
	c := cvtConv{dt: dt, st: st, lim: lim, mode: roundMode(m.rnd), ftz: m.ftz, sat: m.sat, rnd: m.rnd,
		dmask: sizeMask(dt.size)}
	f, err := cvtKinds[boolIndex(st.kind == 'f')][boolIndex(dt.kind == 'f')](d, c)
	if err != nil {
		return err
	}
	in.f = f
	return nil
}

func boolIndex(b bool) int {
	if b {
		return 1
	}
	return 0
}

// cvtKinds are cvt's lane-function builders by [the source is a float][the destination is a float].
var cvtKinds = [2][2]func(d *decoder, c cvtConv) (laneFunc, error){
	{cvtIntInt, cvtIntFloat},
	{cvtFloatInt, cvtFloatFloat},
}

// cvtConv is one conversion: its types, rounding and modifiers.
type cvtConv struct {
	dt, st   ptype
	lim      cvtLimit
	mode     uint8  // rounding mode (float.go)
	rnd      string // the rounding modifier as written ("" when none)
	ftz, sat bool
	dmask    uint64 // the destination's bits
}

// intRnd says the rounding is to an integer (.rni, .rzi, .rmi, .rpi).
func (c cvtConv) intRnd() bool {
	return c.rnd == "rni" || c.rnd == "rzi" || c.rnd == "rmi" || c.rnd == "rpi"
}

// readF reads a float source as float64.
func (c cvtConv) readF(v uint64) float64 {
	switch c.st.name {
	case "f16":
		return decodeFmt(v&0xffff, fmtF16)
	case "bf16":
		return decodeFmt(v&0xffff, fmtBF16)
	case "f32":
		x := f32(v)
		if c.ftz {
			x = ftz32(x)
		}
		return float64(x)
	}
	return f64(v)
}

// readI reads an integer source, sign-extended for signed types.
func (c cvtConv) readI(v uint64) uint64 {
	if c.st.kind == 's' {
		return uint64(sext(v, c.st.bits()))
	}
	return v & sizeMask(c.st.size)
}

// writeF writes x (whose exact value differs from it by a tiny amount of sign esign) in the
// destination float format.
func (c cvtConv) writeF(x float64, esign int) uint64 {
	if c.sat {
		x = sat01(x)
	}
	switch c.dt.name {
	case "f16":
		return c.lim.apply(roundF16(x, c.mode, esign), fmtF16)
	case "bf16":
		return c.lim.apply(roundBF16(x, c.mode, esign), fmtBF16)
	case "f32":
		r := roundF32(x, c.mode, esign)
		if c.ftz {
			r = ftz32(r)
		}
		return b32(r)
	}
	return b64f(roundF64(x, c.mode, esign))
}

func cvtFloatFloat(d *decoder, c cvtConv) (laneFunc, error) {
	if c.intRnd() {
		if c.st.name != c.dt.name {
			return nil, d.errf("integer rounding needs the same float type")
		}
		return func(a, _, _ uint64) uint64 { return c.writeF(roundInt(c.readF(a), c.mode), 0) }, nil
	}
	if c.dt.size < c.st.size && c.rnd == "" {
		return nil, d.errf("a narrowing float conversion needs a rounding mode")
	}
	return func(a, _, _ uint64) uint64 { return c.writeF(c.readF(a), 0) }, nil
}

func cvtFloatInt(d *decoder, c cvtConv) (laneFunc, error) {
	if !c.intRnd() {
		return nil, d.errf("a float-to-integer conversion needs .rni, .rzi, .rmi or .rpi")
	}
	lo, hi := intRange(c.dt)
	nan := nanToInt(c.st, c.dt)
	dmask, signed := c.dmask, c.dt.kind == 's'
	return func(a, _, _ uint64) uint64 {
		x := roundInt(c.readF(a), c.mode)
		switch {
		case math.IsNaN(x):
			return nan
		case x <= lo:
			return uint64(int64(lo)) & dmask
		case x >= hi:
			if signed {
				return dmask >> 1 // MAXINT (float64(hi) of .s64 is 2^63, past int64)
			}
			return dmask
		}
		if x >= 1<<63 {
			return uint64(x)
		}
		return uint64(int64(x)) & dmask
	}, nil
}

func cvtIntFloat(d *decoder, c cvtConv) (laneFunc, error) {
	if c.intRnd() {
		return nil, d.errf("an integer-to-float conversion takes .rn, .rz, .rm or .rp")
	}
	signed := c.st.kind == 's'
	return func(a, _, _ uint64) uint64 {
		x, e := intToFloat(c.readI(a), signed, c.mode)
		return c.writeF(x, e)
	}, nil
}

func cvtIntInt(d *decoder, c cvtConv) (laneFunc, error) {
	if c.rnd != "" {
		return nil, d.errf("integer-to-integer conversions take no rounding mode")
	}
	srcSigned, dstSigned := c.st.kind == 's', c.dt.kind == 's'
	lo, hi := intRange(c.dt)
	dmask, sat := c.dmask, c.sat
	// the largest value of the destination, where a .sat conversion clamps
	top := dmask
	if dstSigned {
		top = uint64(int64(hi)) & dmask
	}
	return func(a, _, _ uint64) uint64 {
		v := c.readI(a)
		if sat {
			if srcSigned {
				x := int64(v)
				if float64(x) < lo {
					return uint64(int64(lo)) & dmask
				}
				if float64(x) > hi {
					return top
				}
			} else if float64(v) > hi {
				return top
			}
		}
		return v & dmask
	}, nil
}

func intRange(t ptype) (lo, hi float64) {
	n := t.bits()
	if t.kind == 's' {
		return -math.Ldexp(1, int(n)-1), math.Ldexp(1, int(n)-1) - 1
	}
	return 0, math.Ldexp(1, int(n)) - 1
}
