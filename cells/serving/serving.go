// Package serving is the `serving` cell kind: a seeded simulation of serving a transformer on one
// chip (package sim/inference), requests arriving at each of several rates, for each of several
// systems (a batching and a KV-cache reservation), shown as a table and a chart of latency against
// throughput, every figure labelled modelled:
//
//	model: llama3-8b          # a sim/transformer preset
//	gpu: H100 SXM             # a datasheet accelerator (dense 16-bit peak, bandwidth, memory)
//	weights: bf16             # bytes per parameter: fp32, bf16, fp16, fp8, int8, int4
//	kv: bf16                  # bytes per KV-cache number, the same formats
//	memory_gb: 72             # for weights and KV cache (default 90 % of the chip's memory)
//	requests: 300             # per run
//	rates: [2, 8, 32]         # requests per second, Poisson arrivals (0: all at once)
//	prompt: 512               # mean prompt tokens
//	output: 256               # mean output tokens
//	lengths: exponential      # fixed, uniform or exponential
//	systems: [static max, continuous max, continuous paged]
//	block: 16                 # tokens per block, paged
//	max_len: 2048             # longest sequence; a "max" reservation is this long
//	max_batch: 256            # most requests running at once
//	draft_tokens: 4           # speculative decoding: tokens a draft model proposes per step,
//	acceptance: 0.8           # the chance each is accepted,
//	draft_cost: 0.05          # a draft step's time over a target step's
//	seed: 1
package serving

import (
	"context"
	_ "embed"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/gpuplayground/playground/cells"
	"github.com/gpuplayground/playground/chart"
	"github.com/gpuplayground/playground/sim/inference"
	"github.com/gpuplayground/playground/sim/transformer"
)

//go:embed render.js
var script string

// System is one server a cell compares: its batching ("static" or "continuous") and KV reservation
// (inference.Reservations).
type System struct{ Batching, Reservation string }

// Label is how the table and chart name s, e.g. "continuous, paged".
func (s System) Label() string { return s.Batching + ", " + s.Reservation }

// Spec is a parsed `serving` cell.
type Spec struct {
	Model       transformer.Model
	Chip        inference.Chip
	Weights, KV string // format names
	MemoryGB    float64
	Requests    int
	Rates       []float64
	Prompt      inference.Lengths
	Output      inference.Lengths
	Systems     []System
	Block       int
	MaxLen      int
	MaxBatch    int
	Speculative inference.Speculative
	Seed        uint64
}

// Caps on a cell: its runs are systems × rates simulations of Requests requests each.
const (
	maxRequests = 5000
	maxRates    = 12
	maxSystems  = 8
	maxLength   = 32768
	// minRate is the least positive rate, requests per second: 5,000 requests' arrivals at it span
	// about 2·10⁹ s, far from overflowing a float64 (a rate near 1e-308 makes them +Inf, its
	// latencies NaN).
	minRate = 1e-6
)

type source struct {
	cells.Common `yaml:",inline"`
	Model        cells.At[string]              `yaml:"model"`
	GPU          cells.At[string]              `yaml:"gpu"`
	Weights      cells.At[string]              `yaml:"weights"`
	KV           cells.At[string]              `yaml:"kv"`
	MemoryGB     cells.At[float64]             `yaml:"memory_gb"`
	Requests     cells.At[int]                 `yaml:"requests"`
	Rates        cells.At[[]cells.At[float64]] `yaml:"rates"`
	Prompt       cells.At[int]                 `yaml:"prompt"`
	Output       cells.At[int]                 `yaml:"output"`
	Lengths      cells.At[string]              `yaml:"lengths"`
	Systems      cells.At[[]cells.At[string]]  `yaml:"systems"`
	Block        cells.At[int]                 `yaml:"block"`
	MaxLen       cells.At[int]                 `yaml:"max_len"`
	MaxBatch     cells.At[int]                 `yaml:"max_batch"`
	DraftTokens  cells.At[int]                 `yaml:"draft_tokens"`
	Acceptance   cells.At[float64]             `yaml:"acceptance"`
	DraftCost    cells.At[float64]             `yaml:"draft_cost"`
	Seed         cells.At[int]                 `yaml:"seed"`
}

