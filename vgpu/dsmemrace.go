package vgpu

import (
	"fmt"
	"math/bits"
)

// racecheck and initcheck across distributed shared memory (cluster.go). A CTA's shared memory
// can be read and written by the other CTAs of its cluster (mapa, ld/st.shared::cluster, generic
// accesses to a mapped address); those accesses are ordered with the owner's only by the
// cluster's synchronisation: barrier.cluster (cluster.sync()), an mbarrier phase (a remote
// mbarrier.arrive.release.cluster the owner waits on), or release/acquire accesses (CUDA C++
// Programming Guide, "Distributed Shared Memory": "ensure that all distributed shared memory
// operations happen before a thread block exits", and the cluster.sync() between a producer's
// remote writes and the consumer's reads in its example; PTX ISA 8.x, "Memory Consistency Model":
// accesses of different CTAs are ordered only through release/acquire patterns at cluster scope).
//
// The check keeps, for every byte of a CTA's shared memory that an access from another CTA of the
// cluster touched, the last write and the last read since the cluster's last synchronisation (its
// epoch: a barrier.cluster phase, any mbarrier phase completing in any CTA of the cluster, a
// fence or membar at cluster scope or wider, or a strong (volatile, relaxed, acquire, release) or
// atomic access through distributed shared memory). A write and another access of one byte by threads of different CTAs in one epoch, at
// least one a write, are a "hazard" fault at the second, naming the first's CTA rank, thread and
// line; the owner's own accesses are recorded once another CTA has touched its memory in the epoch
// (the owner's __syncthreads() orders nothing for the other CTA). Accesses within one CTA are
// racecheck.go's. Coarse where it must be: an mbarrier phase anywhere in the cluster ends the epoch,
// so hazards across one are missed; none is invented.
//
// initcheck: another CTA's store marks the owner's bytes written, and its load of bytes no thread
// wrote is an "uninitialised read" note at the load, as for the owner's own accesses.

// dsmRec is one shared byte's last write and last read in the cluster's current epoch (plus one:
// 0 none); writer and reader are rank<<16 | CTA-linear thread.
type dsmRec struct {
	wEpoch, rEpoch uint32
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
	if mode == accAtomic || in.strong {
		c.cl.sync()
		return
	}
	o.dsmCheck(w, in, l, off, n, mode == accStore)
}

// dsmLocal checks the owner's own shared accesses of the lanes m of w (n bytes at w.addr[l])
// while another CTA has touched its memory in this epoch.
func (c *cta) dsmLocal(w *warp, in *inst, m uint32, n int, mode int) {
	if mode == accAtomic || in.strong {
		c.cl.sync()
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
	ep := c.cl.epoch + 1
	me := int32(w.c.rank<<16 | (w.first + l))
	for i := off; i < off+uint64(n) && i < uint64(len(c.dsm)); i++ {
		r := &c.dsm[i]
		if r.wEpoch == ep && r.writer>>16 != me>>16 {
			c.dsmHazard(w, l, in, i, map[bool]string{true: "write after write", false: "read after write"}[store], r.writer, r.wpc)
		}
		if store && r.rEpoch == ep && r.reader>>16 != me>>16 {
			c.dsmHazard(w, l, in, i, "write after read", r.reader, r.rpc)
		}
		if store {
			r.wEpoch, r.writer, r.wpc = ep, me, in.self
		} else {
			r.rEpoch, r.reader, r.rpc = ep, me, in.self
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
		Msg: fmt.Sprintf("distributed shared memory %s hazard at shared offset %d of CTA rank %d: the other access is by a thread of CTA rank %d (block %v) of the cluster, and no barrier.cluster (cluster.sync()), mbarrier phase or release/acquire access orders the two (CUDA C++ Programming Guide, \"Distributed Shared Memory\")",
			what, off, c.rank, rank, c.cl.ctas[rank].idx)}
	w.c.fault(f, w, l, in)
}

// sync ends the cluster's epoch: every access recorded so far is ordered before the next ones.
func (cl *cluster) sync() {
	if cl == nil {
		return
	}
	cl.epoch++
	for _, c := range cl.ctas {
		c.dsmLive = false
		if c.L.racecheck {
			c.tick()
			c.clSeq = c.seq // the records before it are ordered before another CTA's copy (tmarace.go)
		}
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
