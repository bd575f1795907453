package vgpu

import (
	"fmt"
	"math"
	"strconv"
)

// Hopper's warpgroup-level matrix multiply-accumulate (PTX ISA 8.x, section 9.7.15 "Asynchronous
// Warpgroup Level Matrix Multiply-Accumulate Instructions"): wgmma.mma_async and the
// wgmma.fence, wgmma.commit_group and wgmma.wait_group that order it.
//
// A warpgroup is four consecutive warps of the CTA (warps 4k..4k+3). wgmma.mma_async computes
// D = A·B + D (or A·B with scale-d false) for a 64×16 A and a 16×N B, N a multiple of 8 up to 256,
// f16 or bf16 inputs and f32 accumulators; B is in shared memory, described by a 64-bit matrix
// descriptor (section 9.7.15.5.1.2.2 "Matrix Descriptor Format"), and A either in shared memory
// (a descriptor) or in registers (section 9.7.15.5.1.1.1 "Matrix Fragments for
// wgmma.mma_async.m64nNk16": warp q of the warpgroup holds rows 16q..16q+15 laid out as
// mma.m16n8k16's A). The accumulator fragment is the same per warp: lane 4g+t holds, in register
// j (0..N/2-1), row 16q + g + 8·((j>>1)&1), column 8·(j>>2) + 2t + (j&1).
//
// Each warp's 16 rows of D depend only on its 16 rows of A and all of B, so each warp computes
// its share when it executes the instruction; a warpgroup whose four warps do not all exist is a
// fault. The instruction is asynchronous on the hardware; here it reads shared memory and writes
// its accumulators' new values when it executes, but they reach the registers only at the
// wgmma.wait_group that completes its group (wgmmahold.go): a program that reads them earlier sees
// the old values, and with the hazard check on is stopped at the read.
// Products of 16-bit inputs are exact in f32 and are summed in k order from C.

// smemDesc is a decoded matrix descriptor (section 9.7.15.5.1.2.2): byte addresses and offsets
// within the CTA's shared memory, and the swizzle width in bytes (0: none, 32, 64, 128).
type smemDesc struct {
	start, lbo, sbo uint32
	base            uint32 // the matrix base offset (bits 49–51)
	swizzle         uint32
}

// decodeDesc unpacks a 64-bit matrix descriptor: bits 0–13 start address, 16–29 leading-dimension
// byte offset, 32–45 stride-dimension byte offset (each encoded as (x & 0x3FFFF) >> 4), 49–51 base
// offset, 62–63 swizzle mode (0 none, 1 128-byte, 2 64-byte, 3 32-byte).
func decodeDesc(v uint64) smemDesc {
	field := func(lo uint) uint32 { return uint32(v>>lo&0x3fff) << 4 }
	return smemDesc{start: field(0), lbo: field(16), sbo: field(32), base: uint32(v >> 49 & 7),
		swizzle: [4]uint32{0, 128, 64, 32}[v>>62]}
}

// swizzled applies the descriptor's swizzle to shared byte address a: the 16-byte chunk index
// (bits 4..) is XORed with the 128-byte row index (bits 7..), over log2(swizzle/16) bits, so the
// pattern repeats every 8 rows of 128 bytes (1024 bytes for 128-byte swizzle, 512 for 64, 256 for
// 32: the repeat boundaries of section 9.7.15.5.1.2.2).
func (d smemDesc) swizzled(a uint32) uint32 {
	if d.swizzle == 0 {
		return a
	}
	mask := d.swizzle/16 - 1
	return a ^ (a>>7&mask)<<4
}

