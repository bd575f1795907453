package vgpu

import (
	"fmt"
	"math/bits"
	"strings"
)

// mbarrier: the CTA's split arrive/wait barriers in shared memory (PTX ISA 8.x, "Parallel
// Synchronization and Communication Instructions: mbarrier"; transaction counts since
// PTX ISA 8.0, sm_90). The forms NVRTC 12.4 emits for cuda::barrier, cuda::pipeline, the
// __mbarrier_* primitives of cuda_awbarrier_primitives.h and inline asm are decoded:
//
//	mbarrier.init{.shared{::cta}}.b64 [addr], count;
//	mbarrier.arrive{.release}{.cta}{.shared{::cta}}.b64 state, [addr]{, count};
//	mbarrier.arrive.expect_tx{.release}{.cta}{.shared{::cta}}.b64 state, [addr], txCount;
//	mbarrier.arrive_drop{…}.b64 state, [addr]{, count};
//	mbarrier.expect_tx / mbarrier.complete_tx{.relaxed}{.cta}{.shared{::cta}}.b64 [addr], txCount;
//	mbarrier.test_wait / try_wait{.parity}{.acquire}{.cta}{.shared{::cta}}.b64 p, [addr], state|phaseParity{, suspendTimeHint};
//	mbarrier.inval{.shared{::cta}}.b64 [addr];
//	cp.async.mbarrier.arrive{.noinc}{.shared{::cta}}.b64 [addr];
//
// The object's 64 bits are opaque (ISA: "the contents are implementation specific"); the virtual
// GPU keeps the state beside shared memory, per 8-byte word: the current phase, the expected
// arrival count (init's count, less arrive_drop's), the pending arrival count and the tx-count.
// A phase completes when the pending count and the tx-count are both zero (arrive lowers the
// first, expect_tx raises the second, complete_tx lowers it); then the phase advances, the pending
// count becomes the expected count again, and the threads waiting on the phase resume. A state
// token is the phase the arrival belonged to; test_wait/try_wait with a state is true once that
// phase completed, with .parity once the phase of that parity completed (the current phase has
// the other parity).
//
// A wait whose phase is not complete parks its lanes until it is, and then returns true: a legal
// schedule of both test_wait (the thread was slow to poll) and try_wait (it suspends up to a
// time limit the implementation chooses). If no thread of the block can run and some wait on an
// mbarrier phase, the phase can never complete: a "hang" fault names the waiting thread, the
// line of its wait and the barrier's counts. (A loop that does other work between failed waits
// hangs here where hardware, after a time-out, could go on.) An arrive, expect_tx, complete_tx or
// wait on a word no mbarrier.init initialised (or after mbarrier.inval) is a "barrier" fault, as
// is an arrival beyond the phase's pending count, and (with the hazard check) a use by a thread
// not ordered after the init by a barrier or a warp synchronisation: `if (t == 0) init(&bar, n);`
// without the __syncthreads() that must follow.
//
// cp.async.mbarrier.arrive makes the barrier track the thread's earlier cp.async copies: the
// virtual GPU completes them at that point (a copy may complete any time before the arrival it
// triggers) and arrives (with .noinc: counted against the pending count; without, the pending
// count is raised first, so the arrival is net zero, as the ISA says).
//
// For the hazard check a phase completing orders like a barrier: the records of every earlier
// shared-memory access are forgotten (racecheck.go's new interval), so the data a producer wrote
// before its arrival is not a hazard for the consumer that waited; hazards across a phase are
// missed, none is invented.
//
// Counts: each mbarrier instruction is one warp instruction of class "barrier" (in SASS, one
// SYNCS instruction on sm_90); Counts.Barriers stays the CTA-wide bar.sync barriers.

// mbarOp is a decoded mbarrier instruction.
type mbarOp struct {
	kind   byte  // 'i' init, 'a' arrive, 'd' arrive_drop, 'e' expect_tx, 'c' complete_tx, 'w' test_wait/try_wait, 'v' inval, 'p' cp.async.mbarrier.arrive
	expect bool  // arrive.expect_tx: its count operand is a tx-count
	parity bool  // the wait's operand is a phase parity
	noinc  bool  // cp.async.mbarrier.arrive.noinc
	count  int32 // the count / txCount register, -1: 1
	state  int32 // the wait's state or parity register
	dst    int32 // arrive's state register, the wait's predicate
}

