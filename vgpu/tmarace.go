package vgpu

import (
	"fmt"
	"math/bits"
)

// The hazard check of TMA copies into shared memory (with racecheck on). A copy
// (cp.async.bulk{.tensor}, tma.go) writes its destination some time between its issue and the
// mbarrier wait that observes its bytes (PTX ISA 8.x, "cp.async.bulk.tensor": the writes are
// performed asynchronously and made visible through the mbarrier's complete-tx; CUDA C++
// Programming Guide, "Asynchronous Data Copies using the Tensor Memory Accelerator (TMA)": the
// destination must not be read or written until the barrier's phase completes). So:
//
//   - at its issue, a copy's destination bytes must not have been read or written in the current
//     barrier interval by a thread the issuing thread is not ordered after (racecheck.go's records:
//     a consumer still reading a stage the producer refills, with no barrier or mbarrier phase
//     between; for a multicast into another CTA, no synchronisation of the cluster since, as
//     dsmemrace.go counts them): "write after read" / "write after write", naming that access;
//   - while it is in flight, a generic load, store or atomic of its destination, a wgmma reading
//     it, or a second copy into it is a hazard naming the copy: the read may see the old bytes or
//     the new, the write may be overwritten by the copy.
//
// The bytes in flight are marked per 16-byte chunk (c.bulkMarks) from the issue until the copy is
// written (at the wait that completes it, tma.go's completeBulk), and each chunk names the copy's
// thread, CTA rank and instruction. A multicast copy marks each destination CTA's chunks. With the
// hazard check off nothing is marked, and a read before the wait sees the old bytes (an
// uninitialised-read note on fresh shared memory).

// bulkMark is one 16-byte chunk of shared memory that a TMA copy in flight will write: the issuing
// thread (CTA-linear) plus one (0: none), its CTA's rank in the cluster and its instruction.
type bulkMark struct {
	thread, pc int32
	rank       int32
}

// tmaIssue checks and marks the destination of the copy cp, issued by lane l of w executing in,
// in c's shared memory (w is another CTA's warp for a multicast into c).
func (c *cta) tmaIssue(w *warp, in *inst, l int, cp bulkCopy) {
	if !c.L.racecheck {
		return
	}
	if c.bulkMarks == nil {
		c.bulkMarks = make([]bulkMark, (len(c.shared)+15)/16)
	}
	c.storeSrcWrite(w, l, in, uint64(cp.dst), int(cp.span), "TMA copy") // tmastorerace.go
	b := w.first + l
	if w.c != c {
		b = -1 // a thread of another CTA: ordered only by the cluster's synchronisations
	}
	for ch := cp.dst / 16; ch < (cp.dst+cp.span)/16; ch++ {
		if mk := c.bulkMarks[ch]; mk.thread != 0 {
			c.tmaHazard(w, l, in, uint64(ch)*16, mk, "a TMA copy into shared memory that another TMA copy in flight will write (its mbarrier not waited on yet): the two copies land in either order")
		}
		for wi := ch * 4; wi < ch*4+4; wi++ {
			c.issueWord(w, in, l, b, uint64(wi))
		}
	}
	mk := bulkMark{thread: int32(w.first+l) + 1, pc: in.self, rank: int32(w.c.rank)}
	for ch := cp.dst / 16; ch < (cp.dst+cp.span)/16; ch++ {
		c.bulkMarks[ch] = mk
	}
	c.bulkMarked += int((cp.span + 15) / 16)
}

// issueWord checks the racecheck records of shared word wi against a copy's write by thread b
// (-1: another CTA's) issued by lane l of w.
func (c *cta) issueWord(w *warp, in *inst, l, b int, wi uint64) {
	if c.shadow == nil {
		return
	}
	sh := &c.shadow[wi]
	if sh.split < c.barSeq {
		c.issueRecord(w, in, l, b, sh, wi<<2)
		return
	}
	for x := range uint64(4) {
		c.issueRecord(w, in, l, b, &c.bytes[wi<<2+x], wi<<2+x)
	}
}

// issueRecord faults if a record's write or reads in this interval are not ordered before thread
// b, or for another CTA's copy (b < 0) before the cluster's last synchronisation.
func (c *cta) issueRecord(w *warp, in *inst, l, b int, sh *shadow, addr uint64) {
	unordered := func(a int, t uint32) bool {
		if b < 0 {
			return !c.cl.ordered(c.rank, w.c.rank, t) // dsmemrace.go
		}
		return !c.ordered(a, b, t)
	}
	if sh.wseq >= c.barSeq && unordered(int(sh.writer), sh.wseq) {
		c.issueHazard(w, l, in, addr, "write after write", "wrote", int(sh.writer), sh.wpc)
	}
	if sh.rseq < c.barSeq {
		return
	}
	readers := []struct {
		t  int
		pc int32
	}{{int(sh.r1), sh.r1pc}}
	if sh.rwarp < 0 {
		readers = append(readers, struct {
			t  int
			pc int32
		}{int(sh.x), sh.xpc})
	} else {
		for t := sh.rlanes; t != 0; t &= t - 1 {
			a := int(sh.rwarp)*warpSize + bits.TrailingZeros32(t)
			readers = append(readers, struct {
				t  int
				pc int32
			}{a, sh.rpc})
		}
	}
	for _, r := range readers {
		if r.t != b && unordered(r.t, sh.rseq) {
			c.issueHazard(w, l, in, addr, "write after read", "read", r.t, r.pc)
		}
	}
}

