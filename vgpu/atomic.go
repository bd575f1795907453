package vgpu

import (
	"math/bits"
	"slices"
	"sync"
	"sync/atomic"
	"unsafe"
)

// Atomics: atom and red (PTX ISA 8.x, section 9.7.13.5 "Parallel Synchronization and Communication
// Instructions: atom" and 9.7.13.6 "red"). Each lane's read-modify-write is one indivisible step;
// the lanes of a warp apply theirs in lane order (the ISA leaves the order among lanes unspecified).
// Global memory is shared by the CTAs that run in parallel goroutines, so a global atomic is a
// compare-and-swap loop on the buffer word with sync/atomic (or, for a word the host has not
// aligned, a striped lock): every atomic of a launch is sequentially consistent with every other.
// Shared memory belongs to one CTA, which one goroutine runs, so shared atomics are plain
// read-modify-writes. Plain loads and stores are not synchronised with atomics of other CTAs (as on
// hardware, mixing them without a fence is a data race in the kernel).

// atomic operations
const (
	atAdd uint8 = iota
	atMin
	atMax
	atExch
	atCas
	atAnd
	atOr
	atXor
	atInc
	atDec
)

var atomOps = map[string]uint8{"add": atAdd, "min": atMin, "max": atMax, "exch": atExch, "cas": atCas,
	"and": atAnd, "or": atOr, "xor": atXor, "inc": atInc, "dec": atDec}

// atomRow is one atomic operation: the types it is defined on (PTX ISA 8.x, 9.7.13.5; integer
// type names are accepted as the bits of .b32/.b64 ones; 16-bit and vector atomics are not
// supported) and the function that builds its new = f(old, b, c) for a type's bit mask.
type atomRow struct {
	types []string
	build func(t ptype, mask uint64) func(old, b, c uint64) uint64
}

// atomRows is the atomic-operation table, by operation (atAdd …).
var atomRows = [...]atomRow{
	atAdd:  {[]string{"u32", "s32", "u64", "s64", "f32", "f64"}, atomAdd},
	atMin:  {[]string{"u32", "s32", "u64", "s64"}, atomMinMax(true)},
	atMax:  {[]string{"u32", "s32", "u64", "s64"}, atomMinMax(false)},
	atExch: {bitTypes, func(_ ptype, mask uint64) func(old, b, c uint64) uint64 { return atomExch(mask) }},
	atCas:  {bitTypes, func(_ ptype, mask uint64) func(old, b, c uint64) uint64 { return atomCas(mask) }},
	atAnd:  {bitTypes, atomLogic(func(a, b uint64) uint64 { return a & b })},
	atOr:   {bitTypes, atomLogic(func(a, b uint64) uint64 { return a | b })},
	atXor:  {bitTypes, atomLogic(func(a, b uint64) uint64 { return a ^ b })},
	atInc:  {[]string{"u32"}, func(_ ptype, _ uint64) func(old, b, c uint64) uint64 { return atomInc }},
	atDec:  {[]string{"u32"}, func(_ ptype, mask uint64) func(old, b, c uint64) uint64 { return atomDec(mask) }},
}

// bitTypes are the types of the bitwise atomics (exch, cas, and, or, xor).
var bitTypes = []string{"b32", "b64", "u32", "s32", "u64", "s64"}

// atomFunc returns new = f(old, b, c) for op on type t, or nil when the combination does not exist
// in the ISA (or is not supported: 16-bit and vector atomics).
func atomFunc(op uint8, t ptype) func(old, b, c uint64) uint64 {
	row := atomRows[op]
	if !slices.Contains(row.types, t.name) {
		return nil
	}
	return row.build(t, sizeMask(t.size))
}

func atomExch(mask uint64) func(old, b, c uint64) uint64 {
	return func(_, b, _ uint64) uint64 { return b & mask }
}

// atomCas (PTX ISA 8.x, 9.7.13.5): *a = (*a == b) ? c : *a
func atomCas(mask uint64) func(old, b, c uint64) uint64 {
	return func(old, b, c uint64) uint64 {
		if old == b&mask {
			return c & mask
		}
		return old
	}
}

func atomLogic(op func(a, b uint64) uint64) func(t ptype, mask uint64) func(old, b, c uint64) uint64 {
	return func(_ ptype, mask uint64) func(old, b, c uint64) uint64 {
		return func(old, b, _ uint64) uint64 { return op(old, b) & mask }
	}
}

// atomInc (PTX ISA 8.x, 9.7.13.5): (old >= b) ? 0 : old+1
func atomInc(old, b, _ uint64) uint64 {
	if uint32(old) >= uint32(b) {
		return 0
	}
	return uint64(uint32(old) + 1)
}

