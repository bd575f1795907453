package nvidia

import (
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/ebitengine/purego"
)

// Real NVIDIA libraries without a GPU. .ci/run unpacks (does not install) Debian's libcuda1 (the
// driver API of driver 535, CUDA 12.2) and libcublas11 (CUDA 11.8) under /opt/playground-nvidia, or
// under $PLAYGROUND_NVIDIA_ROOT. On a machine without a GPU the driver library still loads, binds and
// answers: cuInit says CUDA_ERROR_NO_DEVICE, cuDriverGetVersion and cuGetErrorName work. So these
// tests check, against NVIDIA's real files, that every symbol the binding uses exists with the name it
// uses, that the purego calls pass pointers and read results correctly, and that the fallback result
// names match the driver's own.

// nvidiaRoot returns the folder the libraries were unpacked into, failing in CI (where .ci/run
// unpacks them) and skipping elsewhere.
func nvidiaRoot(t *testing.T) string {
	t.Helper()
	root := os.Getenv("PLAYGROUND_NVIDIA_ROOT")
	if root == "" {
		root = "/opt/playground-nvidia"
	}
	if _, err := os.Stat(filepath.Join(root, "usr/lib/x86_64-linux-gnu/nvidia/current/libcuda.so.1")); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("the unpacked NVIDIA libraries are required in CI (.ci/run unpacks them): %v", err)
		}
		t.Skipf("skipping: no unpacked NVIDIA libraries under %s (%v); .ci/run shows how to unpack Debian's libcuda1 and libcublas11 there", root, err)
	}
	return root
}

// realDriver loads and binds the real libcuda.so.1 from the unpacked folder, without cuInit.
func realDriver(t *testing.T) *Driver {
	t.Helper()
	dir := filepath.Join(nvidiaRoot(t), "usr/lib/x86_64-linux-gnu/nvidia/current")
	if p := mappedPath("libcuda.so.1"); p != "" && !strings.HasPrefix(p, dir) {
		t.Skipf("this process already has the machine's own %s; the GPU tests cover it", p)
	}
	onlyFiles := func(name string) (uintptr, error) { // skip the loader path: open the unpacked file
		if !strings.Contains(name, "/") {
			return 0, errors.New("not on the loader path")
		}
		return purego.Dlopen(name, purego.RTLD_NOW|purego.RTLD_GLOBAL)
	}
	lib, err := Loader{Dirs: func() []string { return []string{dir} }, Open: onlyFiles}.Load(DriverNames)
	if err != nil {
		t.Fatal(err)
	}
	if lib.Path != filepath.Join(dir, "libcuda.so.1") || lib.Via != dir {
		t.Fatalf("loaded %+v, want %s/libcuda.so.1", lib, dir)
	}
	d, err := bindDriver(lib)
	if err != nil {
		t.Fatalf("binding the real driver: %v", err)
	}
	return d
}

func TestRealDriverWithoutGPU(t *testing.T) {
	d := realDriver(t)
	v, err := d.Version()
	if err != nil {
		t.Fatal(err)
	}
	// Driver 535 supports CUDA 12.2; any later bookworm update is 12.x or newer.
	var major, minor int
	if _, err := fmt.Sscanf(v, "%d.%d", &major, &minor); err != nil || major < 12 {
		t.Errorf("driver version: got %q, want 12.x or newer", v)
	}
	// The loader's Driver runs cuInit, which fails on a machine without a GPU with the name the
	// device report shows.
	dir := filepath.Dir(d.Lib.Path)
	_, err = Loader{Dirs: func() []string { return []string{dir} }}.Driver()
	if got, want := errString(err), "cuInit: CUDA_ERROR_NO_DEVICE (100)"; got != want {
		t.Errorf("Driver(): got %q, want %q", got, want)
	}
	// Without cuInit, later calls fail; the error names the call and the driver's result name.
	_, err = d.Devices()
	if got, want := errString(err), "cuDeviceGetCount: CUDA_ERROR_NOT_INITIALIZED (3)"; got != want {
		t.Errorf("Devices(): got %q, want %q", got, want)
	}
}

