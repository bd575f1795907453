package vgpu

import (
	"math/bits"
	"sync"
)

// The memory hierarchy (LaunchConfig.Cache). Every global load, store and atomic sector of the
// CTAs that run goes through an L1 of the CTA's own and an L2 the whole launch shares; the L2's
// misses and write-backs are the DRAM traffic. Both levels are set-associative caches of 128-byte
// lines split into four 32-byte sectors, each sector valid (and in the L2 dirty) on its own, as
// NVIDIA's L1 and L2 are organised since Maxwell (Jia et al., "Dissecting the NVIDIA Volta GPU
// Architecture via Microbenchmarking", 2018: 128-byte lines of 32-byte sectors in L1 and L2).
//
// What is approximated, and why:
//
//   - Replacement is least-recently-used within a set of CacheWays lines, and the set of a line is a
//     hash of its address. NVIDIA publishes neither; the L2 spreads addresses over its slices by a
//     hash (Jia et al. 2018), so a power-of-two stride does not fall into one set, and the hash
//     stands for that. The L2 of the A100 and H100 is two partitions, each caching the data of the
//     SMs attached to it (A100 and H100 whitepapers; Chips and Cheese, "Nvidia's H100: Funny L2,
//     and Tons of Bandwidth", 2023, on its latencies); it is modelled as one cache of the whole size.
//   - CTAs run one at a time here, not 132 × 8 at once. Each CTA starts with a cold L1 of
//     CacheConfig.L1Bytes (the caller gives it the SM's L1 divided among the CTAs resident on it:
//     those share the real L1, and this is each one's share, with no lines shared between them).
//     Its L1's misses and its stores go to the L2 in CTA order (the order the hardware's block
//     scheduler issues CTAs in): the whole of CTA 0's stream, then CTA 1's, and so on, whichever
//     worker ran them, so the counts do not depend on the workers. The L2 starts cold, as Nsight
//     Compute's --cache-control all (its default) flushes it before each measured launch.
//   - Within a CTA warps take turns every cacheQuantum (32) instructions, where the hardware's
//     schedulers switch warps every few, so a warp runs a little ahead of the others. (With the
//     interpreter's usual 4096 the naive GEMM's L1 hit rate at n = 512 falls from 98% to 85%,
//     against 98% measured, and the coalesced one's from 87% to 18%, against 92%.)
//   - Loads allocate in the L1; stores are written through to the L2 and update (or allocate) the
//     L1's sector, so a later access to it hits, as Nsight Compute's l1tex__t_sector_hit_rate counts
//     repeated stores to a sector on an H100 (transpose_naive, docs/benchmarks.md). Atomics bypass
//     the L1 and read-modify-write the L2 sector. The L2 is write-back and write-allocate: a store
//     counts as an L2 hit (it needs no DRAM read; the measured copy kernel, every load a miss, has an
//     L2 hit rate of 50%), a dirty sector is written to DRAM when its line is evicted, and the
//     dirty sectors still in the L2 when the launch ends are counted apart (Counts.L2DirtyBytes:
//     Nsight Compute saw 52 of the copy's 67 MB of stores reach DRAM during the kernel, the rest
//     later).
//   - Loads with a cache operator that bypasses the L1 (ld.global.cg) are treated as cached ones.
//
// A sampled launch (LaunchConfig.Only) runs its few CTAs through a cold L2: what other CTAs would
// have left there is not seen, so its L2 hit rate is a lower bound and its DRAM bytes, scaled to
// the grid, an upper bound (Counts.Scaled). Package emulate corrects its DRAM reads from the CTAs'
// own L2 streams (CacheConfig.L2Access; gpumodel's wave.go says how).

// CacheConfig sizes the simulated caches, in bytes: L1Bytes is one CTA's share of its SM's L1,
// L2Bytes the GPU's whole L2. Either may be 0 (no cache at that level: every access misses).
type CacheConfig struct {
	L1Bytes, L2Bytes int
	// L2Access, when set, is called for every sector that reaches the L2, as the L2 model replays
	// them (CTA by CTA; pos is the CTA's position in the launch's order: its index among
	// LaunchConfig.Only's distinct blocks sorted by linear index, or its linear index), with the
	// buffer it lies in (index in LaunchConfig.Buffers; -1: the module's variables), its byte offset
	// there / 32, and whether it is a store (else a load or an atomic). For estimates built on the
	// sampled CTAs' address streams (package gpumodel's wave footprint).
	L2Access func(pos, buffer int, sector int64, store bool)
}

