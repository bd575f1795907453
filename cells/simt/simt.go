// Package simt is the `simt` cell kind: the GPU ladder's kernels (matmul.cu's real PTX, embedded)
// run in the virtual GPU (vgpu, through vgpurun), which counts what the hardware would (warp
// requests, 32-byte sectors, coalescing, bank conflicts, barriers, FLOPs), with a time modelled from
// a datasheet GPU and, where the server has a GPU, the real kernel measured beside it. With
// watch: true it replays block (0,0)'s real global-memory warp instructions.
package simt

import (
	"context"
	_ "embed"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/gpuplayground/playground/cells"
	"github.com/gpuplayground/playground/chart"
	"github.com/gpuplayground/playground/gpu"
	"github.com/gpuplayground/playground/gpu/nvidia"
	"github.com/gpuplayground/playground/gpumodel"
	"github.com/gpuplayground/playground/vgpu"
	"github.com/gpuplayground/playground/vgpurun"
)

// Spec is a parsed `simt` cell, which runs the ladder in the virtual GPU:
//
//	kernels: [naive, coalesced, smem, regblock]   # emulated versions of the cuda-* kernels
//	n: 128                                        # square n×n×n, at most 512
//	gpu: H100 SXM                                 # whose datasheet the modelled time uses
//	block: [32, 8]                                # naive and coalesced (default as in matmul.cu)
//	watch: true                                   # n ≤ 32: frames of the first kernel's warps
type Spec struct {
	Kernels []string
	N       int
	GPU     gpumodel.GPU
	// Block, if set, is [x, y] threads per block for the naive and coalesced kernels.
	Block [2]int
	Watch bool
	// Show names columns of the counts table shown beside its primary ones (cells.ParseShow).
	Show []string
}

// MaxWatchN is the largest n a simt cell can watch, and MaxWatchFrames the frames it sends.
const (
	MaxWatchN      = 32
	MaxWatchFrames = 300
)

// WarpFrame is one global-memory warp instruction of block (0,0) of a watched kernel: which element
// of which matrix each active lane touched, and in which of the instruction's 32-byte sectors.
type WarpFrame struct {
	Kernel string `json:"kernel"`
	// N is the matrices' size (n×n).
	N    int `json:"n"`
	Warp int `json:"warp"`
	// Kind is "global load" or "global store"; Matrix is "A", "B" or "C".
	Kind   string `json:"kind"`
	Matrix string `json:"matrix"`
	// Lanes lists [lane, row, col, sector] per active lane; sector numbers the instruction's distinct
	// sectors from 0.
	Lanes   [][4]int `json:"lanes"`
	Sectors int      `json:"sectors"`
}

// MaxN bounds a simt cell's n: the virtual GPU runs every block up to vgpurun.MaxN.
const MaxN = vgpurun.MaxN

type source struct {
	cells.Common `yaml:",inline"`
	Kernels      cells.At[[]cells.At[string]] `yaml:"kernels"`
	N            cells.At[int]                `yaml:"n"`
	GPU          cells.At[string]             `yaml:"gpu"`
	Block        cells.At[[]int]              `yaml:"block"`
	Watch        bool                         `yaml:"watch"`
	Show         cells.At[[]cells.At[string]] `yaml:"show"`
}

