package matmul

import (
	"cmp"
	"context"
	_ "embed"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/gpuplayground/playground/cells"
	"github.com/gpuplayground/playground/cells/shared/webgpu"
	"github.com/gpuplayground/playground/chart"
	"github.com/gpuplayground/playground/harness"
	"github.com/gpuplayground/playground/harness/peaks"
	"github.com/gpuplayground/playground/kernels"
	"github.com/gpuplayground/playground/sim/datasheet"
	"github.com/gpuplayground/playground/vgpu/emulate"
)

//go:embed render.js
var script string

// Kind is the matmul cell kind on one server.
type Kind struct{ env cells.Env }

// New returns the matmul kind for env.
func New(env cells.Env) *Kind { return &Kind{env: env} }

func (*Kind) Name() string   { return "matmul" }
func (*Kind) Script() string { return script }

// Parse validates the cell and returns its run.
func (k *Kind) Parse(c cells.Cell) (cells.Run, error) {
	s, err := Parse(c.Source, k.env.Kernels, k.env.Limits)
	if err != nil {
		return nil, err
	}
	return &run{env: k.env, spec: s, rec: c.Recording}, nil
}

type run struct {
	env  cells.Env
	spec Spec
	rec  *cells.Recording
}

func (r *run) Estimate() time.Duration {
	measured, emulated := r.split()
	est := time.Duration(measured.EstimateSeconds(r.env.Kernels) * float64(time.Second))
	for _, n := range r.spec.Sizes {
		for _, k := range emulated {
			est += emulate.Estimate(k, n)
		}
	}
	if r.spec.Peak {
		est += peaks.MeasureEstimate // the first such run measures the ceilings
	}
	for _, n := range r.spec.Sizes {
		est += time.Duration(webgpu.EstimateSeconds(len(r.spec.Browser), n, r.spec.Repeats) * float64(time.Second))
	}
	return est
}

// Run measures the cell: on a server without a GPU, first the cell's recording (if any) for its GPU
// kernels, labelled as recorded; then every kernel at every size, measured now; then the emulated
// kernels; last the webgpu kernels, in the learner's browser (package webgpu), within this run.
func (r *run) Run(ctx context.Context, e cells.Emitter) error {
	sink := &Results{E: e, Machine: r.env.Machine}
	if r.spec.Peak {
		ceil, err := r.env.Roofline.Get(ctx) // measured inside the run queue, once per server start
		if err != nil {
			return err
		}
		pk := ceil.Peak(r.spec.DType)
		peak := pk.GFLOPS
		e.Note("info", fmt.Sprintf("%s peak of this CPU: %.1f GFLOP/s, %s", r.spec.DType, peak, pk.Method))
		label := fmt.Sprintf("measured peak, %.0f GFLOP/s", peak)
		sink.Draw = func(rs []harness.Result) (string, error) { return chart.ThroughputPeak(rs, peak, label) }
	}
	if r.rec != nil && r.env.GPU.Unavailable() != "" {
		showRecorded(e, *r.rec, r.spec.Spec, r.env.Kernels)
	}
	measured, emulated := r.split()
	parts := Passes(measured, emulated)
	if len(r.spec.Browser) > 0 {
		parts++
	}
	sink.E = cells.Stage(e, 0, parts)
	if err := harness.Run(ctx, measured, r.env.Harness(), sink); err != nil {
		return err
	}
	if len(emulated) > 0 {
		stage := 0
		if len(measured.Kernels) > 0 {
			stage = 1
		}
		if _, err := Emulate(ctx, cells.Stage(e, stage, parts), emulated, r.spec.Sizes, r.spec.DType, datasheet.Or(r.spec.GPU), nil, nil); err != nil {
			return err
		}
	}
	return sink.Browser(ctx, cells.Stage(e, parts-1, parts), BrowserRequest(r.spec.Browser, r.spec.Spec))
}

// BrowserRequest is the webgpu request for the named ladder kernels at spec's sizes and repeats.
func BrowserRequest(names []string, spec harness.Spec) webgpu.Request {
	req := webgpu.Request{Sizes: spec.Sizes, Repeats: spec.Repeats, Transfers: spec.Transfers}
	for _, name := range names {
		k, _ := webgpu.Lookup(name)
		req.Kernels = append(req.Kernels, webgpu.TaskKernel{Name: k.Name, F16: k.F16})
	}
	return req
}

// split separates the kernels measured here from those emulated (Split).
// Exclusive is false only for a run that times nothing on this machine: every kernel it names is a
// GPU kernel this server has no GPU for (run in the virtual GPU, or noted), with no measured peak and
// no browser kernels (a learner's laptop may be this machine: its browser must not share it).
func (r *run) Exclusive() bool {
	if r.spec.Peak || len(r.spec.Browser) > 0 {
		return true
	}
	measured, _ := r.split()
	return MeasuresHere(measured.Kernels, r.env.Kernels)
}

