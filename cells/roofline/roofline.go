// Package roofline is the `roofline` cell kind: a matmul cell whose results are placed on this
// machine's measured roofline (package harness/peaks), with the learner's predictions beside them and,
// optionally, a datasheet GPU's roofline:
//
//	kernels: [naive, gonum]
//	sizes: [256, 1024]
//	predict: {naive: 2, gonum: 20}   # your GFLOP/s guesses, written before you run
//	gpu: H100 SXM                    # optional: that GPU's datasheet roofline too
//
// A cell that names a transformer (`model:`) instead of kernels places its prefill and decode steps,
// modelled, on the same roofline: see Model.
package roofline

import (
	"context"
	_ "embed"
	"fmt"
	"strings"
	"time"

	"github.com/gpuplayground/playground/cells"
	"github.com/gpuplayground/playground/cells/shared/kernelcell"
	"github.com/gpuplayground/playground/chart"
	"github.com/gpuplayground/playground/estimate"
	"github.com/gpuplayground/playground/gpu/nvidia"
	"github.com/gpuplayground/playground/gpumodel"
	"github.com/gpuplayground/playground/harness"
	"github.com/gpuplayground/playground/harness/peaks"
	"github.com/gpuplayground/playground/kernels"
	"github.com/gpuplayground/playground/vgpurun"
)

//go:embed render.js
var script string

// Spec is a parsed `roofline` cell.
type Spec struct {
	kernelcell.Spec
	// Predict maps kernel names to predicted GFLOP/s.
	Predict map[string]float64
	// Transformer is set (Transformer.Model.Name not empty) when the cell names a model instead of
	// kernels; the kernel half is then empty.
	Transformer Model
}

type source struct {
	kernelcell.Source `yaml:",inline"`
	Predict           cells.At[map[string]float64] `yaml:"predict"`
	Model             cells.At[string]             `yaml:"model"`
	Batch             cells.At[[]cells.At[int]]    `yaml:"batch"`
	Prompt            cells.At[int]                `yaml:"prompt"`
	Context           cells.At[int]                `yaml:"context"`
	Fused             cells.At[bool]               `yaml:"fused"`
}

// Parse reads a `roofline` cell. Errors are *cells.SpecError values with line numbers.
func Parse(src string, available []kernels.Kernel, lim harness.Limits, rates *estimate.Rates) (Spec, error) {
	var y source
	if err := cells.Decode(src, &y); err != nil {
		return Spec{}, err
	}
	if y.Model.Line > 0 {
		m, err := y.parseModel()
		return Spec{Transformer: m}, err
	}
	for _, l := range y.transformerKeys() {
		if l > 0 {
			return Spec{}, cells.Errorf(l, "batch, prompt, context and fused describe a transformer: name one with model: (%s)", modelNames())
		}
	}
	s, err := y.Validate(available, lim, rates)
	if err != nil {
		return Spec{}, err
	}
	if len(y.Predict.V) > kernelcell.MaxKernels {
		return Spec{}, cells.Errorf(y.Predict.Line, "%d predictions; a cell predicts at most %d (one per kernel)", len(y.Predict.V), kernelcell.MaxKernels)
	}
	r := Spec{Spec: s, Predict: y.Predict.V}
	for _, name := range cells.Sorted(r.Predict) {
		g := r.Predict[name]
		in := false
		for _, k := range s.Kernels {
			in = in || k == name
		}
		if !in || !(g > 0) {
			return Spec{}, cells.Errorf(y.Predict.Line, "predict %s: %g: predictions are positive GFLOP/s for kernels the cell runs", name, g)
		}
	}
	return r, nil
}

// New returns the roofline kind for env.
func New(env cells.Env) cells.Kind {
	return cells.Define(cells.Def[Spec]{Name: "roofline", Script: script,
		Parse: func(src string) (Spec, error) { return Parse(src, env.Kernels, env.Limits, env.Rates.Get()) },
		Run:   func(s Spec, _ cells.Cell) cells.Run { return &run{env: env, spec: s} }})
}

type run struct {
	env  cells.Env
	spec Spec
}

func (r *run) Estimate() time.Duration {
	if r.spec.Transformer.Model.Name != "" {
		return peaks.MeasureEstimate
	}
	measured, emulated := kernelcell.Split(r.spec.Spec.Spec, r.env.Kernels)
	est := time.Duration(measured.EstimateSeconds(r.env.Kernels, r.env.Rates.Get())*float64(time.Second)) + peaks.MeasureEstimate
	for _, n := range r.spec.Sizes {
		for _, k := range emulated {
			est += vgpurun.Estimate(r.env.Rates.Get(), k, n)
		}
	}
	return est
}

// ByteModel is how a roofline cell computes a matmul's arithmetic intensity.
const ByteModel = "intensity = 2·n³ FLOPs / (3·n² × element bytes): A and B read once, C written once (the best case)"

