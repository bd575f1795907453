package budget

import (
	"math"
	"strings"

	"github.com/gpuplayground/playground/cells"
	"github.com/gpuplayground/playground/gpumodel"
	"github.com/gpuplayground/playground/sim/parallel"
	"github.com/gpuplayground/playground/sim/transformer"
)

// Spec is a parsed `budget` cell.
type Spec struct {
	Workload Workload
	// Batch is how many independent predictions share one read of Bytes (1 unless written).
	Batch       int
	Utilisation float64
	Devices     []gpumodel.Accelerator
	Cluster     []int
	LinkGBs     float64
	LatencyUS   float64
	// YourGPU asks the run's page to measure the learner's own GPU through WebGPU (default true).
	YourGPU bool
	// Parallel is how a workload with a transformer's shape is split on clusters (its zero value
	// otherwise).
	Parallel Parallel
	// Scaling asks for the scaling-law table: the workload's compute split as Chinchilla and Kaplan
	// would split it, beside the run's own split (scaling.go).
	Scaling bool
	// Rooflines are the transformers whose communication rooflines the cell tabulates on each
	// device's links (scaling.go); none when empty.
	Rooflines []transformer.Model
}

// Parallel is the plan a cell asks for a workload with a Shape: the layout's TP, PP and CP degrees
// and ZeRO stage (DP is what the cluster leaves: chips / (TP·PP·CP)), what the backward pass
// recomputes, the sequence length (0: the workload's; the tokens per step stay the same), and the
// node: NodeChips chips joined at NodeGBs GB/s per direction (the rest at LinkGBs).
type Parallel struct {
	TP, PP, CP, ZeRO int
	Recompute        parallel.Recompute
	Seq              int
	NodeChips        int
	NodeGBs          float64
	// Overlap hides the data-parallel communication behind the arithmetic it can overlap
	// (parallel.Overlapped); false: nothing overlapped.
	Overlap bool
}

// TotalFLOPs is the workload's FLOPs times the batch.
func (s Spec) TotalFLOPs() float64 { return s.Workload.FLOPs * float64(s.Batch) }

type source struct {
	cells.Common `yaml:",inline"`
	Workload     cells.At[string]                   `yaml:"workload"`
	FLOPs        cells.At[float64]                  `yaml:"flops"`
	Bytes        cells.At[float64]                  `yaml:"bytes"`
	Steps        cells.At[float64]                  `yaml:"steps"`
	GradientMB   cells.At[float64]                  `yaml:"gradient_mb"`
	Batch        cells.At[int]                      `yaml:"batch"`
	Utilisation  cells.At[float64]                  `yaml:"utilisation"`
	Devices      cells.At[[]cells.At[string]]       `yaml:"devices"`
	Cluster      cells.At[[]cells.At[int]]          `yaml:"cluster"`
	LinkGBs      cells.At[float64]                  `yaml:"link_gbs"`
	LatencyUS    cells.At[float64]                  `yaml:"latency_us"`
	YourGPU      cells.At[bool]                     `yaml:"your_gpu"`
	Layout       cells.At[map[string]cells.At[int]] `yaml:"layout"`
	Recompute    cells.At[string]                   `yaml:"recompute"`
	Sequence     cells.At[int]                      `yaml:"sequence"`
	Node         cells.At[int]                      `yaml:"node"`
	NodeGBs      cells.At[float64]                  `yaml:"node_gbs"`
	Params       cells.At[float64]                  `yaml:"params"`
	Tokens       cells.At[float64]                  `yaml:"tokens"`
	Scaling      cells.At[bool]                     `yaml:"scaling"`
	Rooflines    cells.At[[]cells.At[string]]       `yaml:"rooflines"`
	Overlap      cells.At[bool]                     `yaml:"overlap"`
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
	var err error
	if s.Workload, err = y.workload(); err != nil {
		return Spec{}, err
	}
	if err := y.scale(&s); err != nil {
		return Spec{}, err
	}
	if s.Devices, err = y.devices(); err != nil {
		return Spec{}, err
	}
	if err := y.network(&s); err != nil {
		return Spec{}, err
	}
	if s.Parallel, err = y.parallelism(s.Workload); err != nil {
		return Spec{}, err
	}
	s.Scaling = y.Scaling.V
	if s.Rooflines, err = y.rooflines(); err != nil {
		return Spec{}, err
	}
	return s, nil
}

