package vgpurun

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/gpuplayground/playground/estimate"
	"github.com/gpuplayground/playground/gpumodel"
	"github.com/gpuplayground/playground/problems"
	"github.com/gpuplayground/playground/vgpu"
)

// problemOf is req's problem: matmul where it names none.
func problemOf(req Request) *problems.Problem {
	if req.Problem != nil {
		return req.Problem
	}
	p, _ := problems.Lookup(problems.Default)
	return p
}

// Limit is the largest n the virtual GPU runs req at: the problem's SampledN for a learner's kernel,
// MaxSampledN for the table's.
func Limit(req Request) int {
	if req.Kernel == "custom" {
		return problemOf(req).SampledN
	}
	return MaxSampledN
}

// TooLarge explains why p is not emulated at n (over its SampledN).
func TooLarge(p *problems.Problem, n int) error {
	if p.SampledN == p.FullN {
		return fmt.Errorf("n=%d is over the virtual GPU's limit of %d for %s: its blocks depend on each other (through atomics into one output, or carries), so it runs in full or not at all", n, p.FullN, p.Name)
	}
	return fmt.Errorf("n=%d is over the virtual GPU's limit of %d for %s (the buffers and the check would take too much memory)", n, p.SampledN, p.Name)
}

// runProblem emulates a learner's kernel (req.Kernel "custom") for its problem: fresh inputs, the
// launch with the problem's buffers and int parameters (and req.SharedBytes of dynamic shared
// memory), and the problem's check at req.Precision. Up to the problem's FullN every block runs and
// every output entry is checked; above it, up to SampledN, SampledBlocks blocks run, the outputs
// they wrote (vgpu.Buffer.WrittenAny: not the poison left) are checked (matmul: at most maxChecked of them), and the counts
// are scaled to the whole grid.
func runProblem(ctx context.Context, req Request, res Result) (Result, error) {
	p, n := problemOf(req), req.N
	res.Problem = p.Name
	prec := req.Precision
	if prec.Name == "" {
		prec = problems.DefaultPrecision(req.DType)
	}
	res.Precision = p.InputTypes(req.DType) // the emulated table's inputs column: uint32 for a histogram
	if prec != problems.DefaultPrecision(req.DType) {
		res.Precision = fmt.Sprintf("%s, computed in %s", res.Precision, prec.Name)
	}
	if n > p.SampledN {
		return res, TooLarge(p, n)
	}
	mod, err := vgpu.ParseModule(req.PTX)
	if err != nil {
		return res, err
	}
	want := len(p.Buffers) + len(p.ParamNames) + len(req.TensorMaps)
	if fn := mod.Function(req.Entry); fn != nil && len(fn.Params) != want {
		return res, fmt.Errorf("%s takes %d parameters; a %s kernel takes %d: %s%s (is `problem:` right?)",
			req.Entry, len(fn.Params), p.Name, want, p.Prototype(req.Entry, req.DType), tensorMapsNote(len(req.TensorMaps)))
	}
	rng := req.rng()
	host := p.Inputs(rng, n, req.DType)
	var only [][3]int
	if n > p.FullN {
		only = sample(req.Grid, rng, req.Trace != nil, req.sampleSize())
	}
	bufs, params, err := problemBuffers(p, host, n, req)
	if err != nil {
		return res, err
	}
	res.Occupancy = theoretical(mod, req.Entry, false, req.Block, req.SharedBytes, req.GPU)
	cfg := vgpu.LaunchConfig{Grid: req.Grid, Block: req.Block, DynamicShared: req.SharedBytes, Only: only,
		Trace: req.Trace, TraceLimit: req.TraceLimit, Params: params, Buffers: bufs, Cache: gpumodel.CacheFor(req.GPU, res.Occupancy)}
	fp := watchFootprints(req, &cfg)
	start := time.Now()
	counts, err := vgpu.Launch(ctx, mod, req.Entry, cfg)
	res.EmulationSeconds = time.Since(start).Seconds()
	res.Notes = counts.Notes
	if err != nil {
		return res, err
	}
	res.Counts, res.Sampled, res.BlocksRun, res.GridBlocks = counts, only != nil, counts.Blocks, counts.GridBlocks
	out := p.Out()
	got := p.Buffers[out].Decode(bufs[out].Data, req.DType)
	var which []int
	if only != nil {
		res.Counts = counts.Scaled()
		if fp != nil {
			law := gpumodel.WaveLawGPU()
			lawResident := theoretical(mod, req.Entry, false, req.Block, req.SharedBytes, law).Result.BlocksPerSM * law.SMs
			res.Counts, res.Wave = gpumodel.WaveReads(ctx, mod, req.Entry, cfg, fp, counts, res.Counts, res.Occupancy.Result.BlocksPerSM*req.GPU.SMs, lawResident)
		}
		which = written(got, bufs[out], rng, p.Name == "matmul")
	}
	v, err := p.Check(ctx, n, host, got, which, prec, req.DType)
	if err != nil {
		return res, err
	}
	res.RelError, res.OK, res.Checked, res.Tolerance = v.Err, v.OK, v.Checked, v.Tol
	res.PrecisionNote = p.PrecisionNote(n, v, prec, req.DType, ComputesIn(counts.Lines, req.DType))
	if v.Err == math.MaxFloat64 { // problems' mark for NaN or Inf: say which
		res.RelError = math.Inf(1)
		if math.IsNaN(v.Bad) {
			res.RelError = math.NaN()
		}
	}
	res.Model = gpumodel.ModelAt(res.Counts, req.GPU, res.Occupancy) // the largest of its limits, with the launch
	res.Rate, res.RateUnit = p.RateOf(n, elemBytes(req.DType), res.Model.Seconds), p.Rate
	return res, nil
}

