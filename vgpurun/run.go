// Package vgpurun runs a GEMM kernel's real PTX, or a learner's kernel for its problem (package
// problems: matmul, transpose, reduce, …), in the virtual GPU (package vgpu, the functional
// emulator) as an experiment: fresh random inputs, one launch, the result checked against a float64
// reference, the counts the hardware would produce, and a time modelled from a datasheet GPU
// (package gpumodel, the timing model). Emulated and modelled, never measured: callers label it so.
package vgpurun

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gpuplayground/playground/estimate"
	"github.com/gpuplayground/playground/gpu"
	"github.com/gpuplayground/playground/gpu/nvidia"
	"github.com/gpuplayground/playground/gpumodel"
	"github.com/gpuplayground/playground/kernels"
	"github.com/gpuplayground/playground/numeric"
	"github.com/gpuplayground/playground/problems"
	"github.com/gpuplayground/playground/vgpu"
	"github.com/x448/float16"
)

// Arch is the virtual architecture the virtual GPU runs: the embedded PTX's compute_80 (Ampere
// and newer), whose tensor-core kernel takes BF16 inputs.
const Arch = 80

// Request is one launch of a C = A·B kernel (row-major n×n, launched as
// kernel(A, B, C, M, N, K)) in the virtual GPU.
type Request struct {
	// Kernel names a row of the GPU kernel table (gpu/nvidia/ladder.go), run from the embedded PTX
	// with the row's launch shape; or is "custom" with PTX, Entry, Grid and Block set, for
	// Problem (nil: matmul), launched with SharedBytes of dynamic shared memory per block and
	// checked at Precision (zero: the dtype's, problems.DefaultPrecision).
	Kernel      string
	PTX         string
	Entry       string
	Grid        [3]int
	Block       [3]int
	Problem     *problems.Problem
	SharedBytes int
	Precision   problems.Precision
	// TensorMaps are the tensor maps a learner's kernel takes after its problem's parameters, in
	// order (each a `const __grid_constant__ CUtensorMap`).
	TensorMaps []TensorMap
	// N is the matrices' size; DType "float32" or "float64" (the table's own kernels take float32).
	N     int
	DType string
	// GPU is the datasheet the modelled time uses.
	GPU gpumodel.GPU
	// Block, if set for a table kernel, replaces its threads per block (the naive and coalesced
	// kernels, which read blockDim); the grid then covers n with one thread per entry.
	BlockXY [2]int
	// Trace, if set, receives block (0,0)'s global-memory warp instructions, at most TraceLimit
	// (a sampled launch then runs its run of blocks from block (0,0): sample).
	Trace      func(vgpu.TraceEvent)
	TraceLimit int
	// Seed, when not 0, seeds the inputs, the sampled blocks and the entries checked, so that a
	// comparison repeated (a test against kept measurements) draws the same ones; 0 draws afresh.
	Seed uint64
	// SampleBlocks, when between 1 and SampledBlocks, is how many blocks a sampled launch runs
	// instead of SampledBlocks: fewer for a grid of few, large blocks, whose every block is long
	// (priced beforehand by ProbeLaunch).
	SampleBlocks int
}

// tiles is the tiles of C that row's launch at n covers: its blocks, or for a persistent kernel
// the tiles its blocks loop over.
func tiles(row nvidia.Kernel, n int) int {
	p, g, _ := row.Shape(n)
	if row.Persistent > 0 {
		return ceilDiv(p, row.Tile[0]) * ceilDiv(p, row.Tile[1])
	}
	return g[0] * g[1] * g[2]
}

// tilesPerBlock is the most tiles a block of row's launch at n computes: 1 but for a persistent
// kernel, whose blocks loop over ⌈tiles/blocks⌉ or one fewer.
func tilesPerBlock(row nvidia.Kernel, n int) int {
	_, g, _ := row.Shape(n)
	return ceilDiv(tiles(row, n), max(g[0]*g[1]*g[2], 1))
}

