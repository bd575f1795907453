package webgpu

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"unicode"

	"github.com/gpuplayground/playground/cells"
	"github.com/gpuplayground/playground/gpu"
	"github.com/gpuplayground/playground/harness"
	"github.com/gpuplayground/playground/numeric"
)

// Task is the work one `task` message hands the page (docs/protocol.md, "What each kind emits").
type Task struct {
	// Op is "adapter" (open the adapter and say what it is; nothing runs), "matmul" (time and check
	// Kernels at size N) or "compile" (compile Kernels[0], a learner's WGSL, and report
	// getCompilationInfo()'s messages).
	Op        string `json:"op"`
	N         int    `json:"n,omitempty"`
	Repeats   int    `json:"repeats,omitempty"`
	Transfers bool   `json:"transfers,omitempty"`
	// Budget is the time in seconds the page may spend on one kernel's timed repeats, once warmed
	// up (KernelBudget): it runs fewer than Repeats where they would take longer, never fewer than one.
	Budget  float64      `json:"budget_s,omitempty"`
	Kernels []TaskKernel `json:"kernels"`
}

// TaskKernel is one kernel of a Task: a ladder kernel by name, or a learner's ("custom") with its
// WGSL, entry point, workgroup size and the workgroups to dispatch at the task's n.
type TaskKernel struct {
	Name      string  `json:"name"`
	F16       bool    `json:"f16,omitempty"`
	Source    string  `json:"source,omitempty"`
	Entry     string  `json:"entry,omitempty"`
	Workgroup *[3]int `json:"workgroup,omitempty"`
	Dispatch  *[3]int `json:"dispatch,omitempty"`
	// LD is the row length A and B are stored with (n where unset); a ladder kernel's from its row
	// of Ladder.
	LD int `json:"ld,omitempty"`
}

// Answer is the page's `result` for a Task. Every field is checked (Decode): it is the learner's
// browser's word, so the server recomputes what it shows (median, min, max, GFLOP/s, the check) from
// the raw times and the relative error.
type Answer struct {
	// Unavailable, when set, says WebGPU cannot run here: "no-navigator-gpu", "insecure-context",
	// "no-adapter" or "no-device"; Detail adds the browser's words.
	Unavailable string   `json:"unavailable,omitempty"`
	Detail      string   `json:"detail,omitempty"`
	Adapter     *Adapter `json:"adapter,omitempty"`
	// Compile holds getCompilationInfo()'s messages for a compile task.
	Compile []CompileMessage `json:"compile,omitempty"`
	Results []Point          `json:"results,omitempty"`
}

// Adapter is what the page's GPUAdapter says about itself (GPUAdapterInfo) and the features the
// runner used.
type Adapter struct {
	Vendor       string `json:"vendor"`
	Architecture string `json:"architecture"`
	Device       string `json:"device"`
	Description  string `json:"description"`
	// Fallback is GPUAdapterInfo.isFallbackAdapter: a software implementation (SwiftShader), not a GPU.
	Fallback   bool `json:"fallback"`
	F16        bool `json:"f16"`
	Timestamps bool `json:"timestamps"`
}

// CompileMessage is one GPUCompilationMessage: Line and Col are 1-based in the WGSL source (0 when
// the message has no position).
type CompileMessage struct {
	Type    string `json:"type"` // error | warning | info
	Line    int    `json:"line"`
	Col     int    `json:"col"`
	Message string `json:"message"`
}

