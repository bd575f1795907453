package vgpu

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"strings"
)

// Bulk asynchronous copies through Hopper's tensor memory accelerator (TMA), global to shared
// memory, completing on an mbarrier (PTX ISA 8.x, "cp.async.bulk" and "cp.async.bulk.tensor",
// since PTX ISA 8.0, sm_90; "Tensor Access Modes: Tile mode", "Bounding Box" and "Swizzling
// Modes"; the CUDA C++ Programming Guide's "Asynchronous Data Copies using the Tensor Memory
// Accelerator (TMA)"):
//
//	cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes{.L2::cache_hint} [dst], [src], size, [mbar]{, policy};
//	cp.async.bulk.tensor.Nd.shared::cluster.global{.tile}.mbarrier::complete_tx::bytes{.L2::cache_hint} [dst], [tmap, {c0, …}], [mbar]{, policy};
//
// N is 1 to 5. The destination and the barrier are in the issuing CTA's shared memory (a
// .shared::cta address is the CTA's own window of .shared::cluster). The 1-D copy moves size bytes
// (a multiple of 16, both addresses 16-byte aligned). The tensor copy reads the tensor map at tmap
// (a kernel parameter `const __grid_constant__ CUtensorMap` the launcher made; the map's bytes
// copied elsewhere, or 128 bytes a kernel writes itself, are no tensor map) and copies
// the box whose first element is at coordinates c0 (innermost) … into shared memory, packed
// innermost first (dst 128-byte aligned); box elements outside the tensor are written as zeros,
// as the hardware does, and count as transferred bytes. A box that lies entirely outside the
// tensor, a box larger than the block's shared memory, a misaligned address or a tensor map the
// launcher did not make are "out of bounds", "misaligned" and "barrier"/"tensor map" faults naming
// the copy's line; so are more bulk copies in flight (no wait on their barriers) than 4096 or than
// twice the block's shared memory in bytes ("unsupported"). With a swizzle (32, 64 or
// 128 bytes) the 16-byte chunk bits [4, 4+k) of each destination shared-memory address are XORed
// with its bits [7, 7+k) (k = 1, 2, 3): the pattern repeats every 256, 512 or 1024 bytes of the
// shared address, so a destination aligned to that size gets the layout CUTLASS's Swizzle<k,4,3>
// reads back.
//
// The copy is asynchronous: its source is read when it is issued, but it writes shared memory and
// completes its bytes on the mbarrier (complete_tx) only when a thread waits on that barrier's
// incomplete phase, or when no thread of the block can run: a legal schedule (the hardware may
// finish it any time before), and the one that shows a read of the destination before the wait
// (it sees the old bytes, the poison of a fresh block: an "uninitialised read" note). A phase
// completes when its arrivals and its tx-count are both zero (mbarrier.go): copies of fewer bytes
// than the expect_tx announced leave the phase incomplete, and the waiting threads "hang" (a fault
// at the wait's line naming the outstanding bytes); copies of more complete the phase before the
// last of them lands, a "barrier" fault at that copy's line (checkBulkPhase).
//
// The tensor map's 128 bytes are opaque and driver-defined on a GPU (cuTensorMapEncodeTiled fills
// them); the virtual GPU defines its own layout (tmapLayout below), filled by the launcher from a
// TensorMap description given with TensorMapArg. The stores back to global memory are
// decodeBulkStore's. Element strides other than 1, interleave, im2col (refused at decode with an
// error naming it), reductions (cp.reduce.async.bulk) and cp.async.bulk.prefetch are not supported.
//
// Multicast (PTX ISA 8.x, "cp.async.bulk.tensor" and "cp.async.bulk": .multicast::cluster with a
// 16-bit ctaMask operand after [mbar]): the data lands in the shared memory of every CTA of the
// cluster whose rank is set in the mask, at the issuing CTA's destination offset, and completes its
// bytes on the mbarrier at the issuing CTA's barrier offset in each of them. The virtual GPU reads
// the source once and puts one copy in flight per destination CTA (on that CTA's list: a wait there
// completes it). An empty mask or a rank outside the cluster is "out of bounds", a destination CTA
// that has exited too, and a destination barrier no mbarrier.init initialised a "barrier" fault.
// The hazard check of the destinations is tmarace.go's.
//
// Counts: each copy instruction is a warp instruction of class "load" ("store" for a TMA store);
// its bytes are Counts.TMABytes (a multicast's once; Counts.TMAMulticastBytes the bytes it wrote
// into each CTA of its mask) and its warp instructions Counts.TMARequests, kept apart from the global load
// requests, sectors and Coalescing of the LSU path (Nsight Compute counts TMA traffic apart from
// the LSU's ld/st instructions too; the virtual GPU does not send it through the cache model).

// Swizzle is a tensor map's shared-memory swizzle (CU_TENSOR_MAP_SWIZZLE_*): its span in bytes.
type Swizzle int

