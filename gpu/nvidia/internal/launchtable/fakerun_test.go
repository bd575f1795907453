package launchtable

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/gpuplayground/playground/gpu/nvidia"
	"github.com/gpuplayground/playground/internal/fakecuda"
)

// fakeSMs is the SM count the fake device reports in TestLaunchCuRunsOnFakeCUDA: one, so that a
// persistent rung's grid is visibly cut to it.
const fakeSMs = 1

// launchGrid is the grid the GPU worker launches a Hopper rung k with at the padded size m on a
// device of sms SMs (gpu/hopper.go's hopperGrid): ⌈m/tile⌉, a persistent one min(sms, tiles) rounded
// down to whole clusters (at least one); ok false where another grid is not whole clusters.
func launchGrid(k nvidia.Kernel, m, sms int) (grid [3]int, ok bool) {
	_, grid, _ = k.Shape(m)
	if k.Persistent > 0 {
		grid = [3]int{min(sms, ((m+k.Tile[0]-1)/k.Tile[0])*((m+k.Tile[1]-1)/k.Tile[1])), 1, 1}
	}
	for i, c := range k.Cluster {
		switch {
		case c <= 1:
		case k.Persistent > 0:
			grid[i] = max(grid[i]/c, 1) * c
		case grid[i]%c != 0:
			return grid, false
		}
	}
	return grid, true
}

// wantFakeRun is what launch.cu prints for the rows ks at size n with no repeats (the lines of the
// kernels it launches or finds not whole clusters, in order; for a row named in wrong, whose C the
// check finds wrong, the line up to "check=WRONG C[") and what the fake logs for them: each
// map's cuTensorMapEncodeTiled (BF16 over the padded m×m input, rows 2m bytes apart, the row's box
// and swizzle, 128-byte L2 promotion), the cluster launch, the maps passed and the launch.
func wantFakeRun(ks []nvidia.Kernel, n int, wrong map[string]bool) (out, log []string) {
	swizzle := map[int]int{0: 0, 32: 1, 64: 2, 128: 3}
	seq := 0
	for _, k := range ks {
		m, _, block := k.Shape(n)
		grid, whole := launchGrid(k, m, fakeSMs)
		g := fmt.Sprintf("(%d,%d,%d)", grid[0], grid[1], grid[2])
		if !whole {
			out = append(out, fmt.Sprintf("%s skipped: grid %s at n=%d is not whole (%d,%d,%d) clusters", k.Entry, g, m, k.Cluster[0], k.Cluster[1], k.Cluster[2]))
			continue
		}
		check := "check=ok"
		if wrong[k.Name] {
			check = "check=WRONG C["
		}
		out = append(out, fmt.Sprintf("%s n=%d grid=%s block=(%d,%d,%d) median_s=untimed shared=%d cluster=(%d,%d,%d) maps=%d %s",
			k.Entry, n, g, block[0], block[1], block[2], k.SharedBytes, k.Cluster[0], k.Cluster[1], k.Cluster[2], len(k.TensorMaps), check))
		for _, tm := range k.TensorMaps {
			log = append(log, fmt.Sprintf("cuTensorMapEncodeTiled map=%d dtype=%d rank=2 dims=%d,%d strides=%d box=%d,%d elementStrides=1,1 interleave=0 swizzle=%d l2=2 oob=0",
				seq, nvidia.TensorBFloat16, m, m, 2*m, tm.Box[0], tm.Box[1], swizzle[tm.Swizzle]))
			seq++
		}
		if k.Cluster != ([3]int{}) {
			log = append(log, fmt.Sprintf("cuLaunchKernelEx %s cluster=%d,%d,%d", k.Entry, k.Cluster[0], k.Cluster[1], k.Cluster[2]))
		}
		for i := range k.TensorMaps {
			log = append(log, fmt.Sprintf("cuLaunchKernel %s param=%d map=%d", k.Entry, 6+i, seq-len(k.TensorMaps)+i))
		}
		log = append(log, fmt.Sprintf("cuLaunchKernel %s grid=%d,%d,%d block=%d,%d,%d shared=%d", k.Entry,
			grid[0], grid[1], grid[2], block[0], block[1], block[2], k.SharedBytes))
	}
	return out, log
}

