package cuda

import (
	"errors"
	"strings"
	"testing"

	"github.com/gpuplayground/playground/cells"
	"github.com/gpuplayground/playground/harness"
	pt "github.com/gpuplayground/playground/problems/problemstest"
)

// variants: each a copy of the cell's launch with what it gives changed, labelled by the change;
// the cell's own kernel is labelled for the chart by what the variants change.
func TestParseVariants(t *testing.T) {
	cell := strings.Replace(tiledTransposeCell, "sizes:", `variants: [{block: [32, 2]}, {registers: 64, shared_bytes: "48*1024"}]`+"\nsizes:", 1) + pt.TiledTranspose
	s, err := Parse(cell, gpuAvailable(), harness.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Variants) != 2 {
		t.Fatalf("%d variants, want 2", len(s.Variants))
	}
	if v := s.Variants[0]; v.Label != "custom, block 32×2" || v.Spec.Block != [3]int{32, 2, 1} || v.Spec.Grid != s.Grid || v.Spec.Registers != 0 {
		t.Errorf("variant 0: %q %+v", v.Label, v.Spec.Block)
	}
	if v := s.Variants[1]; v.Label != "custom, shared_bytes 48*1024, 64 registers" || v.Spec.Registers != 64 || v.Spec.Block != s.Block {
		t.Errorf("variant 1: %q, registers %d", v.Label, v.Spec.Registers)
	}
	if got, want := s.CustomLabel(), "custom (block 32×8, shared_bytes n*4, registers as compiled)"; got != want {
		t.Errorf("CustomLabel = %q, want %q", got, want)
	}
}

// A variant that changes nothing, names a function not in the source, is in a matmul cell, or
// has a block CUDA refuses is an error on its line.
func TestParseVariantsRefused(t *testing.T) {
	for _, c := range []struct{ variants, want string }{
		{`[{}]`, "changes nothing"},
		{`[{kernel: nowhere}]`, "no function"},
		{`[{block: [2048]}]`, "too many"},
		{`[{registers: 300}]`, "1 to 255"},
		{`[{block: [1]}, {block: [2]}, {block: [4]}, {block: [8]}, {block: [16]}]`, "1 to 4"},
	} {
		cell := strings.Replace(tiledTransposeCell, "sizes:", "variants: "+c.variants+"\nsizes:", 1) + pt.TiledTranspose
		_, err := Parse(cell, gpuAvailable(), harness.DefaultLimits())
		var se *cells.SpecError
		if !errors.As(err, &se) || !strings.Contains(se.Msg, c.want) || se.Line != 6 {
			t.Errorf("variants %s: got %v, want a line-6 error saying %q", c.variants, err, c.want)
		}
	}
	_, err := Parse("kernel: k\nvariants: [{block: [8, 8]}]\nsizes: [64]\n---\n__global__ void k() {}", gpuAvailable(), harness.DefaultLimits())
	if err == nil || !strings.Contains(err.Error(), "not matmul") && !strings.Contains(err.Error(), "other than matmul") {
		t.Errorf("matmul cell with variants: %v", err)
	}
}

// Without a GPU, a problem cell with variants emulates its kernel and each variant at every size,
// rows named by their labels, and charts the problem's modelled rate of each side by side.
func TestVariantsRunAndChart(t *testing.T) {
	cell := strings.Replace(tiledTransposeCell, "sizes: [40, 64]", "sizes: [64]\nvariants: [{block: [32, 2]}, {registers: 255}]", 1) + pt.TiledTranspose
	rec, _ := runCell(t, cell, false)
	rows := rec.RowsOf("emulated")
	var names []string
	for _, r := range rows {
		names = append(names, r.Values[0].(string))
	}
	if got, want := strings.Join(names, "|"), "custom|custom, block 32×2|custom, 255 registers"; got != want {
		t.Errorf("rows %s, want %s", got, want)
	}
	if rec.Charts == 0 || rec.ChartErr != nil {
		t.Fatalf("chart: %d drawn, %v", rec.Charts, rec.ChartErr)
	}
	for _, want := range []string{">custom (block 32×8, registers as compiled): ", ">custom, block 32×2: ", ">custom, 255 registers: ", "achieved bandwidth"} {
		if !strings.Contains(rec.SVG, want) {
			t.Errorf("chart lacks %q", want)
		}
	}
}

// One launch at one size compares nothing: no chart (the table holds the one row).
func TestOneLaunchNoChart(t *testing.T) {
	rec, _ := runCell(t, strings.Replace(tiledTransposeCell, "sizes: [40, 64]", "sizes: [64]", 1)+pt.TiledTranspose, false)
	if len(rec.RowsOf("emulated")) != 1 || rec.Charts != 0 {
		t.Errorf("%d rows, %d charts; want 1 row and no chart", len(rec.RowsOf("emulated")), rec.Charts)
	}
}
