package vgpu

import "math/bits"

// match.sync and redux.sync: warp-collective like shfl.sync and vote.sync, and like them a warp
// synchronisation of their member mask for the hazard check (racecheck.go).

// decodeMatch: match.any.sync.b32/.b64 d, a, membermask and match.all.sync.b32/.b64 d[|p], a,
// membermask (PTX ISA 8.x, 9.7.12.8 "match.sync").
func (d *decoder) decodeMatch(in *inst, m mods, s pinst) error {
	mode := oneOf(m, "any", "all")
	if mode == "" || oneOf(m, "sync") == "" || len(m.types) != 1 || (m.types[0].name != "b32" && m.types[0].name != "b64") {
		return d.errf("only match.any.sync and match.all.sync on .b32 or .b64 are supported")
	}
	if err := d.nargs(s, 3); err != nil {
		return err
	}
	dst := s.args[0]
	in.d2 = -1
	if dst.kind == oPair {
		if mode != "all" {
			return d.errf("only match.all has a predicate result")
		}
		p, _, err := d.pred(dst.elems[1])
		if err != nil {
			return err
		}
		in.d2, dst = p, dst.elems[0]
	}
	var err error
	if in.d, err = d.dst(dst); err != nil {
		return err
	}
	if in.a, err = d.src(s.args[1], m.types[0]); err != nil {
		return err
	}
	if in.target, err = d.src(s.args[2], parseType("b32")); err != nil {
		return err
	}
	in.size = uint8(m.types[0].size)
	if mode == "all" {
		in.mode = 1
	}
	in.class = ClassShuffle
	in.exec = execMatch
	return nil
}

func execMatch(w *warp, in *inst, m uint32) {
	member := uint32(w.regs[in.target][bits.TrailingZeros32(m)])
	converged(w, in, m, member)
	w.c.warpSync(w, member)
	a := &w.regs[in.a]
	mask := sizeMask(int(in.size))
	all := true
	first := a[bits.TrailingZeros32(m)] & mask
	for t := m; t != 0; t &= t - 1 {
		all = all && a[bits.TrailingZeros32(t)]&mask == first
	}
	var p uint32
	for t := m; t != 0; t &= t - 1 {
		l := bits.TrailingZeros32(t)
		var r uint32
		switch {
		case in.mode == 0: // any: the lanes holding the same value
			for u := m; u != 0; u &= u - 1 {
				if k := bits.TrailingZeros32(u); a[k]&mask == a[l]&mask {
					r |= 1 << k
				}
			}
		case all:
			r, p = m, m
		}
		w.regs[in.d][l] = uint64(r)
	}
	if in.d2 >= 0 {
		w.preds[in.d2] = w.preds[in.d2]&^m | p
	}
}

// decodeRedux: redux.sync.op.type d, a, membermask with add, min, max on .u32/.s32 and and, or,
// xor on .b32 (PTX ISA 8.x, 9.7.12.10 "redux.sync").
func (d *decoder) decodeRedux(in *inst, m mods, s pinst) error {
	op := oneOf(m, "add", "min", "max", "and", "or", "xor")
	if op == "" || oneOf(m, "sync") == "" || len(m.types) != 1 {
		return d.errf("needs .sync, an operation and a type")
	}
	t := m.types[0]
	arith := op == "add" || op == "min" || op == "max"
	if arith && t.name != "u32" && t.name != "s32" || !arith && t.name != "b32" {
		return d.errf("redux.sync.%s on .%s is not supported (add, min, max: u32, s32; and, or, xor: b32)", op, t.name)
	}
	if err := d.nargs(s, 3); err != nil {
		return err
	}
	var err error
	if in.d, err = d.dst(s.args[0]); err != nil {
		return err
	}
	if in.a, err = d.src(s.args[1], t); err != nil {
		return err
	}
	if in.target, err = d.src(s.args[2], parseType("b32")); err != nil {
		return err
	}
	signed := t.name == "s32"
	in.f = map[string]func(x, y, _ uint64) uint64{
		"add": func(x, y, _ uint64) uint64 { return uint64(uint32(x) + uint32(y)) },
		"min": func(x, y, _ uint64) uint64 {
			if signed && int32(y) < int32(x) || !signed && uint32(y) < uint32(x) {
				return y
			}
			return x
		},
		"max": func(x, y, _ uint64) uint64 {
			if signed && int32(y) > int32(x) || !signed && uint32(y) > uint32(x) {
				return y
			}
			return x
		},
		"and": func(x, y, _ uint64) uint64 { return x & y },
		"or":  func(x, y, _ uint64) uint64 { return x | y },
		"xor": func(x, y, _ uint64) uint64 { return x ^ y },
	}[op]
	in.class = ClassShuffle
	in.exec = execRedux
	return nil
}

func execRedux(w *warp, in *inst, m uint32) {
	member := uint32(w.regs[in.target][bits.TrailingZeros32(m)])
	converged(w, in, m, member)
	w.c.warpSync(w, member)
	a := &w.regs[in.a]
	r := a[bits.TrailingZeros32(m)] & 0xffffffff
	for t := m & (m - 1); t != 0; t &= t - 1 {
		r = in.f(r, a[bits.TrailingZeros32(t)]&0xffffffff, 0)
	}
	for t := m; t != 0; t &= t - 1 {
		w.regs[in.d][bits.TrailingZeros32(t)] = r
	}
}