// Point is one kernel at one size, as the page measured it.
type Point struct {
	Kernel string `json:"kernel"`
	N      int    `json:"n"`
	// Error, when set, says why the kernel did not run (a missing feature, a failed dispatch).
	Error string `json:"error,omitempty"`
	// Method is "timestamp-query" (GPU timestamps at the beginning and end of a compute pass) or
	// "wall-clock" (submit to onSubmittedWorkDone()); Batch is the dispatches per timed sample.
	Method string `json:"method,omitempty"`
	Batch  int    `json:"batch,omitempty"`
	// Seconds are the timed repeats, each a sample's time divided by Batch: the task's Repeats, or
	// fewer (at least one) where they would have outlasted the task's Budget.
	Seconds []float64 `json:"seconds,omitempty"`
	// UploadSeconds and ReadbackSeconds time writing A and B and reading C back (transfers: true).
	UploadSeconds   float64 `json:"upload_seconds,omitempty"`
	ReadbackSeconds float64 `json:"readback_seconds,omitempty"`
	// RelError is ‖C − C_ref‖_F / ‖C_ref‖_F over the checked entries; null when C held NaN or Inf.
	RelError *float64 `json:"rel_error"`
	// Checked is how many entries of C were compared: n² for n ≤ 512, a sample above.
	Checked int `json:"checked,omitempty"`
}

// Caps on what an answer may hold.
const (
	maxText     = 512  // an adapter string, an error or a compile message, in bytes
	maxMessages = 64   // compile messages
	maxSeconds  = 1e4  // one timed dispatch
	maxBatch    = 4096 // dispatches per timed sample
)

// Decode parses and checks an answer to t. Strings are capped and stripped of control characters.
func Decode(raw json.RawMessage, t Task) (Answer, error) {
	var a Answer
	d := json.NewDecoder(bytes.NewReader(raw))
	d.DisallowUnknownFields()
	if err := d.Decode(&a); err != nil {
		return Answer{}, fmt.Errorf("the browser's answer is malformed: %v", err)
	}
	if d.More() {
		return Answer{}, errors.New("the browser's answer has data after its JSON object")
	}
	a.Detail = clean(a.Detail)
	if a.Unavailable != "" {
		if _, ok := unavailableWords[a.Unavailable]; !ok {
			return Answer{}, fmt.Errorf("the browser's answer names an unknown reason %q", clean(a.Unavailable))
		}
		return Answer{Unavailable: a.Unavailable, Detail: a.Detail}, nil
	}
	if a.Adapter == nil {
		return Answer{}, errors.New("the browser's answer names no adapter")
	}
	ad := a.Adapter
	ad.Vendor, ad.Architecture, ad.Device, ad.Description = clean(ad.Vendor), clean(ad.Architecture), clean(ad.Device), clean(ad.Description)
	if len(a.Compile) > maxMessages {
		a.Compile = a.Compile[:maxMessages]
	}
	for i := range a.Compile {
		m := &a.Compile[i]
		m.Message = clean(m.Message)
		if m.Type != "error" && m.Type != "warning" && m.Type != "info" {
			return Answer{}, fmt.Errorf("a compile message of type %q", clean(m.Type))
		}
		if m.Line < 0 || m.Col < 0 {
			return Answer{}, errors.New("a compile message at a negative line")
		}
	}
	if t.Op == "compile" || t.Op == "adapter" {
		if len(a.Results) > 0 {
			return Answer{}, fmt.Errorf("an answer to a %s task with results", t.Op)
		}
		return a, nil
	}
	if len(a.Results) != len(t.Kernels) {
		return Answer{}, fmt.Errorf("the browser answered %d results for %d kernels", len(a.Results), len(t.Kernels))
	}
	for i := range a.Results {
		p := &a.Results[i]
		if p.Kernel != t.Kernels[i].Name || p.N != t.N {
			return Answer{}, fmt.Errorf("result %d is for %q at n=%d; the task asked for %q at n=%d", i, clean(p.Kernel), p.N, t.Kernels[i].Name, t.N)
		}
		p.Error = clean(p.Error)
		if p.Error != "" {
			continue
		}
		if p.Method != "timestamp-query" && p.Method != "wall-clock" {
			return Answer{}, fmt.Errorf("result %d: unknown timing method %q", i, clean(p.Method))
		}
		if p.Batch < 1 || p.Batch > maxBatch {
			return Answer{}, fmt.Errorf("result %d: a batch of %d dispatches; want 1 to %d", i, p.Batch, maxBatch)
		}
		if len(p.Seconds) < 1 || len(p.Seconds) > t.Repeats {
			return Answer{}, fmt.Errorf("result %d has %d timings for %d repeats", i, len(p.Seconds), t.Repeats)
		}
		for _, s := range append(slices.Clone(p.Seconds), p.UploadSeconds, p.ReadbackSeconds) {
			if math.IsNaN(s) || s < 0 || s > maxSeconds {
				return Answer{}, fmt.Errorf("result %d: a time of %g s", i, s)
			}
		}
		if r := p.RelError; r != nil && (math.IsNaN(*r) || *r < 0) {
			return Answer{}, fmt.Errorf("result %d: a relative error of %g", i, *r)
		}
		if p.Checked < 1 || p.Checked > t.N*t.N {
			return Answer{}, fmt.Errorf("result %d checked %d entries of %d", i, p.Checked, t.N*t.N)
		}
	}
	return a, nil
}

