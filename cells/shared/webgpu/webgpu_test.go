package webgpu

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/gpuplayground/playground/cells"
	"github.com/gpuplayground/playground/cells/cellstest"
	"github.com/gpuplayground/playground/harness"
)

// page is a Recorder with a browser behind it: answer makes the page's result for each task.
type page struct {
	cellstest.Recorder
	tasks  []Task
	answer func(Task) string
}

func (p *page) Ask(_ context.Context, task any) (json.RawMessage, error) {
	t := task.(Task)
	p.tasks = append(p.tasks, t)
	return json.RawMessage(p.answer(t)), nil
}

const swiftshader = `{"vendor":"google","architecture":"swiftshader","device":"","description":"","fallback":true,"f16":false,"timestamps":true}`

// goodAnswer times every kernel at 1 ms per repeat (wall clock, batch 2) with a small error.
func goodAnswer(adapter string) func(Task) string {
	return func(t Task) string {
		var rs []string
		for _, k := range t.Kernels {
			secs := strings.TrimSuffix(strings.Repeat("0.001,", t.Repeats), ",")
			rs = append(rs, fmt.Sprintf(`{"kernel":%q,"n":%d,"method":"wall-clock","batch":2,"seconds":[%s],"rel_error":1e-7,"checked":%d}`, k.Name, t.N, secs, t.N*t.N))
		}
		return `{"adapter":` + adapter + `,"results":[` + strings.Join(rs, ",") + `]}`
	}
}

func request(names ...string) Request {
	r := Request{Sizes: []int{8, 16}, Repeats: 3}
	for _, n := range names {
		k, _ := Lookup(n)
		r.Kernels = append(r.Kernels, TaskKernel{Name: k.Name, F16: k.F16})
	}
	return r
}

func TestMeasureFallbackAdapter(t *testing.T) {
	p := &page{answer: goodAnswer(swiftshader)}
	var chart []harness.Result
	if err := Measure(context.Background(), p, request("webgpu-tiled", "webgpu-naive-f16"), func(r harness.Result) { chart = append(chart, r) }); err != nil {
		t.Fatal(err)
	}
	if len(p.tasks) != 3 || p.tasks[0].Op != "adapter" || p.tasks[2].N != 16 || p.tasks[1].Repeats != 3 || p.tasks[1].Op != "matmul" || p.tasks[1].Budget != KernelBudget {
		t.Errorf("tasks %+v", p.tasks)
	}
	rows := p.RowsOf("browser")
	if len(rows) != 4 {
		t.Fatalf("%d rows", len(rows))
	}
	if got := fmt.Sprint(rows[1].Values[:9]); got != "[webgpu-naive-f16 8 f16, summed in f32 0.001 0.001 0.001 0.001024 1e-07 ok]" {
		t.Errorf("row %s", got)
	}
	caption := p.Tables[0].Caption
	if !strings.Contains(caption, "software WebGPU adapter running on your CPU, not a GPU") || strings.Contains(caption, "your GPU") {
		t.Errorf("caption %q", caption)
	}
	if len(chart) != 4 || chart[0].Kernel != "webgpu-tiled (your browser, software)" {
		t.Errorf("chart results %+v", chart)
	}
	if p.Done != [2]int{2, 2} {
		t.Errorf("progress %v", p.Done)
	}
}

