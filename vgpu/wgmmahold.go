package vgpu

import (
	"fmt"
	"reflect"
)

// wgmma's results are delivered at the wait (PTX ISA 8.x, section 9.7.15.7.3 "wgmma.wait_group":
// accessing the accumulator registers of a wgmma.mma_async before a wgmma.wait_group that waits
// on a group containing it is undefined behaviour; section 9.7.15.7.1 "wgmma.fence": accumulator
// accesses across wgmma.mma_async instructions of the same shape are ordered without a fence).
//
// A wgmma.mma_async computes its D when it executes, but holds it: each accumulator register
// keeps its old value, and the new one (a heldReg) is written when a wgmma.wait_group completes
// the wgmma's group. A later wgmma.mma_async of the warp accumulating into a held register reads
// the held value (the chaining the ISA orders by default). A kernel that forgets the wait sees the
// old values, as the ISA allows (ptxas 12.4, finding such a read, serialises the kernel's wgmma
// instead and warns "C7514 Potential Performance Loss: wgmma.mma_async instructions are serialized
// due to non wgmma instructions reading accumulator registers", so a GPU may show the product,
// slowly); with the hazard check on (LaunchConfig.NoRacecheck false) any other instruction reading
// or writing a held register is a "hazard" fault at its line naming the wgmma's, a check
// compute-sanitizer does not make.
//
// One exception: a mov from a held register to another (NVVM's copies of loop-carried
// accumulators, which ptxas coalesces into the same physical registers) copies the hold: the
// destination is held with the source's pending value and gets it at the same wait; any other
// access of the copy before that wait is the same hazard, naming the wgmma.
//
// The check is hooked at decode (holdWgmmaResults): in a program with wgmma.mma_async, the
// instructions naming one of its accumulator registers as d, d2, a, b, c or a vector element run
// through heldAccess first; no other instruction pays anything.

// heldReg is an accumulator register's pending value: the wgmma that produces it (its number in
// the warp, wgWarp.issued, and its instruction) and the value per lane.
type heldReg struct {
	seq uint32
	pc  int32
	val [warpSize]uint64
}

// holdWgmmaResults wraps the exec of every instruction of p that names an accumulator register of
// one of p's wgmma.mma_async (none if p has none).
func holdWgmmaResults(p *program) {
	acc := map[int32]bool{}
	for i := range p.code {
		if op := p.code[i].wg; op != nil && op.kind == wgMma {
			for _, r := range op.d {
				acc[r] = true
			}
		}
	}
	if len(acc) == 0 {
		return
	}
	mov := reflect.ValueOf(execMov).Pointer()
	copiesOfHeld(p, acc, mov)
	for i := range p.code {
		in := &p.code[i]
		if in.wg != nil || in.exec == nil || in.ctl != ctlNone || !touchesAny(in, acc) {
			continue
		}
		orig, isMov := in.exec, reflect.ValueOf(in.exec).Pointer() == mov
		in.exec = func(w *warp, in *inst, m uint32) {
			if w.c.wg == nil || len(w.c.wg.warps) <= w.id || len(w.c.wg.warps[w.id].held) == 0 {
				orig(w, in, m)
				return
			}
			w.c.heldAccess(w, in, m, orig, isMov)
		}
	}
}

// copiesOfHeld adds to acc the registers a mov copies an accumulator into, and their copies, until
// none is added: a mov copies the hold (heldAccess), so a read of the copy before the wait is the
// same hazard as a read of the accumulator. mov is execMov's code pointer.
func copiesOfHeld(p *program, acc map[int32]bool, mov uintptr) {
	for grown := true; grown; {
		grown = false
		for i := range p.code {
			in := &p.code[i]
			if in.wg != nil || in.exec == nil || in.a <= 0 || in.d <= 0 || !acc[in.a] || acc[in.d] ||
				reflect.ValueOf(in.exec).Pointer() != mov {
				continue
			}
			acc[in.d], grown = true, true
		}
	}
}

