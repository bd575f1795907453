package launchtable

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/gpuplayground/playground/gpu/nvidia"
)

// headerRowRE reads one initializer of gc_kernels back: name, entry, input, older entry (0 or a
// string), older_below, older_input, min_cc, block, tile, pad, any_block, then arch, shared_bytes,
// persistent, cluster, nmaps and the maps (read by mapRE).
var headerRowRE = regexp.MustCompile(`(?m)^    \{"([^"]*)", "([^"]*)", (GC_\w+), (0|"[^"]*"), (\d+), (GC_\w+), (\d+), \{(\d+), (\d+), (\d+)\}, \{(\d+), (\d+)\}, (\d+), ([01]),\n     "([^"]*)", (\d+), (\d+), \{(\d+), (\d+), (\d+)\}, (\d+), \{(.*)\}\},$`)

// mapRE reads one gc_map: the matrix ('A', 'B', or 0 for an unused entry), box and swizzle.
var mapRE = regexp.MustCompile(`\{('A'|'B'|0), \{(\d+), (\d+)\}, (\d+)\}`)

type row struct {
	name, entry, input, older string
	olderBelow                int
	olderInput                string
	minCC                     int
	block                     [3]int
	tile                      [2]int
	pad                       int
	anyBlock                  bool
	arch                      string
	shared, persistent        int
	cluster                   [3]int
	maps                      []nvidia.RungMap // the nmaps used ones
	unused                    int              // maps entries beyond nmaps, all zero
}

func parseRows(t *testing.T, h string) []row {
	t.Helper()
	var out []row
	for _, m := range headerRowRE.FindAllStringSubmatch(h, -1) {
		n := func(s string) int {
			v, err := strconv.Atoi(s)
			if err != nil {
				t.Fatalf("row %q: %q: %v", m[0], s, err)
			}
			return v
		}
		r := row{name: m[1], entry: m[2], input: m[3], older: strings.Trim(m[4], `"`),
			olderBelow: n(m[5]), olderInput: m[6], minCC: n(m[7]), block: [3]int{n(m[8]), n(m[9]), n(m[10])},
			tile: [2]int{n(m[11]), n(m[12])}, pad: n(m[13]), anyBlock: m[14] == "1", arch: m[15],
			shared: n(m[16]), persistent: n(m[17]), cluster: [3]int{n(m[18]), n(m[19]), n(m[20])}}
		nmaps := n(m[21])
		for i, mm := range mapRE.FindAllStringSubmatch(m[22], -1) {
			rm := nvidia.RungMap{Of: strings.Trim(mm[1], "'"), Box: [2]int{n(mm[2]), n(mm[3])}, Swizzle: n(mm[4])}
			switch {
			case i < nmaps:
				r.maps = append(r.maps, rm)
			case rm == nvidia.RungMap{Of: "0"}:
				r.unused++
			default:
				t.Errorf("row %s: map %d beyond nmaps %d is %+v, not zero", r.name, i, nmaps, rm)
			}
		}
		out = append(out, r)
	}
	return out
}

// wantInput is what gpu/run.go copies to the device for a float32 cell at precision p.
func wantInput(p string) string {
	return map[string]string{"": "GC_F32", "tf32": "GC_F32", "bf16": "GC_BF16", "f16": "GC_F16"}[p]
}