const (
	SwizzleNone Swizzle = 0
	Swizzle32B  Swizzle = 32
	Swizzle64B  Swizzle = 64
	Swizzle128B Swizzle = 128
)

// TensorMap describes a tiled tensor map, as cuTensorMapEncodeTiled's arguments do: the tensor
// starts at byte Offset of Buffer; Dims are its sizes in elements, innermost first (1 to 5 of
// them); Strides the bytes between consecutive indices of Dims[1:] (len(Dims)-1 entries, each a
// multiple of 16); Box the copied box's sizes in elements (1..256 each, Box[0]·ElemBytes a
// multiple of 16 and, with a swizzle, at most its span); ElemBytes 1, 2, 4 or 8.
type TensorMap struct {
	Buffer    *Buffer
	Offset    int64
	ElemBytes int
	Dims      []int
	Strides   []int64
	Box       []int
	Swizzle   Swizzle
}

// TensorMapArg is a `const __grid_constant__ CUtensorMap` kernel argument (128 bytes) made from
// tm; Launch checks tm as cuTensorMapEncodeTiled would and fails with an error naming the rule.
func TensorMapArg(tm TensorMap) Arg { return Arg{size: tmapBytes, tmap: &tm} }

// tmapLayout: the virtual GPU's tensor map (little-endian), 128 bytes:
//
//	[0:4) magic "vgTM"  [4] rank  [5] element bytes  [6] swizzle span / 32 (0: none)
//	[8:16) the tensor's global address  [16:36) Dims (u32 ×5)  [36:56) Box (u32 ×5)
//	[56:88) Strides of dims 1..4 (u64 ×4)  [88:128) zero
const (
	tmapBytes = 128
	tmapMagic = 0x4d546776 // "vgTM"
)

// encode checks tm and writes its layout with the tensor's window address base.
func (tm *TensorMap) encode(base uint64) ([]byte, error) {
	r := len(tm.Dims)
	switch {
	case r < 1 || r > 5:
		return nil, fmt.Errorf("a tensor map has 1 to 5 dimensions, not %d", r)
	case len(tm.Strides) != r-1 || len(tm.Box) != r:
		return nil, fmt.Errorf("a %d-D tensor map needs %d strides and %d box sizes, got %d and %d", r, r-1, r, len(tm.Strides), len(tm.Box))
	case tm.ElemBytes != 1 && tm.ElemBytes != 2 && tm.ElemBytes != 4 && tm.ElemBytes != 8:
		return nil, fmt.Errorf("tensor map element size %d, not 1, 2, 4 or 8 bytes", tm.ElemBytes)
	case tm.Offset%16 != 0 || tm.Offset < 0:
		return nil, fmt.Errorf("tensor map global address at byte %d of %q: it must be 16-byte aligned", tm.Offset, tm.Buffer.Name)
	case tm.Box[0]*tm.ElemBytes%16 != 0:
		return nil, fmt.Errorf("tensor map box's inner dimension is %d bytes, not a multiple of 16", tm.Box[0]*tm.ElemBytes)
	case tm.Swizzle != SwizzleNone && tm.Swizzle != Swizzle32B && tm.Swizzle != Swizzle64B && tm.Swizzle != Swizzle128B:
		return nil, fmt.Errorf("tensor map swizzle %d, not 0, 32, 64 or 128 bytes", tm.Swizzle)
	case tm.Swizzle != SwizzleNone && tm.Box[0]*tm.ElemBytes > int(tm.Swizzle):
		return nil, fmt.Errorf("tensor map box's inner dimension is %d bytes, more than the %d-byte swizzle span", tm.Box[0]*tm.ElemBytes, tm.Swizzle)
	}
	b := make([]byte, tmapBytes)
	binary.LittleEndian.PutUint32(b, tmapMagic)
	b[4], b[5], b[6] = byte(r), byte(tm.ElemBytes), byte(tm.Swizzle/32)
	binary.LittleEndian.PutUint64(b[8:], base)
	last := int64(tm.ElemBytes) // one past the tensor's last byte
	for i := range r {
		if tm.Dims[i] < 1 || tm.Dims[i] > 1<<31 || tm.Box[i] < 1 || tm.Box[i] > 256 {
			return nil, fmt.Errorf("tensor map dimension %d: size %d and box %d must be ≥ 1 (box ≤ 256)", i, tm.Dims[i], tm.Box[i])
		}
		binary.LittleEndian.PutUint32(b[16+4*i:], uint32(tm.Dims[i]))
		binary.LittleEndian.PutUint32(b[36+4*i:], uint32(tm.Box[i]))
		stride := int64(tm.ElemBytes)
		if i > 0 {
			stride = tm.Strides[i-1]
			if stride%16 != 0 || stride <= 0 || stride >= 1<<40 {
				return nil, fmt.Errorf("tensor map stride %d of %d bytes: it must be a positive multiple of 16", i, stride)
			}
			binary.LittleEndian.PutUint64(b[56+8*(i-1):], uint64(stride))
		}
		last += int64(tm.Dims[i]-1) * stride
	}
	if tm.Offset+last > int64(len(tm.Buffer.Data)) {
		return nil, fmt.Errorf("the tensor map's tensor ends at byte %d of buffer %q, which has %d", tm.Offset+last, tm.Buffer.Name, len(tm.Buffer.Data))
	}
	return b, nil
}