// The names the binding falls back on (when a library has no name function) are the driver's own.
func TestFallbackResultNamesMatchTheDriver(t *testing.T) {
	d := realDriver(t)
	for code, want := range cuResultNames {
		var p *byte
		if res := d.cuGetErrorName(int32(code), &p); res != 0 || p == nil {
			t.Errorf("cuGetErrorName(%d) failed with %d", code, res)
			continue
		}
		if got := cString(p); got != want {
			t.Errorf("code %d: the driver says %s, the table says %s", code, got, want)
		}
	}
}

// Every NVRTC result name in the table is what NVRTC's own nvrtcGetErrorString says.
func TestFallbackNVRTCNamesMatchNVRTC(t *testing.T) {
	n := requireNVRTC(t, NVRTCNames)
	var errorString func(code int32) string
	if err := bind(n.Lib, &errorString, "nvrtcGetErrorString"); err != nil {
		t.Fatal(err)
	}
	for code, want := range nvrtcResultNames {
		if got := errorString(int32(code)); got != want {
			t.Errorf("code %d: NVRTC says %s, the table says %s", code, got, want)
		}
	}
}

// cuBLAS 11 needs cuBLASLt (200 MB) to load, so its symbols are read from the file's dynamic symbol
// table instead of dlopened: every function the binding uses must be exported under that name.
func TestCuBLASSymbolsExist(t *testing.T) {
	path := filepath.Join(nvidiaRoot(t), "usr/lib/x86_64-linux-gnu/libcublas.so.11")
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, err := f.DynamicSymbols()
	if err != nil {
		t.Fatal(err)
	}
	exported := map[string]bool{}
	for _, s := range syms {
		if s.Section != elf.SHN_UNDEF && elf.ST_TYPE(s.Info) == elf.STT_FUNC {
			exported[s.Name] = true
		}
	}
	names := symbolNames((&CuBLAS{}).symbols())
	if len(names) != 6 {
		t.Fatalf("got %d cuBLAS symbols %v, want 6", len(names), names)
	}
	for _, name := range names {
		if !exported[name] {
			t.Errorf("%s does not export %s", path, name)
		}
	}
	// purego checks a signature when it is registered (argument kinds, how many go on the stack:
	// cublasGemmEx has 19): register each against some C function's address, never calling it.
	libc, err := purego.Dlopen("libc.so.6", purego.RTLD_NOW)
	if err != nil {
		t.Fatal(err)
	}
	addr, err := purego.Dlsym(libc, "abs")
	if err != nil {
		t.Fatal(err)
	}
	pairs := (&CuBLAS{}).symbols()
	for i := 0; i < len(pairs); i += 2 {
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("purego refuses the signature of %s: %v", pairs[i+1], r)
				}
			}()
			purego.RegisterFunc(pairs[i], addr)
		}()
	}
}

// The driver and NVRTC symbol lists are bound for real above; this keeps their counts honest, so a
// function added to a struct but not to its list fails here.
func TestSymbolListsCoverEveryFunction(t *testing.T) {
	for _, tt := range []struct {
		name string
		v    any
		syms []any
	}{
		{"Driver", &Driver{}, append((&Driver{}).symbols(), (&Driver{}).optionalSymbols()...)},
		{"NVRTC", &NVRTC{}, (&NVRTC{}).symbols()},
		{"CuBLAS", &CuBLAS{}, (&CuBLAS{}).symbols()},
	} {
		if got, want := len(symbolNames(tt.syms)), funcFields(tt.v); got != want {
			t.Errorf("%s binds %d symbols but has %d function fields", tt.name, got, want)
		}
		names := symbolNames(tt.syms)
		if len(slices.Compact(slices.Sorted(slices.Values(names)))) != len(names) {
			t.Errorf("%s binds a symbol twice: %v", tt.name, names)
		}
	}
}

func symbolNames(pairs []any) []string {
	var names []string
	for i := 1; i < len(pairs); i += 2 {
		names = append(names, pairs[i].(string))
	}
	return names
}

func errString(err error) string {
	if err == nil {
		return "<nil>"
	}
	return strings.TrimSpace(err.Error())
}

// funcFields counts the function-typed fields of the struct v points to.
func funcFields(v any) int {
	t := reflect.TypeOf(v).Elem()
	n := 0
	for i := range t.NumField() {
		if t.Field(i).Type.Kind() == reflect.Func {
			n++
		}
	}
	return n
}
