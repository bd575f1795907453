package gpumodel

import (
	"strings"

	"github.com/gpuplayground/playground/vgpu"
)

// Shares is how one term of a launch's modelled time (ModelAt) divides among the PTX lines that ran,
// as Nsight Compute's Source page divides a launch's metrics among lines: each line's fraction of
// what the term counts. The model's totals are not changed: the fractions of the lines sum to 1.
type Shares struct {
	// Term is the term divided: Dominant's, "shared memory", "DRAM", "issue", "latency", …
	Term string
	// Of says what was divided ("shared-memory wavefronts (bank conflicts included) and global
	// L1 lines"); Approx, where not "", what is estimated rather than counted per line.
	Of, Approx string
	// Lines are PTX line → fraction of the term, over the lines with a part (summing to 1); nil
	// where the term counted nothing.
	Lines map[int]float64
}

// Dominant is the term of m whose lines matter: m.Bound, or where the launch's fixed time is the
// bound (Time.Bound "launch") the largest of the other terms, which the lines' work makes.
func Dominant(m Time) Term {
	var top Term
	for _, t := range m.Terms {
		if t.Name == m.Bound && t.Name != "launch" {
			return t
		}
		if t.Name != "launch" && t.Seconds > top.Seconds {
			top = t
		}
	}
	return top
}

// Attribute divides term (a name of ModelAt's terms) of the launch counted in c, on g with o resident,
// among c.Lines (its PTX lines) by what the term counts:
//
//   - "shared memory" and "L1": the L1/shared data pipe's wavefronts, each line's shared wavefronts
//     (bank conflicts included) and its global requests' 128-byte lines. A line's global lines are
//     not counted per line: the launch's (Counts.GlobalLines) are shared among the lines in
//     proportion to their sectors (exact when every request's sectors per line are alike);
//   - "DRAM": the DRAM bytes. Without the cache model each load and store line's sectors. With it,
//     the DRAM reads are shared among the loads and atomics in proportion to their sectors reaching
//     the L2 and the writes (and dirty bytes left) among the stores and atomics in proportion to
//     their sectors: the cache model does not count hits per line, so every line is taken to hit
//     at the launch's rates;
//   - "L2": the sectors reaching the L2: every sector of a store or atomic (a partly written store
//     sector, PartialStoreSectors, weighing PartialStoreSlots as in the term), and of a load its
//     sectors × the launch's L1 miss rate of loads (the same estimate);
//   - "issue": the warp instructions, exact;
//   - "compute": the FLOPs, each line's active lanes × its opcode's FLOPs (ptxFLOPs), but for the
//     tensor-core lines where g has a tensor-core peak (TensorPeak); "tensor": those lines' FLOPs;
//   - "atomics": the part of AtomicSeconds that is largest: the serialised passes of the global
//     atomics (or of the shared ones), or the atomic operations (the lanes of atom and red lines);
//     the same-address limit (GlobalAtomicHotOps, counted per launch, not per line) is shared among
//     the global atomics in proportion to their operations;
//   - "latency": LatencyByLine.
//
// Empty Lines for another term ("launch") or where the term counted nothing.
func Attribute(c vgpu.Counts, g GPU, o Occupancy, term string) Shares {
	s := Shares{Term: term}
	w := map[int]float64{}
	switch term {
	case "shared memory", "L1":
		attributeL1(c, &s, w)
	case "DRAM":
		attributeDRAM(c, &s, w)
	case "L2":
		s.Of = "sectors reaching the L2"
		s.Approx = "a load line's sectors are taken to hit the L1 at the launch's rate (hits are not counted per line)"
		loadToL2 := l1LoadMissRate(c)
		for _, l := range c.Lines {
			switch accessKind(l) {
			case "load":
				w[l.Line] = loadToL2 * float64(l.Sectors)
			case "store", "atomic":
				partial := float64(partialStoreSectors(l))
				w[l.Line] = float64(l.Sectors) - partial + partial*PartialStoreSlots()
			}
		}
	case "issue":
		s.Of = "warp instructions issued"
		for _, l := range c.Lines {
			w[l.Line] = float64(l.Warp)
		}
	case "compute", "tensor":
		s.Of = "FLOPs"
		split := TensorPeak(g) > 0
		for _, l := range c.Lines {
			if !split || isTensorOp(opOf(l.Text)) == (term == "tensor") {
				w[l.Line] = float64(l.Thread) * ptxFLOPs(l.Text)
			}
		}
	case "atomics":
		attributeAtomics(c, g, &s, w)
	case "latency":
		s.Of = "warp-cycles of the latency model, each wait charged to the instruction that waits"
		s.Approx = "a static schedule of the PTX, not the compiled SASS (docs/vgpu-metrics.md, Latency)"
		s.Lines = LatencyByLine(c, g, o)
		return s
	default:
		return s
	}
	var total float64
	for _, x := range w {
		total += x
	}
	if total <= 0 {
		return s
	}
	s.Lines = map[int]float64{}
	for l, x := range w {
		if x > 0 {
			s.Lines[l] = x / total
		}
	}
	return s
}

