package nvidia

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// repoRoot is the repository root, from this package's directory.
const repoRoot = "../.."

// The table's rows are complete and consistent: an own kernel has an entry, a block of whole warps and
// a tile; a cuBLAS row has neither; precisions and dtypes are ones the worker knows.
func TestKernelTableIsConsistent(t *testing.T) {
	ks := Kernels()
	want := []string{"cublas", "cublas-tf32", "cublas-bf16", "cuda-naive", "cuda-coalesced", "cuda-smem", "cuda-blocktile1d", "cuda-regblock", "cuda-vectorized", "cuda-warptile", "cuda-doublebuf", "cuda-autotuned", "cuda-wmma", "cuda-mma", "cuda-mma-async", "cuda-mma-swizzle", "cuda-mma-warptile",
		"cuda-wgmma", "cuda-wgmma-tma", "cuda-wgmma-ws", "cuda-wgmma-persistent", "cuda-wgmma-multicast"}
	var names []string
	for _, k := range ks {
		names = append(names, k.Name)
	}
	if !slices.Equal(names, want) {
		t.Fatalf("kernels %v, want %v in this (ladder) order", names, want)
	}
	precisions := []string{"", "tf32", "bf16", "f16"}
	for _, k := range ks {
		if k.Summary == "" || !k.Takes("float32") {
			t.Errorf("%s: empty summary or no float32: %+v", k.Name, k)
		}
		if _, err := os.Stat(filepath.Join(repoRoot, k.Source)); err != nil {
			t.Errorf("%s: source %s: %v", k.Name, k.Source, err)
		}
		if !slices.Contains(precisions, k.Precision) || (k.Older != nil && !slices.Contains(precisions, k.Older.Precision)) {
			t.Errorf("%s: unknown precision in %+v", k.Name, k)
		}
		if k.GFLOPS <= 0 || (k.GFLOPS64 > 0) != k.Takes("float64") {
			t.Errorf("%s: estimates %g, %g GFLOP/s for dtypes %v", k.Name, k.GFLOPS, k.GFLOPS64, k.DTypes)
		}
		if k.BLAS != nil {
			if k.Entry != "" || k.Older != nil || k.Block != ([3]int{}) || k.Tile != ([2]int{}) || k.Pad > 1 {
				t.Errorf("%s: a cuBLAS row has no entry point or launch shape: %+v", k.Name, k)
			}
			if wantIn := map[string]int32{"": TypeF32, "tf32": TypeF32, "bf16": TypeBF16}[k.Precision]; k.BLAS.GemmEx && k.BLAS.Input != wantIn {
				t.Errorf("%s: GemmEx input type %d for precision %q", k.Name, k.BLAS.Input, k.Precision)
			}
			if (k.Precision == "tf32") != (k.BLAS.GemmEx && k.BLAS.Compute == Compute32FFastTF32) {
				t.Errorf("%s: TF32 precision needs the TF32 compute type: %+v", k.Name, k.BLAS)
			}
			continue
		}
		threads := k.Block[0] * k.Block[1] * k.Block[2]
		if k.Entry == "" || threads == 0 || threads > 1024 || threads%32 != 0 {
			t.Errorf("%s: entry %q, block %v: want an entry and whole warps within 1024 threads", k.Name, k.Entry, k.Block)
		}
		if k.Tile[0] < 1 || k.Tile[1] < 1 {
			t.Errorf("%s: tile %v", k.Name, k.Tile)
		}
	}
}