// atomDec: ((old == 0) || (old > b)) ? b : old-1
func atomDec(mask uint64) func(old, b, c uint64) uint64 {
	return func(old, b, _ uint64) uint64 {
		if uint32(old) == 0 || uint32(old) > uint32(b) {
			return b & mask
		}
		return uint64(uint32(old) - 1)
	}
}

func atomAdd(t ptype, _ uint64) func(old, b, c uint64) uint64 {
	switch t.name {
	case "u32", "s32":
		return func(old, b, _ uint64) uint64 { return uint64(uint32(old) + uint32(b)) }
	case "f32":
		// atom.add.f32 rounds to nearest even and flushes subnormal inputs and results to
		// sign-preserving zero (PTX ISA 8.x, 9.7.13.5)
		return func(old, b, _ uint64) uint64 {
			return b32(ftz32(ftz32(f32(old)) + ftz32(f32(b))))
		}
	case "f64":
		return func(old, b, _ uint64) uint64 { return b64f(f64(old) + f64(b)) }
	}
	return func(old, b, _ uint64) uint64 { return old + b }
}

// atomMinMax builds min (isMin) or max, compared as t's integers.
func atomMinMax(isMin bool) func(t ptype, mask uint64) func(old, b, c uint64) uint64 {
	return func(t ptype, mask uint64) func(old, b, c uint64) uint64 {
		less := func(a, b uint64) bool { return a < b }
		switch t.name {
		case "u32":
			less = func(a, b uint64) bool { return uint32(a) < uint32(b) }
		case "s32":
			less = func(a, b uint64) bool { return int32(a) < int32(b) }
		case "s64":
			less = func(a, b uint64) bool { return int64(a) < int64(b) }
		}
		if isMin {
			return func(old, b, _ uint64) uint64 {
				if less(b, old) {
					return b & mask
				}
				return old
			}
		}
		return func(old, b, _ uint64) uint64 {
			if less(old, b) {
				return b & mask
			}
			return old
		}
	}
}

type atomOp struct {
	f   func(old, b, c uint64) uint64
	red bool
}

// decodeAtom: atom{.sem}{.scope}{.space}.op.type d, [a], b{, c} and red{.sem}{.scope}{.space}.op.type
// [a], b.
func (d *decoder) decodeAtom(in *inst, m mods, s pinst) error {
	in.class = ClassAtomic
	red := m.base == "red"
	if len(m.types) != 1 {
		return d.errf("expects one type suffix")
	}
	t := m.types[0]
	opName := ""
	for _, w := range m.words {
		if _, ok := atomOps[w]; ok && opName == "" {
			opName = w
			continue
		}
		if w == "L2::cache_hint" || w == "sc" {
			continue
		}
		return d.errf("unknown modifier .%s", w)
	}
	if opName == "" {
		return d.errf("needs an operation (add, min, max, exch, cas, and, or, xor, inc, dec)")
	}
	if m.vec != 1 {
		return d.errf("vector atomics are not supported")
	}
	if m.hasSp && m.space != spGlobal && m.space != spShared && m.space != spDsmem {
		return d.errf("atomics work on .global, .shared or .shared::cluster memory only")
	}
	op := atomOps[opName]
	f := atomFunc(op, t)
	if f == nil {
		return d.errf("%s on .%s is not supported (add: u32 s32 u64 s64 f32 f64; min/max: u32 s32 u64 s64; inc/dec: u32; exch cas and or xor: b32 b64)", opName, t.name)
	}
	if red && op == atCas {
		return d.errf("red has no cas")
	}
	n := 3
	if op == atCas {
		n = 4
	}
	if red {
		n = 2
	}
	if err := d.nargs(s, n); err != nil {
		return err
	}
	args := s.args
	in.d = -1
	if !red {
		r, err := d.dst(args[0])
		if err != nil {
			return err
		}
		in.d = r
		args = args[1:]
	}
	if args[0].kind != oAddr {
		return d.errf("expects an address operand [..]")
	}
	in.space = m.space
	in.size = uint8(t.size)
	in.nvec = 1
	if err := d.address(in, args[0], m.space); err != nil {
		return err
	}
	var err error
	if in.b, err = d.src(args[1], t); err != nil {
		return err
	}
	in.c = 0
	if op == atCas {
		if in.c, err = d.src(args[2], t); err != nil {
			return err
		}
	}
	in.atom = &atomOp{f: f, red: red}
	in.sem = semOf(s.op)
	in.exec = execAtom
	return nil
}

var littleEndian = func() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}()

// atomLocks serialise global atomics on words the host did not align (a Buffer made from a
// sub-slice): 64 stripes by address.
var atomLocks [64]sync.Mutex