// attributeAtomics weighs c's atomic lines by the largest of AtomicSeconds' limits.
func attributeAtomics(c vgpu.Counts, g GPU, s *Shares, w map[int]float64) {
	if g.Clock <= 0 {
		return
	}
	k := g.Clock / h100Clock
	hot := float64(c.GlobalAtomicHotOps) / (h100SameAddressRate * k)
	passes := float64(c.GlobalAtomicPasses) / (h100AtomicPassRate * k)
	ops := float64(c.Atomics) / (h100AtomicOpRate * k)
	shared := float64(c.SharedAtomicPasses) / (sharedAtomicPassesPerClock * g.Clock * float64(max(g.SMs, 1)))
	for _, l := range c.Lines {
		if accessKind(l) != "atomic" {
			continue
		}
		global := l.Requests > 0
		switch top := max(hot, passes, ops, shared); {
		case top == hot:
			s.Of = "global atomic operations (the launch is limited by updates of one address)"
			s.Approx = "the updates of the most-updated address are not counted per line: shared in proportion to each line's global atomic operations"
			if global {
				w[l.Line] = float64(l.Thread)
			}
		case top == passes:
			s.Of = "serialised passes of the global atomics"
			if global {
				w[l.Line] = float64(l.AtomicPasses)
			}
		case top == ops:
			s.Of = "atomic operations"
			w[l.Line] = float64(l.Thread)
		default:
			s.Of = "serialised passes of the shared-memory atomics"
			if l.SharedRequests > 0 {
				w[l.Line] = float64(l.AtomicPasses)
			}
		}
	}
}

// l1LoadMissRate is the fraction of c's global load sectors that reach the L2 (the L1's misses), as
// globalLoadLatency reads them; 1 without the cache model.
func l1LoadMissRate(c vgpu.Counts) float64 {
	if !c.Cached || c.LoadSectors == 0 {
		return 1
	}
	l2 := min(max(float64(c.L2Sectors-c.StoreSectors-c.AtomicSectors), 0), float64(c.LoadSectors))
	return l2 / float64(c.LoadSectors)
}

// accessKind is what a PTX line did in global memory: "load", "store" or "atomic"; "" for a line
// without global requests (a shared atomic is "atomic" too, for attributeAtomics).
func accessKind(l vgpu.LineCount) string {
	op := opOf(l.Text)
	switch {
	case isAtomicOp(op) && l.Requests+l.SharedRequests > 0:
		return "atomic"
	case l.Requests == 0:
		return ""
	case strings.HasPrefix(op, "st.") || strings.HasPrefix(op, "wmma.store") || strings.HasPrefix(op, "stmatrix"):
		return "store"
	}
	return "load"
}

func isAtomicOp(op string) bool {
	return strings.HasPrefix(op, "atom.") || strings.HasPrefix(op, "red.")
}

// opOf is the opcode of a PTX instruction line, without its guard ("@%p1 ld.global.f32 …" → "ld.global.f32").
func opOf(text string) string { return parsePTX(text).op }

