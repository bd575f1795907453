package server

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gpuplayground/playground/cells"
)

// The class chart: a series per student and kernel from the board's kernel, n and GFLOP/s columns,
// shared rows left out, the fastest MaxBoardSeries kept, titled by the cell (no empty parenthesis);
// nothing for a table without those columns.
func TestBoardChart(t *testing.T) {
	cols := []any{cells.Column{Label: "kernel"}, cells.Column{Label: "n"}, cells.Column{Label: "throughput", Unit: "GFLOP/s"}}
	b := cellBoard{Columns: cols}
	for i := range MaxBoardSeries + 3 {
		student := fmt.Sprintf("S%02d", i)
		for _, n := range []float64{64, 128} {
			b.Rows = append(b.Rows, boardEntry{Student: student, Values: []any{"webgpu-tiled (your GPU)", n, float64(i+1) * n}})
		}
	}
	b.Rows = append(b.Rows, boardEntry{Student: "Copycat", Shared: true, Values: []any{"ikj", 64.0, 1e6}})
	svg, err := boardChart("matmul-0", b)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(svg, "Class results of matmul-0 (each student&#39;s latest run; the 12 fastest series of 15)") || strings.Contains(svg, "()") || !strings.Contains(svg, "S14: webgpu-tiled (your GPU)") ||
		strings.Contains(svg, "S02: webgpu-tiled") || strings.Contains(svg, "Copycat") {
		t.Errorf("chart: want the 12 fastest students' series, titled so, without the shared row:\n%.600s", svg)
	}
	b.Columns = []any{cells.Column{Label: "i"}, cells.Column{Label: "square", Unit: "s"}}
	if svg, err := boardChart("t", b); svg != "" || err != nil {
		t.Errorf("a table without kernel, n and GFLOP/s: %q, %v; want no chart", svg, err)
	}
}
