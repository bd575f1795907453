package kernelcell

import (
	"context"
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/gpuplayground/playground/gpumodel"
	"github.com/gpuplayground/playground/vgpu"
	"github.com/gpuplayground/playground/vgpurun"
)

// An emulated row has a value per column; the atomics columns are empty without atomics and hold the
// requests and the extra passes with them.
func TestRowAtomicsColumns(t *testing.T) {
	cols := EmulatedTable("H100 SXM").Columns
	at := -1
	for i, c := range cols {
		if c.Label == "atomic requests (global + shared)" {
			at = i
		}
	}
	if at < 0 {
		t.Fatal("no atomic requests column")
	}
	r := vgpurun.Result{Kernel: "k", N: 64, OK: true, Model: gpumodel.Time{Seconds: 1e-6, Bound: "memory"},
		Counts: vgpu.Counts{WarpInstructions: 10, ThreadInstructions: 300}}
	row := EmulatedRow(r)
	if got, want := len(row.Values), len(cols); got != want {
		t.Fatalf("%d values for %d columns", got, want)
	}
	if got := row.Values[at]; got != "" {
		t.Errorf("no atomics: %v in the atomics column, want empty", got)
	}
	r.Counts.GlobalAtomicRequests, r.Counts.GlobalAtomicPasses = 4, 4*32
	row = EmulatedRow(r)
	if got, want := [2]any{row.Values[at], row.Values[at+1]}, [2]any{int64(4), int64(4 * 31)}; got != want {
		t.Errorf("atomics: %v, want %v", got, want)
	}
}

// The emulated table's row shows a kernel's occupancy, and its caption says a learner's kernel's
// registers are ptxas's.
func TestEmulatedRowShowsOccupancy(t *testing.T) {
	r, err := vgpurun.Run(context.Background(), vgpurun.Request{Kernel: "cuda-regblock", N: 64, DType: "float32", GPU: gpumodel.GPUs[0]})
	if err != nil || !slices.Contains(EmulatedRow(r).Values, any("25% (registers)")) {
		t.Errorf("cuda-regblock's row: %v, %v; want 25%% (registers)", EmulatedRow(r).Values, err)
	}
	if !strings.Contains(EmulatedTable(gpumodel.GPUs[0].Name).Caption, "uses the registers ptxas allocates") {
		t.Errorf("the caption does not say a learner's kernel's registers are ptxas's")
	}
}

// A result whose error is NaN or Inf (an output left unwritten, or an Inf written) has a row that
// says "NaN" or "Inf", is marked bad, and encodes as JSON (which has neither).
func TestEmulatedRowOfNonFiniteError(t *testing.T) {
	for want, x := range map[string]float64{"NaN": math.NaN(), "Inf": math.Inf(1)} {
		row := EmulatedRow(vgpurun.Result{Kernel: "custom", N: 32, RelError: x, Model: gpumodel.Time{Seconds: 1e-6, Bound: "DRAM"}})
		if got := row.Values[4]; got != want || !row.Bad {
			t.Errorf("rel. error %v: got %v (bad %v), want %q, bad", x, got, row.Bad, want)
		}
		if _, err := json.Marshal(row); err != nil {
			t.Errorf("the row does not encode: %v", err)
		}
	}
}

// The emulated table marks what the lessons compare primary (the page folds the rest), and a
// sampled row's "blocks run" is short, its details in SampledNote.
func TestEmulatedTablePrimaryAndSampled(t *testing.T) {
	cols := EmulatedTable("H100 SXM").Columns
	var primary []string
	blocks := -1
	for i, c := range cols {
		if c.Primary {
			primary = append(primary, strings.SplitN(c.Label, " [", 2)[0])
		}
		if c.Label == "blocks run" {
			blocks = i
		}
	}
	for _, want := range []string{"kernel", "n", "check", "sectors", "coalescing (bytes used / moved)", "bank conflicts", "modelled time (bound)"} {
		if !slices.Contains(primary, want) {
			t.Errorf("primary columns %q: want %q among them", primary, want)
		}
	}
	if len(primary) > len(cols)/2 {
		t.Errorf("%d of %d columns primary: the fold hides too little", len(primary), len(cols))
	}
	r := vgpurun.Result{Kernel: "cuda-naive", N: 4096, OK: true, Sampled: true, BlocksRun: 8, GridBlocks: 65536, Checked: 2048}
	r.Model.Seconds = 1e-3
	if got := EmulatedRow(r).Values[blocks]; got != "8 of 65536 sampled" {
		t.Errorf("blocks run %q, want %q", got, "8 of 65536 sampled")
	}
	if note := SampledNote(r); !strings.Contains(note, "8 of the 65536 blocks") || !strings.Contains(note, "2048 entries") {
		t.Errorf("sampled note %q", note)
	}
	r.Sampled = false
	if note := SampledNote(r); note != "" {
		t.Errorf("note %q for a row whose blocks all ran", note)
	}
	if svg, err := CountsChart(nil); svg != "" || err != nil {
		t.Errorf("CountsChart(nil) = %q, %v", svg, err)
	}
	r.Counts.LoadSectors, r.Counts.FLOPs = 1000, 2*4096*4096*4096
	svg, err := CountsChart([]vgpurun.Result{r})
	if err != nil || !strings.Contains(svg, "cuda-naive") {
		t.Errorf("CountsChart: %v, svg names cuda-naive: %v", err, strings.Contains(svg, "cuda-naive"))
	}
}

// A modelled time bound by latency (or the launch) names the largest throughput limit beside it; one
// bound by a throughput limit names that alone.
func TestModelText(t *testing.T) {
	terms := []gpumodel.Term{{Name: "DRAM", Seconds: 100e-6}, {Name: "tensor", Seconds: 196e-6}, {Name: "latency", Seconds: 404e-6}, {Name: "launch", Seconds: 2.3e-6}}
	for _, tc := range []struct {
		m    gpumodel.Time
		want string
	}{
		{gpumodel.Time{Seconds: 406.3e-6, Bound: "latency", Terms: terms}, "406 (latency; limit tensor 196)"},
		{gpumodel.Time{Seconds: 198.3e-6, Bound: "tensor", Terms: terms[:2]}, "198 (tensor)"},
		{gpumodel.Time{Seconds: 2.3e-6, Bound: "launch", Terms: []gpumodel.Term{{Name: "launch", Seconds: 2.3e-6}}}, "2.3 (launch)"},
	} {
		if got := ModelText(tc.m); got != tc.want {
			t.Errorf("got %q, want %q", got, tc.want)
		}
	}
}

// A launch's uninitialised reads are warnings; the note that the global race check stopped at a
// limit is information.
func TestNoteLevel(t *testing.T) {
	for _, tc := range []struct{ kind, want string }{{"uninitialised read", "warning"}, {vgpu.KindRaceCheckStopped, "info"}} {
		if got := NoteLevel(&vgpu.Fault{Kind: tc.kind}); got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.kind, got, tc.want)
		}
	}
}
