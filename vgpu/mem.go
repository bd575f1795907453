package vgpu

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"strings"
)

// Memory. Every state space is a byte slice; generic addresses (PTX ISA 8.x, section 6.4.1
// "Generic Addressing") are split into windows so that cvta and generic ld/st can tell the spaces
// apart:
//
//	[sharedWindow, +4 GiB)   .shared (the CTA's shared memory at offset a − sharedWindow)
//	[localWindow,  +4 GiB)   .local (the thread's own stack frame)
//	[paramWindow,  +4 GiB)   .param of the kernel (read-only)
//	k·2⁴⁰ + offset, k ≥ 1   .global: k = 1 the module's .global/.const variables, k = 2, 3, … the
//	                         launch's buffers in order
//
// Address 0 (a null pointer) is in no window, so dereferencing it is an out-of-bounds fault.
const (
	sharedWindow = 1 << 32
	localWindow  = 2 << 32
	paramWindow  = 3 << 32
	windowShift  = 40
	moduleWindow = 1 << windowShift
	offsetMask   = 1<<windowShift - 1
)

// Memory limits per launch.
const (
	// MaxSharedBytes is the most shared memory (static plus dynamic) a CTA may use: 227 KiB, the
	// largest an NVIDIA GPU (sm_90) grants one block.
	MaxSharedBytes = 227 << 10
	// MaxLocalBytes is the most .local memory (the per-thread stack frame) a function may declare.
	MaxLocalBytes = 64 << 10
	// MaxRegisterFileBytes bounds one CTA's register file (registers × threads × 8 bytes).
	MaxRegisterFileBytes = 64 << 20
)

func moduleVarOffset(m *Module, name string) (int, bool) {
	off := 0
	for _, v := range m.Vars {
		if v.Space != "global" && v.Space != "const" {
			continue
		}
		a := max(v.Align, 1)
		off = (off + a - 1) / a * a
		if v.Name == name {
			return off, true
		}
		off += v.Size
	}
	return 0, false
}

func moduleData(m *Module) []byte {
	var out []byte
	for _, v := range m.Vars {
		if v.Space != "global" && v.Space != "const" {
			continue
		}
		off, _ := moduleVarOffset(m, v.Name)
		for len(out) < off+v.Size {
			out = append(out, 0)
		}
		copy(out[off:], v.Init)
	}
	return out
}

// instCount is what one instruction did in a launch.
type instCount struct {
	warp, thread   uint64
	gReq, gSectors uint64
	gBytes         uint64
	sReq, sWave    uint64
	sIdeal         uint64 // the wavefronts the shared requests need without bank conflicts
	gPass, sPass   uint64 // atomic passes (same-address serialisation), global and shared
	predOff        uint64 // lanes active in the warp whose guard predicate was false
	divergent      uint64 // executions of a branch whose active lanes went different ways
}

// access modes
const (
	accLoad = iota
	accStore
	accAtomic
)

// memLane is one lane's resolved access.
type memLane struct {
	mem []byte // the bytes accessed
	sp  uint8
}

