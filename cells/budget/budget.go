// Package budget is the `budget` cell kind: how long a neural-network workload, counted in FLOPs,
// takes on this machine's CPU (its measured peak), on datasheet GPUs and TPUs at a stated utilisation,
// and on clusters of them with the ring all-reduce's overhead (package sim/collectives). Everything but the
// CPU's rate is modelled, and the table and chart say so:
//
//	workload: gpt3-training    # a preset: resnet50-epoch, gpt3-training or llm-token …
//	flops: 3.14e23             # … or your own count of FLOPs (not both)
//	utilisation: 0.4           # the fraction of peak the work reaches, 0 < u ≤ 1 (default 0.4)
//	devices: [H100 SXM, TPU v4]  # datasheet accelerators (default H100 SXM, A100 SXM, TPU v4)
//	cluster: [1024]            # chips per cluster, data-parallel (default [1024]; [] for none)
//	link_gbs: 50               # each chip's link for the all-reduce, GB/s per direction (default 50)
//	latency_us: 5              # per all-reduce message (default 5)
//	your_gpu: true             # also time your own GPU in the browser through WebGPU (default true)
//
// A typed-in workload may add `steps` and `gradient_mb` (one all-reduce of gradient_mb per step, so
// clusters are modelled) and `bytes` (memory that must be read at least once: the time on a chip is
// then at least bytes / bandwidth); `batch` multiplies the FLOPs of a workload with bytes (many
// predictions sharing one read of the weights).
//
// The rows come from a list of Rates: this CPU's (measured), the learner's own GPU's where the page
// measured it through WebGPU (`your_gpu: false` skips it; an achieved GEMM rate, so utilisation is
// not applied to it), then the datasheet chips'.
package budget

import (
	"context"
	_ "embed"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/gpuplayground/playground/cells"
	"github.com/gpuplayground/playground/cells/shared/webgpu"
	"github.com/gpuplayground/playground/chart"
	"github.com/gpuplayground/playground/harness"
	"github.com/gpuplayground/playground/harness/peaks"
	"github.com/gpuplayground/playground/sim/collectives"
	"github.com/gpuplayground/playground/sim/datasheet"
)

//go:embed render.js
var script string

// Workload is an amount of work: FLOPs, and what data-parallel training and memory add to it.
type Workload struct {
	// Name is the preset's name ("" for a typed-in workload); Label says what it is.
	Name, Label string
	FLOPs       float64
	// Bytes is memory that must be read at least once (the weights, for one token of inference): 0
	// when the workload is modelled as arithmetic only.
	Bytes float64
	// Steps is the number of optimiser steps, each ending with an all-reduce of GradientBytes; 0 for
	// a workload with no gradient to average (inference), which is not modelled on clusters.
	Steps         float64
	GradientBytes float64
	// How is the arithmetic behind FLOPs, Source where its inputs come from.
	How, Source string
}

// The presets' published inputs.
const (
	// ResNet50MACs is one forward pass of ResNet-50 on a 224×224 image: 3.8·10⁹ multiply-adds, which
	// He et al. call FLOPs (K. He et al., "Deep Residual Learning for Image Recognition", CVPR 2016,
	// Table 1 and §3.3).
	ResNet50MACs = 3.8e9
	// ImageNetImages is the ILSVRC-2012 training set (O. Russakovsky et al., "ImageNet Large Scale
	// Visual Recognition Challenge", IJCV 115, 2015, Table 2).
	ImageNetImages = 1_281_167
	// ResNet50Batch is He et al.'s mini-batch size (§3.4).
	ResNet50Batch = 256
	// ResNet50Params is ResNet-50's parameter count (torchvision, ResNet50_Weights.IMAGENET1K_V1).
	ResNet50Params = 25_557_032
	// GPT3FLOPs is GPT-3 175B's total training compute (T. Brown et al., "Language Models are Few-Shot
	// Learners", NeurIPS 2020, Table D.1: 3.14E+23 FLOPs, 3,640 petaflop/s-days).
	GPT3FLOPs = 3.14e23
	// GPT3Params, GPT3Tokens and GPT3BatchTokens are from Brown et al.: 175 billion parameters, 300
	// billion training tokens (§2.2), a batch of 3.2 million tokens (Table 2.1).
	GPT3Params      = 175e9
	GPT3Tokens      = 300e9
	GPT3BatchTokens = 3.2e6
	// TrainingFactor is a training step's FLOPs over a forward pass's: the backward pass costs about
	// twice the forward (J. Kaplan et al., "Scaling Laws for Neural Language Models", arXiv:2001.08361,
	// 2020, §2.1: C ≈ 6N per token for training against 2N for the forward pass).
	TrainingFactor = 3
)