// launchOnFake builds launch.cu with the header of ks as plain C++ (no __CUDACC__: the own kernels
// only, through the driver API) against the strict fake libcuda of internal/fakecuda, which checks
// the launch sequence as the driver would (sm_90a PTX only on 9.0, dynamic shared memory over 48 KiB
// only after cuFuncSetAttribute, tensor maps it encoded over live memory, whole clusters). It returns
// the binary. Skipped without a C++ compiler or CUDA 12's cuda.h, outside CI.
func launchOnFake(t *testing.T, ks []nvidia.Kernel) string {
	t.Helper()
	cxx := cxxCompiler(t)
	inc := cuda12Include(t)
	return buildLaunch(t, cxx, inc, fakecuda.Setup(t), ks)
}

// cxxCompiler is $CXX or c++; the test is skipped without one, outside CI.
func cxxCompiler(t *testing.T) string {
	t.Helper()
	cxx := os.Getenv("CXX")
	if cxx == "" {
		cxx = "c++"
	}
	if _, err := exec.LookPath(cxx); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("no C++ compiler in CI: %v", err)
		}
		t.Skipf("no C++ compiler: %v", err)
	}
	return cxx
}

// buildLaunch compiles launch.cu with the header of ks as plain C++ with cxx against the cuda.h in
// inc, linked to the libcuda.so.1 in lib with every symbol resolved, and returns the binary. The
// object file is compiled once per test binary for a compiler, a cuda.h and a header (about 1.2 CPU
// s: TestLaunchCuRunsOnFakeCUDA and TestLaunchCuLinksAgainstNVIDIALibcuda link the same one, each to
// its libcuda).
func buildLaunch(t *testing.T, cxx, inc, lib string, ks []nvidia.Kernel) string {
	t.Helper()
	obj := filepath.Join(t.TempDir(), "launch.o")
	if err := os.WriteFile(obj, launchObject(t, cxx, inc, ks), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(filepath.Dir(obj), "launch")
	args := []string{"-o", bin, obj, "-L" + lib, "-l:libcuda.so.1", "-Wl,--no-undefined"}
	if out, err := exec.Command(cxx, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", cxx, strings.Join(args, " "), err, out)
	}
	return bin
}

// launchObjects are the object files of launch.cu this test binary compiled, by compiler, cuda.h
// folder and header.
var launchObjects struct {
	sync.Mutex
	byBuild map[[3]string][]byte
}

// launchObject is launch.cu with the header of ks compiled as plain C++ by cxx against the cuda.h in
// inc (not linked): compiled by the first call for them, the same bytes after.
func launchObject(t *testing.T, cxx, inc string, ks []nvidia.Kernel) []byte {
	t.Helper()
	h, err := Header(ks)
	if err != nil {
		t.Fatal(err)
	}
	key := [3]string{cxx, inc, h}
	launchObjects.Lock()
	defer launchObjects.Unlock()
	if obj, ok := launchObjects.byBuild[key]; ok {
		return obj
	}
	src := writeLaunch(t, ks)
	obj := filepath.Join(filepath.Dir(src), "launch.o")
	args := []string{"-x", "c++", "-std=c++17", "-O0", "-Wall", "-Wextra", "-Werror", "-I" + inc, "-c", "-o", obj, src}
	if out, err := exec.Command(cxx, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", cxx, strings.Join(args, " "), err, out)
	}
	data, err := os.ReadFile(obj)
	if err != nil {
		t.Fatal(err)
	}
	if launchObjects.byBuild == nil {
		launchObjects.byBuild = map[[3]string][]byte{}
	}
	launchObjects.byBuild[key] = data
	return data
}

// launchRows is the rows these tests build launch.cu with: the table's (nvidia.LaunchRows) and
// after them variants, which TestLaunchCuRunsOnFakeCUDA launches: in clusters (no row of the table
// sets Cluster yet) cuda-wgmma-multicast's of 1×2, cuda-wgmma-persistent's and cuda-wgmma-ws's of
// 2×1, and cuda-wgmma's with FP16 inputs (variants[3], which the fake, multiplying them as BF16,
// finds wrong).
func launchRows() (rows, variants []nvidia.Kernel) {
	variant := func(k nvidia.Kernel, cluster [3]int) nvidia.Kernel {
		k.Name, k.Cluster = k.Name+"-clusters", cluster
		return k
	}
	byName := func(name string) nvidia.Kernel { k, _ := nvidia.LookupKernel(name); return k }
	f16 := byName("cuda-wgmma")
	f16.Name, f16.Precision = f16.Name+"-f16", "f16"
	variants = []nvidia.Kernel{variant(byName("cuda-wgmma-multicast"), [3]int{1, 2, 1}),
		variant(byName("cuda-wgmma-persistent"), [3]int{2, 1, 1}), variant(byName("cuda-wgmma-ws"), [3]int{2, 1, 1}), f16}
	return append(nvidia.LaunchRows(), variants...), variants
}

// launch.cu links against NVIDIA's own libcuda.so.1 (Debian's libcuda1, driver 535, unpacked by
// .ci/run; no device here): every driver function it calls exists in a real driver under the name
// cuda.h gives it, `-entries` lists the table's kernels (all, tiled, Hopper) without a GPU, and a
// run stops at cuInit with the driver's error. Skipped without the unpacked driver (outside CI) and
// on a machine with a GPU.
func TestLaunchCuLinksAgainstNVIDIALibcuda(t *testing.T) {
	root := os.Getenv("PLAYGROUND_NVIDIA_ROOT")
	if root == "" {
		root = "/opt/playground-nvidia"
	}
	lib := filepath.Join(root, "usr/lib/x86_64-linux-gnu/nvidia/current")
	if _, err := os.Stat(filepath.Join(lib, "libcuda.so.1")); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("the unpacked NVIDIA driver is required in CI (.ci/run unpacks it): %v", err)
		}
		t.Skipf("no unpacked NVIDIA driver: %v", err)
	}
	if _, err := nvidia.LoadDriver(); err == nil {
		t.Skip("this machine has a CUDA driver; the GPU runbook runs launch.cu on it")
	}
	rows, _ := launchRows() // TestLaunchCuRunsOnFakeCUDA's rows: the same object file
	bin := buildLaunch(t, cxxCompiler(t), cuda12Include(t), lib, rows)
	t.Setenv("LD_LIBRARY_PATH", lib)
	// -entries lists every own kernel's entry points (and older ones), "tiled" those of matmul.cu
	// with a fixed block, "hopper" those with an architecture of their own.
	want := map[string][]string{}
	for _, k := range rows {
		if k.BLAS != nil || k.Entry == "" {
			continue
		}
		es := []string{k.Entry}
		if k.Older != nil {
			es = append(es, k.Older.Entry)
		}
		want[""] = append(want[""], es...)
		if !k.AnyBlock && k.Arch == "" {
			want["tiled"] = append(want["tiled"], es...)
		}
		if k.Arch != "" {
			want["hopper"] = append(want["hopper"], es...)
		}
	}
	for mode, es := range want {
		out, err := exec.Command(bin, "-entries", mode).CombinedOutput()
		if got := strings.TrimSpace(string(out)); err != nil || got != strings.Join(es, "|") {
			t.Errorf("launch -entries %s: %q, %v; want %q", mode, got, err, strings.Join(es, "|"))
		}
	}
	out, err := exec.Command(bin, filepath.Join(t.TempDir(), "none.ptx"), "64", "0").CombinedOutput()
	if err == nil || !strings.HasPrefix(string(out), "cuInit(0): CUDA_ERROR_") {
		t.Errorf("launch without a device: %v\n%s\nwant it stopped at cuInit with the driver's error", err, out)
	}
}