// Parse reads a `simt` cell. Errors are *cells.SpecError values with line numbers.
func Parse(src string) (Spec, error) {
	var y source
	if err := cells.Decode(src, &y); err != nil {
		return Spec{}, err
	}
	s := Spec{GPU: gpumodel.GPUs[0], N: y.N.V, Watch: y.Watch}
	if y.N.Line > 0 && (s.N < 1 || s.N > MaxN) {
		return Spec{}, cells.Errorf(y.N.Line, "n is %d; the virtual GPU takes 1 to %d here (it runs every thread on the CPU)", s.N, MaxN)
	}
	if b := y.Block.V; y.Block.Line > 0 {
		if len(b) < 1 || len(b) > 2 || b[0] < 1 || (len(b) == 2 && b[1] < 1) {
			return Spec{}, cells.Errorf(y.Block.Line, "block is [x, y] with positive sizes")
		}
		s.Block = [2]int{b[0], 1}
		if len(b) == 2 {
			s.Block[1] = b[1]
		}
		if s.Block[0]*s.Block[1] > 1024 {
			return Spec{}, cells.Errorf(y.Block.Line, "a block of %d threads is too many: CUDA allows 1024", s.Block[0]*s.Block[1])
		}
	}
	if y.GPU.Line > 0 {
		g, err := gpumodel.LookupGPU(y.GPU.V)
		if err != nil {
			return Spec{}, cells.Errorf(y.GPU.Line, "%v", err)
		}
		s.GPU = g
	}
	if len(y.Kernels.V) == 0 || s.N == 0 {
		return Spec{}, &cells.SpecError{Line: 1, Msg: "a simt cell needs `kernels: [...]` and `n: N`"}
	}
	if len(y.Kernels.V) > maxKernels {
		return Spec{}, cells.Errorf(y.Kernels.Line, "%d kernels; a simt cell emulates at most %d", len(y.Kernels.V), maxKernels)
	}
	for _, k := range y.Kernels.V {
		row, ok := nvidia.LookupRow("cuda-" + k.V)
		if !ok || row.Entry == "" {
			return Spec{}, cells.Errorf(k.Line, "unknown kernel %q; the virtual GPU runs the kernel table's %s", k.V, strings.Join(Kernels(), ", "))
		}
		if s.Block != ([2]int{}) && !row.AnyBlock {
			return Spec{}, cells.Errorf(y.Block.Line, "block applies to kernels with one thread per entry of C (naive, coalesced); %s's block is fixed in matmul.cu", k.V)
		}
		s.Kernels = append(s.Kernels, k.V)
	}
	var err error
	if s.Show, err = cells.ParseShow(y.Show, cells.Table{Columns: countsColumns(s.GPU.Name)}); err != nil {
		return Spec{}, err
	}
	if s.Watch && s.N > MaxWatchN {
		return Spec{}, &cells.SpecError{Line: 1, Msg: fmt.Sprintf("watch shows n ≤ %d (every element on screen); use a smaller n or drop watch", MaxWatchN)}
	}
	return s, nil
}

// maxKernels bounds a cell's kernel list (each is emulated in full).
const maxKernels = 16

// Result is one emulated kernel: what the hardware would count, whether the result is right, and
// a modelled time for the spec's GPU. The counts table shows it.
type Result struct {
	Kernel string `json:"kernel"`
	N      int    `json:"n"`
	FLOPs  int64  `json:"flops"`
	// GlobalRequests are warp-level global loads and stores; Sectors the 32-byte sectors they move;
	// BytesMoved = 32 × Sectors (no caches); Coalescing = bytes used / bytes moved.
	GlobalRequests int64   `json:"global_requests"`
	Sectors        int64   `json:"sectors"`
	BytesMoved     int64   `json:"bytes_moved"`
	Coalescing     float64 `json:"coalescing"`
	// SharedWavefronts are the shared-memory passes (l1tex__data_pipe_lsu_wavefronts_mem_shared), bank
	// conflicts included.
	SharedWavefronts int64 `json:"shared_wavefronts"`
	BankConflicts    int64 `json:"bank_conflicts"`
	Barriers         int64 `json:"barriers"`
	// Correct reports C equal to gonum's product within float32 tolerance.
	Correct bool `json:"correct"`
	// GPU, ModelledSeconds and Bound are the model (gpumodel.Model: the largest of the compute,
	// DRAM, L2, L1/shared-memory, issue and atomics terms) from GPU's gpumodel. Modelled, never
	// measured.
	GPU             string  `json:"gpu"`
	ModelledSeconds float64 `json:"modelled_seconds"`
	Bound           string  `json:"bound"`
	// Registers per thread (ptxas's for GPU's architecture, generated; 0: unknown) and Occupancy, the
	// theoretical occupancy as the tables show it ("25% (registers)"), on GPU.
	Registers int    `json:"registers"`
	Occupancy string `json:"occupancy"`
	// SearchSeconds and SearchBound, for a candidate of the FP32 tile search (nvidia.TuneCandidates)
	// on a GPU the search modelled, are what go generate recorded at nvidia.TuneN (modelled, sampled
	// blocks); 0 and "" otherwise.
	SearchSeconds float64 `json:"search_seconds,omitempty"`
	SearchBound   string  `json:"search_bound,omitempty"`
	// EmulationSeconds is how long the emulation took on this CPU (measured).
	EmulationSeconds float64 `json:"emulation_seconds"`
	// MeasuredSeconds, where the server has a GPU, is the median time of MeasuredKernel (the cuda-*
	// kernel of matmul.cu, with its own launch shape) at the same n on MeasuredOn.
	MeasuredSeconds float64 `json:"measured_seconds,omitempty"`
	MeasuredKernel  string  `json:"measured_kernel,omitempty"`
	MeasuredOn      string  `json:"measured_on,omitempty"`
	// Notes are the sanitizer's findings that did not stop the launch (uninitialised reads).
	Notes []string `json:"notes,omitempty"`
}

