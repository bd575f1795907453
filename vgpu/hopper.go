package vgpu

import (
	"math/bits"
	"strings"
)

// Small sm_90 instructions beside mbarrier (mbarrier.go), and the clocks.
//
// elect.sync d|p, membermask (PTX ISA 8.x, "Parallel Synchronization and Communication
// Instructions: elect.sync", since PTX ISA 8.0, sm_90) elects one leader among the lanes of
// membermask: d gets the leader's lane id in every executing lane and p is true in the leader's
// lane only (either may be the sink _). The ISA leaves which lane
// to the implementation; the virtual GPU elects the lowest lane of the mask that executes it. As a
// .sync instruction, the lanes executing it must be exactly the live lanes of its mask (else a
// "divergent warp sync" fault, as for vote.sync), and it orders them for the hazard check.
//
// fence.proxy.async{.shared::cta | .shared::cluster | .global} (PTX ISA 8.x, "membar/fence";
// PTX ISA 8.0) orders the generic proxy's memory accesses before the async proxy's (wgmma, TMA).
// The interpreter has one memory and no separate proxy, so it changes nothing here; it is
// counted (Counts.AsyncProxyFences) and marked (inst.proxy) for the checks of async-proxy reads.
// Other fences (fence.sc, fence.acq_rel, fence.proxy.alias, …) and membar are no-ops: the
// interpreter is sequentially consistent.

// decodeElect decodes elect.sync d|p, membermask.
func (d *decoder) decodeElect(in *inst, m mods, s pinst) error {
	in.class = ClassShuffle
	if len(m.types) != 0 || len(m.words) != 1 || m.words[0] != "sync" {
		return d.errf("only elect.sync d|p, membermask is supported")
	}
	if err := d.nargs(s, 2); err != nil {
		return err
	}
	dst := s.args[0]
	if dst.kind != oPair || len(dst.elems) != 2 {
		return d.errf("expects a destination pair d|p")
	}
	var err error
	if in.d, err = d.dst(dst.elems[0]); err != nil {
		return err
	}
	in.d2 = -1
	if dst.elems[1].kind != oSink {
		var neg bool
		if in.d2, neg, err = d.pred(dst.elems[1]); err != nil {
			return err
		}
		if neg {
			return d.errf("the predicate destination cannot be negated")
		}
	}
	if in.a, err = d.src(s.args[1], parseType("b32")); err != nil {
		return err
	}
	in.exec = execElect
	return nil
}

// execElect elects the lowest lane of m in the member mask.
func execElect(w *warp, in *inst, m uint32) {
	member := uint32(w.regs[in.a][bits.TrailingZeros32(m)])
	converged(w, in, m, member)
	w.c.warpSync(w, member)
	leader := bits.TrailingZeros32(m & member)
	for t := m; t != 0; t &= t - 1 {
		w.regs[in.d][bits.TrailingZeros32(t)] = uint64(leader)
	}
	if in.d2 >= 0 {
		w.preds[in.d2] = w.preds[in.d2]&^m | uint32(1)<<leader&m
	}
}

// decodeFence decodes fence (and fence.proxy.async, counted).
func (d *decoder) decodeFence(in *inst, m mods, s pinst) error {
	in.class = ClassOther
	if oneOf(m, "proxy") == "" || !strings.Contains(s.op, ".async") {
		return d.decodeMembar(in, m, s) // globalrace.go
	}
	in.proxy = true
	in.exec = execProxyFence
	return nil
}

func execProxyFence(w *warp, in *inst, m uint32) { w.c.proxyFences++ }

// The clocks (PTX ISA 8.x, section 10 "Special Registers": %clock, %clock64, %globaltimer and its
// _lo/_hi halves), which libcu++'s cuda::barrier reads in its wait's back-off loop. The virtual GPU
// has no time: each CTA's clock counts the warp instructions of its finished turns, plus one at
// every read, so it only grows; %globaltimer reads it as nanoseconds. Code that waits for an
// amount of time ends, but no duration is real.
var timerRegs = map[string]uint8{"%clock": 1, "%clock_hi": 2, "%clock64": 3, "%globaltimer": 3, "%globaltimer_lo": 1, "%globaltimer_hi": 2}

func (d *decoder) decodeTimer(in *inst, dst, src operand) error {
	var err error
	in.d, err = d.dst(dst)
	in.mode = timerRegs[src.name]
	in.exec = execTimer
	return err
}

// execTimer reads the CTA's clock: the low 32 bits (mode 1), the high (2) or all 64 (3).
func execTimer(w *warp, in *inst, m uint32) {
	c := w.c
	c.clock++
	v := c.clock
	switch in.mode {
	case 1:
		v &= 0xffffffff
	case 2:
		v >>= 32
	}
	for t := m; t != 0; t &= t - 1 {
		w.regs[in.d][bits.TrailingZeros32(t)] = v
	}
}

// setmaxnreg.{inc,dec}.sync.aligned.u32 n (PTX ISA 8.x, "setmaxnreg", since PTX ISA 8.0,
// sm_90a) asks the hardware to move registers between a warpgroup's warps and the CTA's pool: a
// hint about physical registers, which leaves the values of the PTX registers as they are. The
// virtual GPU checks its operand (a constant multiple of 8 in 24..256) and, as an .aligned
// instruction, that the warp's live lanes execute it together ("divergent warp sync" otherwise);
// it does not check that every warp of the warpgroup executes it.
func (d *decoder) decodeSetmaxnreg(in *inst, m mods, s pinst) error {
	in.class = ClassOther
	if oneOf(m, "inc", "dec") == "" || oneOf(m, "sync") == "" || oneOf(m, "aligned") == "" ||
		len(m.types) != 1 || m.types[0].name != "u32" || len(m.words) != 3 {
		return d.errf("only setmaxnreg.inc/.dec.sync.aligned.u32 n is supported")
	}
	if err := d.nargs(s, 1); err != nil {
		return err
	}
	if a := s.args[0]; a.kind != oImm || a.bits < 24 || a.bits > 256 || a.bits%8 != 0 {
		return d.errf("the register count must be a constant multiple of 8 in 24..256")
	}
	in.exec = execSetmaxnreg
	return nil
}

func execSetmaxnreg(w *warp, in *inst, m uint32) { converged(w, in, m, w.live) }