// addr16 is the shared byte address of element (mn, k) of a 16-bit operand (mn the row of A or
// column of B, k the reduction index), K-major or MN-major (imm-trans = 1), in the canonical layouts
// of section 9.7.15.5.1.2 "Shared Memory Matrix Layout" (Table 38's swizzle atoms, 8 elements to a
// 16-byte unit):
//
//	K-major, no swizzle: 8×16-byte core matrices; the next 8 rows at SBO, the next 8 k at LBO
//	K-major, swizzle W:  rows W bytes apart, 8-row atoms at SBO (LBO unused)
//	MN-major, no swizzle: 16-byte units of 8 mn, k rows 16 bytes apart; next 8 mn at SBO, next 8 k at LBO
//	MN-major, swizzle W:  k rows W bytes apart holding W/2 mn; next W/2 mn at LBO, next 8 k at SBO
func (d smemDesc) addr16(mn, k int, mnMajor bool) uint32 {
	m, kk, w := uint32(mn), uint32(k), d.swizzle
	var a uint32
	switch {
	case !mnMajor && w == 0:
		a = m/8*d.sbo + m%8*16 + kk/8*d.lbo + kk%8*2
	case !mnMajor:
		a = m/8*d.sbo + m%8*w + kk%(w/2)*2
	case w == 0:
		a = m/8*d.sbo + m%8*2 + kk/8*d.lbo + kk%8*16
	default:
		a = m/(w/2)*d.lbo + m%(w/2)*2 + kk/8*d.sbo + kk%8*w
	}
	return d.swizzled(d.start + a)
}

// sharedBytes is the shared memory one warp's share of the wgmma reads: B (16×N, 2 bytes an
// element) is read once per warpgroup, a quarter per warp, and A's 16 rows of the warp.
func (op *wgmmaOp) sharedBytes() int64 {
	b := int64(2 * 16 * op.n / 4)
	if op.aDesc {
		b += 2 * 16 * 16
	}
	return b
}

// wgmmaOp is a decoded wgmma instruction.
type wgmmaOp struct {
	kind       uint8 // wgFence, wgCommit, wgWait, wgMma
	n          int   // N of m64nNk16
	bf16       bool
	d          []int32 // N/2 f32 accumulators
	a          [4]int32
	aDesc      bool // A from a descriptor (a[0]), else 4 registers
	bDesc      int32
	scaleD     int32 // predicate register, or -1 with scaleDConst
	scaleDNot  bool
	scaleDOn   bool // the constant scale-d when scaleD < 0
	negA, negB bool
	transA     bool
	transB     bool
	wait       int // wait_group's N
}

const (
	wgFence = iota
	wgCommit
	wgWait
	wgMma
)

// decodeWgmma decodes wgmma.fence, .commit_group, .wait_group N and .mma_async.
func (d *decoder) decodeWgmma(in *inst, m mods, s pinst) error {
	op := &wgmmaOp{}
	in.wg, in.class, in.exec = op, ClassOther, execWgmma
	if len(m.words) == 0 {
		return d.errf("expects wgmma.fence, .commit_group, .wait_group or .mma_async")
	}
	switch m.words[0] {
	case "fence":
		op.kind = wgFence
	case "commit_group":
		op.kind = wgCommit
	case "wait_group":
		op.kind = wgWait
		if len(s.args) != 1 || s.args[0].kind != oImm || s.args[0].bits > maxWgWait {
			return d.errf("wgmma.wait_group takes a constant N in 0..%d", maxWgWait)
		}
		op.wait = int(s.args[0].bits)
		return nil
	case "mma_async":
		return d.decodeWgmmaMma(in, op, m, s)
	default:
		return d.errf("wgmma.%s is not supported (fence, commit_group, wait_group, mma_async are)", m.words[0])
	}
	return d.nargs(s, 0)
}

// decodeWgmmaMma decodes wgmma.mma_async.sync.aligned.m64nNk16.f32.{f16,bf16}.{f16,bf16}.
func (d *decoder) decodeWgmmaMma(in *inst, op *wgmmaOp, m mods, s pinst) error {
	op.kind = wgMma
	for _, w := range m.words[1:] {
		var n int
		if _, err := fmt.Sscanf(w, "m64n%dk16", &n); err == nil && w == "m64n"+strconv.Itoa(n)+"k16" {
			op.n = n
		} else if w != "sync" && w != "aligned" {
			return d.errf("unknown modifier .%s (wgmma.mma_async.sync.aligned.m64nNk16.f32.{f16,bf16}.{f16,bf16} is supported)", w)
		}
	}
	ts := m.types
	if op.n < 8 || op.n > 256 || op.n%8 != 0 || len(ts) != 3 || ts[0].name != "f32" || ts[1].name != ts[2].name ||
		(ts[1].name != "f16" && ts[1].name != "bf16") {
		return d.errf("only wgmma.mma_async.sync.aligned.m64nNk16 (N a multiple of 8 up to 256) .f32.{f16,bf16}.{f16,bf16} is supported")
	}
	op.bf16 = ts[1].name == "bf16"
	op.aDesc = len(s.args) > 1 && s.args[1].kind != oVec
	if n := len(s.args); (op.aDesc && n != 6 && n != 8) || (!op.aDesc && n != 6 && n != 7) {
		return d.errf("takes d, a, b-desc, scale-d, imm-scale-a, imm-scale-b and the imm-trans operands, found %d operands", n)
	}
	if err := d.wgmmaRegs(op, s); err != nil {
		return err
	}
	if err := d.wgmmaImms(op, s); err != nil {
		return err
	}
	in.class = ClassTensor
	in.flops = uint16(2 * 64 * op.n * 16 / (4 * warpSize))
	return nil
}

