package vgpu

import (
	"fmt"
	"math"
	"math/bits"
)

// The hazard check (racecheck). Like compute-sanitizer's racecheck tool (Compute Sanitizer
// documentation, "Racecheck Tool": shared-memory data access hazards, read-after-write,
// write-after-read and write-after-write, between threads of a block), it tracks every byte of
// the block's shared memory: two accesses of one byte by different threads, at least one a write,
// are a "hazard" fault unless something orders them:
//
//   - a barrier (bar.sync / __syncthreads()) between them orders every thread of the block;
//   - a warp synchronisation between them that names both threads orders two lanes of one warp:
//     bar.warp.sync (__syncwarp(mask)), shfl.sync, vote.sync, match.sync and redux.sync, each with
//     its member mask. Ordering is transitive: lane a synchronised with c,
//     then c with b, orders a's earlier accesses before b's later ones (vector clocks per warp);
//   - nothing orders threads of different warps but a barrier.
//
// Bytes, not words, are tracked: two lanes writing the two halves of one 32-bit word (16-bit f16
// staging of a tensor-core tile) do not race. A second thread writing the value a byte already
// holds is not reported (as compute-sanitizer's racecheck does not report it). Atomics do not race
// with each other and are not checked, nor is wmma on shared memory.
//
// Records are kept per 4-byte word while every access of the word in the interval covers all of
// it (the common case, one record per word), and per byte once an access covers part of a word:
// the word is split, its record copied to its 4 bytes (c.bytes), until the next barrier.
//
// Time is c.seq, a counter of the CTA's barriers and warp synchronisations: an access records the
// seq it happened at; a barrier starts a new interval (c.barSeq), which voids every older record;
// a warp synchronisation of lanes M at seq s tells each lane of M everything any lane of M knew,
// and that every lane of M has reached s (warpClock.knows).

// shadow is the hazard check's record of one word (c.shadow) or byte (c.bytes) of shared memory in
// the current interval.
type shadow struct {
	wseq, rseq uint32 // c.seq at the last write and at the latest read; < c.barSeq: none
	wpc, rpc   int32  // the instructions of the last write and the latest read
	r1pc, xpc  int32  // the instructions of r1 and x
	rlanes     uint32 // the readers' lanes, when they are all in warp rwarp
	writer     int16  // the last writer (CTA-linear thread)
	r1         int16  // the first reader
	x          int16  // the first reader outside r1's warp (when rwarp < 0)
	rwarp      int16  // the readers' warp, -1 when they are in several
	split      uint32 // words: c.seq when the word was split into bytes (≥ c.barSeq: it is now)
}

// warpClock is what the lanes of one warp know of each other's progress: knows[b][a] is the latest
// seq of a warp synchronisation of lane a that orders a before lane b's next accesses; full is the
// seq of the last synchronisation of all the warp's lanes (which all of knows is at least).
type warpClock struct {
	full  uint32
	knows *[warpSize][warpSize]uint32 // allocated at the warp's first partial synchronisation
}

// tick advances c.seq; at the end of its range it forgets every record (the check then misses
// hazards across that instant, never reports a false one).
func (c *cta) tick() {
	c.seq++
	if c.seq < math.MaxUint32 {
		return
	}
	clear(c.shadow)
	clear(c.bytes)
	clear(c.clocks)
	c.clearNamed()
	c.seq, c.barSeq = 1, 1
}

// newInterval starts a barrier interval (a CTA's start, a bar.sync released).
func (c *cta) newInterval() {
	c.tick()
	c.barSeq = c.seq
}

// warpSync is a warp synchronisation of the lanes m of w: their earlier shared-memory accesses
// are ordered before their later ones.
func (c *cta) warpSync(w *warp, m uint32) {
	if !c.L.racecheck {
		return
	}
	if c.clocks == nil {
		c.clocks = make([]warpClock, len(c.warps))
	}
	c.tick()
	s, k := c.seq, &c.clocks[w.id]
	all := uint32(fullMask)
	if n := c.L.nthreads - w.first; n < warpSize {
		all = 1<<n - 1
	}
	if m&all == all {
		k.full = s
		return
	}
	if k.knows == nil {
		k.knows = new([warpSize][warpSize]uint32)
	}
	var j [warpSize]uint32
	for t := m & all; t != 0; t &= t - 1 {
		row := &k.knows[bits.TrailingZeros32(t)]
		for a := range warpSize {
			j[a] = max(j[a], row[a])
		}
	}
	for t := m & all; t != 0; t &= t - 1 {
		j[bits.TrailingZeros32(t)] = s
	}
	for t := m & all; t != 0; t &= t - 1 {
		k.knows[bits.TrailingZeros32(t)] = j
	}
}

// execWarpSync is bar.warp.sync (PTX ISA 8.x, 9.7.13.2 "bar.warp.sync"): the executing lanes of
// its member mask synchronise.
func execWarpSync(w *warp, in *inst, m uint32) {
	w.c.warpSync(w, m&uint32(w.regs[in.a][bits.TrailingZeros32(m)]))
}

