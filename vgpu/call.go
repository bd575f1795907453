package vgpu

import (
	"fmt"
	"math/bits"
	"strings"
)

// Device-function calls (PTX ISA 8.x, section 9.7.12.6 "call" and 9.7.12.7 "ret"; the ABI of
// section 7 "Abstracting the ABI": arguments and results pass through .param variables).
//
// A kernel's program holds the code of every .func it can call, each function with its own
// register range. Each thread has a stack in its local memory: a function's frame holds its
// parameters and results, its .local variables (the compilers' __local_depot), the .param
// variables of its call sequences and, for a function that can recurse, the save area of its
// registers. A call copies the arguments into the callee's frame; ret copies the results back.
// The per-lane call stack (return sites) lives beside the warp; lanes of a warp at different call
// depths are ordered by their whole call stack (see pickSlow), so a warp reconverges after a call
// and a divergent call waits for the lanes that skipped it.

const (
	// MaxCallDepth is the deepest call nesting a thread may reach ("stack overflow" beyond).
	MaxCallDepth = 256
	// RecursiveStackBytes is the local memory (stack) per thread of a kernel whose call graph
	// has a cycle (CUDA's default stack is 1 KiB per thread). A kernel without recursion gets
	// exactly what its deepest call chain needs. Either is at most MaxLocalBytes.
	RecursiveStackBytes = 16 << 10
)

type frameReg struct {
	reg int32
	off uint32
}

type funcInfo struct {
	fn             *Function
	callees        []int
	entry          int32
	regLo, regHi   int32
	predLo, predHi int32
	frameSize      int // bytes, a multiple of 16 (save area included)
	saveOff        int // recursive functions: where the registers are saved in the frame
	frameRegs      []frameReg
	params, rets   []int // frame offsets of the parameters and results
	recursive      bool
}

// callArg is one argument or result of a call site: a .param variable of the caller's frame
// (frameReg ≥ 0: its register holds the variable's local address) or a register (reg).
type callArg struct {
	reg, frameReg int32
	size          int
}

type callSite struct {
	args, rets []callArg
	caller     *funcInfo
	builtin    string // "vprintf", "__assertfail"
}

type frameRec struct {
	site int32  // the call instruction
	base uint32 // the caller's frame base
}

var builtins = map[string]bool{"vprintf": true, "__assertfail": true}

// callGraph returns the functions f can call, f first, and each one's callees (indices).
func callGraph(mod *Module, f *Function) ([]*Function, [][]int, error) {
	order := []*Function{f}
	index := map[string]int{f.Name: 0}
	var callees [][]int
	for i := 0; i < len(order); i++ {
		var cs []int
		for _, s := range order[i].body {
			if s.callee == "" || builtins[s.callee] && mod.Function(s.callee) != nil && mod.Function(s.callee).decl {
				continue
			}
			g := mod.Function(s.callee)
			switch {
			case g == nil:
				return nil, nil, &UnsupportedError{Line: s.line, Opcode: "call", Why: fmt.Sprintf("call to %s, which is not declared in the module (indirect calls are not supported)", s.callee), Source: mod.source(s.loc), Instr: mod.Line(s.line)}
			case g.Entry:
				return nil, nil, &UnsupportedError{Line: s.line, Opcode: "call", Why: fmt.Sprintf("call to the kernel %s", s.callee), Source: mod.source(s.loc), Instr: mod.Line(s.line)}
			case g.decl:
				return nil, nil, &UnsupportedError{Line: s.line, Opcode: "call", Why: fmt.Sprintf("%s has no body in this module (only vprintf and __assertfail are built in: no device malloc, no separately compiled device code)", s.callee), Source: mod.source(s.loc), Instr: mod.Line(s.line)}
			}
			j, ok := index[g.Name]
			if !ok {
				j = len(order)
				index[g.Name] = j
				order = append(order, g)
			}
			cs = append(cs, j)
		}
		callees = append(callees, cs)
	}
	return order, callees, nil
}