// issueHazard faults at a copy (lane l of w, in) into byte addr of c's shared memory that thread
// other of c accessed (did: "read", "wrote") at instruction pc, unordered with the copy.
func (c *cta) issueHazard(w *warp, l int, in *inst, addr uint64, what, did string, other int, pc int32) {
	oi := &c.prog.code[pc]
	where, sync := "", "no __syncthreads() or mbarrier phase"
	if w.c != c {
		where = fmt.Sprintf(" of CTA rank %d (block %v; a multicast)", c.rank, c.idx)
		sync = "no synchronisation of the cluster (barrier.cluster, an mbarrier phase)"
	}
	f := &Fault{Kind: "hazard", Space: "shared", Address: addr,
		OtherThread: c.threadXYZ(other), OtherLine: int(oi.line), OtherSource: c.L.source(oi.loc), OtherInstr: c.L.mod.Line(int(oi.line)),
		Msg: fmt.Sprintf("TMA %s hazard at shared offset %d%s: the copy writes bytes that another thread %s, with %s between the two: it may still be using them. Refill a stage only after its readers are done (they arrive on an \"empty\" mbarrier the producer waits on, or a __syncthreads())", what, addr, where, did, sync)}
	w.c.fault(f, w, l, in)
}

// tmaAccess faults when a shared-memory access of the lanes m of w (n bytes at w.addr[l]) touches
// bytes a TMA copy in flight will write, or writes the source of a TMA store in flight (only
// called while some are marked).
func (c *cta) tmaAccess(w *warp, in *inst, m uint32, n int, mode int) {
	for t := m; t != 0; t &= t - 1 {
		l := bits.TrailingZeros32(t)
		c.tmaBytesInFlight(w, l, in, w.addr[l], n, accessName(mode))
		if mode != accLoad {
			c.storeSrcWrite(w, l, in, w.addr[l], n, accessName(mode)) // tmastorerace.go
		}
	}
}

// tmaBytesInFlight faults if any of the n bytes at shared offset a, accessed (what: "load",
// "store", …) by lane l of w at in, is in a TMA copy's destination still in flight.
func (c *cta) tmaBytesInFlight(w *warp, l int, in *inst, a uint64, n int, what string) {
	if c.bulkMarked == 0 || n <= 0 {
		return
	}
	for ch := a / 16; ch <= (a+uint64(n)-1)/16 && ch < uint64(len(c.bulkMarks)); ch++ {
		if mk := c.bulkMarks[ch]; mk.thread != 0 {
			c.tmaHazard(w, l, in, ch*16, mk, fmt.Sprintf("a %s of shared memory that a TMA copy in flight will write: wait on the copy's mbarrier (mbarrier.try_wait, cuda::barrier::wait) before touching its destination", what))
		}
	}
}

// tmaHazard faults at lane l of w (in) naming the copy of mark mk.
func (c *cta) tmaHazard(w *warp, l int, in *inst, addr uint64, mk bulkMark, what string) {
	cp := &c.prog.code[mk.pc]
	who := ""
	if c.cl != nil && int(mk.rank) != c.rank {
		who = fmt.Sprintf(" by CTA rank %d of the cluster (a multicast)", mk.rank)
	}
	f := &Fault{Kind: "hazard", Space: "shared", Address: addr,
		OtherThread: c.threadXYZ(int(mk.thread - 1)), OtherLine: int(cp.line), OtherSource: c.L.source(cp.loc),
		OtherInstr: c.L.mod.Line(int(cp.line)),
		Msg:        fmt.Sprintf("TMA hazard at shared offset %d: %s (the copy issued at PTX line %d%s)", addr, what, cp.line, who)}
	w.c.fault(f, w, l, in)
}

// unmarkBulk clears the marks of cp's destination: its bytes are written now.
func (c *cta) unmarkBulk(cp bulkCopy) {
	if c.bulkMarks == nil {
		return
	}
	for ch := cp.dst / 16; ch < (cp.dst+cp.span)/16; ch++ {
		if c.bulkMarks[ch].thread != 0 {
			c.bulkMarks[ch] = bulkMark{}
			c.bulkMarked--
		}
	}
}
