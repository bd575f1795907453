package budget

import (
	"fmt"
	"math"

	"github.com/dustin/go-humanize"
	"github.com/gpuplayground/playground/cells"
	"github.com/gpuplayground/playground/sim/parallel"
)

// Plan is how a cluster row of a workload with a Shape is split: the layout the cell asked for,
// and the one modelled (the same when it fits the chip's memory; otherwise the smallest that fits,
// offered instead).
type Plan struct {
	Asked, Used parallel.Layout
	// Memory is the Used layout's bytes per chip; Capacity the chip's (0: not known, not checked).
	Memory   parallel.Memory
	Capacity float64
	// Offered says Asked was refused and Used is the smallest layout that fits; Fits is false when
	// no layout fits (the row is left out). Why is the refusal, with its arithmetic ("" when Asked
	// fits).
	Offered, Fits bool
	Why           string
	// Step is the Used layout's modelled optimiser step.
	Step parallel.Step
}

// Job is s's workload as a training step for package parallel.
func (s Spec) Job() parallel.Job {
	w := s.Workload
	seq := w.Seq
	if s.Parallel.Seq > 0 {
		seq = s.Parallel.Seq
	}
	return parallel.Job{Model: *w.Shape, Seq: seq, Sequences: w.Sequences * float64(w.Seq) / float64(seq), Recompute: s.Parallel.Recompute}
}

// Links are s's node and network for package parallel.
func (s Spec) Links() parallel.Links {
	return parallel.Links{NodeChips: s.Parallel.NodeChips, NodeBW: s.Parallel.NodeGBs * 1e9, NetBW: s.LinkGBs * 1e9, Latency: s.LatencyUS * 1e-6}
}

// PlanFor checks the layout s asks for on chips chips of r against r's memory and, when it does not
// fit (or chips do not divide into it), finds the smallest that does (parallel.Smallest, keeping
// the asked CP and ZeRO stage), then models a step of the layout used.
func PlanFor(s Spec, r Rate, chips int) Plan {
	j, p := s.Job(), s.Parallel
	pl := Plan{Asked: parallel.Layout{TP: p.TP, PP: p.PP, CP: p.CP, ZeRO: p.ZeRO}, Capacity: r.Memory, Fits: true}
	group := p.TP * p.PP * p.CP
	if chips%group == 0 {
		pl.Asked.DP = chips / group
		pl.Used, pl.Memory = pl.Asked, parallel.PerChip(j, pl.Asked)
	}
	switch {
	case chips%group != 0:
		pl.Why = fmt.Sprintf("%d chips do not split into groups of TP %d × PP %d × CP %d = %d", chips, p.TP, p.PP, p.CP, group)
	case r.Memory > 0 && pl.Memory.Total() > r.Memory:
		pl.Why = refusal(j, pl.Asked, pl.Memory, r)
	}
	if pl.Why != "" {
		best, ok := parallel.Smallest(j, chips, p.CP, p.ZeRO, p.NodeChips, r.Memory)
		if !ok {
			pl.Fits = false
			return pl
		}
		pl.Used, pl.Memory, pl.Offered = best, parallel.PerChip(j, best), true
	}
	util := s.Utilisation
	if r.Achieved {
		util = 1
	}
	pl.Step = parallel.Time(j, pl.Used, util*r.FLOPs, s.Links())
	if p.Overlap {
		pl.Step = parallel.Overlapped(pl.Step, j, pl.Used)
	}
	return pl
}