// Presets are the workloads a cell can name.
var Presets = []Workload{
	{
		Name: "resnet50-epoch", Label: "one ResNet-50 training epoch on ImageNet",
		FLOPs: TrainingFactor * 2 * ResNet50MACs * ImageNetImages,
		Steps: math.Ceil(float64(ImageNetImages) / ResNet50Batch), GradientBytes: 4 * ResNet50Params,
		How:    "3 (forward + backward) × 2 FLOPs per multiply-add × 3.8e9 multiply-adds per image × 1,281,167 images; 5,005 steps of 256 images, each all-reducing 25.6 M FP32 gradients",
		Source: "He et al., CVPR 2016 (3.8e9 multiply-adds, batch 256); Russakovsky et al., IJCV 2015 (1,281,167 images); Kaplan et al. 2020 (training ≈ 3× forward); torchvision (25,557,032 parameters)",
	},
	{
		Name: "gpt3-training", Label: "GPT-3 175B's training run",
		FLOPs: GPT3FLOPs,
		Steps: GPT3Tokens / GPT3BatchTokens, GradientBytes: 2 * GPT3Params,
		How:    "3.14e23 FLOPs as published (6 × 175e9 parameters × 300e9 tokens = 3.15e23); 93,750 steps of 3.2 M tokens, each all-reducing 175e9 16-bit gradients",
		Source: "Brown et al., NeurIPS 2020 (Table D.1, Table 2.1, §2.2); Kaplan et al. 2020 (6N FLOPs per training token)",
	},
	{
		Name: "llm-token", Label: "one token of GPT-3 175B's inference",
		FLOPs: 2 * GPT3Params, Bytes: 2 * GPT3Params,
		How:    "2 FLOPs per parameter per token × 175e9 parameters; every one of the 175e9 16-bit weights read once: 350 GB",
		Source: "Kaplan et al. 2020 (forward pass ≈ 2N FLOPs per token); Brown et al. 2020 (175e9 parameters)",
	},
}

// Spec is a parsed `budget` cell.
type Spec struct {
	Workload Workload
	// Batch is how many independent predictions share one read of Bytes (1 unless written).
	Batch       int
	Utilisation float64
	Devices     []datasheet.Accelerator
	Cluster     []int
	LinkGBs     float64
	LatencyUS   float64
	// YourGPU asks the run's page to measure the learner's own GPU through WebGPU (default true).
	YourGPU bool
}

// TotalFLOPs is the workload's FLOPs times the batch.
func (s Spec) TotalFLOPs() float64 { return s.Workload.FLOPs * float64(s.Batch) }

type source struct {
	cells.Common `yaml:",inline"`
	Workload     cells.At[string]             `yaml:"workload"`
	FLOPs        cells.At[float64]            `yaml:"flops"`
	Bytes        cells.At[float64]            `yaml:"bytes"`
	Steps        cells.At[float64]            `yaml:"steps"`
	GradientMB   cells.At[float64]            `yaml:"gradient_mb"`
	Batch        cells.At[int]                `yaml:"batch"`
	Utilisation  cells.At[float64]            `yaml:"utilisation"`
	Devices      cells.At[[]cells.At[string]] `yaml:"devices"`
	Cluster      cells.At[[]cells.At[int]]    `yaml:"cluster"`
	LinkGBs      cells.At[float64]            `yaml:"link_gbs"`
	LatencyUS    cells.At[float64]            `yaml:"latency_us"`
	YourGPU      cells.At[bool]               `yaml:"your_gpu"`
}

// Caps on a cell: the chart has a row per device and per device and cluster size.
const (
	MaxDevices  = 8
	MaxClusters = 4
	MaxChips    = 1 << 20
)

// DefaultDevices are the accelerators a cell models when it names none.
var DefaultDevices = []string{"H100 SXM", "A100 SXM", "TPU v4"}

func presetNames() string {
	var names []string
	for _, w := range Presets {
		names = append(names, w.Name)
	}
	return strings.Join(names, ", ")
}