// launch.cu launches every Hopper rung of the table as the GPU worker does, checked by the strict
// fake libcuda: the entry of the rung's own PTX, its tensor maps, its dynamic shared memory opted in,
// a persistent grid cut to the device's SMs, and, for rows launched in clusters (variants of the
// table's rows here, as no row sets Cluster yet), cuLaunchKernelEx with the cluster, a persistent
// grid rounded to whole clusters and a grid that is not whole clusters skipped; C is checked at 32
// sampled entries, and a variant whose inputs the kernel reads as another type (FP16 bits that the
// fake multiplies as BF16) is found wrong, naming the entry, with exit status 3. Each PTX file of a
// Hopper rung runs once, with no repeats. On a device of another compute capability the sm_90a PTX
// is refused, naming the driver's error.
func TestLaunchCuRunsOnFakeCUDA(t *testing.T) {
	rows, variants := launchRows()
	var hopper []nvidia.Kernel
	for _, k := range nvidia.LaunchRows() {
		if k.Arch != "" {
			hopper = append(hopper, k)
		}
	}
	if len(hopper) == 0 {
		t.Fatal("no Hopper rung in the table")
	}
	hopper = append(hopper, variants...)
	wrong := map[string]bool{variants[3].Name: true}
	// The variants' grids at n = 100 (padded to 256: 1×2 tiles of 256×128) on one SM, by hand.
	for _, c := range []struct {
		k     nvidia.Kernel
		grid  [3]int
		whole bool
	}{{hopper[len(hopper)-4], [3]int{1, 2, 1}, true}, {hopper[len(hopper)-3], [3]int{2, 1, 1}, true}, {hopper[len(hopper)-2], [3]int{1, 2, 1}, false}} {
		if grid, whole := launchGrid(c.k, 256, fakeSMs); grid != c.grid || whole != c.whole {
			t.Fatalf("%s: grid %v whole %v, want %v %v", c.k.Name, grid, whole, c.grid, c.whole)
		}
	}
	bin := launchOnFake(t, rows)
	byPTX := map[string][]nvidia.Kernel{}
	for _, k := range hopper {
		file := nvidia.PTXFile(path.Base(k.Source), k.Arch)
		byPTX[file] = append(byPTX[file], k)
	}
	const n = 100
	for file, ks := range byPTX {
		ptx, err := fs.ReadFile(nvidia.PTX, file)
		if err != nil {
			t.Fatal(err)
		}
		ptxPath := filepath.Join(t.TempDir(), path.Base(file))
		logPath := filepath.Join(t.TempDir(), "fakecuda.log")
		if err := os.WriteFile(ptxPath, ptx, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Setenv("FAKECUDA_LOG", logPath)
		t.Setenv("FAKECUDA_SMS", fmt.Sprint(fakeSMs))
		out, err := exec.Command(bin, ptxPath, fmt.Sprint(n), "0").CombinedOutput()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 3 {
			t.Fatalf("launch %s %d 0: %v, want exit status 3 (a check failed)\n%s", file, n, err, out)
		}
		var got []string
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			if !strings.HasSuffix(line, " skipped: not in this PTX") {
				got = append(got, line)
			}
		}
		log, err := os.ReadFile(logPath)
		if err != nil {
			t.Fatal(err)
		}
		wantOut, wantLog := wantFakeRun(ks, n, wrong)
		if !slices.EqualFunc(got, wantOut, func(g, w string) bool {
			return g == w || strings.HasSuffix(w, "check=WRONG C[") && strings.HasPrefix(g, w)
		}) {
			t.Errorf("launch %s printed\n%s\nwant\n%s", file, strings.Join(got, "\n"), strings.Join(wantOut, "\n"))
		}
		if g := strings.Split(strings.TrimSpace(string(log)), "\n"); !slices.Equal(g, wantLog) {
			t.Errorf("the fake logged\n%s\nwant\n%s", log, strings.Join(wantLog, "\n"))
		}
		t.Setenv("FAKECUDA_CC", "100")
		out, err = exec.Command(bin, ptxPath, fmt.Sprint(n), "0").CombinedOutput()
		if err == nil || !strings.Contains(string(out), "cuModuleLoadData(&mod, ptx.c_str()): CUDA_ERROR_NO_BINARY_FOR_GPU") {
			t.Errorf("launch %s on sm_100: %v\n%s\nwant CUDA_ERROR_NO_BINARY_FOR_GPU", file, err, out)
		}
		t.Setenv("FAKECUDA_CC", "90")
	}
}