// resolve finds the bytes lane l of w accesses at addr (n bytes) in space sp, or faults.
func (c *cta) resolve(w *warp, in *inst, l int, addr uint64, n int, sp uint8, mode int) ([]byte, uint8, uint64) {
	if sp == spGeneric {
		switch {
		case addr >= sharedWindow && addr < sharedWindow+1<<32:
			sp, addr = spShared, addr-sharedWindow
		case addr >= localWindow && addr < localWindow+1<<32:
			sp, addr = spLocal, addr-localWindow
		case addr >= paramWindow && addr < paramWindow+1<<32:
			sp, addr = spParam, addr-paramWindow
		default:
			sp = spGlobal
		}
	}
	if addr%uint64(n) != 0 {
		at := fmt.Sprintf("at %#x", addr)
		if b := addr>>windowShift - 1; sp == spGlobal && b >= 1 && b < uint64(len(c.L.names)) && c.L.names[b] != "" {
			at = fmt.Sprintf("at byte %d of buffer %q", addr&offsetMask, c.L.names[b])
		}
		c.fault(&Fault{Kind: "misaligned", Space: spaceNames[sp], Address: addr,
			Msg: fmt.Sprintf("misaligned %d-byte %s %s %s: the address of a %d-byte access must be a multiple of %d", n, spaceNames[sp], accessName(mode), at, n, n)}, w, l, in)
	}
	var mem []byte
	win := uint64(0) // a global window: 1 the module's globals, 2… LaunchConfig.Buffers
	switch sp {
	case spGlobal, spConst:
		win = addr >> windowShift
		if win >= 1 && win-1 < uint64(len(c.L.bufs)) {
			mem = c.L.bufs[win-1]
			addr &= offsetMask
		}
		if mode != accLoad && win == 1 && sp == spConst {
			mem = nil
		}
	case spShared, spDsmem: // a mapped shared::cluster address is another CTA's (cluster.go)
		mem, sp = c.shared, spShared
		if addr >= 1<<dsmemShift {
			mem, addr = c.remoteShared(w, in, l, addr)
			sp = spDsmem
		}
	case spLocal:
		ls := uint64(c.prog.localSize)
		if addr+uint64(n) <= ls {
			base := uint64(l) * ls
			return w.local[base+addr : base+addr+uint64(n)], sp, addr
		}
	case spParam:
		if mode == accLoad {
			mem = c.L.params
		}
	}
	if mem == nil || addr+uint64(n) > uint64(len(mem)) || addr+uint64(n) < addr {
		what := fmt.Sprintf("at %#x, outside every buffer", addr)
		if addr < 1<<12 && sp == spGlobal {
			what += " (a null pointer, or an offset from one)"
		}
		switch {
		case sp == spGlobal && win >= 1 && win < uint64(len(c.L.bufs)) && addr >= 1<<(windowShift-1) && c.L.names[win] != "":
			what = c.L.before(int(win), addr) // a negative index into the next buffer
		case mem != nil && win >= 1 && win-1 < uint64(len(c.L.names)) && c.L.names[win-1] != "":
			what = c.L.beyond(int(win-1), addr)
		case mem != nil:
			what = fmt.Sprintf("at %#x, past the end of the %d-byte %s region", addr, len(mem), spaceNames[sp])
		}
		c.fault(&Fault{Kind: "out of bounds", Space: spaceNames[sp], Address: addr,
			Msg: fmt.Sprintf("%d-byte %s %s %s", n, spaceNames[sp], accessName(mode), what)}, w, l, in)
	}
	return mem[addr : addr+uint64(n)], sp, addr
}

// beyond describes an access at byte off of buffer i (L.bufs[i]) past its end: the buffer by its
// name (the kernel's parameter), its shape, and the element, with its row and column in a matrix.
func (L *launch) beyond(i int, off uint64) string {
	name, sh, size := L.names[i], L.shapes[i], len(L.bufs[i])
	if sh.Elem <= 0 {
		return fmt.Sprintf("past the end of buffer %q (%d bytes): byte %d", name, size, off)
	}
	count := size / sh.Elem
	s := fmt.Sprintf("past the end of buffer %q (%s): %s", name, sh.describe(count), L.element(i, off))
	if sh.Cols > 0 && sh.Rows > 0 {
		s += fmt.Sprintf(" (rows 0–%d)", sh.Rows-1)
	} else {
		s += fmt.Sprintf(" (elements 0–%d)", count-1)
	}
	return s + fmt.Sprintf(", byte %d of %d", off, size)
}

// element names byte off of buffer i by its Shape: "element 4100 = row 64, col 4", "element 17",
// or without a shape "byte 16400".
func (L *launch) element(i int, off uint64) string {
	sh := L.shapes[i]
	if sh.Elem <= 0 {
		return fmt.Sprintf("byte %d", off)
	}
	e := off / uint64(sh.Elem)
	if sh.Cols > 0 && sh.Rows > 0 {
		return fmt.Sprintf("element %d = row %d, col %d", e, e/uint64(sh.Cols), e%uint64(sh.Cols))
	}
	return fmt.Sprintf("element %d", e)
}

// before describes an access at offset off of the window before buffer i's (a negative index into
// buffer i: the windows are 2⁴⁰ bytes apart).
func (L *launch) before(i int, off uint64) string {
	back := uint64(1)<<windowShift - off
	name, sh := L.names[i], L.shapes[i]
	if sh.Elem <= 0 {
		return fmt.Sprintf("before the start of buffer %q: byte -%d", name, back)
	}
	return fmt.Sprintf("before the start of buffer %q (%s): element -%d, byte -%d", name,
		sh.describe(len(L.bufs[i])/sh.Elem), (back+uint64(sh.Elem)-1)/uint64(sh.Elem), back)
}

// describe is the shape of count elements: "64×64 floats", "4096 floats".
func (sh Shape) describe(count int) string {
	t := sh.Type
	if t == "" {
		t = fmt.Sprintf("%d-byte element", sh.Elem)
	}
	if sh.Rows > 0 && sh.Cols > 0 {
		return fmt.Sprintf("%d×%d %ss", sh.Rows, sh.Cols, t)
	}
	return fmt.Sprintf("%d %ss", count, t)
}

func accessName(mode int) string {
	switch mode {
	case accStore:
		return "store"
	case accAtomic:
		return "atomic"
	}
	return "load"
}

func readN(b []byte, n int) uint64 {
	switch n {
	case 1:
		return uint64(b[0])
	case 2:
		return uint64(binary.LittleEndian.Uint16(b))
	case 4:
		return uint64(binary.LittleEndian.Uint32(b))
	}
	return binary.LittleEndian.Uint64(b)
}

