// Package fakecuda builds, for tests on machines without a GPU, a strict stand-in for the NVIDIA
// driver API (libcuda.so.1) and cuBLAS (libcublas.so.13) from C (testdata/fakecuda.c, whose header
// says what it checks) and points GPU worker processes started afterwards at it. The playground never
// uses cgo; only these tests need a C compiler.
package fakecuda

import (
	_ "embed"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
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
// without a C compiler (cc, or $CC); in CI (CI=true) a missing compiler fails it.
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
	dir := t.TempDir()
	src := filepath.Join(dir, "fakecuda.c")
	if err := os.WriteFile(src, source, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"-o", filepath.Join(dir, "libcuda.so.1")},
		{"-DFAKE_CUBLAS", "-o", filepath.Join(dir, "libcublas.so.13"), "-L" + dir, "-l:libcuda.so.1"},
	} {
		args = append([]string{"-shared", "-fPIC", "-O2", "-Wall", "-Werror", src}, args...)
		if out, err := exec.Command(compiler, args...).CombinedOutput(); err != nil {
			t.Fatalf("building the fake CUDA library (%s %s): %v\n%s", compiler, strings.Join(args, " "), err, out)
		}
	}
	return dir
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