// Parse reads a `serving` cell. Errors are *cells.SpecError values with line numbers.
func Parse(src string) (Spec, error) {
	var y source
	if err := cells.Decode(src, &y); err != nil {
		return Spec{}, err
	}
	if y.Model.Line == 0 || y.GPU.Line == 0 || y.Rates.Line == 0 || y.Systems.Line == 0 {
		return Spec{}, &cells.SpecError{Line: 1, Msg: "a serving cell needs model, gpu, rates and systems"}
	}
	s := Spec{Weights: "bf16", KV: "bf16", Requests: 200, Prompt: inference.Lengths{Mean: 512, Dist: "exponential"},
		Output: inference.Lengths{Mean: 256, Dist: "exponential"}, Block: 16, MaxLen: 2048, MaxBatch: 256, Seed: 1}
	var err error
	if s.Model, err = transformer.Lookup(y.Model.V); err != nil {
		return Spec{}, cells.Errorf(y.Model.Line, "%v", err)
	}
	if s.Chip, err = inference.ChipNamed(y.GPU.V); err != nil {
		return Spec{}, cells.Errorf(y.GPU.Line, "%v", err)
	}
	for _, f := range []struct {
		at  cells.At[string]
		dst *string
	}{{y.Weights, &s.Weights}, {y.KV, &s.KV}} {
		if f.at.Line > 0 {
			if _, err := inference.FormatBytes(f.at.V); err != nil {
				return Spec{}, cells.Errorf(f.at.Line, "%v", err)
			}
			*f.dst = strings.ToLower(f.at.V)
		}
	}
	if s.MemoryGB = 0.9 * s.Chip.Memory / 1e9; y.MemoryGB.Line > 0 {
		if s.MemoryGB = y.MemoryGB.V; !(s.MemoryGB > 0 && s.MemoryGB <= 1e5) {
			return Spec{}, cells.Errorf(y.MemoryGB.Line, "memory_gb must be between 0 and 100,000")
		}
	}
	for _, n := range []struct {
		at       cells.At[int]
		dst      *int
		name     string
		min, max int
	}{
		{y.Requests, &s.Requests, "requests", 1, maxRequests}, {y.Prompt, &s.Prompt.Mean, "prompt", 1, maxLength},
		{y.Output, &s.Output.Mean, "output", 1, maxLength}, {y.Block, &s.Block, "block", 1, 1024},
		{y.MaxLen, &s.MaxLen, "max_len", 2, maxLength}, {y.MaxBatch, &s.MaxBatch, "max_batch", 1, 4096},
	} {
		if n.at.Line > 0 {
			if *n.dst = n.at.V; n.at.V < n.min || n.at.V > n.max {
				return Spec{}, cells.Errorf(n.at.Line, "%s must be between %d and %d", n.name, n.min, n.max)
			}
		}
	}
	if y.Seed.Line > 0 {
		if y.Seed.V < 0 {
			return Spec{}, cells.Errorf(y.Seed.Line, "seed must be 0 or more")
		}
		s.Seed = uint64(y.Seed.V)
	}
	if y.Lengths.Line > 0 {
		if !slices.Contains(inference.Dists, y.Lengths.V) {
			return Spec{}, cells.Errorf(y.Lengths.Line, "lengths is one of %s", strings.Join(inference.Dists, ", "))
		}
		s.Prompt.Dist, s.Output.Dist = y.Lengths.V, y.Lengths.V
	}
	if err := parseLists(&s, y); err != nil {
		return Spec{}, err
	}
	return s, parseDraft(&s, y)
}

// parseDraft reads a cell's speculative decoding: draft_tokens, acceptance and draft_cost, all three
// or none.
func parseDraft(s *Spec, y source) error {
	k, a, c := y.DraftTokens, y.Acceptance, y.DraftCost
	if k.Line == 0 && a.Line == 0 && c.Line == 0 {
		return nil
	}
	if k.Line == 0 || a.Line == 0 || c.Line == 0 {
		return cells.Errorf(max(k.Line, a.Line, c.Line), "speculative decoding needs draft_tokens, acceptance and draft_cost")
	}
	switch {
	case k.V < 1 || k.V > 16:
		return cells.Errorf(k.Line, "draft_tokens must be between 1 and 16")
	case !(a.V >= 0 && a.V <= 1):
		return cells.Errorf(a.Line, "acceptance is a probability, 0 to 1")
	case !(c.V >= 0 && c.V <= 1):
		return cells.Errorf(c.Line, "draft_cost is a draft step's time over a target step's, 0 to 1")
	}
	s.Speculative = inference.Speculative{K: k.V, Alpha: a.V, Cost: c.V}
	return nil
}