// ordered reports whether an access by thread a at seq t is ordered before thread b's access now
// (both CTA-linear; a barrier since t is checked by the callers).
func (c *cta) ordered(a, b int, t uint32) bool {
	if a == b {
		return true
	}
	if a/warpSize != b/warpSize {
		return c.namedOrdered(a, b, t) // counted barriers (namedbar.go)
	}
	if c.clocks == nil {
		return false
	}
	k := &c.clocks[b/warpSize]
	if k.full > t {
		return true
	}
	return k.knows != nil && k.knows[b%warpSize][a%warpSize] > t
}

// racecheck checks and records the shared-memory accesses of the lanes m of w (n bytes each at
// w.addr[l], loads or stores) and faults at the first hazard.
func (c *cta) racecheck(w *warp, in *inst, m uint32, n int, store bool) {
	if n == 4 && !store {
		c.raceLoads4(w, in, m)
		return
	}
	if (n == 8 || n == 16) && !store {
		c.raceLoadsVec(w, in, m, n/4)
		return
	}
	pc := int32(in.self)
	for t := m; t != 0; t &= t - 1 {
		l := bits.TrailingZeros32(t)
		base := w.addr[l]
		if n < 4 {
			c.raceBytes(w, in, l, base, 0, n, store)
			continue
		}
		for j := 0; j < n; j += 4 {
			wi := (base + uint64(j)) >> 2
			sh := &c.shadow[wi]
			switch {
			case sh.split >= c.barSeq:
				c.raceBytes(w, in, l, wi<<2, j, 4, store)
			case store:
				c.raceOne(w, in, l, sh, wi<<2, j, 4, store)
			default: // raceOne's load, inline: the hot path of shared-memory kernels
				b := w.first + l
				if sh.wseq >= c.barSeq && !c.ordered(int(sh.writer), b, sh.wseq) {
					c.hazard(w, l, in, wi<<2, "read after write", int(sh.writer), sh.wpc)
				}
				c.recordRead(sh, w, b, pc)
			}
		}
	}
}

// raceLoads4 is racecheck for 4-byte loads, the shared-memory kernels' hot path. A lane reading
// the word the lane before it read, unsplit and not written in this interval, cannot hazard, and
// its read changes the word's record only by its lane bit (the lane before left the record's
// seq, instruction and warp as recordRead would set them): a broadcast costs one record update.
func (c *cta) raceLoads4(w *warp, in *inst, m uint32) {
	pc, barSeq := int32(in.self), c.barSeq
	var sh *shadow
	prev := ^uint64(0) // the word sh records, when the lane before read it through sh
	for t := m; t != 0; t &= t - 1 {
		l := bits.TrailingZeros32(t)
		wi := w.addr[l] >> 2
		if wi == prev && sh.wseq < barSeq {
			if sh.rwarp == int16(w.id) {
				sh.rlanes |= 1 << l
			}
			continue
		}
		sh, prev = &c.shadow[wi], wi
		if sh.split >= barSeq {
			c.raceBytes(w, in, l, wi<<2, 0, 4, false)
			prev = ^uint64(0)
			continue
		}
		b := w.first + l
		if sh.wseq >= barSeq && !c.ordered(int(sh.writer), b, sh.wseq) {
			c.hazard(w, l, in, wi<<2, "read after write", int(sh.writer), sh.wpc)
		}
		c.recordRead(sh, w, b, pc)
	}
}

// raceLoadsVec is raceLoads4 for loads of words (2 or 4) aligned words per lane: a lane reading
// the words the lane before it read, none of them split nor written in this interval, changes
// their records only by its lane bit.
func (c *cta) raceLoadsVec(w *warp, in *inst, m uint32, words int) {
	pc, barSeq := int32(in.self), c.barSeq
	prev := ^uint64(0) // the first word the lane before read, when its words were all unsplit and unwritten
	for t := m; t != 0; t &= t - 1 {
		l := bits.TrailingZeros32(t)
		base := w.addr[l] >> 2
		if base == prev {
			for j := range uint64(words) {
				if sh := &c.shadow[base+j]; sh.rwarp == int16(w.id) {
					sh.rlanes |= 1 << l
				}
			}
			continue
		}
		prev = base
		for j := range uint64(words) {
			wi := base + j
			sh := &c.shadow[wi]
			if sh.split >= barSeq {
				c.raceBytes(w, in, l, wi<<2, 4*int(j), 4, false)
				prev = ^uint64(0)
				continue
			}
			b := w.first + l
			if sh.wseq >= barSeq {
				prev = ^uint64(0)
				if !c.ordered(int(sh.writer), b, sh.wseq) {
					c.hazard(w, l, in, wi<<2, "read after write", int(sh.writer), sh.wpc)
				}
			}
			c.recordRead(sh, w, b, pc)
		}
	}
}

