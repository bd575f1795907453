package vgpu

import (
	"math"
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

// decodeALU decodes an arithmetic or logic instruction by its row of aluOps (aluops.go).
func (d *decoder) decodeALU(in *inst, m mods, s pinst) error {
	if len(m.types) != 1 {
		return d.errf("expects one type suffix")
	}
	t := m.types[0]
	row, known := aluOps[m.base]
	if row.decode != nil {
		return row.decode(d, in, m, s, t)
	}
	half := t.name == "f16" || t.name == "bf16" || t.name == "f16x2" || t.name == "bf16x2"
	if half && row.half {
		return d.decodeHalf(in, m, s, t)
	}
	if half || t.name == "tf32" || t.size > 8 {
		return d.errf("%s arithmetic is not supported yet (convert to f32 with cvt)", t.name)
	}
	if !known {
		return d.errf("")
	}
	if err := d.nargs(s, row.nsrc+1); err != nil {
		return err
	}
	for _, w := range m.words {
		if row.word == "" || w != row.word {
			return d.errf("unknown modifier .%s", w)
		}
	}
	if err := d.aluOperands(in, row, m, s, t); err != nil {
		return err
	}
	in.exec = execALU
	if t.kind == 'f' {
		return d.floatALU(in, row, m, t)
	}
	return d.intALU(in, row, m, t)
}

// aluOperands reads the destination and the row's sources into in.d, in.a, in.b and in.c.
func (d *decoder) aluOperands(in *inst, row aluRow, m mods, s pinst, t ptype) error {
	srcT := row.srcs.types(t, m)
	r, err := d.dst(s.args[0])
	if err != nil {
		return err
	}
	in.d = r
	regs := [3]*int32{&in.a, &in.b, &in.c}
	for i := 0; i < row.nsrc; i++ {
		x, err := d.src(s.args[1+i], srcT[i])
		if err != nil {
			return err
		}
		*regs[i] = x
	}
	return nil
}

// intALU chooses an integer instruction's lane function (PTX ISA 8.x, sections 9.7.1 and 9.7.8).
func (d *decoder) intALU(in *inst, row aluRow, m mods, t ptype) error {
	n := t.bits()
	signed := t.kind == 's'
	if m.rnd != "" || m.ftz || m.approx || m.full {
		return d.errf("floating-point modifiers on an integer type")
	}
	if m.sat && !(signed && n == 32 && row.intSat) {
		return d.errf(".sat applies only to s32 add, sub and mad.hi")
	}
	if row.intOp == nil {
		return d.errf("")
	}
	k := intKind{t: t, n: n, mask: sizeMask(t.size), signed: signed, sat: m.sat}
	f, err := row.intOp(k, in, m)
	if err != nil {
		return d.errf("%v", err)
	}
	if f != nil {
		in.f = f
	}
	return nil
}

// floatALU chooses an f32 or f64 instruction's lane function (PTX ISA 8.x, section 9.7.3).
func (d *decoder) floatALU(in *inst, row aluRow, m mods, t ptype) error {
	is64 := t.name == "f64"
	if m.rnd != "" && (m.rnd == "rni" || m.rnd == "rzi" || m.rnd == "rmi" || m.rnd == "rpi" || m.rnd == "rna") {
		return d.errf("rounding .%s is for cvt", m.rnd)
	}
	k := floatKind{is64: is64, mode: roundMode(m.rnd), ftz: m.ftz && !is64, sat: m.sat}
	in.class = ClassFP
	in.mode = k.mode
	in.flops = 1
	if row.floatOp == nil {
		return d.errf("")
	}
	if f := row.floatOp(k, in); f != nil {
		in.f = k.post(f)
	}
	return nil
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
	cmpOp, boolOp, err := d.setpWords(m)
	if err != nil {
		return err
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
	if err := d.setpOperands(in, s, t, boolOp); err != nil {
		return err
	}
	if in.cmp, err = d.comparison(cmpOp, t, m.ftz); err != nil {
		return err
	}
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

// setpBoolOps are setp's ways of combining the comparison with a predicate, as in.boolop.
var setpBoolOps = map[string]uint8{"and": 0, "or": 1, "xor": 2}

// setpCmps are setp's comparisons (PTX ISA 8.x, section 9.7.4.2).
var setpCmps = map[string]bool{"eq": true, "ne": true, "lt": true, "le": true, "gt": true, "ge": true,
	"lo": true, "ls": true, "hi": true, "hs": true, "equ": true, "neu": true, "ltu": true, "leu": true,
	"gtu": true, "geu": true, "num": true, "nan": true}

// setpWords reads setp's comparison and its optional combining operation.
func (d *decoder) setpWords(m mods) (cmpOp, boolOp string, err error) {
	if m.lo { // .lo and .hi are comparisons here, not the multiply halves
		cmpOp = "lo"
	}
	if m.hi {
		cmpOp = "hi"
	}
	for _, w := range m.words {
		_, isBool := setpBoolOps[w]
		switch {
		case setpCmps[w]:
			cmpOp = w
		case isBool:
			boolOp = w
		default:
			return "", "", d.errf("unknown modifier .%s", w)
		}
	}
	if cmpOp == "" {
		return "", "", d.errf("needs a comparison")
	}
	return cmpOp, boolOp, nil
}

// setpOperands reads setp's destinations (p or p|q) into in.d and in.d2, its sources into in.a and
// in.b, and the combined predicate (if boolOp is set) into in.c.
func (d *decoder) setpOperands(in *inst, s pinst, t ptype, boolOp string) error {
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
		in.boolop = setpBoolOps[boolOp]
	}
	return nil
}

// comparison returns setp's comparison op on type t (PTX ISA 8.x, section 9.7.4.2, tables
// "Integer comparisons" and "Floating-point comparisons").
func (d *decoder) comparison(op string, t ptype, ftz bool) (func(a, b uint64) bool, error) {
	switch t.kind {
	case 'f':
		return d.floatComparison(op, t, ftz)
	case 'p':
		return nil, d.errf("setp on predicates")
	}
	return d.intComparison(op, t)
}

// floatCmps are the ordered float comparisons (false when either operand is NaN); with a "u"
// suffix (equ, ltu …) they are unordered (true when either is NaN).
var floatCmps = map[string]func(x, y float64) bool{
	"eq": func(x, y float64) bool { return x == y }, "ne": func(x, y float64) bool { return x != y },
	"lt": func(x, y float64) bool { return x < y }, "le": func(x, y float64) bool { return x <= y },
	"gt": func(x, y float64) bool { return x > y }, "ge": func(x, y float64) bool { return x >= y },
}

func (d *decoder) floatComparison(op string, t ptype, ftz bool) (func(a, b uint64) bool, error) {
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
	ordered := true
	var c func(x, y float64) bool
	switch {
	case op == "num": // neither is NaN
		c = func(x, y float64) bool { return true }
	case op == "nan": // either is NaN
		c, ordered = func(x, y float64) bool { return false }, false
	case floatCmps[op] != nil:
		c = floatCmps[op]
	case len(op) == 3 && op[2] == 'u' && floatCmps[op[:2]] != nil:
		c, ordered = floatCmps[op[:2]], false
	default:
		return nil, d.errf("comparison .%s is not defined on floats", op)
	}
	if ordered {
		return func(a, b uint64) bool {
			x, y := conv(a), conv(b)
			return !math.IsNaN(x) && !math.IsNaN(y) && c(x, y)
		}, nil
	}
	return func(a, b uint64) bool {
		x, y := conv(a), conv(b)
		return math.IsNaN(x) || math.IsNaN(y) || c(x, y)
	}, nil
}

// intCmps are the integer comparisons, as "less than" (lt) turned around; lo, ls, hi and hs
// compare unsigned whatever the type.
var intCmps = map[string]struct {
	swap, not, unsigned bool
}{
	"lt": {}, "lo": {unsigned: true},
	"le": {swap: true, not: true}, "ls": {swap: true, not: true, unsigned: true},
	"gt": {swap: true}, "hi": {swap: true, unsigned: true},
	"ge": {not: true}, "hs": {not: true, unsigned: true},
}

func (d *decoder) intComparison(op string, t ptype) (func(a, b uint64) bool, error) {
	n := t.bits()
	mask := sizeMask(t.size)
	switch op {
	case "eq":
		return func(a, b uint64) bool { return a&mask == b&mask }, nil
	case "ne":
		return func(a, b uint64) bool { return a&mask != b&mask }, nil
	}
	c, ok := intCmps[op]
	if !ok {
		return nil, d.errf("comparison .%s is not defined on integers", op)
	}
	signed := t.kind == 's' && !c.unsigned
	lt := func(a, b uint64) bool {
		if signed {
			return sext(a, n) < sext(b, n)
		}
		return a&mask < b&mask
	}
	switch {
	case c.swap && c.not:
		return func(a, b uint64) bool { return !lt(b, a) }, nil
	case c.swap:
		return func(a, b uint64) bool { return lt(b, a) }, nil
	case c.not:
		return func(a, b uint64) bool { return !lt(a, b) }, nil
	}
	return lt, nil
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
