package vgpu

import (
	"fmt"
	"math/bits"
	"slices"
)

// Thread-block clusters and distributed shared memory (PTX ISA 8.x, section 2.2.2 "Cluster of
// Cooperative Thread Arrays", "mapa", "barrier.cluster", the cluster special registers; the CUDA
// C++ Programming Guide's "Thread Block Clusters" and "Distributed Shared Memory"; since PTX ISA
// 7.8, sm_90).
//
// A kernel's cluster shape is its .reqnctapercluster (__cluster_dims__) or LaunchConfig.Cluster
// (cudaLaunchKernelEx's cluster dimension); the grid must be a whole number of clusters of at most
// MaxClusterSize CTAs. The CTAs of a cluster are co-scheduled: one worker runs them together,
// taking turns a quantum at a time, so one CTA may wait for another. %cluster_ctarank is the
// CTA's rank in its cluster (x fastest), %cluster_nctarank the cluster's size, %clusterid and
// %nclusterid the cluster's index in the grid of clusters and that grid's size, %cluster_ctaid and
// %cluster_nctaid the CTA's position in its cluster and the cluster's shape, %is_explicit_cluster
// 1 when launched with clusters.
//
// Shared memory of another CTA of the cluster: mapa{.shared::cluster}.u32/.u64 d, a, rank maps
// the address a (of the CTA's own shared memory) to the same variable in the CTA of that rank.
// The virtual GPU's shared::cluster addresses are the CTA's own shared offsets (below 2^24) and,
// for a mapped one, (rank+1)·2^24 + offset (in the generic shared window for a generic mapa):
// ld/st/atom.shared::cluster and generic ld/st on such an address read and write that CTA's
// shared memory. A rank outside the cluster is an "out of bounds" fault at the mapa, an offset
// past that CTA's shared memory one at the access. Accesses to another CTA's shared memory are
// counted as warp instructions (Counts.DSMEMRequests) but not as shared-memory requests or
// wavefronts; the hazard check and the initcheck follow them (dsmemrace.go).
//
// mbarrier.arrive{.release}{.cluster}.shared::cluster.b64 _, [a]{, count} arrives on the barrier
// at a (mapped by mapa: another CTA's of the cluster; remoteArrive).
//
// barrier.cluster.arrive{.release|.relaxed}{.aligned} and barrier.cluster.wait{.acquire}{.aligned}
// split the cluster-wide barrier (cluster.sync() is the pair): a wait returns once every
// non-exited thread of every CTA of the cluster has arrived in the phase of the thread's last
// arrival. A wait that can never return (a thread that never arrives and waits elsewhere, or
// waits at a __syncthreads() its block's other threads never reach because they wait at the
// cluster barrier) is a "hang" fault at the wait's line; a wait with no arrival before it, or a
// second arrival in one phase, is a "barrier" fault. For the hazard check a completed phase orders
// a block's shared-memory accesses as a __syncthreads() does.

// MaxClusterSize is the most CTAs per cluster (the portable cluster size; CUDA allows 16 only
// with cudaFuncAttributeNonPortableClusterSizeAllowed).
const MaxClusterSize = 8

// dsmemShift places a mapped CTA's rank above the shared offsets in a shared::cluster address.
const dsmemShift = 24

// clusterWaitOff marks in warp.mbarOff the lanes parked at a barrier.cluster.wait.
const clusterWaitOff = ^uint32(0)

// cluster is the state the CTAs of one running cluster share.
type cluster struct {
	ctas     []*cta
	id       [3]int
	phase    uint32        // barrier.cluster phases completed
	hb       *clusterClock // happens-before between its CTAs, for the hazard checks (dsmemrace.go)
	explicit bool
}