func writeN(b []byte, n int, v uint64) {
	switch n {
	case 1:
		b[0] = byte(v)
	case 2:
		binary.LittleEndian.PutUint16(b, uint16(v))
	case 4:
		binary.LittleEndian.PutUint32(b, uint32(v))
	default:
		binary.LittleEndian.PutUint64(b, v)
	}
}

// memOp resolves every active lane's address, counts the warp's requests, checks hazards, and
// returns the lanes' byte slices in c.lanes.
func (c *cta) memOp(w *warp, in *inst, m uint32, mode int) {
	n := int(in.size) * int(in.nvec)
	var base *[warpSize]uint64
	if in.a >= 0 {
		base = &w.regs[in.a]
	}
	var gm, sm uint32
	gathered := 0   // the addresses of gm already in c.sortBuf
	sorted := false // and they are in order
	var wins uint64 // the buffers touched (bit i&63 for L.bufs[i]), for the initcheck
	c.direct, c.pattern = nil, patNone
	direct := mode != accAtomic && !in.strong // execLd and execSt read c.direct when it is set
	switch {
	case n&(n-1) != 0: // accesses are 1, 2, 4, 8 or 16 bytes; others are resolved lane by lane
		c.memLanes(w, in, m, mode, base, n, &gm, &sm)
		wins = ^uint64(0)
	case in.space == spGlobal: // the common case
		wins, gathered, sorted = c.globalLanes(w, in, m, mode, base, n, direct)
		gm = m
	case in.space == spShared: // the shared-memory kernels' hot path
		c.sharedLanes(w, in, m, mode, base, n, direct)
		sm = m
	default:
		c.memLanes(w, in, m, mode, base, n, &gm, &sm)
		wins = ^uint64(0)
	}
	if gm != 0 && wins&c.L.poisoned != 0 {
		c.initGlobal(w, in, gm, n, mode)
	}
	if sm != 0 && c.sFull < len(c.swritten) && !c.initSharedRun(w, sm, n, mode) {
		c.initShared(w, in, sm, n, mode)
	}
	if gm != 0 && c.L.gr != nil {
		c.globalRace(w, in, gm, n, mode)
	}
	if gm != 0 && c.clusterSyncs(in, mode) {
		c.clusterSyncLanes(w, in, gm, mode, false) // a synchronisation of the cluster (dsmemrace.go)
	}
	if gm != 0 && c.ts != nil && len(c.ts.dsts) > 0 {
		c.storeDestAccess(w, in, gm, n, mode) // TMA stores in flight (tmastorerace.go)
	}
	ic := &c.wk.counts[in.self]
	if gm != 0 {
		sectors := c.countGlobal(ic, w, gm, n, mode, gathered, sorted)
		if c.tracing {
			c.traceEvent(w, in, gm, n, mode, sectors)
		}
		if mode == accAtomic {
			ic.gPass += c.atomicPasses(w, gm)
			if !c.hot.spread {
				for t := gm; t != 0; t &= t - 1 {
					c.hot.add(w.addr[bits.TrailingZeros32(t)], 1)
				}
			}
		}
	}
	if sm != 0 {
		if c.bulkMarked > 0 || c.storeMarked > 0 {
			c.tmaAccess(w, in, sm, n, mode) // TMA copies and stores in flight (tmarace.go)
		}
		if c.dsmLive || c.clusterSyncs(in, mode) {
			c.dsmLocal(w, in, sm, n, mode) // other CTAs' accesses, the cluster's synchronisations (dsmemrace.go)
		}
		c.countShared(ic, w, sm, n)
		if mode == accAtomic {
			ic.sPass += c.atomicPasses(w, sm)
		} else if c.L.racecheck {
			c.racecheck(w, in, sm, n, mode == accStore)
		}
		if mode != accLoad {
			c.wg.markGeneric(c, w, in, sm, n) // wgmma.go
		}
	}
}

