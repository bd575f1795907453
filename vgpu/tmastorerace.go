package vgpu

import (
	"fmt"
	"math/bits"
)

// The hazard checks of TMA stores (cp.async.bulk{.tensor}.global.shared::cta.bulk_group, tma.go's
// decodeBulkStore), with racecheck on. A store reads its shared source and writes its global
// destination asynchronously, some time between its issue and the issuing thread's
// cp.async.bulk.wait_group that completes its bulk async-group (PTX ISA 8.x, "cp.async.bulk",
// "cp.async.bulk.commit_group" and "cp.async.bulk.wait_group": a thread's stores since its last
// commit_group form a group; wait_group N waits until at most its N most recent groups are
// pending; with .read, only until they finished reading their source. The source must not be
// modified, and the destination is not written, before then). So:
//
//   - at its issue, the source must have been written by threads ordered before the issuing thread
//     (racecheck.go: "read after write" naming the write: the __syncthreads() between the threads'
//     writes and the elected thread's store missing), through the async proxy or followed by a
//     fence.proxy.async (the async-proxy check of wgmma, wgmma.go's records: a generic-proxy write
//     with no fence.proxy.async since is a hazard naming it), and not be the destination of a TMA
//     copy still in flight (tmarace.go);
//   - until the wait that completes the group's reads (wait_group or wait_group.read), a store,
//     atomic, remote (distributed shared memory) write or TMA copy into the source is a hazard
//     naming the store; at that wait the source counts as read by the issuing thread (racecheck's
//     records), so another thread's write after it needs a barrier after the wait;
//   - until the wait that completes the group (wait_group without .read), a load or store of the
//     destination by a thread of the block is a hazard naming the store, and a read by another
//     block is a race unless the issuing block waits, then releases (globalrace.go: the store's
//     words are recorded with an epoch no fence releases until the wait).
//
// The virtual GPU does the store at its issue (tma.go), so the bytes are right either way; only the
// checks see the difference. Sources are marked per 16-byte chunk (a TMA store's source is 16- or
// 128-byte aligned, its size a multiple of 16); a chunk two stores read names the later one. At
// most maxBulkInFlight stores are tracked in flight per CTA (older ones are dropped: hazards
// missed, none invented). Not checked: a thread of the block reading the destination after the
// issuing thread's wait with no barrier between (a race inside the block, on global memory); the
// CTA exiting before its stores are waited for; Ampere cp.async copies into a source.

// storeMark is a 16-byte chunk of shared memory a TMA store in flight reads: the issuing thread
// (CTA-linear) plus one (0: none), its instruction and its bulk async-group.
type storeMark struct {
	thread, pc int32
	group      uint32
}

// storeSpan is one TMA store's source (shared offset and bytes) or a run of its destination (a
// global address and bytes), with the store's thread, instruction and group.
type storeSpan struct {
	addr, n    uint64
	thread, pc int32
	group      uint32
}

// tmaStores is a CTA's TMA stores in flight.
type tmaStores struct {
	marks     []storeMark // per 16-byte chunk of shared memory
	srcs      []storeSpan // the stores whose reads are not waited for
	dsts      []storeSpan // the runs of global bytes not waited for
	lo, hi    uint64      // the global addresses dsts span
	committed []uint32    // per thread, the bulk async-groups it committed
}

// storeIssue checks and marks the source (n bytes at shared offset off) of the TMA store lane l
// of w issues at in.
func (c *cta) storeIssue(w *warp, in *inst, l int, off uint64, n int) {
	c.tmaBytesInFlight(w, l, in, off, n, "TMA store's read") // tmarace.go
	if !c.L.racecheck {
		return
	}
	c.raceRead(w, in, l, off, n)
	if s := c.wg; s != nil && s.rec != nil {
		for b := off; b < off+uint64(n) && b < uint64(len(s.rec)); b++ {
			if r := s.rec[b]; r.fence != 0 && r.fence == uint32(c.proxyFences)+1 {
				c.unfencedStore(w, l, in, b, r)
			}
		}
	}
	ts := c.storeState()
	t := w.first + l
	if len(ts.srcs) >= maxBulkInFlight { // forget the oldest: its hazards are missed
		old := ts.srcs[0]
		c.unmarkStore(old.thread, old.group, old)
		ts.srcs = ts.srcs[1:]
	}
	g := ts.committed[t] + 1 // the thread's open group
	sp := storeSpan{addr: off, n: uint64(n), thread: int32(t), pc: in.self, group: g}
	ts.srcs = append(ts.srcs, sp)
	for ch := off / 16; ch < (off+uint64(n)+15)/16 && ch < uint64(len(ts.marks)); ch++ {
		if ts.marks[ch].thread == 0 {
			c.storeMarked++
		}
		ts.marks[ch] = storeMark{thread: int32(t) + 1, pc: in.self, group: g}
	}
}

// storeState is c's TMA store state, made at the first store.
func (c *cta) storeState() *tmaStores {
	if c.ts == nil {
		c.ts = &tmaStores{marks: make([]storeMark, (len(c.shared)+15)/16), committed: make([]uint32, c.L.nthreads)}
	}
	return c.ts
}

