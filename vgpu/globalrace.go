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
// release) never race; accesses of less than a word (8- and 16-bit) are not checked (records
// are per word: two blocks' bytes of one word would look like one block's). At most maxRaceWords words are tracked per launch, maxSyncLocations
// locations of maxSyncClock blocks each and maxSyncEntries blocks in all their clocks, in grids of
// maxRaceBlocks; past a limit the launch's
// notes say the check stopped.

// maxRaceWords is how many 4-byte global words a launch's race check tracks (8 bytes each).
const maxRaceWords = 1 << 23

// A word's record (0: no write seen) packs the last write's block (linear index + 1), the block's
// epoch then (saturating at maxEpoch: after that many fences a block's later writes count as
// released by any later fence, a race missed, never invented), its instruction, its thread, and
// whether it was a strong store.
const (
	recBlockShift = 40 // 24 bits: grids of up to 1<<24 - 1 blocks are checked
	recEpochShift = 32 // 8 bits
	recPCShift    = 11 // 21 bits
	recThreadBit  = 1  // 10 bits
	maxEpoch      = 255
	maxRaceBlocks = 1<<24 - 1
)

// maxSyncClock is how many blocks one synchronisation location's clock (or a block's) holds.
const maxSyncClock = 4096

// maxSyncLocations is how many locations a launch's race check keeps clocks for.
const maxSyncLocations = 1 << 16

// maxSyncEntries is how many block entries all of a launch's location clocks hold together
// (maxSyncLocations × maxSyncClock would be 2^28, several GiB).
const maxSyncEntries = 1 << 20

// globalRace is a launch's race check state, shared by its workers.
type globalRace struct {
	wins     []atomic.Pointer[[]atomic.Uint64] // per window of L.bufs: 2 words per 4-byte word
	mu       sync.Mutex
	words    int                    // words allocated in wins (under mu)
	clocks   map[uint64]*syncClock  // per synchronisation location (under mu)
	entries  int                    // entries in all clocks' at maps (under mu)
	budget   int                    // the most entries allowed (maxSyncEntries)
	released atomic.Bool            // a block has released something (else no clock exists)
	stopped  atomic.Pointer[string] // why the check stopped, nil while it runs
}

// syncClock is a synchronisation location's clock: per block, the released epoch that a release
// on the location published; ver counts its changes.
type syncClock struct {
	at  map[int32]uint32
	ver uint64
}

// blockClock is a CTA's view of the block it runs (reset when the CTA takes another block).
type blockClock struct {
	block    int               // linear index + 1 of the block these values are for
	epoch    uint32            // the current epoch (advanced by each fence)
	released uint32            // the epochs up to this are released by a fence
	knows    map[int32]uint32  // per other block: its released epoch this block has acquired
	ver      uint64            // counts changes of released and knows
	pub      map[uint64]uint64 // per location: ver when this block last released there
	seen     map[uint64]uint64 // per location: its clock's ver when this block last acquired it
}

func newGlobalRace(nwins int) *globalRace {
	return &globalRace{wins: make([]atomic.Pointer[[]atomic.Uint64], nwins), clocks: map[uint64]*syncClock{}, budget: maxSyncEntries}
}

// raceClock is the race check's state of the block c runs now.
func (c *cta) raceClock() *blockClock {
	k := &c.gclock
	if k.block != c.linear+1 {
		if k.knows == nil {
			k.knows, k.pub, k.seen = map[int32]uint32{}, map[uint64]uint64{}, map[uint64]uint64{}
		}
		clear(k.knows)
		clear(k.pub)
		clear(k.seen)
		k.block, k.epoch, k.released, k.ver = c.linear+1, 1, 0, 1
	}
	return k
}

// KindRaceCheckStopped is the Kind of the note (Counts.Notes) saying that the global race check
// stopped partway through a launch (a limit was reached): information, not a finding.
const KindRaceCheckStopped = "global race check stopped"

// stop ends the check for the rest of the launch, saying why in its notes.
func (g *globalRace) stop(why string) { g.stopped.CompareAndSwap(nil, &why) }