// tmap is a tensor map read back from its layout.
type tmap struct {
	rank, elem, swz int
	base            uint64
	dims, box       [5]int64
	strides         [5]int64
}

// decodeTmap reads a tensor map's layout back, checking every field as encode does (nbufs: the
// launch's buffers, which base must lie in); it reports false for bytes encode cannot have made.
func decodeTmap(b []byte, nbufs int) (tmap, bool) {
	t := tmap{rank: int(b[4]), elem: int(b[5]), swz: int(b[6])}
	if binary.LittleEndian.Uint32(b) != tmapMagic || t.rank < 1 || t.rank > 5 ||
		(t.elem != 1 && t.elem != 2 && t.elem != 4 && t.elem != 8) || (t.swz != 0 && t.swz != 1 && t.swz != 2 && t.swz != 4) {
		return t, false
	}
	t.base = binary.LittleEndian.Uint64(b[8:])
	if bi := t.base >> windowShift; bi < 2 || bi-1 >= uint64(nbufs) { // L.bufs[bi-1], as tensorBox reads
		return t, false
	}
	t.strides[0] = int64(t.elem)
	for i := range t.rank {
		t.dims[i] = int64(binary.LittleEndian.Uint32(b[16+4*i:]))
		t.box[i] = int64(binary.LittleEndian.Uint32(b[36+4*i:]))
		if t.dims[i] < 1 || t.dims[i] > 1<<31 || t.box[i] < 1 || t.box[i] > 256 {
			return t, false
		}
		if i > 0 {
			t.strides[i] = int64(binary.LittleEndian.Uint64(b[56+8*(i-1):]))
			if t.strides[i]%16 != 0 || t.strides[i] <= 0 || t.strides[i] >= 1<<40 {
				return t, false
			}
		}
	}
	return t, t.box[0]*int64(t.elem)%16 == 0
}

// tensorMapAt returns the tensor map the launcher made at the generic address addr (a
// TensorMapArg parameter's), faulting if there is none there or its rank is not the copy's: a
// kernel cannot make one in memory of its own (a copy in global memory has no map either).
func (c *cta) tensorMapAt(w *warp, in *inst, l int, addr uint64) tmap {
	t, ok := c.L.tmaps[addr]
	if !ok || t.rank != in.bulk.rank {
		c.fault(&Fault{Kind: "tensor map", Address: addr, Msg: fmt.Sprintf("%s's tensor map at %#x is not a %d-D tensor map the launcher made (a `const __grid_constant__ CUtensorMap` parameter: vgpu.TensorMapArg, a cell's tensor_maps)", in.bulkName(), addr, in.bulk.rank)}, w, l, in)
	}
	return t
}

// boxBytes is t's box size in bytes, faulting when it is more than the CTA's shared memory (the
// destination or source of the copy) before anything of that size is made.
func (c *cta) boxBytes(w *warp, in *inst, l int, t tmap) int64 {
	n := int64(t.elem)
	for i := range t.rank {
		n *= t.box[i] // ≤ 8·256^5 = 2^43
	}
	if n > int64(len(c.shared)) {
		c.fault(&Fault{Kind: "out of bounds", Space: "shared", Msg: fmt.Sprintf("%s's box %v of %d-byte elements is %d bytes, more than the block's %d bytes of shared memory", in.bulkName(), t.box[:t.rank], t.elem, n, len(c.shared))}, w, l, in)
	}
	return n
}

// checkDone ends the CTA with ctx's error when the launch's context is done (for long loops
// within one instruction; step checks it between quanta).
func (c *cta) checkDone() {
	select {
	case <-c.done:
		panic(faultPanic{c.L.ctx.Err()})
	default:
	}
}

// bulkOp is a decoded cp.async.bulk{.tensor}; the destination is the inst's address (in.a, in.off).
type bulkOp struct {
	store   bool // shared to global (.bulk_group)
	rank    int  // 0: the 1-D copy; 1..5: cp.async.bulk.tensor.Nd
	src     int32
	srcOff  int64    // the source (1-D) or tensor map address
	size    int32    // the 1-D copy's size register
	coords  [5]int32 // the tensor coordinates' registers
	mbar    int32
	mbarOff int64
	mcast   bool  // .multicast::cluster: to the CTAs of the mask (cta mask register)
	mask    int32 // the 16-bit CTA mask's register
	group   byte  // cp.async.bulk.commit_group 'c', wait_group 'w', wait_group.read 'r' (tmastorerace.go)
	wait    int   // wait_group's N
}