// wgmmaRegs reads the accumulator vector, A (descriptor or 4 registers), B's descriptor and scale-d.
func (d *decoder) wgmmaRegs(op *wgmmaOp, s pinst) error {
	dv := s.args[0]
	if dv.kind != oVec || len(dv.elems) != op.n/2 {
		return d.errf("m64n%dk16 with f32 accumulators needs a vector of %d registers for d", op.n, op.n/2)
	}
	op.d = make([]int32, op.n/2)
	for i, e := range dv.elems {
		r, err := d.dst(e)
		if err != nil {
			return err
		}
		op.d[i] = r
	}
	b64, b32 := parseType("b64"), parseType("b32")
	var err error
	if op.aDesc {
		op.a[0], err = d.src(s.args[1], b64)
	} else if len(s.args[1].elems) != 4 {
		return d.errf("a register A of 16-bit elements is a vector of 4 .b32 registers")
	} else {
		for i, e := range s.args[1].elems {
			if op.a[i], err = d.src(e, b32); err != nil {
				return err
			}
		}
	}
	if err != nil {
		return err
	}
	if op.bDesc, err = d.src(s.args[2], b64); err != nil {
		return err
	}
	op.scaleD = -1
	if sd := s.args[3]; sd.kind == oImm {
		op.scaleDOn = sd.bits != 0
		return nil
	}
	op.scaleD, op.scaleDNot, err = d.pred(s.args[3])
	return err
}

// wgmmaImms reads imm-scale-a, imm-scale-b (1 or -1) and imm-trans-a/-b (0 or 1).
func (d *decoder) wgmmaImms(op *wgmmaOp, s pinst) error {
	imm := func(i int, vals ...int64) (int64, error) {
		o := s.args[i]
		if o.kind != oImm {
			return 0, d.errf("operand %d must be a constant", i+1)
		}
		for _, v := range vals {
			if int64(o.bits) == v {
				return v, nil
			}
		}
		return 0, d.errf("operand %d must be one of %v", i+1, vals)
	}
	sa, err := imm(4, 1, -1)
	if err != nil {
		return err
	}
	sb, err := imm(5, 1, -1)
	if err != nil {
		return err
	}
	op.negA, op.negB = sa < 0, sb < 0
	rest := s.args[6:]
	if op.aDesc && len(rest) == 2 {
		ta, err := imm(6, 0, 1)
		if err != nil {
			return err
		}
		op.transA = ta == 1
		rest = rest[1:]
	}
	if len(rest) == 1 {
		tb, err := imm(len(s.args)-1, 0, 1)
		if err != nil {
			return err
		}
		op.transB = tb == 1
	}
	return nil
}

// execWgmma runs a wgmma instruction for one warp: every live lane executes it together
// (.sync.aligned), and the warp's whole warpgroup exists.
func execWgmma(w *warp, in *inst, m uint32) {
	c, op := w.c, in.wg
	if m != w.live || m != fullMask {
		c.fault(&Fault{Kind: "divergent warp sync", Msg: fmt.Sprintf("wgmma is warpgroup-collective (.sync.aligned): all 32 lanes of each of the warpgroup's 4 warps must execute it together, but only %s of warp %d reached it (PTX ISA 8.x, section 9.7.15)", lanesText(m), w.id)}, w, firstLane(m), in)
	}
	if (w.id/4+1)*4*warpSize > c.L.nthreads {
		c.fault(&Fault{Kind: "barrier", Msg: fmt.Sprintf("wgmma is executed by a warpgroup of 4 warps (128 threads), but warp %d's warpgroup is incomplete in a block of %d threads (PTX ISA 8.x, section 9.7.15)", w.id, c.L.nthreads)}, w, 0, in)
	}
	g := c.wgState().warp(w.id)
	switch op.kind {
	case wgCommit:
		g.commit()
	case wgWait:
		g.wait(op.wait)
		g.deliver(w) // wgmmahold.go
	case wgMma:
		g.issued++
		execWgmmaMma(w, in, op, g)
	}
}