// Parse reads a `budget` cell. Errors are *cells.SpecError values with line numbers.
func Parse(src string) (Spec, error) {
	var y source
	if err := cells.Decode(src, &y); err != nil {
		return Spec{}, err
	}
	s := Spec{Batch: 1, Utilisation: 0.4, Cluster: []int{1024}, LinkGBs: 50, LatencyUS: 5, YourGPU: true}
	if y.YourGPU.Line > 0 {
		s.YourGPU = y.YourGPU.V
	}
	switch {
	case y.Workload.Line > 0 && y.FLOPs.Line > 0:
		return Spec{}, cells.Errorf(y.FLOPs.Line, "write either workload (a preset) or flops (your own count), not both")
	case y.Workload.Line > 0:
		found := false
		for _, w := range Presets {
			if w.Name == y.Workload.V {
				s.Workload, found = w, true
			}
		}
		if !found {
			return Spec{}, cells.Errorf(y.Workload.Line, "unknown workload %q; presets: %s (or write flops: instead)", y.Workload.V, presetNames())
		}
		for _, k := range []cells.At[float64]{y.Bytes, y.Steps, y.GradientMB} {
			if k.Line > 0 {
				return Spec{}, cells.Errorf(k.Line, "bytes, steps and gradient_mb describe a typed-in workload (flops:); a preset has its own")
			}
		}
	case y.FLOPs.Line > 0:
		if !(y.FLOPs.V >= 1 && y.FLOPs.V <= 1e30) {
			return Spec{}, cells.Errorf(y.FLOPs.Line, "flops must be between 1 and 1e30")
		}
		s.Workload = Workload{Label: fmt.Sprintf("%.3g FLOPs", y.FLOPs.V), FLOPs: y.FLOPs.V, How: "typed in", Source: "the cell"}
		if y.Bytes.Line > 0 {
			if !(y.Bytes.V > 0 && y.Bytes.V <= 1e18) {
				return Spec{}, cells.Errorf(y.Bytes.Line, "bytes must be between 0 and 1e18")
			}
			s.Workload.Bytes = y.Bytes.V
		}
		if (y.Steps.Line > 0) != (y.GradientMB.Line > 0) {
			return Spec{}, cells.Errorf(max(y.Steps.Line, y.GradientMB.Line), "steps and gradient_mb go together: one all-reduce of gradient_mb per step")
		}
		if y.Steps.Line > 0 {
			if !(y.Steps.V >= 1 && y.Steps.V <= 1e12 && y.Steps.V == math.Trunc(y.Steps.V)) {
				return Spec{}, cells.Errorf(y.Steps.Line, "steps must be a whole number from 1 to 1e12")
			}
			if !(y.GradientMB.V > 0 && y.GradientMB.V <= 1e9) {
				return Spec{}, cells.Errorf(y.GradientMB.Line, "gradient_mb must be between 0 and 1e9")
			}
			s.Workload.Steps, s.Workload.GradientBytes = y.Steps.V, y.GradientMB.V*1e6
		}
	default:
		return Spec{}, &cells.SpecError{Line: 1, Msg: "a budget cell needs workload (" + presetNames() + ") or flops"}
	}
	if y.Batch.Line > 0 {
		if s.Workload.Bytes == 0 {
			return Spec{}, cells.Errorf(y.Batch.Line, "batch shares one read of the workload's bytes among many predictions; this workload has none")
		}
		if y.Batch.V < 1 || y.Batch.V > 1<<20 {
			return Spec{}, cells.Errorf(y.Batch.Line, "batch must be from 1 to %d", 1<<20)
		}
		s.Batch = y.Batch.V
	}
	if y.Utilisation.Line > 0 {
		if s.Utilisation = y.Utilisation.V; !(s.Utilisation > 0 && s.Utilisation <= 1) {
			return Spec{}, cells.Errorf(y.Utilisation.Line, "utilisation is a fraction of peak: more than 0, at most 1")
		}
	}
	names := DefaultDevices
	lines := make([]int, len(names))
	if y.Devices.Line > 0 {
		if len(y.Devices.V) == 0 || len(y.Devices.V) > MaxDevices {
			return Spec{}, cells.Errorf(y.Devices.Line, "devices lists 1 to %d accelerators", MaxDevices)
		}
		names, lines = nil, nil
		for _, d := range y.Devices.V {
			names, lines = append(names, d.V), append(lines, d.Line)
		}
	}
	for i, n := range names {
		a, err := datasheet.LookupAccelerator(n)
		if err != nil {
			return Spec{}, cells.Errorf(lines[i], "%v", err)
		}
		for _, d := range s.Devices {
			if d.Name == a.Name {
				return Spec{}, cells.Errorf(lines[i], "%s is listed twice", a.Name)
			}
		}
		s.Devices = append(s.Devices, a)
	}
	if y.Cluster.Line > 0 {
		if len(y.Cluster.V) > MaxClusters {
			return Spec{}, cells.Errorf(y.Cluster.Line, "%d cluster sizes; a cell models at most %d", len(y.Cluster.V), MaxClusters)
		}
		s.Cluster = nil
		for _, c := range y.Cluster.V {
			if c.V < 2 || c.V > MaxChips {
				return Spec{}, cells.Errorf(c.Line, "a cluster of %d chips: use 2 to %d", c.V, MaxChips)
			}
			s.Cluster = append(s.Cluster, c.V)
		}
	}
	if y.LinkGBs.Line > 0 {
		if s.LinkGBs = y.LinkGBs.V; !(s.LinkGBs > 0 && s.LinkGBs <= 1e6) {
			return Spec{}, cells.Errorf(y.LinkGBs.Line, "link_gbs must be between 0 and 1,000,000")
		}
	}
	if y.LatencyUS.Line > 0 {
		if s.LatencyUS = y.LatencyUS.V; !(s.LatencyUS >= 0 && s.LatencyUS <= 1e6) {
			return Spec{}, cells.Errorf(y.LatencyUS.Line, "latency_us must be between 0 and 1,000,000")
		}
	}
	return s, nil
}