// workload is the cell's workload: a preset (workload:), a typed-in count (flops:), not both, or
// a training run's parameters and tokens (params: and tokens:, 6·N·D FLOPs without flops:).
func (y source) workload() (Workload, error) {
	if (y.Params.Line > 0) != (y.Tokens.Line > 0) {
		return Workload{}, cells.Errorf(max(y.Params.Line, y.Tokens.Line), "params and tokens go together: a model of params parameters trained on tokens tokens")
	}
	switch {
	case y.Workload.Line > 0 && y.FLOPs.Line > 0:
		return Workload{}, cells.Errorf(y.FLOPs.Line, "write either workload (a preset) or flops (your own count), not both")
	case y.Workload.Line > 0 && y.Params.Line > 0:
		return Workload{}, cells.Errorf(y.Params.Line, "a preset workload has its own parameters and tokens")
	case y.Workload.Line > 0:
		return y.preset()
	case y.FLOPs.Line > 0 || y.Params.Line > 0:
		w, err := y.typedIn()
		if err != nil {
			return Workload{}, err
		}
		return y.allocation(w)
	}
	return Workload{}, &cells.SpecError{Line: 1, Msg: "a budget cell needs workload (" + presetNames() + "), flops, or params and tokens"}
}

// preset is the preset the workload key names; bytes, steps and gradient_mb belong to typed-in
// workloads only.
func (y source) preset() (Workload, error) {
	var w Workload
	found := false
	for _, p := range Presets {
		if p.Name == y.Workload.V {
			w, found = p, true
		}
	}
	if !found {
		return Workload{}, cells.Errorf(y.Workload.Line, "unknown workload %q; presets: %s (or write flops: instead)", y.Workload.V, presetNames())
	}
	for _, k := range []cells.At[float64]{y.Bytes, y.Steps, y.GradientMB} {
		if k.Line > 0 {
			return Workload{}, cells.Errorf(k.Line, "bytes, steps and gradient_mb describe a typed-in workload (flops:); a preset has its own")
		}
	}
	return w, nil
}

// typedIn is a workload of flops FLOPs, with the bytes it reads and its steps of gradient_mb
// all-reduces where the cell gives them.
func (y source) typedIn() (Workload, error) {
	if y.FLOPs.Line == 0 { // params and tokens: allocation sets the FLOPs
		return Workload{How: "typed in", Source: "the cell"}, nil
	}
	if !(y.FLOPs.V >= 1 && y.FLOPs.V <= 1e30) {
		return Workload{}, cells.Errorf(y.FLOPs.Line, "flops must be between 1 and 1e30")
	}
	w := Workload{Label: cells.Number(y.FLOPs.V, 3) + " FLOPs", FLOPs: y.FLOPs.V, How: "typed in", Source: "the cell"}
	if y.Bytes.Line > 0 {
		if !(y.Bytes.V > 0 && y.Bytes.V <= 1e18) {
			return Workload{}, cells.Errorf(y.Bytes.Line, "bytes must be between 0 and 1e18")
		}
		w.Bytes = y.Bytes.V
	}
	if (y.Steps.Line > 0) != (y.GradientMB.Line > 0) {
		return Workload{}, cells.Errorf(max(y.Steps.Line, y.GradientMB.Line), "steps and gradient_mb go together: one all-reduce of gradient_mb per step")
	}
	if y.Steps.Line > 0 {
		if !(y.Steps.V >= 1 && y.Steps.V <= 1e12 && y.Steps.V == math.Trunc(y.Steps.V)) {
			return Workload{}, cells.Errorf(y.Steps.Line, "steps must be a whole number from 1 to 1e12")
		}
		if !(y.GradientMB.V > 0 && y.GradientMB.V <= 1e9) {
			return Workload{}, cells.Errorf(y.GradientMB.Line, "gradient_mb must be between 0 and 1e9")
		}
		w.Steps, w.GradientBytes = y.Steps.V, y.GradientMB.V*1e6
	}
	return w, nil
}