func firstLane(m uint32) int {
	for l := range warpSize {
		if m>>l&1 != 0 {
			return l
		}
	}
	return 0
}

// execWgmmaMma computes warp w's 16 rows of D, held in gw until the wait that completes it
// (wgmmahold.go).
func execWgmmaMma(w *warp, in *inst, op *wgmmaOp, gw *wgWarp) {
	q := w.id % 4
	var A [16][16]float32
	if op.aDesc {
		desc := w.wgDesc(in, op.a[0])
		for i := range 16 {
			for k := range 16 {
				A[i][k] = w.wgElem(in, desc, 16*q+i, k, op.transA, op.bf16)
			}
		}
	} else {
		f := wgFmt(op.bf16)
		for l := range warpSize {
			g, t := l/4, l%4
			for j := range 4 {
				for h := range 2 {
					A[g+8*(j&1)][2*t+h+8*(j>>1)] = float32(decodeFmt(half16(w, op.a[j], l, h), f))
				}
			}
		}
	}
	desc := w.wgDesc(in, op.bDesc)
	B := make([][16]float32, op.n)
	for n := range op.n {
		for k := range 16 {
			B[n][k] = w.wgElem(in, desc, n, k, op.transB, op.bf16)
		}
	}
	sa, sb := float32(1), float32(1)
	if op.negA {
		sa = -1
	}
	if op.negB {
		sb = -1
	}
	for l := range warpSize {
		scale := op.scaleDOn
		if op.scaleD >= 0 {
			scale = (w.preds[op.scaleD]>>l&1 != 0) != op.scaleDNot
		}
		g, t := l/4, l%4
		for j, r := range op.d {
			i, n := g+8*((j>>1)&1), 8*(j>>2)+2*t+(j&1)
			var acc float32
			if scale {
				acc = math.Float32frombits(uint32(gw.accIn(w, r, l)))
			}
			for k := range 16 {
				acc += float32(sa * A[i][k] * sb * B[n][k])
			}
			gw.hold(w, r, l, uint64(math.Float32bits(acc)), gw.issued, in.self)
		}
	}
}

func wgFmt(bf16 bool) ffmt {
	if bf16 {
		return fmtBF16
	}
	return fmtF16
}

// wgDesc reads and checks the descriptor in register r (uniform across the warp: lane 0's).
func (w *warp) wgDesc(in *inst, r int32) smemDesc {
	v := w.regs[r][0]
	d := decodeDesc(v)
	if d.base != 0 {
		w.c.fault(&Fault{Kind: "unsupported", Msg: fmt.Sprintf("a wgmma matrix descriptor (%#x) with a nonzero matrix base offset: the virtual GPU needs the swizzle pattern to start at its repeat boundary (1024, 512 or 256 bytes; PTX ISA 8.x, section 9.7.15.5.1.2.2)", v)}, w, 0, in)
	}
	return d
}

// wgElem reads element (mn, k) of a 16-bit shared-memory operand, checking its bounds, that some
// thread (or a TMA copy) wrote it (initcheck: an "uninitialised read" note) and that no
// generic-proxy write to it is unfenced.
func (w *warp) wgElem(in *inst, d smemDesc, mn, k int, trans, bf16 bool) float32 {
	c := w.c
	a := d.addr16(mn, k, trans)
	if int(a)+2 > len(c.shared) {
		c.fault(&Fault{Kind: "out of bounds", Address: uint64(a), Msg: fmt.Sprintf("wgmma reads shared memory at offset %d (element %d, %d of a descriptor starting at %d), past the block's %d bytes of shared memory", a, mn, k, d.start, len(c.shared))}, w, 0, in)
	}
	c.tmaBytesInFlight(w, 0, in, uint64(a), 2, "wgmma read") // tmarace.go
	if c.sFull < len(c.swritten) && !c.swritten.check(uint64(a), 2, false) {
		c.noteUninit(w, 0, in, "shared", -1, uint64(a), 2) // initcheck.go
	}
	if s := c.wg; s != nil && s.rec != nil {
		s.checkProxy(c, w, in, a)
		r := wgRead{warp: int32(w.id + 1), self: in.self, seq: s.warps[w.id].issued}
		if c.L.racecheck {
			r.epoch = s.readEpoch(c, w, r.seq)
		}
		s.read[a], s.read[a+1] = r, r
	}
	return float32(decodeFmt(uint64(c.shared[a])|uint64(c.shared[a+1])<<8, wgFmt(bf16)))
}

