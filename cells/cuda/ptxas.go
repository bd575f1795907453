package cuda

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/gpuplayground/playground/cells"
	"github.com/gpuplayground/playground/gpu"
	kcuda "github.com/gpuplayground/playground/gpu/nvidia"
	"github.com/gpuplayground/playground/gpumodel"
	"github.com/gpuplayground/playground/vgpurun"
)

// sassCompiler is a cells.GPU whose compile also assembles the PTX with ptxas -v for the
// architectures asked, inside the compile's own confinement (gpu.Machine.CompileSass): ptxas, a
// closed parser, then reads the learner's PTX with no more rights than the compiler has.
type sassCompiler interface {
	CompileSass(ctx context.Context, source, name, arch string, sass []int) (gpu.Compiled, error)
}

// sassLiner is a sassCompiler whose compile also counts the SASS instructions each line of the PTX
// became for one architecture (gpu.Machine.CompileSassLines), in the same confinement.
type sassLiner interface {
	CompileSassLines(ctx context.Context, source, name, arch string, sm int) (gpu.Compiled, error)
}

// ptxasReport is what ptxas made of the cell's PTX in the compile worker: each kernel's resources,
// and the SASS instructions per PTX line (Lines) that the time model charges, or why there are none
// (LinesWhy).
type ptxasReport struct {
	Resources []kcuda.EntryResources
	Lines     *kcuda.PTXLineSASS
	LinesWhy  string
}

// compileSass compiles the cell's source with g for its architecture (Spec.compileArch), asking a sassLiner (else a sassCompiler) for
// ptxas's report for the datasheet GPU's architecture (sassArch of spec's GPU); another cells.GPU,
// or an architecture that is no number, gives no report.
func compileSass(ctx context.Context, g cells.GPU, spec Spec) (string, ptxasReport, error) {
	arch, target := sassArch(gpumodel.Or(spec.GPU).CC), spec.compileArch()
	if sl, ok := g.(sassLiner); ok && arch != 0 {
		c, err := sl.CompileSassLines(ctx, spec.Source, "cell.cu", target, arch)
		return c.PTX, ptxasReport{Resources: c.Resources, Lines: c.SASSLines, LinesWhy: c.SASSLinesError}, err
	}
	sc, ok := g.(sassCompiler)
	if !ok || arch == 0 {
		ptx, err := g.Compile(ctx, spec.Source, "cell.cu", target)
		return ptx, ptxasReport{LinesWhy: "this server's compiler runs no ptxas"}, err
	}
	c, err := sc.CompileSass(ctx, spec.Source, "cell.cu", target, []int{arch})
	return c.PTX, ptxasReport{Resources: c.Resources, LinesWhy: "this server's compiler counts no SASS per PTX line"}, err
}

// sassFor is the SASS per PTX line of p for g's architecture, or nil and why there is none.
func (p ptxasReport) sassFor(g gpumodel.GPU) (gpumodel.SASSPerLine, string) {
	arch := fmt.Sprintf("sm_%d", sassArch(g.CC))
	switch {
	case p.Lines == nil && p.LinesWhy != "":
		return nil, p.LinesWhy
	case p.Lines == nil:
		return nil, "no SASS per PTX line came with the compile"
	case p.Lines.Arch != arch && p.Lines.Arch != arch+"a":
		return nil, fmt.Sprintf("the SASS counted is %s's, not the %s's (%s)", p.Lines.Arch, g.Name, arch)
	}
	return p.Lines.PerLine, ""
}

// chargeSASS is res (a launch on g) with its modelled time charging the SASS of p
// (gpumodel.ModelAtSASS: the issue and latency terms count the SASS instructions each executed PTX
// line became) and its rate scaled with the time; where p has no SASS for g's architecture, res
// as it is (charged PTX instructions).
func chargeSASS(res vgpurun.Result, g gpumodel.GPU, p ptxasReport) vgpurun.Result {
	sass, _ := p.sassFor(g)
	if sass == nil {
		return res
	}
	before := res.Model.Seconds
	res.SASS, res.SASSInstructions = sass, gpumodel.SASSWarpInstructions(res.Counts, sass)
	res.Model = gpumodel.ModelAtSASS(res.Counts, g, res.Occupancy, sass)
	if before > 0 && res.Model.Seconds > 0 {
		res.Rate *= before / res.Model.Seconds
	}
	return res
}

// chargedNote says what the cell's modelled times charge on g: the SASS ptxas made (p.Lines) or,
// where there is none, the PTX instructions, and why.
func chargedNote(g gpumodel.GPU, p ptxasReport) string {
	if _, why := p.sassFor(g); why != "" {
		return fmt.Sprintf("model: the issue and latency terms charge PTX instructions, not SASS (%s)", why)
	}
	return fmt.Sprintf("model: the issue and latency terms charge the SASS instructions ptxas made of each PTX line for %s (the %s)", p.Lines.Arch, g.Name)
}

// sassArch is the ptxas architecture of compute capability cc ("9.0" → 90, for sm_90), 0 where cc
// is not one.
func sassArch(cc string) int {
	n, err := strconv.Atoi(strings.ReplaceAll(cc, ".", ""))
	if err != nil || n <= 0 {
		return 0
	}
	return n
}

// ptxasRegisters is what ptxas -v reported (res, from the compile) of entry assembled for compute
// capability cc ("9.0" → sm_90): of the kernel named entry, else of the one whose C++ mangled name
// is entry's (as kcuda.NameEntry renames it), else of the report's only kernel for that
// architecture. ok is false where res has nothing for cc (no ptxas; ptxas refused the PTX, built
// for a newer architecture than cc, or cc itself), no such kernel, or no registers. ptxas ran in
// the compile worker's confinement (gpu.Compiler.CompileSass), never in this process.
func ptxasRegisters(res []kcuda.EntryResources, entry, cc string) (kcuda.EntryResources, bool) {
	arch := fmt.Sprintf("sm_%d", sassArch(cc))
	var forArch []kcuda.EntryResources
	for _, r := range res {
		if r.Arch == arch || r.Arch == arch+"a" { // sm_90a for compute_90a PTX
			forArch = append(forArch, r)
		}
	}
	var mangled []kcuda.EntryResources
	prefix := fmt.Sprintf("_Z%d%s", len(entry), entry)
	for _, r := range forArch {
		if r.Entry == entry {
			return r, r.Registers > 0
		}
		if rest, ok := strings.CutPrefix(r.Entry, prefix); ok && rest != "" && (rest[0] < '0' || rest[0] > '9') {
			mangled = append(mangled, r)
		}
	}
	switch {
	case len(mangled) == 1:
		return mangled[0], mangled[0].Registers > 0
	case len(forArch) == 1:
		return forArch[0], forArch[0].Registers > 0
	}
	return kcuda.EntryResources{}, false
}

// ptxasLabel says, in the occupancy column, that r's registers are ptxas's, and what spilled.
func ptxasLabel(r kcuda.EntryResources) string {
	label := fmt.Sprintf("%d registers: ptxas %s", r.Registers, r.Arch)
	if r.SpillStores > 0 || r.SpillLoads > 0 {
		label += fmt.Sprintf(", %d B spilled, %d B reloaded", r.SpillStores, r.SpillLoads)
	}
	return label
}
