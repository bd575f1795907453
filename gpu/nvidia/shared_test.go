package nvidia

import (
	"context"
	"io/fs"
	"os"
	"sync"
)

// Compiles that several tests of this binary need, made once (issue 36: the package's tests once
// compiled matmul.cu with clang twice per architecture, about 8 CPU s each).

// clangCompile is one compile of matmul.cu by clang: its PTX, clang's messages and its error.
type clangCompile struct {
	ptx, log string
	err      error
}

// clangMatmulCompiles are the compiles of matmul.cu by clang this test binary made, by architecture.
var clangMatmulCompiles struct {
	sync.Mutex
	byArch map[int]clangCompile
}

// ClangMatmul is what c.Compile gives for src/matmul.cu (as "matmul.cu") for compute_<arch>, compiled
// the first time a test asks and handed back after: clang is deterministic for one source and
// target, so TestClangCompilesEveryKernel (the PTX and clang's messages) and
// TestClangLadderKernelsMatchGonum (the PTX run in the virtual GPU) check the same compile. c is
// the clang of FindClang (one per machine); the error is clang's or reading the source's.
func ClangMatmul(c *Clang, arch int) (ptx, log string, err error) {
	clangMatmulCompiles.Lock()
	defer clangMatmulCompiles.Unlock()
	if r, ok := clangMatmulCompiles.byArch[arch]; ok {
		return r.ptx, r.log, r.err
	}
	src, err := fs.ReadFile(Sources, "src/matmul.cu")
	if err != nil {
		return "", "", err
	}
	var r clangCompile
	r.ptx, r.log, r.err = c.Compile(context.Background(), string(src), "matmul.cu", arch)
	if clangMatmulCompiles.byArch == nil {
		clangMatmulCompiles.byArch = map[int]clangCompile{}
	}
	clangMatmulCompiles.byArch[arch] = r
	return r.ptx, r.log, r.err
}

// sharedRungTools is the RungTools of this test binary: TestRungResourcesAreCurrent and
// TestRungSASSIsCurrent share its ptxas runs of the compute_80 PTX's line table (four, about 0.8
// CPU s each).
var sharedRungTools struct {
	sync.Mutex
	tools *RungTools
}

// rungTools is the test binary's RungTools for px and the nvdisasm at nvdisasm, made by the first
// call for them (a call for other tools makes new ones).
func rungTools(px *Ptxas, nvdisasm string) *RungTools {
	sharedRungTools.Lock()
	defer sharedRungTools.Unlock()
	if t := sharedRungTools.tools; t == nil || *t.Ptxas != *px || t.Nvdisasm != nvdisasm {
		sharedRungTools.tools = &RungTools{Ptxas: px, Nvdisasm: nvdisasm}
	}
	return sharedRungTools.tools
}

// toolLooks are FindClang's and FindPtxas's answers in this test binary, by the PATH and PtxasEnv
// they were asked under: each look starts the tool (clang -v -print-targets, ptxas --version:
// about 0.05 CPU s), and two dozen tests need one of them.
var toolLooks struct {
	sync.Mutex
	clang map[string]toolLook[*Clang]
	ptxas map[string]toolLook[*Ptxas]
}

// toolLook is one answer of a tool's look-up.
type toolLook[T any] struct {
	tool T
	err  error
}

// lookOnce is m's answer for the environment now (PATH and PtxasEnv), find's where m has none,
// kept in m; m is toolLooks', which the caller holds locked.
func lookOnce[T any](m *map[string]toolLook[T], find func() (T, error)) (T, error) {
	key := os.Getenv("PATH") + "\x00" + os.Getenv(PtxasEnv)
	if l, ok := (*m)[key]; ok {
		return l.tool, l.err
	}
	if *m == nil {
		*m = map[string]toolLook[T]{}
	}
	tool, err := find()
	(*m)[key] = toolLook[T]{tool, err}
	return tool, err
}

// SharedClang is FindClang's answer, looked for once in this test binary per PATH.
func SharedClang() (*Clang, error) {
	toolLooks.Lock()
	defer toolLooks.Unlock()
	return lookOnce(&toolLooks.clang, FindClang)
}

// sharedPtxas is FindPtxas's answer, looked for once in this test binary per PATH and PtxasEnv.
func sharedPtxas() (*Ptxas, error) {
	toolLooks.Lock()
	defer toolLooks.Unlock()
	return lookOnce(&toolLooks.ptxas, FindPtxas)
}

// linesSASS is px.Disassemble's answer for testdata/sass/lines.ptx on sm_90 with the nvdisasm at
// nvdisasm, made by the first call (for other tools, made again): TestDisassemble and
// TestSASSPerPTXLine check the same run (ptxas and nvdisasm, about 0.3 CPU s).
func linesSASS(px *Ptxas, nvdisasm string) (SASS, []EntryResources, error) {
	linesRun.Lock()
	defer linesRun.Unlock()
	if r := linesRun.run; r != nil && r.px == *px && r.nvdisasm == nvdisasm {
		return r.sass, r.res, r.err
	}
	r := &disassembly{px: *px, nvdisasm: nvdisasm}
	ptx, err := os.ReadFile("testdata/sass/lines.ptx")
	if err != nil {
		return SASS{}, nil, err
	}
	r.sass, r.res, r.err = px.Disassemble(context.Background(), string(ptx), 90, nvdisasm)
	linesRun.run = r
	return r.sass, r.res, r.err
}

// linesRun is linesSASS's run.
var linesRun struct {
	sync.Mutex
	run *disassembly
}

// disassembly is one run of Ptxas.Disassemble: the tools and the answer.
type disassembly struct {
	px       Ptxas
	nvdisasm string
	sass     SASS
	res      []EntryResources
	err      error
}

// exhaustive reports whether the tests run their whole sweeps (PLAYGROUND_EXHAUSTIVE=1, a step of
// .ci/run) rather than the documented subset `go test ./...` runs.
func exhaustive() bool { return os.Getenv("PLAYGROUND_EXHAUSTIVE") == "1" }
