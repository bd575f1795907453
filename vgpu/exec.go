package vgpu

import (
	"fmt"
	"math"
	"math/bits"
	"strings"
)

// The interpreter. A CTA's threads are grouped into warps of 32 lanes (PTX ISA 8.x, section 2.2.1
// "Cooperative Thread Arrays": a warp is a maximal subset of threads of a CTA that execute the same
// instructions simultaneously). The register file of a warp is one [32]uint64 row per register, so
// that every instruction is one loop over the lanes.
//
// Divergence: each lane has its own PC; the warp runs the group of lanes whose PC is lowest, and
// lanes whose PCs become equal merge again (the "min-PC" policy: PTX ISA 8.x, section 9.7.12.1
// leaves the reconvergence mechanism to the implementation, and with the forward branches and
// backward loop edges compilers emit, the lowest PC is the earliest pending point of a structured
// program, so the warp reconverges at the immediate post-dominator of a structured if/else and at a
// loop's exit). Every lane still executes exactly its own path, so results never depend on it.

const warpSize = 32
const fullMask = 0xffffffff

type warp struct {
	regs    [][warpSize]uint64
	preds   []uint32
	tmp     [warpSize]uint64
	addr    [warpSize]uint64
	pc      int32
	active  uint32 // the lanes running now (all at pc)
	waiting uint32 // live lanes parked at lanePC, not at a barrier
	atBar   uint32 // lanes waiting at a barrier (lanePC: the instruction after it; barPC: the barrier)
	atNamed uint32 // lanes waiting at a counted barrier (namedbar.go; lanePC: the instruction after it)
	live    uint32 // lanes not exited
	minWait int32
	lanePC  [warpSize]int32
	barPC   [warpSize]int32
	id      int    // warp index in the CTA
	first   int    // CTA-linear index of lane 0
	local   []byte // lane l's local memory at l·localSize
	c       *cta
	// calls (call.go): lanes inside a .func, their depth, frame base and return sites
	callers  uint32
	depth    [warpSize]int32
	base     [warpSize]uint32
	stack    []frameRec // lane l's frames at l·MaxCallDepth
	stackTop uint32
	// synccheck (synccheck.go): lanes that went past each checked barrier since the last release,
	// the warp's last such instruction for each, and the live lanes at the last release
	past          []uint32
	pastPC        []int32
	liveAtRelease uint32
	async         *asyncState // cp.async copies in flight (cpasync.go); nil until the first
	// mbarrier waits (mbarrier.go): lanes parked at a test_wait/try_wait (lanePC: the wait) and
	// the shared offset of the barrier each waits on
	atMbar  uint32
	mbarOff [warpSize]uint32
}

func (w *warp) dst(r int32, m uint32) *[warpSize]uint64 {
	if m == fullMask {
		return &w.regs[r]
	}
	return &w.tmp
}

func (w *warp) commit(r int32, m uint32) {
	if m == fullMask {
		return
	}
	d := &w.regs[r]
	for m != 0 {
		l := bits.TrailingZeros32(m)
		m &= m - 1
		d[l] = w.tmp[l]
	}
}

// park records the running group at PC pc and picks the next group.
func (w *warp) park(pc int32) {
	for m := w.active; m != 0; m &= m - 1 {
		w.lanePC[bits.TrailingZeros32(m)] = pc
	}
	w.waiting |= w.active
	w.active = 0
	w.pick()
}

// pick makes the waiting lanes with the lowest PC the running group.
func (w *warp) pick() {
	if w.waiting == 0 {
		w.minWait = math.MaxInt32
		return
	}
	if w.callers != 0 {
		w.pickSlow()
		return
	}
	lo := int32(math.MaxInt32)
	for m := w.waiting; m != 0; m &= m - 1 {
		lo = min(lo, w.lanePC[bits.TrailingZeros32(m)])
	}
	next := int32(math.MaxInt32)
	var grp uint32
	for m := w.waiting; m != 0; m &= m - 1 {
		l := bits.TrailingZeros32(m)
		if w.lanePC[l] == lo {
			grp |= 1 << l
		} else {
			next = min(next, w.lanePC[l])
		}
	}
	w.active, w.pc = grp, lo
	w.waiting &^= grp
	w.minWait = next
}

