package nvidia

import (
	"fmt"
	"io/fs"
	"regexp"
	"strings"
	"testing"
)

// The candidates are distinct shapes that tile_gemm can compile (whole warps, whole vec4 groups per
// thread, at most 1024 threads), each an entry point of matmul.cu instantiating tile_gemm with its
// shape, and cuda-doublebuf is the first.
func TestTuneCandidatesAreCompiledShapes(t *testing.T) {
	src, err := fs.ReadFile(Sources, "src/matmul.cu")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[TileShape]bool{}
	for i, s := range TuneCandidates() {
		k := s.Kernel()
		th := s.Threads()
		if seen[s] || s.BM%s.WM != 0 || s.BN%s.WN != 0 || th > 1024 || (s.BM*s.BK)%(4*th) != 0 || (s.BK*s.BN)%(4*th) != 0 {
			t.Errorf("%s: duplicate or not compilable (%d threads)", s, th)
		}
		seen[s] = true
		if (i == 0) != (k.Name == "cuda-doublebuf") || k.Block != [3]int{th, 1, 1} || k.Tile != [2]int{s.BN, s.BM} {
			t.Errorf("candidate %d: %+v", i, k)
		}
		inst := fmt.Sprintf(`(?s)void __launch_bounds__\(%d\) %s\(.{0,120}tile_gemm<%d, %d, %d, %d, %d>`, th, k.Entry, s.BM, s.BN, s.BK, s.WM, s.WN)
		if !regexp.MustCompile(inst).Match(src) {
			t.Errorf("matmul.cu has no %s with __launch_bounds__(%d) calling tile_gemm<%d, %d, %d, %d, %d>", k.Entry, th, s.BM, s.BN, s.BK, s.WM, s.WN)
		}
	}
}

// cuda-autotuned launches the candidate with the least recorded modelled time on TuneTarget, every
// candidate was recorded on every GPU of the search, and the docs show the records.
func TestAutotunedRowIsTheModelsPick(t *testing.T) {
	recs := TuneRecords()
	if len(recs) != len(TuneGPUs)*len(TuneCandidates()) {
		t.Fatalf("%d records, want %d GPUs × %d candidates: run go generate ./gpu/nvidia", len(recs), len(TuneGPUs), len(TuneCandidates()))
	}
	best := map[string]TuneRecord{}
	for _, r := range recs {
		if !(r.Seconds > 0) || r.Registers == 0 || r.Occupancy == "" || r.BlocksRun == 0 {
			t.Errorf("incomplete record %+v", r)
		}
		if b, ok := best[r.GPU]; !ok || r.Seconds < b.Seconds {
			best[r.GPU] = r
		}
	}
	row, ok := LookupKernel("cuda-autotuned")
	if !ok || row.Entry != best[TuneTarget].Entry {
		t.Errorf("cuda-autotuned launches %q, want the %s's fastest %q", row.Entry, TuneTarget, best[TuneTarget].Entry)
	}
	s, _ := TunedShape(TuneTarget)
	if row.Block != s.Kernel().Block || row.Tile != s.Kernel().Tile {
		t.Errorf("cuda-autotuned's launch %v %v, want its shape's %+v", row.Block, row.Tile, s.Kernel())
	}
	doc := KernelsMarkdown()
	for _, r := range recs {
		if !strings.Contains(doc, fmt.Sprintf("| `%s` | %s |", r.Entry, r.GPU)) {
			t.Errorf("docs/gpu-kernels.md lacks the record of %s on %s", r.Entry, r.GPU)
		}
	}
}

// Entries lists an entry point once, candidates included after the table's rows.
func TestEntriesAreDistinct(t *testing.T) {
	seen := map[string]bool{}
	for _, e := range Entries() {
		if seen[e.Entry] {
			t.Errorf("entry %s listed twice", e.Entry)
		}
		seen[e.Entry] = true
	}
	for _, s := range TuneCandidates() {
		if !seen[s.Kernel().Entry] {
			t.Errorf("candidate %s missing from Entries", s)
		}
	}
}