// bulkCopy is one copy in flight, until a wait on its barrier completes it.
type bulkCopy struct {
	w    *warp
	lane int
	pc   int32
	mbar uint32 // shared offset of the barrier
	dst  uint32 // shared offset of the destination's first byte
	span uint32 // the destination's bytes (the data rounded up to 128 with a swizzle)
	swz  int    // swizzle bits k (0: none)
	data []byte
	// phase is the barrier's phase when the copy was issued: its bytes must complete that phase.
	phase uint32
}

// maxBulkInFlight bounds the copies a CTA has in flight, and bulkInFlightFactor their bytes
// (each holds its data): at most that many times the CTA's shared memory, the most a pipeline
// whose copies land in distinct shared memory can have in flight (times two for slack).
const (
	maxBulkInFlight    = 1 << 12
	bulkInFlightFactor = 2
)

// decodeBulk decodes the two copy forms above.
func (d *decoder) decodeBulk(in *inst, m mods, s pinst) error {
	switch {
	case oneOf(m, "commit_group", "wait_group") != "":
		return d.decodeBulkGroup(in, m, s)
	case oneOf(m, "bulk_group") != "":
		return d.decodeBulkStore(in, m, s)
	}
	op := &bulkOp{src: -1, size: -1, mbar: -1}
	in.bulk, in.class = op, ClassLoad
	hint, err := d.bulkModifiers(op, m)
	if err != nil {
		return err
	}
	if !strings.Contains(s.op, ".global") || !strings.Contains(s.op, ".shared") || !strings.Contains(s.op, "complete_tx") ||
		(op.rank == 0) == strings.Contains(s.op, ".tensor") {
		return d.errf("only copies from global to shared memory completing on an mbarrier are supported")
	}
	args := s.args
	if hint && len(args) > 0 {
		args = args[:len(args)-1] // the cache policy: a hint
	}
	want := 4
	if op.rank > 0 {
		want = 3
	}
	if op.mcast { // the CTA mask follows [mbar]
		if len(args) != want+1 {
			return d.errf(".multicast::cluster takes a 16-bit ctaMask operand after [mbar]")
		}
		if op.mask, err = d.src(args[want], parseType("b16")); err != nil {
			return err
		}
		args = args[:want]
	}
	if len(args) != want || args[0].kind != oAddr || args[1].kind != oAddr || args[want-1].kind != oAddr {
		return d.errf("takes %d operands: [dst], %s, [mbar]%s", want, map[bool]string{true: "[tmap, {coordinates}]", false: "[src], size"}[op.rank > 0],
			map[bool]string{true: ", ctaMask"}[op.mcast])
	}
	if err := d.address(in, args[0], spShared); err != nil {
		return err
	}
	var tmp inst
	if err := d.address(&tmp, args[want-1], spShared); err != nil {
		return err
	}
	op.mbar, op.mbarOff = tmp.a, tmp.off
	src := args[1]
	if err := d.address(&tmp, operand{kind: oAddr, name: src.name, off: src.off}, spGeneric); err != nil {
		return err
	}
	op.src, op.srcOff = tmp.a, tmp.off
	in.space, in.exec = spShared, execBulk
	if op.rank == 0 {
		op.size, err = d.src(args[2], parseType("u32"))
		return err
	}
	if len(src.elems) != op.rank {
		return d.errf("a %d-D tensor copy takes %d coordinates, found %d", op.rank, op.rank, len(src.elems))
	}
	for i, e := range src.elems {
		r, err := d.src(e, parseType("s32"))
		if err != nil {
			return err
		}
		op.coords[i] = r
	}
	return nil
}

// bulkModifiers reads a copy's modifiers into op: its rank and multicast; hint says a cache-policy
// operand follows.
func (d *decoder) bulkModifiers(op *bulkOp, m mods) (hint bool, err error) {
	for _, w := range m.words {
		switch w {
		case "async", "bulk", "tensor", "tile", "shared::cluster", "mbarrier::complete_tx::bytes":
		case "1d", "2d", "3d", "4d", "5d":
			op.rank = int(w[0] - '0')
		case "L2::cache_hint":
			hint = true
		case "multicast::cluster":
			op.mcast = true
		case "im2col", "im2col::w", "im2col::w::128", "tile::gather4", "tile::scatter4":
			return false, d.errf("cp.async.bulk.tensor's .%s mode is not supported: only .tile mode copies boxes (PTX ISA 8.x, \"Tensor Access Modes\"; im2col's convolution patches are not emulated)", w)
		default:
			return false, d.errf("unknown modifier .%s (cp.async.bulk{.tensor.Nd}.shared::cluster.global{.tile}.mbarrier::complete_tx::bytes{.multicast::cluster} is supported)", w)
		}
	}
	return hint, nil
}