// refusal is the arithmetic of a layout that needs more memory per chip than r has.
func refusal(j parallel.Job, l parallel.Layout, m parallel.Memory, r Rate) string {
	params := cells.Number(j.Model.Params(), 3)
	state := fmt.Sprintf("16 bytes × %s parameters / (TP %d × PP %d)", params, l.TP, l.PP)
	switch l.ZeRO {
	case 1:
		state = fmt.Sprintf("(4 + 12 / %d) bytes × %s parameters / (TP %d × PP %d), ZeRO 1 sharding the optimiser state over DP × CP = %d", l.DP*l.CP, params, l.TP, l.PP, l.DP*l.CP)
	case 2:
		state = fmt.Sprintf("(2 + 14 / %d) bytes × %s parameters / (TP %d × PP %d), ZeRO 2 sharding the gradients and optimiser state over DP × CP = %d", l.DP*l.CP, params, l.TP, l.PP, l.DP*l.CP)
	case 3:
		state = fmt.Sprintf("16 bytes × %s parameters / (TP %d × PP %d × DP × CP %d), ZeRO 3 sharding everything", params, l.TP, l.PP, l.DP*l.CP)
	}
	return fmt.Sprintf("%s needs %s GB per chip: %s = %s of weights, gradients and Adam state, plus %s of activations (%s tokens per microbatch, %s recomputation), against the %s's %.4g GB",
		l, grouped4(m.Total()/1e9), state, Bytes(m.State()), Bytes(m.Activations), humanize.Comma(int64(j.Seq/l.CP)), j.Recompute, r.Name, r.Memory/1e9)
}

// parallelModel says how a cluster of a workload with a Shape is modelled, for the model note.
func parallelModel(s Spec) string {
	j, p := s.Job(), s.Parallel
	return fmt.Sprintf("a cluster splits %s's training as the layout asks (TP %d, PP %d, CP %d, DP what is left, ZeRO %d) if it fits each chip's memory, else as the smallest layout that does; "+
		"its memory per chip is 16 bytes per parameter (BF16 weights and gradients, FP32 master weights and Adam's two moments: Rajbhandari et al., ZeRO, SC 2020) divided by TP × PP and by the ZeRO sharding, plus the activations of %s-token microbatches with %s recomputation (Korthikanti et al., MLSys 2023, without dropout, generalised to grouped-query attention and SwiGLU; one sequence per microbatch; buffers, logits and the embedding's uneven stage left out); "+
		"its time is %s steps of %s sequences, each step the arithmetic at %.0f%% of peak (3 × the forward pass's FLOPs, 4 × with full recomputation), a pipeline bubble of PP − 1 microbatch slots, and every parallelism's communication, %s: TP's all-reduces inside a node of %d chips at %s GB/s (by default a DGX H100's NVLink; TPUs and other machines differ: set node and node_gbs), CP's all-gathers, PP's sends and DP's gradient all-reduce (a reduce-scatter and two all-gathers under ZeRO 3) at %s GB/s with %s µs latency",
		j.Model.Label, p.TP, p.PP, p.CP, p.ZeRO, cells.Number(float64(j.Seq), 3), j.Recompute, cells.Number(s.Workload.Steps, 3), cells.Number(j.Sequences, 6), s.Utilisation*100, overlapText(p.Overlap), p.NodeChips,
		cells.Number(p.NodeGBs, 4), cells.Number(s.LinkGBs, 4), cells.Number(s.LatencyUS, 4))
}

// overlapText says what of the communication the model overlaps with the arithmetic.
func overlapText(on bool) string {
	if on {
		return "DP's hidden behind the last microbatch's backward pass (and ZeRO 3's forward all-gather behind the first one's forward) as far as it fits, the rest not overlapped (overlap: true)"
	}
	return "none of it overlapped (pessimistic; overlap: true hides DP's behind the backward pass)"
}

// refused is the warning of an estimate whose asked layout did not fit, and what was done instead.
func refused(e Estimate) string {
	p := e.Plan
	if !p.Fits {
		return fmt.Sprintf("Refused: %s, %s, and no layout of %d chips with TP up to a node and PP up to the layers fits, so the row is left out.", label(e), p.Why, e.Chips)
	}
	return fmt.Sprintf("Refused: %s, %s. The smallest layout that fits: %s, %s per chip (%s of state, %s of activations); the row models that one.",
		label(e), p.Why, p.Used, Bytes(p.Memory.Total()), Bytes(p.Memory.State()), Bytes(p.Memory.Activations))
}

// oneChip is the note on the one-chip rows of a workload with a Shape: its training state alone.
func oneChip(s Spec) string {
	n := s.Workload.Shape.Params()
	return fmt.Sprintf("One chip: %s's training state alone is 16 bytes × %s parameters = %s, more than any one chip holds (%s has %s), so the one-chip rows are the arithmetic alone, a bound no single chip could run.",
		s.Workload.Shape.Label, cells.Number(n, 3), Bytes(16*n), s.Devices[0].Name, Bytes(s.Devices[0].Memory))
}