// Rate is something that computes: this machine's CPU (measured), a datasheet chip (modelled), and,
// once the browser measures it, the learner's own GPU through WebGPU (measured there). Each becomes
// rows of the budget.
type Rate struct {
	// Name names the machine ("this machine's CPU", "H100 SXM"); Level is how its figures are known:
	// "measured" or "datasheet".
	Name, Level string
	// FLOPs is its peak in FLOP/s and Bandwidth its memory bandwidth in bytes/s (0: not known, and the
	// memory term is left out).
	FLOPs, Bandwidth float64
	// Clusters says whether the rate is a chip that clusters are built from.
	Clusters bool
	// Achieved says FLOPs is a rate a real GEMM reached (the learner's GPU through WebGPU), not a
	// peak: the cell's utilisation is not applied to it again.
	Achieved bool
	// How says where the figures come from.
	How string
}

// Estimate is one modelled time: Chips chips at Rate, the work split evenly between them.
type Estimate struct {
	Rate  Rate
	Chips int
	// Compute is the FLOPs at utilisation × peak over all chips; Memory each chip reading its share of
	// the workload's bytes at full bandwidth; Communication the all-reduces (Steps of them) on a cluster.
	Compute, Memory, Communication float64
}

// Seconds is the modelled time: the larger of compute and memory (they overlap), plus communication
// (not overlapped: the pessimistic case).
func (e Estimate) Seconds() float64 { return math.Max(e.Compute, e.Memory) + e.Communication }

// Dominant names the largest term: "arithmetic", "memory" or "communication".
func (e Estimate) Dominant() string {
	switch {
	case e.Communication > e.Compute && e.Communication > e.Memory:
		return "communication"
	case e.Memory > e.Compute:
		return "memory"
	}
	return "arithmetic"
}

// Model is the time of s's workload on chips chips at r: total FLOPs / (chips × utilisation × peak),
// each chip's share of the bytes at its bandwidth, and, on more than one chip, steps ring all-reduces
// of the gradient over links of s.LinkGBs (collectives.RingAllReduce). A workload with no steps has no
// communication term.
func Model(s Spec, r Rate, chips int) Estimate {
	e := Estimate{Rate: r, Chips: chips}
	util := s.Utilisation
	if r.Achieved {
		util = 1
	}
	e.Compute = s.TotalFLOPs() / (float64(chips) * util * r.FLOPs)
	if r.Bandwidth > 0 && s.Workload.Bytes > 0 {
		e.Memory = s.Workload.Bytes / float64(chips) / r.Bandwidth
	}
	if chips > 1 && s.Workload.Steps > 0 {
		e.Communication = s.Workload.Steps * collectives.RingAllReduce(s.Workload.GradientBytes, chips, s.LinkGBs*1e9, s.LatencyUS*1e-6)
	}
	return e
}