// layoutStack finds the recursive functions, gives them register save areas, and sizes the stack.
func (p *program) layoutStack() error {
	n := len(p.funcs)
	reach := func(from, to int) bool {
		seen := make([]bool, n)
		stack := append([]int(nil), p.funcs[from].callees...)
		for len(stack) > 0 {
			x := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if x == to {
				return true
			}
			if !seen[x] {
				seen[x] = true
				stack = append(stack, p.funcs[x].callees...)
			}
		}
		return false
	}
	for i, fi := range p.funcs {
		if reach(i, i) {
			fi.recursive = true
			p.recursive = true
			fi.saveOff = fi.frameSize
			fi.frameSize += 8*int(fi.regHi-fi.regLo) + 4*int(fi.predHi-fi.predLo)
			fi.frameSize = (fi.frameSize + 15) / 16 * 16
		}
	}
	need := 0
	if p.recursive {
		need = RecursiveStackBytes
	} else {
		memo := make([]int, n)
		var depth func(i int) int
		depth = func(i int) int {
			if memo[i] > 0 {
				return memo[i]
			}
			m := 0
			for _, c := range p.funcs[i].callees {
				m = max(m, depth(c))
			}
			memo[i] = p.funcs[i].frameSize + m
			return memo[i]
		}
		need = depth(0)
	}
	for _, fi := range p.funcs {
		need = max(need, fi.frameSize)
	}
	if need > MaxLocalBytes {
		return &UnsupportedError{Line: p.fn.Line, Opcode: ".local", Why: fmt.Sprintf("%d bytes of local memory (stack) per thread, over the %d-byte limit", need, MaxLocalBytes)}
	}
	p.localSize = (need + 15) / 16 * 16
	return nil
}

// decodeCall: call{.uni} (rets), f, (args); with .param variables or registers as arguments.
func (d *decoder) decodeCall(in *inst, s pinst) error {
	d.op = "call"
	in.class = ClassBranch
	for _, w := range strings.Split(s.op, ".")[1:] {
		if w != "uni" {
			return d.errf("unknown modifier .%s", w)
		}
	}
	g := d.mod.Function(s.callee)
	site := &callSite{caller: d.fi}
	in.call = site
	if g != nil && g.decl && builtins[s.callee] {
		site.builtin = s.callee
	} else {
		idx, ok := d.funcIx[s.callee]
		if !ok || g == nil {
			return d.errf("call to unknown function %s", s.callee)
		}
		in.ctl = ctlCall
		in.target = int32(idx)
	}
	if len(s.callArgs) != len(g.Params) {
		return d.errf("%s takes %d arguments, the call passes %d", s.callee, len(g.Params), len(s.callArgs))
	}
	if len(s.callRets) > len(g.Returns) {
		return d.errf("%s returns %d values, the call expects %d", s.callee, len(g.Returns), len(s.callRets))
	}
	arg := func(o operand, pr Param, dst bool) (callArg, error) {
		a := callArg{reg: -1, frameReg: -1, size: pr.Size}
		if o.kind == oReg {
			if r, ok := d.lookup(o.name); ok && r.frame {
				if r.size < pr.Size {
					return a, d.errf("%s is %d bytes, %s's parameter %s %d", o.name, r.size, s.callee, pr.Name, pr.Size)
				}
				a.frameReg = r.idx
				return a, nil
			}
		}
		if pr.Size > 8 {
			return a, d.errf("a register cannot pass the %d-byte parameter %s", pr.Size, pr.Name)
		}
		var err error
		if dst {
			a.reg, err = d.dst(o)
		} else {
			a.reg, err = d.src(o, ptype{"b64", 8, 'b', true})
		}
		return a, err
	}
	for i, o := range s.callArgs {
		a, err := arg(o, g.Params[i], false)
		if err != nil {
			return err
		}
		site.args = append(site.args, a)
	}
	for i, o := range s.callRets {
		a, err := arg(o, g.Returns[i], true)
		if err != nil {
			return err
		}
		site.rets = append(site.rets, a)
	}
	switch site.builtin {
	case "vprintf":
		in.exec = execVprintf
	case "__assertfail":
		in.exec = execAssertfail
	}
	return nil
}

