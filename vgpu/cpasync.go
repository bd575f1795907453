package vgpu

import (
	"fmt"
	"math/bits"
	"strings"
)

// Asynchronous copies from global to shared memory (PTX ISA 8.x, section 9.7.9.25.3 "cp.async",
// 9.7.9.25.4 "cp.async.commit_group" and 9.7.9.25.5 "cp.async.wait_group / cp.async.wait_all";
// the CUDA C++ Programming Guide's "Asynchronous Data Copies"):
//
//	cp.async.ca.shared.global [dst], [src], 4|8|16{, src-size | , ignore-src};
//	cp.async.cg.shared.global [dst], [src], 16{, src-size | , ignore-src};
//	cp.async.commit_group;  cp.async.wait_group N;  cp.async.wait_all;
//
// A thread's cp.async reads its source when it is issued (src-size bytes of it, the rest of the
// cp-size bytes zero; none with src-size 0 or a true ignore-src), but the ISA says only that the
// copy is complete once a cp.async.wait_group that covers its group returns: until then the
// shared destination may hold anything. The virtual GPU writes it at that point and no earlier, so
// a read of it before the wait sees the old bytes (the poison in a fresh block: an "uninitialised
// read" note) and a read by another thread not ordered after the wait by a barrier is a hazard.
// The write is checked as the issuing thread's store at the time of the wait, named by the
// cp.async's line. Copies a thread never waits for are never written.
//
// Counts: the cp.async is one global load request (its sectors, through the cache model) and one
// shared store request, at the cp.async's line; commit_group and wait_group are "other"
// instructions. Its shared writes are Counts.AsyncCopyWavefronts, not SharedWavefronts, and the lines
// of a cp.async.cg (which bypasses the L1) are Counts.AsyncCopyLines, not GlobalLines: as Nsight
// Compute counts an LDGSTS (smsp__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ldgsts, apart
// from l1tex__data_pipe_lsu_wavefronts_mem_shared), whose data does not pass the L1's LSU data pipe
// (on an H200, the pipe's utilisation for the cp.async rungs was their ldmatrix wavefronts and
// stores alone: bench/vgpuvsncu/testdata/h200-ncu-tensor-4096.csv).

// cpAsyncOp is a decoded cp.async instruction.
type cpAsyncOp struct {
	kind    byte  // 'c' copy, 'g' commit_group, 'w' wait_group, 'a' wait_all
	n       int   // cp-size: 4, 8 or 16 bytes
	src     int32 // the source address register (-1: none) and offset
	srcOff  int64
	ssize   int32 // the src-size register (-1: none)
	ignore  int32 // the ignore-src predicate (-1: none)
	ignNot  bool
	cg      bool // cp.async.cg: cached in the L2 only, bypassing the L1
	waitFor int  // wait_group's N
}

// maxPendingCopies bounds the copies one warp may have issued and not yet waited for.
const maxPendingCopies = 1 << 14

// asyncCopy is one lane's copy awaiting its wait_group.
type asyncCopy struct {
	lane  uint8
	n     uint8
	group uint32 // the lane's commit count when it was issued
	off   uint32 // shared offset of the destination
	pc    int32  // the cp.async instruction
	data  [16]byte
}

// asyncState is a warp's copies in flight and each lane's committed groups.
type asyncState struct {
	commits [warpSize]uint32
	pending []asyncCopy
}

func (d *decoder) decodeCpAsync(in *inst, m mods, s pinst) error {
	if oneOf(m, "bulk") != "" {
		return d.decodeBulk(in, m, s) // tma.go
	}
	if oneOf(m, "mbarrier") != "" {
		return d.decodeCpAsyncMbarrier(in, m, s)
	}
	op := &cpAsyncOp{src: -1, ssize: -1, ignore: -1}
	in.cp = op
	in.class = ClassOther
	if len(m.words) == 0 || m.words[0] != "async" {
		return d.errf("only cp.async is supported")
	}
	switch {
	case oneOf(m, "commit_group") != "":
		op.kind = 'g'
		in.exec = execCpCommit
		return d.nargs(s, 0)
	case oneOf(m, "wait_all") != "":
		op.kind = 'a'
		in.exec = execCpWait
		return d.nargs(s, 0)
	case oneOf(m, "wait_group") != "":
		op.kind = 'w'
		in.exec = execCpWait
		if err := d.nargs(s, 1); err != nil {
			return err
		}
		if s.args[0].kind != oImm || int64(s.args[0].bits) < 0 || s.args[0].bits > 1<<20 {
			return d.errf("wait_group needs a constant group count")
		}
		op.waitFor = int(s.args[0].bits)
		return nil
	}
	return d.decodeCpCopy(in, op, m, s)
}