// MeasuresHere reports whether any of names is a kernel this server times (one that is available).
func MeasuresHere(names []string, available []kernels.Kernel) bool {
	for _, name := range names {
		if k, ok := kernels.Lookup(available, name); !ok || k.Unavailable == "" {
			return true
		}
	}
	return false
}

func (r *run) split() (measured harness.Spec, emulated []string) {
	return Split(r.spec.Spec, r.env.Kernels)
}

// Passes is how many passes a run of Split's parts makes: the measured kernels, then the emulated
// ones (for cells.Stage: one progress bar over both).
func Passes(measured harness.Spec, emulated []string) int {
	if len(emulated) > 0 && len(measured.Kernels) > 0 {
		return 2
	}
	return 1
}

// Split separates the kernels of spec measured here (CPU kernels; GPU kernels where there is a GPU;
// the others, which harness.Run notes as not run) from the GPU kernels with PTX that a server
// without a GPU runs in the virtual GPU instead.
func Split(spec harness.Spec, available []kernels.Kernel) (measured harness.Spec, emulated []string) {
	measured = spec
	measured.Kernels = nil
	for _, name := range spec.Kernels {
		if k, _ := kernels.Lookup(available, name); k.Unavailable != "" && emulate.Emulatable(name) {
			emulated = append(emulated, name)
		} else {
			measured.Kernels = append(measured.Kernels, name)
		}
	}
	return measured, emulated
}

// Emulate runs the named GPU kernels in the virtual GPU at every size (in full up to emulate.MaxN,
// sampled blocks up to emulate.MaxSampledN), as rows
// of the emulated table, labelled emulated with times modelled on g; custom, if not nil, adds a
// learner's kernel first at each size. A fault or a size too large to emulate is a note, and the
// run goes on.
//
// A kernel's printf output is shown as text under its row; lines, if not nil, rewrites the virtual
// GPU's messages (a cuda cell maps "cell.cu:LINE" to the cell's own lines).
func Emulate(ctx context.Context, e cells.Emitter, names []string, sizes []int, dtype string, g datasheet.GPU,
	custom func(n int) (emulate.Request, error), lines func(string) string) ([]emulate.Result, error) {
	if lines == nil {
		lines = func(s string) string { return s }
	}
	if custom != nil {
		names = append([]string{"custom"}, names...)
	}
	if len(names) == 0 {
		return nil, nil
	}
	e.Table(emulate.Table(g.Name))
	var results []emulate.Result
	done, total := 0, len(names)*len(sizes)
	for _, n := range sizes {
		if n > emulate.MaxSampledN {
			e.Note("info", fmt.Sprintf("%s at n=%d: not emulated, over the virtual GPU's n ≤ %d", strings.Join(names, ", "), n, emulate.MaxSampledN))
			done += len(names)
			continue
		}
		for _, name := range names {
			req := emulate.Request{Kernel: name}
			var err error
			if name == "custom" {
				req, err = custom(n)
			}
			req.N, req.DType, req.GPU = n, dtype, g
			var res emulate.Result
			if err == nil {
				res, err = emulate.Run(ctx, req)
			}
			if ctx.Err() != nil {
				return results, ctx.Err()
			}
			if err != nil {
				e.Note("error", lines(emulate.Failure(name, n, err)))
			} else {
				e.Row(emulate.Row(res))
				results = append(results, res)
			}
			for _, f := range res.Notes { // uninitialised reads: the run went on
				e.Note("warning", lines(fmt.Sprintf("%s at n=%d, in the virtual GPU: %v", name, n, f)))
			}
			if out := res.Counts.Printf; out != "" {
				e.Text(fmt.Sprintf("printf output of %s at n=%d (virtual GPU)", name, n), lines(out))
			}
			done++
			e.Progress(done, total)
		}
	}
	return results, nil
}

// showRecorded emits a table of rec's results for the GPU kernels of spec that cannot run here, those
// whose (kernel, n, dtype) the spec asks for, labelled with where, when and how they were measured.
func showRecorded(e cells.Emitter, rec cells.Recording, spec harness.Spec, available []kernels.Kernel) {
	var rows []harness.Result
	for _, res := range rec.Results {
		k, _ := kernels.Lookup(available, res.Kernel)
		if k.Unavailable != "" && slices.Contains(spec.Kernels, res.Kernel) && slices.Contains(spec.Sizes, res.N) && res.DType == spec.DType {
			rows = append(rows, res)
		}
	}
	if len(rows) == 0 {
		return
	}
	e.Table(cells.Table{ID: "recorded", Caption: "Recorded GPU results: " + rec.Label(), Columns: []cells.Column{
		{Label: "kernel"}, {Label: "n"}, {Label: "dtype"}, {Label: "median", Unit: "s"}, {Label: "throughput", Unit: "GFLOP/s"}, {Label: "rel. error"}}})
	for _, res := range rows {
		e.Row(cells.Row{Table: "recorded", Values: []any{res.Kernel, res.N, res.DType, res.Seconds, res.GFLOPS, cells.ErrorValue(res.RelError)}, Bad: !res.OK})
	}
}