// wgState is a CTA's wgmma state: per warp its wgmma groups (wgmma.commit_group closes the open
// one; wgmma.wait_group N leaves at most N pending), and per byte of shared memory the last
// generic-proxy write (st.shared, atom, a cp.async's shared write) for the async-proxy check.
type wgState struct {
	warps []wgWarp
	rec   []proxyRec
	read  []wgRead
	ord   *mbarOrder // happens-before through mbarriers (mbarorder.go), made on first use
}

// wgWarp is one warp's wgmma groups: issued numbers its wgmma.mma_async (1, 2, …), groups holds
// the last number of each of the latest (at most maxWgWait+1) committed groups not yet waited
// for, and done the last number a wgmma.wait_group has completed.
type wgWarp struct {
	issued, done uint32
	groups       []uint32
	held         map[int32]*heldReg // accumulator registers with a pending value (wgmmahold.go)
}

// maxWgWait is the largest N of wgmma.wait_group N.
const maxWgWait = 7

// commit closes the warp's open group (wgmma.commit_group), empty or not. Only the latest
// maxWgWait+1 pending groups are kept: a wait_group N (N ≤ maxWgWait) completes everything up
// to the (N+1)-th latest group, so older ones are never read, and a loop of commits without
// waits stays bounded.
func (g *wgWarp) commit() {
	if len(g.groups) > maxWgWait {
		g.groups = append(g.groups[:0], g.groups[len(g.groups)-maxWgWait:]...)
	}
	g.groups = append(g.groups, g.issued)
}

// wait completes all but the latest n pending groups (wgmma.wait_group n).
func (g *wgWarp) wait(n int) {
	if k := len(g.groups) - n; k > 0 {
		g.done = g.groups[k-1]
		g.groups = append(g.groups[:0], g.groups[k:]...)
	}
}

// wgRead is the last wgmma read of a shared byte: the reading warp plus one (0: none), the
// wgmma's number in that warp (wgWarp.issued) and its instruction.
type wgRead struct {
	warp, self int32
	seq        uint32
	epoch      uint32 // the reader's warpgroup clock at the read (mbarorder.go)
}

// proxyRec is the last generic-proxy write of a shared byte: fence is the CTA's count of
// fence.proxy.async at that write plus one (0: never written), self the writing instruction and
// thread the CTA-linear thread.
type proxyRec struct {
	fence        uint32
	self, thread int32
}

// newWgState returns the wgmma state of a CTA of p with shared bytes of shared memory, or nil when
// p has no wgmma instruction and no TMA store (the other reader through the async proxy,
// tmastorerace.go): then nothing is recorded.
func newWgState(p *program, shared int) *wgState {
	for i := range p.code {
		if op, b := p.code[i].wg, p.code[i].bulk; op != nil && op.kind == wgMma || b != nil && b.store {
			return &wgState{rec: make([]proxyRec, shared), read: make([]wgRead, shared)}
		}
	}
	return nil
}

// reset clears the state for the next CTA (s may be nil).
func (s *wgState) reset() {
	if s == nil {
		return
	}
	clear(s.rec)
	clear(s.read)
	s.ord = nil
	for i := range s.warps {
		clear(s.warps[i].held)
		s.warps[i] = wgWarp{groups: s.warps[i].groups[:0], held: s.warps[i].held}
	}
}

func (c *cta) wgState() *wgState {
	if c.wg == nil {
		c.wg = &wgState{}
	}
	return c.wg
}

func (s *wgState) warp(id int) *wgWarp {
	for len(s.warps) <= id {
		s.warps = append(s.warps, wgWarp{})
	}
	return &s.warps[id]
}

