package vgpu

import (
	"fmt"
	"math/bits"
	"strings"
	"sync"
	"sync/atomic"
)

// The global-memory race check between blocks (beyond compute-sanitizer, whose racecheck tracks
// shared memory only). Two accesses of one global word by different blocks, a plain write and then
// a read, form a data race unless the PTX memory model orders them (PTX ISA 8.x, section 8
// "Memory Consistency Model": 8.8 "Release and Acquire Patterns", 8.9 "Ordering of memory
// operations", "Causality Order"): the writer's block releases (a fence at .gpu or .sys scope,
// membar.gl / fence.sc / fence.acq_rel — __threadfence() —, followed by an atomic or strong store
// to some location M; or st.release) and the reader's block acquires by observing M (an atomic on
// M, or a strong load of M) before the read. The classic last-block reduction (CUDA Samples'
// threadFenceReduction: each block writes its partial sum, __threadfence(), atomicInc a counter;
// the block that sees gridDim.x-1 reads every partial) is ordered; without the fence it is not.
//
// Because blocks run in any order (on workers in parallel here), "ordered" is decided by
// happens-before, not by the order the virtual GPU happened to run them in. Each block has an
// epoch, advanced by its fences: a write is recorded with its block and the block's epoch; a
// fence releases the epochs up to the current one. A release on M joins, into M's clock, the
// writer's released epoch and everything its block has acquired (so ordering is transitive); an
// acquire joins M's clock into the block's. A read of another block's write at epoch e is
// ordered if the reader's block knows the writer's released epoch ≥ e.
//
// Approximations, all on the side of reporting less: a block is one agent (ordering inside a
// block is the barrier's and racecheck's business); the acquiring side needs no fence after its
// atomic (the CUDA samples' pattern, which relies on it); only reads are checked (read after
// write): two blocks writing one word, or a write after another block's read, are not; atomics
// are not checked against plain accesses; two strong accesses (volatile, relaxed, acquire,
// release) never race. Words of at most maxRaceWords are tracked per launch and at most
// maxSyncClock blocks per synchronisation location; past either limit the launch's notes say the
// check stopped.

// maxRaceWords is how many 4-byte global words a launch's race check tracks (16 bytes each).
const maxRaceWords = 1 << 22

// maxSyncClock is how many blocks one synchronisation location's clock (or a block's) holds.
const maxSyncClock = 4096

// globalRace is a launch's race check state, shared by its workers.
type globalRace struct {
	wins     []atomic.Pointer[[]atomic.Uint64] // per window of L.bufs: 2 words per 4-byte word
	mu       sync.Mutex
	words    int                         // words allocated in wins (under mu)
	clocks   map[uint64]map[int32]uint32 // per synchronisation location: block → released epoch
	released atomic.Bool                 // a block has released something (else no clock exists)
	stopped  atomic.Pointer[string]      // why the check stopped, nil while it runs
}

// blockClock is a CTA's view of the block it runs (reset when the CTA takes another block).
type blockClock struct {
	block    int              // linear index + 1 of the block these values are for
	epoch    uint32           // the current epoch (advanced by each fence)
	released uint32           // the epochs up to this are released by a fence
	knows    map[int32]uint32 // per other block: its released epoch this block has acquired
}

func newGlobalRace(nwins int) *globalRace {
	return &globalRace{wins: make([]atomic.Pointer[[]atomic.Uint64], nwins), clocks: map[uint64]map[int32]uint32{}}
}

// clock is the race check's state of the block c runs now.
func (c *cta) raceClock() *blockClock {
	k := &c.gclock
	if k.block != c.linear+1 {
		*k = blockClock{block: c.linear + 1, epoch: 1, knows: k.knows}
		clear(k.knows)
	}
	return k
}

// stop ends the check for the rest of the launch, saying why in its notes.
func (g *globalRace) stop(why string) { g.stopped.CompareAndSwap(nil, &why) }

// note is the launch's note when the check stopped (nil otherwise).
func (g *globalRace) note() []*Fault {
	if g == nil || g.stopped.Load() == nil {
		return nil
	}
	return []*Fault{{Kind: "global race check stopped", Msg: *g.stopped.Load()}}
}