// parseLists reads a cell's rates and systems.
func parseLists(s *Spec, y source) error {
	if n := len(y.Rates.V); n == 0 || n > maxRates {
		return cells.Errorf(y.Rates.Line, "%d rates; a cell runs 1 to %d", n, maxRates)
	}
	for _, r := range y.Rates.V {
		if !(r.V == 0 || r.V >= minRate && r.V <= 1e4) {
			return cells.Errorf(r.Line, "a rate is 0 (all at once) or %g to 10,000 requests per second, not %g", minRate, r.V)
		}
		s.Rates = append(s.Rates, r.V)
	}
	if n := len(y.Systems.V); n == 0 || n > maxSystems {
		return cells.Errorf(y.Systems.Line, "%d systems; a cell compares 1 to %d", n, maxSystems)
	}
	for _, v := range y.Systems.V {
		b, r, ok := strings.Cut(strings.TrimSpace(v.V), " ")
		if r = strings.TrimSpace(r); !ok || (b != "static" && b != "continuous") || !slices.Contains(inference.Reservations, r) {
			return cells.Errorf(v.Line, "a system is a batching (static, continuous) and a KV reservation (%s), like \"continuous paged\", not %q", strings.Join(inference.Reservations, ", "), v.V)
		}
		s.Systems = append(s.Systems, System{b, r})
	}
	return nil
}

// New returns the serving kind (a model: it needs nothing of env).
func New(cells.Env) cells.Kind {
	return cells.Define(cells.Def[Spec]{Name: "serving", Script: script, Parse: Parse,
		Run: func(s Spec, _ cells.Cell) cells.Run { return run(s) }})
}

type run Spec

// perStep is the price of one simulated engine step: about twice the simulator's measured cost of a
// step of a batch of one on this machine (2 µs; BenchmarkStepBatchOne in sim/inference), a step of a
// batch of B costing less than B such steps. A speculative step also works out its draft: twice as
// much (BenchmarkStepSpeculative).
const perStep = 4 * time.Microsecond

// Estimate: systems × rates simulations, each priced at perStep for every step it may take
// (inference.Workload.MaxSteps: one per output token, as when memory holds one request at a time).
func (r run) Estimate() time.Duration {
	s := Spec(r)
	price := float64(perStep)
	if s.Speculative.K > 0 {
		price *= 2
	}
	var steps float64
	for _, rate := range s.Rates {
		n, err := s.Workload(rate).MaxSteps(s.MaxLen)
		if err != nil { // not a workload Parse lets through: price the longest
			n = s.Requests * s.MaxLen
		}
		steps += float64(n) * float64(len(s.Systems))
	}
	return 10*time.Millisecond + time.Duration(steps*price)
}

// Exclusive is false: the simulation times nothing (cells.Exclusive).
func (run) Exclusive() bool { return false }

// Config is the simulator's configuration of s for one system.
func (s Spec) Config(sys System) inference.Config {
	w, _ := inference.FormatBytes(s.Weights)
	kv, _ := inference.FormatBytes(s.KV)
	return inference.Config{Engine: inference.Engine{Model: s.Model, WeightBytes: w, KVBytes: kv}, Chip: s.Chip,
		Memory: s.MemoryGB * 1e9, Batching: sys.Batching, Reservation: sys.Reservation, Block: s.Block,
		MaxLen: s.MaxLen, MaxBatch: s.MaxBatch, Speculative: s.Speculative}
}

// Workload is the simulator's workload of s at rate requests per second.
func (s Spec) Workload(rate float64) inference.Workload {
	return inference.Workload{Requests: s.Requests, Rate: rate, Prompt: s.Prompt, Output: s.Output, Seed: s.Seed}
}

var columns = []cells.Column{
	{Label: "system", Key: true}, {Label: "rate", Unit: "req/s", Key: true},
	{Label: "throughput", Unit: "tokens/s", Primary: true}, {Label: "TTFT p50", Unit: "s"},
	{Label: "TPOT p50", Unit: "ms", Primary: true}, {Label: "TPOT p90", Unit: "ms"},
	{Label: "latency per token", Unit: "s/token", Primary: true}, {Label: "mean batch", Primary: true},
	{Label: "KV allocated in use", Unit: "%"}, {Label: "preemptions"},
}