func TestMeasureGPUAndChecks(t *testing.T) {
	gpu := `{"vendor":"apple","architecture":"metal-3","device":"","description":"Apple M2","fallback":false,"f16":true,"timestamps":true}`
	p := &page{answer: func(t Task) string {
		var rs []string
		for _, k := range t.Kernels {
			switch k.Name {
			case "webgpu-tiled":
				rs = append(rs, fmt.Sprintf(`{"kernel":"webgpu-tiled","n":%d,"method":"timestamp-query","batch":1,"seconds":[0.003,0.001,0.002],"rel_error":0.5,"checked":%d}`, t.N, t.N*t.N))
			case "webgpu-regblock":
				rs = append(rs, fmt.Sprintf(`{"kernel":"webgpu-regblock","n":%d,"method":"timestamp-query","batch":1,"seconds":[0.001,0.001,0.001],"rel_error":null,"checked":%d}`, t.N, t.N*t.N))
			default:
				rs = append(rs, fmt.Sprintf(`{"kernel":%q,"n":%d,"error":"not run: no shader-f16","rel_error":null}`, k.Name, t.N))
			}
		}
		return `{"adapter":` + gpu + `,"results":[` + strings.Join(rs, ",") + `]}`
	}}
	var chart []harness.Result
	if err := Measure(context.Background(), p, request("webgpu-tiled", "webgpu-regblock", "webgpu-naive-f16"), func(r harness.Result) { chart = append(chart, r) }); err != nil {
		t.Fatal(err)
	}
	rows := p.RowsOf("browser")
	if len(rows) != 4 || !rows[0].Bad || !rows[1].Bad || rows[0].Values[3] != 0.002 {
		t.Errorf("rows %+v", rows)
	}
	if !strings.Contains(p.Tables[0].Caption, "your GPU (Apple M2, apple, metal-3)") {
		t.Errorf("caption %q", p.Tables[0].Caption)
	}
	// The failed kernel gets one note and is not asked for again.
	if len(p.tasks[2].Kernels) != 2 {
		t.Errorf("second size's task %+v", p.tasks[2])
	}
	var errs []string
	for _, n := range p.Notes {
		if n.Level == "error" {
			errs = append(errs, n.Message)
		}
	}
	if len(errs) != 1 || errs[0] != "webgpu-naive-f16 at n=8, in your browser: not run: no shader-f16 (its later sizes are skipped)" {
		t.Errorf("error notes %q", errs)
	}
	if chart[0].Kernel != "webgpu-tiled (your GPU)" || chart[0].OK {
		t.Errorf("chart %+v", chart[0])
	}
}

// On a software adapter, sizes above SoftwareMaxN are not asked for, and one note says which and
// why; a kernel the page's time budget cut to fewer repeats says so in its row.
func TestMeasureCapsSoftwareAdapter(t *testing.T) {
	p := &page{answer: func(t Task) string {
		if t.Op == "adapter" {
			return `{"adapter":` + swiftshader + `}`
		}
		return `{"adapter":` + swiftshader + fmt.Sprintf(`,"results":[{"kernel":"webgpu-tiled","n":%d,"method":"timestamp-query","batch":1,"seconds":[2.5],"rel_error":1e-7,"checked":%d}]}`, t.N, t.N*t.N)
	}}
	r := request("webgpu-tiled")
	r.Sizes = []int{256, 512, 1024, 2048}
	if err := Measure(context.Background(), p, r, func(harness.Result) {}); err != nil {
		t.Fatal(err)
	}
	var ns []int
	for _, tk := range p.tasks[1:] {
		ns = append(ns, tk.N)
	}
	if got, want := fmt.Sprint(ns), "[256 512]"; got != want {
		t.Errorf("sizes asked %s, want %s", got, want)
	}
	var warned []string
	for _, n := range p.Notes {
		if n.Level == "warning" {
			warned = append(warned, n.Message)
		}
	}
	if len(warned) != 1 || !strings.Contains(warned[0], "webgpu-tiled is not run at n = 1024, 2048 (sizes above 512)") || !strings.Contains(warned[0], "software WebGPU adapter") {
		t.Errorf("warnings %q", warned)
	}
	rows := p.RowsOf("browser")
	if len(rows) != 2 || !strings.Contains(rows[1].Values[9].(string), "1 of 3 repeats, the rest over the browser's time budget of 1 s") {
		t.Errorf("rows %+v", rows)
	}
	if p.Done != [2]int{2, 2} {
		t.Errorf("progress %v", p.Done)
	}

	// A hardware adapter runs every size.
	gpu := &page{answer: goodAnswer(`{"vendor":"intel","architecture":"gen-12lp","device":"","description":"","fallback":false,"f16":true,"timestamps":true}`)}
	if err := Measure(context.Background(), gpu, r, func(harness.Result) {}); err != nil {
		t.Fatal(err)
	}
	if len(gpu.tasks) != 5 || gpu.tasks[4].N != 2048 {
		t.Errorf("a GPU's tasks %+v", gpu.tasks)
	}
}