// localBytes returns lane l's n bytes of local memory at addr, or faults.
func (c *cta) localBytes(w *warp, in *inst, l int, addr uint64, n int) []byte {
	ls := uint64(c.prog.localSize)
	if addr+uint64(n) > ls || addr+uint64(n) < addr {
		c.fault(&Fault{Kind: "out of bounds", Space: "local", Address: addr,
			Msg: fmt.Sprintf("%d-byte local access at %#x, past the end of the %d-byte stack", n, addr, ls)}, w, l, in)
	}
	base := uint64(l) * ls
	return w.local[base+addr : base+addr+uint64(n)]
}

// argBytes returns the bytes of a call argument of lane l (a register's value in tmp).
func (c *cta) argBytes(w *warp, in *inst, l int, a callArg, tmp []byte) []byte {
	if a.frameReg >= 0 {
		return c.localBytes(w, in, l, w.regs[a.frameReg][l], a.size)
	}
	writeN(tmp, 8, w.regs[a.reg][l])
	return tmp[:a.size]
}

func (c *cta) argValue(w *warp, in *inst, l int, a callArg) uint64 {
	var tmp, v [8]byte
	copy(v[:], c.argBytes(w, in, l, a, tmp[:]))
	return readN(v[:], 8)
}

// call pushes a frame for each lane of m and sends it to the callee's entry.
func (c *cta) call(w *warp, in *inst, m uint32) {
	p := c.prog
	fi := p.funcs[in.target]
	site := in.call
	var tmp [8]byte
	for t := m; t != 0; t &= t - 1 {
		l := bits.TrailingZeros32(t)
		d := int(w.depth[l])
		callerBase := w.base[l]
		newBase := uint64(callerBase) + uint64(site.caller.frameSize)
		if d >= MaxCallDepth || newBase+uint64(fi.frameSize) > uint64(p.localSize) {
			c.fault(&Fault{Kind: "stack overflow", Space: "local", Address: newBase,
				Msg: fmt.Sprintf("calling %s at depth %d needs %d bytes of stack, over the %d-byte stack (or %d calls deep)", fi.fn.Name, d+1, newBase+uint64(fi.frameSize), p.localSize, MaxCallDepth)}, w, l, in)
		}
		for i, a := range site.args {
			src := c.argBytes(w, in, l, a, tmp[:])
			copy(c.localBytes(w, in, l, newBase+uint64(fi.params[i]), a.size), src)
		}
		if fi.recursive {
			save := c.localBytes(w, in, l, newBase+uint64(fi.saveOff), fi.frameSize-fi.saveOff)
			for r := fi.regLo; r < fi.regHi; r++ {
				writeN(save, 8, w.regs[r][l])
				save = save[8:]
			}
			for r := fi.predLo; r < fi.predHi; r++ {
				writeN(save, 4, uint64(w.preds[r]>>l&1))
				save = save[4:]
			}
		}
		for _, fr := range fi.frameRegs {
			w.regs[fr.reg][l] = newBase + uint64(fr.off)
		}
		w.stack[l*MaxCallDepth+d] = frameRec{site: in.self, base: callerBase}
		w.depth[l]++
		w.base[l] = uint32(newBase)
		w.lanePC[l] = fi.entry
		if top := uint32(newBase) + uint32(fi.frameSize); top > w.stackTop {
			w.stackTop = top
		}
	}
	w.callers |= m
}