// Every own kernel of the table, and nothing else, is a row of the header, in table order, with the
// entry points, input types, minimum compute capability and launch shape the worker uses, the Hopper
// rungs with their architecture, shared memory, persistent grid, cluster and tensor maps.
func TestHeaderListsEveryOwnKernel(t *testing.T) {
	ks := nvidia.Kernels()
	h, err := Header(ks)
	if err != nil {
		t.Fatal(err)
	}
	rows := parseRows(t, h)
	var own []nvidia.Kernel
	maxMaps, hopper := 1, 0
	for _, k := range ks {
		if k.BLAS == nil {
			own = append(own, k)
			maxMaps = max(maxMaps, len(k.TensorMaps))
		}
		if k.Arch != "" {
			hopper++
		}
	}
	if got, want := len(rows), len(own); got != want || strings.Count(h, "\n    {") != want || hopper == 0 {
		t.Fatalf("%d rows read back (%d initializers), want %d own kernels, %d of them Hopper rungs:\n%s", got, strings.Count(h, "\n    {"), want, hopper, h)
	}
	if !strings.Contains(h, fmt.Sprintf("\n#define GC_MAXMAPS %d\n", maxMaps)) {
		t.Errorf("no GC_MAXMAPS %d in the header", maxMaps)
	}
	for i, k := range own {
		r := rows[i]
		want := row{name: k.Name, entry: k.Entry, input: wantInput(k.Precision), older: "0", olderInput: "GC_F32",
			minCC: k.MinCC, block: k.Block, tile: k.Tile, pad: max(k.Pad, 1), anyBlock: k.AnyBlock,
			arch: k.Arch, shared: k.SharedBytes, persistent: k.Persistent, cluster: k.Cluster, maps: k.TensorMaps,
			unused: maxMaps - len(k.TensorMaps)}
		if k.Older != nil {
			want.older, want.olderBelow, want.olderInput = k.Older.Entry, k.Older.Below, wantInput(k.Older.Precision)
		}
		if !reflect.DeepEqual(r, want) {
			t.Errorf("row %d: got %+v, want %+v", i, r, want)
		}
		// The grid the header's formula gives is the worker's (nvidia.Kernel.Shape), padding included
		// (a persistent row's is the worker's on a device of Persistent SMs).
		for _, n := range []int{1, 100, 4096, 4100} {
			p, grid, _ := k.Shape(n)
			m := (n + r.pad - 1) / r.pad * r.pad
			g := [3]int{(m + r.tile[0] - 1) / r.tile[0], (m + r.tile[1] - 1) / r.tile[1], 1}
			if r.persistent > 0 {
				g = [3]int{min(r.persistent, g[0]*g[1]), 1, 1}
			}
			if m != p || g != grid {
				t.Errorf("%s at n = %d: header gives n′ %d grid %v, the worker %d %v", k.Name, n, m, g, p, grid)
			}
		}
	}
	for _, name := range []string{"cublas", "cublas-tf32", "cublas-bf16"} {
		if strings.Contains(h, `"`+name+`"`) {
			t.Errorf("cuBLAS row %s in the header: launch.cu cannot call cuBLAS", name)
		}
	}
}