// clusterShape is the launch's cluster dimensions, checked against the grid.
func clusterShape(fn *Function, cfg LaunchConfig, grid [3]int) ([3]int, error) {
	d := fn.ClusterDims
	if cfg.Cluster != [3]int{} {
		d = cfg.Cluster
		if fn.ClusterDims != [3]int{} && fn.ClusterDims != d {
			return d, fmt.Errorf("%s is compiled for clusters of %v (__cluster_dims__), launched with %v", fn.Name, fn.ClusterDims, d)
		}
	}
	if d == [3]int{} {
		return [3]int{1, 1, 1}, nil
	}
	for i := range d {
		d[i] = max(d[i], 1)
		if grid[i]%d[i] != 0 {
			return d, fmt.Errorf("the grid %v is not a whole number of clusters of %v", grid, d)
		}
	}
	if n := d[0] * d[1] * d[2]; n > MaxClusterSize {
		return d, fmt.Errorf("clusters of %v are %d CTAs, more than the portable %d", d, n, MaxClusterSize)
	}
	return d, nil
}

// clusterBlock is the linear index of the CTA of rank r in cluster ci.
func (L *launch) clusterBlock(ci, r int) int {
	d, g := L.clusterDims, L.grid
	nc := [3]int{g[0] / d[0], g[1] / d[1], g[2] / d[2]}
	cid := [3]int{ci % nc[0], ci / nc[0] % nc[1], ci / (nc[0] * nc[1])}
	x := cid[0]*d[0] + r%d[0]
	y := cid[1]*d[1] + r/d[0]%d[1]
	z := cid[2]*d[2] + r/(d[0]*d[1])
	return x + g[0]*(y+g[1]*z)
}

// runCluster runs the CTAs of cluster ci together on the CTAs group.
func (L *launch) runCluster(group []*cta, ci int) {
	d := L.clusterDims
	cl := &cluster{ctas: group, explicit: true}
	g := L.grid
	nc := [3]int{g[0] / d[0], g[1] / d[1]}
	cl.id = [3]int{ci % nc[0], ci / nc[0] % nc[1], ci / (nc[0] * nc[1])}
	for r, c := range group {
		i := L.clusterBlock(ci, r)
		defer c.flushPrint(i)
		c.cl, c.rank = cl, r
		c.start(i)
	}
	for {
		ran := false
		for r := len(group) - 1; r >= 0; r-- { // the highest rank first: a CTA that reads another's
			c := group[r] // shared memory without a cluster barrier finds it gone
			// a CTA whose threads all wait at one __syncthreads() goes on while the others run (one
			// spinning on a flag this CTA sets after the barrier)
			ran = c.step() || c.allAtBarrier() && c.releaseBarrier() || ran
		}
		for _, c := range group {
			ran = ran || c.completeBulk(0, true)
		}
		if ran || cl.release() {
			continue
		}
		released := false
		for _, c := range group {
			c.checkHang()
			if !c.atClusterWait() {
				released = c.releaseBarrier() || released
			}
		}
		if released {
			continue
		}
		for _, c := range group {
			c.clusterHang()
		}
		return
	}
}

// clusterConst is the value of a cluster special register (k, dimension dim) for c.
func (c *cta) clusterConst(k uint8, dim int) uint64 {
	d := c.L.clusterDims
	if c.cl == nil {
		d = [3]int{1, 1, 1}
	}
	var id [3]int
	if c.cl != nil {
		id = c.cl.id
	} else {
		id = c.idx
	}
	switch k {
	case ckClusterCtarank:
		return uint64(c.rank)
	case ckClusterNctarank:
		return uint64(d[0] * d[1] * d[2])
	case ckClusterid:
		return uint64(id[dim])
	case ckNclusterid:
		return uint64(c.L.grid[dim] / d[dim])
	case ckClusterCtaid:
		return uint64([3]int{c.rank % d[0], c.rank / d[0] % d[1], c.rank / (d[0] * d[1])}[dim])
	case ckClusterNctaid:
		return uint64(d[dim])
	case ckExplicitCluster:
		if c.cl != nil {
			return 1
		}
	}
	return 0
}