// operandRegs lists the data registers in names: d, d2, a, b, c and its vector elements.
// Register 0 is the zero constant of absent operands, never an accumulator.
func operandRegs(in *inst) []int32 {
	rs := []int32{in.d, in.d2, in.a, in.b, in.c}
	for i := range min(int(in.nvec), len(in.vec)) {
		rs = append(rs, in.vec[i])
	}
	return rs
}

func touchesAny(in *inst, acc map[int32]bool) bool {
	for _, r := range operandRegs(in) {
		if r > 0 && acc[r] {
			return true
		}
	}
	return false
}

// heldAccess runs in (exec: its own) for the lanes m of w, whose wgmma state holds registers: a
// mov from a held register copies the hold; any other access of a held register faults with the
// hazard check on and otherwise sees the register's old value.
func (c *cta) heldAccess(w *warp, in *inst, m uint32, exec func(*warp, *inst, uint32), isMov bool) {
	g := &c.wg.warps[w.id]
	if isMov {
		if src := g.held[in.a]; src != nil && in.a > 0 {
			exec(w, in, m)
			h := g.held[in.d]
			if h == nil {
				h = &heldReg{val: w.regs[in.d]}
				g.held[in.d] = h
			}
			h.seq, h.pc = src.seq, src.pc
			for l := range warpSize {
				if m>>l&1 != 0 {
					h.val[l] = src.val[l]
				}
			}
			return
		}
	}
	if c.L.racecheck {
		for _, r := range operandRegs(in) {
			if h := g.held[r]; h != nil && r > 0 {
				c.heldFault(w, in, m, h)
			}
		}
	}
	exec(w, in, m)
}

// heldFault reports an access of an accumulator register the wgmma h holds.
func (c *cta) heldFault(w *warp, in *inst, m uint32, h *heldReg) {
	mma := &c.prog.code[h.pc]
	f := &Fault{Kind: "hazard", Space: "register",
		OtherThread: c.threadXYZ(w.first), OtherLine: int(mma.line), OtherSource: c.L.source(mma.loc),
		OtherInstr: c.L.mod.Line(int(mma.line)),
		Msg:        fmt.Sprintf("an access to an accumulator register of the wgmma.mma_async at PTX line %d before a wgmma.wait_group waits for its group: the register's value is undefined until then (ptxas, seeing the read, serialises the kernel's wgmma instructions, warning C7514 \"Potential Performance Loss\"). Commit the wgmma (wgmma.commit_group) and wait (wgmma.wait_group N) before reading or writing its accumulators (PTX ISA 8.x, section 9.7.15.7.3 \"wgmma.wait_group\")", mma.line)}
	c.fault(f, w, firstLane(m), in)
}

// accIn is lane l's accumulator input of register r for a wgmma: the held value if an earlier
// wgmma of the warp holds r, else the register.
func (g *wgWarp) accIn(w *warp, r int32, l int) uint64 {
	if h := g.held[r]; h != nil {
		return h.val[l]
	}
	return w.regs[r][l]
}

// hold makes register r's new value v for lane l of w pending on the wgmma numbered seq at pc. A
// register not held yet starts from its value in every lane, which the lanes after l still read as
// their accumulator input (accIn).
func (g *wgWarp) hold(w *warp, r int32, l int, v uint64, seq uint32, pc int32) {
	if g.held == nil {
		g.held = map[int32]*heldReg{}
	}
	h := g.held[r]
	if h == nil {
		h = &heldReg{val: w.regs[r]}
		g.held[r] = h
	}
	h.seq, h.pc = seq, pc
	h.val[l] = v
}

// deliver writes every held value whose wgmma a wait completed (seq ≤ g.done) to its register.
func (g *wgWarp) deliver(w *warp) {
	for r, h := range g.held {
		if h.seq <= g.done {
			w.regs[r] = h.val
			delete(g.held, r)
		}
	}
}