// Results turns the harness's events into the cell's events: a `results` table of measured points,
// declared at the first result, and a chart of all results so far (Draw; nil means GFLOP/s against
// n). It implements harness.Sink.
type Results struct {
	E    cells.Emitter
	Draw func([]harness.Result) (string, error)
	// Machine names the machine that measures, as cells.Env.Machine does ("": this server).
	Machine string
	// Rate, if set, fills the throughput column in RateUnit instead of GFLOP/s (a cuda cell's
	// problem measured in GB/s).
	Rate     func(harness.Result) float64
	RateUnit string

	results  []harness.Result
	browser  int // how many of results were measured in the browser
	declared bool
}

// Browser runs req's kernels in the run's browser (webgpu.Measure, reporting to e), adding their
// results to the chart beside the server's: the chart then names the server's series "(this server)"
// (or the measuring machine's name).
func (s *Results) Browser(ctx context.Context, e cells.Emitter, req webgpu.Request) error {
	return webgpu.Measure(ctx, e, req, func(r harness.Result) {
		s.results = append(s.results, r)
		s.browser++
		s.offer()
	})
}

// resultColumns are the columns of the `results` table.
var resultColumns = []cells.Column{
	{Label: "kernel"}, {Label: "n"}, {Label: "dtype"}, {Label: "median", Unit: "s"}, {Label: "min", Unit: "s"}, {Label: "max", Unit: "s"},
	{Label: "throughput", Unit: "GFLOP/s"}, {Label: "rel. error"}, {Label: "check"}, {Label: "host→device", Unit: "s"}, {Label: "device→host", Unit: "s"}, {Label: "copies", Unit: "GB/s"},
}

func (s *Results) Progress(done, total int) { s.E.Progress(done, total) }

// Measured are the results so far.
func (s *Results) Measured() []harness.Result { return s.results }

func (s *Results) Note(_, level, message string) { s.E.Note(level, message) }

func (s *Results) Result(r harness.Result) {
	if !s.declared {
		s.declared = true
		columns := resultColumns
		if s.Rate != nil {
			columns = slices.Clone(resultColumns)
			columns[6].Unit = s.RateUnit
		}
		s.E.Table(cells.Table{ID: "results", Caption: "Measured on " + cells.Here(s.Machine) + " just now (median of the timed repeats, after a warm-up)", Columns: columns})
	}
	s.results = append(s.results, r)
	check := "ok"
	if !r.OK {
		check = "WRONG: over tolerance"
	}
	values := []any{r.Kernel, r.N, r.DType, r.Seconds, r.MinSeconds, r.MaxSeconds, r.GFLOPS, cells.ErrorValue(r.RelError), check, "", "", ""}
	if s.Rate != nil {
		values[6] = s.Rate(r)
	}
	if r.H2DSeconds > 0 || r.D2HSeconds > 0 {
		values[9], values[10], values[11] = r.H2DSeconds, r.D2HSeconds, r.TransferGBps
	}
	s.E.Row(cells.Row{Table: "results", Values: values, Bad: !r.OK})
	s.offer()
}

// offer offers the chart of every result so far.
func (s *Results) offer() {
	draw := s.Draw
	if draw == nil {
		draw = chart.Throughput
	}
	results := slices.Clone(s.results)
	if s.browser > 0 { // the browser's series are named by webgpu.Adapter.Series
		for i := range results {
			if !strings.Contains(results[i].Kernel, " (your ") {
				results[i].Kernel += " (" + cmp.Or(s.Machine, "this server") + ")"
			}
		}
	}
	s.E.Chart(func() (string, error) { return draw(results) })
}

// Needs says the run measures on an NVIDIA GPU when it names a GPU kernel.
func (r *run) Needs() cells.Needs { return cells.Needs{GPU: NamesGPU(r.spec.Spec, r.env.Kernels)} }

// NamesGPU reports whether s names a GPU kernel of ks.
func NamesGPU(s harness.Spec, ks []kernels.Kernel) bool {
	for _, name := range s.Kernels {
		if k, ok := kernels.Lookup(ks, name); ok && k.OnGPU {
			return true
		}
	}
	return false
}