// Run measures the ceilings (once per server start, here inside the run queue, so nothing else is
// timing), states them, then measures the kernels and draws them under the roofs.
func (r *run) Run(ctx context.Context, e cells.Emitter) error {
	e = cells.Showing(e, r.spec.Show)
	if r.spec.Transformer.Model.Name != "" {
		return r.runModel(ctx, e)
	}
	c, err := r.env.Roofline.Get(ctx)
	if err != nil {
		return err
	}
	pk := c.Peak(r.spec.DType)
	peak, how := pk.GFLOPS, pk.Method
	cache := ""
	if !c.BeyondCache {
		cache = fmt.Sprintf(", not 4× the %d MiB cache: may include cache bandwidth", c.CacheMiB)
	}
	e.Note("info", fmt.Sprintf("This machine's roofline, measured %s: peak %s GFLOP/s %s (%s; the best float32 GEMM kernel in cache, %s at n=%d, reached %s); memory %s GB/s (STREAM triad, %d MiB arrays%s); ridge at %s FLOP/byte.",
		c.Measured, cells.Number(peak, 3), r.spec.DType, how, c.GEMMKernel, c.GEMMN, cells.Number(c.GEMMGFLOPS, 3), cells.Number(c.BandwidthGBs, 3), c.TriadMiB, cache, cells.Number(c.Ridge(r.spec.DType), 3)))
	e.Note("info", "Byte model: "+ByteModel+".")
	if g := r.spec.GPU; g != nil {
		e.Note("info", fmt.Sprintf("%s: from its datasheet (%s), not measured.", g.Name, g.Source))
	}
	if len(r.spec.Predict) > 0 {
		e.Note("info", predictionsNote(r.spec.Predict))
	}
	dev := r.env.GPU.Device()
	sink := &kernelcell.Results{E: e, Machine: r.env.Machine, Draw: func(results []harness.Result) (string, error) {
		return Chart(peak, c, r.spec, dev, results, nil)
	}}
	measured, emulated := kernelcell.Split(r.spec.Spec.Spec, r.env.Kernels)
	parts := kernelcell.Passes(measured, emulated)
	sink.E = cells.Stage(e, 0, parts)
	if err := harness.Run(ctx, measured, kernelcell.Harness(r.env), sink); err != nil {
		return err
	}
	// Without a GPU, the project's CUDA kernels run in the virtual GPU: placed at the intensity their
	// counts give (FLOPs / DRAM bytes, no caches) and the GFLOP/s modelled under the datasheet roof.
	emu, err := kernelcell.Emulate(ctx, cells.Stage(e, parts-1, parts), r.env.GPU, emulated, r.spec.Sizes, r.spec.DType, gpumodel.Or(r.spec.GPU), nil, nil)
	if len(emu) > 0 {
		results := sink.Measured()
		e.Chart(func() (string, error) { return Chart(peak, c, r.spec, dev, results, emu) })
	}
	return err
}

// Chart draws this machine's measured roofline (peak for the cell's dtype), a datasheet GPU's if the
// cell names one or kernels were emulated, and the server's own GPU's from its attributes if it has
// one, with every measured result, the learner's predictions, and the emulated kernels at the
// intensity their counts give (FLOPs / DRAM bytes, no caches) and their modelled GFLOP/s.
func Chart(peak float64, c peaks.Ceilings, spec Spec, device *nvidia.Device, results []harness.Result, emulated []vgpurun.Result) (string, error) {
	roofs := []chart.Roof{{Label: fmt.Sprintf("this machine, measured: %s GFLOP/s %s, %s GB/s", cells.Number(peak, 3), spec.DType, cells.Number(c.BandwidthGBs, 3)),
		PeakGFLOPS: peak, Bandwidth: c.BandwidthGBs}}
	if spec.GPU != nil || len(emulated) > 0 {
		g := gpumodel.Or(spec.GPU)
		roofs = append(roofs, chart.Roof{Label: g.Name + " FP32, datasheet (not measured)", PeakGFLOPS: g.FP32 / 1e9, Bandwidth: g.DRAM / 1e9})
	}
	if d := device; d != nil { // this server's own GPU, from the attributes its driver reports
		if p, ok := d.PeakFP32(); ok {
			roofs = append(roofs, chart.Roof{Label: d.Name + " FP32, from the device's attributes", PeakGFLOPS: p / 1e9, Bandwidth: d.Bandwidth() / 1e9})
		}
	}
	var points []chart.Point
	for _, r := range results {
		ai := peaks.MatmulIntensity(r.N, spec.ElemBytes())
		points = append(points, chart.Point{Label: r.Kernel, Intensity: ai, GFLOPS: r.GFLOPS})
		if g, ok := spec.Predict[r.Kernel]; ok {
			points = append(points, chart.Point{Label: r.Kernel, Intensity: ai, GFLOPS: g, Predicted: true})
		}
	}
	for _, r := range emulated {
		bytes := float64(32 * (r.Counts.LoadSectors + r.Counts.StoreSectors))
		if bytes == 0 || r.Model.Seconds == 0 {
			continue
		}
		points = append(points, chart.Point{Label: r.Kernel + " (emulated, modelled)", Intensity: float64(r.Counts.FLOPs) / bytes,
			GFLOPS: float64(r.Counts.FLOPs) / r.Model.Seconds / 1e9})
	}
	return chart.Roofline(roofs, points)
}

// Needs says the run measures on an NVIDIA GPU when it names a GPU kernel.
func (r *run) Needs() cells.Needs {
	if r.spec.Transformer.Model.Name != "" {
		return cells.Needs{}
	}
	return cells.Needs{GPU: kernelcell.NamesGPU(r.spec.Spec.Spec, r.env.Kernels)}
}

// predictionsNote lists the learner's predictions (GFLOP/s by kernel) as one sentence.
func predictionsNote(predict map[string]float64) string {
	var parts []string
	for _, k := range cells.Sorted(predict) {
		parts = append(parts, fmt.Sprintf("%s %g GFLOP/s", k, predict[k]))
	}
	return "Your predictions (hollow markers): " + strings.Join(parts, "; ") + "."
}
