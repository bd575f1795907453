package kernelcell

import (
	"cmp"
	"context"
	"slices"
	"strings"

	"github.com/gpuplayground/playground/cells"
	"github.com/gpuplayground/playground/cells/shared/webgpu"
	"github.com/gpuplayground/playground/chart"
	"github.com/gpuplayground/playground/harness"
	"github.com/gpuplayground/playground/kernels"
	"github.com/gpuplayground/playground/vgpurun"
)

// BrowserRequest is the webgpu request for the named ladder kernels at spec's sizes and repeats.
func BrowserRequest(names []string, spec harness.Spec) webgpu.Request {
	req := webgpu.Request{Sizes: spec.Sizes, Repeats: spec.Repeats, Transfers: spec.Transfers}
	for _, name := range names {
		k, _ := webgpu.Lookup(name)
		req.Kernels = append(req.Kernels, webgpu.TaskKernel{Name: k.Name, F16: k.F16})
	}
	return req
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
		if k, _ := kernels.Lookup(available, name); k.Unavailable != "" && vgpurun.Emulatable(name) {
			emulated = append(emulated, name)
		} else {
			measured.Kernels = append(measured.Kernels, name)
		}
	}
	return measured, emulated
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

// Tables are the tables a kernel cell can declare (results, emulated, its problem's emulated with
// another rate), for checking a `show:` key (cells.ParseShow).
func Tables() []cells.Table {
	return []cells.Table{{ID: "results", Columns: resultColumns}, EmulatedTable("")}
}

// resultColumns are the columns of the `results` table; the spread of the repeats (min, max) folds
// behind "more columns".
var resultColumns = []cells.Column{
	{Label: "kernel", Primary: true, Key: true}, {Label: "n", Primary: true, Key: true}, {Label: "dtype", Primary: true, Key: true}, {Label: "median", Unit: "s", Primary: true}, {Label: "min", Unit: "s"}, {Label: "max", Unit: "s"},
	{Label: "throughput", Unit: "GFLOP/s", Primary: true}, {Label: "rel. error", Primary: true}, {Label: "check", Primary: true},
	{Label: "host→device", Unit: "s", Primary: true}, {Label: "device→host", Unit: "s", Primary: true}, {Label: "copies", Unit: "GB/s", Primary: true},
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
		draw = func(rs []harness.Result) (string, error) { return chart.Throughput(RatePoints(rs, nil)) }
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

// RatePoints are results as a rate chart's points (chart.RatePoint): each result's rate(r), or its
// GFLOP/s where rate is nil.
func RatePoints(results []harness.Result, rate func(harness.Result) float64) []chart.RatePoint {
	points := make([]chart.RatePoint, len(results))
	for i, r := range results {
		points[i] = chart.RatePoint{Kernel: r.Kernel, N: r.N, DType: r.DType, Rate: r.GFLOPS}
		if rate != nil {
			points[i].Rate = rate(r)
		}
	}
	return points
}

// NamesGPU reports whether s names a GPU kernel of ks.
func NamesGPU(s harness.Spec, ks []kernels.Kernel) bool {
	for _, name := range s.Kernels {
		if k, ok := kernels.Lookup(ks, name); ok && k.OnGPU {
			return true
		}
	}
	return false
}
