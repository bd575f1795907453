package nvidia

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// nvdisasm is NVIDIA's disassembler of cubins: with -g it writes each instruction of the SASS
// (the machine code ptxas made) under a comment naming the source line it came from, which ptxas
// keeps when it is given -lineinfo and PTX with .loc lines (NVRTC's --generate-line-info, which
// learners' kernels are compiled with). cuobjdump -sass lists the same instructions without the
// lines, so the playground uses nvdisasm. It needs no GPU.

// NvdisasmEnv, when set, names the nvdisasm to use (a path, or a name looked for on PATH) ahead of
// NvdisasmPaths' others. Tests set it to put a probe in its place.
const NvdisasmEnv = "PLAYGROUND_NVDISASM"

// NvdisasmPaths lists where nvdisasm is looked for, in order: NvdisasmEnv's value when set, the
// unpacked CUDA 12.4's (.ci/run), the toolkit's usual place, then "nvdisasm" on PATH.
func NvdisasmPaths() []string { return cudaToolPaths("nvdisasm", NvdisasmEnv) }

// LookNvdisasm is the path of the first of NvdisasmPaths that exists (exec.LookPath), without
// running it; "" where none does.
func LookNvdisasm() string { return lookFirst(NvdisasmPaths()) }

// Limits of a disassembly: nvdisasm's listing is read up to MaxDisassembly bytes, and at most
// MaxSASSInstructions instructions (of all functions) are kept; SASSFunction.Lines count them all.
// The SASS's JSON is at most about MaxSASSBytes, 30% for the functions and their Lines, 70% for
// the instructions (what is past them, in the listing's order, is left out, SASS.Cut), so that it fits the compile worker's response line
// (1 MiB) beside the PTX whatever file names a kernel's #line directives give.
const (
	MaxDisassembly      = 8 << 20
	MaxSASSInstructions = 4096
	MaxSASSBytes        = 640 << 10
	maxSASSText         = 256 // bytes of one instruction's text, or of a file or function name
)

// spend takes the JSON size of v (and a comma) from *room and reports whether it fitted.
func spend(room *int, v any) bool {
	b, err := json.Marshal(v)
	if err != nil || len(b)+1 > *room {
		return false
	}
	*room -= len(b) + 1
	return true
}

// SASS is the machine code of a cubin for one architecture, as nvdisasm -g lists it.
type SASS struct {
	Arch string `json:"arch"` // "sm_90"
	// Tool says what made it: "ptxas 12.4 -lineinfo, nvdisasm -g".
	Tool      string         `json:"tool"`
	Functions []SASSFunction `json:"functions"`
	// Cut says instructions past MaxSASSInstructions, or past MaxDisassembly bytes of the listing,
	// were left out of Instructions (Lines still count those within MaxDisassembly), or that
	// functions, lines or instructions past MaxSASSBytes of JSON were left out.
	Cut bool `json:"cut,omitempty"`
}

// SASSFunction is one function of the cubin (a kernel, or a device function ptxas did not inline)
// under its name in the PTX (C++ names mangled).
type SASSFunction struct {
	Name         string            `json:"name"`
	Instructions []SASSInstruction `json:"instructions"`
	// Lines is the count of the function's instructions per source line, in the order the lines
	// first appear; the instructions with no line (File "") are counted under line 0. Lines past
	// MaxSASSBytes are not listed (SASS.Cut), nor are their instructions kept.
	Lines []SASSLine `json:"lines"`
}

// SASSInstruction is one instruction: its byte offset in the function, the source line it came
// from (File "" and Line 0 where the listing names none), and its text without the final ";"
// ("IMAD R7, R7, UR4, R0", "@P0 EXIT").
type SASSInstruction struct {
	Offset int    `json:"offset"`
	File   string `json:"file,omitempty"`
	Line   int    `json:"line,omitempty"`
	Text   string `json:"text"`
}

// SASSLine is how many instructions (Count) came from source line Line of File.
type SASSLine struct {
	File  string `json:"file,omitempty"`
	Line  int    `json:"line,omitempty"`
	Count int    `json:"count"`
}

// The lines of nvdisasm -g -c's listing that ParseSASS reads.
var (
	sassSection = regexp.MustCompile(`^\s*\.section\s+\.text\.([^,\s]+)`)
	sassLineTag = regexp.MustCompile(`^\s*//## File "([^"]*)", line (\d+)`)
	sassInstr   = regexp.MustCompile(`^\s*/\*([0-9a-fA-F]+)\*/\s+(.*?)\s*;`)
	sassLabel   = regexp.MustCompile(`^\s*(\.L_x_\d+):\s*$`)
	sassSelfBra = regexp.MustCompile("^BRA `\\((\\.L_x_\\d+)\\)$")
)

