package vgpu

import (
	"fmt"
	"math/bits"
	"slices"
	"sort"
	"sync/atomic"
)

// Initial memory and the initcheck. A GPU does not clear memory: a fresh cudaMalloc'd output and a
// block's shared memory hold whatever was there. The virtual GPU makes that visible rather than
// kind: output buffers (NewOutput) and every block's shared memory start filled with Poison bytes,
// and a read of a byte no thread has written since is an "uninitialised read" note (Counts.Notes):
// the launch goes on and its result is still checked. compute-sanitizer's initcheck tool reports
// "Uninitialized __global__ memory read" for device memory not written by a kernel, cudaMemcpy or
// cudaMemset (Compute Sanitizer documentation, "Initcheck Tool"); this check covers global output
// buffers the same way and shared memory as well, which initcheck does not.

// Poison is the byte an output buffer (NewOutput with Poisoned) and a block's shared memory are
// filled with before a thread writes them. Four of them, 0xFFFFFFFF, are a NaN as float32, eight a
// NaN as float64, and -1 as a signed integer of any width: a result no thread computed cannot pass
// for zero. It is the pattern the GPU worker fills C with before a launch (gpu.PoisonWord, one
// cuMemsetD32 of 0xFFFFFFFF), so both paths start from the same bytes.
const Poison = 0xFF

// Init is how an output buffer starts (NewOutput).
type Init uint8

const (
	// Poisoned: every byte is Poison and unwritten; a read before a thread writes it is an
	// "uninitialised read" note. The default, as on a GPU, whose fresh memory is garbage.
	Poisoned Init = iota
	// Zeroed: every byte is 0 and counts as written: an output the problem defines as zeroed
	// before the launch (a histogram's bins, a sum that threads atomicAdd into), as a cudaMemset
	// would leave it.
	Zeroed
)

// NewOutput returns an output buffer of size bytes that starts as init says. Buffers made otherwise
// (NewBuffer, Float32Buffer, …) are inputs: every byte counts as written.
func NewOutput(name string, size int, init Init) *Buffer {
	b := NewBuffer(name, size)
	if init == Poisoned {
		b.Poison()
	}
	return b
}

// Poison fills b with Poison and marks every byte unwritten. The marks then follow the launches
// that use b: a byte a launch writes stays written for the next launch (as initcheck tracks device
// memory across kernels) until b is poisoned again.
func (b *Buffer) Poison() {
	fill(b.Data, Poison)
	b.written = make(writtenBits, (len(b.Data)+31)/32)
}

// WrittenAny reports whether a launch has written any of the n bytes of b at off since b was
// poisoned (its marks: what the initcheck reads); true for a buffer whose bytes all count as
// written (NewBuffer, an input) and false for bytes outside b. A sampled launch's check tells the
// entries its blocks wrote from the poison that is left by it, not by their value: a kernel may
// write a NaN.
func (b *Buffer) WrittenAny(off, n int) bool {
	if off < 0 || n <= 0 || off+n > len(b.Data) {
		return false
	}
	if b.written == nil {
		return true
	}
	for i := off; i < off+n; {
		w := atomic.LoadUint32(&b.written[i>>5])
		k := min(32-i&31, off+n-i) // bytes of this word
		if w>>(i&31)&(uint32(1)<<k-1) != 0 {
			return true
		}
		i += k
	}
	return false
}

// Keep returns a function that puts b's bytes and written marks back as they are now, undoing the
// stores of the launches in between (gpumodel's probe block, emulated beside a run whose stores
// are checked). The function must not run while a launch uses b.
func (b *Buffer) Keep() (restore func()) {
	data, marks := slices.Clone(b.Data), slices.Clone(b.written)
	return func() {
		copy(b.Data, data)
		copy(b.written, marks)
	}
}

// fill sets every byte of b to v.
func fill(b []byte, v byte) {
	if len(b) == 0 {
		return
	}
	b[0] = v
	for i := 1; i < len(b); i *= 2 {
		copy(b[i:], b[:i])
	}
}

// writtenBits marks the bytes of a region written since it was poisoned: bit i%32 of word i/32 is
// byte i. A buffer's is shared by the CTAs running in parallel, so global marks are set and read
// with sync/atomic; a CTA's shared memory has its own, used by one goroutine.
type writtenBits []uint32