// decodeMapa decodes mapa{.shared::cluster}.{u32,u64} d, a, rank.
func (d *decoder) decodeMapa(in *inst, m mods, s pinst) error {
	if len(m.types) != 1 || (m.types[0].name != "u32" && m.types[0].name != "u64") {
		return d.errf("only mapa{.shared::cluster}.u32/.u64 d, a, rank is supported")
	}
	if err := d.nargs(s, 3); err != nil {
		return err
	}
	in.mode = 0
	if m.hasSp {
		in.mode = 1 // a shared::cluster address, else a generic one
	}
	var err error
	t := m.types[0]
	if in.d, err = d.dst(s.args[0]); err != nil {
		return err
	}
	if in.a, err = d.src(s.args[1], t); err != nil {
		return err
	}
	in.b, err = d.src(s.args[2], parseType("u32"))
	in.exec = execMapa
	return err
}

func execMapa(w *warp, in *inst, m uint32) {
	c := w.c
	for t := m; t != 0; t &= t - 1 {
		l := bits.TrailingZeros32(t)
		a, r := w.regs[in.a][l], w.regs[in.b][l]&0xffffffff
		if n := c.clusterConst(ckClusterNctarank, 0); r >= n {
			c.fault(&Fault{Kind: "out of bounds", Msg: fmt.Sprintf("mapa to CTA rank %d of a cluster of %d", r, n)}, w, l, in)
		}
		shared := in.mode == 1
		if !shared && a >= sharedWindow && a < sharedWindow+1<<32 {
			a -= sharedWindow
		} else if !shared {
			c.fault(&Fault{Kind: "out of bounds", Address: a, Msg: fmt.Sprintf("mapa of %#x, not an address in shared memory", a)}, w, l, in)
		}
		v := (r+1)<<dsmemShift | a&(1<<dsmemShift-1)
		if !shared {
			v += sharedWindow
		}
		w.regs[in.d][l] = v
	}
}

// remoteShared resolves a mapped shared::cluster offset: the shared memory of the CTA it names,
// and the offset in it.
func (c *cta) remoteShared(w *warp, in *inst, l int, addr uint64) ([]byte, uint64) {
	r := addr>>dsmemShift - 1
	if c.cl == nil || r >= uint64(len(c.cl.ctas)) {
		c.fault(&Fault{Kind: "out of bounds", Space: "shared::cluster", Address: addr, Msg: fmt.Sprintf("shared::cluster address %#x names CTA rank %d, outside the cluster", addr, r)}, w, l, in)
	}
	o := c.cl.ctas[r]
	if o.exited() {
		c.fault(&Fault{Kind: "out of bounds", Space: "shared::cluster", Address: addr, Msg: fmt.Sprintf("an access to the shared memory of CTA rank %d of the cluster, which has exited: its shared memory is gone (CUDA C++ Programming Guide, \"Distributed Shared Memory\": a block must not exit before the others' accesses to its shared memory are done, e.g. cluster.sync() before exiting)", r)}, w, l, in)
	}
	c.dsmem++
	return o.shared, addr & (1<<dsmemShift - 1)
}

// exited reports whether every thread of c has exited.
func (c *cta) exited() bool {
	for _, w := range c.warps {
		if w.live != 0 {
			return false
		}
	}
	return true
}

// decodeBarrierCluster decodes barrier.cluster.arrive{.release|.relaxed}{.aligned} and
// barrier.cluster.wait{.acquire}{.aligned}.
func (d *decoder) decodeBarrierCluster(in *inst, m mods, s pinst) error {
	in.class = ClassBarrier
	for _, w := range m.words {
		switch w {
		case "cluster", "arrive", "wait", "release", "relaxed", "acquire", "aligned":
		default:
			return d.errf("unknown modifier .%s (barrier.cluster.arrive / .wait)", w)
		}
	}
	if err := d.nargs(s, 0); err != nil {
		return err
	}
	if oneOf(m, "relaxed") != "" {
		in.mode = 1 // an arrive that releases nothing (dsmemrace.go)
	}
	if oneOf(m, "wait") != "" {
		in.ctl = ctlMbWait // mbarWait hands it to clusterWait (in.mb is nil)
		return nil
	}
	in.exec = execClusterArrive
	return nil
}

