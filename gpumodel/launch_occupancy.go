package gpumodel

import (
	"fmt"

	"github.com/gpuplayground/playground/vgpu"
)

// Occupancy is a launch's theoretical occupancy on the datasheet GPU's compute capability (Limits:
// the CUDA occupancy calculator's arithmetic, the largest shared-memory carve-out).
type Occupancy struct {
	// Text is the table's cell: "75% (registers)" where the registers are known; for a kernel whose
	// registers are not, the bound without them, "≤ 100% (warps; registers unknown)", or the range
	// down to the occupancy at the most registers its directives allow, "50–100% (warps; registers
	// ≤ 64: .maxnreg)"; "–" and why when there is none.
	Text string
	// Registers per thread the figure used (0: not known here); Declared the 32-bit registers the PTX
	// declares (vgpu.Resources.DeclaredRegisters: virtual, not an allocation); SharedBytes the static
	// and dynamic shared memory per block.
	Registers, Declared, SharedBytes int
	// Result is the calculator's answer: with Registers, or without registers where they are unknown.
	Result OccupancyResult
}

// LaunchOccupancy is the theoretical occupancy of entry of mod launched with blocks of block
// threads and dynShared bytes of dynamic shared memory on g. registers are the registers per thread
// measured for it (ptxas: the table's kernels, compiled for an H100); 0 where they are not known, as
// a learner's kernel's without ptxas, and the figure is then the bound without them, or the range
// down to the occupancy at the most registers its directives allow (registerCap).
func LaunchOccupancy(mod *vgpu.Module, entry string, registers int, block [3]int, dynShared int, g GPU) Occupancy {
	res, err := mod.Resources(entry)
	if err != nil {
		return Occupancy{Text: "–"}
	}
	lim, err := LookupLimits(g.CC)
	if err != nil {
		return Occupancy{Text: fmt.Sprintf("– (no limits for %s)", g.Name)}
	}
	threads := max(block[0], 1) * max(block[1], 1) * max(block[2], 1)
	o := Occupancy{Declared: res.DeclaredRegisters, SharedBytes: res.StaticShared + dynShared}
	pct := func(f float64) string { return fmt.Sprintf("%.3g%%", 100*f) }
	if registers > 0 {
		o.Registers = registers
		if o.Result, err = lim.Occupancy(threads, registers, o.SharedBytes, lim.SharedPerSM); err != nil {
			o.Text = "does not launch: " + err.Error()
			return o
		}
		o.Text = fmt.Sprintf("%s (%s)", pct(o.Result.Occupancy), o.Result.Limiting())
		return o
	}
	if o.Result, err = lim.Occupancy(threads, 0, o.SharedBytes, lim.SharedPerSM); err != nil {
		o.Text = "does not launch: " + err.Error()
		return o
	}
	up := pct(o.Result.Occupancy)
	if capRegs, by := registerCap(lim, res); capRegs > 0 {
		if low, err := lim.Occupancy(threads, capRegs, o.SharedBytes, lim.SharedPerSM); err == nil && low.Occupancy < o.Result.Occupancy {
			o.Text = fmt.Sprintf("%.3g–%s (%s; registers ≤ %d: %s)", 100*low.Occupancy, up, o.Result.Limiting(), capRegs, by)
			return o
		}
	}
	o.Text = fmt.Sprintf("≤ %s (%s; registers unknown)", up, o.Result.Limiting())
	return o
}

// registerCap is the most registers per thread a kernel's directives let ptxas give it, and which
// directive says so: .maxnreg, or .minnctapersm blocks of .maxntid threads resident on one SM
// (__launch_bounds__(threads, minBlocks)); 0 when neither bounds them.
func registerCap(lim Limits, res vgpu.Resources) (int, string) {
	regs, by := 0, ""
	if res.MaxNReg > 0 {
		regs, by = min(res.MaxNReg, lim.MaxRegistersPerThread), ".maxnreg"
	}
	if t := res.MaxNTID; res.MinNCTAPerSM > 0 && t != ([3]int{}) {
		threads := t[0] * t[1] * t[2]
		// the most registers at which minBlocks blocks of threads still fit the register file
		for r := lim.MaxRegistersPerThread; r > 0; r-- {
			if o, err := lim.Occupancy(threads, r, 0, lim.SharedPerSM); err == nil && o.RegisterLimit >= res.MinNCTAPerSM {
				if regs == 0 || r < regs {
					regs, by = r, ".minnctapersm"
				}
				break
			}
		}
	}
	return regs, by
}
