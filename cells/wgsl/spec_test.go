package wgsl

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/gpuplayground/playground/cells"
	"github.com/gpuplayground/playground/cells/cellstest"
	"github.com/gpuplayground/playground/cells/shared/kernelcell"
	"github.com/gpuplayground/playground/cells/shared/webgpu"
	"github.com/gpuplayground/playground/harness"
	"github.com/gpuplayground/playground/kernels"
)

const cell = `entry: mm
workgroup: [16, 16]
dispatch: ["ceil(n/16)", "ceil(n/16)"]
sizes: [100, 256]
compare: [ikj, webgpu-tiled]
---
@compute @workgroup_size(16, 16)
fn mm(@builtin(global_invocation_id) id: vec3<u32>) {
  let x = 1u;
}
`

func available() []kernels.Kernel { return kernels.CPU() }

func TestParse(t *testing.T) {
	s, err := Parse(cell, available(), harness.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	if s.Entry != "mm" || s.Workgroup != [3]int{16, 16, 1} || s.Repeats != 5 || s.SourceLine != 7 ||
		strings.Join(s.Compare, ",") != "ikj" || strings.Join(s.Browser, ",") != "webgpu-tiled" {
		t.Errorf("got %+v", s)
	}
	for n, want := range map[int][3]int{100: {7, 7, 1}, 256: {16, 16, 1}} {
		if got, err := s.DispatchFor(n); err != nil || got != want {
			t.Errorf("DispatchFor(%d) = %v, %v; want %v", n, got, err, want)
		}
	}
	// A compile message at the WGSL's line 3 is the cell's line 9.
	if got := s.compileMessage(webgpu.CompileMessage{Type: "error", Line: 3, Col: 7, Message: "unresolved identifier"}); got != "line 9:7: error: unresolved identifier" {
		t.Errorf("compile message %q", got)
	}
}

func TestParseErrors(t *testing.T) {
	for name, tt := range map[string]struct {
		src, want string
		line      int
	}{
		"no separator": {"entry: mm\n", "no `---` line", 0},
		"no entry":     {"sizes: [8]\n---\nfn mm() {}\n", "needs `entry: NAME`", 1},
		"bad entry":    {"entry: 9x\nsizes: [8]\n---\nfn mm() {}\n", "not a WGSL function name", 1},
		"missing fn":   {"entry: mm\nsizes: [8]\n---\nfn other() {}\n", "no function fn mm", 4},
		"big group":    {"entry: mm\nworkgroup: [32, 16]\nsizes: [8]\n---\nfn mm() {}\n", "at most 256 invocations", 2},
		"z too big":    {"entry: mm\nworkgroup: [1, 1, 65]\nsizes: [8]\n---\nfn mm() {}\n", "too large", 2},
		"fraction":     {"entry: mm\ndispatch: [\"n/16\"]\nsizes: [8]\n---\nfn mm() {}\n", "not a whole number", 2},
		"too many":     {"entry: mm\ndispatch: [\"n*1000\"]\nsizes: [100]\n---\nfn mm() {}\n", "WebGPU allows 1 to 65535", 2},
		"bad formula":  {"entry: mm\ndispatch: [\"n+\"]\nsizes: [8]\n---\nfn mm() {}\n", "dispatch formula", 2},
		"float64":      {"entry: mm\ndtype: float64\nsizes: [8]\n---\nfn mm() {}\n", "no float64", 2},
		"unknown":      {"entry: mm\nsizes: [8]\ncompare: [fast]\n---\nfn mm() {}\n", `unknown kernel "fast"`, 3},
		"twice":        {"entry: mm\nsizes: [8]\ncompare: [webgpu-naive, webgpu-naive]\n---\nfn mm() {}\n", "listed twice", 3},
		"huge n":       {"entry: mm\nsizes: [8192]\n---\nfn mm() {}\n", "over the limit", 2},
		"long source":  {"entry: mm\nsizes: [8]\n---\nfn mm() {}\n" + strings.Repeat("// x\n", 4000), "at most 16384 bytes", 4},
	} {
		_, err := Parse(tt.src, available(), harness.DefaultLimits())
		var se *cells.SpecError
		if !errors.As(err, &se) || !strings.Contains(err.Error(), tt.want) || se.Line != tt.line {
			t.Errorf("%s: got %v, want line %d with %q", name, err, tt.line, tt.want)
		}
	}
}

// page answers the compile task with answer, and every matmul task with a good result.
type page struct {
	cellstest.Recorder
	compile string
	tasks   []webgpu.Task
}

func (p *page) Ask(_ context.Context, task any) (json.RawMessage, error) {
	t := task.(webgpu.Task)
	if t.Op == "adapter" { // not recorded: the tests count the compile and matmul tasks
		return json.RawMessage(`{"adapter":{"vendor":"intel","architecture":"gen-12lp","device":"","description":"","fallback":false,"f16":true,"timestamps":true}}`), nil
	}
	p.tasks = append(p.tasks, t)
	if t.Op == "compile" {
		return json.RawMessage(p.compile), nil
	}
	var rs []string
	for _, k := range t.Kernels {
		b, _ := json.Marshal(webgpu.Point{Kernel: k.Name, N: t.N, Method: "timestamp-query", Batch: 1, Seconds: make1(t.Repeats), RelError: new(float64), Checked: t.N * t.N})
		rs = append(rs, string(b))
	}
	return json.RawMessage(`{"adapter":{"vendor":"intel","architecture":"gen-12lp","device":"","description":"","fallback":false,"f16":true,"timestamps":true},"results":[` + strings.Join(rs, ",") + `]}`), nil
}

func make1(n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = 1e-3
	}
	return out
}