func execClusterArrive(w *warp, in *inst, m uint32) {
	c := w.c
	if c.clArrived == nil {
		c.clArrived = make([]uint32, c.L.nthreads)
	}
	ph := uint32(0)
	if c.cl != nil {
		ph = c.cl.phase
	}
	for t := m; t != 0; t &= t - 1 {
		l := bits.TrailingZeros32(t)
		a := &c.clArrived[w.first+l]
		if *a > ph {
			c.fault(&Fault{Kind: "barrier", Msg: "barrier.cluster.arrive twice in one phase of the cluster barrier, with no barrier.cluster.wait between"}, w, l, in)
		}
		*a = ph + 1
	}
	if in.mode == 1 && c.cl != nil && c.L.racecheck && len(c.cl.ctas) > 1 {
		c.cl.clock().relaxed[c.rank] = true
	}
}

// clusterWait runs a barrier.cluster.wait at pc for the lanes of m: lanes whose phase completed go
// on, the others park until the cluster's threads have all arrived (cluster.release).
func (c *cta) clusterWait(w *warp, in *inst, m uint32, pc int32) bool {
	if c.cl == nil { // a CTA alone: its own threads are the cluster
		c.cl = &cluster{ctas: []*cta{c}, id: c.idx}
	}
	var park uint32
	for t := m; t != 0; t &= t - 1 {
		l := bits.TrailingZeros32(t)
		a := uint32(0)
		if c.clArrived != nil {
			a = c.clArrived[w.first+l]
		}
		if a <= c.cl.phase {
			if a < c.cl.phase || a == 0 {
				c.fault(&Fault{Kind: "barrier", Msg: "barrier.cluster.wait with no barrier.cluster.arrive before it in this phase"}, w, l, in)
			}
			continue
		}
		park |= 1 << l
		w.lanePC[l], w.mbarOff[l] = pc, clusterWaitOff
	}
	w.atMbar |= park
	w.active &^= park
	w.pc = pc + 1
	if w.active == 0 {
		w.pick()
		return true
	}
	return false
}

// release completes the cluster barrier's phase when every live thread of the cluster arrived in
// it, waking the waiting lanes; it reports whether it did.
func (cl *cluster) release() bool {
	if cl == nil {
		return false
	}
	waiters := false
	for _, c := range cl.ctas {
		for _, w := range c.warps {
			for t := w.live; t != 0; t &= t - 1 {
				l := bits.TrailingZeros32(t)
				if c.clArrived == nil || c.clArrived[w.first+l] != cl.phase+1 {
					return false
				}
				waiters = waiters || w.atMbar>>l&1 == 1
			}
		}
	}
	if !waiters {
		return false
	}
	cl.phase++
	cl.barrierSync() // dsmemrace.go
	for _, c := range cl.ctas {
		if c.L.racecheck {
			c.newInterval() // a superset of __syncthreads() for the hazard check
			c.wg.orderAll()
		}
		c.wakeMbar(clusterWaitOff)
	}
	return true
}

// allAtBarrier reports whether every live thread of c waits at a bar.sync (and some do).
func (c *cta) allAtBarrier() bool {
	some := false
	for _, w := range c.warps {
		if w.atBar != w.live || w.atMbar != 0 {
			return false
		}
		some = some || w.atBar != 0
	}
	return some
}

// atClusterWait reports whether a lane of c waits at barrier.cluster.wait.
func (c *cta) atClusterWait() bool {
	for _, w := range c.warps {
		for t := w.atMbar; t != 0; t &= t - 1 {
			if w.mbarOff[bits.TrailingZeros32(t)] == clusterWaitOff {
				return true
			}
		}
	}
	return false
}

