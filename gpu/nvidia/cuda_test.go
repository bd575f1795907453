package nvidia

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// fakeOpen opens only the paths in ok; sonames (the loader path) always fail.
func fakeOpen(ok map[string]bool) func(string) (uintptr, error) {
	return func(name string) (uintptr, error) {
		if ok[name] {
			return 1, nil
		}
		return 0, fmt.Errorf("cannot open %s", filepath.Base(name))
	}
}

func touch(t *testing.T, path string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("not a library"), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestLoaderPrefersNewestAndReportsWhere(t *testing.T) {
	root := t.TempDir()
	cudaDir := filepath.Join(root, "usr/local/cuda/lib64")
	pyDir := filepath.Join(root, "site-packages/nvidia/cublas/lib")
	old := touch(t, filepath.Join(cudaDir, "libcublas.so.11"))
	newer := touch(t, filepath.Join(pyDir, "libcublas.so.12"))
	l := Loader{Dirs: func() []string { return []string{cudaDir, pyDir} }, Open: fakeOpen(map[string]bool{old: true, newer: true})}
	got, err := l.Load(CuBLASNames)
	if err != nil {
		t.Fatal(err)
	}
	if got.Path != newer || got.Name != "libcublas.so.12" || got.Via != pyDir {
		t.Errorf("got %+v, want libcublas.so.12 from %s", got, pyDir)
	}
}

func TestLoaderUsesLoaderPathFirst(t *testing.T) {
	l := Loader{Dirs: func() []string { return nil }, Open: fakeOpen(map[string]bool{"libnvrtc.so.12": true}),
		Resolve: func(string) string { return "/opt/x/libnvrtc.so.12.4.99" }}
	got, err := l.Load(NVRTCNames)
	if err != nil {
		t.Fatal(err)
	}
	if got.Via != "loader path" || got.Path != "/opt/x/libnvrtc.so.12.4.99" {
		t.Errorf("got %+v, want the loader path with the resolved file", got)
	}
}

func TestLoaderNotFoundListsEverythingTried(t *testing.T) {
	dir := t.TempDir()
	bad := touch(t, filepath.Join(dir, "libcuda.so.1"))
	l := Loader{Dirs: func() []string { return []string{dir, "/nonexistent"} }, Open: fakeOpen(nil)}
	_, err := l.Load(DriverNames)
	var nf *NotFoundError
	if !errors.As(err, &nf) {
		t.Fatalf("got %v, want *NotFoundError", err)
	}
	msg := err.Error()
	for _, want := range []string{"libcuda.so.1 not found", "loader path", bad + " (cannot open libcuda.so.1)", "/nonexistent"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not mention %q", msg, want)
		}
	}
}

// The real dlopen on a file that is not a library fails with the loader's reason, not a crash.
func TestRealDlopenOfFakeLibrary(t *testing.T) {
	dir := t.TempDir()
	// A name no machine has on its loader path (a GPU machine's real libcublas.so.13 would load).
	fake := touch(t, filepath.Join(dir, "libplayground-not-a-library.so.1"))
	l := Loader{Dirs: func() []string { return []string{dir} }}
	_, err := l.Load([]string{"libplayground-not-a-library.so.1"})
	if err == nil || !strings.Contains(err.Error(), fake) {
		t.Fatalf("got %v, want an error naming %s", err, fake)
	}
}

