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

// exhaustive reports whether the tests run their whole sweeps (PLAYGROUND_EXHAUSTIVE=1, a step of
// .ci/run) rather than the documented subset `go test ./...` runs.
func exhaustive() bool { return os.Getenv("PLAYGROUND_EXHAUSTIVE") == "1" }
