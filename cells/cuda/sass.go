package cuda

import (
	"context"
	"errors"
	"fmt"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/gpuplayground/playground/cells"
	"github.com/gpuplayground/playground/gpu"
	kcuda "github.com/gpuplayground/playground/gpu/nvidia"
	"github.com/gpuplayground/playground/gpumodel"
)

// disassembler is a cells.GPU whose compile also lists the SASS ptxas makes of the PTX for one
// architecture, with each instruction's source line, inside the compile's own confinement
// (gpu.Machine.Disassemble: ptxas -lineinfo, nvdisasm -g).
type disassembler interface {
	Disassemble(ctx context.Context, source, name, arch string, sm int) (gpu.Compiled, error)
}

// showSASS is Show SASS of the cell spec on env: a compile, ptxas and nvdisasm, no launch.
type showSASS struct {
	env  cells.Env
	spec Spec
}

// Estimate is the compile's limit with ptxas's and nvdisasm's (gpu.DisassembleTimeout).
func (s *showSASS) Estimate() time.Duration { return compileEstimate }

// maxSourceText is how much of a kernel line Show SASS quotes (bytes).
const maxSourceText = 120

// Run compiles the kernel and assembles it for the cell's GPU (the H100 where it names none) in the
// compile worker, then shows ptxas's registers, the SASS grouped per line of the kernel (numbered
// as the cell's lines) with each group's count, and a table of the counts. Where this server has no
// ptxas or nvdisasm (or ptxas refuses the architecture) it fails saying why.
func (s *showSASS) Run(ctx context.Context, e cells.Emitter) error {
	g := gpumodel.Or(s.spec.GPU)
	sm := sassArch(g.CC)
	d, ok := s.env.GPU.(disassembler)
	if !ok || sm == 0 {
		return fmt.Errorf("Show SASS needs this server's compile worker and a GPU with a compute capability (the %s's is %q)", g.Name, g.CC)
	}
	c, err := d.Disassemble(ctx, s.spec.Source, "cell.cu", s.spec.compileArch(), sm)
	if err != nil {
		if ctx.Err() != nil || !nvrtcLine.MatchString(err.Error()) {
			return err
		}
		return errors.New(s.spec.compileMessage(err.Error()))
	}
	if c.SASS == nil {
		return fmt.Errorf("no SASS of %s for the %s (sm_%d) here: %s\nShow SASS needs NVIDIA's ptxas and nvdisasm (CUDA 12.4's, which .ci/run unpacks from Debian trixie's nvidia-cuda-toolkit into %s/usr/bin); Show PTX needs neither",
			s.spec.Kernel, g.Name, sm, c.SASSError, kcuda.UnpackedCUDA12)
	}
	if r, ok := ptxasRegisters(c.Resources, s.spec.Kernel, g.CC); ok {
		e.Note("info", fmt.Sprintf("%s on the %s: %s, %d bytes of static shared memory", s.spec.Kernel, g.Name, ptxasLabel(r), r.SharedBytes))
	}
	if c.SASS.Cut {
		e.Note("warning", fmt.Sprintf("the listing stops after %d instructions or %d KiB; the counts per line listed are of all their instructions", kcuda.MaxSASSInstructions, kcuda.MaxSASSBytes>>10))
	}
	lines := sassLines(*c.SASS)
	e.Text(fmt.Sprintf("SASS of %s for the %s (%s; %s): each line of your kernel, then the instructions it became", s.spec.Kernel, g.Name, c.SASS.Arch, c.SASS.Tool),
		s.listing(*c.SASS))
	e.Table(cells.Table{ID: "sass", Caption: fmt.Sprintf("Per line of your kernel: the SASS instructions ptxas made of it for %s (in the code, not as run)", c.SASS.Arch),
		Columns: []cells.Column{{Label: "cell line"}, {Label: "SASS instructions"}, {Label: "most frequent"}}})
	for _, l := range lines {
		e.Row(cells.Row{Table: "sass", Values: []any{s.lineLabel(l.key), l.count, opcodeSummary(l.ops)}})
	}
	return nil
}

// sassLine is the instructions of one source line, over every function of a listing.
type sassLine struct {
	key   kcuda.SASSLine // File and Line; Count unused
	count int            // every instruction (SASSFunction.Lines)
	ops   map[string]int // the listed ones' opcodes ("LDG", "FFMA")
	instr []kcuda.SASSInstruction
}