// span is the word and the mask of the n bytes at off. Accesses are aligned to their size, at most
// 16 bytes, so they never cross a 32-byte word of marks (wider ones are split by the callers).
func span(off uint64, n int) (uint64, uint32) {
	return off >> 5, uint32((uint64(1)<<n - 1) << (off & 31))
}

// runMask is the word and the mask of the bytes of [lo, hi) in lo's word of marks, and where the
// word's bytes end (hi or the next word's first byte).
func runMask(lo, hi uint64) (i uint64, m uint32, end uint64) {
	i = lo >> 5
	end = min(hi, (i+1)<<5)
	return i, uint32((uint64(1)<<(end-lo) - 1) << (lo & 31)), end
}

// all reports whether the bytes [lo, hi) are all written.
func (s writtenBits) all(lo, hi uint64) bool {
	for lo < hi {
		i, m, end := runMask(lo, hi)
		if s[i]&m != m {
			return false
		}
		lo = end
	}
	return true
}

// mark marks the bytes [lo, hi) written.
func (s writtenBits) mark(lo, hi uint64) {
	for lo < hi {
		i, m, end := runMask(lo, hi)
		s[i] |= m
		lo = end
	}
}

// check reports whether the n ≤ 16 bytes at off are all written, and marks them written if store.
func (s writtenBits) check(off uint64, n int, store bool) bool {
	i, m := span(off, n)
	p := &s[i]
	if store {
		*p |= m
		return true
	}
	return *p&m == m
}

// checkAtomic is check for a buffer the CTAs share.
func (s writtenBits) checkAtomic(off uint64, n int, store bool) bool {
	i, m := span(off, n)
	p := &s[i]
	have := atomic.LoadUint32(p)
	if have&m == m {
		return true
	}
	if store {
		atomic.OrUint32(p, m)
	}
	return store
}

// accessBytes checks and marks an access of n bytes at off piece by piece (16 bytes at most each):
// a load or atomic is reported unless every byte was written; a store or atomic marks them.
func accessBytes(n int, off uint64, mode int, shared bool, s writtenBits) bool {
	ok := true
	for done := 0; done < n; done += 16 {
		k, o := min(16, n-done), off+uint64(done)
		var had bool
		if shared {
			had = s.check(o, k, false)
			if mode != accLoad {
				s.check(o, k, true)
			}
		} else {
			had = s.checkAtomic(o, k, false)
			if mode != accLoad && !had {
				s.checkAtomic(o, k, true)
			}
		}
		ok = ok && (had || mode == accStore)
	}
	return ok
}

// initGlobal checks the global lanes m of a warp access of n bytes each against the written marks
// of the poisoned buffers they touch (w.addr holds each lane's global address).
func (c *cta) initGlobal(w *warp, in *inst, m uint32, n int, mode int) {
	marks := c.L.written
	for t := m; t != 0; t &= t - 1 {
		l := bits.TrailingZeros32(t)
		a := w.addr[l]
		win := a>>windowShift - 1
		if win >= uint64(len(marks)) || marks[win] == nil {
			continue
		}
		if !accessBytes(n, a&offsetMask, mode, false, marks[win]) {
			c.noteUninit(w, l, in, "global", int(win), a&offsetMask, n)
		}
	}
}

// initShared checks the shared lanes m (w.addr: each lane's offset in shared memory) against the
// block's written marks.
func (c *cta) initShared(w *warp, in *inst, m uint32, n int, mode int) {
	s := c.swritten
	for t := m; t != 0; t &= t - 1 {
		l := bits.TrailingZeros32(t)
		a := w.addr[l]
		if n > 16 {
			if !accessBytes(n, a, mode, true, s) {
				c.noteUninit(w, l, in, "shared", -1, a, n)
			}
			continue
		}
		i, msk := span(a, n)
		if mode != accStore && s[i]&msk != msk {
			c.noteUninit(w, l, in, "shared", -1, a, n)
		}
		if mode != accLoad {
			s[i] |= msk
		}
	}
}