// raceBytes checks bytes [lo, lo+k) of lane l's access, at shared offset off, byte by byte,
// splitting their word first.
func (c *cta) raceBytes(w *warp, in *inst, l int, off uint64, lo, k int, store bool) {
	wi := off >> 2
	if sh := &c.shadow[wi]; sh.split < c.barSeq {
		if c.bytes == nil {
			c.bytes = make([]shadow, len(c.shadow)*4)
		}
		copy(c.bytes[wi<<2:wi<<2+4], []shadow{*sh, *sh, *sh, *sh})
		sh.split = c.seq
	}
	for x := range k {
		c.raceOne(w, in, l, &c.bytes[off+uint64(x)], off+uint64(x), lo+x, 1, store)
	}
}

// raceOne checks and records lane l's access of the k bytes of one record (bytes [lo, lo+k) of
// the access, at shared offset addr).
func (c *cta) raceOne(w *warp, in *inst, l int, sh *shadow, addr uint64, lo, k int, store bool) {
	b, pc := w.first+l, int32(in.self)
	if store {
		c.checkWrite(w, in, l, sh, b, addr, lo, k)
		sh.wseq, sh.writer, sh.wpc = c.seq, int16(b), pc
		return
	}
	if sh.wseq >= c.barSeq && !c.ordered(int(sh.writer), b, sh.wseq) {
		c.hazard(w, l, in, addr, "read after write", int(sh.writer), sh.wpc)
	}
	c.recordRead(sh, w, b, pc)
}

// recordRead adds thread b's read to a byte's record.
func (c *cta) recordRead(sh *shadow, w *warp, b int, pc int32) {
	lane := uint32(1) << (b % warpSize)
	switch {
	case sh.rseq < c.barSeq: // the first read of the interval
		sh.r1, sh.r1pc, sh.rlanes, sh.rwarp = int16(b), pc, lane, int16(w.id)
	case sh.rwarp == int16(w.id):
		sh.rlanes |= lane
	case sh.rwarp >= 0: // a reader outside the first reader's warp
		sh.x, sh.xpc, sh.rwarp = int16(b), pc, -1
	}
	sh.rseq, sh.rpc = c.seq, pc
}

// checkWrite faults if thread b's write (lane l of w) of bytes [lo, lo+k) of its access, at
// shared offset addr, hazards with the record's last write or its reads in this interval.
func (c *cta) checkWrite(w *warp, in *inst, l int, sh *shadow, b int, addr uint64, lo, k int) {
	if sh.wseq >= c.barSeq && !c.ordered(int(sh.writer), b, sh.wseq) && !c.sameBytes(w, in, l, lo, k) {
		c.hazard(w, l, in, addr, "write after write", int(sh.writer), sh.wpc)
	}
	if sh.rseq < c.barSeq {
		return
	}
	switch {
	case sh.rwarp < 0: // readers in two warps at least: r1's and x's; one is not b's
		r, pc := sh.r1, sh.r1pc
		if int(r)/warpSize == w.id {
			r, pc = sh.x, sh.xpc
		}
		// r's own read is at c.barSeq or later (rseq is the latest reader's): unordered for
		// sure only when no counted barrier ordered r's warp before b's in this interval
		if !c.ordered(int(r), b, c.barSeq) {
			c.hazard(w, l, in, addr, "write after read", int(r), pc)
		}
	case int(sh.rwarp) != w.id: // all readers in one other warp: ordered as a warp (namedbar.go)
		if !c.ordered(int(sh.r1), b, sh.rseq) {
			c.hazard(w, l, in, addr, "write after read", int(sh.r1), sh.r1pc)
		}
	default:
		for t := sh.rlanes &^ (1 << l); t != 0; t &= t - 1 {
			a := w.first + bits.TrailingZeros32(t)
			if c.ordered(a, b, sh.rseq) {
				continue
			}
			pc := sh.rpc // the latest read's: a's own is kept only for the first reader
			if a == int(sh.r1) {
				pc = sh.r1pc
			}
			c.hazard(w, l, in, addr, "write after read", a, pc)
		}
	}
}

// sameBytes reports whether lane l's store writes, as bytes [lo, lo+k) of its access, the bytes
// already there.
func (c *cta) sameBytes(w *warp, in *inst, l, lo, k int) bool {
	n := int(in.size)
	mem := c.laneBytes(w, l, n*int(in.nvec))
	for i := lo; i < lo+k; i++ {
		if byte(w.regs[in.vec[i/n]][l]>>(8*(i%n))) != mem[i] {
			return false
		}
	}
	return true
}

// hazard faults with both accesses: lane l of w at in now, thread other at instruction otherPC.
func (c *cta) hazard(w *warp, l int, in *inst, addr uint64, what string, other int, otherPC int32) {
	f := &Fault{Kind: "hazard", Space: "shared", Address: addr,
		Msg: fmt.Sprintf("shared-memory %s hazard at %#x: no __syncthreads() (bar.sync), counted barrier both threads' warps took part in (bar.sync 1, 64), nor a __syncwarp() or other warp synchronisation naming both threads, orders the two accesses", what, addr)}
	f.OtherThread = c.threadXYZ(other)
	oi := &c.prog.code[otherPC]
	f.OtherLine = int(oi.line)
	f.OtherInstr = c.L.mod.Line(int(oi.line))
	f.OtherSource = c.L.source(oi.loc)
	c.fault(f, w, l, in)
}