// raceRead checks lane l's read of the n bytes at shared offset off against racecheck's records
// and records it, as instruction in's.
func (c *cta) raceRead(w *warp, in *inst, l int, off uint64, n int) {
	if c.shadow == nil || n <= 0 || off+uint64(n) > uint64(len(c.shared)) {
		return
	}
	a := w.addr[l]
	w.addr[l] = off
	c.racecheck(w, in, 1<<l, n, false)
	w.addr[l] = a
}

// unfencedStore faults at a TMA store (lane l of w, in) whose source byte b was last written
// through the generic proxy (record r) with no fence.proxy.async since.
func (c *cta) unfencedStore(w *warp, l int, in *inst, b uint64, r proxyRec) {
	st := &c.prog.code[r.self]
	f := &Fault{Kind: "hazard", Space: "shared", Address: b,
		OtherThread: c.threadXYZ(int(r.thread)), OtherLine: int(st.line), OtherSource: c.L.source(st.loc), OtherInstr: c.L.mod.Line(int(st.line)),
		Msg: fmt.Sprintf("a TMA store reads shared memory at offset %d through the async proxy, but it was written through the generic proxy (PTX line %d) with no fence.proxy.async since: the copy may read the old bytes. Execute fence.proxy.async.shared::cta (cuda::device::experimental::fence_proxy_async_shared_cta()) after the writes and before the barrier that precedes the store (PTX ISA 8.x, \"cp.async.bulk\" and \"membar/fence\": the async proxy)", b, st.line)}
	c.fault(f, w, l, in)
}

// storeSrcWrite faults if any of the n bytes at shared offset a of c, written (what: "store", …)
// by lane l of w at in (w may be another CTA's), is the source of a TMA store in flight.
func (c *cta) storeSrcWrite(w *warp, l int, in *inst, a uint64, n int, what string) {
	if c.storeMarked == 0 || n <= 0 {
		return
	}
	ts := c.ts
	for ch := a / 16; ch <= (a+uint64(n)-1)/16 && ch < uint64(len(ts.marks)); ch++ {
		mk := ts.marks[ch]
		if mk.thread == 0 {
			continue
		}
		st := &c.prog.code[mk.pc]
		who := ""
		if w.c != c {
			who = fmt.Sprintf(" (from CTA rank %d into CTA rank %d's shared memory)", w.c.rank, c.rank)
		}
		f := &Fault{Kind: "hazard", Space: "shared", Address: ch * 16,
			OtherThread: c.threadXYZ(int(mk.thread - 1)), OtherLine: int(st.line), OtherSource: c.L.source(st.loc), OtherInstr: c.L.mod.Line(int(st.line)),
			Msg: fmt.Sprintf("TMA store hazard at shared offset %d: a %s%s of the source of the TMA store issued at PTX line %d, which may still be reading it: the issuing thread has not completed its bulk async-group with cp.async.bulk.wait_group.read (cuda::device::experimental::cp_async_bulk_wait_group_read), and a barrier after that wait must precede the other threads' writes (PTX ISA 8.x, \"cp.async.bulk.wait_group\": the source must not be modified until the group finished reading it)", ch*16, what, who, st.line)}
		w.c.fault(f, w, l, in)
	}
}

// storeDest records n bytes at the global address a that lane l of w's TMA store (in) writes:
// until its wait they are the destination in flight, and globalrace.go's records say so.
func (c *cta) storeDest(w *warp, in *inst, l int, a uint64, n int) {
	if !c.L.racecheck || n <= 0 {
		return
	}
	ts := c.storeState()
	t := int32(w.first + l)
	g := ts.committed[t] + 1
	from := a // the run's first byte
	if k := len(ts.dsts) - 1; k >= 0 && ts.dsts[k].pc == in.self && ts.dsts[k].thread == t && ts.dsts[k].group == g && ts.dsts[k].addr+ts.dsts[k].n == a {
		ts.dsts[k].n += uint64(n) // the next element of the box's row
		from = ts.dsts[k].addr
	} else {
		if len(ts.dsts) == 0 {
			ts.lo, ts.hi = a, a
		}
		if len(ts.dsts) >= maxBulkInFlight*16 { // forget the oldest run: its hazards are missed
			ts.dsts = ts.dsts[1:]
		}
		ts.dsts = append(ts.dsts, storeSpan{addr: a, n: uint64(n), thread: t, pc: in.self, group: g})
	}
	ts.lo, ts.hi = min(ts.lo, a), max(ts.hi, a+uint64(n))
	// the run's words these bytes complete (a bf16 row is written 2 bytes at a time), not released
	// by any fence until the wait
	start := (max(from, a-3) + 3) &^ 3
	c.recordAsyncWrite(start, a+uint64(n)-min(start, a+uint64(n)), t, in.self, maxEpoch)
}