func env() cells.Env {
	return cells.Env{Kernels: available(), Limits: harness.DefaultLimits()}
}

func TestRunCompileErrorOnCellLines(t *testing.T) {
	run, err := New(env()).Parse(cells.Cell{Source: cell})
	if err != nil {
		t.Fatal(err)
	}
	p := &page{compile: `{"adapter":{"vendor":"","architecture":"","device":"","description":"","fallback":true,"f16":false,"timestamps":false},"compile":[{"type":"error","line":3,"col":11,"message":"unresolved identifier 'y'"},{"type":"warning","line":2,"col":1,"message":"unused"}]}`}
	err = run.Run(context.Background(), p)
	if err == nil || !strings.Contains(err.Error(), "line 9:11: error: unresolved identifier 'y'") {
		t.Errorf("got %v", err)
	}
	if len(p.tasks) != 1 || p.tasks[0].Kernels[0].Source == "" || *p.tasks[0].Kernels[0].Workgroup != [3]int{16, 16, 1} {
		t.Errorf("tasks %+v", p.tasks)
	}
	if len(p.Notes) != 1 || p.Notes[0].Message != "line 8:1: warning: unused" {
		t.Errorf("notes %+v", p.Notes)
	}
}

func TestRunOrderAndDispatch(t *testing.T) {
	run, err := New(env()).Parse(cells.Cell{Source: strings.Replace(cell, "sizes: [100, 256]", "sizes: [20, 40]\nrepeats: 1", 1)})
	if err != nil {
		t.Fatal(err)
	}
	p := &page{compile: `{"adapter":{"vendor":"intel","architecture":"gen-12lp","device":"","description":"","fallback":false,"f16":true,"timestamps":true}}`}
	if err := run.Run(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	if len(p.tasks) != 3 || p.tasks[1].Kernels[0].Name != "custom" || *p.tasks[1].Kernels[0].Dispatch != [3]int{2, 2, 1} ||
		*p.tasks[2].Kernels[0].Dispatch != [3]int{3, 3, 1} || p.tasks[2].Kernels[1].Name != "webgpu-tiled" {
		t.Errorf("tasks %+v", p.tasks)
	}
	if got := len(p.RowsOf("results")); got != 2 {
		t.Errorf("%d server rows, want 2 (ikj)", got)
	}
	if got := len(p.RowsOf("browser")); got != 4 {
		t.Errorf("%d browser rows, want 4", got)
	}
	if !strings.Contains(p.SVG, "ikj (this server)") || !strings.Contains(p.SVG, "custom (your GPU)") {
		t.Errorf("the chart lacks a series")
	}
}

// Without a browser (lessons/cells_test.go) the server's kernels run and the browser's each get a note.
func TestRunWithoutBrowser(t *testing.T) {
	run, err := New(env()).Parse(cells.Cell{Source: strings.Replace(cell, "sizes: [100, 256]", "sizes: [8]\nrepeats: 1", 1)})
	if err != nil {
		t.Fatal(err)
	}
	r := &cellstest.Recorder{}
	if err := run.Run(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	if len(r.Notes) != 2 || !strings.HasPrefix(r.Notes[0].Message, "custom: not compiled or run") || !strings.HasPrefix(r.Notes[1].Message, "webgpu-tiled: not run") {
		t.Errorf("notes %+v", r.Notes)
	}
	if len(r.RowsOf("results")) != 1 {
		t.Errorf("rows %+v", r.Rows)
	}
}

func FuzzParseWGSL(f *testing.F) {
	f.Add(cell)
	f.Add("entry: k\ndispatch: [\"n*n*n*n\"]\nsizes: [4096]\n---\nfn k(")
	f.Add("entry: k\nworkgroup: [256, 1, 1]\ndispatch: [\"n/(n-64)\", \"max(1, floor(n/3))\"]\nsizes: [64, 65]\n---\nfn k(")
	f.Add("entry: k\nsizes: [1]\ncompare: [webgpu-regblock-f16, gonum]\n---\nfn k (")
	f.Add("entry: k\nsizes: &s [1, 2]\ncompare: *s\n---\nfn k(")
	f.Fuzz(func(t *testing.T, src string) {
		s, err := Parse(src, available(), harness.DefaultLimits())
		if err != nil {
			return
		}
		if len(s.Sizes) > kernelcell.MaxSizes || len(s.Compare)+len(s.Browser) > kernelcell.MaxKernels || len(s.Source) > MaxSourceBytes || len(s.Entry) > cells.MaxValueBytes {
			t.Fatalf("accepted %d sizes, %d+%d compared kernels, %d bytes of source, an entry of %d bytes", len(s.Sizes), len(s.Compare), len(s.Browser), len(s.Source), len(s.Entry))
		}
		if inv := s.Workgroup[0] * s.Workgroup[1] * s.Workgroup[2]; inv > maxInvocations || inv < 1 {
			t.Fatalf("accepted workgroup %v", s.Workgroup)
		}
		for _, n := range s.Sizes {
			d, err := s.DispatchFor(n)
			if err != nil || n > webgpu.MaxN {
				t.Fatalf("accepted n=%d: %v %v", n, d, err)
			}
			for _, g := range d {
				if g < 1 || g > maxWorkgroupsDim {
					t.Fatalf("accepted a dispatch of %v at n=%d", d, n)
				}
			}
		}
	})
}
