package cuda

import (
	"context"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/gpuplayground/playground/cells"
	"github.com/gpuplayground/playground/cells/cellstest"
	"github.com/gpuplayground/playground/gpu"
	kcuda "github.com/gpuplayground/playground/gpu/nvidia"
	"github.com/gpuplayground/playground/harness"
	pt "github.com/gpuplayground/playground/problems/problemstest"
)

// testGPU compiles with NVRTC here; with a device it "measures" every custom kernel in a millisecond
// and keeps the requests.
type testGPU struct {
	nv       *kcuda.NVRTC
	device   bool
	requests []gpu.Request
}

func (g *testGPU) Unavailable() string {
	if g.device {
		return ""
	}
	return "no CUDA device (test)"
}
func (g *testGPU) Device() *kcuda.Device { return nil }
func (g *testGPU) Arch() int             { return 80 }
func (g *testGPU) Compile(ctx context.Context, src, name, arch string) (string, error) {
	if arch == "" {
		return kcuda.CompileArch(g.nv, src, name, 80)
	}
	return kcuda.CompileFor(ctx, g.nv, nil, kcuda.FindHeaders(g.nv), src, name, arch)
}

// archOr is arch, or def where it is "" (the server's own).
func archOr(arch, def string) string {
	if arch == "" {
		return def
	}
	return arch
}
func (g *testGPU) Measure(_ context.Context, req gpu.Request, _ func(int)) (harness.Result, error) {
	g.requests = append(g.requests, req)
	return harness.Result{Kernel: req.Kernel, N: req.N, DType: req.DType, Seconds: 1e-3, MinSeconds: 1e-3, MaxSeconds: 1e-3, OK: true}, nil
}

const tiledTransposeCell = `kernel: k
problem: transpose
block: [32, 8]
grid: ["ceil(n/32)", "ceil(n/32)"]
shared_bytes: "n*4"
sizes: [40, 64]
---
`

// runCell runs cell on a server with or without a (test) device and returns what it emitted.
func runCell(t *testing.T, cell string, device bool) (*cellstest.Recorder, *testGPU) {
	t.Helper()
	nv, err := kcuda.LoadNVRTC()
	if err != nil {
		t.Skipf("skipping: no NVRTC (%v)", err)
	}
	g := &testGPU{nv: nv, device: device}
	return runCellOn(t, cell, g), g
}

// runCellOn runs cell with g as the server's GPU and returns what it emitted.
func runCellOn(t *testing.T, cell string, g cells.GPU) *cellstest.Recorder {
	t.Helper()
	k := New(cells.Env{Kernels: gpuAvailable(), Limits: harness.DefaultLimits(), GPU: g})
	r, err := k.Parse(cells.Cell{Source: cell})
	if err != nil {
		t.Fatal(err)
	}
	rec := &cellstest.Recorder{}
	if err := r.Run(context.Background(), rec); err != nil {
		t.Fatal(err)
	}
	for _, n := range rec.Notes {
		if n.Level == "error" {
			t.Errorf("error note: %s", n.Message)
		}
	}
	return rec
}

// Without a GPU a transpose cell's kernel runs in the virtual GPU, each size a row of the emulated
// table whose modelled rate is in GB/s.
func TestTransposeCellEmulated(t *testing.T) {
	rec, _ := runCell(t, tiledTransposeCell+pt.TiledTranspose, false)
	rows := rec.RowsOf("emulated")
	if len(rows) != 2 || len(rec.Tables) != 1 {
		t.Fatalf("got %d emulated rows, tables %+v; want 2 rows", len(rows), rec.Tables)
	}
	cols := rec.Tables[0].Columns
	if got := cols[len(cols)-2].Unit; got != "GB/s" {
		t.Errorf("modelled rate column: got unit %q, want GB/s", got)
	}
	for _, r := range rows {
		if r.Bad || r.Values[5] != "ok" {
			t.Errorf("row %v: want ok", r.Values)
		}
	}
}

// With a GPU the request carries the problem, the shared bytes and the precision; the results table
// and the chart give the problem's GB/s (2·n²·4 bytes over the median).
func TestTransposeCellMeasured(t *testing.T) {
	cell := strings.Replace(tiledTransposeCell, "sizes:", "precision: fp16\nsizes:", 1) + pt.TiledTranspose
	rec, g := runCell(t, cell, true)
	if len(g.requests) != 2 {
		t.Fatalf("got %d measured requests, want 2", len(g.requests))
	}
	if r := g.requests[1]; r.Problem != "transpose" || r.SharedBytes != 64*4 || r.Precision != "fp16" || r.Grid != [3]int{2, 2, 1} {
		t.Errorf("got request %+v, want transpose, 256 shared bytes, fp16, grid 2×2", r)
	}
	rows := rec.RowsOf("results")
	if len(rows) != 2 {
		t.Fatalf("got %d result rows, want 2", len(rows))
	}
	if got, want := rows[1].Values[6].(float64), 2*64*64*4/1e-3/1e9; math.Abs(got-want) > 1e-12 {
		t.Errorf("throughput: got %g, want %g GB/s", got, want)
	}
	if unit := rec.Tables[0].Columns[6].Unit; unit != "GB/s" {
		t.Errorf("throughput column: got unit %q, want GB/s", unit)
	}
	if rec.Charts == 0 || rec.ChartErr != nil || !strings.Contains(rec.SVG, "GB/s") {
		t.Errorf("chart: %d drawn, %v, GB/s in it: %v", rec.Charts, rec.ChartErr, strings.Contains(rec.SVG, "GB/s"))
	}
}