// Cache geometry (Jia et al. 2018): 128-byte lines of four 32-byte sectors; CacheWays lines per
// set, an assumption (see above).
const (
	LineBytes   = 128
	SectorBytes = 32
	CacheWays   = 16
)

// cacheQuantum is the instructions a warp issues before the next warp's turn when the caches are
// simulated: small, so that the warps of a CTA interleave their accesses as on the hardware.
const cacheQuantum = 32

// hintSize is the entries of a cacheLevel's lookup hints, a power of two. A hint only speeds up
// finding a line: it never changes what hits.
const hintSize = 1024

// groupMin and groupMax bound the lines of a load request the L1 remembers as its group (lineGroup).
// A request of 32 lanes' accesses of up to 32 bytes each touches at most 32 lines.
const (
	groupMin = 8
	groupMax = 32
)

// cacheLevel is one set-associative cache of 128-byte lines with per-sector valid and dirty bits.
type cacheLevel struct {
	sets, ways int
	tag        []uint64        // line address + 1; 0 is an empty way
	state      []uint8         // bits 0–3: sectors valid, bits 4–7: sectors dirty
	used       []uint64        // the access count at the way's last use, for LRU
	hint       [hintSize]int32 // a line's way (index into tag) when it was last found: looked at first
	now        uint64
	grp        lineGroup // the L1's last load request of many lines (only an L1 has one)
	member     []bool    // per way: it holds a line of grp (nil in the L2)
}

// lineGroup is the lines of the last load request of groupMin to groupMax lines that the L1 looked
// up one by one, in the request's order, and where they are. A later load request of exactly those
// lines in that order, none of its sectors invalid, is all hits, and its only effect on the cache
// is that each line becomes the most recently used in turn: retouch does that for the whole request
// at once, noting the time of its first line (base) rather than each way's use (pending); settle
// writes the ways' uses before anything else looks at or changes them. It only saves time (the
// naive GEMM's 8 warps read the same 32 lines of A, 32 times each): what hits, what is evicted and
// every count are those of looking each line up in turn (TestCacheGroupIsLineByLine).
type lineGroup struct {
	n       int // lines; 0: no group
	line    [groupMax]uint64
	way     [groupMax]int32
	valid   [groupMax]uint8 // the sectors valid when the group was made (a subset of those valid now)
	base    uint64          // when pending: line i was last used at base + i
	pending bool
}

func newCacheLevel(bytes int) *cacheLevel {
	lines := bytes / LineBytes
	if lines <= 0 {
		return nil
	}
	ways := min(CacheWays, lines)
	sets := lines / ways
	n := sets * ways
	return &cacheLevel{sets: sets, ways: ways, tag: make([]uint64, n), state: make([]uint8, n), used: make([]uint64, n)}
}

// newL1 is newCacheLevel for an L1: one that keeps a lineGroup.
func newL1(bytes int) *cacheLevel {
	k := newCacheLevel(bytes)
	if k != nil {
		k.member = make([]bool, len(k.tag))
	}
	return k
}

func (k *cacheLevel) reset() {
	clear(k.tag)
	clear(k.state)
	clear(k.used)
	clear(k.hint[:])
	clear(k.member)
	k.now = 0
	k.grp.n, k.grp.pending = 0, false
}

// access looks up sector s (a byte address / 32) and returns whether it was valid, and how many
// dirty sectors the line it evicted to make room had (accessLine).
func (k *cacheLevel) access(s uint64, dirty bool) (hit bool, evictedDirty int) {
	h, _, wb := k.accessLine(s>>2, 1<<(s&3), dirty)
	return h != 0, wb
}