// ptxFLOPs is the FLOPs per active lane of a PTX instruction, as the virtual GPU counts them: 2 for
// a floating-point fma or mad, 1 for the other f32/f64 arithmetic and the f16/bf16 add, sub, mul,
// neg, abs, min and max (twice as many for a packed pair: .f16x2, .bf16x2), 256 for a wmma.mma
// (2·16³ per warp over its 32 lanes), 128 for an mma.sync m16n8k16 and 64 for an m16n8k8
// (2·16·8·k over 32 lanes), 0 for the rest.
func ptxFLOPs(text string) float64 {
	op := opOf(text)
	if strings.HasPrefix(op, "wmma.mma") {
		return 2 * 16 * 16 * 16 / 32
	}
	if strings.HasPrefix(op, "mma.") {
		switch {
		case strings.Contains(op, ".m16n8k16."):
			return 2 * 16 * 8 * 16 / 32
		case strings.Contains(op, ".m16n8k8."):
			return 2 * 16 * 8 * 8 / 32
		}
		return 0
	}
	parts := strings.Split(op, ".")
	base, typ := parts[0], parts[len(parts)-1]
	arith := map[string]bool{"add": true, "sub": true, "mul": true, "fma": true, "mad": true, "div": true, "rcp": true,
		"sqrt": true, "rsqrt": true, "neg": true, "abs": true, "min": true, "max": true, "sin": true, "cos": true,
		"lg2": true, "ex2": true, "tanh": true, "copysign": true}
	if !arith[base] {
		return 0
	}
	f := 1.0
	if base == "fma" || base == "mad" {
		f = 2
	}
	switch typ {
	case "f32", "f64", "f16", "bf16":
		return f
	case "f16x2", "bf16x2":
		return 2 * f
	}
	return 0
}

// attributeDRAM shares the DRAM term's bytes among the lines that load, store or do atomics: without
// the cache model by their sectors; with it, the launch's DRAM reads among the loads by their sectors
// that miss the L1 and the atomics, its writes among the stores and atomics.
func attributeDRAM(c vgpu.Counts, s *Shares, w map[int]float64) {
	s.Of = "DRAM bytes"
	if !c.Cached {
		s.Of = "global load and store sectors (every one a DRAM access without the cache model)"
		for _, l := range c.Lines {
			if k := accessKind(l); k == "load" || k == "store" {
				w[l.Line] = float64(l.Sectors)
			}
		}
		return
	}
	s.Approx = "every line's sectors are taken to hit the L1 and the L2 at the launch's rates (hits are not counted per line)"
	loadToL2 := l1LoadMissRate(c)
	var readers, writers float64
	for _, l := range c.Lines {
		switch accessKind(l) {
		case "load":
			readers += loadToL2 * float64(l.Sectors)
		case "store":
			writers += float64(l.Sectors)
		case "atomic":
			readers += float64(l.Sectors)
			writers += float64(l.Sectors)
		}
	}
	reads, writes := float64(c.DRAMReadBytes), float64(c.DRAMWriteBytes+c.L2DirtyBytes)
	for _, l := range c.Lines {
		x := 0.0
		switch k := accessKind(l); {
		case k == "load" && readers > 0:
			x = reads * loadToL2 * float64(l.Sectors) / readers
		case k == "store" && writers > 0:
			x = writes * float64(l.Sectors) / writers
		case k == "atomic":
			if readers > 0 {
				x += reads * float64(l.Sectors) / readers
			}
			if writers > 0 {
				x += writes * float64(l.Sectors) / writers
			}
		}
		w[l.Line] = x
	}
}

// attributeL1 divides the L1/shared-memory term (Attribute) into w, by line: its shared wavefronts
// and its share of the global lines; cp.async's shared writes do not pass the pipe
// (vgpu.Counts.AsyncCopyWavefronts), nor a cp.async.cg's lines (AsyncCopyLines), so such a line
// gets none of its wavefronts' share, and a .cg line's sectors no share of the global lines.
func attributeL1(c vgpu.Counts, s *Shares, w map[int]float64) {
	s.Of = "L1/shared-memory wavefronts: shared-memory wavefronts (bank conflicts included) and global 128-byte lines"
	var piped float64
	for _, l := range c.Lines {
		if asyncCopy(l) != "cg" {
			piped += float64(l.Sectors)
		}
	}
	perSector := 0.0
	if piped > 0 {
		perSector = float64(c.GlobalLines) / piped
		s.Approx = "a line's global 128-byte lines are estimated from its sectors (the launch's lines shared in proportion)"
	}
	for _, l := range c.Lines {
		switch asyncCopy(l) {
		case "":
			w[l.Line] = float64(l.Wavefronts) + perSector*float64(l.Sectors)
		case "ca":
			w[l.Line] = perSector * float64(l.Sectors)
		}
	}
}

// asyncCopy is "ca" or "cg" where the executed PTX line l is a cp.async copy of that kind (not its
// commit or wait), "" otherwise.
func asyncCopy(l vgpu.LineCount) string {
	in := parsePTX(l.Text)
	for _, k := range []string{"ca", "cg"} {
		if strings.HasPrefix(in.op, "cp.async."+k+".") {
			return k
		}
	}
	return ""
}