// The estimate covers the slower of a GPU and a software adapter at sizes the latter runs: at
// n = 512 on SwiftShader (0.2 GFLOP/s), a warm-up of two 1.34 s dispatches and one timed.
func TestEstimateCoversSoftwareAdapter(t *testing.T) {
	flops := 2 * 512.0 * 512 * 512
	want := 0.3 + 3*flops/0.2e9 + flops/2e8
	if got := EstimateSeconds(1, 512, 3); got < want*0.999 || got > want*1.001 {
		t.Errorf("EstimateSeconds(1, 512, 3) = %g, want %g", got, want)
	}
	// Above SoftwareMaxN only a GPU runs: 10 GFLOP/s, warm-up and repeats.
	flops = 2 * 2048.0 * 2048 * 2048
	want = 0.3 + 5*flops/10e9 + 1024*2*2048/2e8
	if got := EstimateSeconds(1, 2048, 3); got < want*0.999 || got > want*1.001 {
		t.Errorf("EstimateSeconds(1, 2048, 3) = %g, want %g", got, want)
	}
}

func TestMeasureWithoutWebGPU(t *testing.T) {
	// No page behind the run: one note per kernel, no error.
	r := &cellstest.Recorder{}
	if err := Measure(context.Background(), r, request("webgpu-tiled", "webgpu-naive"), nil); err != nil {
		t.Fatal(err)
	}
	if len(r.Notes) != 2 || !strings.HasPrefix(r.Notes[1].Message, "webgpu-naive: not run: this run has no browser page") {
		t.Errorf("notes %+v", r.Notes)
	}
	// A page without WebGPU: its reason worded, once per kernel.
	for reason, want := range map[string]string{"insecure-context": "secure context", "no-navigator-gpu": "navigator.gpu is missing", "no-adapter": "no WebGPU adapter"} {
		p := &page{answer: func(Task) string { return `{"unavailable":"` + reason + `","detail":"x\u0007y"}` }}
		if err := Measure(context.Background(), p, request("webgpu-tiled", "webgpu-naive"), nil); err != nil {
			t.Fatal(err)
		}
		if len(p.Notes) != 2 || !strings.Contains(p.Notes[0].Message, want) || !strings.HasSuffix(p.Notes[0].Message, "(xy)") || len(p.tasks) != 1 {
			t.Errorf("%s: notes %+v", reason, p.Notes)
		}
	}
}

func TestMeasureEndsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(errors.New("stopped"))
	e := &asker{}
	if err := Measure(ctx, e, request("webgpu-tiled"), nil); err == nil || err.Error() != "stopped" {
		t.Errorf("got %v", err)
	}
}

type asker struct{ cellstest.Recorder }

func (*asker) Ask(ctx context.Context, _ any) (json.RawMessage, error) {
	<-ctx.Done()
	return nil, context.Cause(ctx)
}

func TestDecodeRefuses(t *testing.T) {
	task := Task{Op: "matmul", N: 4, Repeats: 2, Kernels: []TaskKernel{{Name: "webgpu-tiled"}}}
	ok := `{"kernel":"webgpu-tiled","n":4,"method":"timestamp-query","batch":1,"seconds":[0.1,0.2],"rel_error":0,"checked":16}`
	ad := `"adapter":` + swiftshader
	if _, err := Decode(json.RawMessage(`{`+ad+`,"results":[`+ok+`]}`), task); err != nil {
		t.Fatalf("a good answer: %v", err)
	}
	// Fewer repeats than asked (the page's time budget ran out) are an answer.
	if _, err := Decode(json.RawMessage(`{`+ad+`,"results":[`+strings.Replace(ok, "[0.1,0.2]", "[0.1]", 1)+`]}`), task); err != nil {
		t.Fatalf("one repeat of two: %v", err)
	}
	for name, raw := range map[string]string{
		"unknown field":  `{` + ad + `,"results":[` + ok + `],"extra":1}`,
		"no adapter":     `{"results":[` + ok + `]}`,
		"too few":        `{` + ad + `,"results":[]}`,
		"other kernel":   `{` + ad + `,"results":[` + strings.Replace(ok, "webgpu-tiled", "webgpu-naive", 1) + `]}`,
		"other n":        `{` + ad + `,"results":[` + strings.Replace(ok, `"n":4`, `"n":5`, 1) + `]}`,
		"more repeats":   `{` + ad + `,"results":[` + strings.Replace(ok, "[0.1,0.2]", "[0.1,0.2,0.3]", 1) + `]}`,
		"no repeats":     `{` + ad + `,"results":[` + strings.Replace(ok, "[0.1,0.2]", "[]", 1) + `]}`,
		"negative time":  `{` + ad + `,"results":[` + strings.Replace(ok, "0.2", "-0.2", 1) + `]}`,
		"huge time":      `{` + ad + `,"results":[` + strings.Replace(ok, "0.2", "1e99", 1) + `]}`,
		"method":         `{` + ad + `,"results":[` + strings.Replace(ok, "timestamp-query", "guess", 1) + `]}`,
		"batch":          `{` + ad + `,"results":[` + strings.Replace(ok, `"batch":1`, `"batch":0`, 1) + `]}`,
		"negative error": `{` + ad + `,"results":[` + strings.Replace(ok, `"rel_error":0`, `"rel_error":-1`, 1) + `]}`,
		"checked":        `{` + ad + `,"results":[` + strings.Replace(ok, `"checked":16`, `"checked":17`, 1) + `]}`,
		"unknown reason": `{"unavailable":"tired"}`,
		"trailing":       `{` + ad + `,"results":[` + ok + `]} {}`,
		"compile type":   `{` + ad + `,"compile":[{"type":"panic","line":1,"col":1,"message":"x"}],"results":[` + ok + `]}`,
		"not an object":  `[1]`,
		"string n":       `{` + ad + `,"results":[` + strings.Replace(ok, `"n":4`, `"n":"4"`, 1) + `]}`,
		"negative line":  `{` + ad + `,"compile":[{"type":"error","line":-1,"col":1,"message":"x"}]}`,
	} {
		if _, err := Decode(json.RawMessage(raw), task); err == nil {
			t.Errorf("%s: accepted %s", name, raw)
		}
	}
	if _, err := Decode(json.RawMessage(`{`+ad+`,"results":[`+ok+`]}`), Task{Op: "adapter"}); err == nil {
		t.Errorf("an adapter task's answer with results accepted")
	}
}

