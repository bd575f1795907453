package nvidia

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// ptxas is NVIDIA's PTX assembler: it turns PTX into the machine code (SASS) of one architecture,
// allocating the registers that the PTX's virtual ones become. Its -v report says, per kernel, the
// registers per thread, the static shared memory, and the stack and spills: what the occupancy
// calculator needs and what the PTX alone cannot tell. It needs no GPU.

// PtxasEnv, when set, names the ptxas to use (a path, or a name looked for on PATH) ahead of
// PtxasPaths' others. Tests set it to put a probe in ptxas's place.
const PtxasEnv = "PLAYGROUND_PTXAS"

// PtxasPaths lists where ptxas is looked for, in order: PtxasEnv's value when set, the unpacked
// CUDA 12.4's (.ci/run), the toolkit's usual place, then "ptxas" on PATH.
func PtxasPaths() []string { return cudaToolPaths("ptxas", PtxasEnv) }

// cudaToolPaths lists where CUDA 12.4's tool name is looked for: env's value when set, the unpacked
// CUDA 12.4's (.ci/run), the toolkit's usual place, then name on PATH.
func cudaToolPaths(name, env string) []string {
	paths := []string{filepath.Join(UnpackedCUDA12, "usr/bin", name), filepath.Join("/usr/local/cuda/bin", name), name}
	if p := os.Getenv(env); p != "" {
		paths = append([]string{p}, paths...)
	}
	return paths
}

// lookFirst is the first of paths that exists (exec.LookPath), without running it; "" where none
// does.
func lookFirst(paths []string) string {
	for _, p := range paths {
		if path, err := exec.LookPath(p); err == nil {
			return path
		}
	}
	return ""
}

// Ptxas is a ptxas found on this machine.
type Ptxas struct {
	Path    string // the command's file
	Version string // e.g. "12.4"
}

// FindPtxas returns the first of PtxasPaths that runs, or an error listing what was tried.
func FindPtxas() (*Ptxas, error) {
	var tried []string
	for _, p := range PtxasPaths() {
		path, err := exec.LookPath(p)
		if err != nil {
			tried = append(tried, p)
			continue
		}
		px, err := PtxasAt(path)
		if err != nil {
			tried = append(tried, err.Error())
			continue
		}
		return px, nil
	}
	return nil, fmt.Errorf("ptxas not found (tried %s): .ci/run unpacks CUDA 12.4's from Debian trixie's nvidia-cuda-toolkit", strings.Join(tried, ", "))
}

// LookPtxas is the path of the first of PtxasPaths that exists (exec.LookPath), without running
// it; "" where none does. A confined compile worker looks before it confines itself, then runs it
// (PtxasAt) confined.
func LookPtxas() string { return lookFirst(PtxasPaths()) }

// PtxasAt is the ptxas at path, whose --version must name its release; the error says
// "PATH (why)".
func PtxasAt(path string) (*Ptxas, error) {
	out, err := exec.Command(path, "--version").Output()
	if err != nil {
		return nil, fmt.Errorf("%s (%v)", path, err)
	}
	m := ptxasVersion.FindSubmatch(out)
	if m == nil {
		return nil, fmt.Errorf("%s (no version)", path)
	}
	return &Ptxas{Path: path, Version: string(m[1])}, nil
}

var ptxasVersion = regexp.MustCompile(`release (\d+\.\d+)`)

// EntryResources is what ptxas -v reports of one kernel for one architecture.
type EntryResources struct {
	Entry string // the kernel's name in the PTX
	Arch  string // e.g. "sm_90"
	// Registers is the registers per thread ptxas allocated.
	Registers int
	// SharedBytes is the static shared memory per block (bytes; dynamic shared memory is the
	// launch's).
	SharedBytes int
	// StackBytes is the stack frame per thread; SpillStores and SpillLoads the bytes of registers
	// spilled to local memory and loaded back (0 and 0 where the registers sufficed).
	StackBytes, SpillStores, SpillLoads int
}