// globalLanes resolves the lanes m of an explicit .global access of n bytes (a power of two) at
// base[l]+in.off, faulting on a misaligned or out-of-bounds one, and gathers their addresses in
// c.sortBuf for countGlobal; it returns the buffers touched (bit i&63 for L.bufs[i]), how many
// addresses it gathered, and whether they are in ascending order. When every lane falls in one
// buffer (the usual case) it checks them all at once, and with direct leaves the lanes' bytes to
// be found in c.direct at w.addr[l]&offsetMask rather than making each lane's slice in c.lanes;
// when every lane has the one address it gathers it once (a request counts distinct addresses).
func (c *cta) globalLanes(w *warp, in *inst, m uint32, mode int, base *[warpSize]uint64, n int, direct bool) (wins uint64, k int, sorted bool) {
	var zero [warpSize]uint64
	if base == nil {
		base = &zero
	}
	bufs, align := c.L.bufs, uint64(n)-1
	first := uint64(in.off) + base[bits.TrailingZeros32(m)]
	if win := first>>windowShift - 1; win < uint64(len(bufs)) && uint64(len(bufs[win])) >= uint64(n) {
		buf := bufs[win]
		limit := uint64(len(buf)) - uint64(n)
		var bad, diff, hi uint64
		prev, desc, gap := uint64(0), false, ^uint64(0)
		for t := m; t != 0; t &= t - 1 {
			l := bits.TrailingZeros32(t)
			addr := uint64(in.off) + base[l]
			diff |= addr ^ first
			hi = max(hi, addr&offsetMask)
			bad |= addr & align
			if addr < prev {
				desc = true
			}
			gap = min(gap, addr-prev) // (wraps when descending: desc is then set)
			prev = addr
			w.addr[l] = addr
			c.sortBuf[k] = addr
			k++
		}
		if bad == 0 && diff>>windowShift == 0 && hi <= limit {
			switch {
			case diff == 0:
				k, desc, c.pattern = 1, false, patUniform
			case !desc && gap >= LineBytes:
				c.pattern = patApart
			case !desc && gap == uint64(n) && prev-c.sortBuf[0] == uint64(k-1)*uint64(n):
				c.pattern = patConsecutive // (k-1 gaps of at least n summing to (k-1)·n)
			}
			if direct {
				c.direct = buf
			} else {
				for t := m; t != 0; t &= t - 1 {
					l := bits.TrailingZeros32(t)
					off := w.addr[l] & offsetMask
					c.lanes[l].mem = buf[off : off+uint64(n) : off+uint64(n)]
				}
			}
			return 1 << (win & 63), k, !desc
		}
	}
	k = 0
	for t := m; t != 0; t &= t - 1 { // lane by lane: the first lane at fault faults
		l := bits.TrailingZeros32(t)
		addr := uint64(in.off) + base[l]
		win, off := addr>>windowShift-1, addr&offsetMask
		if win >= uint64(len(bufs)) || addr&align != 0 || off+uint64(n) > uint64(len(bufs[win])) {
			c.resolve(w, in, l, addr, n, in.space, mode) // faults
		}
		c.lanes[l].mem = bufs[win][off : off+uint64(n) : off+uint64(n)]
		w.addr[l] = addr
		c.sortBuf[k] = addr
		k++
		wins |= 1 << (win & 63)
	}
	return wins, k, false
}

// sharedLanes resolves the lanes m of an explicit .shared access as globalLanes does a .global
// one (w.addr: the lanes' offsets in shared memory); with direct, the lanes' bytes are left to be
// found in c.direct (shared memory) at w.addr[l] once every lane is checked.
func (c *cta) sharedLanes(w *warp, in *inst, m uint32, mode int, base *[warpSize]uint64, n int, direct bool) {
	shared, align := c.shared, uint64(n)-1
	var zero [warpSize]uint64
	if base == nil {
		base = &zero
	}
	if direct && uint64(len(shared)) >= uint64(n) {
		limit := uint64(len(shared)) - uint64(n)
		var bad, hi, diff uint64
		first := uint64(in.off) + base[bits.TrailingZeros32(m)]
		next, gap := first, false // gap: a lane's address is not the lane before's + n
		for t := m; t != 0; t &= t - 1 {
			l := bits.TrailingZeros32(t)
			addr := uint64(in.off) + base[l]
			bad |= addr & align
			hi = max(hi, addr)
			diff |= addr ^ first
			if addr != next {
				gap = true
			}
			next = addr + uint64(n)
			w.addr[l] = addr
		}
		if bad == 0 && hi <= limit {
			c.direct = shared
			switch {
			case diff == 0:
				c.pattern = patUniform
			case !gap && n >= 4: // (narrower lanes share words)
				c.pattern = patConsecutive
			}
			return
		}
	}
	for t := m; t != 0; t &= t - 1 {
		l := bits.TrailingZeros32(t)
		addr := uint64(in.off) + base[l]
		if addr&align != 0 || addr >= uint64(len(shared)) || uint64(len(shared))-addr < uint64(n) {
			c.resolve(w, in, l, addr, n, in.space, mode) // faults
		}
		// field by field: a struct literal is built on the stack and copied, a store-forwarding stall
		ln := &c.lanes[l]
		ln.mem, ln.sp = shared[addr:addr+uint64(n):addr+uint64(n)], spShared
		w.addr[l] = addr
	}
}

// The address patterns of a shared request that sharedLanes recognises (c.pattern), for which
// countShared needs no gathering: all lanes at one address, or each lane's n bytes right after the
// lane before's (in lane order); and of a global one that globalLanes recognises: all lanes at one
// address, consecutive lanes' bytes, or ascending addresses at least a line apart, each in a line
// of its own (countGlobal).
const (
	patNone uint8 = iota
	patUniform
	patConsecutive
	patApart
)