// note is the launch's note when the check stopped (nil otherwise).
func (g *globalRace) note() []*Fault {
	if g == nil || g.stopped.Load() == nil {
		return nil
	}
	return []*Fault{{Kind: KindRaceCheckStopped, Msg: *g.stopped.Load()}}
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
	s := make([]atomic.Uint64, n)
	g.wins[win].Store(&s)
	return s
}

// globalRace checks and records the global accesses of lanes m of w (n bytes each at w.addr[l]).
func (c *cta) globalRace(w *warp, in *inst, m uint32, n int, mode int) {
	g := c.L.gr
	if g.stopped.Load() != nil {
		return
	}
	if c.linear >= maxRaceBlocks {
		g.stop(fmt.Sprintf("the global-memory race check covers grids of up to %d blocks", maxRaceBlocks))
		return
	}
	k := c.raceClock()
	if mode == accAtomic {
		c.syncAt(w, in, m, k, true, true)
		return
	}
	if mode == accLoad && c.direct != nil && g.shadow(c.L, w.addr[bits.TrailingZeros32(m)]>>windowShift-1, false) == nil {
		return // a plain load whose lanes are all in one window that no block has written
	}
	last := ^uint64(0) // the window s is of
	var s []atomic.Uint64
	for t := m; t != 0 && n >= 4; t &= t - 1 { // records are per word: sub-word accesses are not checked
		l := bits.TrailingZeros32(t)
		a := w.addr[l]
		if win := a>>windowShift - 1; win != last {
			s, last = g.shadow(c.L, win, mode == accStore), win
		}
		if s == nil { // a window no block has written (a kernel's inputs): nothing to check
			continue
		}
		for off := a & offsetMask &^ 3; off < a&offsetMask+uint64(n) && off/4 < uint64(len(s)); off += 4 {
			if mode == accStore {
				s[off/4].Store(uint64(k.block)<<recBlockShift | uint64(k.epoch)<<recEpochShift |
					uint64(in.self&(1<<21-1))<<recPCShift | uint64(w.first+l)<<recThreadBit | b2u(in.strong))
				continue
			}
			c.checkRead(w, in, l, k, s[off/4].Load(), a>>windowShift-1, off)
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

// checkRead faults when lane l's read of the word whose record is rec (window win, byte off) is of
// another block's write that nothing orders before it.
func (c *cta) checkRead(w *warp, in *inst, l int, k *blockClock, rec uint64, win, off uint64) {
	wb := int32(rec>>recBlockShift) - 1
	if rec == 0 || int(wb) == c.linear || k.knows[wb] >= uint32(rec>>recEpochShift&maxEpoch) {
		return
	}
	if rec&1 != 0 && in.strong { // two strong accesses do not race
		return
	}
	pc := int32(rec >> recPCShift & (1<<21 - 1))
	g := c.L.grid
	blk := [3]int{int(wb) % g[0], int(wb) / g[0] % g[1], int(wb) / (g[0] * g[1])}
	where := fmt.Sprintf("byte %d of buffer %q", off, c.L.names[win])
	if win == 0 {
		where = fmt.Sprintf("byte %d of the module's .global variables", off)
	}
	f := &Fault{Kind: "hazard", Space: "global", Address: w.addr[l],
		Msg: fmt.Sprintf("global-memory read-after-write race between blocks at %s: block %s wrote it (the other access) and nothing orders that write before this read — no __threadfence() (membar.gl / fence) followed by an atomic or release store in the writing block that this block then observed with an atomic or acquire load (PTX ISA, \"Memory Consistency Model\": a data race; beyond compute-sanitizer, whose racecheck checks shared memory only)", where, xyz(blk))}
	f.OtherThread = c.threadXYZ(int(rec >> recThreadBit & 1023))
	if pc >= 0 && int(pc) < len(c.prog.code) {
		oi := &c.prog.code[pc]
		f.OtherLine = int(oi.line)
		f.OtherInstr = c.L.mod.Line(int(oi.line))
		f.OtherSource = c.L.source(oi.loc)
		if oi.bulk != nil && oi.bulk.store && rec>>recEpochShift&maxEpoch == maxEpoch {
			f.Msg += "; the write is a TMA store, not complete until its thread's cp.async.bulk.wait_group (without .read), and that wait did not come before the release"
		}
	}
	c.fault(f, w, l, in)
}

// fence is a fence at .gpu or .sys scope by the block k: its writes so far are released.
func (c *cta) fence(k *blockClock) {
	k.released = k.epoch
	if k.epoch < maxEpoch {
		k.epoch++
	}
	k.ver++
	c.L.gr.released.Store(true)
}

// syncAt is an atomic or strong access of lanes m of w: a release (when the block released
// something) joins the block's clock into each location's, an acquire joins each location's
// clock into the block's. Versions skip the joins that would change nothing.
func (c *cta) syncAt(w *warp, in *inst, m uint32, k *blockClock, release, acquire bool) {
	g := c.L.gr
	if in.sem&semAcquireFence != 0 {
		c.fence(k) // st.release, atom.release / .acq_rel: a fence before
	}
	if !g.released.Load() {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	self := int32(k.block - 1)
	for t := m; t != 0; t &= t - 1 {
		a := w.addr[bits.TrailingZeros32(t)]
		mc := g.clocks[a]
		if release && (k.released > 0 || len(k.knows) > 0) && k.pub[a] != k.ver {
			if mc == nil {
				if len(g.clocks) >= maxSyncLocations {
					g.stop(fmt.Sprintf("more than %d synchronisation locations: the global-memory race check stopped there", maxSyncLocations))
					return
				}
				mc = &syncClock{at: map[int32]uint32{}}
				g.clocks[a] = mc
			}
			if !g.publish(mc, k, self) {
				return
			}
			k.pub[a] = k.ver
		}
		if acquire && mc != nil && k.seen[a] != mc.ver {
			if join(k.knows, mc.at) {
				k.ver++
			}
			k.seen[a] = mc.ver
		}
		if mc != nil && len(mc.at) > maxSyncClock || len(k.knows) > maxSyncClock {
			g.stop(fmt.Sprintf("more than %d blocks synchronised through one location: the global-memory race check stopped there", maxSyncClock))
			return
		}
	}
}

// publish joins the releasing block k's clock (self is its linear index) into the location clock
// mc under g.mu, counting the entries of all location clocks; past g.budget it stops the check
// and reports false.
func (g *globalRace) publish(mc *syncClock, k *blockClock, self int32) bool {
	n := len(mc.at)
	if join(mc.at, k.knows) || k.released > mc.at[self] {
		mc.at[self] = max(mc.at[self], k.released)
		mc.ver++
	}
	g.entries += len(mc.at) - n
	if g.entries > g.budget {
		g.stop(fmt.Sprintf("more than %d block entries in the clocks of the synchronisation locations: the global-memory race check stopped there", g.budget))
		return false
	}
	return true
}

// join raises dst's entries to src's and reports whether any changed.
func join(dst, src map[int32]uint32) bool {
	changed := false
	for b, e := range src {
		if e > dst[b] {
			dst[b], changed = e, true
		}
	}
	return changed
}

// memory-ordering bits of inst.sem
const (
	semRelease      uint8 = 1 << iota // st.release: a fence before the store
	semAcquireFence                   // atom.release / .acq_rel: a fence before the atomic
	semStrong                         // .volatile, .relaxed, .acquire or .release, in any state space
	semCTA                            // .cta scope: synchronises nothing between CTAs (dsmemrace.go)
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
	if m != 0 && w.c.L.racecheck {
		w.c.clusterFence() // a fence at cluster scope or wider: a later relaxed write releases (dsmemrace.go)
	}
	if m != 0 && w.c.L.gr != nil && w.c.L.gr.stopped.Load() == nil && w.c.linear < maxRaceBlocks {
		w.c.fence(w.c.raceClock())
	}
}

// semOf is the inst.sem bits of a memory instruction's opcode.
func semOf(op string) uint8 {
	var s uint8
	if strings.Contains(op, ".release") || strings.Contains(op, ".acq_rel") {
		s |= semRelease | semAcquireFence
	}
	for _, q := range []string{".volatile", ".relaxed", ".acquire", ".release", ".acq_rel"} {
		if strings.Contains(op, q) {
			s |= semStrong
		}
	}
	if strings.Contains(op, ".cta") && !strings.Contains(op, ".shared::cta") || strings.Contains(op, ".cta.") {
		s |= semCTA
	}
	return s
}