// execBulk issues the copies of the lanes of m: checked and read now, written when completed.
func execBulk(w *warp, in *inst, m uint32) {
	c, op := w.c, in.bulk
	c.tmaRequests++
	for t := m; t != 0; t &= t - 1 {
		l := bits.TrailingZeros32(t)
		cp := bulkCopy{w: w, lane: l, pc: in.self}
		cp.mbar = c.bulkBarrierOff(w, in, l)
		dst := uint64(in.off)
		if in.a >= 0 {
			dst += w.regs[in.a][l]
		}
		src := uint64(op.srcOff)
		if op.src >= 0 {
			src += w.regs[op.src][l]
		}
		if op.rank == 0 {
			n := int(uint32(w.regs[op.size][l]))
			if n%16 != 0 || n == 0 {
				c.fault(&Fault{Kind: "misaligned", Msg: fmt.Sprintf("cp.async.bulk of %d bytes: the size must be a non-zero multiple of 16", n)}, w, l, in)
			}
			cp.data = append([]byte(nil), c.bulkRange(w, in, l, src, n, spGlobal, accLoad)...)
		} else {
			cp.data, cp.swz = c.tensorBox(w, in, l, src)
		}
		span := len(cp.data)
		if cp.swz > 0 { // the swizzle moves chunks within 128-byte rows
			span = (span + 127) &^ 127
		}
		off := c.sharedOff(dst)
		if align := map[bool]uint64{true: 128, false: 16}[op.rank > 0]; off%align != 0 {
			c.fault(&Fault{Kind: "misaligned", Space: "shared", Address: off, Msg: fmt.Sprintf("%s destination at shared offset %d: it must be %d-byte aligned", in.bulkName(), off, align)}, w, l, in)
		}
		c.bulkRange(w, in, l, dst, span, spShared, accStore)
		cp.dst, cp.span = uint32(off), uint32(span)
		c.tmaBytes += int64(len(cp.data))
		if !op.mcast {
			c.enqueueBulk(c, w, in, l, cp)
			continue
		}
		for _, to := range c.multicastTargets(w, in, l, uint16(w.regs[op.mask][l])) {
			c.enqueueBulk(to, w, in, l, cp)
			c.tmaMulticastBytes += int64(len(cp.data))
		}
	}
}

// enqueueBulk puts lane l's copy cp in flight to the shared memory of CTA to (c's own, or one of
// its cluster's for a multicast), checking its barrier there and the bounds on copies in flight.
func (c *cta) enqueueBulk(to *cta, w *warp, in *inst, l int, cp bulkCopy) {
	if to.mbars[cp.mbar] == nil {
		c.fault(&Fault{Kind: "barrier", Space: "shared", Address: uint64(cp.mbar), Msg: fmt.Sprintf("%s completes on shared offset %d of CTA rank %d, which no mbarrier.init initialised", in.bulkName(), cp.mbar, to.rank)}, w, l, in)
	}
	if len(to.bulk) >= maxBulkInFlight {
		c.fault(&Fault{Kind: "unsupported", Msg: fmt.Sprintf("more than %d bulk copies in flight with no wait on their mbarriers", maxBulkInFlight)}, w, l, in)
	}
	if limit := bulkInFlightFactor * int64(len(to.shared)); to.bulkBytes+int64(len(cp.data)) > limit {
		c.fault(&Fault{Kind: "unsupported", Msg: fmt.Sprintf("more than %d bytes of bulk copies in flight (%d times the block's shared memory) with no wait on their mbarriers", limit, bulkInFlightFactor)}, w, l, in)
	}
	to.tmaIssue(w, in, l, cp) // the hazard check of the destination (tmarace.go)
	if b := to.mbars[cp.mbar]; b != nil {
		cp.phase = b.phase
	}
	to.bulk = append(to.bulk, cp)
	to.bulkBytes += int64(len(cp.data))
}

// multicastTargets are the running CTAs of c's cluster whose ranks are set in mask (a CTA alone
// is a cluster of one, rank 0), faulting on an empty mask or a rank outside the cluster.
func (c *cta) multicastTargets(w *warp, in *inst, l int, mask uint16) []*cta {
	ctas := []*cta{c}
	if c.cl != nil {
		ctas = c.cl.ctas
	}
	if mask == 0 || int(bits.Len16(mask)) > len(ctas) {
		c.fault(&Fault{Kind: "out of bounds", Space: "shared::cluster", Msg: fmt.Sprintf("%s.multicast::cluster with CTA mask %#04x in a cluster of %d CTAs: the mask must name at least one CTA, and only ranks 0..%d", in.bulkName(), mask, len(ctas), len(ctas)-1)}, w, l, in)
	}
	var out []*cta
	for r, o := range ctas {
		if mask>>r&1 == 0 {
			continue
		}
		if o.exited() {
			c.fault(&Fault{Kind: "out of bounds", Space: "shared::cluster", Msg: fmt.Sprintf("%s.multicast::cluster to CTA rank %d of the cluster, which has exited: its shared memory is gone", in.bulkName(), r)}, w, l, in)
		}
		out = append(out, o)
	}
	return out
}

