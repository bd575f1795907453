package simt

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/gpuplayground/playground/cells"
	"github.com/gpuplayground/playground/estimate"
)

func TestParse(t *testing.T) {
	s, err := Parse("kernels: [naive, coalesced]\nn: 64\ngpu: t4\nblock: [16, 16]\n")
	if err != nil || s.N != 64 || s.GPU.Name != "T4" || strings.Join(s.Kernels, ",") != "naive,coalesced" || s.Block != [2]int{16, 16} {
		t.Fatalf("got %+v, %v", s, err)
	}
	if s, err := Parse("kernels: [naive]\nn: 8\nshow: [shared wavefronts, barriers]"); err != nil || strings.Join(s.Show, ",") != "shared wavefronts,barriers" {
		t.Errorf("show: got %v, %v", s.Show, err)
	}
	if _, err := Parse("kernels: [smem, regblock, wmma]\nn: 64"); err != nil {
		t.Errorf("every own kernel of matmul.cu: %v", err)
	}
	for src, want := range map[string]string{
		"kernels: [naive]\nn: 1024":                                    "line 2: n is 1024",
		"kernels: [fast]\nn: 8":                                        `line 1: unknown kernel "fast"; the virtual GPU runs the kernel table's naive, coalesced, smem, blocktile1d, regblock, vectorized, warptile, doublebuf, autotuned, wmma, mma, mma-async, mma-swizzle, mma-warptile, wgmma, wgmma-tma, wgmma-ws, wgmma-persistent, wgmma-multicast, tile-`,
		"kernels: [naive, smem]\nn: 8\nblock: [16, 16]":                `line 3: block applies to kernels with one thread per entry of C (naive, coalesced); smem's block is fixed`,
		"kernels: [naive]\nn: 8\ntile: 16":                             `unknown key "tile"`,
		"kernels: [naive]\nn: 8\ngpu: V100":                            `line 3: unknown GPU "V100"`,
		"kernels: [naive]\nsize: 8":                                    `unknown key "size"`,
		"kernels: [naive]":                                             "needs `kernels: [...]` and `n: N`",
		"kernels: [" + strings.Repeat("naive, ", 16) + "naive]\nn: 8":  "line 1: 17 kernels; a simt cell emulates at most 16",
		"kernels: [" + strings.Repeat("naive,", 1999) + "naive]\nn: 8": "line 1: 2000 kernels; a simt cell emulates at most 16",
		"kernels: [naive]\nn: 8\nblock: [8, 8, 8]":                     "line 3: block is [x, y]",
		"kernels: [naive]\nn: 8\nshow: [shared requests]":              `line 3: show: no column "shared requests"; the columns are kernel, n, FLOPs, global requests, sectors, moved, coalescing, shared wavefronts, bank conflicts, barriers,`,
		"kernels: [naive]\nn: 8\ngpu: " + strings.Repeat("H", 257):     "line 3: a key or value of 257 bytes is too long",
	} {
		_, err := Parse(src)
		var se *cells.SpecError
		if !errors.As(err, &se) || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: got %v, want %q", src, err, want)
		}
	}
}

func TestEmulate(t *testing.T) {
	s, _ := Parse("kernels: [naive, coalesced, smem, regblock]\nn: 48\ngpu: A100 SXM")
	var got []Result
	if err := Emulate(context.Background(), s, func(r Result) error { got = append(got, r); return nil }, nil); err != nil {
		t.Fatal(err)
	}
	if len(got) != 4 {
		t.Fatalf("got %d results", len(got))
	}
	for _, r := range got {
		if !r.Correct || r.FLOPs < 2*48*48*48 || // tiled kernels also multiply their zero padding
			r.GPU != "A100 SXM" || !(r.ModelledSeconds > 0) || r.Bound == "" {
			t.Errorf("result %+v", r)
		}
	}
	if !(got[0].BytesMoved > got[1].BytesMoved && got[1].BytesMoved > got[2].BytesMoved) {
		t.Errorf("bytes moved naive %d, coalesced %d, smem %d: want each rung to move less", got[0].BytesMoved, got[1].BytesMoved, got[2].BytesMoved)
	}
}