// Resources assembles ptx for sm_<cc> (e.g. 90 → sm_90; sm_90a for PTX that targets it: PtxasArch) with -v and returns each kernel's
// resources, in the PTX's order. The PTX must target a virtual architecture not above cc. ptxas runs
// in a temporary folder (under TMPDIR, which may be relative: a confined compile worker's is "."),
// with the environment's PATH only, is killed when ctx ends (or, on Linux, when this process dies), and its
// report is read up to clangLogLimit bytes. A PTX ptxas refuses returns an error with its message;
// an architecture it does not know, too ("ptxas fatal : Value 'sm_100' is not defined …").
func (p *Ptxas) Resources(ctx context.Context, ptx string, cc int) ([]EntryResources, error) {
	return p.ResourcesArch(ctx, ptx, PtxasArch(ptx, cc))
}

// ResourcesArch is Resources for a real architecture written as ptxas takes it ("sm_90a").
func (p *Ptxas) ResourcesArch(ctx context.Context, ptx, arch string) ([]EntryResources, error) {
	dir, err := os.MkdirTemp("", "playground-ptxas-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	if err := os.WriteFile(filepath.Join(dir, "kernel.ptx"), []byte(ptx), 0o600); err != nil {
		return nil, err
	}
	var out limitedBuffer
	runErr := runTool(ctx, dir, &out, &out, p.Path, "-arch="+arch, "-v", "-o", "kernel.cubin", "kernel.ptx")
	if ctx.Err() != nil {
		return nil, context.Cause(ctx)
	}
	report := out.String()
	if runErr != nil {
		return nil, fmt.Errorf("ptxas %s -arch=%s: %v\n%s", p.Version, arch, runErr, strings.TrimSpace(report))
	}
	return ParsePtxasReport(report)
}

// The lines of ptxas -v's report that ParsePtxasReport reads.
var (
	ptxasEntry = regexp.MustCompile(`^ptxas info\s*: Compiling entry function '([^']+)' for '([^']+)'`)
	ptxasProps = regexp.MustCompile(`^ptxas info\s*: Function properties for (\S+)`)
	ptxasFrame = regexp.MustCompile(`^\s*(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads`)
	ptxasUsed  = regexp.MustCompile(`^ptxas info\s*: Used (\d+) registers`)
	ptxasSmem  = regexp.MustCompile(`(\d+) bytes smem`)
)

// ParsePtxasReport reads ptxas -v's report: for each "Compiling entry function 'k' for 'sm_90'",
// the "Function properties for k" line after it (stack frame, spill stores, spill loads) and its
// "Used N registers, …, M bytes smem" line. The properties of device functions that were not
// inlined (reported under their own names) are not the kernel's and are skipped. A report that
// names no entry is an error.
func ParsePtxasReport(report string) ([]EntryResources, error) {
	var out []EntryResources
	cur, props := -1, ""
	for _, line := range strings.Split(report, "\n") {
		if m := ptxasEntry.FindStringSubmatch(line); m != nil {
			out = append(out, EntryResources{Entry: m[1], Arch: m[2]})
			cur, props = len(out)-1, ""
			continue
		}
		if cur < 0 {
			continue
		}
		e := &out[cur]
		if m := ptxasProps.FindStringSubmatch(line); m != nil {
			props = m[1]
			continue
		}
		if m := ptxasFrame.FindStringSubmatch(line); m != nil && props == e.Entry {
			e.StackBytes, e.SpillStores, e.SpillLoads = ptxasInt(m[1]), ptxasInt(m[2]), ptxasInt(m[3])
			continue
		}
		if m := ptxasUsed.FindStringSubmatch(line); m != nil {
			e.Registers = ptxasInt(m[1])
			if s := ptxasSmem.FindStringSubmatch(line); s != nil {
				e.SharedBytes = ptxasInt(s[1])
			}
		}
	}
	if len(out) == 0 {
		return nil, errors.New("ptxas reported no entry function")
	}
	return out, nil
}

// ptxasInt is the decimal digits s (which the patterns above matched) as an int, 0 where too large.
func ptxasInt(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0
	}
	return n
}