// searched is the tile search's record of kernel (a row name) on gpu, if it is a candidate the
// search modelled there (nvidia.TuneRecords); zero otherwise.
func searched(kernel, gpu string) nvidia.TuneRecord {
	row, ok := nvidia.LookupRow(kernel)
	for _, r := range nvidia.TuneRecords() {
		if ok && r.Entry == row.Entry && r.GPU == gpu {
			return r
		}
	}
	return nvidia.TuneRecord{}
}

// Kernels are the ladder kernels a simt cell may name: the own kernels of the GPU kernel table
// (gpu/nvidia/ladder.go) without their "cuda-" prefix (vgpurun.Ladder), then the FP32 tile search's
// candidates not in it ("tile-128x64x16-w32x32").
func Kernels() []string {
	out := vgpurun.Ladder()
	for _, k := range nvidia.LaunchRows()[len(nvidia.Kernels()):] {
		out = append(out, strings.TrimPrefix(k.Name, "cuda-"))
	}
	return out
}

// Emulate runs each kernel of s in the virtual GPU from matmul.cu's PTX and passes each result to
// emit. With s.Watch, the first kernel's global warp instructions in block (0,0) go to watch first
// (at most MaxWatchFrames; nil watch skips them).
func Emulate(ctx context.Context, s Spec, emit func(Result) error, watch func(WarpFrame)) error {
	n := s.N
	for i, name := range s.Kernels {
		req := vgpurun.Request{Kernel: "cuda-" + name, N: n, DType: "float32", GPU: s.GPU, BlockXY: s.Block}
		if s.Watch && watch != nil && i == 0 {
			req.Trace, req.TraceLimit = watcher(name, n, watch), MaxWatchFrames
		}
		res, err := vgpurun.Run(ctx, req)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		c := res.Counts
		var notes []string
		for _, f := range res.Notes {
			notes = append(notes, f.Error())
		}
		search := searched(req.Kernel, s.GPU.Name)
		if err := emit(Result{
			Kernel: name, N: n, FLOPs: c.FLOPs, Registers: res.Occupancy.Registers, Occupancy: res.Occupancy.Text,
			SearchSeconds: search.Seconds, SearchBound: search.Bound,
			GlobalRequests: c.GlobalLoadRequests + c.GlobalStoreRequests, Sectors: c.LoadSectors + c.StoreSectors,
			BytesMoved: 32 * (c.LoadSectors + c.StoreSectors), Coalescing: c.Coalescing(),
			SharedWavefronts: c.SharedWavefronts, BankConflicts: c.BankConflicts(), Barriers: c.Barriers,
			Correct: res.OK, GPU: s.GPU.Name, ModelledSeconds: res.Model.Seconds, Bound: res.Model.Bound,
			EmulationSeconds: res.EmulationSeconds, Notes: notes,
		}); err != nil {
			return err
		}
	}
	return nil
}

