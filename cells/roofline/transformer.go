package roofline

import (
	"context"
	"fmt"
	"math"
	"strings"

	"github.com/dustin/go-humanize"
	"github.com/gpuplayground/playground/cells"
	"github.com/gpuplayground/playground/chart"
	"github.com/gpuplayground/playground/gpumodel"
	"github.com/gpuplayground/playground/measure"
	"github.com/gpuplayground/playground/sim/transformer"
)

// A roofline cell that names a model instead of kernels places a transformer's prefill and decode
// steps on this machine's measured roofline and a datasheet accelerator's (package sim/transformer
// counts the FLOPs and bytes from the model's published shape; nothing of the transformer runs):
//
//	model: llama3-8b          # gpt3-175b, llama3-8b, llama3-70b or llama3-405b
//	batch: [1, 16, 256]       # sequences decoded together (default [1, 8, 64, 512])
//	prompt: 2048              # tokens of each prompt, prefilled at once (default 2048)
//	context: 4096             # tokens in each sequence's KV cache while decoding (default 4096)
//	gpu: H100 SXM             # a datasheet accelerator (default H100 SXM)
//	fused: false              # attention unfused: its scores go through memory (default true)

// Model is the transformer half of a roofline Spec (Model.Name empty: a kernel cell).
type Model struct {
	Model   transformer.Model
	Batch   []int
	Prompt  int
	Context int
	GPU     gpumodel.Accelerator
	Fused   bool
}

// Limits on a transformer cell.
const (
	maxBatch   = 1 << 16
	maxContext = 1 << 20
	maxBatches = 8
)

// ElemBytes is the size of a weight, an activation and a KV-cache entry in the transformer model:
// 16-bit (BF16), as the presets' models are trained and served.
const ElemBytes = 2

// transformerKeys are the keys only a transformer cell takes.
func (y source) transformerKeys() []int {
	return []int{y.Batch.Line, y.Prompt.Line, y.Context.Line, y.Fused.Line}
}

// parseModel validates a cell that names a model: no kernel keys, a preset, batches, prompt and
// context in range, and an accelerator from the gpumodel.
func (y source) parseModel() (Model, error) {
	for _, l := range []int{y.Kernels.Line, y.Sizes.Line, y.DType.Line, y.Repeats.Line, y.Threads.Line, y.Predict.Line} {
		if l > 0 {
			return Model{}, cells.Errorf(l, "a cell with model: places a transformer on the roofline; kernels, sizes, dtype, repeats, threads and predict belong to a cell that times kernels")
		}
	}
	if y.Transfers || y.Peak {
		return Model{}, cells.Errorf(y.Model.Line, "transfers and peak belong to a cell that times kernels, not to one with model:")
	}
	m, err := transformer.Lookup(y.Model.V)
	if err != nil {
		return Model{}, cells.Errorf(y.Model.Line, "%v", err)
	}
	s := Model{Model: m, Batch: []int{1, 8, 64, 512}, Prompt: 2048, Context: 4096, Fused: true}
	if y.Fused.Line > 0 {
		s.Fused = y.Fused.V
	}
	if y.Batch.Line > 0 {
		if len(y.Batch.V) == 0 || len(y.Batch.V) > maxBatches {
			return Model{}, cells.Errorf(y.Batch.Line, "batch lists 1 to %d batch sizes", maxBatches)
		}
		s.Batch = nil
		for _, b := range y.Batch.V {
			if b.V < 1 || b.V > maxBatch {
				return Model{}, cells.Errorf(b.Line, "a batch of %d: use 1 to %d sequences", b.V, maxBatch)
			}
			s.Batch = append(s.Batch, b.V)
		}
	}
	for _, k := range []struct {
		at  cells.At[int]
		dst *int
		key string
	}{{y.Prompt, &s.Prompt, "prompt"}, {y.Context, &s.Context, "context"}} {
		if k.at.Line == 0 {
			continue
		}
		if k.at.V < 1 || k.at.V > maxContext {
			return Model{}, cells.Errorf(k.at.Line, "%s is %d tokens; use 1 to %d", k.key, k.at.V, maxContext)
		}
		*k.dst = k.at.V
	}
	gpu := "H100 SXM"
	if y.GPU.Line > 0 {
		gpu = y.GPU.V
	}
	if s.GPU, err = gpumodel.LookupAccelerator(gpu); err != nil {
		return Model{}, cells.Errorf(max(y.GPU.Line, y.Model.Line), "%v", err)
	}
	return s, nil
}

// Place is one step of a transformer modelled on one roof: the larger of its FLOPs at the roof's
// peak and its bytes at the roof's bandwidth.
type Place struct {
	Seconds float64
	Bound   string // "compute" or "memory"
}