// initSharedRun is initShared for a request of memOp whose lanes' bytes sharedLanes found to be
// one run (c.pattern: one address, or each lane's bytes right after the lane before's): a store
// marks the run, a load whose bytes are all written needs no note. It reports whether it did
// initShared's work; a load of a byte not written is left to initShared, which notes each lane.
func (c *cta) initSharedRun(w *warp, m uint32, n int, mode int) bool {
	if c.pattern != patUniform && c.pattern != patConsecutive {
		return false
	}
	lo := w.addr[bits.TrailingZeros32(m)]
	hi := w.addr[31-bits.LeadingZeros32(m)] + uint64(n)
	switch mode {
	case accStore:
		c.swritten.mark(lo, hi)
		return true
	case accLoad:
		return c.swritten.all(lo, hi)
	}
	return false
}

// sharedWritten advances c.sFull past the words of shared memory now all written. Marks only
// grow within a block, so once every word is full no shared access can be an uninitialised read
// nor mark anything, and memOp skips initShared. It runs at barriers: O(words) per block in all.
func (c *cta) sharedWritten() {
	s := c.swritten
	for c.sFull < len(s) && s[c.sFull] == ^uint32(0) {
		c.sFull++
	}
}

// initOne checks one lane's access resolved to space sp at off (wmma's elements).
func (c *cta) initOne(w *warp, in *inst, l int, sp uint8, addr, off uint64, n int, mode int) {
	switch sp {
	case spShared:
		if !accessBytes(n, off, mode, true, c.swritten) {
			c.noteUninit(w, l, in, "shared", -1, off, n)
		}
	case spGlobal:
		win := addr>>windowShift - 1
		if win < uint64(len(c.L.written)) && c.L.written[win] != nil && !accessBytes(n, off, mode, false, c.L.written[win]) {
			c.noteUninit(w, l, in, "global", int(win), off, n)
		}
	}
}

// noteUninit records an uninitialised read by lane l of w at instruction in, at off in buffer
// L.bufs[buf] (-1: shared memory): the first of this worker's CTAs (they run in increasing order)
// keeps its thread, the others are counted.
func (c *cta) noteUninit(w *warp, l int, in *inst, space string, buf int, off uint64, n int) {
	if c.uninit == nil {
		c.uninit = map[int32]*uninitNote{}
	}
	u := c.uninit[in.self]
	if u == nil {
		where := "shared memory at offset " + fmt.Sprintf("%#x", off)
		if buf >= 0 && c.L.names[buf] != "" {
			where = fmt.Sprintf("buffer %s at %s", c.L.names[buf], c.L.element(buf, off))
		}
		f := &Fault{Kind: "uninitialised read", Space: space, Address: off,
			Msg: fmt.Sprintf("%d-byte read of %s, which no thread has written (it holds the poison 0x%02X…)", n, where, Poison)}
		c.locate(f, w, l, in)
		u = &uninitNote{f: f, block: c.linear}
		c.uninit[in.self] = u
	}
	u.reads++
}

// uninitNote is a worker's first uninitialised read at one instruction and how many it saw.
type uninitNote struct {
	f     *Fault
	block int // the CTA's linear index
	reads int64
}

// MaxNotes is the most notes a launch reports: the first uninitialised read of each source line
// (or PTX line, without .loc), in line order.
const MaxNotes = 8

// notes merges the workers' uninitialised reads: per instruction, the one of the lowest CTA (so the
// notes do not depend on scheduling); per source line the first instruction's; at most MaxNotes.
func (L *launch) notes(ctas []*cta) []*Fault {
	type line struct {
		key   string
		f     *Fault
		block int
		reads int64
	}
	byLine := map[string]*line{}
	for _, c := range ctas {
		for _, u := range c.uninit {
			key := u.f.Source
			if key == "" {
				key = fmt.Sprintf("PTX %d", u.f.Line)
			}
			x := byLine[key]
			if x == nil {
				x = &line{key: key, f: u.f, block: u.block}
				byLine[key] = x
			} else if u.block < x.block || u.block == x.block && u.f.Line < x.f.Line {
				x.f, x.block = u.f, u.block
			}
			x.reads += u.reads
		}
	}
	lines := make([]*line, 0, len(byLine))
	for _, x := range byLine {
		lines = append(lines, x)
	}
	sort.Slice(lines, func(i, j int) bool { return lines[i].f.Line < lines[j].f.Line })
	var out []*Fault
	for _, x := range lines[:min(len(lines), MaxNotes)] {
		f := *x.f
		if x.reads > 1 {
			f.Msg += fmt.Sprintf(", the first of %d such reads at this line", x.reads)
		}
		out = append(out, &f)
	}
	return out
}