// Every launch covers the whole (padded) matrix, for sizes that are and are not multiples of the tile.
func TestLaunchesCoverTheMatrix(t *testing.T) {
	for _, k := range Kernels() {
		for _, n := range []int{1, 15, 100, 129, 4096} {
			l := k.LaunchFor(n, 90, "float32")
			if l.N < n || (k.Pad > 1 && l.N%k.Pad != 0) || (k.Pad <= 1 && l.N != n) {
				t.Errorf("%s n=%d: launched on %d", k.Name, n, l.N)
			}
			if k.BLAS != nil {
				if l.Entry != "" || l.Grid != ([3]int{}) {
					t.Errorf("%s: cuBLAS launch %+v", k.Name, l)
				}
				continue
			}
			if tiles := ceilDiv(l.N, k.Tile[0]) * ceilDiv(l.N, k.Tile[1]); k.Persistent > 0 {
				if l.Block != k.Block || l.Grid != [3]int{min(k.Persistent, tiles), 1, 1} {
					t.Errorf("%s n=%d: grid %v block %v, want min(%d, %d tiles) blocks", k.Name, n, l.Grid, l.Block, k.Persistent, tiles)
				}
				continue
			}
			if l.Block != k.Block || l.Grid[2] != 1 || l.Grid[0]*k.Tile[0] < l.N || l.Grid[1]*k.Tile[1] < l.N ||
				(l.Grid[0]-1)*k.Tile[0] >= l.N || (l.Grid[1]-1)*k.Tile[1] >= l.N {
				t.Errorf("%s n=%d: grid %v block %v does not cover %d×%d with no idle block", k.Name, n, l.Grid, l.Block, l.N, l.N)
			}
		}
	}
	wmma, _ := LookupKernel("cuda-wmma")
	for _, tt := range []struct {
		cc                    int
		entry, precision      string
		wantN, wantGridX, inN int
	}{{75, "cuda_wmma_f16", "f16", 112, 2, 100}, {80, "cuda_wmma_bf16", "bf16", 112, 2, 100}, {90, "cuda_wmma_bf16", "bf16", 64, 1, 64}} {
		if l := wmma.LaunchFor(tt.inN, tt.cc, "float32"); l.Entry != tt.entry || l.Precision != tt.precision || l.N != tt.wantN || l.Grid[0] != tt.wantGridX {
			t.Errorf("cuda-wmma on sm_%d at n=%d: %+v", tt.cc, tt.inN, l)
		}
	}
	if l := Kernels()[0].LaunchFor(64, 90, "float64"); l.Precision != "float64" {
		t.Errorf("cublas float64 precision %q", l.Precision)
	}
}

// Estimates are positive for what a kernel takes, grow with n, and cost nothing for a dtype it refuses.
func TestEstimates(t *testing.T) {
	for _, k := range Kernels() {
		small, large := k.EstimateSeconds(512, "float32"), k.EstimateSeconds(1024, "float32")
		if small <= 0 || large < 7*small {
			t.Errorf("%s: estimates %g s at 512, %g s at 1024", k.Name, small, large)
		}
		if f64 := k.EstimateSeconds(512, "float64"); (f64 > 0) != k.Takes("float64") {
			t.Errorf("%s: float64 estimate %g s, takes float64 %v", k.Name, f64, k.Takes("float64"))
		}
	}
	// 2·1024³ FLOPs at cuBLAS's 1000 GFLOP/s estimate.
	if got := Kernels()[0].EstimateSeconds(1024, "float32"); got < 2.14e-3 || got > 2.15e-3 {
		t.Errorf("cublas at 1024: %g s, want 2·1024³/1e12", got)
	}
}

// globalRE finds the extern "C" __global__ functions of a .cu file.
var globalRE = regexp.MustCompile(`extern "C" __global__ void (?:__cluster_dims__\([^)]*\) )?(?:__launch_bounds__\([^)]*\) )?(\w+)\(`)

// The table's entry points are exactly the kernels of src/*.cu, each file's in its own PTX builds
// (PTXBuilds), and each is in the embedded PTX of every architecture it is compiled for
// (cuda_wmma_bf16 only from compute_80; hopper.cu's only in compute_90a).
func TestEntryPointsAreInSourceAndPTX(t *testing.T) {
	for _, b := range PTXBuilds() {
		src, err := fs.ReadFile(Sources, "src/"+b.Source)
		if err != nil {
			t.Fatal(err)
		}
		var inSource, inTable []string
		for _, m := range globalRE.FindAllStringSubmatch(string(src), -1) {
			inSource = append(inSource, m[1])
		}
		for _, e := range Entries() {
			if e.Source == b.Source {
				inTable = append(inTable, e.Entry)
			}
		}
		slices.Sort(inSource)
		slices.Sort(inTable)
		if len(inSource) == 0 || !slices.Equal(inSource, inTable) {
			t.Errorf("%s defines %v; the table launches %v from it", b.Source, inSource, inTable)
		}
		for _, arch := range b.Archs {
			ptx, err := fs.ReadFile(PTX, PTXFile(b.Source, arch))
			if err != nil {
				t.Fatal(err)
			}
			cc := atoi(strings.TrimSuffix(arch, "a"))
			for _, e := range Entries() {
				if e.Source != b.Source {
					continue
				}
				has := strings.Contains(string(ptx), ".entry "+e.Entry+"(")
				if want := cc >= e.MinCC; has != want {
					t.Errorf("compute_%s PTX: entry %s of %s present=%v, want %v", arch, e.Entry, e.Kernel, has, want)
				}
			}
		}
	}
}