// mbarrier is one initialised barrier object.
type mbarrier struct {
	phase             uint32
	expected, pending int64
	tx                int64
	initSeq           uint32 // c.seq at the init (racecheck's clock), its thread and instruction
	initThread        int
	initPC            int32
	// acc is what the current phase's arrivals released, done that of the last completed phase
	// of each parity (mbarorder.go; nil without wgmma or the hazard check).
	acc  []uint32
	done [2][]uint32
}

// mbarMaxCount is the largest arrival count and |tx-count| (ISA: 2^20 − 1).
const mbarMaxCount = 1<<20 - 1

// decodeMbarrier decodes the mbarrier instructions listed above.
func (d *decoder) decodeMbarrier(in *inst, m mods, s pinst) error {
	op := &mbarOp{count: -1, state: -1, dst: -1}
	in.mb, in.class = op, ClassBarrier
	if len(m.types) != 1 || m.types[0].name != "b64" {
		return d.errf("expects the .b64 type")
	}
	addrArg, err := d.mbarKind(op, m)
	if err != nil {
		return err
	}
	remote := m.hasSp && m.space == spDsmem && op.kind == 'a' && !op.expect // an arrive on another CTA's barrier (cluster.go)
	if m.hasSp && m.space != spShared && !remote {
		return d.errf("only mbarrier objects in the CTA's shared memory are supported (of .shared::cluster, mbarrier.arrive only)")
	}
	args := s.args
	if len(args) <= addrArg || args[addrArg].kind != oAddr {
		return d.errf("expects the barrier's address [addr] as operand %d", addrArg+1)
	}
	sp := spGeneric
	if m.hasSp {
		sp = m.space
	}
	if err := d.address(in, args[addrArg], sp); err != nil {
		return err
	}
	in.space, in.size = sp, 8
	rest := args[addrArg+1:]
	most := map[byte]int{'i': 1, 'a': 1, 'd': 1, 'e': 1, 'c': 1, 'w': 2, 'v': 0}[op.kind]
	need := map[byte]int{'i': 1, 'e': 1, 'c': 1, 'w': 1}[op.kind]
	if op.expect {
		need = 1
	}
	if len(rest) < need || len(rest) > most {
		return d.errf("takes %d to %d operands after [addr], found %d", need, most, len(rest))
	}
	if len(rest) > 0 && op.kind != 'w' {
		if op.count, err = d.src(rest[0], parseType("u32")); err != nil {
			return err
		}
	}
	switch op.kind {
	case 'a', 'd':
		op.dst, err = d.dst(args[0])
	case 'w':
		if op.dst, _, err = d.pred(args[0]); err != nil {
			return err
		}
		if args[0].not {
			return d.errf("the wait's destination predicate cannot be negated")
		}
		t := "b64"
		if op.parity {
			t = "u32"
		}
		op.state, err = d.src(rest[0], parseType(t)) // rest[1], suspendTimeHint: a hint
		in.ctl = ctlMbWait
		return err
	}
	in.exec = execMbarrier
	return err
}

// mbarKind sets op's kind (and .expect_tx, .parity) from m's modifiers and returns the index of
// its [addr] operand.
func (d *decoder) mbarKind(op *mbarOp, m mods) (addrArg int, err error) {
	for _, w := range m.words {
		switch w {
		case "init", "arrive", "expect_tx", "arrive_drop", "complete_tx", "test_wait", "try_wait", "parity", "inval":
		default:
			return 0, d.errf("unknown modifier .%s", w)
		}
	}
	switch {
	case oneOf(m, "init") != "":
		op.kind = 'i'
	case oneOf(m, "arrive") != "":
		op.kind, op.expect, addrArg = 'a', oneOf(m, "expect_tx") != "", 1
	case oneOf(m, "arrive_drop") != "":
		op.kind, addrArg = 'd', 1
	case oneOf(m, "expect_tx") != "":
		op.kind = 'e'
	case oneOf(m, "complete_tx") != "":
		op.kind = 'c'
	case oneOf(m, "test_wait", "try_wait") != "":
		op.kind, op.parity, addrArg = 'w', oneOf(m, "parity") != "", 1
	case oneOf(m, "inval") != "":
		op.kind = 'v'
	default:
		return 0, d.errf("only mbarrier.init, arrive, arrive_drop, expect_tx, complete_tx, test_wait, try_wait and inval are supported")
	}
	return addrArg, nil
}