func (in *inst) bulkName() string {
	if in.bulk.rank > 0 {
		return fmt.Sprintf("cp.async.bulk.tensor.%dd", in.bulk.rank)
	}
	return "cp.async.bulk"
}

// sharedOff is a shared address (a generic one in the shared window, or a shared offset) as an
// offset into the CTA's shared memory.
func (c *cta) sharedOff(a uint64) uint64 {
	if a >= sharedWindow && a < sharedWindow+1<<32 {
		return a - sharedWindow
	}
	return a
}

// bulkRange checks the n bytes at addr in space sp (16-byte aligned) and returns them.
func (c *cta) bulkRange(w *warp, in *inst, l int, addr uint64, n int, sp uint8, mode int) []byte {
	if sp == spShared {
		addr = c.sharedOff(addr)
	}
	first, got, _ := c.resolve(w, in, l, addr, 16, sp, mode) // faults if misaligned or outside
	if got != sp {
		c.fault(&Fault{Kind: "unsupported", Address: addr, Msg: in.bulkName() + " to or from another CTA's shared memory"}, w, l, in)
	}
	if n > 16 {
		c.resolve(w, in, l, addr+uint64(n)-16, 16, sp, mode)
	}
	return first[:n]
}

// bulkBarrierOff returns the shared offset of lane l's mbarrier (in the issuing CTA's shared
// memory; a multicast completes on the barrier at that offset in each CTA of its mask).
func (c *cta) bulkBarrierOff(w *warp, in *inst, l int) uint32 {
	op := in.bulk
	addr := uint64(op.mbarOff)
	if op.mbar >= 0 {
		addr += w.regs[op.mbar][l]
	}
	_, _, off := c.resolve(w, in, l, c.sharedOff(addr), 8, spShared, accAtomic)
	return uint32(off)
}

// tensorBox reads lane l's tensor map at addr and the box at its coordinates: the box's bytes,
// packed innermost first with zeros outside the tensor, and the map's swizzle bits.
func (c *cta) tensorBox(w *warp, in *inst, l int, addr uint64) ([]byte, int) {
	op := in.bulk
	t := c.tensorMapAt(w, in, l, addr)
	size := c.boxBytes(w, in, l, t)
	var at [5]int64
	n, outside := size/int64(t.elem), false
	for i := range t.rank {
		at[i] = int64(int32(w.regs[op.coords[i]][l]))
		outside = outside || at[i] >= t.dims[i] || at[i]+t.box[i] <= 0
	}
	if outside {
		c.fault(&Fault{Kind: "out of bounds", Msg: fmt.Sprintf("%s's box at coordinates %v (box %v) lies entirely outside its tensor of %v elements", in.bulkName(), at[:t.rank], t.box[:t.rank], t.dims[:t.rank])}, w, l, in)
	}
	mem := c.L.bufs[t.base>>windowShift-1]
	base := int64(t.base & offsetMask)
	out := make([]byte, size)
	var idx [5]int64
	for e := int64(0); e < n; e++ {
		if e%4096 == 4095 {
			c.checkDone()
		}
		off, inside := base, true
		for i := range t.rank {
			g := at[i] + idx[i]
			inside = inside && g >= 0 && g < t.dims[i]
			off += g * t.strides[i]
		}
		if inside {
			copy(out[e*int64(t.elem):], mem[off:off+int64(t.elem)])
		}
		for i := 0; i < t.rank; i++ { // the next element, innermost first
			if idx[i]++; idx[i] < t.box[i] {
				break
			}
			idx[i] = 0
		}
	}
	return out, map[int]int{1: 1, 2: 2, 4: 3}[t.swz]
}

// completeBulk completes the copies in flight on the barrier at off (all of them when all is
// set): their bytes are written to shared memory and completed on their barrier. It reports
// whether it completed any.
func (c *cta) completeBulk(off uint32, all bool) bool {
	keep, done := c.bulk[:0], false
	var later []bulkCopy
	for _, cp := range c.bulk {
		if !all && cp.mbar != off {
			keep = append(keep, cp)
			continue
		}
		later = append(later, cp)
	}
	c.bulk = keep
	for _, cp := range later {
		c.bulkBytes -= int64(len(cp.data))
		c.writeBulk(cp)
		if b := c.mbars[cp.mbar]; b != nil { // an mbarrier.inval in between: the bytes go nowhere
			c.checkBulkPhase(cp, b)
			b.tx -= int64(len(cp.data))
			c.mbarComplete(cp.mbar, b)
		}
		done = true
	}
	return done
}