// ret returns each lane of m (all inside a .func) to its caller.
func (c *cta) ret(w *warp, in *inst, m uint32) {
	p := c.prog
	fi := p.funcs[in.target]
	for t := m; t != 0; t &= t - 1 {
		l := bits.TrailingZeros32(t)
		w.depth[l]--
		rec := w.stack[l*MaxCallDepth+int(w.depth[l])]
		site := p.code[rec.site].call
		base := uint64(w.base[l])
		// the results, read before the caller's registers are restored
		var vals [8][]byte
		for i, a := range site.rets {
			if i < len(vals) {
				vals[i] = append([]byte(nil), c.localBytes(w, in, l, base+uint64(fi.rets[i]), a.size)...)
			}
		}
		if fi.recursive {
			save := c.localBytes(w, in, l, base+uint64(fi.saveOff), fi.frameSize-fi.saveOff)
			for r := fi.regLo; r < fi.regHi; r++ {
				w.regs[r][l] = readN(save, 8)
				save = save[8:]
			}
			for r := fi.predLo; r < fi.predHi; r++ {
				w.preds[r] = w.preds[r]&^(1<<l) | uint32(readN(save, 4)&1)<<l
				save = save[4:]
			}
		}
		for i, a := range site.rets {
			if i >= len(vals) {
				break
			}
			if a.frameReg >= 0 {
				copy(c.localBytes(w, in, l, w.regs[a.frameReg][l], a.size), vals[i])
			} else {
				var b [8]byte
				copy(b[:], vals[i])
				w.regs[a.reg][l] = readN(b[:], 8)
			}
		}
		w.base[l] = rec.base
		w.lanePC[l] = rec.site + 1
		if w.depth[l] == 0 {
			w.callers &^= 1 << l
		}
	}
}

// site returns the call instruction of lane l's k-th frame.
func (w *warp) site(l, k int) int32 { return w.stack[l*MaxCallDepth+k].site }

// before reports whether lane a comes before lane b in program order: their call stacks and PCs
// compared as paths (a lane inside a call made at PC s is at s; a lane at s itself, about to call,
// goes first).
func (w *warp) before(a, b int) bool {
	da, db := int(w.depth[a]), int(w.depth[b])
	for k := range min(da, db) {
		if sa, sb := w.site(a, k), w.site(b, k); sa != sb {
			return sa < sb
		}
	}
	switch {
	case da == db:
		return w.lanePC[a] < w.lanePC[b]
	case da < db:
		return w.lanePC[a] <= w.site(b, da)
	default:
		return w.site(a, db) < w.lanePC[b]
	}
}

func (w *warp) samePlace(a, b int) bool {
	if w.depth[a] != w.depth[b] || w.lanePC[a] != w.lanePC[b] {
		return false
	}
	for k := range int(w.depth[a]) {
		if w.site(a, k) != w.site(b, k) {
			return false
		}
	}
	return true
}

// pickSlow is pick for a warp with lanes inside calls: the earliest lanes in program order (whole
// call stacks compared) run; minWait is the PC at which the running group must yield to a waiting
// lane of the same frame.
func (w *warp) pickSlow() {
	best := -1
	for t := w.waiting; t != 0; t &= t - 1 {
		l := bits.TrailingZeros32(t)
		if best < 0 || w.before(l, best) {
			best = l
		}
	}
	var grp uint32
	for t := w.waiting; t != 0; t &= t - 1 {
		l := bits.TrailingZeros32(t)
		if w.samePlace(l, best) {
			grp |= 1 << l
		}
	}
	w.active, w.pc = grp, w.lanePC[best]
	w.waiting &^= grp
	D := int(w.depth[best])
	next := int32(1<<31 - 1)
	for t := w.waiting; t != 0; t &= t - 1 {
		l := bits.TrailingZeros32(t)
		if int(w.depth[l]) < D {
			continue
		}
		same := true
		for k := range D {
			if w.site(l, k) != w.site(best, k) {
				same = false
				break
			}
		}
		if !same {
			continue
		}
		if int(w.depth[l]) == D {
			next = min(next, w.lanePC[l])
		} else {
			next = min(next, w.site(l, D)+1)
		}
	}
	w.minWait = next
}