// Run simulates every system at every rate: a note of the memory arithmetic, table `runs` (one row
// per system and rate) and a chart of latency per token against throughput, one line per system.
func (r run) Run(ctx context.Context, e cells.Emitter) error {
	s := Spec(r)
	e.Note("info", s.memoryNote())
	if s.Speculative.K > 0 {
		sp := s.Speculative
		e.Note("info", fmt.Sprintf("Speculative decoding, k = %d, acceptance %.2f: %.2f tokens per target step on average, (1 − α^(k+1))/(1 − α), and %.2f× fewer seconds per token with a draft costing %.2f of a step (Leviathan et al. 2023, eq. 1 and Theorem 3.8): published arithmetic, applied to the modelled steps below.",
			sp.K, sp.Alpha, inference.ExpectedTokens(sp.Alpha, sp.K), inference.Speedup(sp.Alpha, sp.K, sp.Cost), sp.Cost))
	}
	e.Table(cells.Table{ID: "runs", Caption: fmt.Sprintf("%s on one %s, %s requests per run: simulated, every time modelled (a roofline lower bound on each step, nothing measured). Latency per token is vLLM's normalised latency, each request's end-to-end time over its output tokens, averaged.", s.Model.Label, s.Chip.Name, humanize.Comma(int64(s.Requests))), Columns: columns})
	lines := make([]chart.Line, len(s.Systems))
	total := len(s.Systems) * len(s.Rates)
	for i, sys := range s.Systems {
		lines[i].Label = sys.Label()
		for j, rate := range s.Rates {
			res, err := inference.Simulate(ctx, s.Config(sys), s.Workload(rate))
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if err != nil {
				e.Note("warning", fmt.Sprintf("%s at %g requests/s: %v", sys.Label(), rate, err))
				continue
			}
			row, ok := rowOf(sys, rate, res)
			if !ok {
				e.Note("warning", fmt.Sprintf("%s at %g requests/s: the simulation gave a figure that is not a number; its row is left out", sys.Label(), rate))
				continue
			}
			e.Row(row)
			lines[i].X = append(lines[i].X, res.Throughput)
			lines[i].Y = append(lines[i].Y, res.Normalized.Mean)
			e.Progress(i*len(s.Rates)+j+1, total)
		}
	}
	title := fmt.Sprintf("%s on %s: latency per token against throughput, one point per request rate (modelled, not measured)", s.Model.Label, s.Chip.Name)
	e.Chart(func() (string, error) {
		return chart.Tradeoff(title, "throughput (output tokens/s)", "latency per token (s)", lines)
	})
	return ctx.Err()
}

// rowOf is table runs' row of sys at rate: false when a figure in it is NaN or infinite, which no
// event may carry (it cannot be sent as JSON).
func rowOf(sys System, rate float64, res inference.Result) (cells.Row, bool) {
	use := 0.0
	if res.MeanReserved > 0 {
		use = 100 * res.MeanHeld / res.MeanReserved
	}
	figures := []float64{rate, res.Throughput, res.TTFT.P50, res.TPOT.P50 * 1e3, res.TPOT.P90 * 1e3, res.Normalized.Mean, res.MeanBatch, use}
	values := []any{sys.Label()}
	for _, f := range figures {
		values = append(values, f)
	}
	return cells.Row{Table: "runs", Values: append(values, res.Preemptions)}, finite(figures)
}

// finite reports whether every x is a number, neither NaN nor infinite (an event carrying one cannot
// be sent as JSON).
func finite(xs []float64) bool {
	for _, x := range xs {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return false
		}
	}
	return true
}

// memoryNote says where the memory goes: the weights, the KV pool, a token's KV and a max-length
// reservation, with the sources of the model and the chip.
func (s Spec) memoryNote() string {
	c := s.Config(System{"continuous", "oracle"})
	per := c.Engine.KVPerToken()
	pool := c.KVMemory()
	msg := fmt.Sprintf("Modelled memory: %s GB of %s weights (%s parameters × %s) in %s GB; the KV cache gets the other %s GB, %s tokens of %s KiB (%s: 2 × %d layers × %d key/value heads × %d × %s), %s requests of max_len %s at once when each reserves its maximum.",
		cells.Number(c.Engine.WeightMemory()/1e9, 3), s.Model.Label, cells.Number(s.Model.Params(), 3), bytesEach(c.Engine.WeightBytes), cells.Number(s.MemoryGB, 3),
		cells.Number(pool/1e9, 3), humanize.Comma(int64(pool/per)), cells.Number(math.Round(per/1024), 3), s.KV, s.Model.Layers, s.Model.KVHeads, s.Model.DHead, bytesEach(c.Engine.KVBytes),
		humanize.Comma(int64(int(pool/per)/s.MaxLen)), humanize.Comma(int64(s.MaxLen)))
	if pool <= 0 {
		msg = fmt.Sprintf("The %s GB of %s weights do not fit in %s GB: nothing can run.", cells.Number(c.Engine.WeightMemory()/1e9, 3), s.Model.Label, cells.Number(s.MemoryGB, 3))
	}
	return msg + " Model: " + s.Model.Source + ". Chip: " + s.Chip.Source + "."
}

// bytesEach is a number's size in a product of sizes: "2 bytes", "1 byte", "0.5 bytes" (int4).
func bytesEach(b float64) string {
	if b == 1 {
		return "1 byte"
	}
	return cells.Number(b, 3) + " bytes"
}