// Datasheet is the rates of s's devices from their datasheets.
func Datasheet(s Spec) []Rate {
	var out []Rate
	for _, a := range s.Devices {
		out = append(out, Rate{Name: a.Name, Level: "datasheet", FLOPs: a.Dense, Bandwidth: a.DRAM, Clusters: true,
			How: fmt.Sprintf("%.4g TFLOP/s dense (%s), %.4g GB/s (%s)", a.Dense/1e12, a.Format, a.DRAM/1e9, a.Source)})
	}
	return out
}

// Estimates models s on every rate, then on every cluster size of the rates clusters are built from
// (when the workload has steps).
func Estimates(s Spec, rates []Rate) []Estimate {
	var out []Estimate
	for _, r := range rates {
		out = append(out, Model(s, r, 1))
	}
	if s.Workload.Steps > 0 {
		for _, n := range s.Cluster {
			for _, r := range rates {
				if r.Clusters {
					out = append(out, Model(s, r, n))
				}
			}
		}
	}
	return out
}

// CPURate is this machine's CPU as a Rate: the float32 peak (an FMA loop on every core) and STREAM
// bandwidth of the roofline cache when they are measured already, otherwise a quick measurement now
// (a shorter FMA-loop peak and a 48 MB triad).
func CPURate(ctx context.Context, cache *peaks.Cache) (Rate, error) {
	r := Rate{Name: "this machine's CPU", Level: "measured"}
	if cache != nil {
		if c, ok := cache.Peek(); ok {
			r.FLOPs, r.Bandwidth = c.FP32.GFLOPS*1e9, c.BandwidthGBs*1e9
			r.How = fmt.Sprintf("%.4g GFLOP/s float32 (%s; roofline measurement of %s), %.4g GB/s (STREAM triad)", c.FP32.GFLOPS, c.FP32.Method, c.Measured, c.BandwidthGBs)
			return r, nil
		}
	}
	pk, err := peaks.MeasurePeak(ctx, "float32", peaks.PeakOptions{Trials: 3, Trial: 20 * time.Millisecond})
	if err != nil {
		return Rate{}, err
	}
	const triadN = 2 << 20 // three float64 arrays of 16 MiB
	gbs, err := peaks.Triad(ctx, triadN, 3)
	if err != nil {
		return Rate{}, err
	}
	r.FLOPs, r.Bandwidth = pk.GFLOPS*1e9, gbs*1e9
	r.How = fmt.Sprintf("%.4g GFLOP/s float32 (%s, now), %.4g GB/s (STREAM triad over 16 MiB arrays, median of 3, now)", pk.GFLOPS, pk.Method, gbs)
	return r, nil
}

// BrowserKernel and BrowserN are what the page measures for the learner's GPU: the WGSL ladder's
// fastest kernel at a size a software adapter still finishes in seconds.
const (
	BrowserKernel = "webgpu-regblock"
	BrowserN      = 512
)

// BrowserRate asks the run's page to time BrowserKernel at BrowserN through WebGPU (the `browser`
// table shows the measurement) and returns its median GFLOP/s as an achieved Rate. ok is false, with
// a note already given, when there is no page, no WebGPU, or the result was wrong.
func BrowserRate(ctx context.Context, e cells.Emitter) (r Rate, ok bool, err error) {
	var got []harness.Result
	err = webgpu.Measure(ctx, e, webgpu.Request{Kernels: []webgpu.TaskKernel{{Name: BrowserKernel}}, Sizes: []int{BrowserN}, Repeats: 3},
		func(res harness.Result) { got = append(got, res) })
	if err != nil || len(got) == 0 || !got[0].OK || got[0].GFLOPS <= 0 {
		return Rate{}, false, err
	}
	res := got[0]
	return Rate{Name: res.Kernel, Level: "measured", FLOPs: res.GFLOPS * 1e9, Achieved: true,
		How: fmt.Sprintf("%.4g GFLOP/s, %s at n=%d measured in your browser just now (median of 3; an achieved GEMM rate, so the cell's utilisation is not applied to it)",
			res.GFLOPS, BrowserKernel, BrowserN)}, true, nil
}