// laneBytes is lane l's n bytes accessed by the last memOp: in c.direct when it is set, else in
// c.lanes.
func (c *cta) laneBytes(w *warp, l, n int) []byte {
	if c.direct != nil {
		off := w.addr[l] & offsetMask
		return c.direct[off : off+uint64(n)]
	}
	return c.lanes[l].mem
}

// atomicPasses is how many passes an atomic request of the lanes m needs: lanes updating the same
// address serialise (each update reads the previous one's result), lanes at distinct addresses go
// in one pass, so it is the most lanes sharing one address (1 to 32).
func (c *cta) atomicPasses(w *warp, m uint32) uint64 {
	k := 0
	s := &c.sortBuf
	for t := m; t != 0; t &= t - 1 {
		s[k] = w.addr[bits.TrailingZeros32(t)]
		k++
	}
	sortSmall(s[:k])
	most, run := 1, 1
	for i := 1; i < k; i++ {
		if s[i] == s[i-1] {
			run++
			most = max(most, run)
		} else {
			run = 1
		}
	}
	return uint64(most)
}

func (c *cta) memLanes(w *warp, in *inst, m uint32, mode int, base *[warpSize]uint64, n int, gm, sm *uint32) {
	for t := m; t != 0; t &= t - 1 {
		l := bits.TrailingZeros32(t)
		addr := uint64(in.off)
		if base != nil {
			addr += base[l]
		}
		mem, sp, off := c.resolve(w, in, l, addr, n, in.space, mode)
		ln := &c.lanes[l]
		ln.mem, ln.sp = mem, sp
		switch sp {
		case spGlobal:
			*gm |= 1 << l
			w.addr[l] = addr
		case spShared:
			*sm |= 1 << l
			w.addr[l] = off
		case spDsmem:
			c.dsmemAccess(w, in, l, addr, off, n, mode) // dsmemrace.go
		}
	}
}

// countGlobal counts a global request of the lanes m (n bytes each): its distinct bytes, 32-byte
// sectors and 128-byte lines, and with the cache model sends each sector through the L1. The
// lanes' addresses are in c.sortBuf when gathered (their number) is not 0, else in w.addr; sorted
// says they are already in ascending order.
func (c *cta) countGlobal(ic *instCount, w *warp, m uint32, n int, mode int, gathered int, sorted bool) uint64 {
	k := gathered
	s := &c.sortBuf
	if k == 0 {
		for t := m; t != 0; t &= t - 1 {
			s[k] = w.addr[bits.TrailingZeros32(t)]
			k++
		}
	}
	if !sorted {
		sortSmall(s[:k])
	}
	if n <= SectorBytes && mode != accAtomic {
		var sectors, lines, distinct uint64
		switch {
		case gathered == 0 || c.L.l2 != nil:
			sectors, lines, distinct = c.sectorRequest(s[:k], mode)
		case c.pattern == patApart: // (globalLanes') k lines of a sector each
			sectors, lines, distinct = uint64(k), uint64(k), uint64(k)
		case c.pattern == patConsecutive: // one run of bytes: every sector and line it spans
			lo, hi := s[0], s[k-1]+uint64(n)-1
			sectors, lines, distinct = hi>>5-lo>>5+1, hi>>7-lo>>7+1, uint64(k)
		default:
			sectors, lines, distinct = c.sectorRequest(s[:k], mode)
		}
		c.lines += int64(lines)
		ic.gReq++
		ic.gSectors += sectors
		ic.gBytes += distinct * uint64(n)
		return sectors
	}
	var distinct, sectors, lines uint64
	prev, lastSector := ^uint64(0), ^uint64(0)
	for _, a := range s[:k] {
		if a == prev {
			continue
		}
		prev = a
		distinct++
		first, last := a>>5, (a+uint64(n)-1)>>5
		lines += last>>2 - first>>2 + 1
		if lastSector != ^uint64(0) && first <= lastSector {
			first = lastSector + 1
		}
		if lastSector != ^uint64(0) && a>>7 == lastSector>>2 {
			lines-- // its first line is the previous address's last
		}
		if last >= first {
			sectors += last - first + 1
			lastSector = last
		}
	}
	if c.L.l2 != nil {
		c.cacheRequestLines(s[:k], n, mode)
	}
	c.lines += int64(lines)
	ic.gReq++
	ic.gSectors += sectors
	ic.gBytes += distinct * uint64(n)
	return sectors
}