// scale sets s's batch (only for a workload with bytes to share) and utilisation.
func (y source) scale(s *Spec) error {
	if y.Batch.Line > 0 {
		if s.Workload.Bytes == 0 {
			return cells.Errorf(y.Batch.Line, "batch shares one read of the workload's bytes among many predictions; this workload has none")
		}
		if y.Batch.V < 1 || y.Batch.V > 1<<20 {
			return cells.Errorf(y.Batch.Line, "batch must be from 1 to %d", 1<<20)
		}
		s.Batch = y.Batch.V
	}
	if y.Utilisation.Line > 0 {
		if s.Utilisation = y.Utilisation.V; !(s.Utilisation > 0 && s.Utilisation <= 1) {
			return cells.Errorf(y.Utilisation.Line, "utilisation is a fraction of peak: more than 0, at most 1")
		}
	}
	return nil
}

// devices are the datasheet accelerators the cell lists (DefaultDevices when it lists none), each
// once.
func (y source) devices() ([]gpumodel.Accelerator, error) {
	names := DefaultDevices
	lines := make([]int, len(names))
	if y.Devices.Line > 0 {
		if len(y.Devices.V) == 0 || len(y.Devices.V) > MaxDevices {
			return nil, cells.Errorf(y.Devices.Line, "devices lists 1 to %d accelerators", MaxDevices)
		}
		names, lines = nil, nil
		for _, d := range y.Devices.V {
			names, lines = append(names, d.V), append(lines, d.Line)
		}
	}
	var devices []gpumodel.Accelerator
	for i, n := range names {
		a, err := gpumodel.LookupAccelerator(n)
		if err != nil {
			return nil, cells.Errorf(lines[i], "%v", err)
		}
		for _, d := range devices {
			if d.Name == a.Name {
				return nil, cells.Errorf(lines[i], "%s is listed twice", a.Name)
			}
		}
		devices = append(devices, a)
	}
	return devices, nil
}

// network sets s's cluster sizes and the all-reduce's link bandwidth and latency.
func (y source) network(s *Spec) error {
	if y.Cluster.Line > 0 {
		if len(y.Cluster.V) > MaxClusters {
			return cells.Errorf(y.Cluster.Line, "%d cluster sizes; a cell models at most %d", len(y.Cluster.V), MaxClusters)
		}
		s.Cluster = nil
		for _, c := range y.Cluster.V {
			if c.V < 2 || c.V > MaxChips {
				return cells.Errorf(c.Line, "a cluster of %d chips: use 2 to %d", c.V, MaxChips)
			}
			s.Cluster = append(s.Cluster, c.V)
		}
	}
	if y.LinkGBs.Line > 0 {
		if s.LinkGBs = y.LinkGBs.V; !(s.LinkGBs > 0 && s.LinkGBs <= 1e6) {
			return cells.Errorf(y.LinkGBs.Line, "link_gbs must be between 0 and 1,000,000")
		}
	}
	if y.LatencyUS.Line > 0 {
		if s.LatencyUS = y.LatencyUS.V; !(s.LatencyUS >= 0 && s.LatencyUS <= 1e6) {
			return cells.Errorf(y.LatencyUS.Line, "latency_us must be between 0 and 1,000,000")
		}
	}
	return nil
}

// MaxDegree caps a layout's TP, PP and CP degrees.
const MaxDegree = 1 << 16

