package vgpu

import (
	"fmt"
	"math/bits"
)

// racecheck and initcheck across distributed shared memory (cluster.go). A CTA's shared memory
// can be read and written by the other CTAs of its cluster (mapa, ld/st.shared::cluster, generic
// accesses to a mapped address); those accesses are ordered with the owner's only by what the PTX
// memory model says synchronises (PTX ISA 8.x, section 8 "Memory Consistency Model": 8.8 "Release
// and Acquire Patterns", "Causality Order": a release pattern (a release operation, or a fence.sc
// / fence.acq_rel followed by a strong write) on a location M, observed by an acquire pattern (an
// acquire operation, or a strong read) of M in another thread, orders everything before the release
// before everything after the acquire, transitively, when both are morally strong: their scopes
// include each other, here .cluster or wider; CUDA C++ Programming Guide, "Distributed Shared
// Memory", whose example orders the producer's remote writes before the consumer's reads with
// cluster.sync()).
//
// Happens-before is tracked with one agent per CTA (clusterClock): a CTA's time is its racecheck
// clock (cta.seq); a release by CTA q publishes q's time, and everything q knows, at the location;
// an acquire of the location by CTA s joins what was published there into what s knows. An access
// by CTA q at time t is ordered before CTA s's access when s knows a time of q ≥ t. What releases
// and acquires:
//
//   - barrier.cluster: a completed phase orders every CTA's accesses before every CTA's next ones
//     (arrive is .release unless .relaxed, wait is .acquire; PTX ISA 8.x, "barrier.cluster"); a
//     CTA with a thread that arrived .relaxed releases nothing in that phase;
//   - mbarrier: an arrive on another CTA's barrier (mbarrier.arrive{.release}.cluster.shared::cluster,
//     .release by default) releases at that barrier, and a wait (test_wait / try_wait, .acquire by
//     default) that sees a phase complete acquires it (PTX ISA 8.x, "mbarrier.arrive",
//     "mbarrier.test_wait/mbarrier.try_wait"); a phase completing orders nothing else across CTAs;
//   - atomics and strong accesses (.volatile, .relaxed, .acquire, .release) of shared memory
//     (through distributed shared memory or the CTA's own) or of global memory, at a scope wider
//     than .cta: a write (atomic or store) with .release (or .acq_rel) releases at its location; a
//     relaxed one releases what the CTA's last fence at .cluster scope or wider (fence.acq_rel /
//     fence.sc .cluster/.gpu/.sys, membar.gl/.sys: __threadfence()) released; a read (atomic or
//     load) acquires, with or without a fence after it (the CUDA samples' pattern, as in
//     globalrace.go).
//
// The check keeps, for every byte of a CTA's shared memory that an access from another CTA of the
// cluster touched, the last write and the last read, each with its CTA rank, thread and time. A
// write and another access of one byte by threads of different CTAs, at least one a write, not
// ordered so, are a "hazard" fault at the second, naming the first's CTA rank, thread and line;
// the owner's own accesses are recorded once another CTA has touched its memory since the last
// barrier.cluster phase (the owner's __syncthreads() orders nothing for the other CTA). Accesses
// within one CTA are racecheck.go's.
//
// Approximate, on the side of reporting less: a CTA is one agent (two threads of one CTA need no
// barrier between one's remote write and the other's release); a location's clock keeps every
// release made there, so a wait on one mbarrier phase acquires the releases of later phases made
// before it ran; a wait acquires whatever its scope (.cta, the default, included: CUTLASS's
// cluster pipelines wait so on their peers' remote arrivals); the acquiring side needs no fence after a relaxed read; strong accesses are not
// checked against plain ones; the owner's accesses before another CTA first touches its memory
// in a barrier.cluster phase are not recorded; past maxClusterLocations locations in one cluster
// every later synchronisation orders everything, as a barrier.cluster does.
//
// initcheck: another CTA's store marks the owner's bytes written, and its load of bytes no thread
// wrote is an "uninitialised read" note at the load, as for the owner's own accesses.