// runWarp runs w until it has no runnable lanes or budget instructions have issued, and returns
// the budget left.
func (c *cta) runWarp(w *warp, budget int) int {
	code := c.prog.code
	cnt := c.wk.counts
	for ; budget > 0 && w.active != 0; budget-- {
		pc := w.pc
		in := &code[pc]
		m := w.active
		ic := &cnt[pc]
		if in.guard >= 0 {
			p := w.preds[in.guard]
			if in.guardNot {
				p = ^p
			}
			ic.predOff += uint64(bits.OnesCount32(m &^ p))
			m &= p
		}
		ic.warp++
		ic.thread += uint64(bits.OnesCount32(m))
		if in.past != 0 && m != 0 {
			w.markPast(in.past, m, pc)
		}
		switch in.ctl {
		case ctlNone:
			if m != 0 {
				in.exec(w, in, m)
			}
			w.pc = pc + 1
		case ctlBra:
			switch m {
			case w.active:
				w.pc = in.target
			case 0:
				w.pc = pc + 1
			default:
				ic.divergent++
				w.diverge(m, in.target, pc+1)
				continue
			}
		case ctlExit, ctlRet:
			if c.exit(w, in, m, pc) {
				continue
			}
		case ctlCall:
			if m == 0 {
				w.pc = pc + 1
				break
			}
			c.callLanes(w, in, m, pc)
			continue
		case ctlBar:
			if w.arrive(m, pc) {
				continue
			}
		case ctlNamedBar:
			if c.namedBarrier(w, in, m, pc) {
				continue
			}
		case ctlMbWait:
			if c.mbarWait(w, in, m, pc) {
				continue
			}
		case ctlTrap:
			if m != 0 {
				l := bits.TrailingZeros32(m)
				c.fault(&Fault{Kind: "trap", Msg: "the kernel executed trap"}, w, l, in)
			}
			w.pc = pc + 1
		case ctlNop:
			w.pc = pc + 1
		}
		if w.pc >= w.minWait {
			w.park(w.pc)
		}
	}
	return budget
}

// diverge splits w at a branch whose lanes went different ways: the lanes of m go to target, the
// other active lanes to next, and the group with the lowest PC runs next (pick).
func (w *warp) diverge(m uint32, target, next int32) {
	for t := m; t != 0; t &= t - 1 {
		w.lanePC[bits.TrailingZeros32(t)] = target
	}
	for t := w.active &^ m; t != 0; t &= t - 1 {
		w.lanePC[bits.TrailingZeros32(t)] = next
	}
	w.waiting |= w.active
	w.active = 0
	w.pick()
}

// exit retires the lanes of m at an exit or ret at pc: lanes inside calls return to their call
// sites (ret) or leave their calls (exit), the others end. It reports whether another group of
// lanes was picked to run (the caller goes on with it).
func (c *cta) exit(w *warp, in *inst, m uint32, pc int32) bool {
	if r := m & w.callers; r != 0 {
		if in.ctl == ctlRet {
			// returning lanes go back to their call sites; the rest of the group waits
			c.ret(w, in, r)
			for t := w.active &^ m; t != 0; t &= t - 1 {
				w.lanePC[bits.TrailingZeros32(t)] = pc + 1
			}
			w.live &^= m &^ r
			w.waiting |= w.active &^ (m &^ r)
			w.active = 0
			w.pick()
			return true
		}
		w.callers &^= m
		for t := r; t != 0; t &= t - 1 {
			w.depth[bits.TrailingZeros32(t)] = 0
		}
	}
	w.live &^= m
	w.active &^= m
	w.pc = pc + 1
	if w.active == 0 {
		w.pick()
		return true
	}
	return false
}

// callLanes enters the call at pc for the lanes of m (none empty); the other active lanes wait at
// the next instruction, and the lowest group runs next.
func (c *cta) callLanes(w *warp, in *inst, m uint32, pc int32) {
	c.call(w, in, m)
	for t := w.active &^ m; t != 0; t &= t - 1 {
		w.lanePC[bits.TrailingZeros32(t)] = pc + 1
	}
	w.waiting |= w.active
	w.active = 0
	w.pick()
}