// ParseSASS reads nvdisasm -g -c's listing of a cubin for arch: each ".section .text.NAME" starts a
// function, each "//## File "F", line N" comment sets the source line of the instructions after
// it, each "/*OFFSET*/ TEXT ;" is an instruction. A function ends at the branch to itself that
// ptxas puts after its last EXIT (never run: it and the NOPs that pad the function after it are
// not counted). At most max instructions are kept in all, and about MaxSASSBytes of JSON (SASS.Cut
// says some functions, lines or instructions were not).
func ParseSASS(listing, arch string, max int) SASS {
	return parseSASS(listing, arch, max, MaxSASSBytes)
}

// parseSASS is ParseSASS with about jsonBytes of JSON instead of MaxSASSBytes.
func parseSASS(listing, arch string, max, jsonBytes int) SASS {
	out := SASS{Arch: arch}
	var fn *SASSFunction
	file, line, label, ended, kept := "", 0, "", false, 0
	room, lineRoom := jsonBytes*7/10, jsonBytes*3/10 // instructions; functions and their lines
	counts := map[SASSLine]int{}                     // of fn, by File and Line
	listed := map[SASSLine]bool{}                    // of fn: in fn.Lines
	finish := func() {
		if fn == nil {
			return
		}
		for i := range fn.Lines {
			fn.Lines[i].Count = counts[SASSLine{File: fn.Lines[i].File, Line: fn.Lines[i].Line}]
		}
		out.Functions = append(out.Functions, *fn)
	}
	for _, text := range strings.Split(listing, "\n") {
		if m := sassSection.FindStringSubmatch(text); m != nil {
			finish()
			fn, file, line, label, ended, counts, listed = &SASSFunction{Name: clipSASS(m[1])}, "", 0, "", false, map[SASSLine]int{}, map[SASSLine]bool{}
			if !spend(&lineRoom, fn) {
				fn, out.Cut = nil, true
			}
			continue
		}
		if fn == nil || ended {
			continue
		}
		if m := sassLineTag.FindStringSubmatch(text); m != nil {
			file, line = clipSASS(m[1]), sassInt(m[2])
			continue
		}
		if m := sassLabel.FindStringSubmatch(text); m != nil {
			label = m[1]
			continue
		}
		m := sassInstr.FindStringSubmatch(text)
		if m == nil {
			continue
		}
		if b := sassSelfBra.FindStringSubmatch(m[2]); b != nil && b[1] == label {
			ended = true
			continue
		}
		label = ""
		key := SASSLine{File: file, Line: line}
		if counts[key] == 0 && spend(&lineRoom, SASSLine{File: file, Line: line, Count: MaxDisassembly}) {
			fn.Lines, listed[key] = append(fn.Lines, key), true
		}
		counts[key]++
		off, _ := strconv.ParseInt(m[1], 16, 64)
		in := SASSInstruction{Offset: int(off), File: file, Line: line, Text: clipSASS(m[2])}
		if !listed[key] || kept >= max || !spend(&room, in) {
			out.Cut = true
			continue
		}
		kept++
		fn.Instructions = append(fn.Instructions, in)
	}
	finish()
	return out
}

// clipSASS is s cut to maxSASSText bytes.
func clipSASS(s string) string {
	if len(s) > maxSASSText {
		return s[:maxSASSText]
	}
	return s
}

// sassInt is s (digits the patterns matched) as an int, 0 where too large.
func sassInt(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0
	}
	return n
}

// Disassemble assembles ptx for sm_<cc> (sm_<cc>a for PTX that targets it: PtxasArch) with -lineinfo and -v (its report is each kernel's
// resources, as Resources returns them: line information changes no allocation) and lists the cubin
// with the nvdisasm at path (-g -c: the code with its source lines), parsed by ParseSASS (at most
// MaxSASSInstructions kept). Both run in a temporary folder as Resources runs ptxas (TMPDIR, PATH only, killed with ctx
// or this process), nvdisasm's listing read up to MaxDisassembly bytes (more sets SASS.Cut). An
// error says which tool failed and its message: a PTX or an architecture ptxas refuses, a
// cubin nvdisasm cannot read.
func (p *Ptxas) Disassemble(ctx context.Context, ptx string, cc int, nvdisasm string) (SASS, []EntryResources, error) {
	listing, cut, res, err := p.disassembly(ctx, ptx, cc, nvdisasm)
	if err != nil {
		return SASS{}, res, err
	}
	s := ParseSASS(listing, PtxasArch(ptx, cc), MaxSASSInstructions)
	s.Tool = fmt.Sprintf("ptxas %s -lineinfo, nvdisasm -g", p.Version)
	s.Cut = s.Cut || cut
	return s, res, nil
}