// checkBulkPhase faults where copy cp completes on a later phase of its barrier b than the one it
// was issued in: that phase completed without its bytes, because the expect_tx transaction count
// was lower than the bytes its copies bring (or none was announced), so the phase's waiters could
// read the destination before the copy landed. On a GPU the surplus bytes make a later phase's
// tx-count negative; here they would also land after the wait, so the run would go on unwarned.
func (c *cta) checkBulkPhase(cp bulkCopy, b *mbarrier) {
	if b.phase == cp.phase {
		return
	}
	in := &c.prog.code[cp.pc]
	c.fault(&Fault{Kind: "barrier", Space: "shared", Address: uint64(cp.mbar), Msg: fmt.Sprintf("%s's %d bytes were to complete phase %d of the mbarrier at shared offset %d, which completed without them (the barrier is at phase %d): the expect_tx transaction count is lower than the bytes the phase's copies bring, so its waiters may read the destination before the copy lands", in.bulkName(), len(cp.data), cp.phase, cp.mbar, b.phase)}, cp.w, cp.lane, in)
}

// writeBulk writes cp's bytes to shared memory (swizzled) and marks them written.
func (c *cta) writeBulk(cp bulkCopy) {
	in := &c.prog.code[cp.pc]
	c.unmarkBulk(cp) // tmarace.go
	for i := 0; i < len(cp.data); i += 16 {
		a := cp.dst + uint32(i)
		if cp.swz > 0 {
			a ^= (a >> 7 & (1<<cp.swz - 1)) << 4
		}
		copy(c.shared[a:a+16], cp.data[i:i+16])
		c.wg.markAsync(c, cp.w, cp.lane, in, uint64(a), 16) // an async-proxy write: no fence needed before a wgmma
		if c.sFull < len(c.swritten) {
			cp.w.addr[cp.lane] = uint64(a)
			c.initShared(cp.w, in, 1<<cp.lane, 16, accStore)
		}
	}
}

// setTensorMap writes parameter i's tensor map (p: the parameter) from tm.
func (L *launch) setTensorMap(i int, p Param, tm *TensorMap, index map[*Buffer]int) error {
	bi, ok := index[tm.Buffer]
	if tm.Buffer == nil || !ok {
		return fmt.Errorf("parameter %d (%s): the tensor map's buffer is not in Buffers", i, p.Name)
	}
	b, err := tm.encode(uint64(bi+2)<<windowShift + uint64(tm.Offset))
	if err != nil {
		return fmt.Errorf("parameter %d (%s): %w", i, p.Name, err)
	}
	copy(L.params[p.Offset:], b)
	t, ok := decodeTmap(b, len(L.bufs))
	if !ok {
		return fmt.Errorf("parameter %d (%s): internal error: the tensor map does not decode", i, p.Name)
	}
	if L.tmaps == nil {
		L.tmaps = map[uint64]tmap{}
	}
	L.tmaps[paramWindow+uint64(p.Offset)] = t
	return nil
}

// decodeBulkStore decodes the copies from shared to global memory (TMA stores):
//
//	cp.async.bulk.global.shared::cta.bulk_group{.L2::cache_hint} [dst], [src], size{, policy};
//	cp.async.bulk.tensor.Nd.global.shared::cta{.tile}.bulk_group{.L2::cache_hint} [tmap, {c0, …}], [src]{, policy};
//
// with cp.async.bulk.commit_group and cp.async.bulk.wait_group{.read} N. The virtual GPU does the
// store when it is issued (a legal schedule: the copy completes some time before the wait), so
// the waits have nothing left to wait for; box elements outside the tensor are not written.
func (d *decoder) decodeBulkStore(in *inst, m mods, s pinst) error {
	op := &bulkOp{store: true, src: -1, size: -1, mbar: -1}
	in.bulk, in.class = op, ClassStore
	for _, w := range m.words {
		switch w {
		case "async", "bulk", "tensor", "tile", "bulk_group", "L2::cache_hint":
		case "1d", "2d", "3d", "4d", "5d":
			op.rank = int(w[0] - '0')
		default:
			return d.errf("unknown modifier .%s (cp.async.bulk{.tensor.Nd}.global.shared::cta{.tile}.bulk_group is supported)", w)
		}
	}
	args := s.args
	if oneOf(m, "L2::cache_hint") != "" && len(args) > 0 {
		args = args[:len(args)-1]
	}
	want := 3
	if op.rank > 0 {
		want = 2
	}
	if !strings.Contains(s.op, ".global.shared") || len(args) != want || args[0].kind != oAddr || args[1].kind != oAddr ||
		(op.rank == 0) == strings.Contains(s.op, ".tensor") {
		return d.errf("expects %d operands, from shared to global memory", want)
	}
	if err := d.address(in, args[1], spShared); err != nil { // the shared source
		return err
	}
	var tmp inst
	dst := args[0]
	if err := d.address(&tmp, operand{kind: oAddr, name: dst.name, off: dst.off}, spGeneric); err != nil {
		return err
	}
	op.src, op.srcOff = tmp.a, tmp.off // the global destination or the tensor map
	in.space, in.exec = spShared, execBulkStore
	if op.rank == 0 {
		var err error
		op.size, err = d.src(args[2], parseType("u32"))
		return err
	}
	if len(dst.elems) != op.rank {
		return d.errf("a %d-D tensor copy takes %d coordinates, found %d", op.rank, op.rank, len(dst.elems))
	}
	for i, e := range dst.elems {
		r, err := d.src(e, parseType("s32"))
		if err != nil {
			return err
		}
		op.coords[i] = r
	}
	return nil
}