// cacheRequest sends the sectors of a global request (addrs sorted, n bytes each, aligned to n)
// through the L1 (cache.go), a line at a time, and what reaches the L2 to the CTA's stream.
func (c *cta) cacheRequest(addrs []uint64, n int, mode int) {
	if n > SectorBytes || mode == accAtomic {
		c.cacheRequestLines(addrs, n, mode)
		return
	}
	c.sectorRequest(addrs, mode)
}

// sectorRequest counts a load or store request whose addresses (sorted, at least one) each fall
// in one sector (aligned accesses of up to 32 bytes): its sectors, lines and distinct addresses,
// and with the cache model gathers each line's sectors in the same pass and sends the lines
// through the L1 (l1Lines; a store is written through to the L2).
func (c *cta) sectorRequest(addrs []uint64, mode int) (sectors, lines, distinct uint64) {
	cached := c.L.l2 != nil
	prev := ^uint64(0)
	line, mask := addrs[0]>>7, uint8(0)
	for i := 0; i <= len(addrs); i++ {
		var a uint64
		if i < len(addrs) {
			if a = addrs[i]; a == prev {
				continue
			}
			prev = a
			distinct++
			if a>>7 == line {
				mask |= 1 << (a >> 5 & 3)
				continue
			}
		}
		if cached {
			c.lineBuf[lines&255], c.maskBuf[lines&255] = line, mask // at most 32 lines
		}
		lines++
		sectors += uint64(bits.OnesCount8(mask))
		line, mask = a>>7, 1<<(a>>5&3)
	}
	if cached {
		misses := c.l1Lines(c.lineBuf[:lines], c.maskBuf[:lines], mode == accStore)
		c.l1Sectors += int64(sectors)
		if c.l1 != nil {
			c.l1Hits += int64(sectors) - int64(misses)
		}
	}
	return sectors, lines, distinct
}

// cacheRequestLines is cacheRequest for atomics and accesses wider than a sector: the request's
// lines and their sectors gathered first, then sent through the L1 (atomics: to the L2).
func (c *cta) cacheRequestLines(addrs []uint64, n int, mode int) {
	lines, masks := &c.lineBuf, &c.maskBuf
	k := -1
	var sectors int
	for _, a := range addrs {
		for s := a >> 5; s <= (a+uint64(n)-1)>>5; s++ {
			if k < 0 || s>>2 != lines[k] {
				k++
				lines[k], masks[k] = s>>2, 0
			}
			masks[k] |= 1 << (s & 3)
		}
	}
	if mode == accAtomic { // atomics bypass the L1
		for i := 0; i <= k; i++ {
			c.toL2(lines[i], masks[i], toL2Atomic)
		}
		return
	}
	for _, m := range masks[:k+1] {
		sectors += bits.OnesCount8(m)
	}
	misses := c.l1Lines(lines[:k+1], masks[:k+1], mode == accStore)
	c.l1Sectors += int64(sectors)
	if c.l1 != nil {
		c.l1Hits += int64(sectors - misses)
	}
}

// countShared counts the wavefronts of a shared-memory request and its ideal: 32 banks of 4-byte
// words; lanes reading the same word share it (a broadcast), distinct words in one bank serialise.
// Accesses of up to 8 bytes are served for the whole warp at once, 16-byte ones per half-warp, each
// such unit as bankPass counts it. The wavefronts beyond the ideal are bank conflicts (Nsight
// Compute's l1tex__data_bank_conflicts_pipe_lsu_mem_shared). This rule reproduces what Nsight
// Compute 2025.3 counted on an H100 for scalar, 64- and 128-bit loads, contiguous, strided, broadcast
// and mixed, and 128-bit stores (bench/gpucheck/shared.cu, docs/vgpu-metrics.md): a conflict-free
// ld.shared.v4 is 4 wavefronts and 0 conflicts, a warp reading one float4 2 and 0.
func (c *cta) countShared(ic *instCount, w *warp, m uint32, n int) {
	words := max(n/4, 1)
	units, per := 1, warpSize
	if words == 4 {
		units, per = 2, warpSize/2
	}
	var wave, ideal uint64
	for u := 0; u < units; u++ {
		um := m
		if units > 1 {
			um = m & (uint32(1<<per-1) << (u * per))
		}
		if um == 0 {
			continue
		}
		switch c.pattern { // what bankPass would find, without gathering the words
		case patUniform: // one address: its words are in distinct banks, one wavefront
			wave++
			ideal++
			continue
		case patConsecutive: // consecutive words fill every bank in turn
			x := uint64(bits.OnesCount32(um)*words+31) / 32
			wave += x
			ideal += x
			continue
		}
		if words > 1 {
			if wv, id, ok := c.bankPassChunks(w, um, words); ok {
				wave += wv
				ideal += id
				continue
			}
		}
		k := 0
		s := &c.sortBuf
		for t := um; t != 0; t &= t - 1 {
			a := w.addr[bits.TrailingZeros32(t)] >> 2
			for j := 0; j < words; j++ {
				s[k] = a + uint64(j)
				k++
			}
		}
		wv, id := c.bankPassSeen(s[:k])
		wave += wv
		ideal += id
	}
	ic.sReq++
	ic.sWave += wave
	ic.sIdeal += ideal
}