// newOutput is the output buffer of a launch: zeroed where the problem says so (the kernel
// accumulates into it, as after a cudaMemset), otherwise poisoned (vgpu.Poison, NaN in every float
// entry, as the GPU worker fills it) at every size, so that an entry no thread wrote fails the
// check, a sampled launch's unwritten entries are told apart, and a read before a write is an
// uninitialised-read note.
func newOutput(b problems.Buffer, n int, dtype string) *vgpu.Buffer {
	if b.Zeroed {
		return vgpu.NewOutput(b.Name, b.Bytes(n, dtype), vgpu.Zeroed)
	}
	return vgpu.NewOutput(b.Name, b.Bytes(n, dtype), vgpu.Poisoned)
}

// shapeOf is how a kernel indexes b at n, for the virtual GPU's fault messages: its element type
// and, for a matrix, n×n.
func shapeOf(b problems.Buffer, n int, dtype string) vgpu.Shape {
	sh := vgpu.Shape{Elem: b.ElemBytes(dtype), Type: b.CType(dtype)}
	if b.Matrix {
		sh.Rows, sh.Cols = n, n
	}
	return sh
}

// written lists the entries of got (decoded from out) that a kernel wrote, in a random order: those
// that are not NaN, and the NaNs a store wrote (out's written marks: vgpu.Buffer.WrittenAny), which
// the check must see, not take for the poison; for matmul, whose check recomputes a dot product per
// entry, at most maxChecked of them.
func written(got []float64, out *vgpu.Buffer, rng *rand.Rand, limit bool) []int {
	var idx []int
	size := len(out.Data) / max(len(got), 1)
	for i, g := range got {
		if !math.IsNaN(g) || out.WrittenAny(i*size, size) {
			idx = append(idx, i)
		}
	}
	rng.Shuffle(len(idx), func(x, y int) { idx[x], idx[y] = idx[y], idx[x] })
	if limit {
		idx = idx[:min(len(idx), maxChecked)]
	}
	return idx
}

func elemBytes(dtype string) int {
	if dtype == "float64" {
		return 8
	}
	return 4
}

// EstimateProblem is the estimated time of emulating a learner's kernel for p at n in a grid of
// blocks thread blocks: matmul as EstimateGrid prices it; the others from p.Instructions at the
// rate of the naive matmul kernel measured here (estimate.Rates.SIMTSeconds in r at n = 256, about 8·n³
// thread instructions), a sampled launch its share of the grid, plus drawing and checking the
// buffers. 0 above SampledN, where nothing runs.
func EstimateProblem(r *estimate.Rates, p *problems.Problem, n, blocks int) time.Duration {
	if p.Name == "matmul" {
		return EstimateGrid(r, "custom", n, blocks)
	}
	if n > p.SampledN {
		return 0
	}
	perInstr := r.SIMTSeconds("naive", 256) / (8 * 256 * 256 * 256)
	sec := p.Instructions(n) * perInstr
	if n > p.FullN {
		sec *= min(1, (SampledBlocks+1)/float64(max(blocks, 1))) // and the wave estimate's probe block
	}
	sec += r.FillSeconds(int(p.Memory(n, "float32") / 2))
	return time.Duration(sec * float64(time.Second))
}

// ComputesIn is the lowest float format the instructions a kernel executed convert to or compute
// in (lines: vgpu.Counts.Lines), as a `precision:` value: "bf16", "fp16", "tf32", "fp32" (a float64
// cell's kernel rounding to float), or "" when none of them ran.
func ComputesIn(lines []vgpu.LineCount, dtype string) string {
	has := func(s string) bool {
		for _, l := range lines {
			if l.Thread > 0 && strings.Contains(l.Text, s) {
				return true
			}
		}
		return false
	}
	switch {
	case has(".bf16"):
		return "bf16"
	case has(".f16"):
		return "fp16"
	case has(".tf32"):
		return "tf32"
	case dtype == "float64" && has(".f32"):
		return "fp32"
	}
	return ""
}