// arrive parks the lanes of m at the barrier at pc (they resume after it once the barrier
// releases). It reports whether another group of lanes was picked to run.
func (w *warp) arrive(m uint32, pc int32) bool {
	if m != 0 {
		for t := m; t != 0; t &= t - 1 {
			l := bits.TrailingZeros32(t)
			w.lanePC[l] = pc + 1
			w.barPC[l] = pc
		}
		w.atBar |= m
		w.active &^= m
	}
	w.pc = pc + 1
	if w.active == 0 {
		w.pick()
		return true
	}
	return false
}

// ---- per-lane execution helpers ----

func execALU(w *warp, in *inst, m uint32) {
	a, b, c := &w.regs[in.a], &w.regs[in.b], &w.regs[in.c]
	f := in.f
	d := w.dst(in.d, m)
	if m == fullMask {
		for l := range warpSize {
			d[l] = f(a[l], b[l], c[l])
		}
	} else {
		for t := m; t != 0; t &= t - 1 {
			l := bits.TrailingZeros32(t)
			d[l] = f(a[l], b[l], c[l])
		}
	}
	w.commit(in.d, m)
}

func execMov(w *warp, in *inst, m uint32) {
	a := &w.regs[in.a]
	mask := in.f(math.MaxUint64, 0, 0)
	d := &w.regs[in.d]
	if m == fullMask {
		for l := range warpSize {
			d[l] = a[l] & mask
		}
		return
	}
	for t := m; t != 0; t &= t - 1 {
		l := bits.TrailingZeros32(t)
		d[l] = a[l] & mask
	}
}

// lanes runs body for every lane of m (a full warp without the per-lane test).
func execAddI32(w *warp, in *inst, m uint32) {
	a, b := &w.regs[in.a], &w.regs[in.b]
	d := w.dst(in.d, m)
	for l := range warpSize {
		d[l] = uint64(uint32(a[l]) + uint32(b[l]))
	}
	w.commit(in.d, m)
}

func execAddI64(w *warp, in *inst, m uint32) {
	a, b := &w.regs[in.a], &w.regs[in.b]
	d := w.dst(in.d, m)
	for l := range warpSize {
		d[l] = a[l] + b[l]
	}
	w.commit(in.d, m)
}

func execMulWideS32(w *warp, in *inst, m uint32) {
	a, b := &w.regs[in.a], &w.regs[in.b]
	d := w.dst(in.d, m)
	for l := range warpSize {
		d[l] = uint64(int64(int32(a[l])) * int64(int32(b[l])))
	}
	w.commit(in.d, m)
}

func execMadLo32(w *warp, in *inst, m uint32) {
	a, b, c := &w.regs[in.a], &w.regs[in.b], &w.regs[in.c]
	d := w.dst(in.d, m)
	for l := range warpSize {
		d[l] = uint64(uint32(a[l])*uint32(b[l]) + uint32(c[l]))
	}
	w.commit(in.d, m)
}

func execAddF32(w *warp, in *inst, m uint32) {
	a, b := &w.regs[in.a], &w.regs[in.b]
	d := w.dst(in.d, m)
	for l := range warpSize {
		d[l] = uint64(math.Float32bits(math.Float32frombits(uint32(a[l])) + math.Float32frombits(uint32(b[l]))))
	}
	w.commit(in.d, m)
}

func execMulF32(w *warp, in *inst, m uint32) {
	a, b := &w.regs[in.a], &w.regs[in.b]
	d := w.dst(in.d, m)
	for l := range warpSize {
		d[l] = uint64(math.Float32bits(math.Float32frombits(uint32(a[l])) * math.Float32frombits(uint32(b[l]))))
	}
	w.commit(in.d, m)
}

// minNormalF32Bits is math.Float64bits(0x1p-126), float32's least normal magnitude as a float64,
// and infF64Bits math.Float64bits(+Inf).
const (
	minNormalF32Bits = 0x3810000000000000
	infF64Bits       = 0x7ff0000000000000
)