func TestSearchDirs(t *testing.T) {
	venv := t.TempDir()
	lib := filepath.Join(venv, "lib/python3.12/site-packages/nvidia/cuda_nvrtc/lib")
	if err := os.MkdirAll(lib, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("LD_LIBRARY_PATH", "/first:/second")
	t.Setenv("VIRTUAL_ENV", venv)
	dirs := SearchDirs()
	if len(dirs) < 5 || dirs[0] != "/first" || dirs[1] != "/second" || dirs[2] != "/usr/local/cuda/lib64" {
		t.Errorf("got %v, want LD_LIBRARY_PATH, then /usr/local/cuda/lib64, …", dirs)
	}
	found := false
	for _, d := range dirs {
		found = found || d == lib
	}
	if !found {
		t.Errorf("SearchDirs %v lacks the virtualenv's %s", dirs, lib)
	}
}

func TestCheckNamesResults(t *testing.T) {
	if err := check("cuInit", 0, cuResultNames); err != nil {
		t.Errorf("success: got %v", err)
	}
	tests := []struct {
		code  int32
		names map[int]string
		want  string
	}{
		{700, cuResultNames, "cuLaunchKernel: CUDA_ERROR_ILLEGAL_ADDRESS (700)"},
		{100, cuResultNames, "cuLaunchKernel: CUDA_ERROR_NO_DEVICE (100)"},
		{6, nvrtcResultNames, "cuLaunchKernel: NVRTC_ERROR_COMPILATION (6)"},
		{15, cublasStatusNames, "cuLaunchKernel: CUBLAS_STATUS_NOT_SUPPORTED (15)"},
		{4242, cuResultNames, "cuLaunchKernel: UNKNOWN_4242 (4242)"},
	}
	for _, tt := range tests {
		err := check("cuLaunchKernel", tt.code, tt.names)
		var ce *Error
		if !errors.As(err, &ce) || err.Error() != tt.want {
			t.Errorf("code %d: got %v, want %s", tt.code, err, tt.want)
		}
	}
}

func TestBestPTXArch(t *testing.T) {
	for _, tt := range []struct {
		cc, want int
		ok       bool
	}{{90, 80, true}, {86, 80, true}, {80, 80, true}, {75, 70, true}, {70, 70, true}, {61, 0, false}} {
		if got, ok := BestPTXArch(tt.cc); got != tt.want || ok != tt.ok {
			t.Errorf("BestPTXArch(%d) = %d, %v; want %d, %v", tt.cc, got, ok, tt.want, tt.ok)
		}
	}
}

// requireNVRTC loads NVRTC, failing in CI (where .ci/run installs it) and skipping elsewhere.
func requireNVRTC(t *testing.T, names []string) *NVRTC {
	t.Helper()
	n, err := Loader{}.NVRTCFrom(names)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("NVRTC is required in CI: %v", err)
		}
		t.Skipf("skipping: no NVRTC (%v); Debian: apt-get install libnvrtc11.2 libnvrtc-builtins11.8 from non-free", err)
	}
	return n
}

// NVRTC compiles matmul.cu for every architecture it supports from Volta on, each with the entry
// points of the table whose MinCC it reaches and no other. matmul.cu's code differs between
// architectures only where one reaches an entry's MinCC (its #if __CUDA_ARCH__ >= 800), so
// `go test ./...` compiles the representative ones (nvrtcArchsToTry: the lowest of each run of
// architectures that reach the same entries; NVRTC 12.4's 70 and 80 of 70, 72, 75, 80, 86, 87, 89
// and 90, about 2.5 CPU s each, the architectures of the embedded PTX); PLAYGROUND_EXHAUSTIVE=1 (a
// step of .ci/run) compiles every one.
func TestNVRTCCompilesEveryKernelForEverySupportedArch(t *testing.T) {
	n := requireNVRTC(t, NVRTCNames)
	supported, err := n.SupportedArchs()
	if err != nil {
		t.Fatal(err)
	}
	src, err := fs.ReadFile(Sources, "src/matmul.cu")
	if err != nil {
		t.Fatal(err)
	}
	tried := 0
	for _, arch := range nvrtcArchsToTry(supported, exhaustive()) {
		tried++
		ptx, err := CompileArch(n, string(src), "matmul.cu", arch)
		if err != nil {
			t.Fatalf("compute_%d: %v", arch, err)
		}
		for _, e := range Entries() { // the table's entry points (ladder.go)
			if e.Source != "matmul.cu" {
				continue
			}
			has := strings.Contains(ptx, ".entry "+e.Entry+"(")
			if want := arch >= e.MinCC; has != want {
				t.Errorf("compute_%d: entry %s present=%v, want %v", arch, e.Entry, has, want)
			}
		}
	}
	if tried == 0 {
		t.Fatalf("NVRTC %s supports no architecture ≥ 70: %v", n.Lib.Path, supported)
	}
}

