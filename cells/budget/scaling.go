package budget

import (
	"fmt"

	"github.com/gpuplayground/playground/cells"
	"github.com/gpuplayground/playground/sim/parallel"
	"github.com/gpuplayground/playground/sim/transformer"
)

// Two optional tables of a budget cell, both modelled from published figures:
//
//	scaling: true                  # the workload's compute split by Chinchilla's and Kaplan's laws
//	params: 8.03e9                 # with tokens: a training run of params parameters on tokens
//	tokens: 15e12                  #   tokens (6·N·D FLOPs when flops: is not written)
//	rooflines: [llama3-70b, deepseek-v3]  # sim/transformer presets: each parallelism's roofline
//	                               #   on each device, inside a node (node_gbs) and across (link_gbs)

// MaxRooflines caps the models of a `rooflines` list.
const MaxRooflines = 4

// manyChips stands for a group large enough that (x−1)/x is 1 to the table's precision.
const manyChips = 1 << 30

// allocation adds a typed-in run's params and tokens to w (the FLOPs 6·N·D when w has none).
func (y source) allocation(w Workload) (Workload, error) {
	if y.Params.Line == 0 {
		return w, nil
	}
	if !(y.Params.V >= 1 && y.Params.V <= 1e16) {
		return Workload{}, cells.Errorf(y.Params.Line, "params must be between 1 and 1e16")
	}
	if !(y.Tokens.V >= 1 && y.Tokens.V <= 1e16) {
		return Workload{}, cells.Errorf(y.Tokens.Line, "tokens must be between 1 and 1e16")
	}
	w.Params, w.Tokens = y.Params.V, y.Tokens.V
	if w.FLOPs == 0 {
		w.FLOPs = transformer.FLOPsPerParamToken * w.Params * w.Tokens
		w.Label = fmt.Sprintf("training %s parameters on %s tokens", cells.Number(w.Params, 3), cells.Number(w.Tokens, 3))
		w.How = fmt.Sprintf("6 × %s parameters × %s tokens (C ≈ 6·N·D, Kaplan et al. 2020), typed in", cells.Number(w.Params, 3), cells.Number(w.Tokens, 3))
	}
	return w, nil
}

// rooflines are the sim/transformer presets the rooflines key names, each once.
func (y source) rooflines() ([]transformer.Model, error) {
	if y.Rooflines.Line == 0 {
		return nil, nil
	}
	if len(y.Rooflines.V) == 0 || len(y.Rooflines.V) > MaxRooflines {
		return nil, cells.Errorf(y.Rooflines.Line, "rooflines lists 1 to %d models", MaxRooflines)
	}
	var out []transformer.Model
	for _, n := range y.Rooflines.V {
		m, err := transformer.Lookup(n.V)
		if err != nil {
			return nil, cells.Errorf(n.Line, "%v", err)
		}
		for _, o := range out {
			if o.Name == m.Name {
				return nil, cells.Errorf(n.Line, "%s is listed twice", m.Name)
			}
		}
		out = append(out, m)
	}
	return out, nil
}

// ScalingRow is one split of a compute budget in the scaling table.
type ScalingRow struct {
	Who string
	transformer.Allocation
}

// ScalingRows are the splits of s's compute: the run's own (where the workload says it), Chinchilla's
// fitted law, its 20 tokens per parameter, and Kaplan's frontier.
func ScalingRows(s Spec) []ScalingRow {
	c := s.TotalFLOPs()
	var rows []ScalingRow
	if w := s.Workload; w.Params > 0 {
		rows = append(rows, ScalingRow{"this run (published or typed in)", transformer.Allocation{Params: w.Params, Tokens: w.Tokens}})
	}
	return append(rows,
		ScalingRow{"Chinchilla's fitted law (Hoffmann et al. 2022, approach 3, constants as printed)", transformer.Hoffmann2022.Optimal(c)},
		ScalingRow{"Chinchilla's 20 tokens per parameter (approaches 1 and 2; the Chinchilla model)", transformer.Chinchilla20(c)},
		ScalingRow{"Kaplan et al. 2020's compute-efficient frontier", transformer.Kaplan(c)})
}

// scalingTable emits the `scaling` table of s.
func scalingTable(e cells.Emitter, s Spec) {
	e.Table(cells.Table{ID: "scaling", Caption: fmt.Sprintf("Splitting %s FLOPs between parameters and tokens (C ≈ 6·N·D): published laws with their published constants, modelled; loss from Chinchilla's fitted L(N, D) = 1.69 + 406.4/N^0.34 + 410.7/D^0.28, nats per token of its training text", cells.Number(s.TotalFLOPs(), 3)),
		Columns: []cells.Column{{Label: "split", Primary: true}, {Label: "parameters", Unit: "B", Primary: true}, {Label: "tokens", Unit: "T", Primary: true}, {Label: "tokens per parameter", Primary: true}, {Label: "fitted loss"}}})
	for _, r := range ScalingRows(s) {
		e.Row(cells.Row{Table: "scaling", Values: []any{r.Who, r.Params / 1e9, r.Tokens / 1e12, r.TokensPerParam(), transformer.Hoffmann2022.Loss(r.Params, r.Tokens)}})
	}
	e.Note("info", "Scaling laws: the fitted law's constants, as printed and rounded, put the optimum at several times Chinchilla's own 20 tokens per parameter (Besiroglu et al. 2024 found them inconsistent with the paper's other two approaches); Kaplan's frontier trains larger models on fewer tokens. A run that will serve many tokens afterwards may train a smaller model on more tokens than any of them: the fitted loss says what that costs.")
}