// Kind is the budget cell kind.
type Kind struct{ env cells.Env }

// New returns the budget kind for env (whose roofline cache, if measured, gives the CPU's rate).
func New(env cells.Env) *Kind { return &Kind{env: env} }

func (*Kind) Name() string   { return "budget" }
func (*Kind) Script() string { return script }

func (k *Kind) Parse(c cells.Cell) (cells.Run, error) {
	s, err := Parse(c.Source)
	if err != nil {
		return nil, err
	}
	return &run{env: k.env, spec: s}, nil
}

type run struct {
	env  cells.Env
	spec Spec
}

// Estimate: a quick peak measurement (two loops at most, 4 × 20 ms each, plus calibration) and a
// small triad; the model is a formula per row.
func (r *run) Estimate() time.Duration {
	d := 2 * time.Second
	if r.spec.YourGPU { // the page's WebGPU measurement
		d += time.Duration(webgpu.EstimateSeconds(1, BrowserN, 3) * float64(time.Second))
	}
	return d
}

func (r *run) Run(ctx context.Context, e cells.Emitter) error {
	s := r.spec
	w := s.Workload
	e.Progress(0, 2)
	cpu, err := CPURate(ctx, r.env.Roofline)
	if err != nil {
		return err
	}
	e.Progress(1, 2)
	// The rates: measured ones first (this CPU, then the learner's GPU where the page measured it),
	// then the datasheet.
	rates := []Rate{cpu}
	if s.YourGPU {
		own, ok, err := BrowserRate(ctx, e)
		if err != nil {
			return err
		}
		if ok {
			rates = append(rates, own)
		}
	}
	rates = append(rates, Datasheet(s)...)
	work := fmt.Sprintf("%s: %.3g FLOPs", w.Label, w.FLOPs)
	if s.Batch > 1 {
		work = fmt.Sprintf("%s, batch of %d: %.3g FLOPs", w.Label, s.Batch, s.TotalFLOPs())
	}
	e.Note("info", fmt.Sprintf("Workload, %s (%s; %s).", work, w.How, w.Source))
	for _, rt := range rates {
		level := "published, not measured"
		if rt.Level == "measured" {
			level = "measured"
		}
		e.Note("info", fmt.Sprintf("%s, %s: %s.", rt.Name, level, rt.How))
	}
	model := fmt.Sprintf("Modelled: time = FLOPs / (chips × %.0f%% of peak)", s.Utilisation*100)
	if w.Bytes > 0 {
		model += fmt.Sprintf(", or the time to read %s at full memory bandwidth if that is longer", Bytes(w.Bytes))
	}
	if w.Steps > 0 && len(s.Cluster) > 0 {
		model += fmt.Sprintf("; a cluster splits the FLOPs evenly and adds %.0f ring all-reduces (one per step) of %s over %g GB/s links with %g µs latency, not overlapped with compute (so pessimistic); a model too big for one chip must also be split across chips, which this leaves out",
			w.Steps, Bytes(w.GradientBytes), s.LinkGBs, s.LatencyUS)
	}
	e.Note("info", model+".")
	switch {
	case w.Steps > 0 || len(s.Cluster) == 0:
	case w.Name == "":
		e.Note("info", "No clusters: write steps and gradient_mb (one all-reduce of the gradient per step) to model them.")
	default:
		e.Note("info", "No clusters for this workload: it has no gradient to average. Splitting one prediction over many chips (tensor parallelism) is not modelled here; a cluster serves many predictions at once instead.")
	}
	e.Table(cells.Table{ID: "budget", Caption: fmt.Sprintf("Time for %s: rates marked measured were measured on this machine (its CPU) and, where your browser has WebGPU, in your browser, everything else modelled from datasheets at %.0f%% utilisation", w.Label, s.Utilisation*100), Columns: []cells.Column{
		{Label: "machine"}, {Label: "rate from"}, {Label: "chips"}, {Label: "effective rate", Unit: "TFLOP/s"}, {Label: "time", Unit: "s"}, {Label: "that is"}, {Label: "dominated by"}, {Label: "communication", Unit: "%"}}})
	ests := Estimates(s, rates)
	var bars []chart.Duration
	for _, est := range ests {
		sec := est.Seconds()
		name, bar, group := label(est), label(est), "one chip"
		switch {
		case est.Chips > 1:
			group = "cluster"
		case est.Rate.Level == "measured":
			bar, group = name+" (measured rate)", "measured"
		}
		e.Row(cells.Row{Table: "budget", Values: []any{name, est.Rate.Level, est.Chips, s.TotalFLOPs() / sec / 1e12, sec, Readable(sec), est.Dominant(), 100 * est.Communication / sec}})
		bars = append(bars, chart.Duration{Label: bar, Seconds: sec, Group: group})
	}
	e.Chart(func() (string, error) {
		return chart.Durations(fmt.Sprintf("%s: modelled at %.0f%% of peak", w.Label, s.Utilisation*100), bars)
	})
	e.Note("info", Dominates(ests))
	e.Progress(2, 2)
	return ctx.Err()
}