// nvrtcArchsToTry is the architectures of supported from 70 on (tensor cores, WMMA, need Volta or
// newer; the playground does too) that TestNVRTCCompilesEveryKernelForEverySupportedArch compiles
// for: all of them when all is set, else the lowest of each run of them whose set of matmul.cu's
// entry points (those whose MinCC it reaches) is the same. The others of a run compile the same
// code for another target; .ci/run's exhaustive step compiles them (the lowest, the highest and
// each on either side of a MinCC, which `go test ./...` compiled before, cost it 2 more compiles of
// about 2.5 CPU s each).
func nvrtcArchsToTry(supported []int, all bool) []int {
	var archs []int
	for _, a := range supported {
		if a >= 70 {
			archs = append(archs, a)
		}
	}
	if all {
		return archs
	}
	reaches := func(arch int) string { // which of the table's matmul.cu entries compute_<arch> has
		var b strings.Builder
		for _, e := range Entries() {
			if e.Source == "matmul.cu" && arch >= e.MinCC {
				b.WriteString(e.Entry + " ")
			}
		}
		return b.String()
	}
	var out []int
	for i, a := range archs {
		if i == 0 || reaches(a) != reaches(archs[i-1]) {
			out = append(out, a)
		}
	}
	return out
}

// The representative architectures of NVRTC 12.4's (and 11.8's) list are the lowest from Volta on
// and sm_80, where the bf16 mma.sync kernels begin; with all set, every one from Volta on.
func TestNVRTCArchsToTry(t *testing.T) {
	for _, tt := range []struct {
		supported []int
		all       bool
		want      []int
	}{
		{[]int{50, 52, 53, 60, 61, 62, 70, 72, 75, 80, 86, 87, 89, 90}, false, []int{70, 80}},
		{[]int{35, 50, 60, 70, 75, 80, 86, 89, 90}, false, []int{70, 80}},
		{[]int{75, 80, 86, 89, 90, 100, 120}, false, []int{75, 80}}, // NVRTC 13's
		{[]int{50, 70, 72, 75, 80, 86, 87, 89, 90}, true, []int{70, 72, 75, 80, 86, 87, 89, 90}},
		{[]int{75, 86}, false, []int{75, 86}},
		{[]int{86, 89, 90}, false, []int{86}},
		{[]int{80}, false, []int{80}},
		{[]int{60}, false, nil},
	} {
		if got := nvrtcArchsToTry(tt.supported, tt.all); !slices.Equal(got, tt.want) {
			t.Errorf("nvrtcArchsToTry(%v, %v) = %v, want %v", tt.supported, tt.all, got, tt.want)
		}
	}
}

func TestNVRTCCompileErrorHasLineNumbers(t *testing.T) {
	n := requireNVRTC(t, NVRTCNames)
	src := "extern \"C\" __global__ void k(float* x) {\n    int i = threadIdx.x;\n    x[i] = undefined_thing;\n}\n"
	_, log, err := n.Compile(src, "learner.cu", "compute_80")
	var ce *CompileError
	if !errors.As(err, &ce) {
		t.Fatalf("got %v, want a *CompileError", err)
	}
	if !strings.Contains(log, "learner.cu(3): error") || !strings.Contains(log, "undefined_thing") {
		t.Errorf("log %q does not point at learner.cu line 3", log)
	}
	var cuErr *Error
	if !errors.As(err, &cuErr) || cuErr.Name != "NVRTC_ERROR_COMPILATION" {
		t.Errorf("got %v, want NVRTC_ERROR_COMPILATION inside", err)
	}
}

// CI checks that the embedded PTX is what `go generate ./gpu/nvidia` makes from the sources now:
// every file of src/ is built (PTXBuilds), each with its own NVRTC, for each of its architectures.
func TestEmbeddedPTXIsCurrent(t *testing.T) {
	names, _ := fs.Glob(Sources, "src/*.cu")
	var built []string
	for _, b := range PTXBuilds() {
		built = append(built, "src/"+b.Source)
		n := requireNVRTC(t, b.NVRTC)
		src, _ := fs.ReadFile(Sources, "src/"+b.Source)
		for _, arch := range b.Archs {
			want, _, err := n.Compile(string(src), b.Source, "compute_"+arch)
			if err != nil {
				t.Fatal(err)
			}
			got, err := fs.ReadFile(PTX, PTXFile(b.Source, arch))
			if err != nil || string(got) != want {
				t.Errorf("%s is stale or missing (%v): run go generate ./gpu/nvidia", PTXFile(b.Source, arch), err)
			}
		}
	}
	if slices.Sort(built); !slices.Equal(built, names) {
		t.Errorf("PTXBuilds build %v; src/ has %v", built, names)
	}
}

