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
//	scaling: true              # also split the FLOPs by Chinchilla's and Kaplan's scaling laws
//	rooflines: [deepseek-v3]   # also each parallelism's communication roofline for these models
//
// A transformer's training (gpt3-training, llama3-405b-training) is split on clusters by tensor,
// pipeline, context and data parallelism (package sim/parallel), each chip's memory checked against
// its datasheet's: a layout that does not fit is refused, with the arithmetic, and the smallest that
// fits is modelled instead:
//
//	layout: {tp: 8, pp: 16, cp: 1, zero: 1}  # degrees and ZeRO stage; DP is what the cluster leaves (default all 1, ZeRO 0)
//	recompute: selective       # none, selective or full (default selective)
//	sequence: 131072           # tokens per sequence, the tokens per step kept (default the workload's)
//	node: 8                    # chips per node, where TP's all-reduces run (default 8)
//	node_gbs: 450              # each chip's link inside a node, GB/s per direction (default 450)
//	overlap: true              # hide DP's communication behind the backward pass (default false)
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
	"time"

	"github.com/gpuplayground/playground/cells"
	"github.com/gpuplayground/playground/cells/shared/webgpu"
	"github.com/gpuplayground/playground/chart"
)

//go:embed render.js
var script string

// New returns the budget kind for env (whose roofline cache, if measured, gives the CPU's rate).
func New(env cells.Env) cells.Kind {
	return cells.Define(cells.Def[Spec]{Name: "budget", Script: script, Parse: Parse,
		Run: func(s Spec, _ cells.Cell) cells.Run { return &run{env: env, spec: s} }})
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
	rates, err := r.rates(ctx, e, cpu)
	if err != nil {
		return err
	}
	work := fmt.Sprintf("%s: %s FLOPs", w.Label, cells.Number(w.FLOPs, 3))
	if s.Batch > 1 {
		work = fmt.Sprintf("%s, batch of %d: %s FLOPs", w.Label, s.Batch, cells.Number(s.TotalFLOPs(), 3))
	}
	e.Note("info", fmt.Sprintf("Workload, %s (%s; %s).", work, w.How, w.Source))
	for _, rt := range rates {
		level := "published, not measured"
		if rt.Level == "measured" {
			level = "measured"
		}
		e.Note("info", fmt.Sprintf("%s, %s: %s.", rt.Name, level, rt.How))
	}
	e.Note("info", modelNote(s)+".")
	switch {
	case w.Steps > 0 || len(s.Cluster) == 0:
	case w.Name == "":
		e.Note("info", "No clusters: write steps and gradient_mb (one all-reduce of the gradient per step) to model them.")
	default:
		e.Note("info", "No clusters for this workload: it has no gradient to average. Splitting one prediction over many chips (tensor parallelism) is not modelled here; a cluster serves many predictions at once instead.")
	}
	e.Table(cells.Table{ID: "budget", Caption: fmt.Sprintf("Time for %s, modelled; the \"rate from\" column says where each rate comes from: this machine's CPU peak measured here, your browser's GEMM rate measured there (where it has WebGPU; achieved, so used as measured), or a datasheet; peaks are taken at %.0f%% utilisation", w.Label, s.Utilisation*100), Columns: []cells.Column{
		{Label: "machine"}, {Label: "rate from"}, {Label: "chips"}, {Label: "effective rate", Unit: "TFLOP/s"}, {Label: "time", Unit: "s"}, {Label: "that is"}, {Label: "dominated by"}, {Label: "communication", Unit: "%"}}})
	all := Estimates(s, rates)
	var ests []Estimate
	for _, est := range all {
		if p := est.Plan; p != nil && p.Why != "" {
			e.Note("warning", refused(est))
		}
		if est.Plan == nil || est.Plan.Fits {
			ests = append(ests, est)
		}
	}
	if w.Shape != nil && len(s.Devices) > 0 {
		e.Note("info", oneChip(s))
	}
	var bars []chart.Duration
	for _, est := range ests {
		sec := est.Seconds()
		name, bar, group := label(est), label(est), "one chip"
		switch {
		case est.Chips > 1:
			group = "cluster"
		case est.Rate.Level == "measured" && est.Rate.Achieved:
			bar, group = name+" (measured rate)", "measured"
		case est.Rate.Level == "measured":
			bar, group = name+" (measured peak)", "measured"
		}
		e.Row(cells.Row{Table: "budget", Values: []any{name, rateFrom(est.Rate, s.Utilisation), est.Chips, s.TotalFLOPs() / sec / 1e12, sec, Readable(sec), est.Dominant(), 100 * est.Communication / sec}})
		bars = append(bars, chart.Duration{Label: bar, Seconds: sec, Group: group})
	}
	e.Chart(func() (string, error) {
		return chart.Durations(chartTitle(w.Label, s.Utilisation, ests), bars)
	})
	layoutTable(e, s, ests)
	e.Note("info", Dominates(ests))
	if s.Scaling {
		scalingTable(e, s)
	}
	if len(s.Rooflines) > 0 {
		rooflineTable(e, s)
	}
	e.Progress(2, 2)
	return ctx.Err()
}