func TestLabelNeverCallsSoftwareAGPU(t *testing.T) {
	for _, a := range []Adapter{
		{Fallback: true, Vendor: "google"},
		{Vendor: "google", Architecture: "SwiftShader"}, // a page that does not say fallback
		{Description: "llvmpipe (LLVM 15.0.6, 256 bits)"},
	} {
		if l := a.Label(); strings.Contains(l, "your GPU") || !strings.Contains(l, "not a GPU") || !a.Software() {
			t.Errorf("%+v: label %q", a, l)
		}
	}
	if l := (Adapter{Vendor: "intel", Architecture: "gen-12lp"}).Label(); l != "your GPU (intel, gen-12lp)" {
		t.Errorf("label %q", l)
	}
}

func TestCleanCapsText(t *testing.T) {
	long := strings.Repeat("é", 400)
	if got := clean(long); len(got) > maxText+len("…") || !strings.HasSuffix(got, "…") || strings.ContainsRune(got, '\uFFFD') {
		t.Errorf("clean: %d bytes", len(got))
	}
	if got := clean("a\nb\x00c"); got != "abc" {
		t.Errorf("clean: %q", got)
	}
}

// FuzzDecode: whatever a page answers, Decode returns an answer within the caps or an error, and
// never panics.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"adapter":` + swiftshader + `,"results":[{"kernel":"webgpu-tiled","n":4,"method":"wall-clock","batch":1,"seconds":[0.1,0.2],"rel_error":0,"checked":16}]}`))
	f.Add([]byte(`{"unavailable":"no-adapter"}`))
	f.Add([]byte(`{"adapter":{},"compile":[{"type":"error","line":3,"col":9,"message":"unresolved"}]}`))
	task := Task{Op: "matmul", N: 4, Repeats: 2, Kernels: []TaskKernel{{Name: "webgpu-tiled"}}}
	f.Fuzz(func(t *testing.T, raw []byte) {
		for _, tk := range []Task{task, {Op: "compile"}} {
			a, err := Decode(raw, tk)
			if err != nil {
				continue
			}
			if len(a.Compile) > maxMessages || len(a.Detail) > maxText+3 {
				t.Fatalf("over the caps: %+v", a)
			}
			if a.Unavailable == "" && a.Adapter == nil {
				t.Fatalf("an answer with neither an adapter nor a reason")
			}
			e := &cellstest.Recorder{}
			for _, p := range a.Results {
				if p.Error == "" {
					_, row := point(p, false, tk.Repeats, a.Adapter)
					e.Row(row)
				}
			}
		}
	})
}

var _ cells.Asker = (*page)(nil)
