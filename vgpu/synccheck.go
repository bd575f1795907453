package vgpu

import "math/bits"

// Synccheck for a barrier that some threads of a block skip.
//
// A block's barrier (bar.sync, __syncthreads()) is released once every thread that has not exited
// waits at it: a thread that has exited takes no part (PTX ISA 9.0, section 9.7.13.1 "bar": "exit"
// counts as arriving on sm_70 and later), so `if (i >= n) return;` before a __syncthreads() is
// legal. A thread that goes past a barrier without waiting at it, while others of its block wait
// there, is the kernel's bug (`if (t < k) { …; __syncthreads(); } out[t] = …;`, `if (t % 2 == 0)
// __syncthreads();`): compute-sanitizer's synccheck reports it as a barrier in divergent code; the
// CUDA C++ Programming Guide ("Synchronization Functions") allows __syncthreads() in conditional
// code only if the condition evaluates identically across the whole block.
//
// "Went past" is decided with the program's control flow: the instructions after barrier b are
// those that can be reached from b and lie after it in the code (its past set; branches, ret,
// exit and nops left out: they do nothing a reader would see). A thread that, since the barrier it
// last waited at (which lies before b, or none), executed one of b's past set and then exited
// while the others waited at b, skipped b. An exit in a loop after the loop's barriers, an early
// return placed anywhere in the code, and a thread that never reaches b's code are not skips.

// maxCheckedBarriers is how many of a kernel's barrier instructions are checked for skips (the
// bits of inst.past); later ones are not.
const maxCheckedBarriers = 64

// markPastBarriers fills p.bars (the barrier instructions, in code order) and each instruction's
// past bits: bit k when it is in the past set of p.bars[k]. With line information (.loc), an
// instruction is in a barrier's past set only if its source line is after the barrier's in the same
// file: code the compiler shares between paths (a store that both an early return's branch and
// the barrier's path end in, which has line 0) or moves is not "after" the barrier in the source.
func (p *program) markPastBarriers(locs []Loc) {
	p.bars = p.bars[:0]
	for i := range p.code {
		if p.code[i].ctl == ctlBar && len(p.bars) < maxCheckedBarriers {
			p.bars = append(p.bars, int32(i))
		}
	}
	seen := make([]bool, len(p.code))
	for k, b := range p.bars {
		clear(seen)
		stack := []int32{b + 1}
		for len(stack) > 0 {
			i := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if int(i) >= len(p.code) || seen[i] {
				continue
			}
			seen[i] = true
			in := &p.code[i]
			switch in.ctl {
			case ctlExit, ctlRet, ctlTrap:
			case ctlBra:
				stack = append(stack, in.target)
				if in.guard >= 0 {
					stack = append(stack, i+1)
				}
			default:
				stack = append(stack, i+1)
			}
			if i > b && in.ctl != ctlBra && in.ctl != ctlRet && in.ctl != ctlExit && in.ctl != ctlNop && sourceAfter(locs, in.loc, p.code[b].loc) {
				in.past |= 1 << k
			}
		}
	}
}

// sourceAfter reports whether the .loc at index loc is on a later source line than the one at
// index bar, in the same file; true where the barrier has no line information.
func sourceAfter(locs []Loc, loc, bar int32) bool {
	if bar < 0 || int(bar) >= len(locs) || locs[bar].Line == 0 {
		return true
	}
	if loc < 0 || int(loc) >= len(locs) {
		return false
	}
	return locs[loc].File == locs[bar].File && locs[loc].Line > locs[bar].Line
}

// markPast records that the lanes of m executed the instruction at pc, whose past bits are past
// (and, per barrier, the last such instruction of the warp: the line a report names).
func (w *warp) markPast(past uint64, m uint32, pc int32) {
	for ; past != 0; past &= past - 1 {
		k := bits.TrailingZeros64(past)
		w.past[k] |= m
		w.pastPC[k] = pc
	}
}

// checkSkipped is called as the barrier at code index b is released: a thread that exited since the
// last release, after going past b without waiting at it (see above), is a barrier error on the
// waiting thread (w, l) — the skipping thread and where it went are the fault's other thread.
func (c *cta) checkSkipped(b int32, w *warp, l int) {
	k := -1
	for i, x := range c.prog.bars {
		if x == b {
			k = i
		}
	}
	if k < 0 {
		return
	}
	for _, o := range c.warps {
		skipped := o.liveAtRelease &^ o.live & o.past[k]
		for t := skipped; t != 0; t &= t - 1 {
			s := bits.TrailingZeros32(t)
			if o.barPC[s] >= b { // last waited at b or a later barrier: a loop's exit, not a skip
				continue
			}
			a := &c.prog.code[o.pastPC[k]]
			f := &Fault{Kind: "barrier", Msg: "it waits at a __syncthreads() that another thread of its block went past without waiting and then exited (compute-sanitizer synccheck: a barrier in divergent code; CUDA C++ Programming Guide, \"Synchronization Functions\": allowed in conditional code only if the condition is the same for the whole block; if those threads returned early before the barrier after a store of their own, this can be a false alarm: NVRTC 12 merges such a store with the barrier path's, docs/vgpu-sanitizer.md)"}
			f.OtherThread = c.threadXYZ(o.first + s)
			f.OtherLine = int(a.line)
			f.OtherInstr = c.L.mod.Line(int(a.line))
			f.OtherSource = c.L.source(a.loc)
			c.fault(f, w, l, &c.prog.code[b])
		}
	}
}