// decodeBulkGroup decodes cp.async.bulk.commit_group and cp.async.bulk.wait_group{.read} N (the
// virtual GPU does a store when it is issued; the hazard checks follow the groups: tmastorerace.go).
func (d *decoder) decodeBulkGroup(in *inst, m mods, s pinst) error {
	op := &bulkOp{group: 'c'}
	in.bulk, in.class, in.exec = op, ClassOther, execBulkGroup
	if oneOf(m, "commit_group") != "" {
		return d.nargs(s, 0)
	}
	op.group = 'w'
	if oneOf(m, "read") != "" {
		op.group = 'r'
	}
	if len(s.args) != 1 || s.args[0].kind != oImm || s.args[0].bits > 63 {
		return d.errf("cp.async.bulk.wait_group takes a constant N in 0..63")
	}
	op.wait = int(s.args[0].bits)
	return nil
}

// execBulkStore does the stores of the lanes of m.
func execBulkStore(w *warp, in *inst, m uint32) {
	c, op := w.c, in.bulk
	c.tmaRequests++
	for t := m; t != 0; t &= t - 1 {
		l := bits.TrailingZeros32(t)
		src := uint64(in.off)
		if in.a >= 0 {
			src += w.regs[in.a][l]
		}
		dst := uint64(op.srcOff)
		if op.src >= 0 {
			dst += w.regs[op.src][l]
		}
		if op.rank == 0 {
			n := int(uint32(w.regs[op.size][l]))
			if n%16 != 0 || n == 0 {
				c.fault(&Fault{Kind: "misaligned", Msg: fmt.Sprintf("cp.async.bulk of %d bytes: the size must be a non-zero multiple of 16", n)}, w, l, in)
			}
			from := c.bulkRange(w, in, l, src, n, spShared, accLoad)
			c.storeIssue(w, in, l, c.sharedOff(src), n) // tmastorerace.go
			copy(c.bulkRange(w, in, l, dst, n, spGlobal, accStore), from)
			c.markGlobal(w, in, l, dst, n)
			c.tmaBytes += int64(n)
			continue
		}
		c.tensorStore(w, in, l, dst, src)
	}
}

// tensorStore writes lane l's box from shared memory at src (swizzled as the map says) to the
// tensor of the map at tmAddr, skipping the elements outside the tensor.
func (c *cta) tensorStore(w *warp, in *inst, l int, tmAddr, src uint64) {
	op := in.bulk
	t := c.tensorMapAt(w, in, l, tmAddr)
	size := c.boxBytes(w, in, l, t)
	n := size / int64(t.elem)
	if off := c.sharedOff(src); off%128 != 0 {
		c.fault(&Fault{Kind: "misaligned", Space: "shared", Address: off, Msg: fmt.Sprintf("%s source at shared offset %d: it must be 128-byte aligned", in.bulkName(), off)}, w, l, in)
	}
	span := (size + 127) &^ 127
	box := c.bulkRange(w, in, l, src, int(span), spShared, accLoad)
	k := map[int]int{1: 1, 2: 2, 4: 3}[t.swz]
	if k == 0 {
		span = size // unswizzled, the store reads the box's bytes only
	}
	c.storeIssue(w, in, l, c.sharedOff(src), int(span)) // tmastorerace.go
	base := c.sharedOff(src)
	mem := c.L.bufs[t.base>>windowShift-1]
	var idx [5]int64
	for e := int64(0); e < n; e++ {
		if e%4096 == 4095 {
			c.checkDone()
		}
		off, inside := int64(t.base&offsetMask), true
		for i := range t.rank {
			g := int64(int32(w.regs[op.coords[i]][l])) + idx[i]
			inside = inside && g >= 0 && g < t.dims[i]
			off += g * t.strides[i]
		}
		if inside {
			a := base + uint64(e)*uint64(t.elem)
			if k > 0 {
				a ^= (a >> 7 & (1<<k - 1)) << 4
			}
			copy(mem[off:off+int64(t.elem)], box[a-base:])
			c.markGlobal(w, in, l, t.base&^offsetMask+uint64(off), t.elem)
			c.tmaBytes += int64(t.elem)
		}
		for i := 0; i < t.rank; i++ {
			if idx[i]++; idx[i] < t.box[i] {
				break
			}
			idx[i] = 0
		}
	}
}

// markGlobal marks the n bytes at the global address a written, for the initcheck.
func (c *cta) markGlobal(w *warp, in *inst, l int, a uint64, n int) {
	c.storeDest(w, in, l, a, n) // tmastorerace.go
	for i := 0; i < n; i += 16 {
		w.addr[l] = a + uint64(i)
		c.initGlobal(w, in, 1<<l, min(16, n-i), accStore)
	}
}