// rates are the rates a budget is priced at: measured ones first (this CPU, then the learner's GPU
// where the page measured it), then the datasheet's.
func (r *run) rates(ctx context.Context, e cells.Emitter, cpu Rate) ([]Rate, error) {
	rates := []Rate{cpu}
	if r.spec.YourGPU {
		own, ok, err := BrowserRate(ctx, e)
		if err != nil {
			return nil, err
		}
		if ok {
			rates = append(rates, own)
		}
	}
	return append(rates, Datasheet(r.spec)...), nil
}

// modelNote says how the budget's times are modelled, for s's workload and clusters.
func modelNote(s Spec) string {
	w := s.Workload
	model := fmt.Sprintf("Modelled: time = FLOPs / (chips × %.0f%% of peak)", s.Utilisation*100)
	if w.Shape != nil && w.Steps > 0 && len(s.Cluster) > 0 {
		model = fmt.Sprintf("Modelled: time on one chip = FLOPs / %.0f%% of peak", s.Utilisation*100)
	}
	if w.Bytes > 0 {
		model += fmt.Sprintf(", or the time to read %s at full memory bandwidth if that is longer", Bytes(w.Bytes))
	}
	if w.Steps > 0 && len(s.Cluster) > 0 && w.Shape != nil {
		model += "; " + parallelModel(s)
	} else if w.Steps > 0 && len(s.Cluster) > 0 {
		model += fmt.Sprintf("; a cluster splits the FLOPs evenly and adds %s ring all-reduces (one per step) of %s over %s GB/s links with %s µs latency, not overlapped with compute (so pessimistic); a model too big for one chip must also be split across chips, which this leaves out",
			cells.Number(w.Steps, 3), Bytes(w.GradientBytes), cells.Number(s.LinkGBs, 4), cells.Number(s.LatencyUS, 4))
	}
	return model
}

// rateFrom is the budget table's "rate from" for r at utilisation util: a measured peak or a datasheet
// peak modelled at util, or a measured achieved rate (the browser's GEMM) used as it is.
func rateFrom(r Rate, util float64) string {
	switch {
	case r.Achieved:
		return r.Level + " (achieved)"
	case r.Level == "measured":
		return fmt.Sprintf("measured peak, modelled at %.0f%%", util*100)
	}
	return fmt.Sprintf("%s, modelled at %.0f%%", r.Level, util*100)
}

// chartTitle says what bounds the bars of ests: arithmetic at util of peak, memory at full
// bandwidth, or both (each bar the slower of the two).
func chartTitle(label string, util float64, ests []Estimate) string {
	arith, mem := false, false
	for _, est := range ests {
		if est.Memory > est.Compute {
			mem = true
		} else {
			arith = true
		}
	}
	switch {
	case mem && !arith:
		return label + ": modelled, every row bound by memory at full bandwidth"
	case mem:
		return fmt.Sprintf("%s: modelled, arithmetic at %.0f%% of peak or memory at full bandwidth, whichever is slower", label, util*100)
	}
	return fmt.Sprintf("%s: modelled at %.0f%% of peak", label, util*100)
}
