// Package allreduce is the `allreduce` cell kind: a cost model of the gradient all-reduce of
// data-parallel training (sim/collectives' ring α–β model), shown as a table and a chart of time against
// GPU count, labelled modelled:
//
//	gradient_mb: 1400                      # bytes to all-reduce per step, in MB (350M fp32 parameters)
//	gpus: [2, 4, 8, 16, 32, 64]
//	links: {NVLink 4: 450, PCIe 4 x16: 32} # GB/s per direction per GPU, in the order to show
//	latency_us: 5                          # per message
//	op: all-gather                         # the collective (default all-reduce)
//
// `op: tree all-reduce` models NCCL's double binary tree instead of the ring: its latency grows with
// log₂ of the GPUs, the ring's with the GPUs (sim/collectives.TreeAllReduce).
//
// The other collectives are those of the other parallelisms: ZeRO-3 and FSDP gather their sharded
// weights with an all-gather and reduce their gradients with a reduce-scatter, context parallelism
// all-gathers keys and values, and tensor parallelism with sequence parallelism does an all-gather
// and a reduce-scatter where it would all-reduce (package sim/parallel). gradient_mb is then the
// bytes each GPU ends with (all-gather) or starts with (reduce-scatter).
package allreduce

import (
	"context"
	_ "embed"
	"slices"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/gpuplayground/playground/cells"
	"github.com/gpuplayground/playground/chart"
	"github.com/gpuplayground/playground/sim/collectives"
	"gopkg.in/yaml.v3"
)

//go:embed render.js
var script string

// Spec is a parsed `allreduce` cell.
type Spec struct {
	// Op is the collective: "all-reduce" (a ring), "tree all-reduce", "all-gather" or
	// "reduce-scatter".
	Op         string
	GradientMB float64
	GPUs       []int
	Links      []Link
	LatencyUS  float64
}

// Link is a named interconnect bandwidth in GB/s per direction.
type Link struct {
	Name string
	GBs  float64
}

type source struct {
	cells.Common `yaml:",inline"`
	GradientMB   cells.At[float64]         `yaml:"gradient_mb"`
	GPUs         cells.At[[]cells.At[int]] `yaml:"gpus"`
	Links        cells.At[yaml.Node]       `yaml:"links"`
	LatencyUS    cells.At[float64]         `yaml:"latency_us"`
	Op           cells.At[string]          `yaml:"op"`
}

// Ops are the collectives a cell can model.
var Ops = []string{"all-reduce", "tree all-reduce", "all-gather", "reduce-scatter"}

// Caps on a cell's lists: the table has GPU counts × links rows.
const (
	maxGPUCounts = 32
	maxLinks     = 8
)

// Parse reads an `allreduce` cell. Errors are *cells.SpecError values with line numbers.
func Parse(src string) (Spec, error) {
	var y source
	if err := cells.Decode(src, &y); err != nil {
		return Spec{}, err
	}
	s := Spec{Op: "all-reduce", GradientMB: y.GradientMB.V, LatencyUS: 5}
	if y.Op.Line > 0 {
		if !slices.Contains(Ops, y.Op.V) {
			return Spec{}, cells.Errorf(y.Op.Line, "op is all-reduce, tree all-reduce, all-gather or reduce-scatter")
		}
		s.Op = y.Op.V
	}
	if y.GradientMB.Line > 0 && !(s.GradientMB >= 1e-6 && s.GradientMB <= 1e7) {
		return Spec{}, cells.Errorf(y.GradientMB.Line, "gradient_mb must be between 0.000001 (one byte) and 10,000,000")
	}
	if y.LatencyUS.Line > 0 {
		if s.LatencyUS = y.LatencyUS.V; !(s.LatencyUS >= 0 && s.LatencyUS <= 1e6) {
			return Spec{}, cells.Errorf(y.LatencyUS.Line, "latency_us must be between 0 and 1,000,000")
		}
	}
	if len(y.GPUs.V) > maxGPUCounts {
		return Spec{}, cells.Errorf(y.GPUs.Line, "%d GPU counts; a cell models at most %d", len(y.GPUs.V), maxGPUCounts)
	}
	for _, p := range y.GPUs.V {
		if p.V < 1 || p.V > 65536 {
			return Spec{}, cells.Errorf(p.Line, "%d GPUs: use 1 to 65536", p.V)
		}
		s.GPUs = append(s.GPUs, p.V)
	}
	if y.Links.Line > 0 {
		links := y.Links.V
		if links.Kind != yaml.MappingNode || len(links.Content) == 0 {
			return Spec{}, cells.Errorf(y.Links.Line, "links is a map of name: GB/s, like {NVLink 4: 450}")
		}
		if len(links.Content)/2 > maxLinks {
			return Spec{}, cells.Errorf(y.Links.Line, "%d links; a cell models at most %d", len(links.Content)/2, maxLinks)
		}
		for j := 0; j+1 < len(links.Content); j += 2 {
			var gbs cells.At[float64]
			if err := links.Content[j+1].Decode(&gbs); err != nil {
				return Spec{}, cells.Errorf(links.Content[j+1].Line, "link %q: expected GB/s, a number", links.Content[j].Value)
			}
			if !(gbs.V >= 1e-3 && gbs.V <= 1e6) {
				return Spec{}, cells.Errorf(gbs.Line, "link %q: GB/s must be between 0.001 and 1,000,000", links.Content[j].Value)
			}
			s.Links = append(s.Links, Link{links.Content[j].Value, gbs.V})
		}
	}
	if s.GradientMB == 0 || len(s.GPUs) == 0 || len(s.Links) == 0 {
		return Spec{}, &cells.SpecError{Line: 1, Msg: "an allreduce cell needs gradient_mb, gpus and links"}
	}
	return s, nil
}