// A new row of the table is a new row of the header (so the staleness test in gpu/nvidia fails
// until the header is regenerated), a Hopper-like one with its maps, cluster and shared memory, and
// GC_MAXMAPS grows with the most maps a row takes; a row launch.cu could not launch as the worker
// does is refused.
func TestHeaderFollowsTheTable(t *testing.T) {
	ks := nvidia.Kernels()
	before, err := Header(ks)
	if err != nil {
		t.Fatal(err)
	}
	maps := []nvidia.RungMap{{Of: "A", Box: [2]int{64, 64}, Swizzle: 128}, {Of: "B", Box: [2]int{32, 64}, Swizzle: 64},
		{Of: "A", Box: [2]int{8, 8}, Swizzle: 0}, {Of: "B", Box: [2]int{16, 8}, Swizzle: 32}, {Of: "B", Box: [2]int{8, 256}}}
	extra := nvidia.Kernel{Name: "cuda-new", Entry: "cuda_new", Precision: "bf16", DTypes: []string{"float32"}, MinCC: 90,
		Block: [3]int{128, 1, 1}, Tile: [2]int{64, 128}, Pad: 16, Arch: "90a", SharedBytes: 70000, Persistent: 7,
		Cluster: [3]int{2, 1, 1}, TensorMaps: maps}
	after, err := Header(append(ks, extra))
	if err != nil {
		t.Fatal(err)
	}
	rows := parseRows(t, after)
	last := rows[len(rows)-1]
	want := row{name: "cuda-new", entry: "cuda_new", input: "GC_BF16", older: "0", olderInput: "GC_F32", minCC: 90,
		block: [3]int{128, 1, 1}, tile: [2]int{64, 128}, pad: 16, arch: "90a", shared: 70000, persistent: 7,
		cluster: [3]int{2, 1, 1}, maps: maps}
	if after == before || !reflect.DeepEqual(last, want) || !strings.Contains(after, "\n#define GC_MAXMAPS 5\n") {
		t.Errorf("added row rendered as %+v, want %+v (GC_MAXMAPS 5)", last, want)
	}
	if got, want := len(rows), strings.Count(after, "\n    {"); got != want || rows[0].unused != 5 {
		t.Errorf("%d rows read back of %d, the first with %d unused maps, want 5", got, want, rows[0].unused)
	}
	for _, bad := range []nvidia.Kernel{
		{Name: "f64", Entry: "e", DTypes: []string{"float64"}, Block: [3]int{1, 1, 1}, Tile: [2]int{1, 1}},
		{Name: "fp8", Entry: "e", Precision: "e4m3", DTypes: []string{"float32"}, Block: [3]int{1, 1, 1}, Tile: [2]int{1, 1}},
		{Name: "notile", Entry: "e", DTypes: []string{"float32"}, Block: [3]int{32, 1, 1}},
		{Name: "mapc", Entry: "e", DTypes: []string{"float32"}, Block: [3]int{1, 1, 1}, Tile: [2]int{1, 1}, TensorMaps: []nvidia.RungMap{{Of: "C", Box: [2]int{8, 8}}}},
		{Name: "swizzle48", Entry: "e", DTypes: []string{"float32"}, Block: [3]int{1, 1, 1}, Tile: [2]int{1, 1}, TensorMaps: []nvidia.RungMap{{Of: "A", Box: [2]int{8, 8}, Swizzle: 48}}},
		{Name: "nobox", Entry: "e", DTypes: []string{"float32"}, Block: [3]int{1, 1, 1}, Tile: [2]int{1, 1}, TensorMaps: []nvidia.RungMap{{Of: "A"}}},
		{Name: "cluster20", Entry: "e", DTypes: []string{"float32"}, Block: [3]int{1, 1, 1}, Tile: [2]int{1, 1}, Cluster: [3]int{2, 0, 1}},
		{Name: "negshared", Entry: "e", DTypes: []string{"float32"}, Block: [3]int{1, 1, 1}, Tile: [2]int{1, 1}, SharedBytes: -1},
	} {
		if _, err := Header(append(nvidia.Kernels(), bad)); err == nil || !strings.Contains(err.Error(), bad.Name) {
			t.Errorf("row %s: error %v, want one naming it", bad.Name, err)
		}
	}
}

func TestCStringEscapes(t *testing.T) {
	for in, want := range map[string]string{"cuda_mma": `"cuda_mma"`, `a"b\c`: `"a\"b\\c"`, "x\ny": `"x\012y"`, "é": `"\303\251"`} {
		if got := cString(in); got != want {
			t.Errorf("cString(%q) = %s, want %s", in, got, want)
		}
	}
}

// The header compiles as C99 and C++17 (launch.cu is C++ under nvcc), where a C compiler is
// installed; skipped without one outside CI.
func TestHeaderCompiles(t *testing.T) {
	h, err := Header(nvidia.Kernels())
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "kernels.gen.h")
	if err := os.WriteFile(file, []byte(h), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ cc, lang, std string }{{"cc", "c", "-std=c99"}, {"c++", "c++", "-std=c++17"}} {
		path, err := exec.LookPath(c.cc)
		if err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("no %s in CI: %v", c.cc, err)
			}
			t.Skipf("no %s: %v", c.cc, err)
		}
		out, err := exec.Command(path, "-x", c.lang, c.std, "-Wall", "-Wextra", "-pedantic", "-Werror", "-fsyntax-only", file).CombinedOutput()
		if err != nil {
			t.Errorf("%s %s: %v\n%s", c.cc, c.std, err, out)
		}
	}
}