// decodeCpAsyncMbarrier decodes cp.async.mbarrier.arrive{.noinc}{.shared{::cta}}.b64 [addr].
func (d *decoder) decodeCpAsyncMbarrier(in *inst, m mods, s pinst) error {
	op := &mbarOp{kind: 'p', count: -1, state: -1, dst: -1, noinc: oneOf(m, "noinc") != ""}
	in.mb, in.class = op, ClassBarrier
	for _, w := range m.words {
		if w != "async" && w != "mbarrier" && w != "arrive" && w != "noinc" {
			return d.errf("unknown modifier .%s", w)
		}
	}
	if len(m.types) != 1 || m.types[0].name != "b64" || strings.Contains(s.op, "::cluster") {
		return d.errf("cp.async.mbarrier.arrive{.noinc}.shared.b64 [addr] is supported")
	}
	if err := d.nargs(s, 1); err != nil {
		return err
	}
	if s.args[0].kind != oAddr {
		return d.errf("expects the barrier's address [addr]")
	}
	sp := spGeneric
	if m.hasSp {
		sp = spShared
	}
	in.space, in.size = sp, 8
	in.exec = execMbarrier
	return d.address(in, s.args[0], sp)
}

// mbarAt resolves lane l's barrier address: the offset of its 8-byte word in shared memory.
func (c *cta) mbarAt(w *warp, in *inst, l int) uint32 {
	addr := uint64(in.off)
	if in.a >= 0 {
		addr += w.regs[in.a][l]
	}
	_, sp, off := c.resolve(w, in, l, addr, 8, in.space, accAtomic)
	if sp != spShared {
		c.fault(&Fault{Kind: "barrier", Space: spaceNames[sp], Address: addr, Msg: "an mbarrier object must be in the block's shared memory"}, w, l, in)
	}
	return uint32(off)
}

// mbarLookup returns lane l's initialised barrier, or faults naming the operation.
func (c *cta) mbarLookup(w *warp, in *inst, l int, off uint32) *mbarrier {
	b := c.mbars[off]
	if b == nil {
		c.fault(&Fault{Kind: "barrier", Space: "shared", Address: uint64(off), Msg: fmt.Sprintf("%s on shared offset %d, which no mbarrier.init initialised (or mbarrier.inval invalidated): initialise the barrier, and __syncthreads() after, before any thread uses it", mbarName(in), off)}, w, l, in)
	}
	if c.L.racecheck && b.initSeq >= c.barSeq && !c.ordered(b.initThread, w.first+l, b.initSeq) {
		a := &c.prog.code[b.initPC]
		f := &Fault{Kind: "barrier", Space: "shared", Address: uint64(off), Msg: fmt.Sprintf("%s on the mbarrier at shared offset %d, which another thread initialised with no __syncthreads() between: the init is visible to the other threads of the block only after a barrier (CUDA C++ Programming Guide, \"Asynchronous Barrier\": init, then __syncthreads())", mbarName(in), off)}
		f.OtherThread = c.threadXYZ(b.initThread)
		f.OtherLine, f.OtherInstr, f.OtherSource = int(a.line), c.L.mod.Line(int(a.line)), c.L.source(a.loc)
		c.fault(f, w, l, in)
	}
	return b
}

func mbarName(in *inst) string {
	return map[byte]string{'i': "mbarrier.init", 'a': "mbarrier.arrive", 'd': "mbarrier.arrive_drop", 'e': "mbarrier.expect_tx",
		'c': "mbarrier.complete_tx", 'w': "an mbarrier wait", 'v': "mbarrier.inval", 'p': "cp.async.mbarrier.arrive"}[in.mb.kind]
}