// matrices names the launch's buffers in order: kernel(A, B, C, …).
var matrices = [3]string{"A", "B", "C"}

// watcher turns block (0,0)'s global warp instructions into frames: per active lane, the element
// of A, B or C it touched and which of the instruction's distinct sectors (numbered from 0) held it.
func watcher(kernel string, n int, watch func(WarpFrame)) func(vgpu.TraceEvent) {
	row, _ := nvidia.LookupRow("cuda-" + kernel)
	p, _, _ := row.Shape(n) // the matrices as launched: padded for the tensor-core kernel
	return func(ev vgpu.TraceEvent) {
		kind := "global load"
		if ev.Store {
			kind = "global store"
		}
		f := WarpFrame{Kernel: kernel, N: n, Warp: ev.Warp, Kind: kind, Sectors: ev.Sectors}
		sectors := map[uint64]int{}
		for _, l := range ev.Lanes {
			if l.Buffer < 0 || l.Buffer > 2 {
				continue
			}
			sec := l.Address / 32
			if _, seen := sectors[sec]; !seen {
				sectors[sec] = len(sectors)
			}
			elem := 4
			if l.Buffer < 2 && row.Precision != "" && row.Precision != "float32" {
				elem = 2 // 16-bit inputs
			}
			idx := int(l.Offset) / elem
			f.Matrix = matrices[l.Buffer]
			f.Lanes = append(f.Lanes, [4]int{l.Lane, idx / p, idx % p, sectors[sec]})
		}
		watch(f)
	}
}

//go:embed render.js
var script string

// New returns the simt kind for env.
func New(env cells.Env) cells.Kind {
	return cells.Define(cells.Def[Spec]{Name: "simt", Script: script, Parse: Parse,
		Run: func(s Spec, _ cells.Cell) cells.Run { return &run{env: env, spec: s} }})
}

type run struct {
	env  cells.Env
	spec Spec
}

// Estimate prices each kernel's emulation at the virtual GPU's rate for that kernel measured on this
// machine (estimate.Rates.SIMTSeconds, from package calibrate; the defaults before), plus the inputs,
// the float64 reference and each result's row and chart.
func (r *run) Estimate() time.Duration {
	rates := r.env.Rates.Get()
	n := r.spec.N
	s := rates.FillSeconds(2*n*n) + rates.KernelSeconds("gonum", n, "float64", 0)
	for _, k := range r.spec.Kernels {
		s += rates.SIMTSeconds(k, n) + rates.PointSeconds
	}
	return time.Duration(s * float64(time.Second))
}

// countsColumns are the counts table's columns, its time modelled on gpu; where the server has a GPU,
// Run adds the measured time. Primary: what the lesson "Why coalescing matters" compares (requests,
// sectors, coalescing, bank conflicts, the time); docs/vgpu-metrics.md names the Nsight Compute
// metric each count mirrors.
func countsColumns(gpu string) []cells.Column {
	return []cells.Column{{Label: "kernel", Primary: true, Key: true}, {Label: "n", Primary: true, Key: true}, {Label: "FLOPs", Unit: "M"},
		{Label: "global requests", Primary: true}, {Label: "sectors", Primary: true},
		{Label: "moved", Unit: "MB"}, {Label: "coalescing", Unit: "%", Primary: true},
		{Label: "shared wavefronts [l1tex__data_pipe_lsu_wavefronts_mem_shared]"},
		{Label: "bank conflicts [l1tex__data_bank_conflicts_pipe_lsu_mem_shared]", Primary: true}, {Label: "barriers (all blocks)"},
		{Label: "registers"}, {Label: "occupancy"},
		{Label: "check", Primary: true}, {Label: fmt.Sprintf("modelled time on %s (bound)", gpu), Unit: "µs", Primary: true},
		{Label: fmt.Sprintf("tile search (modelled at n = %d on %s by go generate; bound)", nvidia.TuneN, gpu), Unit: "µs"}, {Label: "emulation", Unit: "s"}}
}

