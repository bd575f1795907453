package vgpu

import (
	"fmt"
	"math/bits"
)

// Named barriers with thread counts (PTX ISA 8.x, section 9.7.13.1 "Parallel Synchronization and
// Communication Instructions: bar, barrier"):
//
//	bar.sync a{, b};          barrier.sync{.aligned} a{, b};
//	bar.arrive a, b;          barrier.arrive{.aligned} a, b;
//
// a is the barrier (0..15), b the number of threads that take part, a multiple of the warp size;
// both are immediates or registers (read per warp: a value that differs between the executing
// lanes is a "barrier" fault, as the ISA requires the same a and b of all of them). The ISA counts
// a barrier per warp: an executing thread "waits for all non-exited threads from its warp and marks
// warps' arrival", so each warp adds the warp size (32) to the arrival count once per phase, however
// many of its lanes execute the instruction. bar.sync waits until the count reaches b; bar.arrive
// adds its warp and goes on (the producer's half of a producer–consumer handoff, which is why it
// needs b). When the count reaches b the barrier completes: the warps waiting at that barrier resume
// and it is ready for its next phase; the warps of the CTA that are not in it keep running
// throughout. Every arrival of one phase must give the same b ("undefined" otherwise; here a
// "barrier" fault), and b must be a multiple of 32 and non-zero (a "barrier" fault).
//
// Without b (bar.sync 0, __syncthreads()) every thread of the CTA takes part: that is the CTA-wide
// barrier of exec.go's arrive and launch.go's releaseBarrier, unchanged (with a in a register, a
// is checked here and the barrier is the CTA-wide one). A named barrier whose count can no longer
// be met — nothing in the CTA can run and threads still wait at it — is a "hang" fault at a
// waiting thread, with the arrivals it had (namedHang), never a timeout.
//
// Counts: Counts.Barriers counts barrier completions per CTA, CTA-wide ones as before and each
// completion of a counted barrier too (one per completion, however many warps took part). Nsight
// Compute has no completion counter: what it counts are the barrier instructions the warps
// execute (inst_executed of the BAR class), which is Counts' "barrier" instruction class here, one
// per warp-level bar/barrier instruction.
//
// The hazard check (racecheck.go) takes a completed counted barrier as ordering its participants
// only: each warp keeps a vector clock over the CTA's warps (c.named); an arrival records what its
// warp has been ordered after and the arrival itself, and a completion gives every warp that
// waited (bar.sync) the join of all arrivals of the phase. bar.arrive's warp is released, not
// acquired: it is ordered after nothing the others did. A warp counts as a whole, as the ISA
// counts it: a lane that was not at the barrier while others of its warp were is treated as
// ordered too (a miss the check allows, never a false alarm).

// namedBarOp is a decoded bar/barrier with a thread count, a register operand or .arrive.
type namedBarOp struct {
	id, count int32 // registers of a and b (count < 0: no b)
	arrive    bool  // bar.arrive: no wait
}

// namedBar is a CTA's state of one of its 16 barriers in the current phase.
type namedBar struct {
	expected int32            // b of the phase's arrivals (0: no arrival yet)
	arrived  int32            // threads counted (32 a warp)
	warps    uint32           // the warps counted (a CTA has at most 32)
	pc       int32            // the instruction of the phase's first arrival
	lanes    [maxWarps]uint32 // per warp, its lanes waiting at the barrier (bar.sync)
	waitPC   [maxWarps]int32  // per waiting warp, its bar.sync
	acc      []uint32         // racecheck: the join of the phase's arrivals' clocks (nil: off)
	wgAcc    []uint32         // racecheck: the join of the arrivals' wgmma-order clocks (mbarorder.go)
}

// maxWarps is the most warps a CTA has (1024 threads).
const maxWarps = 32

// decodeNamedBar decodes the forms decodeBar does not keep for the CTA-wide barrier: a register
// barrier number, a thread count, or .arrive (which needs one).
func (d *decoder) decodeNamedBar(in *inst, s pinst, arrive bool) error {
	op := &namedBarOp{count: -1, arrive: arrive}
	u32 := parseType("u32")
	if a := s.args[0]; a.kind == oImm && (a.bits > 15) {
		return d.errf("barrier %d out of range 0..15", int64(a.bits))
	}
	var err error
	if op.id, err = d.src(s.args[0], u32); err != nil {
		return err
	}
	if len(s.args) == 2 {
		if b := s.args[1]; b.kind == oImm && (b.bits == 0 || b.bits%warpSize != 0 || b.bits > 1024) {
			return d.errf("thread count %d is not a non-zero multiple of the warp size (32) up to 1024 (PTX ISA, \"bar, barrier\")", int64(b.bits))
		}
		if op.count, err = d.src(s.args[1], u32); err != nil {
			return err
		}
	} else if arrive {
		return d.errf("bar.arrive needs a thread count (bar.arrive a, b: PTX ISA, \"bar, barrier\")")
	}
	in.barID = -1
	in.nbar = op
	in.ctl = ctlNamedBar
	return nil
}