// execMbarrier runs the non-waiting mbarrier instructions for the lanes of m, one lane at a time
// in lane order (each is an atomic update of the barrier).
func execMbarrier(w *warp, in *inst, m uint32) {
	c, op := w.c, in.mb
	for t := m; t != 0; t &= t - 1 {
		l := bits.TrailingZeros32(t)
		n := int64(1)
		if op.count >= 0 {
			n = int64(uint32(w.regs[op.count][l]))
		}
		if in.space == spDsmem {
			c.remoteArrive(w, in, l, n) // cluster.go
			continue
		}
		off := c.mbarAt(w, in, l)
		switch op.kind {
		case 'i':
			if n < 1 || n > mbarMaxCount {
				c.fault(&Fault{Kind: "barrier", Msg: fmt.Sprintf("mbarrier.init with count %d, outside 1..%d", n, mbarMaxCount)}, w, l, in)
			}
			if c.mbars == nil {
				c.mbars = map[uint32]*mbarrier{}
			}
			c.mbars[off] = &mbarrier{expected: n, pending: n, initSeq: c.seq, initThread: w.first + l, initPC: in.self}
			c.markMbarWritten(w, in, l, off)
		case 'v':
			delete(c.mbars, off)
		case 'p':
			c.completeLaneCopies(w, l)
			if !op.noinc {
				c.mbarLookup(w, in, l, off) // the increment and the arrival cancel out
				break
			}
			c.mbarArrive(w, in, l, off, 1, false)
		case 'a', 'd':
			b := c.mbarLookup(w, in, l, off)
			w.regs[op.dst][l] = uint64(b.phase)
			if op.expect {
				c.mbarTx(w, in, l, b, n)
				n = 1
			}
			c.mbarArrive(w, in, l, off, n, op.kind == 'd')
		case 'e', 'c': // the tx-count may go below zero: a complete_tx before its expect_tx
			b := c.mbarLookup(w, in, l, off)
			if op.kind == 'c' {
				n = -n
			}
			c.mbarTx(w, in, l, b, n)
			c.mbarComplete(off, b)
		}
	}
}

// mbarTx adds n to b's tx-count, faulting outside the ISA's range.
func (c *cta) mbarTx(w *warp, in *inst, l int, b *mbarrier, n int64) {
	b.tx += n
	if b.tx > mbarMaxCount || b.tx < -mbarMaxCount {
		c.fault(&Fault{Kind: "barrier", Msg: fmt.Sprintf("the mbarrier's tx-count reached %d, outside ±%d", b.tx, mbarMaxCount)}, w, l, in)
	}
}

// mbarArrive is n arrivals of lane l on the barrier at off (drop: the expected count of later
// phases is lowered by n too), completing the phase when they were the last.
func (c *cta) mbarArrive(w *warp, in *inst, l int, off uint32, n int64, drop bool) {
	b := c.mbarLookup(w, in, l, off)
	if n < 1 || n > b.pending {
		c.fault(&Fault{Kind: "barrier", Msg: fmt.Sprintf("%s with count %d, but phase %d of the mbarrier at shared offset %d has %d of %d arrivals pending: more threads arrive than mbarrier.init's count", mbarName(in), n, b.phase, off, b.pending, b.expected)}, w, l, in)
	}
	b.pending -= n
	if drop {
		b.expected -= n
	}
	c.mbarRelease(w, b)
	c.mbarComplete(off, b)
}

// mbarComplete completes b's current phase if its pending count and tx-count are zero: the phase
// advances and the lanes waiting on the barrier resume at their wait.
func (c *cta) mbarComplete(off uint32, b *mbarrier) {
	if b.pending != 0 || b.tx != 0 {
		return
	}
	b.mbarPhaseDone()
	b.phase++
	b.pending, b.tx = b.expected, 0
	if c.L.racecheck {
		c.newInterval()
	}
	c.wakeMbar(off)
}

// wakeMbar resumes the lanes waiting on the barrier at off (clusterWaitOff: barrier.cluster.wait)
// at their wait.
func (c *cta) wakeMbar(off uint32) {
	for _, o := range c.warps {
		var wake uint32
		for t := o.atMbar; t != 0; t &= t - 1 {
			if l := bits.TrailingZeros32(t); o.mbarOff[l] == off {
				wake |= 1 << l
			}
		}
		if wake == 0 {
			continue
		}
		o.atMbar &^= wake
		o.waiting |= wake
		for t := wake; t != 0; t &= t - 1 {
			o.minWait = min(o.minWait, o.lanePC[bits.TrailingZeros32(t)])
		}
		if o.active == 0 {
			o.pick()
		}
	}
}

// markMbarWritten marks the barrier's 8 bytes written for the initcheck (mbarrier.init writes
// the object).
func (c *cta) markMbarWritten(w *warp, in *inst, l int, off uint32) {
	if c.sFull < len(c.swritten) {
		w.addr[l] = uint64(off)
		c.initShared(w, in, 1<<l, 8, accStore)
	}
}