// accessLine looks up the sectors mask (bit i: sector i) of line (a byte address / 128): it returns
// those that were valid, the way (index into tag) that now holds the line, and the dirty sectors
// of the line it evicted to make room. The sectors become valid (a read that misses is a fill) and,
// when dirty, dirty.
func (k *cacheLevel) accessLine(line uint64, mask uint8, dirty bool) (hit uint8, way int32, evictedDirty int) {
	set := mask
	if dirty {
		set |= mask << 4
	}
	if j := k.hinted(line); j >= 0 {
		return k.touch(j, mask, set), j, 0
	}
	hp := &k.hint[line&(hintSize-1)]
	h := uint64(uint32((line * 0x9E3779B97F4A7C15) >> 32))
	base := int(h*uint64(k.sets)>>32) * k.ways // the set: Lemire's multiply-shift range reduction
	for i, t := range k.tag[base : base+k.ways] {
		if t == line+1 {
			*hp = int32(base + i)
			return k.touch(*hp, mask, set), *hp, 0
		}
	}
	if k.grp.pending {
		k.settle() // the victim is the least recently used: the group's uses must be written
	}
	k.now++
	used := k.used[base : base+k.ways]
	v := 0
	for i, u := range used {
		if u < used[v] {
			v = i
		}
	}
	j := base + v
	if k.tag[j] != 0 {
		evictedDirty = popcount4(k.state[j] >> 4)
		if k.grp.n > 0 && k.member[j] {
			k.dropGroup()
		}
	}
	k.tag[j], k.state[j], k.used[j] = line+1, set, k.now
	*hp = int32(j)
	return 0, int32(j), evictedDirty
}

// hinted is the way (index into tag) where line's hint says it is, or -1 when the hint is stale.
func (k *cacheLevel) hinted(line uint64) int32 {
	if j := k.hint[line&(hintSize-1)]; k.tag[j] == line+1 {
		return j
	}
	return -1
}

// touch is a hit on way j: it returns the sectors of mask that were valid and sets the bits of set
// (sectors now valid, and dirty) and the way's last use.
func (k *cacheLevel) touch(j int32, mask, set uint8) uint8 {
	if k.grp.pending && k.member[j] {
		k.settle()
	}
	k.now++
	hit := k.state[j] & mask
	k.state[j] |= set
	k.used[j] = k.now
	return hit
}

// retouch is a load of lines (in request order) and their sectors masks when they are the group's
// and none of the sectors is invalid: all hits, each line used in turn (lineGroup). It reports
// whether they were; when not, nothing changed.
func (k *cacheLevel) retouch(lines []uint64, masks []uint8) bool {
	g := &k.grp
	n := g.n
	if n == 0 || len(lines) != n || lines[0] != g.line[0] {
		return false
	}
	gl, gv, masks := g.line[:n], g.valid[:n], masks[:n]
	var diff uint64
	var invalid uint8
	for i, l := range lines { // no branch per line: most requests that start like the group are it
		diff |= l ^ gl[i]
		invalid |= masks[i] &^ gv[i]
	}
	if diff != 0 || invalid != 0 {
		return false
	}
	g.base, g.pending = k.now+1, true
	k.now += uint64(n)
	return true
}

// settle writes the group's pending uses into used.
func (k *cacheLevel) settle() {
	g := &k.grp
	for i, j := range g.way[:g.n] {
		k.used[j] = g.base + uint64(i)
	}
	g.pending = false
}

// dropGroup forgets the group (its uses settled first).
func (k *cacheLevel) dropGroup() {
	if k.grp.pending {
		k.settle()
	}
	for _, j := range k.grp.way[:k.grp.n] {
		k.member[j] = false
	}
	k.grp.n = 0
}

// remember makes the lines of a load request just looked up one by one (in its order, at ways) the
// group, if every one is still where it was found (a later line of the request may have evicted an
// earlier one).
func (k *cacheLevel) remember(lines []uint64, ways []int32) {
	k.dropGroup()
	g := &k.grp
	for i, j := range ways {
		if k.tag[j] != lines[i]+1 {
			return
		}
	}
	g.n = copy(g.line[:], lines)
	copy(g.way[:], ways)
	for i, j := range ways {
		g.valid[i] = k.state[j] & 15
		k.member[j] = true
	}
}

// dirty is the dirty sectors the level holds.
func (k *cacheLevel) dirty() int64 {
	var n int64
	for i, st := range k.state {
		if k.tag[i] != 0 {
			n += int64(popcount4(st >> 4))
		}
	}
	return n
}

func popcount4(x uint8) int { return int(x&1 + x>>1&1 + x>>2&1 + x>>3&1) }