// disassembly is Disassemble's nvdisasm listing (up to MaxDisassembly bytes, cut saying more came)
// and ptxas's report, unparsed.
func (p *Ptxas) disassembly(ctx context.Context, ptx string, cc int, nvdisasm string) (listing string, cut bool, res []EntryResources, err error) {
	dir, err := os.MkdirTemp("", "playground-sass-")
	if err != nil {
		return "", false, nil, err
	}
	defer os.RemoveAll(dir)
	if res, err = p.assembleIn(ctx, dir, ptx, cc); err != nil {
		return "", false, nil, err
	}
	listing, cut, err = listIn(ctx, dir, nvdisasm)
	return listing, cut, res, err
}

// assembleIn writes ptx to kernel.ptx in dir and assembles it there for sm_<cc> (PtxasArch) with
// -v and -lineinfo into kernel.cubin; it returns ptxas's report.
func (p *Ptxas) assembleIn(ctx context.Context, dir, ptx string, cc int) ([]EntryResources, error) {
	if err := os.WriteFile(filepath.Join(dir, "kernel.ptx"), []byte(ptx), 0o600); err != nil {
		return nil, err
	}
	arch := PtxasArch(ptx, cc)
	var log limitedBuffer
	if err := runTool(ctx, dir, &log, &log, p.Path, "-arch="+arch, "-v", "-lineinfo", "-o", "kernel.cubin", "kernel.ptx"); err != nil {
		return nil, toolError(ctx, fmt.Sprintf("ptxas %s -arch=%s -lineinfo", p.Version, arch), err, log.String())
	}
	return ParsePtxasReport(log.String())
}

// listIn lists kernel.cubin in dir with the nvdisasm at path (-g -c), the listing read up to
// MaxDisassembly bytes (cut saying more came).
func listIn(ctx context.Context, dir, nvdisasm string) (listing string, cut bool, err error) {
	out := &cappedBuffer{limit: MaxDisassembly}
	var log limitedBuffer
	if err := runTool(ctx, dir, out, &log, nvdisasm, "-g", "-c", "kernel.cubin"); err != nil {
		return "", false, toolError(ctx, "nvdisasm -g", err, log.String())
	}
	return out.String(), out.cut, nil
}

// assembleLineinfo is ptx assembled for sm_<cc> as disassembly assembles it, in a temporary folder:
// the cubin and ptxas's report.
func (p *Ptxas) assembleLineinfo(ctx context.Context, ptx string, cc int) (cubin []byte, res []EntryResources, err error) {
	dir, err := os.MkdirTemp("", "playground-sass-")
	if err != nil {
		return nil, nil, err
	}
	defer os.RemoveAll(dir)
	if res, err = p.assembleIn(ctx, dir, ptx, cc); err != nil {
		return nil, nil, err
	}
	cubin, err = os.ReadFile(filepath.Join(dir, "kernel.cubin"))
	return cubin, res, err
}

// disassembleCubin lists cubin as disassembly lists its own, in a temporary folder.
func disassembleCubin(ctx context.Context, cubin []byte, nvdisasm string) (listing string, cut bool, err error) {
	dir, err := os.MkdirTemp("", "playground-sass-")
	if err != nil {
		return "", false, err
	}
	defer os.RemoveAll(dir)
	if err := os.WriteFile(filepath.Join(dir, "kernel.cubin"), cubin, 0o600); err != nil {
		return "", false, err
	}
	return listIn(ctx, dir, nvdisasm)
}

// toolError is a tool's failure (err, what it wrote: log) under its name, or ctx's cause where ctx
// ended.
func toolError(ctx context.Context, name string, err error, log string) error {
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	return fmt.Errorf("%s: %v\n%s", name, err, strings.TrimSpace(log))
}

// runTool runs the program at path with args in dir (relative to it: dir's full path may be closed
// to a confined worker's user, whose own folder is reachable as "." only), with the environment's
// PATH only, killed when ctx ends or (Linux) when this process dies; stdout and stderr get its
// outputs.
func runTool(ctx context.Context, dir string, stdout, stderr io.Writer, path string, args ...string) error {
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "LC_ALL=C", "HOME=.", "TMPDIR=."}
	cmd.SysProcAttr = clangProcAttr()
	cmd.Stdout, cmd.Stderr = stdout, stderr
	return cmd.Run()
}

// cappedBuffer keeps the first limit bytes written to it, and says whether more came (cut).
type cappedBuffer struct {
	b     strings.Builder
	limit int
	cut   bool
}

func (c *cappedBuffer) Write(p []byte) (int, error) {
	if room := c.limit - c.b.Len(); room < len(p) {
		c.b.Write(p[:max(room, 0)])
		c.cut = true
		return len(p), nil
	}
	return c.b.Write(p)
}

func (c *cappedBuffer) String() string { return c.b.String() }