// Readable writes a duration in seconds in the largest everyday unit it fills: "850 ms", "3.2 hours",
// "355 years".
func Readable(sec float64) string {
	units := []struct {
		name string
		s    float64
	}{{"millennia", 1000 * chart.Year}, {"years", chart.Year}, {"days", 86400}, {"hours", 3600}, {"minutes", 60}, {"s", 1}, {"ms", 1e-3}, {"µs", 1e-6}}
	for _, u := range units {
		if sec >= u.s {
			return fmt.Sprintf("%.3g %s", sec/u.s, u.name)
		}
	}
	return fmt.Sprintf("%.3g ns", sec*1e9)
}

// Dominates is the sentence under the chart: what the time is made of, and the spread from the
// slowest row to the fastest. A run sends it as its last note, which the kind's browser module
// (render.js) moves to under the chart.
func Dominates(ests []Estimate) string {
	if len(ests) == 0 {
		return ""
	}
	count := map[string][]string{}
	var order []string
	slow, fast := ests[0], ests[0]
	for _, e := range ests {
		d := e.Dominant()
		if _, ok := count[d]; !ok {
			order = append(order, d)
		}
		count[d] = append(count[d], label(e))
		if e.Seconds() > slow.Seconds() {
			slow = e
		}
		if e.Seconds() < fast.Seconds() {
			fast = e
		}
	}
	var parts []string
	for _, d := range order {
		who := strings.Join(count[d], ", ")
		switch {
		case len(count[d]) == len(ests):
			who = "every row"
		case len(count[d]) > 3:
			who = fmt.Sprintf("%d of the %d rows", len(count[d]), len(ests))
		}
		parts = append(parts, fmt.Sprintf("%s dominates on %s", d, who))
	}
	text := strings.ToUpper(parts[0][:1]) + parts[0][1:]
	if len(parts) > 1 {
		text += "; " + strings.Join(parts[1:], "; ")
	}
	text += fmt.Sprintf(". Slowest: %s, %s; fastest: %s, %s, %s times sooner.", label(slow), Readable(slow.Seconds()), label(fast), Readable(fast.Seconds()), Times(slow.Seconds()/fast.Seconds()))
	return text
}

func label(e Estimate) string {
	if e.Chips > 1 {
		return fmt.Sprintf("%d × %s", e.Chips, e.Rate.Name)
	}
	return e.Rate.Name
}

// Bytes writes a byte count in decimal units: "102 MB", "350 GB".
func Bytes(b float64) string {
	for _, u := range []struct {
		name string
		v    float64
	}{{"PB", 1e15}, {"TB", 1e12}, {"GB", 1e9}, {"MB", 1e6}, {"kB", 1e3}} {
		if b >= u.v {
			return fmt.Sprintf("%.3g %s", b/u.v, u.name)
		}
	}
	return fmt.Sprintf("%.3g bytes", b)
}

// Times writes a ratio for a sentence: "95", "3,780", "1.75 million".
func Times(r float64) string {
	switch {
	case r >= 1e9:
		return fmt.Sprintf("%.3g billion", r/1e9)
	case r >= 1e6:
		return fmt.Sprintf("%.3g million", r/1e6)
	case r >= 1000:
		v := fmt.Sprintf("%.3g", r)
		f, _ := strconv.ParseFloat(v, 64)
		n := int64(f)
		return fmt.Sprintf("%d,%03d", n/1000, n%1000)
	}
	return fmt.Sprintf("%.3g", r)
}
