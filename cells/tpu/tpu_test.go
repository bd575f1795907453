package tpu

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/gpuplayground/playground/cells"
	"github.com/gpuplayground/playground/cells/cellstest"
	"github.com/gpuplayground/playground/sim/tpucore"
)

const example = "generation: v5e\nm: 4096\nk: 4096\nn: 4096\ndtype: bf16\nbm: 512\nbk: 1024\nbn: 1024\nepilogue: relu\n"

func TestParse(t *testing.T) {
	s, err := Parse(example)
	if err != nil {
		t.Fatal(err)
	}
	if s.Gen.Name != "v5e" || s.DType.Name != "bf16" || s.M != 4096 || s.BM != 512 || s.BK != 1024 || s.BN != 1024 || s.Epilogue != "relu" {
		t.Errorf("got %+v", s)
	}
	d, err := Parse("m: 8\nk: 128\nn: 128\nbm: 8\nbk: 128\nbn: 128")
	if err != nil || d.Gen.Name != "v5e" || d.DType.Name != "bf16" || d.Epilogue != "none" {
		t.Errorf("defaults: got %+v, %v; want v5e, bf16, no epilogue", d, err)
	}
	for src, want := range map[string]string{
		"m: 8\nk: 128\nn: 128\nbm: 8\nbk: 128":                                    "needs m, k, n and the block sizes",
		"generation: v9\nm: 8\nk: 128\nn: 128\nbm: 8\nbk: 128\nbn: 128":           `line 1: unknown TPU generation "v9"`,
		"m: 8\nk: 128\nn: 128\nbm: 8\nbk: 128\nbn: 128\ndtype: fp8":               `line 7: unknown dtype "fp8"`,
		"m: 0\nk: 128\nn: 128\nbm: 8\nbk: 128\nbn: 128":                           "line 1: m is 0",
		"m: 8\nk: 128\nn: 128\nbm: 8\nbk: 100\nbn: 128":                           "line 5: bk is 100: a block's last dimension spans the 128 lanes",
		"generation: v4\nm: 4096\nk: 4096\nn: 4096\nbm: 2048\nbk: 2048\nbn: 2048": "line 5: these blocks do not fit in VMEM: 2×(2048×2048 + 2048×2048)×2 B",
		"m: 8\nk: 128\nn: 128\nbm: 8\nbk: 128\nbn: 128\nepilogue: gelu":           `unknown epilogue "gelu"`,
		"m: 8\nk: 128\nn: 128\nbm: 8\nbk: 128\nbn: 128\narray: 4":                 `unknown key "array"`,
		"m: 65536\nk: 65536\nn: 65536\nbm: 8\nbk: 128\nbn: 128":                   "the model walks at most",
	} {
		_, err := Parse(src)
		var se *cells.SpecError
		if !errors.As(err, &se) || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: got %v, want %q", src, err, want)
		}
	}
}

// A run says it is modelled, sends the pipeline's first steps as frames, a row whose numbers are the
// model's, where the time went, and a chart with a line per generation.
func TestRun(t *testing.T) {
	r, err := New(cells.Env{}).Parse(cells.Cell{Source: example})
	if err != nil {
		t.Fatal(err)
	}
	if cells.Exclusive(r) {
		t.Error("a tpu run is exclusive; it times nothing")
	}
	rec := &cellstest.Recorder{}
	if err := r.Run(context.Background(), rec); err != nil {
		t.Fatal(err)
	}
	if len(rec.Notes) == 0 || !strings.HasPrefix(rec.Notes[0].Message, "Modelled, not measured: one TPU v5e TensorCore (4 MXUs of 128×128 at 1503 MHz") {
		t.Errorf("first note %v, want the modelled core's figures", rec.Notes)
	}
	spec, _ := Parse(example)
	want, err := tpucore.Simulate(context.Background(), spec.Matmul, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(rec.Animation); int64(n) != min(want.Steps, MaxFrames) {
		t.Errorf("%d frames, want %d", n, min(want.Steps, MaxFrames))
	}
	if f, ok := rec.Animation[0].(tpucore.Step); !ok || f.First == nil || f.Step != 0 {
		t.Errorf("first frame %+v, want step 0 with the prologue's copy", rec.Animation[0])
	}
	rows := rec.RowsOf("tpu")
	if len(rows) != 1 {
		t.Fatalf("%d rows, want 1", len(rows))
	}
	if got := rows[0].Values[4]; got != want.Seconds*1e6 {
		t.Errorf("modelled time %v µs, want the model's %g", got, want.Seconds*1e6)
	}
	if got := rows[0].Values[7]; got != want.Dominant() {
		t.Errorf("dominates %v, want %q", got, want.Dominant())
	}
	if parts := rec.RowsOf("time"); len(parts) != len(want.Parts) {
		t.Errorf("%d time rows, want %d", len(parts), len(want.Parts))
	}
	if rec.ChartErr != nil || !strings.Contains(rec.SVG, "TPU v4") || !strings.Contains(rec.SVG, "TPU v5p") || !strings.Contains(rec.SVG, "modelled, not measured") {
		t.Errorf("chart: %v; want a modelled line per generation", rec.ChartErr)
	}
}

func FuzzParseTPU(f *testing.F) {
	f.Add(example)
	f.Add("generation: v4\nm: 100\nk: 200\nn: 130\ndtype: f32\nbm: 128\nbk: 256\nbn: 256\nepilogue: bias_relu")
	f.Add("generation: v5p\nm: 8\nk: 8192\nn: 8192\ndtype: int8\nbm: 8\nbk: 1024\nbn: 1024")
	f.Fuzz(func(t *testing.T, src string) {
		s, err := Parse(src)
		if err != nil {
			return
		}
		if s.M < 1 || s.M > MaxDim || s.K < 1 || s.K > MaxDim || s.N < 1 || s.N > MaxDim || s.BM%8 != 0 || s.BK%128 != 0 || s.BN%128 != 0 ||
			s.BM > MaxBlock || s.Steps() > tpucore.MaxSteps || s.VMEMBytes() > s.Gen.VMEM {
			t.Fatalf("accepted %+v", s)
		}
	})
}