// parallelism is the plan for a workload with a Shape: layout (tp, pp, cp, zero), recompute,
// sequence, node and node_gbs. Defaults: plain data parallelism (TP, PP, CP 1, ZeRO 0), selective
// recomputation, the workload's sequence, 8-chip nodes at 450 GB/s (a DGX H100's NVLink 4, 900 GB/s
// in both directions together: NVIDIA H100 datasheet, DGX H100 datasheet).
func (y source) parallelism(w Workload) (Parallel, error) {
	p := Parallel{TP: 1, PP: 1, CP: 1, Recompute: parallel.Selective, NodeChips: 8, NodeGBs: 450}
	if w.Shape == nil {
		keys := []int{y.Layout.Line, y.Recompute.Line, y.Sequence.Line, y.Overlap.Line}
		if y.Rooflines.Line == 0 { // the rooflines table uses the node's links
			keys = append(keys, y.Node.Line, y.NodeGBs.Line)
		}
		for _, line := range keys {
			if line > 0 {
				return Parallel{}, cells.Errorf(line, "layout, recompute, sequence, overlap, node and node_gbs split a transformer's training (workload: gpt3-training or llama3-405b-training; node and node_gbs also go with rooflines); this workload has no transformer shape")
			}
		}
		if y.Rooflines.Line == 0 {
			return Parallel{}, nil
		}
		return p, y.node(&p)
	}
	if y.Layout.Line > 0 {
		if err := y.layout(&p); err != nil {
			return Parallel{}, err
		}
	}
	if y.Recompute.Line > 0 {
		switch r := parallel.Recompute(y.Recompute.V); r {
		case parallel.None, parallel.Selective, parallel.Full:
			p.Recompute = r
		default:
			return Parallel{}, cells.Errorf(y.Recompute.Line, "recompute is none, selective or full")
		}
	}
	if y.Sequence.Line > 0 {
		if y.Sequence.V < 1 || y.Sequence.V > 1<<24 {
			return Parallel{}, cells.Errorf(y.Sequence.Line, "sequence must be from 1 to %d tokens", 1<<24)
		}
		p.Seq = y.Sequence.V
	}
	if err := y.node(&p); err != nil {
		return Parallel{}, err
	}
	p.Overlap = y.Overlap.V
	return p, nil
}

// node reads node and node_gbs into p.
func (y source) node(p *Parallel) error {
	if y.Node.Line > 0 {
		if y.Node.V < 1 || y.Node.V > 1024 {
			return cells.Errorf(y.Node.Line, "node is the chips of one node: 1 to 1024")
		}
		p.NodeChips = y.Node.V
	}
	if y.NodeGBs.Line > 0 {
		if p.NodeGBs = y.NodeGBs.V; !(p.NodeGBs > 0 && p.NodeGBs <= 1e6) {
			return cells.Errorf(y.NodeGBs.Line, "node_gbs must be between 0 and 1,000,000")
		}
	}
	return nil
}

// layout reads layout: {tp, pp, cp, zero} into p.
func (y source) layout(p *Parallel) error {
	if len(y.Layout.V) == 0 {
		return cells.Errorf(y.Layout.Line, "layout is a map like {tp: 8, pp: 16, cp: 1, zero: 1}")
	}
	for _, k := range cells.Sorted(y.Layout.V) {
		v := y.Layout.V[k]
		switch k {
		case "tp", "pp", "cp":
			if v.V < 1 || v.V > MaxDegree {
				return cells.Errorf(v.Line, "layout's %s must be from 1 to %d", k, MaxDegree)
			}
		case "zero":
			if v.V < 0 || v.V > 3 {
				return cells.Errorf(v.Line, "layout's zero is a ZeRO stage: 0 (none), 1 (optimiser state sharded), 2 (and gradients) or 3 (and weights, as FSDP)")
			}
		default:
			return cells.Errorf(v.Line, "layout has tp, pp, cp and zero, not %q", k)
		}
	}
	get := func(k string, def int) int {
		if v, ok := y.Layout.V[k]; ok {
			return v.V
		}
		return def
	}
	p.TP, p.PP, p.CP, p.ZeRO = get("tp", 1), get("pp", 1), get("cp", 1), get("zero", 0)
	return nil
}