// On a machine without the NVIDIA driver the probe says why, and never fails.
func TestProbeWithoutGPUSaysWhy(t *testing.T) {
	if _, err := (Loader{}).Load(DriverNames); err == nil {
		t.Skip("this machine has libcuda.so.1; the GPU tests cover it")
	}
	r := Probe()
	if !strings.HasPrefix(r.Unavailable, "no CUDA device: libcuda.so.1 not found") {
		t.Errorf("got %q, want no CUDA device: libcuda.so.1 not found …", r.Unavailable)
	}
	if r.Summary() != r.Unavailable || len(r.Devices) != 0 {
		t.Errorf("summary %q, devices %v", r.Summary(), r.Devices)
	}
}

func TestReportSummary(t *testing.T) {
	r := Report{Driver: "13.0", Devices: []Device{{Name: "NVIDIA H100 80GB HBM3", ComputeCapability: 90, SMs: 132, MemoryBytes: 80 << 30, ClockKHz: 1980000}}}
	if got, want := r.Summary(), "NVIDIA H100 80GB HBM3 (sm_90, 132 SMs, 80 GiB, 1980 MHz), driver CUDA 13.0"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// Figures an H100 SXM5 driver reports (132 SMs, 1,980 MHz SM clock, 2,619 MHz memory clock, 5,120-bit
// bus) give its published ~67 TFLOP/s FP32 and ~3.35 TB/s.
func TestDerivedPeaks(t *testing.T) {
	d := Device{ComputeCapability: 90, SMs: 132, ClockKHz: 1980000, MemoryClockKHz: 2619000, MemoryBusBits: 5120}
	f, ok := d.PeakFP32()
	if !ok || f < 66e12 || f > 68e12 {
		t.Errorf("PeakFP32 = %g, %v; want about 67e12", f, ok)
	}
	if bw := d.Bandwidth(); bw < 3.3e12 || bw > 3.4e12 {
		t.Errorf("Bandwidth = %g, want about 3.35e12", bw)
	}
	if _, ok := (Device{ComputeCapability: 61}).PeakFP32(); ok {
		t.Error("sm_61 is not in the table")
	}
}

// A device newer than NVRTC gets the newest PTX NVRTC can make below it; the driver JITs it forward.
func TestPickArch(t *testing.T) {
	supported := []int{50, 60, 70, 75, 80, 86, 89, 90} // NVRTC 11.8
	for _, tt := range []struct{ cc, want int }{{90, 90}, {86, 86}, {100, 90}, {120, 90}, {72, 70}} {
		if got, err := pickArch(supported, tt.cc, "libnvrtc"); err != nil || got != tt.want {
			t.Errorf("sm_%d: got %d, %v; want %d", tt.cc, got, err, tt.want)
		}
	}
	if _, err := pickArch([]int{75, 80}, 70, "libnvrtc.so.13"); err == nil || !strings.Contains(err.Error(), "no architecture up to sm_70") {
		t.Errorf("sm_70 with NVRTC 13: got %v", err)
	}
}

func TestFriendly(t *testing.T) {
	for reason, want := range map[string]string{
		"no CUDA device: libcuda.so.1 not found (tried …)":      "no NVIDIA GPU on this server",
		"no CUDA device: cuInit: CUDA_ERROR_NO_DEVICE (100)":    "no NVIDIA GPU on this server",
		"no CUDA device: the driver reports no devices":         "no NVIDIA GPU on this server",
		"no CUDA device: cuInit: CUDA_ERROR_UNKNOWN (999)":      "the NVIDIA GPU is not usable here",
		"no CUDA device: the GPU probe failed: it hung for 20s": "the NVIDIA GPU is not usable here",
	} {
		if got := Friendly(reason); got != want {
			t.Errorf("Friendly(%q) = %q, want %q", reason, got, want)
		}
	}
}