// dsmRec is one shared byte's last write and last read by the cluster's CTAs: the accessing CTA's
// time then (0: none), rank<<16 | CTA-linear thread, and instruction.
type dsmRec struct {
	wSeq, rSeq     uint32
	writer, reader int32
	wpc, rpc       int32
}

// dsmemAccess checks lane l's access at the mapped address addr (n bytes at offset off of another
// CTA's shared memory, or its own through a mapped address).
func (c *cta) dsmemAccess(w *warp, in *inst, l int, addr, off uint64, n int, mode int) {
	if addr >= sharedWindow && addr < sharedWindow+1<<32 {
		addr -= sharedWindow
	}
	o := c.cl.ctas[addr>>dsmemShift-1] // remoteShared checked the rank
	if o.sFull < len(o.swritten) && !accessBytes(n, off, mode, true, o.swritten) {
		c.noteUninit(w, l, in, "shared", -1, off, n)
	}
	if !c.L.racecheck {
		return
	}
	if o.bulkMarked > 0 || o.storeMarked > 0 { // the owner's TMA copies and stores in flight (tmarace.go)
		what := fmt.Sprintf("remote %s from CTA rank %d (distributed shared memory)", accessName(mode), c.rank)
		o.tmaBytesInFlight(w, l, in, off, n, what)
		if mode != accLoad {
			o.storeSrcWrite(w, l, in, off, n, what)
		}
	}
	if mode == accAtomic || in.sem&semStrong != 0 {
		c.clusterSync(in, sharedLocation(o.rank, off), mode)
		return
	}
	o.dsmCheck(w, in, l, off, n, mode == accStore)
}

// clusterSyncs reports whether an access (in, mode) of c is a synchronisation for the cluster's
// happens-before: an atomic or strong access, with racecheck on, in a cluster of several CTAs.
func (c *cta) clusterSyncs(in *inst, mode int) bool {
	return (mode == accAtomic || in.sem&semStrong != 0) && c.L.racecheck && c.cl != nil && len(c.cl.ctas) > 1
}

// clusterSyncLanes is the synchronisation of the lanes m of w, an atomic or strong access of
// global memory or (shared) of c's own shared memory at w.addr[l].
func (c *cta) clusterSyncLanes(w *warp, in *inst, m uint32, mode int, shared bool) {
	for t := m; t != 0; t &= t - 1 {
		a := w.addr[bits.TrailingZeros32(t)]
		if shared {
			a = sharedLocation(c.rank, a)
		}
		c.clusterSync(in, a, mode)
	}
}

// dsmLocal checks the owner's own shared accesses of the lanes m of w (n bytes at w.addr[l])
// while another CTA has touched its memory, and its synchronisations (clusterSyncs).
func (c *cta) dsmLocal(w *warp, in *inst, m uint32, n int, mode int) {
	if mode == accAtomic || in.sem&semStrong != 0 {
		if c.clusterSyncs(in, mode) {
			c.clusterSyncLanes(w, in, m, mode, true)
		}
		return
	}
	for t := m; t != 0; t &= t - 1 {
		l := bits.TrailingZeros32(t)
		c.dsmCheck(w, in, l, w.addr[l], n, mode == accStore)
	}
}