// Run emulates each kernel (and, where the server has a GPU, measures the real cuda-* kernel at the
// same n beside it), emitting a counts table row and the counts chart per kernel.
func (r *run) Run(ctx context.Context, e cells.Emitter) error {
	done := 0
	var all []chart.KernelCounts
	dev := r.env.GPU.Device()
	measure := r.env.GPU.Unavailable() == "" && dev != nil // a GPU: measure the real kernel beside the model
	cols := countsColumns(r.spec.GPU.Name)
	if measure {
		cols = append(cols, cells.Column{Label: fmt.Sprintf("measured on %s (matmul.cu's launch shape)", dev.Name), Unit: "µs", Primary: true})
	}
	e.Table(cells.Table{ID: "counts", Caption: "Counts of matmul.cu's PTX in the virtual GPU, emulated (time column: modelled from the datasheet, not measured)", Columns: cols}.Show(r.spec.Show))
	return Emulate(ctx, r.spec, func(res Result) error {
		done++
		if measure {
			name := "cuda-" + res.Kernel
			got, err := r.env.GPU.Measure(ctx, gpu.Request{Kernel: name, N: res.N, DType: "float32", Repeats: 5}, nil)
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if err != nil { // the kernel's note; its row keeps the emulated counts, the run goes on
				e.Note("error", fmt.Sprintf("%s at n=%d on the GPU: %v", name, res.N, err))
				got.Seconds = math.NaN()
			}
			res.MeasuredSeconds, res.MeasuredKernel, res.MeasuredOn = got.Seconds, name, dev.Name
		}
		check := "ok"
		if !res.Correct {
			check = "WRONG"
		}
		values := []any{res.Kernel, res.N, float64(res.FLOPs) / 1e6, res.GlobalRequests, res.Sectors, float64(res.BytesMoved) / 1e6,
			res.Coalescing * 100, res.SharedWavefronts, res.BankConflicts, res.Barriers, res.Registers, res.Occupancy, check,
			fmt.Sprintf("%.3g (%s)", res.ModelledSeconds*1e6, res.Bound), searchCell(res), res.EmulationSeconds}
		if measure {
			if math.IsNaN(res.MeasuredSeconds) {
				values = append(values, "not measured (see the note)")
			} else {
				values = append(values, res.MeasuredSeconds*1e6)
			}
		}
		e.Progress(done, len(r.spec.Kernels))
		e.Row(cells.Row{Table: "counts", Values: values, Bad: !res.Correct})
		for _, note := range res.Notes {
			e.Note("warning", fmt.Sprintf("%s at n=%d, in the virtual GPU: %s", res.Kernel, res.N, note))
		}
		all = append(all, chart.KernelCounts{Kernel: res.Kernel, N: res.N, BytesMoved: res.BytesMoved, FLOPs: res.FLOPs})
		counts := append([]chart.KernelCounts(nil), all...)
		e.Chart(func() (string, error) { return chart.Counts(counts) })
		return nil
	}, func(f WarpFrame) { e.Frames(f) })
}

// searchCell is the tile search's column: its record at nvidia.TuneN, or "—" for a kernel it did not
// model on this GPU.
func searchCell(res Result) string {
	if res.SearchSeconds <= 0 {
		return "—"
	}
	return fmt.Sprintf("%.4g (%s)", res.SearchSeconds*1e6, res.SearchBound)
}

// Exclusive is true only where the server has a GPU, on which the run measures the real kernels
// beside the emulation; the virtual GPU alone times nothing (cells.Exclusive).
func (r *run) Exclusive() bool {
	return r.env.GPU != nil && r.env.GPU.Unavailable() == "" && r.env.GPU.Device() != nil
}
