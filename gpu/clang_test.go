package gpu

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpuplayground/playground/gpu/nvidia"
)

// foundClang is nvidia.FindClang's answer, looked for once in this test binary (each look starts
// clang): the tests that need clang do not change PATH.
var foundClang = sync.OnceValues(nvidia.FindClang)

// needClang finds clang; in CI (CI=true) a missing clang fails the test, elsewhere it skips.
func needClang(t *testing.T) {
	t.Helper()
	if _, err := foundClang(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("clang is required in CI (Debian: apt-get install clang): %v", err)
		}
		t.Skipf("skipping: no clang (%v); Debian: apt-get install clang", err)
	}
}

// The compile worker uses clang where NVRTC is missing (forced here with nvidia.CompilerEnv, which the
// worker inherits): PTX comes back, and a compile error reads as NVRTC's does, on the cell's lines.
func TestCompileWithClangThroughTheRealWorker(t *testing.T) {
	needClang(t)
	t.Setenv(nvidia.CompilerEnv, "clang")
	c, _ := realCompiler(t)
	ptx, err := c.Compile(context.Background(), `extern "C" __global__ void twice(float* x) { x[threadIdx.x] *= 2; }`, "ok.cu", "86")
	if err != nil || !strings.Contains(ptx, ".entry twice(") || !strings.Contains(ptx, ".target sm_80") {
		t.Fatalf("got %v and %.200q, want PTX for sm_80 with entry twice", err, ptx)
	}
	_, err = c.Compile(context.Background(), "extern \"C\" __global__ void k(float* x) {\n  x[0] = nope;\n}\n", "cell.cu", "80")
	if err == nil || !strings.Contains(err.Error(), "cell.cu(2): error: use of undeclared identifier 'nope'") {
		t.Errorf("got %v, want clang's log in NVRTC's form pointing at cell.cu line 2", err)
	}
}

// With no compiler at all the compile says so and names the packages: never a verdict on the
// kernel (no "cell.cu(LINE)" for the cell to call a compile error).
func TestCompileWithoutAnyCompilerNamesThePackages(t *testing.T) {
	t.Setenv(nvidia.CompilerEnv, "clang") // NVRTC is not looked at…
	t.Setenv("PATH", t.TempDir())         // …and there is no clang
	c, _ := realCompiler(t)
	_, err := c.Compile(context.Background(), "extern \"C\" __global__ void k(float* x) {\n  x[0] = nope;\n}\n", "cell.cu", "80")
	if err == nil || !strings.HasPrefix(err.Error(), nvidia.NoCompiler) || strings.Contains(err.Error(), "cell.cu(") {
		t.Fatalf("got %v, want %q", err, nvidia.NoCompiler)
	}
	r := Probe(context.Background(), &Supervisor{Transport: Exec{Path: mustExe(t), Args: []string{WorkerCommand}}})
	if r.Compiler != "none" || !strings.Contains(strings.Join(r.Notes, "\n"), nvidia.NoCompiler) {
		t.Errorf("probe: compiler %q, notes %q; want none and a note naming the packages", r.Compiler, r.Notes)
	}
}

// A compile worker refuses what the source rule refuses before it looks for a compiler (which costs
// more than the refusal: NVRTC's load, clang's start): with none here, a file trick is still
// refused on its line, and a kernel the rule passes gets nvidia.NoCompiler.
func TestCompileWorkerRefusesBeforeLookingForACompiler(t *testing.T) {
	t.Setenv(nvidia.CompilerEnv, "clang") // NVRTC is not looked at…
	t.Setenv("PATH", t.TempDir())         // …and there is no clang
	c, _ := realCompiler(t)
	_, err := c.Compile(context.Background(), "__device__ int x;\n#include \"/etc/hostname\"\n", "cell.cu", "80")
	if err == nil || !strings.Contains(err.Error(), "cell.cu(2): error: ") || strings.Contains(err.Error(), nvidia.NoCompiler) {
		t.Errorf("got %v, want the refusal of cell.cu line 2", err)
	}
	if _, err := c.Compile(context.Background(), "__global__ void k() {}\n", "cell.cu", "80"); err == nil || !strings.Contains(err.Error(), nvidia.NoCompiler) {
		t.Errorf("a kernel the rule passes: got %v, want %q", err, nvidia.NoCompiler)
	}
}

func mustExe(t *testing.T) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return exe
}

// The device report names the compiler the worker uses.
func TestProbeNamesTheCompiler(t *testing.T) {
	needClang(t)
	t.Setenv(nvidia.CompilerEnv, "clang")
	s := &Supervisor{Transport: Exec{Path: mustExe(t), Args: []string{WorkerCommand}}}
	defer s.Close()
	if r := Probe(context.Background(), s); !strings.HasPrefix(r.Compiler, "clang 1") && !strings.HasPrefix(r.Compiler, "clang 2") {
		t.Errorf("compiler %q, want clang <version>", r.Compiler)
	}
}

// A compile bomb through clang ends at the time limit like NVRTC's, and clang, a child of the
// compile worker, goes with the worker: nothing keeps running in the compile's folder.
func TestClangCompileBombTakesTooLong(t *testing.T) {
	needClang(t)
	if runtime.GOOS != "linux" {
		t.Skip("clang is killed with its worker on Linux only")
	}
	t.Setenv(nvidia.CompilerEnv, "clang")
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp) // the worker makes clang's folder here
	c, _ := realCompiler(t)
	// The limit may fire before a loaded machine has started clang at all (the worker and clang's own
	// start-up count against it): then try again with twice the limit, so the test checks that clang
	// itself is stopped, not how fast this machine starts processes.
	var err error
	seen := false
	for limit := 2 * time.Second; !seen && limit <= 16*time.Second; limit *= 2 {
		c.Timeout = limit
		errc := make(chan error, 1)
		go func() { _, err := c.Compile(context.Background(), bomb(28, ""), "cell.cu", "80"); errc <- err }()
		for len(processesIn(tmp)) == 0 && len(errc) == 0 { // clang starts in its folder under tmp
			time.Sleep(10 * time.Millisecond)
		}
		seen = len(processesIn(tmp)) > 0
		err = await(t, errc)
	}
	if !seen {
		t.Fatal("clang was never seen running in the compile's folder, even with a 16 s limit")
	}
	var te *CompileTimeoutError
	want := fmt.Sprintf("compilation took too long (limit %s): ", c.Timeout)
	if !errors.As(err, &te) || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("got %v, want %s…", err, want)
	}
	// The kernel kills clang when its worker dies; wait for it to be gone (a busy machine may take a while).
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		left := processesIn(tmp)
		if len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("processes still running in the compile's folder: %v", left)
		}
	}
	c.Timeout = 2 * time.Minute // the compile after the bomb checks that compiling still works, not its speed on a loaded machine
	if _, err := c.Compile(context.Background(), `extern "C" __global__ void k(float* p) { p[0] = 1; }`, "cell.cu", "80"); err != nil {
		t.Errorf("the compile after the bomb: %v", err)
	}
}

// processesIn lists the pids whose working directory is under dir.
func processesIn(dir string) []string {
	var pids []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		cwd, err := os.Readlink(filepath.Join("/proc", e.Name(), "cwd"))
		if err == nil && strings.HasPrefix(cwd, dir+string(filepath.Separator)) {
			pids = append(pids, e.Name())
		}
	}
	return pids
}
