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
)

// sassCompiler is a cells.GPU whose compile also assembles the PTX with ptxas -v for the
// architectures asked, inside the compile's own confinement (gpu.Machine.CompileSass): ptxas, a
// closed parser, then reads the learner's PTX with no more rights than the compiler has.
type sassCompiler interface {
	CompileSass(ctx context.Context, source, name string, sass []int) (gpu.Compiled, error)
}

// compileSass compiles the cell's source with g, asking a sassCompiler for ptxas's report for the
// datasheet GPU's architecture (sassArch of spec's GPU); another cells.GPU, or an architecture
// that is no number, gives no report.
func compileSass(ctx context.Context, g cells.GPU, spec Spec) (string, []kcuda.EntryResources, error) {
	sc, ok := g.(sassCompiler)
	arch := sassArch(gpumodel.Or(spec.GPU).CC)
	if !ok || arch == 0 {
		ptx, err := g.Compile(ctx, spec.Source, "cell.cu")
		return ptx, nil, err
	}
	c, err := sc.CompileSass(ctx, spec.Source, "cell.cu", []int{arch})
	return c.PTX, c.Resources, err
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
		if r.Arch == arch {
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