// sassLines gathers s's instructions per source line: cell.cu's lines first in their order, then
// other files' and those without a line.
func sassLines(s kcuda.SASS) []*sassLine {
	by := map[kcuda.SASSLine]*sassLine{}
	get := func(file string, line int) *sassLine {
		k := kcuda.SASSLine{File: file, Line: line}
		if by[k] == nil {
			by[k] = &sassLine{key: k, ops: map[string]int{}}
		}
		return by[k]
	}
	for _, f := range s.Functions {
		for _, l := range f.Lines {
			get(l.File, l.Line).count += l.Count
		}
		for _, i := range f.Instructions {
			l := get(i.File, i.Line)
			l.ops[opcode(i.Text)]++
			l.instr = append(l.instr, i)
		}
	}
	out := make([]*sassLine, 0, len(by))
	for _, l := range by {
		out = append(out, l)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i].key, out[j].key
		if ca, cb := isCell(a.File), isCell(b.File); ca != cb {
			return ca
		}
		if a.File != b.File {
			return a.File < b.File
		}
		return a.Line < b.Line
	})
	return out
}

// isCell says file is the cell's source (NVRTC may write it with a folder in front).
func isCell(file string) bool { return path.Base(file) == "cell.cu" }

// lineLabel names a source line as the cell numbers it ("line 12"), or as its file does.
func (s *showSASS) lineLabel(k kcuda.SASSLine) string {
	switch {
	case k.File == "" || k.Line == 0:
		return "no source line"
	case isCell(k.File):
		return fmt.Sprintf("line %d", s.spec.SourceLine+k.Line-1)
	}
	return fmt.Sprintf("%s:%d", path.Base(k.File), k.Line)
}

// listing is the SASS, per function, grouped per source line: "line 12 (4 instructions): the
// line's source", then its instructions in address order.
func (s *showSASS) listing(sass kcuda.SASS) string {
	src := strings.Split(s.spec.Source, "\n")
	var b strings.Builder
	for _, f := range sass.Functions {
		total := 0
		for _, l := range f.Lines {
			total += l.Count
		}
		fmt.Fprintf(&b, "// %s: %d instructions\n", f.Name, total)
		for _, l := range sassLines(kcuda.SASS{Functions: []kcuda.SASSFunction{f}}) {
			fmt.Fprintf(&b, "%s (%d %s)", s.lineLabel(l.key), l.count, plural(l.count, "instruction"))
			if isCell(l.key.File) && l.key.Line >= 1 && l.key.Line <= len(src) {
				fmt.Fprintf(&b, ": %s", clipSource(strings.TrimSpace(src[l.key.Line-1])))
			}
			b.WriteByte('\n')
			for _, i := range l.instr {
				fmt.Fprintf(&b, "\t/*%04x*/ %s\n", i.Offset, i.Text)
			}
		}
		b.WriteByte('\n')
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// clipSource is a kernel line cut to maxSourceText bytes, "…" marking a cut.
func clipSource(s string) string {
	if len(s) <= maxSourceText {
		return s
	}
	return strings.ToValidUTF8(s[:maxSourceText], "") + "…"
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

// opcode is an instruction's operation without its predicate and modifiers: "@!P0 LDG.E.128 R4, …"
// → "LDG".
func opcode(text string) string {
	fields := strings.Fields(text)
	if len(fields) > 1 && strings.HasPrefix(fields[0], "@") {
		fields = fields[1:]
	}
	if len(fields) == 0 {
		return ""
	}
	op, _, _ := strings.Cut(fields[0], ".")
	return op
}

// opcodeSummary is the five most frequent opcodes of ops with their counts: "FFMA ×8, LDG ×4".
func opcodeSummary(ops map[string]int) string {
	names := make([]string, 0, len(ops))
	for op := range ops {
		names = append(names, op)
	}
	sort.Slice(names, func(i, j int) bool {
		if ops[names[i]] != ops[names[j]] {
			return ops[names[i]] > ops[names[j]]
		}
		return names[i] < names[j]
	})
	var parts []string
	for _, op := range names[:min(len(names), 5)] {
		parts = append(parts, fmt.Sprintf("%s ×%d", op, ops[op]))
	}
	return strings.Join(parts, ", ")
}