// OnRoof models cost on a roof of peak FLOP/s and bandwidth bytes/s.
func OnRoof(c transformer.Cost, peak, bandwidth float64) Place {
	compute, memory := c.FLOPs/peak, c.Bytes()/bandwidth
	if compute >= memory {
		return Place{compute, "compute"}
	}
	return Place{memory, "memory"}
}

// Steps are the cell's prefill and decode steps, each with its label: a prefill of the prompt at
// batch 1, then a decode step per batch size.
func (s Model) Steps() ([]string, []transformer.Step) {
	labels := []string{"prefill"}
	steps := []transformer.Step{{Batch: 1, Tokens: s.Prompt, Context: s.Prompt}}
	for _, b := range s.Batch {
		labels = append(labels, "decode")
		steps = append(steps, transformer.Step{Batch: b, Tokens: 1, Context: s.Context})
	}
	return labels, steps
}

// runModel measures the ceilings (or takes the kept ones), then tables the layer's GEMMs and places
// every step on both roofs.
func (r *run) runModel(ctx context.Context, e cells.Emitter) error {
	c, err := r.env.Roofline.Get(ctx)
	if err != nil {
		return err
	}
	s := r.spec.Transformer
	m := s.Model
	e.Note("info", fmt.Sprintf("%s: %d layers, d_model %s, %d query heads and %d key/value heads of %d, d_ff %s, vocabulary %s (%s). From this shape: %s parameters (published %s), %s FLOPs per token forward at a %s-token prompt, %s of KV cache per token.",
		m.Label, m.Layers, humanize.Comma(int64(m.DModel)), m.Heads, m.KVHeads, m.DHead, humanize.Comma(int64(m.DFF)), humanize.Comma(int64(m.Vocab)), m.Source, cells.Number(m.Params(), 4), cells.Number(m.Published, 4), cells.Number(m.ForwardPerToken(s.Prompt), 4), humanize.Comma(int64(s.Prompt)), bytesText(m.KVBytesPerToken(ElemBytes))))
	e.Note("info", fmt.Sprintf("This machine, measured %s: %s GFLOP/s float32 (%s), %s GB/s (STREAM triad). %s, datasheet (not measured): %s TFLOP/s %s dense (%s), %s GB/s.",
		c.Measured, cells.Number(c.FP32.GFLOPS, 3), c.FP32.Method, cells.Number(c.BandwidthGBs, 3), s.GPU.Name, cells.Number(s.GPU.Dense/1e12, 4), s.GPU.Format, s.GPU.Source, cells.Number(s.GPU.DRAM/1e9, 4)))
	attention := "fused (FlashAttention): the attention scores stay on chip"
	if !s.Fused {
		attention = "unfused: QKᵀ writes the scores, the softmax reads them and writes the probabilities, PV reads them"
	}
	e.Note("info", "Modelled, not measured: every weight, activation and KV-cache entry is 16-bit (BF16) and crosses memory once per step, attention is "+attention+"; the time is the larger of FLOPs at the roof's peak and bytes at its bandwidth. This machine's roof is its float32 peak: a CPU has no BF16 matrix unit to speak of, so its row is a lower bound on the time.")
	r.layerTable(e)
	e.Table(cells.Table{ID: "steps", Caption: fmt.Sprintf("%s's prefill and decode steps, modelled on this machine's measured roofline and on the %s datasheet's", m.Label, s.GPU.Name), Columns: []cells.Column{
		{Label: "step", Primary: true}, {Label: "batch", Primary: true}, {Label: "new tokens"}, {Label: "context"}, {Label: "FLOPs"},
		{Label: "weights", Unit: "B"}, {Label: "KV cache", Unit: "B"}, {Label: "activations and scores", Unit: "B"},
		{Label: "intensity", Unit: "FLOP/B", Primary: true}, {Label: "this machine", Unit: "s"}, {Label: "bound here"},
		{Label: s.GPU.Name, Unit: "s", Primary: true}, {Label: "bound on " + s.GPU.Name, Primary: true}, {Label: "tokens/s on " + s.GPU.Name, Primary: true}}})
	var points []chart.Point
	labels, steps := s.Steps()
	for i, st := range steps {
		cost := m.Cost(st, ElemBytes, s.Fused)
		here := OnRoof(cost, c.FP32.GFLOPS*1e9, c.BandwidthGBs*1e9)
		there := OnRoof(cost, s.GPU.Dense, s.GPU.DRAM)
		e.Row(cells.Row{Table: "steps", Values: []any{labels[i], st.Batch, st.Tokens, st.Context, cost.FLOPs,
			cost.Weights, cost.KVRead + cost.KVWrite, cost.Activations + cost.Scores, cost.Intensity(),
			here.Seconds, here.Bound, there.Seconds, there.Bound, float64(st.Batch*st.Tokens) / there.Seconds}})
		name := fmt.Sprintf("%s, batch %d", labels[i], st.Batch)
		// A colour per step, a marker per roof: the legend keys the steps' colours and the roofs'
		// markers apart, not every pair.
		onGPU, onCPU := chart.Styled(i, 0), chart.Styled(i, 1)
		points = append(points,
			chart.Point{Label: name, Key: s.GPU.Name + ", modelled", Intensity: cost.Intensity(), GFLOPS: cost.FLOPs / there.Seconds / 1e9, Style: &onGPU},
			chart.Point{Label: name, Key: "this machine, modelled", Intensity: cost.Intensity(), GFLOPS: cost.FLOPs / here.Seconds / 1e9, Style: &onCPU})
	}
	e.Chart(func() (string, error) { return ModelChart(c, s, points) })
	e.Note("info", ridgeNote(s, c))
	return ctx.Err()
}

