package vgpu

import (
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"strings"
)

// Warp-level instructions: wmma tensor-core tiles, shfl.sync, vote.sync and activemask (the word
// "collective" is the all-reduce model's).

// wmmaOp is a decoded wmma instruction (PTX ISA 8.x, section 9.7.14.4 "Warp-level Matrix
// Multiply-Accumulate Instructions", m16n16k16 only). The ISA leaves the mapping of matrix elements
// to fragment registers unspecified, so the virtual GPU uses its own: element e of the 16×16 tile
// (row-major in the logical matrix) lives in lane e/8, slot e%8. An f32 fragment has one slot per
// register; a bf16 fragment packs two slots per 32-bit register (low half first); an f16 fragment
// has 8 registers whose first 4 hold the slots as bf16's do and whose last 4 repeat them.
type wmmaOp struct {
	op     byte // 'l' load, 's' store, 'm' mma
	mat    byte // 'a', 'b', 'c', 'd'
	col    bool // column-major memory layout (load/store)
	etype  string
	frag   []int32 // load/store: the fragment; mma: d, a, b, c in order
	na, nb int     // mma: registers of a and b fragments
	ctype  string
}

func (d *decoder) decodeWmma(in *inst, m mods, s pinst) error {
	wm, err := d.wmmaWords(m)
	if err != nil {
		return err
	}
	in.wm = wm
	switch wm.op {
	case 'l', 's':
		return d.decodeWmmaMem(in, wm, m, s)
	case 'm':
		return d.decodeWmmaMma(in, wm, m, s)
	}
	return d.errf("unknown wmma operation")
}

// wmmaWords reads wmma's operation, matrix, layout and shape (only m16n16k16).
func (d *decoder) wmmaWords(m mods) (*wmmaOp, error) {
	wm := &wmmaOp{}
	var shape bool
	layouts := 0
	for _, w := range m.words {
		switch w {
		case "load", "store", "mma":
			wm.op = w[0]
		case "a", "b", "c", "d":
			wm.mat = w[0]
		case "sync", "aligned":
		case "row", "col":
			if layouts == 0 {
				wm.col = w == "col"
			}
			layouts++
		case "m16n16k16":
			shape = true
		default:
			return nil, d.errf("unsupported modifier .%s (only m16n16k16 with f16/bf16 inputs and f32 accumulators)", w)
		}
	}
	if !shape {
		return nil, d.errf("only the m16n16k16 shape is supported")
	}
	return wm, nil
}