// Watching the coalesced kernel at n = 32, as NVRTC compiled it (it schedules the load of B first):
// its first warp loads 32 consecutive floats of B's row 0 (4 sectors), then one element of A,
// broadcast to all lanes (1 sector), … and stores 32 consecutive C elements (4 sectors).
func TestWatchFrames(t *testing.T) {
	s, err := Parse("kernels: [coalesced, naive]\nn: 32\nwatch: true")
	if err != nil {
		t.Fatal(err)
	}
	var frames []WarpFrame
	if err := Emulate(context.Background(), s, func(Result) error { return nil }, func(f WarpFrame) { frames = append(frames, f) }); err != nil {
		t.Fatal(err)
	}
	if len(frames) != MaxWatchFrames {
		t.Fatalf("got %d frames, want the cap %d", len(frames), MaxWatchFrames)
	}
	f0, f1 := frames[0], frames[1]
	if f0.Kernel != "coalesced" || f0.Matrix != "B" || f0.Kind != "global load" || f0.Sectors != 4 || f0.Lanes[31] != [4]int{31, 0, 31, 3} {
		t.Errorf("frame 0 %+v: want warp 0 loading B row 0, 4 sectors, lane 31 at column 31 in sector 3", f0)
	}
	if f1.Matrix != "A" || f1.Sectors != 1 || len(f1.Lanes) != 32 || f1.Lanes[31] != [4]int{31, 0, 0, 0} {
		t.Errorf("frame 1 %+v: want A[0][0] for all 32 lanes in 1 sector", f1)
	}
	stores := 0
	for _, f := range frames {
		if f.Kind == "global store" {
			stores++
			if f.Matrix != "C" || f.Sectors != 4 {
				t.Errorf("store %+v: want C, 4 sectors", f)
			}
		}
	}
	if stores == 0 {
		t.Error("no store of C among the frames")
	}
	if _, err := Parse("kernels: [naive]\nn: 64\nwatch: true"); err == nil {
		t.Error("watch accepted n = 64")
	}
}

func FuzzParseSIMT(f *testing.F) {
	f.Add("kernels: [naive, coalesced, smem, regblock]\nn: 128\ngpu: H100 SXM")
	f.Add("kernels: [naive]\nn: 512\ngpu: t4")
	f.Fuzz(func(t *testing.T, src string) {
		s, err := Parse(src)
		if err != nil {
			return
		}
		if s.N < 1 || s.N > MaxN || len(s.Kernels) == 0 || len(s.Kernels) > maxKernels || s.GPU.FP32 <= 0 {
			t.Fatalf("accepted %+v", s)
		}
	})
}

// The estimate sums each kernel's emulation at its measured rate (plus the reference and each
// result's row and chart), so a slow machine refuses what it cannot emulate in time.
func TestEstimateUsesMeasuredRates(t *testing.T) {
	rates := &estimate.Current{}
	rates.Set(&estimate.Rates{PointSeconds: 0.01,
		SIMT: map[string]float64{"naive": 1e-7, "regblock": 1e-8}, SIMTN: map[string]int{"naive": 64, "regblock": 128},
		SIMTExp: map[string]float64{"naive": 2, "regblock": 3}})
	run, err := New(cells.Env{Rates: rates}).Parse(cells.Cell{Source: "kernels: [naive, regblock]\nn: 128"})
	if err != nil {
		t.Fatal(err)
	}
	want := 1e-7*math.Pow(64, 3)*math.Pow(2, 2) + 1e-8*math.Pow(128, 3) + 2*0.01
	if got := run.Estimate().Seconds(); math.Abs(got-want) > 1e-6 {
		t.Errorf("estimate %.4f s, want %.4f", got, want)
	}
}

// A simt cell runs the tile search's candidates by name, with their registers and occupancy, and
// shows what go generate's search modelled at n = 4096 for them (nothing for other kernels).
func TestTileSearchCandidates(t *testing.T) {
	s, err := Parse("kernels: [warptile, tile-128x64x16-w32x32]\nn: 40\ngpu: H100 SXM\nshow: [registers, occupancy, tile search]")
	if err != nil {
		t.Fatal(err)
	}
	var got []Result
	if err := Emulate(context.Background(), s, func(r Result) error { got = append(got, r); return nil }, nil); err != nil {
		t.Fatal(err)
	}
	rec := searched("cuda-tile-128x64x16-w32x32", "H100 SXM")
	if len(got) != 2 || !got[1].Correct || rec.Seconds <= 0 {
		t.Fatalf("results %+v, record %+v", got, rec)
	}
	if got[0].SearchSeconds != 0 || searchCell(got[0]) != "—" {
		t.Errorf("warptile was not searched, got %g", got[0].SearchSeconds)
	}
	if c := got[1]; c.SearchSeconds != rec.Seconds || c.Registers != rec.Registers || c.Occupancy != rec.Occupancy {
		t.Errorf("candidate: %g s, %d registers, %q; want the record's %+v", c.SearchSeconds, c.Registers, c.Occupancy, rec)
	}
}