// dsmCheck checks and records lane l of w's access of the n bytes at shared offset off of c (w may
// be another CTA's warp).
func (c *cta) dsmCheck(w *warp, in *inst, l int, off uint64, n int, store bool) {
	if c.dsm == nil {
		c.dsm = make([]dsmRec, len(c.shared))
	}
	me := int32(w.c.rank<<16 | (w.first + l))
	now := w.c.seq
	for i := off; i < off+uint64(n) && i < uint64(len(c.dsm)); i++ {
		r := &c.dsm[i]
		if r.wSeq != 0 && r.writer>>16 != me>>16 && !c.cl.ordered(int(r.writer>>16), w.c.rank, r.wSeq) {
			c.dsmHazard(w, l, in, i, map[bool]string{true: "write after write", false: "read after write"}[store], r.writer, r.wpc)
		}
		if store && r.rSeq != 0 && r.reader>>16 != me>>16 && !c.cl.ordered(int(r.reader>>16), w.c.rank, r.rSeq) {
			c.dsmHazard(w, l, in, i, "write after read", r.reader, r.rpc)
		}
		if store {
			r.wSeq, r.writer, r.wpc = now, me, in.self
		} else {
			r.rSeq, r.reader, r.rpc = now, me, in.self
		}
	}
	if w.c != c {
		c.dsmLive = true
	}
}

// dsmHazard faults at lane l of w (in) on byte off of c's shared memory, the other access by
// thread other (rank<<16 | thread) at instruction pc.
func (c *cta) dsmHazard(w *warp, l int, in *inst, off uint64, what string, other, pc int32) {
	oi := &c.prog.code[pc]
	rank := int(other >> 16)
	f := &Fault{Kind: "hazard", Space: "shared::cluster", Address: off,
		OtherThread: c.threadXYZ(int(other & 0xffff)), OtherLine: int(oi.line), OtherSource: c.L.source(oi.loc),
		OtherInstr: c.L.mod.Line(int(oi.line)),
		Msg: fmt.Sprintf("distributed shared memory %s hazard at shared offset %d of CTA rank %d: the other access is by a thread of CTA rank %d (block %v) of the cluster, and nothing orders the two: no barrier.cluster (cluster.sync()) between them, no mbarrier arrive on a barrier the other CTA then waited on, no release (st.release / atom.release, or __threadfence() and an atomic) at cluster scope that the other CTA then observed with an atomic or acquire load (PTX ISA 8.x, \"Memory Consistency Model\"; CUDA C++ Programming Guide, \"Distributed Shared Memory\")",
			what, off, c.rank, rank, c.cl.ctas[rank].idx)}
	w.c.fault(f, w, l, in)
}

// clusterClock is the happens-before of a running cluster's CTAs (see above): knows[s][q] is the
// latest time of CTA q ordered before CTA s's next accesses; locs holds per synchronisation
// location the times its releases published, per CTA; fenced is each CTA's time at its last fence
// at cluster scope or wider (0: none); relaxed marks the CTAs with a thread that arrived at the
// cluster barrier with .relaxed in the current phase.
type clusterClock struct {
	knows   [][]uint32
	locs    map[uint64][]uint32
	fenced  []uint32
	relaxed []bool
}

// maxClusterLocations is how many synchronisation locations one cluster's clock keeps.
const maxClusterLocations = 1 << 14

// sharedLocation is the synchronisation location of shared offset off of the CTA of rank r (global
// addresses are below 2^63).
func sharedLocation(r int, off uint64) uint64 { return 1<<63 | uint64(r)<<32 | off&(1<<32-1) }

// clock is cl's happens-before, made at its first use.
func (cl *cluster) clock() *clusterClock {
	if cl.hb == nil {
		n := len(cl.ctas)
		k := &clusterClock{knows: make([][]uint32, n), locs: map[uint64][]uint32{}, fenced: make([]uint32, n), relaxed: make([]bool, n)}
		for i := range k.knows {
			k.knows[i] = make([]uint32, n)
		}
		cl.hb = k
	}
	return cl.hb
}

// ordered reports whether CTA q's access at its time t is ordered before CTA s's accesses now.
func (cl *cluster) ordered(q, s int, t uint32) bool {
	return q == s || cl.hb != nil && cl.hb.knows[s][q] >= t
}

