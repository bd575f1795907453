// Package tpu is the `tpu` cell kind: a matmul on one modelled TPU TensorCore (package sim/tpucore), tiled
// as a Pallas kernel's BlockSpecs would tile it, with the pipeline's timeline animated (HBM↔VMEM copies
// against MXU and VPU compute), a table of its modelled time, MXU utilisation, bytes moved per level,
// padding and what dominates, and a chart of utilisation against block size; modelled, never measured:
//
//	generation: v5e     # v4, v5e or v5p (default v5e)
//	m: 4096             # C (m×n) = A (m×k) · B (k×n)
//	k: 4096
//	n: 4096
//	dtype: bf16         # bf16, f32 (3 bf16 passes) or int8 (default bf16)
//	bm: 512             # block sizes: A's blocks are bm×bk, B's bk×bn, C's bm×bn
//	bk: 1024            # bm a multiple of 8, bk and bn of 128
//	bn: 1024
//	epilogue: relu      # none, relu or bias_relu, run on the VPU (default none)
package tpu

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/gpuplayground/playground/cells"
	"github.com/gpuplayground/playground/chart"
	"github.com/gpuplayground/playground/sim/tpucore"
	"gonum.org/v1/plot/plotter"
)

//go:embed render.js
var script string

// Limits of a tpu cell: matrix dimensions, block sizes and the timeline's steps (sim/tpucore.MaxSteps
// bounds the grid).
const (
	MaxDim    = 1 << 16
	MaxBlock  = 8192
	MaxFrames = 64
)

// Spec is a parsed `tpu` cell: the modelled product.
type Spec struct {
	tpucore.Matmul
}

type source struct {
	cells.Common `yaml:",inline"`
	Generation   cells.At[string] `yaml:"generation"`
	M            cells.At[int]    `yaml:"m"`
	K            cells.At[int]    `yaml:"k"`
	N            cells.At[int]    `yaml:"n"`
	DType        cells.At[string] `yaml:"dtype"`
	BM           cells.At[int]    `yaml:"bm"`
	BK           cells.At[int]    `yaml:"bk"`
	BN           cells.At[int]    `yaml:"bn"`
	Epilogue     cells.At[string] `yaml:"epilogue"`
}

// Parse reads a `tpu` cell. Errors are *cells.SpecError values with line numbers; blocks that do not
// fit the core's VMEM are refused with the arithmetic (sim/tpucore.Matmul.Check).
func Parse(src string) (Spec, error) {
	var y source
	if err := cells.Decode(src, &y); err != nil {
		return Spec{}, err
	}
	p := tpucore.Matmul{Epilogue: "none"}
	var err error
	if p.Gen, err = tpucore.LookupGeneration(or(y.Generation, "v5e")); err != nil {
		return Spec{}, cells.Errorf(y.Generation.Line, "%v", err)
	}
	if p.DType, err = tpucore.LookupDType(or(y.DType, "bf16")); err != nil {
		return Spec{}, cells.Errorf(y.DType.Line, "%v", err)
	}
	if y.Epilogue.Line > 0 {
		p.Epilogue = y.Epilogue.V
	}
	for _, d := range []struct {
		name  string
		at    cells.At[int]
		dst   *int
		limit int
	}{{"m", y.M, &p.M, MaxDim}, {"k", y.K, &p.K, MaxDim}, {"n", y.N, &p.N, MaxDim}, {"bm", y.BM, &p.BM, MaxBlock}, {"bk", y.BK, &p.BK, MaxBlock}, {"bn", y.BN, &p.BN, MaxBlock}} {
		if d.at.Line == 0 {
			return Spec{}, &cells.SpecError{Line: 1, Msg: "a tpu cell needs m, k, n and the block sizes bm, bk and bn"}
		}
		if *d.dst = d.at.V; *d.dst < 1 || *d.dst > d.limit {
			return Spec{}, cells.Errorf(d.at.Line, "%s is %d; use 1 to %d", d.name, *d.dst, d.limit)
		}
	}
	if err := p.Check(); err != nil {
		line := firstLine(y.BM.Line, y.BK.Line, y.BN.Line)
		var ce *tpucore.CheckError
		if errors.As(err, &ce) {
			line = map[string]int{"m": y.M.Line, "bm": y.BM.Line, "bk": y.BK.Line, "bn": y.BN.Line, "dtype": y.DType.Line, "epilogue": y.Epilogue.Line, "grid": y.M.Line}[ce.Field]
			if line == 0 {
				line = firstLine(y.BM.Line, y.BK.Line, y.BN.Line)
			}
		}
		return Spec{}, cells.Errorf(line, "%v", err)
	}
	return Spec{p}, nil
}