// mbarWait runs a test_wait/try_wait at pc for the lanes of m: lanes whose phase completed get
// true; the others park until it completes (mbarComplete wakes them to run the wait again). It
// reports whether another group of lanes was picked to run.
func (c *cta) mbarWait(w *warp, in *inst, m uint32, pc int32) bool {
	if in.mb == nil {
		return c.clusterWait(w, in, m, pc) // barrier.cluster.wait (cluster.go)
	}
	op := in.mb
	var done uint32
	for t := m; t != 0; t &= t - 1 {
		l := bits.TrailingZeros32(t)
		off := c.mbarAt(w, in, l)
		b := c.mbarLookup(w, in, l, off)
		s := w.regs[op.state][l]
		complete := b.phaseDone(s, op.parity)
		if !complete && len(c.bulk) > 0 && c.completeBulk(off, false) { // TMA copies (tma.go)
			complete = b.phaseDone(s, op.parity)
		}
		if complete {
			c.mbarAcquire(w, b, uint32(s))
			done |= 1 << l
			c.clusterAcquire(sharedLocation(c.rank, uint64(off))) // the wait is .acquire (dsmemrace.go)
			continue
		}
		w.lanePC[l], w.mbarOff[l] = pc, off
	}
	w.preds[op.dst] |= done
	park := m &^ done
	w.atMbar |= park
	w.active &^= park
	w.pc = pc + 1
	if w.active == 0 {
		w.pick()
		return true
	}
	return false
}

// phaseDone reports whether the phase of state s (or, with parity, of s's parity) completed.
func (b *mbarrier) phaseDone(s uint64, parity bool) bool {
	if parity {
		return b.phase&1 != uint32(s)&1
	}
	return b.phase != uint32(s)
}

// checkHang is called when no warp can run: a lane waiting on an mbarrier phase then waits
// forever, a "hang" fault at its wait.
func (c *cta) checkHang() {
	for _, w := range c.warps {
		at := w.atMbar
		for t := at; t != 0; t &= t - 1 {
			if l := bits.TrailingZeros32(t); w.mbarOff[l] == clusterWaitOff {
				at &^= 1 << l // barrier.cluster.wait: another CTA may release it (cluster.go)
			}
		}
		if at == 0 {
			continue
		}
		l := bits.TrailingZeros32(at)
		in := &c.prog.code[w.lanePC[l]]
		off := w.mbarOff[l]
		b := c.mbars[off]
		if b == nil { // mbarrier.inval ended the barrier while this lane waited on it
			c.fault(&Fault{Kind: "barrier", Space: "shared", Address: uint64(off), Msg: fmt.Sprintf("it waits on the mbarrier at shared offset %d, which mbarrier.inval invalidated while it waited: no phase of it can complete", off)}, w, l, in)
			continue
		}
		others := "every other thread of its block has exited or waits too"
		if n := c.atBarrier(); n > 0 {
			others = fmt.Sprintf("the other threads of its block have exited or wait (%d of them at a __syncthreads(), which this thread never reaches)", n)
		}
		msg := fmt.Sprintf("it waits for phase %d of the mbarrier at shared offset %d, which can never complete: %s; the phase has %d of %d arrivals pending", b.phase, off, others, b.pending, b.expected)
		if b.tx != 0 {
			msg += fmt.Sprintf(" and a tx-count of %d bytes outstanding", b.tx)
		}
		c.fault(&Fault{Kind: "hang", Space: "shared", Address: uint64(off), Msg: msg + " (a deadlock: on a GPU the kernel never ends)"}, w, l, in)
	}
}

// atBarrier counts the threads waiting at a bar.sync.
func (c *cta) atBarrier() int {
	n := 0
	for _, w := range c.warps {
		n += bits.OnesCount32(w.atBar)
	}
	return n
}

// completeLaneCopies completes every cp.async copy lane l issued and has not waited for.
func (c *cta) completeLaneCopies(w *warp, l int) {
	as := w.async
	if as == nil {
		return
	}
	keep := as.pending[:0]
	for _, cp := range as.pending {
		if int(cp.lane) == l {
			c.completeCopy(w, l, cp)
			continue
		}
		keep = append(keep, cp)
	}
	as.pending = keep
}