// markGeneric records the generic-proxy writes of n bytes at w.addr[l] for the lanes m (s may be nil).
func (s *wgState) markGeneric(c *cta, w *warp, in *inst, m uint32, n int) {
	if s == nil || s.rec == nil {
		return
	}
	r := proxyRec{fence: uint32(c.proxyFences) + 1, self: in.self}
	for l := range warpSize {
		if m>>l&1 == 0 {
			continue
		}
		r.thread = int32(w.first + l)
		a := w.addr[l]
		for b := a; b < a+uint64(n) && b < uint64(len(s.rec)); b++ {
			s.rec[b] = r
			if rd := s.read[b]; rd.warp != 0 && rd.seq > s.warps[rd.warp-1].done {
				s.pendingRead(c, w, l, in, b, rd)
			} else if s.unordered(c, w, rd) {
				s.unorderedRead(c, w, l, in, b, rd)
			}
		}
	}
}

// checkProxy faults when the 2 bytes at shared offset a, read by a wgmma (the async proxy), were
// last written through the generic proxy with no fence.proxy.async executed in the CTA since
// (PTX ISA 8.x, section 9.7.15.5.2 "wgmma.mma_async": wgmma's shared-memory accesses are in the
// async proxy, and a generic-proxy write must be made visible to them by fence.proxy.async;
// section 9.7.12.15 "membar/fence"). Any thread's fence counts: the check is that one was
// executed between the write and the read, not that it was the writer's.
func (s *wgState) checkProxy(c *cta, w *warp, in *inst, a uint32) {
	for _, r := range s.rec[a : a+2] {
		if r.fence == 0 || r.fence != uint32(c.proxyFences)+1 {
			continue
		}
		st := &c.prog.code[r.self]
		f := &Fault{Kind: "hazard", Space: "shared", Address: uint64(a),
			OtherThread: c.threadXYZ(int(r.thread)), OtherLine: int(st.line), OtherSource: c.L.source(st.loc),
			OtherInstr: c.L.mod.Line(int(st.line)),
			Msg:        fmt.Sprintf("wgmma reads shared memory at offset %d through the async proxy, but it was written through the generic proxy (PTX line %d) with no fence.proxy.async since: the tensor core may read the old bytes. Execute fence.proxy.async (cuda::device::experimental::fence_proxy_async_shared_cta()) after the writes and before the barrier that precedes the wgmma (PTX ISA 8.x, section 9.7.15.5.2 \"wgmma.mma_async\")", a, st.line)}
		c.fault(f, w, 0, in)
	}
}

// pendingRead faults on a generic-proxy write (lane l of w, instruction in) of shared byte b
// that the wgmma rd of another or the same warp may still be reading: its group has not been
// waited for (PTX ISA 8.x, section 9.7.15.7.3 "wgmma.wait_group": the wgmma's shared-memory
// operands must not be modified until it completes).
func (s *wgState) pendingRead(c *cta, w *warp, l int, in *inst, b uint64, rd wgRead) {
	mma := &c.prog.code[rd.self]
	f := &Fault{Kind: "hazard", Space: "shared", Address: b,
		OtherThread: c.threadXYZ(int(rd.warp-1) * warpSize), OtherLine: int(mma.line), OtherSource: c.L.source(mma.loc),
		OtherInstr: c.L.mod.Line(int(mma.line)),
		Msg:        fmt.Sprintf("a write to shared memory at offset %d, which the wgmma.mma_async at PTX line %d (warp %d) may still be reading: the warp has not waited for its group. Wait with wgmma.wait_group (and a barrier, for other warps) before overwriting a wgmma's operands (PTX ISA 8.x, section 9.7.15.7.3 \"wgmma.wait_group\")", b, mma.line, rd.warp-1)}
	c.fault(f, w, l, in)
}

// markAsync is for an async-proxy write (a TMA copy: cp.async.bulk) of n bytes at shared offset
// off by lane l of w executing in: the bytes no longer need a fence.proxy.async before a wgmma
// reads them, and a wgmma that may still read them (its group not waited for) is a hazard, as for
// a generic write (s may be nil).
func (s *wgState) markAsync(c *cta, w *warp, l int, in *inst, off uint64, n int) {
	if s == nil || s.rec == nil {
		return
	}
	for b := off; b < off+uint64(n) && b < uint64(len(s.rec)); b++ {
		s.rec[b] = proxyRec{}
		if rd := s.read[b]; rd.warp != 0 && rd.seq > s.warps[rd.warp-1].done {
			s.pendingRead(c, w, l, in, b, rd)
		} else if s.unordered(c, w, rd) {
			s.unorderedRead(c, w, l, in, b, rd)
		}
	}
}