// decodeCpCopy decodes cp.async.{ca,cg}.shared{::cta}.global{.L2::…} [dst], [src], cp-size{, src-size | ignore-src}{, cache-policy}.
func (d *decoder) decodeCpCopy(in *inst, op *cpAsyncOp, m mods, s pinst) error {
	op.kind = 'c'
	op.cg = strings.Contains(s.op, ".cg.")
	hint := false
	for _, w := range m.words[1:] {
		switch {
		case w == "L2::cache_hint":
			hint = true
		case strings.HasPrefix(w, "L2::") && strings.HasSuffix(w, "B"): // prefetch size
		default:
			return d.errf("unknown modifier .%s (cp.async.ca/.cg.shared.global is supported)", w)
		}
	}
	if len(m.types) != 0 || !strings.Contains(s.op, ".shared") || !strings.Contains(s.op, ".global") ||
		strings.Contains(s.op, "::cluster") || !(strings.Contains(s.op, ".ca.") || strings.Contains(s.op, ".cg.")) {
		return d.errf("only cp.async.ca.shared.global and cp.async.cg.shared.global are supported")
	}
	args := s.args
	if hint {
		if len(args) < 4 {
			return d.errf("L2::cache_hint needs a cache-policy operand")
		}
		args = args[:len(args)-1] // the cache policy: a hint, without effect here
	}
	if len(args) < 3 || len(args) > 4 || args[0].kind != oAddr || args[1].kind != oAddr || args[2].kind != oImm {
		return d.errf("takes [dst], [src], a constant cp-size and an optional src-size or ignore-src predicate")
	}
	op.n = int(args[2].bits)
	if op.n != 4 && op.n != 8 && op.n != 16 || strings.Contains(s.op, ".cg.") && op.n != 16 {
		return d.errf("cp-size must be 4, 8 or 16 bytes (16 with .cg), found %d", int64(args[2].bits))
	}
	if err := d.address(in, args[0], spShared); err != nil {
		return err
	}
	src := inst{}
	if err := d.address(&src, args[1], spGlobal); err != nil {
		return err
	}
	op.src, op.srcOff = src.a, src.off
	if len(args) == 4 {
		if r, ok := d.lookup(args[3].name); ok && r.pred && args[3].kind == oReg {
			op.ignore, op.ignNot = r.idx, args[3].not
		} else {
			r, err := d.src(args[3], parseType("u32"))
			if err != nil {
				return err
			}
			op.ssize = r
		}
	}
	in.space = spShared
	in.size = uint8(min(op.n, 8))
	in.nvec = uint8(op.n / int(in.size))
	in.vec[0], in.vec[1] = d.newReg(), d.newReg() // the data, for the hazard check at the wait
	in.class = ClassLoad
	in.exec = execCpAsync
	return nil
}

// execCpAsync issues the lanes m's copies: their shared destinations and global sources are
// checked and counted now, their data read now and written at the wait that covers them.
func execCpAsync(w *warp, in *inst, m uint32) {
	c, op := w.c, in.cp
	if w.async == nil {
		w.async = &asyncState{}
	}
	as := w.async
	if len(as.pending)+bits.OnesCount32(m) > maxPendingCopies {
		c.fault(&Fault{Kind: "unsupported", Msg: fmt.Sprintf("more than %d cp.async copies of one warp issued without a cp.async.wait_group that covers them", maxPendingCopies)}, w, bits.TrailingZeros32(m), in)
	}
	var soff [warpSize]uint64
	var gm uint32
	for t := m; t != 0; t &= t - 1 {
		l := bits.TrailingZeros32(t)
		dst := uint64(in.off)
		if in.a >= 0 {
			dst += w.regs[in.a][l]
		}
		_, _, off := c.resolve(w, in, l, dst, op.n, spShared, accStore)
		soff[l] = off
		ss := uint64(op.n)
		if op.ssize >= 0 {
			ss = w.regs[op.ssize][l] & 0xffffffff
		}
		if op.ignore >= 0 && (w.preds[op.ignore]>>l&1 == 1) != op.ignNot {
			ss = 0
		}
		if ss > uint64(op.n) {
			c.fault(&Fault{Kind: "out of bounds", Msg: fmt.Sprintf("cp.async with src-size %d larger than its cp-size %d", ss, op.n)}, w, l, in)
		}
		cp := asyncCopy{lane: uint8(l), n: uint8(op.n), group: as.commits[l], off: uint32(off), pc: in.self}
		if ss > 0 {
			src := uint64(op.srcOff)
			if op.src >= 0 {
				src += w.regs[op.src][l]
			}
			copy(cp.data[:ss], c.readSource(w, in, l, src, int(ss)))
			w.addr[l] = src
			gm |= 1 << l
		}
		as.pending = append(as.pending, cp)
	}
	ic := &c.wk.counts[in.self]
	if gm != 0 {
		before := c.lines
		c.countGlobal(ic, w, gm, op.n, accLoad, 0, false)
		if op.cg { // its lines bypass the L1's data pipe
			c.asyncLines += c.lines - before
			c.lines = before
		}
	}
	for t := m; t != 0; t &= t - 1 {
		l := bits.TrailingZeros32(t)
		w.addr[l] = soff[l]
	}
	c.pattern = patNone // the addresses are not sharedLanes'
	c.countShared(ic, w, m, op.n)
}