// l1Lines sends the lines of a global load or store request (ascending, distinct) with their
// sectors masks through the CTA's L1 (none: every sector misses), and what reaches the L2 to the
// CTA's stream: a load's missed sectors, a store's every sector (written through). It returns the
// sectors that missed the L1.
func (c *cta) l1Lines(lines []uint64, masks []uint8, store bool) (misses int) {
	l1 := c.l1
	if l1 != nil && !store && l1.retouch(lines, masks) {
		return 0
	}
	var ways [groupMax]int32
	for i, line := range lines {
		mask := masks[i]
		var hit uint8
		if l1 != nil {
			var j int32
			if j = l1.hinted(line); j >= 0 { // accessLine's first test, inlined: most end there
				hit = l1.touch(j, mask, mask)
			} else {
				hit, j, _ = l1.accessLine(line, mask, false)
			}
			if i < groupMax {
				ways[i] = j
			}
		}
		if miss := mask &^ hit; miss != 0 {
			misses += bits.OnesCount8(miss)
			if !store {
				c.toL2(line, miss, toL2Load)
			}
		}
		if store {
			c.toL2(line, mask, toL2Store) // written through
		}
	}
	if l1 != nil && !store && len(lines) >= groupMin && len(lines) <= groupMax {
		l1.remember(lines, ways[:len(lines)])
	}
	return misses
}

// stream entry kinds: the sector address << 2 | kind
const (
	toL2Load uint64 = iota
	toL2Store
	toL2Atomic
)

// toL2 appends the sectors mask of line to the CTA's stream to the L2, one entry per sector.
func (c *cta) toL2(line uint64, mask uint8, kind uint64) {
	for m := mask; m != 0; m &= m - 1 {
		s := line<<2 | uint64(bits.TrailingZeros8(m))
		c.stream = append(c.stream, s<<2|kind)
	}
}

// l2Model is the launch's shared L2: the CTAs' streams, replayed in run order (their position in
// the launch's order of CTAs), whichever worker finishes first. At most maxPending finished CTAs'
// streams wait for an earlier CTA; a worker that would add one more waits too, so that a slow CTA
// does not leave the others' streams piling up.
type l2Model struct {
	mu      sync.Mutex
	drained *sync.Cond // signalled when streams were replayed, or the launch stopped
	l2      *cacheLevel
	pending map[int][]uint64
	observe func(pos, buffer int, sector int64, store bool) // CacheConfig.L2Access
	next    int                                             // the position whose stream is replayed next
	stopped bool                                            // a worker stopped (a fault): no one waits any more
	free    [][]uint64
	// counts, in sectors
	sectors, hits, dramRead, dramWrite int64
}

// maxPending is the most finished CTAs' streams that wait for an earlier CTA's.
const maxPending = 64

func newL2Model(bytes int) *l2Model {
	m := &l2Model{l2: newCacheLevel(bytes), pending: map[int][]uint64{}}
	m.drained = sync.NewCond(&m.mu)
	return m
}

// done takes the stream of the CTA at position pos (in the launch's order) and replays every
// stream whose turn has come; it returns an empty buffer for the worker's next CTA.
func (m *l2Model) done(pos int, stream []uint64) []uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	for pos != m.next && len(m.pending) >= maxPending && !m.stopped {
		m.drained.Wait()
	}
	m.pending[pos] = stream
	replayed := false
	for {
		s, ok := m.pending[m.next]
		if !ok {
			break
		}
		delete(m.pending, m.next)
		if m.observe != nil {
			for _, e := range s {
				a := e >> 2 << 5 // the sector's byte address
				m.observe(m.next, int(a>>windowShift)-2, int64(a&offsetMask)>>5, e&3 == toL2Store)
			}
		}
		m.next++
		m.replay(s)
		m.free = append(m.free, s[:0])
		replayed = true
	}
	if replayed {
		m.drained.Broadcast()
	}
	if k := len(m.free); k > 0 {
		b := m.free[k-1]
		m.free = m.free[:k-1]
		return b
	}
	return nil
}

// abort wakes the workers waiting in done: a CTA stopped, and its stream will never come.
func (m *l2Model) abort() {
	m.mu.Lock()
	m.stopped = true
	m.mu.Unlock()
	m.drained.Broadcast()
}

func (m *l2Model) replay(stream []uint64) {
	for _, e := range stream {
		s, kind := e>>2, e&3
		m.sectors++
		if m.l2 == nil {
			if kind != toL2Store {
				m.dramRead++
			}
			if kind != toL2Load {
				m.dramWrite++
			}
			continue
		}
		hit, wb := m.l2.access(s, kind != toL2Load)
		m.dramWrite += int64(wb)
		switch {
		case kind == toL2Store:
			m.hits++ // a store needs no DRAM read
		case hit:
			m.hits++
		default:
			m.dramRead++
		}
	}
}