// fragment reads a fragment operand {r0, r1, …}: sources of type t when src, else destinations.
func (d *decoder) fragment(o operand, src bool, t ptype) ([]int32, error) {
	if o.kind != oVec {
		return nil, d.errf("expects a fragment {…}")
	}
	var out []int32
	for _, e := range o.elems {
		var r int32
		var err error
		if src {
			r, err = d.src(e, t)
		} else {
			r, err = d.dst(e)
		}
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// wmmaFragRegs is the number of registers of a fragment by element type.
var wmmaFragRegs = map[string]int{"f16": 8, "bf16": 4, "f32": 8}

// decodeWmmaMem: wmma.load.{a,b,c} frag, [addr]{, stride} and wmma.store.d [addr], frag{, stride}.
func (d *decoder) decodeWmmaMem(in *inst, wm *wmmaOp, m mods, s pinst) error {
	if len(m.types) != 1 {
		return d.errf("expects one element type")
	}
	wm.etype = m.types[0].name
	load := wm.op == 'l'
	if load && wm.mat == 'd' || !load && wm.mat != 'd' {
		return d.errf("loads take a, b or c; stores take d")
	}
	want := wmmaFragRegs[wm.etype]
	if want == 0 || (wm.mat == 'c' || wm.mat == 'd') != (wm.etype == "f32") {
		return d.errf(".%s fragments of %c are not supported (a/b: f16 or bf16; c/d: f32)", wm.etype, wm.mat)
	}
	if len(s.args) < 2 || len(s.args) > 3 {
		return d.errf("takes a fragment, an address and an optional stride")
	}
	fo, ao := s.args[0], s.args[1]
	if !load {
		fo, ao = s.args[1], s.args[0]
	}
	var err error
	if wm.frag, err = d.fragment(fo, !load, parseType("b32")); err != nil {
		return err
	}
	if len(wm.frag) != want {
		return d.errf("a .%s fragment has %d registers, found %d", wm.etype, want, len(wm.frag))
	}
	if ao.kind != oAddr {
		return d.errf("expects an address [..]")
	}
	in.space = m.space
	if err := d.address(in, ao, m.space); err != nil {
		return err
	}
	in.b = -1
	if len(s.args) == 3 {
		if in.b, err = d.src(s.args[2], parseType("u32")); err != nil {
			return err
		}
	}
	in.size = uint8(typeSizes[wm.etype])
	in.nvec = 1
	in.class = ClassStore
	if load {
		in.class = ClassLoad
	}
	in.exec = execWmmaMem
	return nil
}

// decodeWmmaMma: wmma.mma d, a, b, c with .f32.f32 (f16 inputs) or .f32.bf16.bf16.f32.
func (d *decoder) decodeWmmaMma(in *inst, wm *wmmaOp, m mods, s pinst) error {
	var ab string
	switch {
	case len(m.types) == 2 && m.types[0].name == "f32" && m.types[1].name == "f32":
		ab = "f16"
	case len(m.types) == 4 && m.types[0].name == "f32" && m.types[1].name == "bf16" && m.types[2].name == "bf16" && m.types[3].name == "f32":
		ab = "bf16"
	default:
		return d.errf("only f32 accumulation of f16 or bf16 inputs is supported")
	}
	if err := d.nargs(s, 4); err != nil {
		return err
	}
	wm.etype = ab
	wm.na = wmmaFragRegs[ab]
	wm.nb = wm.na
	sizes := []int{8, wm.na, wm.nb, 8}
	for i, o := range s.args {
		f, err := d.fragment(o, i > 0, parseType("b32"))
		if err != nil {
			return err
		}
		if len(f) != sizes[i] {
			return d.errf("fragment %d has %d registers, expected %d", i+1, len(f), sizes[i])
		}
		wm.frag = append(wm.frag, f...)
	}
	in.class = ClassTensor
	in.flops = 2 * 16 * 16 * 16 / warpSize
	in.exec = execWmmaMma
	return nil
}

// slot reads or writes slot s (0..7) of lane l's fragment.
func fragGet(w *warp, frag []int32, etype string, l, s int) uint64 {
	if etype == "f32" {
		return w.regs[frag[s]][l] & 0xffffffff
	}
	return w.regs[frag[s/2]][l] >> (16 * (s % 2)) & 0xffff
}

func fragSet(w *warp, frag []int32, etype string, l, s int, v uint64) {
	if etype == "f32" {
		w.regs[frag[s]][l] = v & 0xffffffff
		return
	}
	r := &w.regs[frag[s/2]][l]
	sh := 16 * uint(s%2)
	*r = *r&^(0xffff<<sh) | (v&0xffff)<<sh
	if etype == "f16" { // the upper 4 registers repeat the lower 4
		w.regs[frag[s/2+4]][l] = *r
	}
}

func wmmaConverged(w *warp, in *inst, m uint32) {
	if m != fullMask {
		l := bits.TrailingZeros32(m)
		w.c.fault(&Fault{Kind: "divergent warp sync", Msg: fmt.Sprintf("wmma is warp-collective: all 32 lanes must execute it together, but only %s reached it (CUDA C++ Programming Guide, \"Warp Matrix Functions\")", lanesText(m))}, w, l%warpSize, in)
	}
}

func execWmmaMem(w *warp, in *inst, m uint32) {
	wmmaConverged(w, in, m)
	c := w.c
	wm := in.wm
	n := int(in.size)
	stride := uint64(16)
	if in.b >= 0 {
		stride = w.regs[in.b][0] & 0xffffffff
	}
	base := uint64(in.off)
	if in.a >= 0 {
		base += w.regs[in.a][0]
	}
	mode := accLoad
	if wm.op == 's' {
		mode = accStore
	}
	var addrs [256]uint64
	shared := false
	for e := range 256 {
		r, col := uint64(e/16), uint64(e%16)
		off := r*stride + col
		if wm.col {
			off = col*stride + r
		}
		addr := base + off*uint64(n)
		l, s := e/8, e%8
		mem, sp, off := c.resolve(w, in, l, addr, n, in.space, mode)
		c.initOne(w, in, l, sp, addr, off, n, mode)
		if sp == spShared {
			shared = true
			addr = off
		} else if sp != spGlobal {
			c.fault(&Fault{Kind: "unsupported", Msg: "wmma on ." + spaceNames[sp] + " memory (only .global and .shared)"}, w, l, in)
		}
		addrs[e] = addr
		if mode == accLoad {
			fragSet(w, wm.frag, wm.etype, l, s, readN(mem, n))
		} else {
			writeN(mem, n, fragGet(w, wm.frag, wm.etype, l, s))
		}
	}
	ic := &c.counts[in.self]
	if shared {
		// one shared request (the hazard check does not cover wmma)
		wave, ideal := c.wmmaWavefronts(&addrs, stride, n)
		ic.sReq++
		ic.sWave += wave
		ic.sIdeal += ideal
		return
	}
	sortSmall(addrs[:])
	// one request; its sectors are the distinct 32-byte sectors of the tile
	var sectors uint64
	last, lastLine := ^uint64(0), ^uint64(0)
	for _, a := range addrs {
		if s := a >> 5; s != last {
			sectors++
			last = s
			if s>>2 != lastLine {
				c.lines++
				lastLine = s >> 2
			}

		}
	}
	if c.L.l2 != nil {
		c.cacheRequest(addrs[:], n, mode)
	}
	ic.gReq++
	ic.gSectors += sectors
	ic.gBytes += 256 * uint64(n)
}

// wmmaWavefronts counts the shared wavefronts of a wmma tile (addrs: its elements' shared offsets
// in tile order, element 0 first; rows or columns stride elements apart in memory). A 16-bit tile
// (a, b) is read as the hardware does: 4 warp-wide 32-bit accesses, in which lane l reads the pair
// of elements at row l/4 (+8 in accesses 1 and 3) and column 2·(l%4) (+8 in accesses 2 and 3), in
// memory order; on an H100 this gives what Nsight Compute counted for row-major a and b tiles
// (bench/gpucheck/shared.cu: a 16×16 bf16 tile with rows 16 elements apart takes 8 wavefronts, 4
// of them conflicts; 24 apart, 4 and none). An f32 tile (c, d; not measured) is one pass over its
// words: the most words in one bank, ideal its bytes / 128.
func (c *cta) wmmaWavefronts(addrs *[256]uint64, stride uint64, n int) (wave, ideal uint64) {
	if n != 2 {
		var s [256]uint64
		for i, a := range addrs {
			s[i] = a >> 2
		}
		return bankPass(s[:])
	}
	base := addrs[0]
	s := &c.sortBuf
	for j := range uint64(4) {
		for l := range uint64(warpSize) {
			major, minor := l/4+8*(j&1), 2*(l%4)+8*(j>>1)
			s[l] = (base + (major*stride+minor)*2) >> 2
		}
		wv, id := bankPass(s[:warpSize])
		wave += wv
		ideal += id
	}
	return wave, ideal
}

// execWmmaMma is D = A·B + C with products of f16/bf16 inputs (exact in f32) accumulated in f32
// in k order, starting from C. The hardware's accumulation order is unspecified by the ISA.
func execWmmaMma(w *warp, in *inst, m uint32) {
	wmmaConverged(w, in, m)
	wm := in.wm
	bf16 := wm.etype == "bf16"
	dF := wm.frag[:8]
	aF := wm.frag[8 : 8+wm.na]
	bF := wm.frag[8+wm.na : 8+wm.na+wm.nb]
	cF := wm.frag[8+wm.na+wm.nb:]
	var A, B [256]float32
	var C [256]float32
	for e := range 256 {
		l, s := e/8, e%8
		A[e] = halfF32(fragGet(w, aF, wm.etype, l, s), bf16)
		B[e] = halfF32(fragGet(w, bF, wm.etype, l, s), bf16)
		C[e] = math.Float32frombits(uint32(fragGet(w, cF, "f32", l, s)))
	}
	for i := range 16 {
		for j := range 16 {
			acc := C[i*16+j]
			for k := range 16 {
				acc += float32(A[i*16+k] * B[k*16+j])
			}
			e := i*16 + j
			fragSet(w, dF, "f32", e/8, e%8, uint64(math.Float32bits(acc)))
		}
	}
}

// decodeShfl: shfl.sync.{up,down,bfly,idx}.b32 d[|p], a, b, c, membermask (PTX ISA 8.x, section
// 9.7.9.6 "shfl.sync"): c holds the clamp value (bits 0–4) and the segment mask (bits 8–12).
func (d *decoder) decodeShfl(in *inst, m mods, s pinst) error {
	if len(m.types) != 1 || m.types[0].name != "b32" {
		return d.errf("only shfl.sync.*.b32 is supported")
	}
	mode := oneOf(m, "up", "down", "bfly", "idx")
	for _, w := range m.words {
		if w != mode && w != "sync" {
			return d.errf("unknown modifier .%s", w)
		}
	}
	if mode == "" || oneOf(m, "sync") == "" {
		return d.errf("needs .sync and a mode (up, down, bfly, idx)")
	}
	if err := d.nargs(s, 5); err != nil {
		return err
	}
	t := m.types[0]
	dst := s.args[0]
	in.d2 = -1
	if dst.kind == oPair {
		p, _, err := d.pred(dst.elems[1])
		if err != nil {
			return err
		}
		in.d2 = p
		dst = dst.elems[0]
	}
	var err error
	if in.d, err = d.dst(dst); err != nil {
		return err
	}
	if in.a, err = d.src(s.args[1], t); err != nil {
		return err
	}
	if in.b, err = d.src(s.args[2], t); err != nil {
		return err
	}
	if in.c, err = d.src(s.args[3], t); err != nil {
		return err
	}
	if in.target, err = d.src(s.args[4], t); err != nil { // the member mask
		return err
	}
	in.mode = map[string]uint8{"up": 0, "down": 1, "bfly": 2, "idx": 3}[mode]
	in.class = ClassShuffle
	in.exec = execShfl
	return nil
}

// converged checks that the lanes executing a .sync warp instruction are exactly the live lanes of
// its member mask. PTX ISA 8.x (section 9.7.8.6 "shfl.sync", and likewise vote.sync, match.sync,
// redux.sync) leaves the behaviour undefined when a lane executes it without being named, and has
// each lane wait for every non-exited lane named; the CUDA C++ Programming Guide ("Warp Shuffle
// Functions", "Warp Vote Functions") asks every lane named in the mask to execute the same
// intrinsic. A mask naming lanes that a divergent branch took elsewhere is the kernel's bug (on a
// GPU it hangs or reads garbage): a "divergent warp sync" fault, the finding compute-sanitizer's
// synccheck reports as "Divergent thread(s) in warp".
func converged(w *warp, in *inst, m uint32, member uint32) {
	if m&^member == 0 && member&w.live == m {
		return
	}
	op := strings.Fields(w.c.L.mod.Line(int(in.line)))[0]
	name := strings.SplitN(op, ".", 2)[0] + ".sync"
	var msg string
	lane := bits.TrailingZeros32(m)
	if extra := m &^ member; extra != 0 {
		lane = bits.TrailingZeros32(extra)
		msg = fmt.Sprintf("%s with member mask %#08x, executed by %s, which the mask does not name: a lane executing %s must be named in its mask", name, member, lanesText(extra), name)
	} else {
		msg = fmt.Sprintf("%s with member mask %#08x, but only %s reached it (%s took another path): every lane named in the mask must execute the same %s, so a divergent branch must not hold it (CUDA C++ Programming Guide, \"Warp Shuffle Functions\" and \"Warp Vote Functions\")",
			name, member, lanesText(m), lanesText(member&w.live&^m), name)
	}
	w.c.fault(&Fault{Kind: "divergent warp sync", Msg: msg}, w, lane, in)
}

// lanesText names the lanes of mask: "lane 3", "lanes 0–15", "lanes 0–3, 8 and 10–12".
func lanesText(mask uint32) string {
	var parts []string
	for l := 0; l < warpSize; {
		if mask>>l&1 == 0 {
			l++
			continue
		}
		e := l
		for e+1 < warpSize && mask>>(e+1)&1 == 1 {
			e++
		}
		if e == l {
			parts = append(parts, strconv.Itoa(l))
		} else {
			parts = append(parts, fmt.Sprintf("%d–%d", l, e))
		}
		l = e + 1
	}
	word := "lanes "
	if bits.OnesCount32(mask) == 1 {
		word = "lane "
	}
	if len(parts) > 1 {
		return word + strings.Join(parts[:len(parts)-1], ", ") + " and " + parts[len(parts)-1]
	}
	return word + strings.Join(parts, "")
}

func execShfl(w *warp, in *inst, m uint32) {
	member := uint32(w.regs[in.target][bits.TrailingZeros32(m)])
	converged(w, in, m, member)
	w.c.warpSync(w, member)
	a, b, c := w.regs[in.a], &w.regs[in.b], &w.regs[in.c]
	var p uint32
	for t := m; t != 0; t &= t - 1 {
		l := bits.TrailingZeros32(t)
		bval, cval := int(b[l]&31), int(c[l]&31)
		seg := int(c[l] >> 8 & 31)
		maxLane := l&seg | cval&^seg
		minLane := l & seg
		var j int
		var ok bool
		switch in.mode {
		case 0:
			j = l - bval
			ok = j >= maxLane
		case 1:
			j = l + bval
			ok = j <= maxLane
		case 2:
			j = l ^ bval
			ok = j <= maxLane
		default:
			j = minLane | bval&^seg
			ok = j <= maxLane
		}
		if !ok {
			j = l
		}
		w.regs[in.d][l] = a[j&31] & 0xffffffff
		if ok {
			p |= 1 << l
		}
	}
	if in.d2 >= 0 {
		w.preds[in.d2] = w.preds[in.d2]&^m | p&m
	}
}

// decodeVote: vote.sync.{all,any,uni}.pred and vote.sync.ballot.b32 (PTX ISA 8.x, 9.7.12.11), and
// activemask.b32 (9.7.12.12).
func (d *decoder) decodeVote(in *inst, m mods, s pinst) error {
	in.class = ClassShuffle
	if m.base == "activemask" {
		if err := d.nargs(s, 1); err != nil {
			return err
		}
		var err error
		in.d, err = d.dst(s.args[0])
		in.exec = execActivemask
		return err
	}
	mode := oneOf(m, "all", "any", "uni", "ballot")
	if mode == "" || oneOf(m, "sync") == "" || len(m.types) != 1 {
		return d.errf("needs .sync, a mode and a type")
	}
	if err := d.nargs(s, 3); err != nil {
		return err
	}
	a, neg, err := d.pred(s.args[1])
	if err != nil {
		return err
	}
	in.a = a
	if neg {
		in.mode = 1
	}
	if in.target, err = d.src(s.args[2], parseType("b32")); err != nil {
		return err
	}
	in.boolop = map[string]uint8{"all": 0, "any": 1, "uni": 2, "ballot": 3}[mode]
	if mode == "ballot" {
		in.d, err = d.dst(s.args[0])
	} else {
		in.d, _, err = d.pred(s.args[0])
	}
	in.exec = execVote
	return err
}

func execVote(w *warp, in *inst, m uint32) {
	member := uint32(w.regs[in.target][bits.TrailingZeros32(m)])
	converged(w, in, m, member)
	w.c.warpSync(w, member)
	p := w.preds[in.a]
	if in.mode == 1 {
		p = ^p
	}
	p &= m
	var r uint32
	switch in.boolop {
	case 0:
		if p == m {
			r = fullMask
		}
	case 1:
		if p != 0 {
			r = fullMask
		}
	case 2:
		if p == 0 || p == m {
			r = fullMask
		}
	default:
		for t := m; t != 0; t &= t - 1 {
			w.regs[in.d][bits.TrailingZeros32(t)] = uint64(p)
		}
		return
	}
	w.preds[in.d] = w.preds[in.d]&^m | r&m
}

func execActivemask(w *warp, in *inst, m uint32) {
	for t := m; t != 0; t &= t - 1 {
		w.regs[in.d][bits.TrailingZeros32(t)] = uint64(m)
	}
}