// Point is one modelled all-reduce (never measured).
type Point struct {
	Link    string
	GPUs    int
	Seconds float64
	// BusGBs is NCCL's bus bandwidth for that time, GB/s.
	BusGBs float64
}

// Model evaluates the ring model of s's collective for every link and GPU count. The bus bandwidth
// is NCCL's: the bytes each GPU moves over the time, 2(p − 1)/p · bytes for an all-reduce and
// (p − 1)/p · bytes for an all-gather or a reduce-scatter (nccl-tests, PERFORMANCE.md).
func Model(s Spec) []Point {
	var out []Point
	bytes := s.GradientMB * 1e6
	for _, l := range s.Links {
		for _, p := range s.GPUs {
			var sec, bus float64
			switch s.Op {
			case "all-gather":
				sec = collectives.RingAllGather(bytes, p, l.GBs*1e9, s.LatencyUS*1e-6)
				bus = collectives.GatherBusBandwidth(bytes, p, sec)
			case "reduce-scatter":
				sec = collectives.RingReduceScatter(bytes, p, l.GBs*1e9, s.LatencyUS*1e-6)
				bus = collectives.GatherBusBandwidth(bytes, p, sec)
			case "tree all-reduce":
				sec = collectives.TreeAllReduce(bytes, p, l.GBs*1e9, s.LatencyUS*1e-6)
				bus = collectives.BusBandwidth(bytes, p, sec)
			default:
				sec = collectives.RingAllReduce(bytes, p, l.GBs*1e9, s.LatencyUS*1e-6)
				bus = collectives.BusBandwidth(bytes, p, sec)
			}
			out = append(out, Point{Link: l.Name, GPUs: p, Seconds: sec, BusGBs: bus / 1e9})
		}
	}
	return out
}

// New returns the allreduce kind (a model: it needs nothing of env).
func New(cells.Env) cells.Kind {
	return cells.Define(cells.Def[Spec]{Name: "allreduce", Script: script, Parse: Parse,
		Run: func(s Spec, _ cells.Cell) cells.Run { return run(s) }})
}

type run Spec

// Estimate: the model is a formula per point.
func (run) Estimate() time.Duration { return time.Millisecond }

// Run emits the model as two grids, link × GPU count: the time of one all-reduce (table `model`, ms)
// and NCCL's bus bandwidth (table `busbw`, GB/s), and the chart.
func (r run) Run(ctx context.Context, e cells.Emitter) error {
	points := Model(Spec(r))
	cols := []cells.Column{{Label: "link"}}
	var bus []cells.Column
	bus = append(bus, cols...)
	for _, g := range r.GPUs {
		cols = append(cols, cells.Column{Label: humanize.Comma(int64(g)) + " GPUs", Unit: "ms"})
		bus = append(bus, cells.Column{Label: humanize.Comma(int64(g)) + " GPUs", Unit: "GB/s"})
	}
	busDef := "2(p − 1)/p · bytes / time"
	if r.Op == "all-gather" || r.Op == "reduce-scatter" {
		busDef = "(p − 1)/p · bytes / time"
	}
	e.Table(cells.Table{ID: "model", Caption: "Time per " + opName(r.Op) + ", modelled (α–β cost model, not measured): one row per link, one column per GPU count", Columns: cols})
	e.Table(cells.Table{ID: "busbw", Caption: "Bus bandwidth of that " + r.Op + ", modelled (NCCL's definition: " + busDef + ")", Columns: bus})
	var cp []chart.ModelPoint
	for i := 0; i < len(points); i += len(r.GPUs) {
		row := points[i : i+len(r.GPUs)]
		times, buses := []any{row[0].Link}, []any{row[0].Link}
		for _, p := range row {
			times = append(times, p.Seconds*1e3)
			buses = append(buses, p.BusGBs)
			cp = append(cp, chart.ModelPoint{Link: p.Link, GPUs: p.GPUs, Seconds: p.Seconds})
		}
		e.Row(cells.Row{Table: "model", Values: times})
		e.Row(cells.Row{Table: "busbw", Values: buses})
	}
	e.Chart(func() (string, error) { return chart.Collective(cp, r.Op, r.GradientMB) })
	return ctx.Err()
}

// Exclusive is false: the all-reduce cost model times nothing (cells.Exclusive).
func (r run) Exclusive() bool { return false }

// opName is how a caption names op: the ring's collectives say "ring".
func opName(op string) string {
	if op == "tree all-reduce" {
		return "double-binary-tree all-reduce"
	}
	return "ring " + op
}