func or(a cells.At[string], def string) string {
	if a.Line == 0 {
		return def
	}
	return a.V
}

func firstLine(lines ...int) int {
	first := 0
	for _, l := range lines {
		if l > 0 && (first == 0 || l < first) {
			first = l
		}
	}
	return first
}

// New returns the tpu kind (a model: it needs nothing of env).
func New(cells.Env) cells.Kind {
	return cells.Define(cells.Def[Spec]{Name: "tpu", Script: script, Parse: Parse,
		Run: func(s Spec, _ cells.Cell) cells.Run { return run{s} }})
}

type run struct{ Spec }

// Estimate is a pessimistic 1 µs per grid step for the cell's product and each of the chart's
// sweeps (at most SweepBlocks × generations, each with at most as many steps as 128-wide blocks
// give), plus 50 ms; the model is arithmetic, never timed.
func (r run) Estimate() time.Duration {
	steps := float64(r.Steps())
	for _, b := range SweepBlocks {
		if n := r.sweep(b).Steps(); n <= tpucore.MaxSteps {
			steps += float64(len(tpucore.Generations)) * float64(n)
		}
	}
	return 50*time.Millisecond + time.Duration(steps*float64(time.Microsecond))
}

// Exclusive is false: the model times nothing (cells.Exclusive).
func (run) Exclusive() bool { return false }

// Run models the product, sending the first MaxFrames grid steps as the timeline's frames, then the
// result and time tables and the utilisation chart.
func (r run) Run(ctx context.Context, e cells.Emitter) error {
	g := r.Gen
	e.Note("info", fmt.Sprintf("Modelled, not measured: one TPU %s TensorCore (%d MXUs of %d×%d at %.0f MHz, %.4g TFLOP/s %s, %.4g GB/s of HBM, %s of VMEM). Sources: %s.",
		g.Name, g.MXUs, tpucore.MXUSize, tpucore.MXUSize, g.ClockHz()/1e6, r.PeakFor()/1e12, r.DType.Name, g.HBM/1e9, tpucore.MiB(g.VMEM), g.Source))
	sent := 0
	res, err := tpucore.Simulate(ctx, r.Matmul, func(s tpucore.Step) {
		if sent < MaxFrames {
			e.Frames(s)
			sent++
		}
	})
	if err != nil {
		return err
	}
	if res.Steps > int64(sent) {
		e.Note("info", fmt.Sprintf("The timeline shows the first %d of the kernel's %d grid steps; the tables cover all of them.", sent, res.Steps))
	}
	emitTables(e, r.Matmul, res)
	e.Progress(1, 2)
	series, err := r.sweeps(ctx)
	if err != nil {
		return err
	}
	e.Chart(func() (string, error) {
		return chart.Sweep(fmt.Sprintf("MXU utilisation against block size, %d×%d×%d %s (modelled, not measured)", r.M, r.K, r.N, r.DType.Name),
			"block size b (bm = bk = bn = b, log2 scale)", "MXU utilisation (%)", series)
	})
	e.Progress(2, 2)
	return nil
}

// SweepBlocks are the square block sizes the chart models.
var SweepBlocks = []int{128, 256, 512, 1024, 2048}