// layoutTable emits the `layout` table: for each cluster row of a workload with a Shape, the layout
// modelled, its memory per chip, and its step by term, with the modelled MFU beside the published
// one where the layout is one of Llama 3's (parallel.Llama3Layouts).
func layoutTable(e cells.Emitter, s Spec, ests []Estimate) {
	var rows []Estimate
	for _, est := range ests {
		if est.Plan != nil {
			rows = append(rows, est)
		}
	}
	if len(rows) == 0 {
		return
	}
	e.Table(cells.Table{ID: "layout", Caption: "How each cluster is split, modelled (package sim/parallel): memory per chip against the chip's, and one optimiser step by term; MFU modelled from that step, beside the MFU Llama 3's paper published for the same layout (Table 4; published, not modelled)", Columns: []cells.Column{
		{Label: "machine", Primary: true}, {Label: "layout", Primary: true}, {Label: "plan", Primary: true}, {Label: "memory per chip", Unit: "GB", Primary: true}, {Label: "state", Unit: "GB"}, {Label: "activations", Unit: "GB"}, {Label: "chip memory", Unit: "GB", Primary: true},
		{Label: "step", Unit: "s", Primary: true}, {Label: "arithmetic", Unit: "s"}, {Label: "bubble", Unit: "s"}, {Label: "TP", Unit: "s"}, {Label: "CP", Unit: "s"}, {Label: "PP", Unit: "s"}, {Label: "DP", Unit: "s"},
		{Label: "modelled MFU", Unit: "%", Primary: true}, {Label: "published MFU", Unit: "%", Primary: true}}})
	for _, est := range rows {
		p := est.Plan
		plan := "as asked"
		if p.Offered {
			plan = "offered (asked layout refused)"
		}
		published := any("")
		job := s.Job()
		// The paper's MFU stands beside the model only for its own job: its model, chip, layout,
		// sequence length and global batch (tokens per step); ZeRO and recomputation it does not state.
		if pub, ok := parallel.FindPublished(p.Used, job.Seq); ok && s.Workload.Shape.Name == "llama3-405b" && est.Rate.Name == "H100 SXM" &&
			math.Abs(job.Sequences*float64(job.Seq)-float64(pub.TokensPerBatch)) <= 0.01*float64(pub.TokensPerBatch) {
			published = 100 * pub.MFU
		}
		st := p.Step
		e.Row(cells.Row{Table: "layout", Values: []any{label(est), p.Used.String(), plan, p.Memory.Total() / 1e9, p.Memory.State() / 1e9, p.Memory.Activations / 1e9, p.Capacity / 1e9,
			st.Seconds(), st.Compute, st.Bubble, st.TP, st.CP, st.PP, st.DP, 100 * st.MFU(est.Chips, est.Rate.FLOPs), published}})
	}
	if note := flopsNote(s, rows[0].Plan.Step); note != "" {
		e.Note("info", note)
	}
}

// flopsNote says why the layout table's modelled MFU and the time table's effective rate (the
// workload's published FLOPs over the modelled time) disagree where the model's FLOPs per step,
// over the workload's steps, differ from the published total by more than 1%: "" where they agree.
func flopsNote(s Spec, st parallel.Step) string {
	model, published := st.ModelFLOPs*s.Workload.Steps, s.TotalFLOPs()
	if published <= 0 || math.Abs(model-published) <= 0.01*published {
		return ""
	}
	return fmt.Sprintf("Modelled MFU counts the model's FLOPs: 3 × its forward pass, %s per step, %s over the %s steps, against the %s the workload states. "+
		"The time table's effective rate divides the stated %s by the same modelled time, so it is %.1f%% %s than the MFU implies; the times are the steps × the modelled step either way.",
		cells.Number(st.ModelFLOPs, 3), cells.Number(model, 3), cells.Number(s.Workload.Steps, 3), cells.Number(published, 3), cells.Number(published, 3), 100*math.Abs(1-published/model), map[bool]string{true: "lower", false: "higher"}[published < model])
}