// cuda12Include is a folder whose cuda.h is CUDA 12.0 or newer's (tensor maps, cuLaunchKernelEx):
// the unpacked CUDA 12.4's (.ci/run), else /usr/local/cuda's; the test is skipped without one,
// outside CI.
func cuda12Include(t *testing.T) string {
	t.Helper()
	dirs := []string{filepath.Join(nvidia.UnpackedCUDA12, "usr/include"), "/usr/local/cuda/include"}
	for _, d := range dirs {
		if nvidia.HeadersVersion(d) >= 12000 {
			return d
		}
	}
	why := "no cuda.h of CUDA 12 or newer in " + strings.Join(dirs, ", ")
	if os.Getenv("CI") == "true" {
		t.Fatal(why)
	}
	t.Skip(why)
	return ""
}

// writeLaunch writes bench/gpucheck/launch.cu and the header ks render to into a fresh folder and
// returns launch.cu's path there.
func writeLaunch(t *testing.T, ks []nvidia.Kernel) string {
	t.Helper()
	h, err := Header(ks)
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("../../../../bench/gpucheck/launch.cu")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for name, data := range map[string][]byte{"launch.cu": src, "kernels.gen.h": []byte(h)} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "launch.cu")
}

// bench/gpucheck/launch.cu compiles, host and device code, with the header the table renders now:
// checked with clang and CUDA's headers (nvcc, which builds it on the GPU machine, is not here),
// under a CUDA root made for clang in a temporary folder. clang 14 knows CUDA up to 11.5 and fails
// on CUDA 12's runtime headers, so the root holds CUDA 11.8's (FindHeaders) and cuda.h, which the
// Hopper rungs need from CUDA 12 (tensor maps, cuLaunchKernelEx), comes first from a folder of its
// own. clang finds no CUDA version in such a root, so its host pass assumes 11.5 and its device pass
// must be told (-target-sdk-version), or it lacks the launch API; hence two passes. Skipped without
// clang or CUDA's headers outside CI.
func TestLaunchCuCompiles(t *testing.T) {
	clang, err := exec.LookPath("clang++")
	inc := nvidia.FindHeaders(nil)
	if err != nil || inc == "" {
		why := "no clang++ or no CUDA headers (" + strings.Join(nvidia.HeaderDirs(os.Getenv(nvidia.IncludeEnv), nil), ", ") + ")"
		if os.Getenv("CI") == "true" {
			t.Fatal(why)
		}
		t.Skip(why)
	}
	for _, h := range []string{"cuda.h", "cuda_runtime.h", "cuda_bf16.h"} {
		if _, err := os.Stat(filepath.Join(inc, h)); err != nil {
			t.Skipf("%s: %v", h, err)
		}
	}
	cuda12, root, only := cuda12Include(t), t.TempDir(), t.TempDir()
	for _, d := range []string{"bin", "lib64"} {
		if err := os.Mkdir(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(inc, filepath.Join(root, "include")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(cuda12, "cuda.h"), filepath.Join(only, "cuda.h")); err != nil {
		t.Fatal(err)
	}
	base := []string{"-x", "cuda", "--cuda-gpu-arch=sm_80", "-nocudalib", "--cuda-path=" + root, "-I" + only,
		"-Wno-unknown-cuda-version", "-fsyntax-only", writeLaunch(t, nvidia.LaunchRows())}
	for _, pass := range [][]string{{"--cuda-host-only"}, {"--cuda-device-only", "-Xclang", "-target-sdk-version=11.5"}} {
		if out, err := exec.Command(clang, append(pass, base...)...).CombinedOutput(); err != nil {
			t.Errorf("clang++ %s: %v\n%s", pass[0], err, out)
		}
	}
}