// readSource returns the ss bytes of global memory at src that lane l's cp.async reads (src
// aligned to the cp-size; ss at most the cp-size), faulting on an access outside its buffer, and
// checks them against the initcheck's marks.
func (c *cta) readSource(w *warp, in *inst, l int, src uint64, ss int) []byte {
	n := int(in.cp.n)
	if src%uint64(n) != 0 || ss == n {
		mem, sp, off := c.resolve(w, in, l, src, n, spGlobal, accLoad) // faults if misaligned
		c.initOne(w, in, l, sp, src, off, ss, accLoad)
		return mem[:ss]
	}
	first, sp, off := c.resolve(w, in, l, src, 1, spGlobal, accLoad)
	c.resolve(w, in, l, src+uint64(ss)-1, 1, spGlobal, accLoad) // the last byte read: in bounds
	c.initOne(w, in, l, sp, src, off, ss, accLoad)
	return first[:ss]
}

// execCpCommit closes each lane's group of copies issued since its last commit.
func execCpCommit(w *warp, in *inst, m uint32) {
	if w.async == nil {
		w.async = &asyncState{}
	}
	for t := m; t != 0; t &= t - 1 {
		w.async.commits[bits.TrailingZeros32(t)]++
	}
}

// execCpWait completes, for each lane of m, the copies of all its committed groups but the
// waitFor most recent ones (wait_all: commits first, then waits for every group).
func execCpWait(w *warp, in *inst, m uint32) {
	as := w.async
	if as == nil {
		return
	}
	op := in.cp
	if op.kind == 'a' {
		execCpCommit(w, in, m)
	}
	keep := as.pending[:0]
	for _, cp := range as.pending {
		l := int(cp.lane)
		if m>>l&1 == 1 && as.commits[l]-cp.group > uint32(op.waitFor) {
			w.c.completeCopy(w, l, cp)
			continue
		}
		keep = append(keep, cp)
	}
	as.pending = keep
}

// completeCopy writes lane l's copy cp into shared memory now, checked as a store of the lane by
// its cp.async instruction: its hazards, and the written marks of the initcheck.
func (c *cta) completeCopy(w *warp, l int, cp asyncCopy) {
	in := &c.prog.code[cp.pc]
	n := int(cp.n)
	mem := c.shared[cp.off : cp.off+uint32(n)]
	if c.L.racecheck {
		w.addr[l] = uint64(cp.off)
		c.lanes[l] = memLane{mem: mem, sp: spShared}
		c.direct, c.pattern = nil, patNone
		sz := int(in.size)
		for i := range int(in.nvec) {
			w.regs[in.vec[i]][l] = readN(cp.data[i*sz:], sz)
		}
		c.racecheck(w, in, 1<<l, n, true)
	}
	if c.sFull < len(c.swritten) {
		w.addr[l] = uint64(cp.off)
		c.initShared(w, in, 1<<l, n, accStore)
	}
	if c.wg != nil { // a cp.async writes through the generic proxy (wgmma.go)
		w.addr[l] = uint64(cp.off)
		c.wg.markGeneric(c, w, in, 1<<l, n)
	}
	copy(mem, cp.data[:n])
}