// clusterSync is c's atomic or strong access (in, mode) of the synchronisation location loc: a
// write releases (with .release or .acq_rel: now; relaxed: what the CTA's last fence released),
// a read acquires. A .cta-scoped access synchronises nothing across CTAs.
func (c *cta) clusterSync(in *inst, loc uint64, mode int) {
	if in.sem&semCTA != 0 || c.cl == nil || len(c.cl.ctas) < 2 {
		return
	}
	k := c.cl.clock()
	if mode != accLoad {
		switch {
		case in.sem&semRelease != 0:
			c.clusterRelease(loc)
		case k.fenced[c.rank] > 0:
			c.cl.publish(c.rank, loc, k.fenced[c.rank])
		}
	}
	if mode != accStore {
		c.clusterAcquire(loc)
	}
}

// clusterRelease is a release by c at loc now: its accesses so far are published there.
func (c *cta) clusterRelease(loc uint64) {
	if c.cl == nil || len(c.cl.ctas) < 2 || !c.L.racecheck {
		return
	}
	at := c.seq
	c.tick() // the accesses after the release are later than it
	c.cl.publish(c.rank, loc, at)
}

// clusterFence is a fence of c at cluster scope or wider: a later relaxed write releases what was
// before it.
func (c *cta) clusterFence() {
	if c.cl == nil || len(c.cl.ctas) < 2 || !c.L.racecheck {
		return
	}
	c.cl.clock().fenced[c.rank] = c.seq
	c.tick()
}

// publish joins what CTA r knows, and its time at, into the location loc's clock.
func (cl *cluster) publish(r int, loc uint64, at uint32) {
	k := cl.clock()
	v := k.locs[loc]
	if v == nil {
		if len(k.locs) >= maxClusterLocations {
			cl.syncAll() // too many locations: order everything (hazards missed, none invented)
			return
		}
		v = make([]uint32, len(cl.ctas))
		k.locs[loc] = v
	}
	for q, t := range k.knows[r] {
		v[q] = max(v[q], t)
	}
	v[r] = max(v[r], at)
}

// clusterAcquire is an acquire by c of the location loc: what was released there is ordered
// before c's next accesses.
func (c *cta) clusterAcquire(loc uint64) {
	if c.cl == nil || c.cl.hb == nil || !c.L.racecheck {
		return
	}
	k := c.cl.hb
	if v := k.locs[loc]; v != nil {
		mine := k.knows[c.rank]
		for q, t := range v {
			mine[q] = max(mine[q], t)
		}
	}
}

// barrierSync is a completed barrier.cluster phase: every CTA that arrived with .release (the
// default) releases its accesses so far, and every CTA acquires them all. When all released, the
// owners' own accesses need no recording until another CTA touches their memory again.
func (cl *cluster) barrierSync() {
	if len(cl.ctas) < 2 || !cl.ctas[0].L.racecheck {
		return
	}
	k := cl.clock()
	join := make([]uint32, len(cl.ctas))
	all := true
	for q, c := range cl.ctas {
		if k.relaxed[q] {
			all = false
			continue
		}
		for r, t := range k.knows[q] {
			join[r] = max(join[r], t)
		}
		join[q] = max(join[q], c.seq)
		c.tick()
	}
	for s := range cl.ctas {
		for q, t := range join {
			k.knows[s][q] = max(k.knows[s][q], t)
		}
		k.relaxed[s] = false
		if all {
			cl.ctas[s].dsmLive = false
		}
	}
}

// syncAll orders every access of the cluster's CTAs so far before their next ones.
func (cl *cluster) syncAll() {
	k := cl.clock()
	for q, c := range cl.ctas {
		for s := range cl.ctas {
			k.knows[s][q] = max(k.knows[s][q], c.seq)
		}
		c.tick()
	}
}

// resetAsyncChecks clears the TMA and distributed shared memory records for the CTA's next block.
func (c *cta) resetAsyncChecks() {
	clear(c.bulkMarks)
	c.bulkMarked = 0
	clear(c.dsm)
	c.dsmLive = false
	c.resetStores() // tmastorerace.go
}