// bankPass counts one pass of the banks over the 4-byte word indices s (sorted in place): its
// wavefronts are the most distinct words in one of the 32 banks, its ideal the distinct words / 32
// rounded up (a wavefront moves at most 32 banks × 4 bytes).
func bankPass(s []uint64) (wave, ideal uint64) {
	// the common patterns need no sort: one word (a broadcast), or k consecutive words, which
	// fill every bank k/32 times, rounded up
	if k := len(s); k > 0 {
		i := 1
		for i < k && s[i] == s[0] {
			i++
		}
		if i == k {
			return 1, 1
		}
		if i == 1 {
			for i < k && s[i] == s[0]+uint64(i) {
				i++
			}
			if i == k {
				return uint64(k+31) / 32, uint64(k+31) / 32
			}
		}
	}
	sortSmall(s)
	var banks [32]uint16
	most := uint16(0)
	prev := ^uint64(0)
	distinct := uint64(0)
	for _, x := range s {
		if x == prev {
			continue
		}
		prev = x
		distinct++
		b := &banks[x&31]
		*b++
		most = max(most, *b)
	}
	return uint64(most), (distinct + 31) / 32
}

// bankPassSeen is bankPass for the words of a request in this CTA's shared memory, without
// sorting: c.seen[x] == c.pass marks word x as met in this pass. Words outside shared memory
// (none, for an access checked in bounds) go to bankPass.
func (c *cta) bankPassSeen(s []uint64) (wave, ideal uint64) {
	c.pass++
	if c.pass == 0 { // the stamps wrapped: forget them all
		clear(c.seen)
		c.pass = 1
	}
	seen, pass := c.seen, c.pass
	var banks [32]uint16
	most, distinct := uint16(0), uint64(0)
	for _, x := range s {
		if x >= uint64(len(seen)) {
			return bankPass(s)
		}
		if seen[x] == pass {
			continue
		}
		seen[x] = pass
		distinct++
		b := &banks[x&31]
		*b++
		most = max(most, *b)
	}
	return uint64(most), (distinct + 31) / 32
}

// bankPassChunks is bankPassSeen for the lanes um of a request of words (2 or 4) words per lane,
// each lane's words aligned to their size (w.addr): a lane's chunk of words falls in one group of
// words consecutive banks, and two lanes' chunks are the same words or none in common, so a pass
// counts distinct chunks per group rather than words per bank. It reports false, counting
// nothing, for a chunk misaligned or outside shared memory (bankPassSeen's cases).
func (c *cta) bankPassChunks(w *warp, um uint32, words int) (wave, ideal uint64, ok bool) {
	seen := c.seen
	for t := um; t != 0; t &= t - 1 {
		if a := w.addr[bits.TrailingZeros32(t)] >> 2; a%uint64(words) != 0 || a+uint64(words) > uint64(len(seen)) {
			return 0, 0, false
		}
	}
	c.pass++
	if c.pass == 0 { // the stamps wrapped: forget them all
		clear(seen)
		c.pass = 1
	}
	pass, groups := c.pass, uint64(warpSize/words)
	var count [warpSize / 2]uint16
	most, distinct := uint16(0), uint64(0)
	for t := um; t != 0; t &= t - 1 {
		a := w.addr[bits.TrailingZeros32(t)] >> 2
		if seen[a] == pass {
			continue
		}
		seen[a] = pass
		distinct++
		g := &count[a/uint64(words)%groups]
		*g++
		most = max(most, *g)
	}
	return uint64(most), (distinct*uint64(words) + 31) / 32, true
}

// sortSmall is an insertion sort: linear on the already-ordered addresses of most warps.
func sortSmall(s []uint64) {
	for i := 1; i < len(s); i++ {
		x := s[i]
		j := i
		for j > 0 && s[j-1] > x {
			s[j] = s[j-1]
			j--
		}
		s[j] = x
	}
}

func execLd(w *warp, in *inst, m uint32) {
	c := w.c
	c.memOp(w, in, m, accLoad)
	n := int(in.size)
	if mem := c.direct; mem != nil {
		execLdDirect(w, in, m, mem)
		return
	}
	if n == 4 && in.nvec == 1 && !in.signed {
		d := &w.regs[in.vec[0]]
		for t := m; t != 0; t &= t - 1 {
			l := bits.TrailingZeros32(t)
			d[l] = uint64(binary.LittleEndian.Uint32(c.lanes[l].mem))
		}
		return
	}
	for t := m; t != 0; t &= t - 1 {
		l := bits.TrailingZeros32(t)
		mem := c.lanes[l].mem
		for i := 0; i < int(in.nvec); i++ {
			v := readN(mem[i*n:], n)
			if in.signed && n < 8 {
				v = uint64(sext(v, uint(n)*8))
			}
			w.regs[in.vec[i]][l] = v
		}
	}
}