// execFmaF32 is fma.rn.f32: one rounding of the exact a·b+c (PTX ISA 8.x, 9.7.3.5 "fma").
func execFmaF32(w *warp, in *inst, m uint32) {
	a, b, c := &w.regs[in.a], &w.regs[in.b], &w.regs[in.c]
	d := w.dst(in.d, m)
	for l := range warpSize {
		p := float64(math.Float32frombits(uint32(a[l]))) * float64(math.Float32frombits(uint32(b[l])))
		q := float64(math.Float32frombits(uint32(c[l])))
		// p is exact; p+q rounded to float64 rounds on to the right float32 unless it is a float32
		// halfway point or below float32's normal range (roundF32's test), where TwoSum's error
		// sign decides: the common case needs no TwoSum
		// (in the bits of s: its magnitude from 2^-126's to infinity's, NaN left to twoSum, whose
		// sum keeps the NaN operand it kept before; and not a halfway point)
		if s := p + q; math.Float64bits(s)&(1<<63-1)-minNormalF32Bits <= infF64Bits-minNormalF32Bits && math.Float64bits(s)&(1<<29-1) != 1<<28 {
			d[l] = uint64(math.Float32bits(float32(s)))
			continue
		}
		s, e := twoSum(p, q)
		d[l] = uint64(math.Float32bits(roundF32(s, rmNearest, e)))
	}
	w.commit(in.d, m)
}

func execPredLogic(w *warp, in *inst, m uint32) {
	a, b := w.preds[in.a], w.preds[in.b]
	for i, v := range []*uint32{&a, &b} { // constant operands (decodePredLogic)
		if in.mode&(4<<i) != 0 {
			*v = 0
			if in.mode&(16<<i) != 0 {
				*v = ^uint32(0)
			}
		}
	}
	if in.mode&1 != 0 {
		a = ^a
	}
	if in.mode&2 != 0 {
		b = ^b
	}
	var r uint32
	switch in.boolop {
	case 0:
		r = a & b
	case 1:
		r = a | b
	case 2:
		r = a ^ b
	case 3:
		r = ^a
	case 4:
		r = a
	}
	w.preds[in.d] = w.preds[in.d]&^m | r&m
}

func (w *warp) setPreds(in *inst, m, r uint32) {
	q := ^r
	if in.c >= 0 {
		c := w.preds[in.c]
		if in.mode&1 != 0 {
			c = ^c
		}
		switch in.boolop {
		case 0:
			r, q = r&c, q&c
		case 1:
			r, q = r|c, q|c
		case 2:
			r, q = r^c, q^c
		}
	}
	w.preds[in.d] = w.preds[in.d]&^m | r&m
	if in.d2 >= 0 {
		w.preds[in.d2] = w.preds[in.d2]&^m | q&m
	}
}

func execSetp(w *warp, in *inst, m uint32) {
	a, b := &w.regs[in.a], &w.regs[in.b]
	var r uint32
	for t := m; t != 0; t &= t - 1 {
		l := bits.TrailingZeros32(t)
		if in.cmp(a[l], b[l]) {
			r |= 1 << l
		}
	}
	w.setPreds(in, m, r)
}

func execSetpLtS32(w *warp, in *inst, m uint32) {
	a, b := &w.regs[in.a], &w.regs[in.b]
	var r uint32
	for l := range warpSize {
		if int32(a[l]) < int32(b[l]) {
			r |= 1 << l
		}
	}
	w.setPreds(in, m, r)
}

func execSetpGeS32(w *warp, in *inst, m uint32) {
	a, b := &w.regs[in.a], &w.regs[in.b]
	var r uint32
	for l := range warpSize {
		if int32(a[l]) >= int32(b[l]) {
			r |= 1 << l
		}
	}
	w.setPreds(in, m, r)
}

func execSelp(w *warp, in *inst, m uint32) {
	a, b := &w.regs[in.a], &w.regs[in.b]
	p := w.preds[in.c]
	if in.mode&1 != 0 {
		p = ^p
	}
	d := w.dst(in.d, m)
	for l := range warpSize {
		if p>>l&1 != 0 {
			d[l] = a[l]
		} else {
			d[l] = b[l]
		}
	}
	w.commit(in.d, m)
}