// Every example cell of docs/writing-lessons.md with a problem runs in the virtual GPU and is judged ok.
func TestDocsProblemExamples(t *testing.T) {
	readme, err := os.ReadFile("../../docs/writing-lessons.md")
	if err != nil {
		t.Fatal(err)
	}
	examples := 0
	for _, block := range strings.Split(string(readme), "```cuda\n")[1:] {
		cell, _, _ := strings.Cut(block, "\n```")
		if !strings.Contains(cell, "problem:") {
			continue
		}
		examples++
		rec, _ := runCell(t, cell, false)
		rows := rec.RowsOf("emulated")
		if len(rows) == 0 {
			t.Errorf("no emulated rows for\n%s", cell)
		}
		for _, r := range rows {
			if r.Bad {
				t.Errorf("%v: want ok, for\n%s", r.Values, cell)
			}
		}
	}
	if examples != 5 {
		t.Errorf("got %d docs/writing-lessons.md examples with a problem, want one per problem but matmul (5)", examples)
	}
}

// Show PTX of a reduce cell runs its smallest size in the virtual GPU, with its dynamic shared
// memory, and writes the counts beside the PTX; a size over the virtual GPU's
// limit for reduce is an info note, not a row.
func TestReduceCellShowPTXAndLimit(t *testing.T) {
	nv, err := kcuda.LoadNVRTC()
	if err != nil {
		t.Skipf("skipping: no NVRTC (%v)", err)
	}
	cell := "kernel: k\nproblem: reduce\nblock: [256]\ngrid: [\"ceil(n/512)\"]\nshared_bytes: \"256*4\"\nsizes: [3000, 2000000]\n---\n" + pt.TreeReduce
	k := New(cells.Env{Kernels: gpuAvailable(), Limits: harness.DefaultLimits(), GPU: &testGPU{nv: nv}})
	act, err := cells.Parse(k, "ptx", cells.Cell{Source: cell})
	if err != nil {
		t.Fatal(err)
	}
	rec := &cellstest.Recorder{}
	if err := act.Run(context.Background(), rec); err != nil {
		t.Fatal(err)
	}
	if len(rec.Texts) != 1 || !strings.Contains(rec.Texts[0].Title, "at n=3000") || !strings.Contains(rec.Texts[0].Body, "wavefronts/req") {
		t.Errorf("got texts %v; want the PTX annotated with the counts at n=3000", rec.Texts)
	}
	rec, _ = runCell(t, cell, false)
	if rows := rec.RowsOf("emulated"); len(rows) != 1 || rows[0].Bad {
		t.Errorf("got emulated rows %v, want one ok row (n=3000)", rows)
	}
	if len(rec.Notes) == 0 || !strings.Contains(rec.Notes[len(rec.Notes)-1].Message, "custom at n=2000000: not emulated") {
		t.Errorf("got notes %v, want the limit's note for n=2000000", rec.Notes)
	}
}

// A half-precision kernel failing the check at the cell's default fp32 is told, in an info note,
// which `precision:` value applies; the same kernel with `precision: fp16` passes.
func TestHalfKernelFailingAtFP32IsToldItsPrecision(t *testing.T) {
	const head = "kernel: k\nproblem: matmul\nblock: [16, 16]\ngrid: [\"ceil(n/16)\", \"ceil(n/16)\"]\nsizes: [64]\n"
	src := "---\n" + strings.ReplaceAll(pt.RoundingMatmul, "ROUND(", "hf(")
	rec, _ := runCell(t, head+src, false)
	var notes []string
	for _, n := range rec.Notes {
		notes = append(notes, n.Message)
	}
	if rows := rec.RowsOf("emulated"); len(rows) != 1 || !rows[0].Bad {
		t.Fatalf("got rows %v, want one WRONG row", rows)
	}
	if all := strings.Join(notes, "\n"); !strings.Contains(all, "`precision: fp16`") || !strings.Contains(all, "custom at n=64") {
		t.Errorf("notes %q, want one naming `precision: fp16`", all)
	}
	rec, _ = runCell(t, head+"precision: fp16\n"+src, false)
	if rows := rec.RowsOf("emulated"); len(rows) != 1 || rows[0].Bad {
		t.Errorf("with precision: fp16: rows %v, want one ok row", rows)
	}
	for _, n := range rec.Notes {
		if strings.Contains(n.Message, "precision:") {
			t.Errorf("with precision: fp16, a precision note: %s", n.Message)
		}
	}
}

// The same for a problem other than matmul: a softmax rounding its outputs to half.
func TestHalfSoftmaxFailingAtFP32IsToldItsPrecision(t *testing.T) {
	hf := pt.RoundingMatmul[:strings.Index(pt.RoundingMatmul, "extern")]
	src := hf + strings.Replace(pt.RowSoftmax, "y[j] = expf(x[j] - m) / s", "y[j] = hf(expf(x[j] - m) / s)", 1)
	rec, _ := runCell(t, "kernel: k\nproblem: softmax\nblock: [256]\ngrid: [\"n\"]\nsizes: [40]\n---\n"+src, false)
	if rows := rec.RowsOf("emulated"); len(rows) != 1 || !rows[0].Bad {
		t.Fatalf("got rows %v, want one WRONG row", rows)
	}
	var all []string
	for _, n := range rec.Notes {
		all = append(all, n.Message)
	}
	if s := strings.Join(all, "\n"); !strings.Contains(s, "custom at n=40") || !strings.Contains(s, "`precision: fp16`") {
		t.Errorf("notes %q, want one naming `precision: fp16`", s)
	}
}