// uniform returns register r's value in the lanes of m, faulting (a "barrier" fault naming what)
// when the lanes disagree.
func (c *cta) uniform(w *warp, in *inst, m uint32, r int32, what string) uint32 {
	l0 := bits.TrailingZeros32(m)
	v := uint32(w.regs[r][l0])
	for t := m; t != 0; t &= t - 1 {
		l := bits.TrailingZeros32(t)
		if x := uint32(w.regs[r][l]); x != v {
			c.fault(&Fault{Kind: "barrier", Msg: fmt.Sprintf("its %s is %d but lane %d of its warp executes the same barrier instruction with %d: the barrier number and thread count must be the same for every thread that executes it (PTX ISA, \"bar, barrier\")", what, x, l0, v)}, w, l, in)
		}
	}
	return v
}

// namedBarrier executes a counted or register-operand barrier for the lanes m of w at pc. It
// reports whether another group of lanes was picked to run (as arrive does).
func (c *cta) namedBarrier(w *warp, in *inst, m uint32, pc int32) bool {
	if m == 0 {
		w.pc = pc + 1
		return false
	}
	op, l := in.nbar, bits.TrailingZeros32(m)
	id := c.uniform(w, in, m, op.id, "barrier number")
	if id > 15 {
		c.fault(&Fault{Kind: "barrier", Msg: fmt.Sprintf("barrier number %d is out of range 0..15 (PTX ISA, \"bar, barrier\")", id)}, w, l, in)
	}
	if op.count < 0 {
		return w.arrive(m, pc) // every thread of the CTA: the CTA-wide barrier
	}
	n := int32(c.uniform(w, in, m, op.count, "thread count"))
	if n <= 0 || n%warpSize != 0 || n > 1024 {
		c.fault(&Fault{Kind: "barrier", Msg: fmt.Sprintf("thread count %d is not a non-zero multiple of the warp size (32) up to 1024 (PTX ISA, \"bar, barrier\")", n)}, w, l, in)
	}
	b := &c.nbars[id]
	if b.warps == 0 {
		b.expected, b.pc = n, pc
	} else if b.expected != n {
		f := &Fault{Kind: "barrier", Msg: fmt.Sprintf("it arrives at barrier %d with a thread count of %d while the barrier's current phase counts to %d: every arrival of one phase must give the same count (PTX ISA, \"bar, barrier\": undefined otherwise)", id, n, b.expected)}
		c.otherAt(f, b.pc)
		c.fault(f, w, l, in)
	}
	if bit := uint32(1) << w.id; b.warps&bit == 0 { // a warp counts once a phase
		b.warps |= bit
		b.arrived += warpSize
		c.namedArrive(w, b) // racecheck.go
	}
	if b.arrived >= b.expected {
		self := uint32(1) << w.id // the completing warp waits no longer but takes part as a waiter
		if op.arrive {
			self = 0
		}
		c.namedComplete(b, self)
		w.pc = pc + 1
		return false
	}
	if op.arrive {
		w.pc = pc + 1
		return false
	}
	for t := m; t != 0; t &= t - 1 {
		w.lanePC[bits.TrailingZeros32(t)] = pc + 1
	}
	b.lanes[w.id] |= m
	b.waitPC[w.id] = pc
	w.atNamed |= m
	w.active &^= m
	w.pc = pc + 1
	if w.active == 0 {
		w.pick()
		return true
	}
	return false
}

// namedComplete completes b's phase: the lanes waiting at it resume after their bar.sync. self
// is the completing warp when it completes by a bar.sync (its own lanes never park).
func (c *cta) namedComplete(b *namedBar, self uint32) {
	c.barriers++
	waiters := uint32(0)
	for i := range c.warps {
		if b.lanes[i] != 0 {
			waiters |= 1 << i
		}
	}
	c.namedAcquire(b, waiters|self)
	for t := waiters; t != 0; t &= t - 1 {
		w := c.warps[bits.TrailingZeros32(t)]
		lanes := b.lanes[w.id]
		w.atNamed &^= lanes
		w.waiting |= lanes
		if w.active == 0 {
			w.pick()
		} else {
			w.minWait = min(w.minWait, b.waitPC[w.id]+1)
		}
	}
	acc, wgAcc := b.acc, b.wgAcc
	clear(acc)
	clear(wgAcc)
	*b = namedBar{acc: acc, wgAcc: wgAcc}
}