// sweep is the cell's product with square blocks of side b (on the cell's generation).
func (r run) sweep(b int) tpucore.Matmul {
	p := r.Matmul
	p.BM, p.BK, p.BN = b, b, b
	return p
}

// sweeps models the cell's product with each square block size on every generation; a block size
// that does not fit a generation's VMEM is a gap in its line.
func (r run) sweeps(ctx context.Context) ([]chart.SweepSeries, error) {
	var series []chart.SweepSeries
	for _, g := range tpucore.Generations {
		s := chart.SweepSeries{Label: "TPU " + g.Name}
		for _, b := range SweepBlocks {
			p := r.sweep(b)
			p.Gen = g
			y := math.NaN()
			if p.Check() == nil {
				res, err := tpucore.Simulate(ctx, p, nil)
				if err != nil {
					return nil, err
				}
				y = 100 * res.Utilisation
			}
			s.Points = append(s.Points, plotter.XY{X: float64(b), Y: y})
		}
		series = append(series, s)
	}
	return series, nil
}

// emitTables sends the product's row and where its time went.
func emitTables(e cells.Emitter, p tpucore.Matmul, res tpucore.Result) {
	gm, gn, gk := p.Grid()
	e.Table(cells.Table{ID: "tpu", Caption: fmt.Sprintf("One TPU %s TensorCore, modelled from published figures (not measured)", p.Gen.Name), Columns: []cells.Column{
		{Label: "generation", Primary: true}, {Label: "m×k×n"}, {Label: "blocks bm×bk×bn", Primary: true}, {Label: "grid (m, n, k)"},
		{Label: "modelled time", Unit: "µs", Primary: true}, {Label: "modelled", Unit: "TFLOP/s"}, {Label: "MXU utilisation", Unit: "%", Primary: true},
		{Label: "what dominates", Primary: true}, {Label: "padding waste", Unit: "%", Primary: true},
		{Label: "HBM→VMEM", Unit: "MiB"}, {Label: "VMEM→HBM", Unit: "MiB"}, {Label: "VMEM→MXU", Unit: "MiB"}, {Label: "accumulator (VMEM↔VPU)", Unit: "MiB"},
		{Label: "VMEM in use", Unit: "MiB"}, {Label: "intensity (FLOP per HBM byte)"}}})
	padded := float64(res.PaddedM) * float64(res.PaddedN) * float64(res.PaddedK)
	moved := float64(res.HBMToVMEM + res.VMEMToHBM)
	e.Row(cells.Row{Table: "tpu", Values: []any{"TPU " + p.Gen.Name, fmt.Sprintf("%d×%d×%d %s", p.M, p.K, p.N, p.DType.Name),
		fmt.Sprintf("%d×%d×%d", p.BM, p.BK, p.BN), fmt.Sprintf("%d×%d×%d = %d steps", gm, gn, gk, res.Steps),
		res.Seconds * 1e6, res.FLOPs / res.Seconds / 1e12, 100 * res.Utilisation, res.Dominant(),
		100 * (1 - res.FLOPs/2/padded), mibs(res.HBMToVMEM), mibs(res.VMEMToHBM), mibs(res.VMEMToMXU), mibs(res.Accumulator),
		mibs(p.VMEMBytes()), res.FLOPs / moved}})
	e.Table(cells.Table{ID: "time", Caption: fmt.Sprintf("Where the modelled time goes (the HBM↔VMEM copies overlap compute: the DMA queue is busy %.4g µs of the %.4g µs)", res.DMABusy*1e6, res.Seconds*1e6),
		Columns: []cells.Column{{Label: "part"}, {Label: "time", Unit: "µs"}, {Label: "share", Unit: "%"}}})
	for _, part := range res.Parts {
		e.Row(cells.Row{Table: "time", Values: []any{part.Label, part.Seconds * 1e6, 100 * part.Seconds / res.Seconds}})
	}
}

func mibs(b int64) float64 { return float64(b) / (1 << 20) }