// RooflineRow is one model's communication rooflines on one device and link.
type RooflineRow struct {
	Model, Machine, Link string
	// Ridge is the chip's peak FLOP/s over the link's bytes/s (parallel.Ridge); DP the fewest tokens
	// per chip for data parallelism or FSDP (parallel.MinTokensDP, many chips); TP the most
	// tensor-parallel ways (parallel.MaxTensorWays); EP the narrowest expert for expert parallelism
	// (parallel.MinExpertDFF over NodeChips chips; 0 for a dense model) beside the model's ExpertDFF.
	Ridge, DP, TP, EP float64
	ExpertDFF         int
}

// RooflineRows are s's models' rooflines on each device, inside a node (each chip's node_gbs) and
// across nodes: DP and FSDP reduce hierarchically there, each chip carrying 1/node of the data over
// its own link_gbs, so they see node × link_gbs; TP and EP see the chip's own link_gbs. DP groups
// are taken as many chips ((x−1)/x → 1); EP spans one node's chips inside it, many chips across.
func RooflineRows(s Spec) []RooflineRow {
	node, net := s.Parallel.NodeGBs*1e9, s.LinkGBs*1e9
	chips := max(s.Parallel.NodeChips, 2)
	var rows []RooflineRow
	for _, m := range s.Rooflines {
		for _, a := range s.Devices {
			for _, l := range []struct {
				name    string
				bw, dpW float64
				epChips int
			}{
				{fmt.Sprintf("in a node (%g GB/s per chip)", s.Parallel.NodeGBs), node, node, chips},
				{fmt.Sprintf("across nodes (%g GB/s per chip; %d × that for DP)", s.LinkGBs, chips), net, float64(chips) * net, manyChips},
			} {
				r := parallel.Ridge(a.Dense, l.bw)
				rows = append(rows, RooflineRow{Model: m.Label, Machine: a.Name, Link: l.name, Ridge: r,
					DP: parallel.MinTokensDP(m, manyChips, parallel.Ridge(a.Dense, l.dpW)), TP: parallel.MaxTensorWays(m, r),
					EP: parallel.MinExpertDFF(m, l.epChips, r), ExpertDFF: m.MoE.DFF})
			}
		}
	}
	return rows
}

// rooflineTable emits the `rooflines` table of s.
func rooflineTable(e cells.Emitter, s Spec) {
	e.Table(cells.Table{ID: "rooflines", Caption: "When communication bounds each parallelism, modelled (the JAX scaling book's rooflines, package sim/parallel): the chip's ridge C/W (peak FLOP/s over the link's bytes/s per chip), the fewest tokens per chip per step for data parallelism or FSDP, the most tensor-parallel ways of the MLP, and the narrowest expert for expert parallelism over one node's chips (in a node) or many (across); communication overlapped with compute, datasheet peaks",
		Columns: []cells.Column{{Label: "model", Primary: true}, {Label: "machine", Primary: true}, {Label: "link", Primary: true}, {Label: "ridge", Unit: "FLOP/B", Primary: true}, {Label: "DP/FSDP min", Unit: "tokens per chip", Primary: true}, {Label: "TP max", Unit: "ways", Primary: true}, {Label: "EP min expert width"}, {Label: "expert width"}}})
	for _, r := range RooflineRows(s) {
		ep, width := any("dense"), any("dense")
		if r.ExpertDFF > 0 {
			ep, width = r.EP, r.ExpertDFF
		}
		e.Row(cells.Row{Table: "rooflines", Values: []any{r.Model, r.Machine, r.Link, r.Ridge, r.DP, r.TP, ep, width}})
	}
	if w := s.Workload; w.Shape != nil {
		for _, n := range s.Cluster {
			e.Note("info", fmt.Sprintf("Rooflines: %s has %s tokens per step; on %d chips that is %.0f tokens per chip, against the DP/FSDP minimum above (tensor and pipeline parallelism divide the data-parallel group, and so the gradient each chip reduces, by TP × PP).",
				w.Label, cells.Number(w.Sequences*float64(w.Seq), 3), n, w.Sequences*float64(w.Seq)/float64(n)))
		}
	}
}