// clusterHang faults at the first lane of c still waiting at barrier.cluster.wait when nothing
// of its cluster can run.
func (c *cta) clusterHang() {
	for _, w := range c.warps {
		for t := w.atMbar; t != 0; t &= t - 1 {
			l := bits.TrailingZeros32(t)
			if w.mbarOff[l] != clusterWaitOff {
				continue
			}
			in := &c.prog.code[w.lanePC[l]]
			c.fault(&Fault{Kind: "hang", Msg: fmt.Sprintf("it waits at barrier.cluster.wait in phase %d of the cluster barrier, which can never complete: a thread of the cluster never arrives (it waits elsewhere, at a __syncthreads() or an mbarrier), so the kernel never ends on a GPU", c.cl.phase)}, w, l, in)
		}
	}
}

// clustersOf is the sorted, distinct indices of the clusters of the blocks (linear indices).
func (L *launch) clustersOf(blocks []int) []int {
	d, g := L.clusterDims, L.grid
	nc := [3]int{g[0] / d[0], g[1] / d[1]}
	seen := map[int]bool{}
	out := []int{}
	for _, i := range blocks {
		x, y, z := i%g[0], i/g[0]%g[1], i/(g[0]*g[1])
		ci := x/d[0] + nc[0]*(y/d[1]+nc[1]*(z/d[2]))
		if !seen[ci] {
			seen[ci] = true
			out = append(out, ci)
		}
	}
	slices.Sort(out)
	return out
}

// remoteArrive is mbarrier.arrive.shared::cluster: n arrivals of lane l on the barrier at a
// shared::cluster address, the CTA's own or (mapped by mapa) another CTA's of the cluster.
func (c *cta) remoteArrive(w *warp, in *inst, l int, n int64) {
	addr := uint64(in.off)
	if in.a >= 0 {
		addr += w.regs[in.a][l]
	}
	owner := c
	if addr >= 1<<dsmemShift {
		r := addr>>dsmemShift - 1
		if c.cl == nil || r >= uint64(len(c.cl.ctas)) || c.cl.ctas[r].exited() {
			c.fault(&Fault{Kind: "barrier", Space: "shared::cluster", Address: addr, Msg: fmt.Sprintf("mbarrier.arrive on shared::cluster address %#x: CTA rank %d is not a running CTA of the cluster", addr, r)}, w, l, in)
		}
		owner, addr = c.cl.ctas[r], addr&(1<<dsmemShift-1)
	}
	if addr%8 != 0 || addr+8 > uint64(len(owner.shared)) {
		c.fault(&Fault{Kind: "barrier", Space: "shared::cluster", Address: addr, Msg: fmt.Sprintf("mbarrier.arrive at shared offset %d, not an 8-byte word of the CTA's shared memory", addr)}, w, l, in)
	}
	if owner.mbars[uint32(addr)] == nil {
		c.fault(&Fault{Kind: "barrier", Space: "shared::cluster", Address: addr, Msg: fmt.Sprintf("mbarrier.arrive on shared offset %d of CTA rank %d, which no mbarrier.init initialised", addr, owner.rank)}, w, l, in)
	}
	if owner != c {
		c.clusterRelease(sharedLocation(owner.rank, addr)) // an arrive is .release (dsmemrace.go)
		b := owner.mbars[uint32(addr)]
		if n < 1 || n > b.pending {
			c.fault(&Fault{Kind: "barrier", Msg: fmt.Sprintf("mbarrier.arrive with count %d on CTA rank %d's barrier, whose phase has %d arrivals pending", n, owner.rank, b.pending)}, w, l, in)
		}
		b.pending -= n
		owner.mbarComplete(uint32(addr), b)
		return
	}
	c.mbarArrive(w, in, l, uint32(addr), n, false)
}