// clean caps s at maxText bytes (on a rune boundary) and drops control characters.
func clean(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == unicode.ReplacementChar {
			return -1
		}
		return r
	}, s)
	if len(s) > maxText {
		cut := maxText
		for cut > 0 && !utf8Start(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }

// unavailableWords say, for each reason the page may give, why WebGPU cannot run and what to do.
var unavailableWords = map[string]string{
	"no-navigator-gpu": "this browser has no WebGPU (navigator.gpu is missing): use a recent Chrome, Edge or Safari 26+, or Firefox 141+ on Windows",
	"insecure-context": "WebGPU needs a secure context and this page is not one: open it as http://localhost (or 127.0.0.1) on the machine running the server, or serve it over https (docs/workshop.md, \"Workshops over https\")",
	"no-adapter":       "the browser offers no WebGPU adapter (the GPU may be blocklisted, or WebGPU switched off): check chrome://gpu, or try another browser",
	"no-device":        "the WebGPU adapter would not give a device",
}

// Label names the adapter for a table caption and notes. A fallback adapter, or one whose strings
// say SwiftShader, is software running on the CPU and is never called a GPU.
func (a Adapter) Label() string {
	var parts []string
	for _, s := range []string{a.Description, a.Vendor, a.Architecture, a.Device} {
		if s != "" && !slices.Contains(parts, s) {
			parts = append(parts, s)
		}
	}
	name := strings.Join(parts, ", ")
	if name == "" {
		name = "an adapter that does not name itself"
	}
	if a.Software() {
		return "a software WebGPU adapter running on your CPU, not a GPU (" + name + ")"
	}
	return "your GPU (" + name + ")"
}

// Software reports whether the adapter is a software implementation: a fallback adapter, or one that
// names SwiftShader.
func (a Adapter) Software() bool {
	if a.Fallback {
		return true
	}
	all := strings.ToLower(a.Vendor + " " + a.Architecture + " " + a.Device + " " + a.Description)
	return strings.Contains(all, "swiftshader") || strings.Contains(all, "llvmpipe") || strings.Contains(all, "lavapipe")
}

// Series is the chart series name of a browser kernel on adapter a.
func (a Adapter) Series(kernel string) string {
	if a.Software() {
		return kernel + " (your browser, software)"
	}
	return kernel + " (your GPU)"
}

// Tolerance is the check's bound for a kernel: FP32's (numeric.Tolerance), or FP16 inputs' for the
// f16 variants (gpu.Tolerance, as for the CUDA kernels with FP16 inputs).
func Tolerance(f16 bool) float64 {
	if f16 {
		return gpu.Tolerance("f16")
	}
	return numeric.Tolerance("float32")
}

// Request is what Measure runs: Kernels at every size of Sizes.
type Request struct {
	Kernels   []TaskKernel
	Sizes     []int
	Repeats   int
	Transfers bool
	// Dispatch, for a custom kernel, gives its workgroups at size n.
	Dispatch func(n int) [3]int
}

// Columns of the `browser` table; the spread of the repeats (min, max) folds behind "more columns".
var columns = []cells.Column{
	{Label: "kernel", Primary: true, Key: true}, {Label: "n", Primary: true, Key: true}, {Label: "inputs", Primary: true, Key: true}, {Label: "median", Unit: "s", Primary: true}, {Label: "min", Unit: "s"}, {Label: "max", Unit: "s"},
	{Label: "throughput", Unit: "GFLOP/s", Primary: true}, {Label: "rel. error", Primary: true}, {Label: "check", Primary: true}, {Label: "timing", Primary: true},
	{Label: "upload", Unit: "s", Primary: true}, {Label: "read-back", Unit: "s", Primary: true},
}

// OrderNote is the note a run shows before its browser part: when the browser's kernels run.
const OrderNote = "Your browser's WebGPU kernels run after this server's own kernels, within this run's turn in the server's queue: the server times nothing while your browser does, so on a laptop the two never share the machine."

// KernelBudget is the time, in seconds, the page may spend on one kernel's timed repeats at one
// size once it is warmed up (Task.Budget). On a GPU it never binds (each repeat is a batch of
// dispatches lasting about 20 ms, runner.js); on a slow adapter it cuts the repeats, down to one, so
// that the browser's part of a run stays bounded.
const KernelBudget = 1.0

// SoftwareMaxN is the largest n the browser's kernels run at on a software adapter (Adapter.Software):
// on SwiftShader one dispatch of webgpu-tiled at n = 1024 takes about 11 s (2·1024³ FLOP at
// 0.19 GFLOP/s, docs/benchmarks.md, "WebGPU on SwiftShader"), and a cell's warm-up and repeats of
// several kernels there would reach the run's time limit; at 512, one takes about 2 s.
const SoftwareMaxN = 512

// Measure first asks the run's page which WebGPU adapter it has (an "adapter" task), then hands it
// r's kernels, one size per task, and emits the `browser` table: one row per kernel and size,
// measured in the browser, captioned with the adapter. On a software adapter sizes above
// SoftwareMaxN are not run, with a note saying so. Each result also goes to add (for the chart),
// named by Adapter.Series. Without a page (cells.ErrNoBrowser), or without WebGPU there, each kernel
// gets one note saying why and what to do, and Measure returns nil. It reports progress per size to
// e and returns ctx's cause when ctx ends, or an error when the page's answer is malformed.
func Measure(ctx context.Context, e cells.Emitter, r Request, add func(harness.Result)) error {
	if len(r.Kernels) == 0 {
		return nil
	}
	ad, err := askAdapter(ctx, e, r.Kernels)
	if err != nil || ad == nil {
		return err
	}
	e.Note("info", OrderNote)
	sizes := r.Sizes
	if ad.Software() {
		var capped []int
		sizes, capped = softwareSizes(r.Sizes)
		e.Note("warning", softwareNote(capped, r.Kernels))
	}
	if len(sizes) == 0 {
		e.Progress(1, 1)
		return nil
	}
	e.Table(cells.Table{ID: "browser", Caption: "Measured in your browser just now through WebGPU, on " + ad.Label() +
		" (median of the timed repeats after a warm-up; C checked against a float64 reference computed in your browser)", Columns: columns})
	skipped := map[string]bool{} // kernels that failed at a size: later sizes are skipped
	for i, n := range sizes {
		t := r.task(n, skipped)
		if len(t.Kernels) > 0 {
			raw, err := cells.Ask(ctx, e, t)
			if err != nil {
				return err
			}
			a, err := Decode(raw, t)
			if err != nil {
				return err
			}
			if a.Unavailable != "" { // the device was lost since the adapter task
				NoteUnavailable(e, a, t.Kernels)
				return nil
			}
			for j, p := range a.Results {
				k := t.Kernels[j]
				if p.Error != "" {
					msg := fmt.Sprintf("%s at n=%d, in your browser: %s", p.Kernel, n, p.Error)
					if i < len(sizes)-1 {
						msg += " (its later sizes are skipped)"
					}
					e.Note("error", msg)
					skipped[k.Name] = true
					continue
				}
				res, row := point(p, k.F16, t.Repeats, a.Adapter)
				e.Row(row)
				add(res)
			}
		}
		e.Progress(i+1, len(sizes))
	}
	return nil
}

// askAdapter asks the page for its adapter; nil, with a note for each kernel, when there is no page
// or no WebGPU in it.
func askAdapter(ctx context.Context, e cells.Emitter, ks []TaskKernel) (*Adapter, error) {
	t := Task{Op: "adapter", Kernels: []TaskKernel{}}
	raw, err := cells.Ask(ctx, e, t)
	if errors.Is(err, cells.ErrNoBrowser) {
		noteEach(e, ks, "not run: this run has no browser page behind it, and these kernels run in the browser, through WebGPU (run the cell from its lesson page)")
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	a, err := Decode(raw, t)
	if err != nil {
		return nil, err
	}
	if a.Unavailable != "" {
		NoteUnavailable(e, a, ks)
		return nil, nil
	}
	return a.Adapter, nil
}

// task is the matmul task for size n: every kernel not skipped, with its launch.
func (r Request) task(n int, skipped map[string]bool) Task {
	t := Task{Op: "matmul", N: n, Repeats: r.Repeats, Transfers: r.Transfers, Budget: KernelBudget}
	for _, k := range r.Kernels {
		if skipped[k.Name] {
			continue
		}
		if r.Dispatch != nil && k.Source != "" {
			d := r.Dispatch(n)
			k.Dispatch = &d
		}
		if lk, ok := Lookup(k.Name); ok && k.Source == "" { // a ladder kernel: its launch from its row
			d := lk.Dispatch(n)
			k.Dispatch, k.LD = &d, lk.LeadingDim(n)
		}
		t.Kernels = append(t.Kernels, k)
	}
	return t
}

// softwareSizes splits sizes into those run on a software adapter and those above SoftwareMaxN.
func softwareSizes(sizes []int) (run, capped []int) {
	for _, n := range sizes {
		if n > SoftwareMaxN {
			capped = append(capped, n)
		} else {
			run = append(run, n)
		}
	}
	return run, capped
}

// softwareNote says that the adapter is software and, where sizes were capped, which and why.
func softwareNote(capped []int, ks []TaskKernel) string {
	msg := "Your browser offers only a software WebGPU adapter (such as SwiftShader): the webgpu kernels run on your CPU, emulating a GPU, so their times say nothing about a GPU. Use a browser with hardware WebGPU to measure your GPU."
	if len(capped) == 0 {
		return msg
	}
	var ns, names []string
	for _, n := range capped {
		ns = append(ns, fmt.Sprint(n))
	}
	for _, k := range ks {
		names = append(names, k.Name)
	}
	return msg + fmt.Sprintf(" On it, %s %s not run at n = %s (sizes above %d): one dispatch of webgpu-tiled at n = 1024 takes about 11 s on SwiftShader on a 2-core machine (docs/benchmarks.md), so the cell would not finish in reasonable time; a hardware adapter runs every size.",
		strings.Join(names, ", "), plural(len(names), "is", "are"), strings.Join(ns, ", "), SoftwareMaxN)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// NoteUnavailable gives each kernel one note saying why WebGPU cannot run in the page (a.Unavailable)
// and what to do.
func NoteUnavailable(e cells.Emitter, a Answer, ks []TaskKernel) {
	why := unavailableWords[a.Unavailable]
	if a.Detail != "" {
		why += " (" + a.Detail + ")"
	}
	noteEach(e, ks, "not run: "+why)
}

// noteEach gives each kernel one note.
func noteEach(e cells.Emitter, ks []TaskKernel, why string) {
	for _, k := range ks {
		e.Note("warning", k.Name+": "+why)
	}
}

// point turns a checked Point into a chart result and a table row.
func point(p Point, f16 bool, repeats int, a *Adapter) (harness.Result, cells.Row) {
	ts := slices.Clone(p.Seconds)
	slices.Sort(ts)
	med := ts[len(ts)/2]
	if len(ts)%2 == 0 {
		med = (ts[len(ts)/2-1] + ts[len(ts)/2]) / 2
	}
	gflops := 0.0
	if med > 0 {
		gflops = 2 * math.Pow(float64(p.N), 3) / med / 1e9
	}
	rel := math.MaxFloat64
	if p.RelError != nil {
		rel = *p.RelError
	}
	ok := rel <= Tolerance(f16)
	check := "ok"
	if !ok {
		check = "WRONG: over tolerance"
	}
	if p.Checked < p.N*p.N {
		check += fmt.Sprintf(" (%d sampled entries)", p.Checked)
	}
	inputs := "f32"
	if f16 {
		inputs = "f16, summed in f32"
	}
	method := fmt.Sprintf("timestamp queries around %d dispatch(es)", p.Batch)
	if p.Method == "wall-clock" {
		method = fmt.Sprintf("wall clock over %d dispatch(es), submit to onSubmittedWorkDone()", p.Batch)
	}
	if len(p.Seconds) < repeats {
		method += fmt.Sprintf("; %d of %d repeats, the rest over the browser's time budget of %g s per kernel and size", len(p.Seconds), repeats, KernelBudget)
	}
	values := []any{p.Kernel, p.N, inputs, med, ts[0], ts[len(ts)-1], gflops, rel, check, method, "", ""}
	if p.UploadSeconds > 0 || p.ReadbackSeconds > 0 {
		values[10], values[11] = p.UploadSeconds, p.ReadbackSeconds
	}
	res := harness.Result{Kernel: a.Series(p.Kernel), N: p.N, DType: "float32", Seconds: med, MinSeconds: ts[0], MaxSeconds: ts[len(ts)-1],
		GFLOPS: gflops, RelError: rel, OK: ok}
	return res, cells.Row{Table: "browser", Values: values, Bad: !ok}
}

// Rates EstimateSeconds assumes, in FLOP/s: a GPU's (below what integrated GPUs reach) and a
// software adapter's (about the middle of the ladder's 0.1–0.85 GFLOP/s on SwiftShader at n = 256
// to 1024, docs/benchmarks.md, "WebGPU on SwiftShader").
const (
	estimateGPURate      = 10e9
	estimateSoftwareRate = 0.2e9
)

// EstimateSeconds is a pessimistic guess of the browser's time, in seconds, for kernels at n with
// repeats, made before running (the adapter is not known yet) and never shown as a measurement:
// per kernel 0.3 s of set-up plus the longer of a GPU's warm-up and repeats at 10 GFLOP/s and a
// software adapter's (for n up to SoftwareMaxN; it runs no larger n) at 0.2 GFLOP/s, with up to two
// warm-up dispatches and its repeats cut to KernelBudget as runner.js cuts them; and the float64
// reference in JavaScript (about 0.2 GFLOP/s; every entry for n ≤ 512, 1024 sampled entries above).
func EstimateSeconds(kernels, n, repeats int) float64 {
	flops := 2 * math.Pow(float64(n), 3)
	ref := flops / 2e8
	if n > 512 {
		ref = 1024 * 2 * float64(n) / 2e8
	}
	each := float64(repeats+2) * flops / estimateGPURate
	if n <= SoftwareMaxN {
		t := flops / estimateSoftwareRate
		each = math.Max(each, 2*t+math.Min(float64(repeats)*t, math.Max(KernelBudget, t)))
	}
	return float64(kernels)*(0.3+each) + ref
}
