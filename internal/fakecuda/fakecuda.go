// Package fakecuda builds, for tests on machines without a GPU, a strict stand-in for the NVIDIA
// driver API (libcuda.so.1) and cuBLAS (libcublas.so.13) from C (testdata/fakecuda.c, whose header
// says what it checks) and points GPU worker processes started afterwards at it. The playground never
// uses cgo; only these tests need a C compiler.
package fakecuda

import (
	_ "embed"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/ebitengine/purego"
	"github.com/gpuplayground/playground/gpu/nvidia"
)

//go:embed testdata/fakecuda.c
var source []byte

// Setup builds the stand-in into a fresh folder as libcuda.so.1 and libcublas.so.13 (which links
// against the first) and sets LD_LIBRARY_PATH to that folder for the rest of the test, so that worker
// processes started afterwards load it through the dynamic loader's path. It returns the folder. It
// skips the test on a machine with a real CUDA driver (the GPU tests use that) and, outside CI, on one
// without a C compiler (cc, or $CC); in CI (CI=true) a missing compiler fails it. The C is compiled
// once per test binary and compiler (about 0.7 CPU s); each Setup writes those same files into its
// own folder.
func Setup(t testing.TB) string {
	t.Helper()
	dir := Build(t)
	t.Setenv("LD_LIBRARY_PATH", dir)
	return dir
}

// Build is Setup without the environment: it builds the stand-in into a fresh folder and returns
// it, for a test that gives LD_LIBRARY_PATH to the worker processes it starts itself (and so may run
// in parallel).
func Build(t testing.TB) string {
	t.Helper()
	if _, err := nvidia.LoadDriver(); err == nil {
		t.Skip("this machine has a CUDA driver; the GPU tests use it")
	}
	compiler := os.Getenv("CC")
	if compiler == "" {
		compiler = "cc"
	}
	if _, err := exec.LookPath(compiler); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("the fake CUDA library needs a C compiler in CI: %v", err)
		}
		t.Skipf("skipping: no C compiler (%v) to build the fake CUDA library", err)
	}
	libs, err := builtWith(compiler)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, l := range libs {
		if err := os.WriteFile(filepath.Join(dir, l.name), l.data, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// library is one file of the built stand-in: its name and its bytes.
type library struct {
	name string
	data []byte
}

// built holds the stand-in as this test binary compiled it, by C compiler, and how many times it
// compiled it (builds: once per compiler, which its test checks).
var built struct {
	sync.Mutex
	byCompiler map[string][]library
	builds     int
}

// builtWith is the stand-in's files compiled by compiler: built by the first call for compiler, in
// a temporary folder it then removes, and the same bytes after. An error holds the compiler's
// command and output; a failed build is tried again by the next call.
func builtWith(compiler string) ([]library, error) {
	built.Lock()
	defer built.Unlock()
	if libs, ok := built.byCompiler[compiler]; ok {
		return libs, nil
	}
	dir, err := os.MkdirTemp("", "fakecuda-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	src := filepath.Join(dir, "fakecuda.c")
	if err := os.WriteFile(src, source, 0o644); err != nil {
		return nil, err
	}
	built.builds++
	var libs []library
	for _, l := range []struct {
		name  string
		extra []string
	}{{"libcuda.so.1", nil}, {"libcublas.so.13", []string{"-DFAKE_CUBLAS", "-L" + dir, "-l:libcuda.so.1"}}} {
		args := append([]string{"-shared", "-fPIC", "-O2", "-Wall", "-Werror", src, "-o", filepath.Join(dir, l.name)}, l.extra...)
		if out, err := exec.Command(compiler, args...).CombinedOutput(); err != nil {
			return nil, fmt.Errorf("building the fake CUDA library (%s %s): %v\n%s", compiler, strings.Join(args, " "), err, out)
		}
		data, err := os.ReadFile(filepath.Join(dir, l.name))
		if err != nil {
			return nil, err
		}
		libs = append(libs, library{l.name, data})
	}
	if built.byCompiler == nil {
		built.byCompiler = map[string][]library{}
	}
	built.byCompiler[compiler] = libs
	return libs, nil
}

// DeviceName is the name the stand-in reports for its one device.
const DeviceName = "Fake GPU (host memory, tests)"

// Driver builds the stand-in (Setup) and opens it in this process, from its file only (never a
// library of the same name on the loader's path), bound and initialised. Its functions read
// $FAKECUDA_* at each call, so t.Setenv changes them in this process too.
func Driver(t testing.TB) *nvidia.Driver {
	t.Helper()
	dir := Setup(t)
	onlyFiles := func(name string) (uintptr, error) {
		if !strings.Contains(name, "/") {
			return 0, errors.New("not on the loader path")
		}
		return purego.Dlopen(name, purego.RTLD_NOW|purego.RTLD_GLOBAL)
	}
	d, err := nvidia.Loader{Dirs: func() []string { return []string{dir} }, Open: onlyFiles}.Driver()
	if err != nil {
		t.Fatal(err)
	}
	if d.Lib.Path != filepath.Join(dir, "libcuda.so.1") {
		t.Fatalf("loaded %s, not the stand-in", d.Lib.Path)
	}
	return d
}