// shadow returns window win's records, allocating them on a write (nil: none, or over the limit).
func (g *globalRace) shadow(L *launch, win uint64, write bool) []atomic.Uint64 {
	if win >= uint64(len(g.wins)) {
		return nil
	}
	if p := g.wins[win].Load(); p != nil || !write {
		if p == nil {
			return nil
		}
		return *p
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if p := g.wins[win].Load(); p != nil {
		return *p
	}
	n := (len(L.bufs[win]) + 3) / 4
	if g.words+n > maxRaceWords {
		g.stop(fmt.Sprintf("the global-memory race check tracks %d words per launch; buffer %q is not checked", maxRaceWords, L.names[win]))
		return nil
	}
	g.words += n
	s := make([]atomic.Uint64, 2*n)
	g.wins[win].Store(&s)
	return s
}

// globalRace checks and records the global accesses of lanes m of w (n bytes each at w.addr[l]).
func (c *cta) globalRace(w *warp, in *inst, m uint32, n int, mode int) {
	g := c.L.gr
	if g.stopped.Load() != nil {
		return
	}
	k := c.raceClock()
	if mode == accAtomic {
		c.syncAt(w, in, m, k, true, true)
		return
	}
	for t := m; t != 0; t &= t - 1 {
		l := bits.TrailingZeros32(t)
		a := w.addr[l]
		s := g.shadow(c.L, a>>windowShift-1, mode == accStore)
		if s == nil {
			continue
		}
		for off := a & offsetMask &^ 3; off < a&offsetMask+uint64(n) && off/4*2+1 < uint64(len(s)); off += 4 {
			r := &s[off/4*2]
			if mode == accStore {
				r.Store(uint64(k.block)<<32 | uint64(k.epoch))
				s[off/4*2+1].Store(uint64(uint32(in.self))<<32 | uint64(uint32(w.first+l))<<1 | b2u(in.strong))
				continue
			}
			c.checkRead(w, in, l, k, r.Load(), &s[off/4*2+1], a>>windowShift-1, off)
		}
	}
	if in.strong {
		c.syncAt(w, in, m, k, mode == accStore, mode == accLoad)
	}
}

func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// checkRead faults when lane l's read of the word whose records are rec and who (window win, byte
// off) is of another block's write that nothing orders before it.
func (c *cta) checkRead(w *warp, in *inst, l int, k *blockClock, rec uint64, who *atomic.Uint64, win, off uint64) {
	wb := int32(rec>>32) - 1
	if rec == 0 || int(wb) == c.linear || k.knows[wb] >= uint32(rec) {
		return
	}
	x := who.Load()
	if x&1 != 0 && in.strong { // two strong accesses do not race
		return
	}
	pc := int32(x >> 32)
	g := c.L.grid
	blk := [3]int{int(wb) % g[0], int(wb) / g[0] % g[1], int(wb) / (g[0] * g[1])}
	f := &Fault{Kind: "hazard", Space: "global", Address: w.addr[l],
		Msg: fmt.Sprintf("global-memory read-after-write race between blocks at byte %d of buffer %q: block %s wrote it (the other access) and nothing orders that write before this read — no __threadfence() (membar.gl / fence) followed by an atomic or release store in the writing block that this block then observed with an atomic or acquire load (PTX ISA, \"Memory Consistency Model\": a data race; beyond compute-sanitizer, whose racecheck checks shared memory only)", off, c.L.names[win], xyz(blk))}
	f.OtherThread = c.threadXYZ(int(uint32(x) >> 1))
	if pc >= 0 && int(pc) < len(c.prog.code) {
		oi := &c.prog.code[pc]
		f.OtherLine = int(oi.line)
		f.OtherInstr = c.L.mod.Line(int(oi.line))
		f.OtherSource = c.L.source(oi.loc)
	}
	c.fault(f, w, l, in)
}

// fence is a fence at .gpu or .sys scope by the block k: its writes so far are released.
func (c *cta) fence(k *blockClock) {
	k.released = k.epoch
	k.epoch++
	c.L.gr.released.Store(true)
}

// syncAt is an atomic or strong access of lanes m of w: a release (when the block released
// something) joins the block's clock into each location's, an acquire joins each location's
// clock into the block's.
func (c *cta) syncAt(w *warp, in *inst, m uint32, k *blockClock, release, acquire bool) {
	g := c.L.gr
	if in.sem&semAcquireFence != 0 {
		c.fence(k) // atom.acq_rel / .release: a fence before
	}
	if !g.released.Load() {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	for t := m; t != 0; t &= t - 1 {
		a := w.addr[bits.TrailingZeros32(t)]
		mc := g.clocks[a]
		if release && (k.released > 0 || len(k.knows) > 0) {
			if mc == nil {
				mc = map[int32]uint32{}
				g.clocks[a] = mc
			}
			join(mc, k.knows)
			mc[int32(k.block-1)] = max(mc[int32(k.block-1)], k.released)
		}
		if acquire && mc != nil {
			if k.knows == nil {
				k.knows = map[int32]uint32{}
			}
			join(k.knows, mc)
		}
		if len(mc) > maxSyncClock || len(k.knows) > maxSyncClock {
			g.stop(fmt.Sprintf("more than %d blocks synchronised through one location: the global-memory race check stopped there", maxSyncClock))
			return
		}
	}
}

// join raises dst's entries to src's.
func join(dst, src map[int32]uint32) {
	for b, e := range src {
		if e > dst[b] {
			dst[b] = e
		}
	}
}

// memory-ordering bits of inst.sem
const (
	semRelease      uint8 = 1 << iota // st.release: a fence before the store
	semAcquireFence                   // atom.release / .acq_rel: a fence before the atomic
)

// decodeMembar decodes membar and the non-proxy fences: at .gpu or .sys scope (membar.gl,
// membar.sys, fence.sc, fence.acq_rel without .cta) they release the block's writes for the
// global race check; the others order nothing between blocks.
func (d *decoder) decodeMembar(in *inst, m mods, s pinst) error {
	in.class = ClassOther
	cta := strings.Contains(s.op, ".cta") || s.op == "membar"
	if (m.base == "membar" || m.base == "fence") && !cta && !strings.Contains(s.op, "proxy") {
		in.exec = execMembar
		return nil
	}
	in.ctl = ctlNop
	return nil
}

func execMembar(w *warp, in *inst, m uint32) {
	if m != 0 && w.c.L.gr != nil && w.c.L.gr.stopped.Load() == nil {
		w.c.fence(w.c.raceClock())
	}
}

// semOf is the inst.sem bits of a memory instruction's opcode.
func semOf(op string) uint8 {
	var s uint8
	if strings.Contains(op, ".release") || strings.Contains(op, ".acq_rel") {
		s |= semRelease | semAcquireFence
	}
	return s
}