// recordAsyncWrite records, for the global race check, the write of n bytes at the global address
// a by thread t of c at instruction pc, at the block's epoch ep (maxEpoch: a write no fence of the
// block releases yet). Only the words it covers whole are recorded, as for the other writes.
func (c *cta) recordAsyncWrite(a, n uint64, t, pc int32, ep uint32) {
	g := c.L.gr
	if g == nil || g.stopped.Load() != nil || c.linear >= maxRaceBlocks {
		return
	}
	k := c.raceClock()
	s := g.shadow(c.L, a>>windowShift-1, true)
	rec := uint64(k.block)<<recBlockShift | uint64(ep)<<recEpochShift | uint64(pc&(1<<21-1))<<recPCShift | uint64(t)<<recThreadBit
	for off := (a&offsetMask + 3) &^ 3; off+4 <= a&offsetMask+n && off/4 < uint64(len(s)); off += 4 {
		s[off/4].Store(rec)
	}
}

// storeDestAccess faults when an access of the lanes m of w (n bytes at w.addr[l], global) touches
// the destination of a TMA store of the block that is not waited for.
func (c *cta) storeDestAccess(w *warp, in *inst, m uint32, n int, mode int) {
	ts := c.ts
	for t := m; t != 0; t &= t - 1 {
		l := bits.TrailingZeros32(t)
		a := w.addr[l]
		if a+uint64(n) <= ts.lo || a >= ts.hi {
			continue
		}
		for _, d := range ts.dsts {
			if a+uint64(n) <= d.addr || a >= d.addr+d.n {
				continue
			}
			st := &c.prog.code[d.pc]
			f := &Fault{Kind: "hazard", Space: "global", Address: a,
				OtherThread: c.threadXYZ(int(d.thread)), OtherLine: int(st.line), OtherSource: c.L.source(st.loc), OtherInstr: c.L.mod.Line(int(st.line)),
				Msg: fmt.Sprintf("TMA store hazard in global memory: a %s of bytes that the TMA store issued at PTX line %d may still be writing: its writes are complete only after the issuing thread's cp.async.bulk.wait_group (without .read; cuda::device::experimental::cp_async_bulk_wait_group) and, for the block's other threads, a barrier after it (PTX ISA 8.x, \"cp.async.bulk.wait_group\")", accessName(mode), st.line)}
			c.fault(f, w, l, in)
		}
	}
}

// execBulkGroup is cp.async.bulk.commit_group and cp.async.bulk.wait_group{.read} N for the lanes
// of m: a commit closes each lane's open group; a wait completes the groups older than the lane's
// N most recent ones: their sources are read (and count as the lane's reads now), and without
// .read their destinations are written (and released by the block's next fence).
func execBulkGroup(w *warp, in *inst, m uint32) {
	c, op := w.c, in.bulk
	ts := c.ts
	if ts == nil { // no TMA store yet: the groups so far are empty
		return
	}
	for t := m; t != 0; t &= t - 1 {
		l := bits.TrailingZeros32(t)
		th := w.first + l
		if op.group == 'c' {
			ts.committed[th]++
			continue
		}
		if ts.committed[th] < uint32(op.wait) {
			continue
		}
		g := ts.committed[th] - uint32(op.wait)
		c.completeStoreReads(w, l, g)
		if op.group == 'w' {
			c.completeStoreWrites(int32(th), g)
		}
	}
}

// completeStoreReads completes the reads of lane l's stores in groups up to g.
func (c *cta) completeStoreReads(w *warp, l int, g uint32) {
	ts, th := c.ts, int32(w.first+l)
	keep := ts.srcs[:0]
	for _, s := range ts.srcs {
		if s.thread != th || s.group > g {
			keep = append(keep, s)
			continue
		}
		c.unmarkStore(th, g, s)
		c.raceRead(w, &c.prog.code[s.pc], l, s.addr, int(s.n)) // read by the thread until now
	}
	ts.srcs = keep
}

// completeStoreWrites completes the destinations of thread th's stores in groups up to g: they are
// recorded at the block's current epoch, released by its next fence.
func (c *cta) completeStoreWrites(th int32, g uint32) {
	ts := c.ts
	keep := ts.dsts[:0]
	var ep uint32
	if c.L.gr != nil && c.linear < maxRaceBlocks {
		ep = c.raceClock().epoch
	}
	for _, d := range ts.dsts {
		if d.thread != th || d.group > g {
			keep = append(keep, d)
			continue
		}
		c.recordAsyncWrite(d.addr, d.n, d.thread, d.pc, ep)
	}
	ts.dsts = keep
}

// unmarkStore clears the marks of the source s that thread th's groups up to g own.
func (c *cta) unmarkStore(th int32, g uint32, s storeSpan) {
	ts := c.ts
	for ch := s.addr / 16; ch < (s.addr+s.n+15)/16 && ch < uint64(len(ts.marks)); ch++ {
		if mk := ts.marks[ch]; mk.thread == th+1 && mk.group <= g {
			ts.marks[ch] = storeMark{}
			c.storeMarked--
		}
	}
}

// resetStores clears the TMA store state for the CTA's next block.
func (c *cta) resetStores() {
	if ts := c.ts; ts != nil {
		clear(ts.marks)
		clear(ts.committed)
		ts.srcs, ts.dsts = ts.srcs[:0], ts.dsts[:0]
	}
	c.storeMarked = 0
}
