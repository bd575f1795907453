package vgpu

import "fmt"

// Happens-before through mbarriers for wgmma's shared-memory operands (hazard check on). The
// racecheck of racecheck.go forgets every earlier access when any mbarrier phase completes (a
// phase orders like a barrier), so a warp-specialised producer that refills a stage without
// waiting on the consumers' "empty" barrier goes unseen: its own TMA barrier's phases complete
// in between. Here an mbarrier orders only what it carries: an arrival releases what its warp
// acquired, a wait that sees the phase complete acquires what the phase's arrivals released
// (PTX ISA 8.x, "mbarrier": arrive has release and test_wait/try_wait acquire semantics), and a
// __syncthreads() or barrier.cluster orders everything.
//
// The clocks count per warpgroup: wgmma is a warpgroup's instruction, and a warpgroup's wgmma
// reads are taken to be released by any later arrival of one of its warps (an elected thread
// arriving for the warpgroup after wgmma.wait_group). A wgmma read of a shared byte is stamped
// with its warpgroup's clock when the warpgroup's first warp executes that wgmma; a write of the
// byte (a store, atomic or TMA copy) by a warp of another warpgroup that has not acquired a later
// release of the reader's warpgroup is a "hazard": the wgmma may still be reading what it
// overwrites. Orders this misses are never reported; none is invented beyond them.

// mbarOrder is a CTA's clocks: per warpgroup its releases so far, per warp the latest release of
// each warpgroup it acquired, and per warpgroup the stamps of its latest wgmma instructions.
type mbarOrder struct {
	clock  []uint32
	vc     [][]uint32
	stamps [][wgStampRing]wgStamp
}

// wgStamp is the warpgroup clock when the warpgroup's first warp executed its seq-th wgmma.
type wgStamp struct{ seq, epoch uint32 }

// wgStampRing is how many of a warpgroup's latest wgmma stamps are kept (its warps execute the
// same wgmma instructions in program order, never that far apart).
const wgStampRing = 16

// order is s's clocks for c, made on first use.
func (s *wgState) order(c *cta) *mbarOrder {
	if s.ord == nil {
		groups := (len(c.warps) + 3) / 4
		o := &mbarOrder{clock: make([]uint32, groups), vc: make([][]uint32, len(c.warps)), stamps: make([][wgStampRing]wgStamp, groups)}
		for i := range o.vc {
			o.vc[i] = make([]uint32, groups)
		}
		s.ord = o
	}
	return s.ord
}

// mbarRelease is an arrival of w on b: the phase being completed carries what w has acquired,
// and one more release of w's warpgroup.
func (c *cta) mbarRelease(w *warp, b *mbarrier) {
	s := c.wg
	if s == nil || s.rec == nil || !c.L.racecheck {
		return
	}
	o := s.order(c)
	g := w.id / 4
	o.clock[g]++
	o.vc[w.id][g] = o.clock[g]
	if b.acc == nil {
		b.acc = make([]uint32, len(o.clock))
	}
	maxInto(b.acc, o.vc[w.id])
}

// mbarOrderArrive is an arrival of w at the counted barrier b, which orders wgmma's operands as an
// mbarrier arrival does: one more release of w's warpgroup, carried by b's phase to its waiters.
func (c *cta) mbarOrderArrive(w *warp, b *namedBar) {
	s := c.wg
	if s == nil || s.rec == nil || s.ord == nil {
		return
	}
	o := s.ord
	g := w.id / 4
	o.clock[g]++
	o.vc[w.id][g] = o.clock[g]
	if b.wgAcc == nil {
		b.wgAcc = make([]uint32, len(o.clock))
	}
	maxInto(b.wgAcc, o.vc[w.id])
}

// mbarPhaseDone keeps the releases of b's completing phase for the waits that see it complete.
func (b *mbarrier) mbarPhaseDone() {
	b.done[b.phase&1], b.acc = b.acc, nil
}

// mbarAcquire is w seeing the phase of parity p of b complete: w acquires its releases.
func (c *cta) mbarAcquire(w *warp, b *mbarrier, p uint32) {
	if s := c.wg; s != nil && s.ord != nil && b.done[p&1] != nil {
		maxInto(s.ord.vc[w.id], b.done[p&1])
	}
}

// orderAll is a barrier of the whole CTA (bar.sync, barrier.cluster): a release by every
// warpgroup, which every warp acquires.
func (s *wgState) orderAll() {
	if s == nil || s.ord == nil {
		return
	}
	for g := range s.ord.clock {
		s.ord.clock[g]++
	}
	for _, v := range s.ord.vc {
		copy(v, s.ord.clock)
	}
}

// readEpoch is the stamp of w's seq-th wgmma: its warpgroup's clock when the warpgroup's first
// warp executed it.
func (s *wgState) readEpoch(c *cta, w *warp, seq uint32) uint32 {
	o := s.order(c)
	g := w.id / 4
	st := &o.stamps[g][seq%wgStampRing]
	if st.seq != seq {
		*st = wgStamp{seq: seq, epoch: o.clock[g]}
	}
	return st.epoch
}

// unordered reports whether a write by w may overlap the wgmma read rd: w is of another warpgroup
// of c and has acquired no release of the reader's warpgroup made after the read. (A TMA multicast
// issued by another CTA of the cluster is not checked: arrivals from other CTAs release nothing
// here.)
func (s *wgState) unordered(c *cta, w *warp, rd wgRead) bool {
	if s.ord == nil || !c.L.racecheck || rd.warp == 0 || w.c != c { // a multicast from another CTA: not ordered here
		return false
	}
	g := int(rd.warp-1) / 4
	return g != w.id/4 && s.ord.vc[w.id][g] <= rd.epoch
}

// unorderedRead faults on the write of shared byte b by lane l of w (instruction in) that the
// wgmma rd of another warpgroup read with nothing ordering the two (unordered).
func (s *wgState) unorderedRead(c *cta, w *warp, l int, in *inst, b uint64, rd wgRead) {
	mma := &c.prog.code[rd.self]
	f := &Fault{Kind: "hazard", Space: "shared", Address: b,
		OtherThread: c.threadXYZ(int(rd.warp-1) * warpSize), OtherLine: int(mma.line), OtherSource: c.L.source(mma.loc),
		OtherInstr: c.L.mod.Line(int(mma.line)),
		Msg:        fmt.Sprintf("a write to shared memory at offset %d, which the wgmma.mma_async at PTX line %d of warpgroup %d read, with no mbarrier wait or barrier ordering the write after that warpgroup released it: the wgmma may still be reading the old bytes. A producer refilling a stage waits on the consumers' empty barrier first (their arrival after wgmma.wait_group releases it; PTX ISA 8.x, \"mbarrier\")", b, mma.line, int(rd.warp-1)/4)}
	c.fault(f, w, l, in)
}

func maxInto(dst, src []uint32) {
	for i := range min(len(dst), len(src)) {
		dst[i] = max(dst[i], src[i])
	}
}