// globalRMW applies f to the n-byte word at mem atomically with respect to every other global
// atomic of the process and returns the old value.
func globalRMW(mem []byte, n int, f func(old, b, c uint64) uint64, b, c uint64) uint64 {
	p := unsafe.Pointer(&mem[0])
	if littleEndian && uintptr(p)%uintptr(n) == 0 {
		if n == 4 {
			w := (*uint32)(p)
			for {
				old := atomic.LoadUint32(w)
				if atomic.CompareAndSwapUint32(w, old, uint32(f(uint64(old), b, c))) {
					return uint64(old)
				}
			}
		}
		w := (*uint64)(p)
		for {
			old := atomic.LoadUint64(w)
			if atomic.CompareAndSwapUint64(w, old, f(old, b, c)) {
				return old
			}
		}
	}
	mu := &atomLocks[uintptr(p)>>3%uintptr(len(atomLocks))]
	mu.Lock()
	old := readN(mem, n)
	writeN(mem, n, f(old, b, c))
	mu.Unlock()
	return old
}

func execAtom(w *warp, in *inst, m uint32) {
	c := w.c
	c.memOp(w, in, m, accAtomic)
	n := int(in.size)
	f := in.atom.f
	b, cc := &w.regs[in.b], &w.regs[in.c]
	for t := m; t != 0; t &= t - 1 {
		l := bits.TrailingZeros32(t)
		lane := &c.lanes[l]
		var old uint64
		if in.space == spGlobal || lane.sp == spGlobal || lane.sp == spConst {
			old = globalRMW(lane.mem, n, f, b[l], cc[l])
		} else if lane.sp == spShared || lane.sp == spDsmem {
			// a cluster's CTAs take turns on one worker (cluster.go), so another CTA's shared
			// word is read and written here without a lock, as the CTA's own is
			old = readN(lane.mem, n)
			writeN(lane.mem, n, f(old, b[l], cc[l]))
		} else {
			c.fault(&Fault{Kind: "unsupported", Space: spaceNames[lane.sp], Address: w.addr[l],
				Msg: "an atomic on a generic address outside .global and .shared memory"}, w, l, in)
		}
		if in.d >= 0 {
			w.regs[in.d][l] = old
		}
	}
}

// strongLoad and strongStore access an n-byte global word atomically where the host memory is
// aligned for it (else through the striped lock that unaligned atomics take).
func strongLoad(mem []byte, n int) uint64 {
	p := unsafe.Pointer(&mem[0])
	if littleEndian && uintptr(p)%uintptr(n) == 0 {
		switch n {
		case 4:
			return uint64(atomic.LoadUint32((*uint32)(p)))
		case 8:
			return atomic.LoadUint64((*uint64)(p))
		}
	}
	if n < 4 {
		return readN(mem, n)
	}
	mu := &atomLocks[uintptr(p)>>3%uintptr(len(atomLocks))]
	mu.Lock()
	v := readN(mem, n)
	mu.Unlock()
	return v
}

func strongStore(mem []byte, n int, v uint64) {
	p := unsafe.Pointer(&mem[0])
	if littleEndian && uintptr(p)%uintptr(n) == 0 {
		switch n {
		case 4:
			atomic.StoreUint32((*uint32)(p), uint32(v))
			return
		case 8:
			atomic.StoreUint64((*uint64)(p), v)
			return
		}
	}
	if n < 4 {
		writeN(mem, n, v)
		return
	}
	mu := &atomLocks[uintptr(p)>>3%uintptr(len(atomLocks))]
	mu.Lock()
	writeN(mem, n, v)
	mu.Unlock()
}

func execLdStrong(w *warp, in *inst, m uint32) {
	c := w.c
	c.memOp(w, in, m, accLoad)
	n := int(in.size)
	for t := m; t != 0; t &= t - 1 {
		l := bits.TrailingZeros32(t)
		lane := &c.lanes[l]
		global := in.space == spGlobal || lane.sp == spGlobal
		for i := 0; i < int(in.nvec); i++ {
			var v uint64
			if global {
				v = strongLoad(lane.mem[i*n:], n)
			} else {
				v = readN(lane.mem[i*n:], n)
			}
			if in.signed && n < 8 {
				v = uint64(sext(v, uint(n)*8))
			}
			w.regs[in.vec[i]][l] = v
		}
	}
}

func execStStrong(w *warp, in *inst, m uint32) {
	c := w.c
	c.memOp(w, in, m, accStore)
	n := int(in.size)
	for t := m; t != 0; t &= t - 1 {
		l := bits.TrailingZeros32(t)
		lane := &c.lanes[l]
		global := in.space == spGlobal || lane.sp == spGlobal
		for i := 0; i < int(in.nvec); i++ {
			if global {
				strongStore(lane.mem[i*n:], n, w.regs[in.vec[i]][l])
			} else {
				writeN(lane.mem[i*n:], n, w.regs[in.vec[i]][l])
			}
		}
	}
}
