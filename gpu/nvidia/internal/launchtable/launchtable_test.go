package launchtable

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/gpuplayground/playground/gpu/nvidia"
)

// headerRowRE reads one initializer of gc_kernels back: name, entry, input, older entry (0 or a
// string), older_below, older_input, min_cc, block, tile, pad, any_block.
var headerRowRE = regexp.MustCompile(`(?m)^    \{"([^"]*)", "([^"]*)", (GC_\w+), (0|"[^"]*"), (\d+), (GC_\w+), (\d+), \{(\d+), (\d+), (\d+)\}, \{(\d+), (\d+)\}, (\d+), ([01])\},$`)

type row struct {
	name, entry, input, older string
	olderBelow                int
	olderInput                string
	minCC                     int
	block                     [3]int
	tile                      [2]int
	pad                       int
	anyBlock                  bool
}

func parseRows(t *testing.T, h string) []row {
	t.Helper()
	var out []row
	for _, m := range headerRowRE.FindAllStringSubmatch(h, -1) {
		n := func(i int) int {
			v, err := strconv.Atoi(m[i])
			if err != nil {
				t.Fatalf("row %q: field %d: %v", m[0], i, err)
			}
			return v
		}
		out = append(out, row{name: m[1], entry: m[2], input: m[3], older: strings.Trim(m[4], `"`),
			olderBelow: n(5), olderInput: m[6], minCC: n(7), block: [3]int{n(8), n(9), n(10)},
			tile: [2]int{n(11), n(12)}, pad: n(13), anyBlock: m[14] == "1"})
	}
	return out
}

// wantInput is what gpu/run.go copies to the device for a float32 cell at precision p.
func wantInput(p string) string {
	return map[string]string{"": "GC_F32", "tf32": "GC_F32", "bf16": "GC_BF16", "f16": "GC_F16"}[p]
}

// Every own kernel of the table, and nothing else, is a row of the header, in table order, with the
// entry points, input types, minimum compute capability and launch shape the worker uses.
func TestHeaderListsEveryOwnKernel(t *testing.T) {
	ks := nvidia.Kernels()
	h, err := Header(ks)
	if err != nil {
		t.Fatal(err)
	}
	rows := parseRows(t, h)
	var own []nvidia.Kernel
	for _, k := range ks {
		if k.BLAS == nil && k.Arch == "" {
			own = append(own, k)
		}
	}
	if got, want := len(rows), len(own); got != want || strings.Count(h, "\n    {") != want {
		t.Fatalf("%d rows read back (%d initializers), want %d own kernels:\n%s", got, strings.Count(h, "\n    {"), want, h)
	}
	for i, k := range own {
		r := rows[i]
		want := row{name: k.Name, entry: k.Entry, input: wantInput(k.Precision), older: "0", olderInput: "GC_F32",
			minCC: k.MinCC, block: k.Block, tile: k.Tile, pad: max(k.Pad, 1), anyBlock: k.AnyBlock}
		if k.Older != nil {
			want.older, want.olderBelow, want.olderInput = k.Older.Entry, k.Older.Below, wantInput(k.Older.Precision)
		}
		if r != want {
			t.Errorf("row %d: got %+v, want %+v", i, r, want)
		}
		// The grid the header's formula gives is the worker's (nvidia.Kernel.Shape), padding included.
		for _, n := range []int{1, 100, 4096, 4100} {
			p, grid, _ := k.Shape(n)
			m := (n + r.pad - 1) / r.pad * r.pad
			if g := [3]int{(m + r.tile[0] - 1) / r.tile[0], (m + r.tile[1] - 1) / r.tile[1], 1}; m != p || g != grid {
				t.Errorf("%s at n = %d: header gives n′ %d grid %v, the worker %d %v", k.Name, n, m, g, p, grid)
			}
		}
	}
	for _, name := range []string{"cublas", "cublas-tf32", "cublas-bf16"} {
		if strings.Contains(h, `"`+name+`"`) {
			t.Errorf("cuBLAS row %s in the header: launch.cu cannot call cuBLAS", name)
		}
	}
	for _, k := range ks {
		if k.Arch != "" && strings.Contains(h, `"`+k.Name+`"`) {
			t.Errorf("Hopper row %s in the header: launch.cu launches matmul.cu's kernels without tensor maps", k.Name)
		}
	}
}

// A new row of the table is a new row of the header (so the staleness test in gpu/nvidia fails
// until the header is regenerated); a row launch.cu could not launch as the worker does is refused.
func TestHeaderFollowsTheTable(t *testing.T) {
	ks := nvidia.Kernels()
	before, err := Header(ks)
	if err != nil {
		t.Fatal(err)
	}
	extra := nvidia.Kernel{Name: "cuda-new", Entry: "cuda_new", Precision: "bf16", DTypes: []string{"float32"}, MinCC: 90,
		Block: [3]int{128, 1, 1}, Tile: [2]int{64, 128}, Pad: 16}
	after, err := Header(append(ks, extra))
	if err != nil {
		t.Fatal(err)
	}
	rows := parseRows(t, after)
	last := rows[len(rows)-1]
	want := row{name: "cuda-new", entry: "cuda_new", input: "GC_BF16", older: "0", olderInput: "GC_F32", minCC: 90,
		block: [3]int{128, 1, 1}, tile: [2]int{64, 128}, pad: 16}
	if after == before || last != want {
		t.Errorf("added row rendered as %+v, want %+v", last, want)
	}
	for _, bad := range []nvidia.Kernel{
		{Name: "f64", Entry: "e", DTypes: []string{"float64"}, Block: [3]int{1, 1, 1}, Tile: [2]int{1, 1}},
		{Name: "fp8", Entry: "e", Precision: "e4m3", DTypes: []string{"float32"}, Block: [3]int{1, 1, 1}, Tile: [2]int{1, 1}},
		{Name: "notile", Entry: "e", DTypes: []string{"float32"}, Block: [3]int{32, 1, 1}},
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

// bench/gpucheck/launch.cu compiles, host and device code, with the header the table renders now:
// checked with clang and CUDA's headers (nvcc, which builds it on the GPU machine, is not here),
// under a CUDA root made for clang in a temporary folder. clang 14 finds no CUDA version there, so
// its host pass assumes 11.5 and its device pass must be told (-target-sdk-version), or it lacks
// the launch API; hence two passes. Skipped without clang or CUDA's headers outside CI.
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
	h, err := Header(nvidia.Kernels())
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("../../../../bench/gpucheck/launch.cu")
	if err != nil {
		t.Fatal(err)
	}
	dir, root := t.TempDir(), t.TempDir()
	for _, d := range []string{"bin", "lib64"} {
		if err := os.Mkdir(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(inc, filepath.Join(root, "include")); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"launch.cu": src, "kernels.gen.h": []byte(h)} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	base := []string{"-x", "cuda", "--cuda-gpu-arch=sm_80", "-nocudalib", "--cuda-path=" + root,
		"-Wno-unknown-cuda-version", "-fsyntax-only", filepath.Join(dir, "launch.cu")}
	for _, pass := range [][]string{{"--cuda-host-only"}, {"--cuda-device-only", "-Xclang", "-target-sdk-version=11.5"}} {
		if out, err := exec.Command(clang, append(pass, base...)...).CombinedOutput(); err != nil {
			t.Errorf("clang++ %s: %v\n%s", pass[0], err, out)
		}
	}
}