// execLdDirect is execLd's load of lanes m from mem (c.direct) at w.addr[l]&offsetMask.
func execLdDirect(w *warp, in *inst, m uint32, mem []byte) {
	n := uint64(in.size)
	if n == 4 && in.nvec == 1 && !in.signed {
		d := &w.regs[in.vec[0]]
		if w.c.pattern == patUniform { // a broadcast: one read
			off := w.addr[bits.TrailingZeros32(m)] & offsetMask
			v := uint64(binary.LittleEndian.Uint32(mem[off : off+4]))
			for t := m; t != 0; t &= t - 1 {
				d[bits.TrailingZeros32(t)] = v
			}
			return
		}
		if w.c.pattern == patConsecutive && m == fullMask { // the warp's 128 bytes in lane order
			off := w.addr[0] & offsetMask
			src := mem[off : off+4*warpSize]
			for l := range warpSize {
				d[l] = uint64(binary.LittleEndian.Uint32(src[4*l:]))
			}
			return
		}
		for t := m; t != 0; t &= t - 1 {
			l := bits.TrailingZeros32(t)
			off := w.addr[l] & offsetMask
			d[l] = uint64(binary.LittleEndian.Uint32(mem[off : off+4]))
		}
		return
	}
	if n == 4 && !in.signed && in.nvec <= 4 { // ld.v2/v4 of 32-bit elements: the vector kernels' loads
		execLdDirectVec4(w, in, m, mem)
		return
	}
	for t := m; t != 0; t &= t - 1 {
		l := bits.TrailingZeros32(t)
		off := w.addr[l] & offsetMask
		for i := uint64(0); i < uint64(in.nvec); i++ {
			v := readN(mem[off+i*n:], int(n))
			if in.signed && n < 8 {
				v = uint64(sext(v, uint(n)*8))
			}
			w.regs[in.vec[i]][l] = v
		}
	}
}

// execLdDirectVec4 is execLdDirect's load of in.nvec (2 or 4) unsigned 32-bit elements per lane.
func execLdDirectVec4(w *warp, in *inst, m uint32, mem []byte) {
	var rows [4]*[warpSize]uint64
	k := int(in.nvec)
	for i := range k {
		rows[i] = &w.regs[in.vec[i]]
	}
	for t := m; t != 0; t &= t - 1 {
		l := bits.TrailingZeros32(t)
		off := w.addr[l] & offsetMask
		src := mem[off : off+uint64(4*k)]
		for i, r := range rows[:k] {
			r[l] = uint64(binary.LittleEndian.Uint32(src[4*i:]))
		}
	}
}

func execSt(w *warp, in *inst, m uint32) {
	c := w.c
	c.memOp(w, in, m, accStore)
	n := int(in.size)
	if mem := c.direct; mem != nil {
		for t := m; t != 0; t &= t - 1 {
			l := bits.TrailingZeros32(t)
			off := int(w.addr[l] & offsetMask)
			for i := 0; i < int(in.nvec); i++ {
				writeN(mem[off+i*n:], n, w.regs[in.vec[i]][l])
			}
		}
		return
	}
	for t := m; t != 0; t &= t - 1 {
		l := bits.TrailingZeros32(t)
		mem := c.lanes[l].mem
		for i := 0; i < int(in.nvec); i++ {
			writeN(mem[i*n:], n, w.regs[in.vec[i]][l])
		}
	}
}

// traceEvent reports one global-memory warp instruction to LaunchConfig.Trace.
func (c *cta) traceEvent(w *warp, in *inst, m uint32, n, mode int, sectors uint64) {
	L := c.L
	ev := TraceEvent{Block: c.idx, Warp: w.id, Line: int(in.line), Size: n, Sectors: int(sectors),
		Store: mode == accStore, Atomic: mode == accAtomic}
	if f := strings.Fields(L.mod.Line(int(in.line))); len(f) > 0 {
		ev.Opcode = f[0]
		if strings.HasPrefix(f[0], "@") && len(f) > 1 {
			ev.Opcode = f[1]
		}
	}
	for t := m; t != 0; t &= t - 1 {
		l := bits.TrailingZeros32(t)
		a := w.addr[l]
		ev.Lanes = append(ev.Lanes, TraceLane{Lane: l, Buffer: int(a>>windowShift) - 2, Offset: int64(a & offsetMask), Address: a})
	}
	L.traceMu.Lock()
	defer L.traceMu.Unlock()
	if L.traceLeft <= 0 {
		c.tracing = false
		return
	}
	L.traceLeft--
	L.trace(ev)
}
