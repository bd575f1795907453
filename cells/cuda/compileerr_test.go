package cuda

import (
	"context"
	"errors"
	"strconv"
	"testing"

	"github.com/gpuplayground/playground/cells"
	"github.com/gpuplayground/playground/harness"
)

// failingGPU's compiler answers every source with msg, as a compiler's error reaches the kind.
type failingGPU struct {
	testGPU
	msg string
}

func (g *failingGPU) Compile(context.Context, string, string, string) (string, error) {
	return "", errors.New(g.msg)
}

// A compile error shows the learner's lines and the compiler's message first, on the cell's own
// line numbers, then one line saying the kernel does not compile, with the compiler's name and
// code last: never a block that starts with "nvrtcCompileProgram: NVRTC_ERROR_COMPILATION (6):".
func TestCompileErrorLearnersLinesFirst(t *testing.T) {
	spec, err := Parse(cudaCell, gpuAvailable(), harness.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	line := spec.SourceLine + 2 // the log's cell.cu(3)
	for _, c := range []struct{ compiler, want string }{
		{"nvrtcCompileProgram: NVRTC_ERROR_COMPILATION (6):\n" +
			"cell.cu(3): error: identifier \"x\" is undefined\n      x = 1;\n      ^\n\n1 error detected in the compilation of \"cell.cu\".\n",
			"line " + strconv.Itoa(line) + ": error: identifier \"x\" is undefined\n      x = 1;\n      ^\n" +
				"The kernel does not compile (1 error detected; nvrtcCompileProgram: NVRTC_ERROR_COMPILATION (6))."},
		{"clang 14.0.6: exit status 1:\ncell.cu(3): error: use of undeclared identifier 'x'\n    x = 1;\n    ^\n2 errors detected in the compilation of \"cell.cu\".",
			"line " + strconv.Itoa(line) + ": error: use of undeclared identifier 'x'\n    x = 1;\n    ^\n" +
				"The kernel does not compile (2 errors detected; clang 14.0.6: exit status 1)."},
		{"the source was refused before compiling:\ncell.cu(3): error: #include </etc/passwd> is not allowed",
			"line " + strconv.Itoa(line) + ": error: #include </etc/passwd> is not allowed\nThe kernel does not compile (the source was refused before compiling)."},
	} {
		_, err := (&run{env: cells.Env{GPU: &failingGPU{msg: c.compiler}}, spec: spec}).compile(context.Background())
		if err == nil || err.Error() != c.want {
			t.Errorf("compiler said %q:\ngot  %q\nwant %q", c.compiler, err, c.want)
		}
	}
	// What is no compiler's verdict on the source (a limit hit, no compiler) stays as it is.
	limit := "compilation ran out of memory (limit 512 MiB)"
	if _, err := (&run{env: cells.Env{GPU: &failingGPU{msg: limit}}, spec: spec}).compile(context.Background()); err == nil || err.Error() != limit {
		t.Errorf("got %v, want %q as it is", err, limit)
	}
}