// layerTable is one layer's GEMMs at the prefill, with their shapes and share of the layer's FLOPs.
func (r *run) layerTable(e cells.Emitter) {
	s := r.spec.Transformer
	st := transformer.Step{Batch: 1, Tokens: s.Prompt, Context: s.Prompt}
	gemms := s.Model.Layer(st)
	total := 0.0
	for _, g := range gemms {
		total += g.FLOPs()
	}
	e.Table(cells.Table{ID: "layer", Caption: fmt.Sprintf("The GEMMs of one of %s's %d layers for a %s-token prompt: (m×k)·(k×n), count of them, FLOPs = 2·m·k·n·count (attention's halved by the causal mask); computed from the shape", s.Model.Label, s.Model.Layers, humanize.Comma(int64(s.Prompt))), Columns: []cells.Column{
		{Label: "GEMM"}, {Label: "m"}, {Label: "k"}, {Label: "n"}, {Label: "count"}, {Label: "FLOPs"}, {Label: "share", Unit: "%"}}})
	for _, g := range gemms {
		e.Row(cells.Row{Table: "layer", Values: []any{g.Name, g.M, g.K, g.N, g.Count, g.FLOPs(), 100 * g.FLOPs() / total}})
	}
}

// ridgeNote says where each roof's ridge is: the batch a decode step needs to stop being memory-bound.
func ridgeNote(s Model, c measure.Ceilings) string {
	gpuRidge := s.GPU.Dense / s.GPU.DRAM
	return fmt.Sprintf("Ridge points (peak ÷ bandwidth): %s %s FLOP/byte, this machine %s FLOP/byte. A decode step does about 2 FLOPs per weight per sequence and reads each 2-byte weight once, so its intensity is about its batch until the KV cache's reads catch up: it is memory-bound below a batch of roughly %s on the %s.",
		s.GPU.Name, cells.Number(gpuRidge, 3), cells.Number(c.FP32.GFLOPS/c.BandwidthGBs, 3), cells.Number(math.Ceil(gpuRidge), 3), s.GPU.Name)
}

// ModelChart draws this machine's measured roof, the accelerator's datasheet roof, and the steps.
func ModelChart(c measure.Ceilings, s Model, points []chart.Point) (string, error) {
	roofs := []chart.Roof{
		{Label: fmt.Sprintf("this machine, measured: %s GFLOP/s float32, %s GB/s", cells.Number(c.FP32.GFLOPS, 3), cells.Number(c.BandwidthGBs, 3)), PeakGFLOPS: c.FP32.GFLOPS, Bandwidth: c.BandwidthGBs},
		{Label: fmt.Sprintf("%s %s dense, datasheet", s.GPU.Name, strings.SplitN(s.GPU.Format, ",", 2)[0]), PeakGFLOPS: s.GPU.Dense / 1e9, Bandwidth: s.GPU.DRAM / 1e9},
	}
	return chart.Roofline(roofs, points)
}

func bytesText(b float64) string {
	switch {
	case b >= 1<<30:
		return cells.Number(b/(1<<30), 3) + " GiB"
	case b >= 1<<20:
		return cells.Number(b/(1<<20), 3) + " MiB"
	case b >= 1<<10:
		return cells.Number(b/(1<<10), 3) + " KiB"
	}
	return fmt.Sprintf("%.0f bytes", b)
}

func modelNames() string {
	var names []string
	for _, m := range transformer.Presets {
		names = append(names, m.Name)
	}
	return strings.Join(names, ", ")
}