// execPack is mov.bN d, {a, b, …}: element 0 in the low bits (PTX ISA 8.x, 9.7.9.1 "mov").
func execPack(w *warp, in *inst, m uint32) {
	sh := uint(in.size) * 8
	part := sizeMask(int(in.size))
	d := w.dst(in.d, m)
	for l := range warpSize {
		var v uint64
		for i := int(in.nvec) - 1; i >= 0; i-- {
			v = v<<sh | w.regs[in.vec[i]][l]&part
		}
		d[l] = v
	}
	w.commit(in.d, m)
}

func execUnpack(w *warp, in *inst, m uint32) {
	sh := uint(in.size) * 8
	part := sizeMask(int(in.size))
	a := w.regs[in.a] // a copy: a destination may be the source
	for t := m; t != 0; t &= t - 1 {
		l := bits.TrailingZeros32(t)
		v := a[l]
		for i := 0; i < int(in.nvec); i++ {
			w.regs[in.vec[i]][l] = v & part
			v >>= sh
		}
	}
}

// Fault is an error a kernel made at run time: the sanitizer's findings (out-of-bounds or misaligned
// accesses, shared-memory hazards), barrier errors, traps and unsupported operations reached.
type Fault struct {
	// Kind is "out of bounds", "misaligned", "hazard", "barrier" (bar.sync errors, and misused
	// mbarriers: uninitialised, too many arrivals), "tensor map" (a TMA copy whose tensor map the
	// launcher did not make), "hang" (a wait on an mbarrier phase that can
	// never complete), "divergent warp sync" (a .sync warp instruction or wmma that lanes of its
	// mask did not reach together), "trap", "assertion", "stack overflow" or "unsupported"; in
	// Counts.Notes, "uninitialised read".
	Kind string
	// Block and Thread are the CTA and thread (x, y, z) that faulted.
	Block, Thread [3]int
	// Space and Address are the state space and address of a faulting access.
	Space   string
	Address uint64
	// Line is the PTX line of the instruction; Instr its text; Source "file:line" from .loc, if any.
	Line   int
	Instr  string
	Source string
	// OtherThread, OtherLine and OtherSource are the second access of a hazard.
	OtherThread [3]int
	OtherLine   int
	OtherSource string
	OtherInstr  string
	Msg         string
}

// Error is one readable line: the kind, which thread of which block, where (the .loc source line,
// else the PTX line), what happened, and the PTX instruction; a hazard or a barrier error adds the
// other thread's access the same way.
func (f *Fault) Error() string {
	if f.Line == 0 && f.Source == "" && f.Instr == "" { // about the launch, not an instruction
		return f.Kind + ": " + f.Msg
	}
	s := fmt.Sprintf("%s: thread %s of block %s, %s", f.Kind, xyz(f.Thread), xyz(f.Block), where(f.Source, f.Line, f.Instr, f.Msg))
	if f.OtherLine != 0 {
		other := "the other thread"
		if f.Kind == "hazard" {
			other = "the other access"
		}
		s += fmt.Sprintf("; %s: thread %s, %s", other, xyz(f.OtherThread), where(f.OtherSource, f.OtherLine, f.OtherInstr, ""))
	}
	return s
}

func xyz(v [3]int) string { return fmt.Sprintf("(%d,%d,%d)", v[0], v[1], v[2]) }

// where is "SOURCE: MSG (PTX line N: INSTR)", or "PTX line N: MSG (INSTR)" without a source line,
// the instruction on one line with single spaces and without its closing semicolon.
func where(source string, line int, instr, msg string) string {
	instr = strings.Join(strings.Fields(strings.TrimSuffix(strings.TrimSpace(instr), ";")), " ")
	head, ptx := source, fmt.Sprintf("PTX line %d", line)
	if head == "" {
		head, ptx = ptx, ""
	}
	if msg != "" {
		head += ": " + msg
	}
	switch {
	case instr != "" && ptx != "":
		return fmt.Sprintf("%s (%s: %s)", head, ptx, instr)
	case instr != "":
		return fmt.Sprintf("%s (%s)", head, instr)
	case ptx != "":
		return fmt.Sprintf("%s (%s)", head, ptx)
	}
	return head
}