// resetNamed readies c's counted barriers for a new block.
func (c *cta) resetNamed() {
	for i := range c.nbars {
		c.nbars[i] = namedBar{}
	}
}

// namedHang faults when nothing in the CTA can run and threads still wait at a counted barrier:
// its count can never be met.
func (c *cta) namedHang() {
	for _, w := range c.warps {
		if w.atNamed == 0 {
			continue
		}
		l := bits.TrailingZeros32(w.atNamed)
		for id := range c.nbars {
			b := &c.nbars[id]
			if b.lanes[w.id]&(1<<l) == 0 {
				continue
			}
			in := &c.prog.code[b.waitPC[w.id]]
			others := "every other thread of its block has exited or waits too"
			if n := c.atBarrier(); n > 0 {
				others = fmt.Sprintf("the other threads of its block have exited or wait (%d of them at a __syncthreads())", n)
			}
			msg := fmt.Sprintf("it waits at barrier %d for %d threads, which can never arrive: %d have (%d warps); %s (a deadlock: on a GPU the kernel never ends)", id, b.expected, b.arrived, b.arrived/warpSize, others)
			c.fault(&Fault{Kind: "hang", Msg: msg}, w, l, in)
		}
	}
}

// otherAt names the instruction at code index pc as f's other line.
func (c *cta) otherAt(f *Fault, pc int32) {
	a := &c.prog.code[pc]
	f.OtherLine = int(a.line)
	f.OtherInstr = c.L.mod.Line(int(a.line))
	f.OtherSource = c.L.source(a.loc)
}

// The hazard check's side (see the top of this file; racecheck.go's ordered asks namedOrdered).

// namedArrive is w's arrival at b: the phase carries what w has been ordered after, and w's
// accesses until now.
func (c *cta) namedArrive(w *warp, b *namedBar) {
	if !c.L.racecheck {
		return
	}
	c.mbarOrderArrive(w, b)
	if c.named == nil {
		c.named = make([][]uint32, len(c.warps))
		for i := range c.named {
			c.named[i] = make([]uint32, len(c.warps))
		}
	}
	if b.acc == nil {
		b.acc = make([]uint32, len(c.warps))
	}
	c.tick()
	for v, k := range c.named[w.id] {
		b.acc[v] = max(b.acc[v], k)
	}
	b.acc[w.id] = c.seq
}

// namedAcquire orders the warps of m (b's waiters) after everything b's phase carries, and after
// each other; the lanes of each such warp are synchronised too (the ISA: a thread waits for
// every non-exited thread of its warp).
func (c *cta) namedAcquire(b *namedBar, m uint32) {
	if !c.L.racecheck || b.acc == nil {
		return
	}
	if s := c.wg; s != nil && s.ord != nil && b.wgAcc != nil {
		for t := m; t != 0; t &= t - 1 {
			maxInto(s.ord.vc[bits.TrailingZeros32(t)], b.wgAcc) // mbarorder.go: a wait that completes acquires
		}
	}
	for t := m; t != 0; t &= t - 1 {
		w := c.warps[bits.TrailingZeros32(t)]
		c.warpSync(w, w.live)
	}
	c.tick()
	for t := m; t != 0; t &= t - 1 {
		for v, k := range c.named[bits.TrailingZeros32(t)] {
			b.acc[v] = max(b.acc[v], k)
		}
	}
	for t := m; t != 0; t &= t - 1 {
		b.acc[bits.TrailingZeros32(t)] = c.seq
	}
	for t := m; t != 0; t &= t - 1 {
		copy(c.named[bits.TrailingZeros32(t)], b.acc)
	}
}

// namedOrdered reports whether counted barriers order an access by thread a at seq t before
// thread b's accesses now (a and b in different warps).
func (c *cta) namedOrdered(a, b int, t uint32) bool {
	return c.named != nil && c.named[b/warpSize][a/warpSize] > t
}

// clearNamed forgets the counted barriers' clocks (racecheck's tick at the end of its range).
func (c *cta) clearNamed() {
	for _, k := range c.named {
		clear(k)
	}
	for i := range c.nbars {
		clear(c.nbars[i].acc)
	}
}