// persistentSample is how many blocks a sampled launch of a persistent kernel at n runs: those
// whose tiles are about SampledBlocks tiles (2 at n = 4096 with 132 blocks of 3 or 4 tiles), at
// least one, so that it costs about what a sampled launch of the same tiles without the scheduler does.
func persistentSample(row nvidia.Kernel, n int) int {
	return max(1, SampledBlocks/tilesPerBlock(row, n))
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// sampleSize is how many blocks req's sampled launch runs (Request.SampleBlocks).
func (req Request) sampleSize() int {
	if req.SampleBlocks >= 1 && req.SampleBlocks < SampledBlocks {
		return req.SampleBlocks
	}
	return SampledBlocks
}

// rng is the launch's random source: req.Seed's when set, else a fresh one.
func (req Request) rng() *rand.Rand { return rand.New(req.source()) }

// source is the generator behind rng (its state is what a seeded launch's kept inputs restore:
// seededInputs).
func (req Request) source() *rand.PCG {
	if req.Seed != 0 {
		return rand.NewPCG(req.Seed, req.Seed^0x9e3779b97f4a7c15)
	}
	return rand.NewPCG(rand.Uint64(), rand.Uint64())
}

// Result is one emulated launch.
type Result struct {
	Kernel string
	N      int
	DType  string
	// Problem is what a learner's kernel computes ("matmul", "transpose", …; "" for the table's).
	Problem string
	// Precision is what the inputs were rounded to ("float32", "bf16", …); for a learner's kernel
	// its problem's input types (problems.Problem.InputTypes: "uint32" for a histogram), and with a
	// `precision:` the precision it computes in.
	Precision string
	// RelError is ‖C − C_ref‖_F / ‖C_ref‖_F against float64 (a learner's kernel: its problem's
	// error measure, problems.Verdict); NaN when a checked entry of the output was NaN (never
	// written: it holds the poison), +Inf when one was infinite or the error is unbounded (the
	// reference is zero where the output is not). OK is within the precision's tolerance
	// (Tolerance, set for a learner's kernel).
	RelError  float64
	OK        bool
	Tolerance float64
	// PrecisionNote, for a learner's kernel that failed its check, names the `precision:` value
	// whose tolerance its error fits (problems.Problem.PrecisionNote); "" otherwise.
	PrecisionNote string
	Counts        vgpu.Counts
	// Sampled says only some blocks ran (n > MaxN): Counts are scaled to the whole grid (an
	// estimate) and Checked entries of C, those the blocks wrote, were compared.
	Sampled bool
	Checked int
	// BlocksRun of GridBlocks thread blocks ran.
	BlocksRun, GridBlocks int64
	// SASS is the SASS instructions per PTX line on GPU's architecture (OwnSASS; nil where
	// unknown), and SASSInstructions the warp instructions the launch issues in SASS
	// (gpumodel.SASSWarpInstructions; Counts.WarpInstructions, the PTX's, where SASS is nil).
	SASS             gpumodel.SASSPerLine `json:"-"`
	SASSInstructions int64
	// Model is the modelled time on GPU (a datasheet GPU), the largest of its limits
	// (gpumodel.ModelAtSASS, which charges SASS); Rate the problem's natural rate at that time, in RateUnit ("GFLOP/s",
	// "GB/s"; set for a learner's kernel).
	Model    gpumodel.Time
	Rate     float64
	RateUnit string
	GPU      string
	// EmulationSeconds is how long the emulation took here (measured, of the emulator).
	EmulationSeconds float64
	// Notes are the sanitizer's findings that did not stop the launch (vgpu.Counts.Notes:
	// uninitialised reads of C or of shared memory), for callers to show beside the result.
	Notes []*vgpu.Fault
	// Occupancy is the launch's theoretical occupancy on GPU (computed, not emulated).
	Occupancy gpumodel.Occupancy
	// Wave says how a sampled launch's DRAM reads were estimated (gpumodel.WaveReads: its waves in step and
	// staggered, blended); zero for a launch run in full.
	Wave gpumodel.WaveDRAM
}

// MaxN is the largest n the virtual GPU runs in full for a cell: at about 100 million thread
// instructions per second per core (docs/benchmarks.md), n = 512 takes a few seconds on 2 cores.
const MaxN = 512

// Emulatable reports whether kernel is a GPU kernel of the table with PTX to run.
func Emulatable(kernel string) bool {
	row, ok := nvidia.LookupKernel(kernel)
	return ok && row.Entry != ""
}

// Estimate is the estimated time of one emulation of kernel (a row of the table, or "custom") at size
// n, from the rates measured on this machine for the virtual GPU's ladder kernels
// (estimate.Rates.SIMTSeconds in r, keyed by the ladder name: cuda-naive → naive; a tile search
// candidate, cuda-tile-…, is priced as cuda-doublebuf, the same template; a learner's kernel is
// priced as the naive kernel, the slowest). Above MaxN it is the sampled blocks' share of the whole
// grid's time, plus drawing the inputs and checking the entries they wrote; 0 above MaxSampledN,
// where nothing runs.
func Estimate(r *estimate.Rates, kernel string, n int) time.Duration {
	blocks := ((n + 15) / 16) * ((n + 15) / 16) // a custom kernel's grid, if unknown: one 16×16 tile each
	if row, ok := nvidia.LookupRow(kernel); ok && row.Entry != "" {
		_, g, _ := row.Shape(n)
		blocks = g[0] * g[1] * g[2]
	}
	return EstimateGrid(r, kernel, n, blocks)
}

// EstimateGrid is Estimate for a launch of blocks thread blocks (a learner's kernel with its own
// grid): above MaxN only SampledBlocks of them run (and the wave estimate's probe block), so a
// grid of few, large blocks costs its whole work.
func EstimateGrid(r *estimate.Rates, kernel string, n, blocks int) time.Duration {
	if n > MaxSampledN {
		return 0
	}
	short := strings.TrimPrefix(kernel, "cuda-")
	if strings.HasPrefix(short, "tile-") { // a tile search candidate: tile_gemm, as cuda-doublebuf
		short = "doublebuf"
	}
	sec := r.SIMTSeconds(short, n)
	if sec == 0 {
		sec = r.SIMTSeconds("naive", n)
	}
	if n > MaxN {
		sampled := SampledBlocks + 1 // and the wave estimate's probe block (gpumodel.WaveProbeBlocks)
		run := sec * min(1, float64(sampled)/float64(max(blocks, 1)))
		// A table kernel's block at n does the work of its block at the calibrated size n0, times
		// n/n0 (its loop over k is n long): price the sampled blocks from that measured point rather
		// than from the whole grid's extrapolated time.
		// A persistent kernel's block loops over tilesPerBlock tiles, and fewer blocks run
		// (persistentSample): price its tiles.
		if row, ok := nvidia.LookupRow(kernel); ok && row.Entry != "" {
			if n0 := r.SIMTN[short]; n0 > 0 {
				perTile := r.SIMTSeconds(short, n0) / float64(tiles(row, n0)) * float64(n) / float64(n0)
				run = perTile * float64(tilesPerBlock(row, n)*min(sampled, blocks))
				if row.Persistent > 0 {
					run = perTile * float64(tilesPerBlock(row, n)*persistentSample(row, n))
				}
			}
		}
		sec = run + r.FillSeconds(8*n*n) + r.KernelSeconds("naive", 1, "float64", 1)*float64(maxChecked)*float64(n)
	}
	return time.Duration(sec * float64(time.Second))
}

var (
	modules   sync.Map // embedded PTX file → *vgpu.Module
	parseOnce sync.Mutex
)

// ownModule parses the embedded PTX of matmul.cu for Arch, once.
func ownModule() (*vgpu.Module, error) { return embeddedModule(nvidia.PTXName("matmul.cu", Arch)) }

// rowModule is the parsed PTX that row's Entry runs from: matmul.cu's for Arch, or its Source's for
// its own Arch (the Hopper rungs: hopper.cu's compute_90a), and the compute capability to launch
// it for (Arch, or 90).
func rowModule(row nvidia.Kernel) (*vgpu.Module, int, error) {
	if row.Arch == "" {
		m, err := ownModule()
		return m, Arch, err
	}
	m, err := embeddedModule(nvidia.PTXFile(path.Base(row.Source), row.Arch))
	return m, row.MinCC, err
}

// embeddedModule parses the embedded PTX file name, once.
func embeddedModule(name string) (*vgpu.Module, error) {
	if m, ok := modules.Load(name); ok {
		return m.(*vgpu.Module), nil
	}
	parseOnce.Lock()
	defer parseOnce.Unlock()
	if m, ok := modules.Load(name); ok {
		return m.(*vgpu.Module), nil
	}
	src, err := nvidia.PTX.ReadFile(name)
	if err != nil {
		return nil, err
	}
	m, err := vgpu.ParseModule(string(src))
	if err != nil {
		return nil, err
	}
	modules.Store(name, m)
	return m, nil
}

// Emulator runs launches in the virtual GPU in Run's place. A server's GPU host is none, and its
// cells' launches run with Run; a test's (cellstest.NoGPU with an EmulationMemo) shares identical
// launches between the runs of many cells. RunOn says which runs a launch.
type Emulator interface {
	Emulate(ctx context.Context, req Request) (Result, error)
}

// RunOn runs req with host where host is an Emulator (a cells.GPU may be one), else with Run.
func RunOn(ctx context.Context, host any, req Request) (Result, error) {
	if e, ok := host.(Emulator); ok {
		return e.Emulate(ctx, req)
	}
	return Run(ctx, req)
}

// Run emulates req: inputs in [-1, 1), the launch, the check and the model. Up to MaxN the whole
// grid runs and every entry of C is checked; above it (up to MaxSampledN) only a run of SampledBlocks
// consecutive thread blocks runs (sample; Result.Sampled): the entries they write are checked against
// float64 dot products, and the counts are scaled to the whole grid (an estimate, labelled so). A
// fault the sanitizer finds, an unsupported instruction or a launch error is the error (a
// *vgpu.Fault or *vgpu.UnsupportedError for callers to show as they are). A learner's kernel
// ("custom") runs for its problem instead, with that problem's buffers, limits and check
// (runProblem).
func Run(ctx context.Context, req Request) (Result, error) {
	n := req.N
	res := Result{Kernel: req.Kernel, N: n, DType: req.DType, Precision: req.DType, GPU: req.GPU.Name}
	if req.Kernel == "custom" {
		return runProblem(ctx, req, res)
	}
	if n > MaxSampledN {
		return res, fmt.Errorf("n=%d is over the virtual GPU's limit of %d (the inputs alone would take too much memory)", n, MaxSampledN)
	}
	row, ok := nvidia.LookupRow(req.Kernel)
	if !ok || row.Entry == "" {
		return res, fmt.Errorf("%s has no PTX to emulate", req.Kernel)
	}
	if row.Persistent > 0 && req.SampleBlocks == 0 {
		req.SampleBlocks = persistentSample(row, n) // as a cell cut for time: no wave probe block either
	}
	mod, cc, err := rowModule(row)
	if err != nil {
		return res, err
	}
	l := row.LaunchFor(n, cc, req.DType)
	entry, grid, block, padded := l.Entry, l.Grid, l.Block, l.N
	res.Precision = l.Precision
	if b := req.BlockXY; b != ([2]int{}) {
		block, grid = [3]int{b[0], b[1], 1}, [3]int{(padded + b[0] - 1) / b[0], (padded + b[1] - 1) / b[1], 1}
	}
	src := req.source()
	rng := rand.New(src)
	in := seededInputs.draw(req.Seed, src, rng, n, padded, res.Precision)
	var only [][3]int
	if n > MaxN {
		only = sample(grid, rng, req.Trace != nil, req.sampleSize()) // C's entries the sampled blocks do not write keep the poison: the check skips them
	}
	res.Occupancy = theoretical(mod, entry, true, block, row.SharedBytes, req.GPU)
	cfg := vgpu.LaunchConfig{Grid: grid, Block: block, Only: only, Trace: req.Trace, TraceLimit: req.TraceLimit,
		Params:  append([]vgpu.Arg{vgpu.Ptr(in.A), vgpu.Ptr(in.B), vgpu.Ptr(in.C), vgpu.S32(int32(padded)), vgpu.S32(int32(padded)), vgpu.S32(int32(padded))}, tableTensorMaps(row.TensorMaps, in.A, in.B, padded, padded, padded)...),
		Buffers: []*vgpu.Buffer{in.A, in.B, in.C}, Cache: gpumodel.CacheFor(req.GPU, res.Occupancy), DynamicShared: row.SharedBytes}
	fp := watchFootprints(req, &cfg)
	start := time.Now()
	counts, err := vgpu.Launch(ctx, mod, entry, cfg)
	res.EmulationSeconds = time.Since(start).Seconds()
	res.Notes = counts.Notes
	if err != nil {
		return res, err
	}
	res.Counts, res.Sampled, res.BlocksRun, res.GridBlocks = counts, counts.Blocks < counts.GridBlocks, counts.Blocks, counts.GridBlocks
	if cfg.Only != nil {
		res.Counts = counts.Scaled()
		if fp != nil {
			law := gpumodel.WaveLawGPU()
			lawResident := theoretical(mod, entry, true, block, row.SharedBytes, law).Result.BlocksPerSM * law.SMs
			res.Counts, res.Wave = gpumodel.WaveReads(ctx, mod, entry, cfg, fp, counts, res.Counts, res.Occupancy.Result.BlocksPerSM*req.GPU.SMs, lawResident)
		}
		res.RelError, res.Checked, err = in.checkWritten(ctx, rng)
	} else {
		res.RelError, err = in.checkAll(ctx)
		res.Checked = n * n
	}
	if err != nil {
		return res, err
	}
	res.OK = res.RelError <= gpu.Tolerance(res.Precision)
	if cfg.Only != nil && res.Checked == 0 {
		res.OK = false // the sampled blocks wrote nothing: a wrong launch shape
	}
	if row.Arch == "" { // the SASS per line is matmul.cu's compute_80 PTX's
		res.SASS = OwnSASS(req.GPU)
	}
	res.SASSInstructions = gpumodel.SASSWarpInstructions(res.Counts, res.SASS)
	res.Model = gpumodel.ModelAtSASS(res.Counts, req.GPU, res.Occupancy, res.SASS)
	return res, nil
}

// OwnSASS is the SASS instructions ptxas compiles each line of the table's PTX (the compute_80 PTX
// the virtual GPU runs) to for g's architecture (nvidia.RungSASSPerLine, generated); nil where
// that architecture does not load that PTX (a V100's or T4's loads compute_70), whose model then
// charges PTX instructions.
func OwnSASS(g gpumodel.GPU) gpumodel.SASSPerLine {
	if perLine, ok := nvidia.RungSASSPerLine(g.CC); ok {
		return perLine
	}
	return nil
}

// Failure is the note for kernel's emulation at n that ended with err: "KERNEL at n=N faulted in
// the virtual GPU: FAULT" for a fault of the kernel's own (a *vgpu.Fault other than an unsupported
// operation), which the page's summary reports as faulted (static/measured.js); otherwise "KERNEL at
// n=N, in the virtual GPU: ERR", a kernel that did not run.
func Failure(kernel string, n int, err error) string {
	var f *vgpu.Fault
	if errors.As(err, &f) && f.Kind != "unsupported" {
		return fmt.Sprintf("%s at n=%d faulted in the virtual GPU: %v", kernel, n, err)
	}
	return fmt.Sprintf("%s at n=%d, in the virtual GPU: %v", kernel, n, err)
}

// Limits of the emulation in a cell: MaxN in full; sampled up to MaxSampledN (A and B as drawn,
// for the check, the kernel's copies of them and C: 20 bytes per element in float32, 320 MiB at
// 4096, besides the wave estimate's copy of C), running SampledBlocks blocks.
const (
	MaxSampledN   = 4096
	SampledBlocks = 8
)

// sample picks a run of k (SampledBlocks unless a request says fewer) consecutive blocks of grid in the order the hardware's block
// scheduler dispatches them (linear blockIdx, x fastest), from a start drawn uniformly (a run that
// passes the grid's last block goes on at block 0), or from block (0,0,0) when first is set (a
// trace of that block is wanted). Every block is drawn with the same probability, so counts scaled
// from the run are unbiased (ragged edge blocks, which do less, are drawn as often as they occur);
// and the run's blocks are neighbours in dispatch order, as the blocks resident together on a GPU
// are, so the cache model's L2 sees the data they share (vgpu/cache.go: the blocks' streams go to
// the L2 in dispatch order), where scattered blocks share almost none.
func sample(grid [3]int, rng *rand.Rand, first bool, k int) [][3]int {
	gx, gy := max(grid[0], 1), max(grid[1], 1)
	total := gx * gy * max(grid[2], 1)
	start := 0
	if !first {
		start = rng.IntN(total)
	}
	out := make([][3]int, 0, min(k, total))
	for j := range min(k, total) {
		i := (start + j) % total
		out = append(out, [3]int{i % gx, i / gx % gy, i / (gx * gy)})
	}
	return out
}

// launchInputs are one launch's matrices: a and b as drawn, rounded to the kernel's input
// precision and laid out as it reads them (p×p, padded with zeros), for the check, which reads
// them (aAt, bAt); and the buffers the kernel reads and writes, A and B copies of a and b. C
// starts poisoned at every size, emulated in full or sampled (vgpu.NewOutput: every byte
// vgpu.Poison, a NaN per entry, the bytes the GPU worker fills C with before its launches), so a
// kernel that accumulates into C without writing it first is wrong here as on a GPU, and its read
// of C is an uninitialised-read note.
type launchInputs struct {
	n, p    int
	a, b    []byte // never a kernel's: shared by the launches of a kept draw (seededInputs)
	kind    elements
	A, B, C *vgpu.Buffer
	elem    int // bytes of an element of C
}

// elements is how a precision's inputs are stored: size bytes each; put rounds values to the
// precision and writes them one after another, get reads one back (exactly).
type elements struct {
	size int
	put  func(x []byte, vs []float64)
	get  func(x []byte) float64
}

// elementsOf is precision's elements: float64 and float32 as IEEE binary64 and binary32, bf16 and
// f16 as 16-bit words (gpu/nvidia/matmul.cu's __nv_bfloat16 and __half); another precision as
// float32.
func elementsOf(precision string) elements {
	le := binary.LittleEndian
	switch precision {
	case "float64":
		return elements{8, func(x []byte, vs []float64) {
			for i, v := range vs {
				le.PutUint64(x[8*i:], math.Float64bits(v))
			}
		}, func(x []byte) float64 { return math.Float64frombits(le.Uint64(x)) }}
	case "bf16", "f16":
		to, from := gpu.BF16, gpu.FromBF16
		if precision == "f16" {
			to, from = gpu.F16, float16From
		}
		return elements{2, func(x []byte, vs []float64) {
			for i, v := range vs {
				le.PutUint16(x[2*i:], to(float32(v)))
			}
		}, func(x []byte) float64 { return float64(from(le.Uint16(x))) }}
	}
	return elements{4, func(x []byte, vs []float64) {
		for i, v := range vs {
			le.PutUint32(x[4*i:], math.Float32bits(float32(v)))
		}
	}, func(x []byte) float64 { return float64(math.Float32frombits(le.Uint32(x))) }}
}

// inputs draws A and B in [-1, 1) (numeric.Random, row by row: A's n² values, then B's) and lays
// them out for a kernel reading precision.
func inputs(rng *rand.Rand, n, p int, precision string) *launchInputs {
	in := &launchInputs{n: n, p: p, kind: elementsOf(precision)}
	row := make([]float64, n)
	draw := func() []byte {
		x, size := make([]byte, in.kind.size*p*p), in.kind.size
		for i := range n {
			numeric.Random(rng, row)
			in.kind.put(x[size*i*p:], row)
		}
		return x
	}
	in.a = draw()
	in.b = draw()
	in.buffers()
	return in
}

// buffers gives in its launch's buffers: A and B copies of a and b, C poisoned (p×p elements of
// 8 bytes for float64 inputs, else 4), and their shapes.
func (in *launchInputs) buffers() {
	p := in.p
	in.elem = 4
	if in.kind.size == 8 {
		in.elem = 8
	}
	in.A, in.B = &vgpu.Buffer{Name: "A", Data: slices.Clone(in.a)}, &vgpu.Buffer{Name: "B", Data: slices.Clone(in.b)}
	in.C = vgpu.NewOutput("C", in.elem*p*p, vgpu.Poisoned)
	in.A.Shape, in.B.Shape, in.C.Shape = matrixShape(in.A, p), matrixShape(in.B, p), matrixShape(in.C, p)
}

// aAt and bAt are A[i][k] and B[i][k] as drawn.
func (in *launchInputs) aAt(i, k int) float64 { return in.kind.get(in.a[in.kind.size*(i*in.p+k):]) }
func (in *launchInputs) bAt(i, k int) float64 { return in.kind.get(in.b[in.kind.size*(i*in.p+k):]) }

// matrixShape is the shape of the p×p matrix b for fault messages: its element's C++ type from its size
// (gpu/nvidia/matmul.cu: float, double, or a 16-bit __nv_bfloat16 or __half).
func matrixShape(b *vgpu.Buffer, p int) vgpu.Shape {
	elem := len(b.Data) / max(p*p, 1)
	types := map[int]string{2: "16-bit value", 4: "float", 8: "double"}
	return vgpu.Shape{Elem: elem, Type: types[elem], Rows: p, Cols: p}
}

// at reads C[i][j] (of the p×p launch) from the buffer without copying it.
func (in *launchInputs) at(i, j int) float64 {
	k := i*in.p + j
	if in.elem == 8 {
		return math.Float64frombits(binary.LittleEndian.Uint64(in.C.Data[8*k:]))
	}
	return float64(math.Float32frombits(binary.LittleEndian.Uint32(in.C.Data[4*k:])))
}

// result reads C's top-left n×n.
func (in *launchInputs) result() []float64 {
	n, p := in.n, in.p
	out := make([]float64, n*n)
	if in.elem == 8 {
		full := in.C.Float64s()
		for i := range n {
			copy(out[i*n:(i+1)*n], full[i*p:i*p+n])
		}
		return out
	}
	full := in.C.Float32s()
	for i := range n {
		for j := range n {
			out[i*n+j] = float64(full[i*p+j])
		}
	}
	return out
}

// checkAll compares all of C with gonum's float64 product.
func (in *launchInputs) checkAll(ctx context.Context) (float64, error) {
	n := in.n
	ref, a, b := make([]float64, n*n), make([]float64, n*n), make([]float64, n*n)
	for i := range n {
		for k := range n {
			a[i*n+k], b[i*n+k] = in.aAt(i, k), in.bAt(i, k)
		}
	}
	if err := kernels.Gonum(ctx, ref, a, b, n, n, n, kernels.Options{}); err != nil {
		return 0, err
	}
	c := in.result()
	if x, ok := nonFinite(c, all(len(c))); ok {
		return x, nil
	}
	return numeric.RelFrobenius(c, ref), nil
}

// maxChecked bounds the entries a sampled launch's check recomputes (n multiply-adds each).
const maxChecked = 4096

// checkWritten compares entries of C that the sampled blocks wrote (written), up to maxChecked of
// them drawn at random, with float64 dot products, and returns the relative error over them and how
// many there were.
func (in *launchInputs) checkWritten(ctx context.Context, rng *rand.Rand) (float64, int, error) {
	written := in.written()
	rng.Shuffle(len(written), func(x, y int) { written[x], written[y] = written[y], written[x] })
	written = written[:min(len(written), maxChecked)]
	want, err := in.dots(ctx, written)
	if err != nil {
		return 0, 0, err
	}
	var diff, norm float64
	for c, e := range written {
		g := in.at(e[0], e[1])
		diff += (g - want[c]) * (g - want[c])
		norm += want[c] * want[c]
	}
	if norm == 0 {
		return math.Sqrt(diff), len(written), nil
	}
	return math.Sqrt(diff / norm), len(written), nil
}

// written is the entries (i, j) of C's top-left n×n that a kernel wrote, row by row: those whose
// bytes are not the poison's, and those that are but which a store wrote (C's written marks:
// vgpu.Buffer.WrittenAny), so that a NaN a kernel wrote is checked, not taken for the poison. Two
// float32 entries of poison that no store touched (one 8-byte word) are passed over at once, the
// most of C a sampled launch leaves.
func (in *launchInputs) written() [][2]int {
	var out [][2]int
	e := in.elem
	for i := range in.n {
		base := e * i * in.p
		row := in.C.Data[base : base+e*in.n]
		for j := 0; j < in.n; j++ {
			if e == 4 && j+1 < in.n && binary.LittleEndian.Uint64(row[4*j:]) == math.MaxUint64 && !in.C.WrittenAny(base+4*j, 8) {
				j++
				continue
			}
			poison := binary.LittleEndian.Uint32(row[4*j:]) == math.MaxUint32
			if e == 8 {
				poison = binary.LittleEndian.Uint64(row[8*j:]) == math.MaxUint64
			}
			if !poison || in.C.WrittenAny(base+e*j, e) {
				out = append(out, [2]int{i, j})
			}
		}
	}
	return out
}

// dots returns the float64 products (A·B)[i][j] of the entries (i, j), each summed in k order.
// The entries are taken column by column, so that each column of B is gathered once, up to
// gathered columns at a time (a walk down one column touches a cache line and a page per element;
// neighbouring columns share them), and up to four of a column's entries at a time (dot4), whose
// four sums, each in k order, do not wait on one another.
func (in *launchInputs) dots(ctx context.Context, entries [][2]int) ([]float64, error) {
	n := in.n
	order := make([]int, len(entries))
	for c := range order {
		order[c] = c
	}
	slices.SortFunc(order, func(x, y int) int { return entries[x][1] - entries[y][1] })
	want := make([]float64, len(entries))
	rows := map[int][]float64{} // A's rows, read once each (the entries of a run of blocks share few)
	row := func(x int) []float64 {
		i := entries[order[x]][0]
		r, ok := rows[i]
		if !ok {
			r = make([]float64, n)
			for k := range r {
				r[k] = in.aAt(i, k)
			}
			rows[i] = r
		}
		return r
	}
	cols := make([][]float64, gathered)
	for c := range cols {
		cols[c] = make([]float64, n)
	}
	for x := 0; x < len(order); {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		var js, ends []int // the next (up to) gathered columns, and where each one's entries end in order
		for end := x; end < len(order) && len(js) < len(cols); {
			j := entries[order[end]][1]
			for end < len(order) && entries[order[end]][1] == j {
				end++
			}
			js, ends = append(js, j), append(ends, end)
		}
		in.gatherColumns(js, cols[:len(js)])
		for c, end := range ends {
			for ; x < end; x += min(4, end-x) {
				var four [4][]float64 // past the column's last entry: that entry again
				for d := range four {
					four[d] = row(min(x+d, end-1))
				}
				s := dot4(four, cols[c])
				for d := range min(4, end-x) {
					want[order[x+d]] = s[d]
				}
			}
		}
	}
	return want, nil
}

// gathered is how many of B's columns dots gathers in one walk down B (2 MiB of float64s at n = 4096).
const gathered = 64

// gatherColumns reads B's columns js into cols, row by row.
func (in *launchInputs) gatherColumns(js []int, cols [][]float64) {
	for k := range in.n {
		for c, j := range js {
			cols[c][k] = in.bAt(k, j)
		}
	}
}

// dot4 is the dot products of each of rows with col, each summed in k order.
func dot4(rows [4][]float64, col []float64) [4]float64 {
	var s0, s1, s2, s3 float64
	r0, r1, r2, r3 := rows[0][:len(col)], rows[1][:len(col)], rows[2][:len(col)], rows[3][:len(col)]
	for k, c := range col {
		s0 += r0[k] * c
		s1 += r1[k] * c
		s2 += r2[k] * c
		s3 += r3[k] * c
	}
	return [4]float64{s0, s1, s2, s3}
}

// nonFinite is NaN if an entry of got at which is NaN, else +Inf if one is infinite (ok: the error
// is that); the output's error is then not a number a learner can read as one.
func nonFinite(got []float64, which []int) (float64, bool) {
	inf := false
	for _, i := range which {
		switch g := got[i]; {
		case math.IsNaN(g):
			return math.NaN(), true
		case math.IsInf(g, 0):
			inf = true
		}
	}
	if inf {
		return math.Inf(1), true
	}
	return 0, false
}

// all is the indices 0…n−1.
func all(n int) []int {
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	return idx
}

// float16From widens IEEE binary16 bits to float32 exactly.
func float16From(b uint16) float32 { return float16.Frombits(b).Float32() }

// theoretical is the occupancy of entry of mod launched with blocks of block threads and dynShared
// bytes of dynamic shared memory on g (gpumodel.LaunchOccupancy). own says mod is the embedded PTX of
// the table's kernels, whose registers ptxas reported for g's architecture (nvidia.RungResources,
// generated), or else were measured (measuredRegisters); a learner's kernel's are not known here
// (cuda cells pass ptxas's own through the occupancy they show).
func theoretical(mod *vgpu.Module, entry string, own bool, block [3]int, dynShared int, g gpumodel.GPU) gpumodel.Occupancy {
	regs := 0
	if r, ok := nvidia.RungResources(entry, g.CC); own && ok {
		regs = r.Registers
	} else if r, ok := measuredRegisters(entry); own && ok {
		regs = r
	}
	return gpumodel.LaunchOccupancy(mod, entry, regs, block, dynShared, g)
}

// measuredRegisters is the registers per thread measured for the table's kernel whose entry is
// entry (cuda.Kernel.Registers: its Entry, compiled for an H100).
func measuredRegisters(entry string) (int, bool) {
	for _, k := range nvidia.Kernels() {
		if k.Entry == entry && k.Registers > 0 {
			return k.Registers, true
		}
	}
	return 0, false
}

// watchFootprints sets cfg's cache model, for a sampled launch of req, to gather its blocks'
// footprints for the wave estimate (gpumodel.WatchFootprints) and returns them; nil, cfg unchanged,
// for a launch run in full or without a cache model, and for one whose sample a cell cut for time
// (req.SampleBlocks, from 1 to SampledBlocks): its probe block would cost one block more than
// priced, so it keeps the run's estimate.
func watchFootprints(req Request, cfg *vgpu.LaunchConfig) *gpumodel.Footprints {
	if req.SampleBlocks >= 1 && req.SampleBlocks <= SampledBlocks {
		return nil
	}
	return gpumodel.WatchFootprints(cfg)
}