var (
	blockRE = regexp.MustCompile(`Block (?:\((\d+), (\d+)\)|(\d+))`)
	gridRE  = regexp.MustCompile(`grid \(ceil\([MN]/(\d+)\), ceil\([MN]/(\d+)\)\)`)
	// persistentRE is a persistent kernel's grid: at most so many blocks, over tiles of N and M.
	persistentRE = regexp.MustCompile(`grid \(min\((\d+), ceil\(N/(\d+)\)·ceil\(M/(\d+)\)\), 1\)`)
)

// The block and grid written in the comment above each kernel of its source file are the table's (and
// the tile search candidates').
func TestSourceCommentsMatchTheTable(t *testing.T) {
	rows := Kernels()
	for _, s := range TuneCandidates() {
		rows = append(rows, s.Kernel())
	}
	for _, k := range rows {
		if k.Entry == "" {
			continue
		}
		src, err := os.ReadFile(filepath.Join(repoRoot, k.Source))
		if err != nil {
			t.Fatal(err)
		}
		comment := commentAbout(strings.Split(string(src), "\n"), k.Entry)
		b, g, p := blockRE.FindStringSubmatch(comment), gridRE.FindStringSubmatch(comment), persistentRE.FindStringSubmatch(comment)
		if p != nil {
			g = []string{p[0], p[2], p[3]}
		}
		if b == nil || g == nil || (p != nil) != (k.Persistent > 0) || (p != nil && atoi(p[1]) != k.Persistent) {
			t.Errorf("%s: no \"Block …; grid (ceil(…/…), ceil(…/…))\" (a persistent kernel's: \"grid (min(%d, ceil(N/…)·ceil(M/…)), 1)\") in the comment about %s: %q", k.Name, k.Persistent, k.Entry, comment)
			continue
		}
		block := [3]int{atoi(b[3]), 1, 1}
		if b[3] == "" {
			block = [3]int{atoi(b[1]), atoi(b[2]), 1}
		}
		if tile := [2]int{atoi(g[1]), atoi(g[2])}; block != k.Block || tile != k.Tile {
			t.Errorf("%s: %s says block %v, tile %v; the table %v, %v", k.Name, k.Source, block, tile, k.Block, k.Tile)
		}
	}
}

// The tile sizes matmul.cu's kernels are compiled with are the table's launch shapes.
func TestSourceDefinesMatchTheTable(t *testing.T) {
	src, err := fs.ReadFile(Sources, "src/matmul.cu")
	if err != nil {
		t.Fatal(err)
	}
	smem, _ := LookupKernel("cuda-smem")
	rb, _ := LookupKernel("cuda-regblock")
	for name, want := range map[string]int{
		"SMEM_TILE": smem.Tile[0], "RB_BN": rb.Tile[0], "RB_BM": rb.Tile[1], "RB_THREADS": rb.Block[0] * rb.Block[1] * rb.Block[2],
	} {
		m := regexp.MustCompile(`(?m)^#define ` + name + ` (\d+)$`).FindStringSubmatch(string(src))
		if m == nil || atoi(m[1]) != want {
			t.Errorf("matmul.cu: #define %s is %v, want %d from the table", name, m, want)
		}
	}
	if smem.Tile[0] != smem.Tile[1] || smem.Block != [3]int{smem.Tile[0], smem.Tile[1], 1} {
		t.Errorf("cuda-smem: one thread per element of a square tile, got block %v tile %v", smem.Block, smem.Tile)
	}
}

// commentAbout returns the paragraph of // lines around the first mention of entry.
func commentAbout(lines []string, entry string) string {
	for i, l := range lines {
		if !strings.HasPrefix(l, "//") || !strings.Contains(l, entry) {
			continue
		}
		j := i
		for j < len(lines) && strings.HasPrefix(lines[j], "//") {
			j++
		}
		return strings.Join(lines[i:j], " ")
	}
	return ""
}

func atoi(s string) int { n, _ := strconv.Atoi(s); return n }

// CI checks that docs/gpu-kernels.md is what `go generate ./gpu/nvidia` makes from the table now.
func TestKernelsDocIsCurrent(t *testing.T) {
	got, err := os.ReadFile(filepath.Join(repoRoot, "docs/gpu-kernels.md"))
	if err != nil || string(got) != KernelsMarkdown() {
		t.Errorf("docs/gpu-kernels.md is stale or missing (%v): run go run ./gpu/nvidia/internal/gendoc -out docs/gpu-kernels.md (or go generate ./gpu/nvidia)", err)
	}
}
