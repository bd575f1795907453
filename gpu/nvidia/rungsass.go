package nvidia

import (
	"bytes"
	"context"
	"fmt"
	"go/format"
	"io/fs"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// What ptxas makes of each line of the kernel table's PTX: the virtual GPU counts PTX instructions
// per PTX line, the hardware issues the SASS that ptxas compiled them to (a 64-bit address add
// becomes two, a mad.lo one IMAD, a setp and a selp may fuse, loads are vectorised). The embedded
// PTX has no line table of its own (no .loc), so GenerateRungSASS gives every instruction a .loc
// naming its own PTX line, assembles with -lineinfo and counts nvdisasm -g's instructions per line:
// rungsass.gen.go records, per architecture, the SASS instructions each PTX line became.

// RungSASSArchs are the architectures (compute capability major×10 + minor) rungsass.gen.go
// covers: those that load the compute_80 PTX the virtual GPU runs (vgpurun.Arch). sm_70 and sm_75
// load the compute_70 PTX, whose lines are other lines: they have no record.
var RungSASSArchs = []int{80, 86, 89, 90}

// rungSASSPTXArch is the PTX (compute_80) whose lines rungsass.gen.go counts.
const rungSASSPTXArch = 80

// sassCountDigits encodes a line's SASS count as one character: 0–9, a–z (10–35); a count above
// 35 is recorded as 35 (RungSASSCapped).
const sassCountDigits = "0123456789abcdefghijklmnopqrstuvwxyz"

// RungSASSCapped is the most SASS instructions recorded for one PTX line.
const RungSASSCapped = len(sassCountDigits) - 1

// RungSASSPerLine returns, for a device of compute capability cc ("8.6"), the SASS instructions
// that ptxas RungPtxasVersion issues for one execution of each line of the embedded compute_80 PTX
// (PTXName("matmul.cu", 80)): perLine(n) is line n's (1-based) SASS instructions in the listing over
// the copies of its basic block there, 0 for lines that are no instruction or that ptxas folded
// into others; the SASS a kernel has outside any line (its prologue) is counted on its first
// instruction's line. ptxas unrolls loops the PTX leaves rolled (cuda_naive's k loop: 4 copies of
// the body, and 2- and 1-copy remainders) and each copy runs a fraction of the PTX loop's times, so
// a line's count is divided by its block's copies (blockCopies). ok is false for a cc not in
// RungSASSArchs.
func RungSASSPerLine(cc string) (perLine func(line int) float64, ok bool) {
	arch := fmt.Sprintf("sm_%s", strings.ReplaceAll(cc, ".", ""))
	for _, r := range rungSASS {
		if r.arch == arch {
			counts, copies := r.counts, r.copies
			return func(line int) float64 {
				if line < 1 || line > len(counts) || line > len(copies) {
					return 0
				}
				return perCopy(strings.IndexByte(sassCountDigits, counts[line-1]), strings.IndexByte(sassCountDigits, copies[line-1]))
			}, true
		}
	}
	return nil, false
}

// perCopy is n SASS instructions over c copies of their block, 0 where either is not positive.
func perCopy(n, c int) float64 {
	if n <= 0 || c <= 0 {
		return 0
	}
	return float64(n) / float64(c)
}

// PTXLineSASS is what ptxas made of each line of one PTX text for one architecture (SASSPerPTXLine):
// Counts[i] is the SASS instructions of line i+1 over all the copies of its basic block, Copies[i]
// those copies (blockCopies), both 0 for a line that is no instruction.
type PTXLineSASS struct {
	Arch   string `json:"arch"` // "sm_86"
	Counts []int  `json:"counts"`
	Copies []int  `json:"copies"`
}

// PerLine is the SASS instructions one execution of PTX line line (1-based) issues: its count over
// its block's copies; 0 for a line outside s or one that became no instruction.
func (s PTXLineSASS) PerLine(line int) float64 {
	if line < 1 || line > len(s.Counts) || line > len(s.Copies) {
		return 0
	}
	return perCopy(s.Counts[line-1], s.Copies[line-1])
}

// SASSPerPTXLine assembles ptx for sm_<cc> with px, a line table naming its own lines
// (WithLineTable, which replaces any the PTX had), and counts the nvdisasm listing's (the program at
// nvdisasm) instructions per PTX line and the copies of each line's block, as rungsass.gen.go
// records them for the kernel table, and ptxas -v's report of the same run (each kernel's
// resources: the line table changes no allocation). An error is ptxas's or nvdisasm's
// (Ptxas.Disassemble).
func SASSPerPTXLine(ctx context.Context, px *Ptxas, nvdisasm, ptx string, cc int) (PTXLineSASS, []EntryResources, error) {
	counts, anchors, res, err := sassPerPTXLine(ctx, px, nvdisasm, ptx, cc)
	if err != nil {
		return PTXLineSASS{}, res, err
	}
	return PTXLineSASS{Arch: PtxasArch(ptx, cc), Counts: counts, Copies: blockCopies(ptx, counts, anchors)}, res, nil
}

// blockCopies is, for each line of ptx (counts[i] the SASS instructions of line i+1, anchors[i]
// those of them that are its anchor's opcode: anchorCounts), the copies ptxas made of its basic
// block (a block starts at a label and after a branch, ret or exit): the lower median of the
// nonzero anchor counts of the block's anchor lines, instructions that become one SASS instruction
// each (copyAnchors: FFMA, LDG, LDS, STS, STG, BAR, HMMA, LDSM, LDGSTS), or 1 where the block has
// none; 0 for lines that are no instruction. Other instructions are no measure: an add.s64 becomes
// two, a wmma.mma two HMMAs, a setp may fold into its user. An anchor's other instructions are not
// copies either: ptxas puts register moves and never-executed placeholders (@!PT LDS) on a
// cp.async's line, which counted whole made cuda_mma_swizzle's loader blocks 3 and 4 copies of
// what is one.
func blockCopies(ptx string, counts, anchors []int) []int {
	lines := strings.Split(ptx, "\n")
	copies := make([]int, len(counts))
	var block []int // line indices
	flush := func() {
		var nz []int
		for _, i := range block {
			if i < len(anchors) && anchors[i] > 0 && copyAnchor(ptxOpcode(strings.TrimSpace(lines[i]))) {
				nz = append(nz, anchors[i])
			}
		}
		c := 1
		if len(nz) > 0 {
			slices.Sort(nz)
			c = nz[(len(nz)-1)/2]
		}
		for _, i := range block {
			copies[i] = c
		}
		block = block[:0]
	}
	for i, l := range lines {
		if i >= len(counts) {
			break
		}
		s := strings.TrimSpace(l)
		switch {
		case strings.HasSuffix(s, ":") || s == "}" || strings.HasPrefix(s, ".visible") || strings.HasPrefix(s, ".entry"):
			flush()
		case s != "" && ptxInstructionLine(s):
			block = append(block, i)
			if op := ptxOpcode(s); op == "bra" || strings.HasPrefix(op, "bra.") || op == "ret" || op == "exit" {
				flush()
			}
		}
	}
	flush()
	return copies
}

// copyAnchors are the opcodes (prefixes) that ptxas compiles to one SASS instruction (blockCopies),
// each with that instruction's opcode (before its first '.').
var copyAnchors = []struct{ ptx, sass string }{{"fma.rn.f32", "FFMA"}, {"ld.global.", "LDG"}, {"ld.shared.", "LDS"},
	{"st.shared.", "STS"}, {"st.global.", "STG"}, {"bar.sync", "BAR"}, {"mma.sync.", "HMMA"}, {"ldmatrix.", "LDSM"},
	{"cp.async.ca.", "LDGSTS"}, {"cp.async.cg.", "LDGSTS"}}

// copyAnchor reports whether op is one of copyAnchors.
func copyAnchor(op string) bool { return sassAnchor(op) != "" }

// sassAnchor is the SASS opcode of the copyAnchors entry op is, "" where it is none.
func sassAnchor(op string) string {
	for _, a := range copyAnchors {
		if strings.HasPrefix(op, a.ptx) {
			return a.sass
		}
	}
	return ""
}

// ptxOpcode is the opcode of an instruction line (s trimmed), its guard ("@%p1", "@!%p1") skipped.
func ptxOpcode(s string) string {
	f := strings.Fields(strings.TrimSuffix(s, ";"))
	if len(f) > 0 && strings.HasPrefix(f[0], "@") {
		f = f[1:]
	}
	if len(f) == 0 {
		return ""
	}
	return f[0]
}

// ptxInstructionLine reports whether a PTX line (trimmed) is an instruction: it ends with ";" and
// is no directive (".reg", ".loc"), comment, brace or label.
func ptxInstructionLine(s string) bool {
	if !strings.HasSuffix(s, ";") {
		return false
	}
	switch s[0] {
	case '.', '/', '{', '}':
		return false
	}
	return true
}

// WithLineTable is ptx with a line table naming its own lines: a ".file 1" after .address_size and,
// before each instruction, ".loc 1 N 0" with N the instruction's line in ptx, so that ptxas
// -lineinfo and nvdisasm -g attribute each SASS instruction to its PTX line. The .file and .loc
// lines ptx had (a learner's kernel, compiled with line information for its source) are left out:
// the table is of PTX lines only.
func WithLineTable(ptx string) string {
	var b strings.Builder
	for i, l := range strings.Split(ptx, "\n") {
		s := strings.TrimSpace(l)
		if d, _, _ := strings.Cut(s, " "); d == ".loc" || d == ".file" || strings.HasPrefix(s, ".loc\t") || strings.HasPrefix(s, ".file\t") {
			continue // a directive of the source's line table (not .local)
		}
		if s != "" && ptxInstructionLine(s) {
			fmt.Fprintf(&b, "\t.loc 1 %d 0\n", i+1)
		}
		b.WriteString(l)
		b.WriteByte('\n')
		if strings.HasPrefix(s, ".address_size") {
			b.WriteString(".file 1 \"matmul.ptx\"\n")
		}
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// sassPerPTXLine assembles ptx (with WithLineTable's line table) for sm_<cc> and counts nvdisasm's
// SASS instructions per PTX line: counts[n-1] is line n's, a function's instructions outside any
// line added to its first line's; anchors[n-1] is how many of line n's are the one SASS opcode its
// PTX instruction becomes where it is one of copyAnchors (sassAnchors), never-executed placeholders
// (guarded by !PT) left out; res is ptxas -v's report.
func sassPerPTXLine(ctx context.Context, px *Ptxas, nvdisasm, ptx string, cc int) (counts, anchors []int, res []EntryResources, err error) {
	listing, cut, res, err := px.disassembly(ctx, WithLineTable(ptx), cc, nvdisasm)
	if err != nil {
		return nil, nil, res, err
	}
	counts, anchors, err = lineCounts(ptx, listing, cut, cc)
	return counts, anchors, res, err
}

// lineCounts is sassPerPTXLine's counts and anchors from the nvdisasm -g listing of ptx's line
// table assembled for sm_<cc> (cut: the listing was cut at MaxDisassembly, an error).
func lineCounts(ptx, listing string, cut bool, cc int) (counts, anchors []int, err error) {
	if cut { // a cut listing (past MaxDisassembly; about 2 MB for the table's sm_80) would count short
		return nil, nil, fmt.Errorf("sm_%d: nvdisasm's listing is longer than %d bytes", cc, MaxDisassembly)
	}
	// The JSON budget is the listing's, not a cell's MaxSASSBytes: past that the SASS leaves out
	// whole functions' lines (with the FP32 tile search's candidates, the kernels listed after them).
	s := parseSASS(listing, PtxasArch(ptx, cc), 0, MaxDisassembly)
	counts = make([]int, strings.Count(ptx, "\n")+1)
	for _, fn := range s.Functions {
		unlined, first := 0, 0
		for _, l := range fn.Lines {
			switch {
			case l.Line == 0:
				unlined += l.Count
			case l.Line > len(counts):
				return nil, nil, fmt.Errorf("sm_%d: %s: line %d is past the PTX's %d", cc, fn.Name, l.Line, len(counts))
			default:
				if first == 0 || l.Line < first {
					first = l.Line
				}
				counts[l.Line-1] += l.Count
			}
		}
		if first > 0 {
			counts[first-1] += unlined
		}
	}
	return counts, anchorCounts(ptx, listing, len(counts)), nil
}

// anchorCounts is, for each of n PTX lines, how many instructions of the nvdisasm -g listing
// (WithLineTable's lines) under that line are the SASS opcode its PTX anchor becomes (sassAnchors),
// an instruction guarded by !PT (a placeholder ptxas puts beside an LDGSTS, never executed) not
// counted; 0 for lines that are no anchor.
func anchorCounts(ptx, listing string, n int) []int {
	lines := strings.Split(ptx, "\n")
	out := make([]int, n)
	line := 0
	for _, text := range strings.Split(listing, "\n") {
		if m := sassLineTag.FindStringSubmatch(text); m != nil {
			line = sassInt(m[2])
			continue
		}
		m := sassInstr.FindStringSubmatch(text)
		if m == nil || line < 1 || line > n || line > len(lines) || strings.HasPrefix(m[2], "@!PT ") {
			continue
		}
		op := m[2]
		if strings.HasPrefix(op, "@") {
			_, op, _ = strings.Cut(op, " ")
		}
		op, _, _ = strings.Cut(op, " ")
		op, _, _ = strings.Cut(op, ".")
		if want := sassAnchor(ptxOpcode(strings.TrimSpace(lines[line-1]))); want != "" && op == want {
			out[line-1]++
		}
	}
	return out
}

// GenerateRungSASS returns the Go source of rungsass.gen.go: for each of RungSASSArchs, the SASS
// instructions per line of the embedded compute_80 PTX (sassPerPTXLine), ptxas's run of its line
// table taken from tools (RungTools.lined, which GenerateRungResources given the same tools shares)
// and listed by tools.Nvdisasm. An error is a tool's (GenerateRungResources' and Disassemble's).
func GenerateRungSASS(ctx context.Context, tools *RungTools) ([]byte, error) {
	ptx, err := fs.ReadFile(PTX, PTXName("matmul.cu", rungSASSPTXArch))
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.WriteString("// Code generated by `go generate ./gpu/nvidia` (internal/genrungs -sass: ptxas -lineinfo and nvdisasm -g of the embedded PTX); DO NOT EDIT.\n\n")
	b.WriteString("package nvidia\n\n")
	fmt.Fprintf(&b, "// rungSASSPtxasVersion is the release of the ptxas that compiled rungSASS.\nconst rungSASSPtxasVersion = %s\n\n", strconv.Quote(tools.Ptxas.Version))
	b.WriteString("// rungSASS is, per architecture, the SASS instructions of each line of the compute_80 PTX and the\n// copies of the line's basic block, one character a line (sassCountDigits; RungSASSPerLine).\n")
	b.WriteString("var rungSASS = []struct{ arch, counts, copies string }{\n")
	for _, cc := range RungSASSArchs {
		cubin, _, err := tools.lined(ctx, cc)
		if err != nil {
			return nil, err
		}
		listing, cut, err := disassembleCubin(ctx, cubin, tools.Nvdisasm)
		if err != nil {
			return nil, err
		}
		counts, anchors, err := lineCounts(string(ptx), listing, cut, cc)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(&b, "\t{%q, %q, %q},\n", fmt.Sprintf("sm_%d", cc), sassDigits(counts), sassDigits(blockCopies(string(ptx), counts, anchors)))
	}
	b.WriteString("}\n")
	return format.Source(b.Bytes())
}

// RungTools are the tools GenerateRungResources and GenerateRungSASS run (Nvdisasm, nvdisasm's
// path, is the second's only), keeping the runs of ptxas both need: each architecture of
// RungSASSArchs is assembled from the compute_80 PTX's line table (WithLineTable; ptxas -v
// -lineinfo) once, its report being that architecture's records in rungs.gen.go (a line table
// changes no allocation: SASSPerPTXLine) and its cubin what nvdisasm lists for rungsass.gen.go.
// Safe for concurrent use.
type RungTools struct {
	Ptxas    *Ptxas
	Nvdisasm string

	mu    sync.Mutex
	lines map[int]linedRun // by architecture (compute capability)
}

// linedRun is one ptxas -v -lineinfo run of the compute_80 PTX's line table: the cubin and the
// report.
type linedRun struct {
	cubin []byte
	res   []EntryResources
}

// lined is the run of ptxas -v -lineinfo on the compute_80 PTX's line table for sm_<cc>, made by
// the first call for cc; an error (ptxas's, or reading the PTX) is not kept.
func (r *RungTools) lined(ctx context.Context, cc int) ([]byte, []EntryResources, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if run, ok := r.lines[cc]; ok {
		return run.cubin, run.res, nil
	}
	ptx, err := fs.ReadFile(PTX, PTXName("matmul.cu", rungSASSPTXArch))
	if err != nil {
		return nil, nil, err
	}
	cubin, res, err := r.Ptxas.assembleLineinfo(ctx, WithLineTable(string(ptx)), cc)
	if err != nil {
		return nil, nil, err
	}
	if r.lines == nil {
		r.lines = map[int]linedRun{}
	}
	r.lines[cc] = linedRun{cubin, res}
	return cubin, res, nil
}

// sassDigits is counts one character each (sassCountDigits), capped at RungSASSCapped.
func sassDigits(counts []int) string {
	var s strings.Builder
	for _, n := range counts {
		s.WriteByte(sassCountDigits[min(n, RungSASSCapped)])
	}
	return s.String()
}
