// Package emulate runs a GEMM kernel's real PTX in the virtual GPU (package vgpu) as an experiment:
// fresh random inputs, one launch, the result checked against a float64 reference, the counts the
// hardware would produce, and a time modelled from a datasheet GPU. Emulated and modelled, never
// measured: callers label it so.
package emulate

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/gpuplayground/playground/gpu"
	"github.com/gpuplayground/playground/kernels"
	"github.com/gpuplayground/playground/kernels/cuda"
	"github.com/gpuplayground/playground/kernels/simt"
	"github.com/gpuplayground/playground/vgpu"
	"github.com/x448/float16"
)

// Arch is the virtual architecture the virtual GPU runs: the embedded PTX's compute_80 (Ampere
// and newer), whose tensor-core kernel takes BF16 inputs.
const Arch = 80

// Request is one launch of a C = A·B kernel (row-major n×n, launched as
// kernel(A, B, C, M, N, K)) in the virtual GPU.
type Request struct {
	// Kernel names a row of the GPU kernel table (kernels/cuda/ladder.go), run from the embedded PTX
	// with the row's launch shape; or is "custom" with PTX, Entry, Grid and Block set.
	Kernel string
	PTX    string
	Entry  string
	Grid   [3]int
	Block  [3]int
	// N is the matrices' size; DType "float32" or "float64" (the table's own kernels take float32).
	N     int
	DType string
	// GPU is the datasheet the modelled time uses.
	GPU simt.GPU
}

// Result is one emulated launch.
type Result struct {
	Kernel string
	N      int
	DType  string
	// Precision is what the inputs were rounded to ("float32", "bf16", …).
	Precision string
	// RelError is ‖C − C_ref‖_F / ‖C_ref‖_F against float64; OK is within the precision's tolerance.
	RelError float64
	OK       bool
	Counts   vgpu.Counts
	// Model is the modelled time on GPU (datasheet), from the counts' FLOPs and DRAM bytes.
	Model simt.Model
	GPU   string
	// EmulationSeconds is how long the emulation took here (measured, of the emulator).
	EmulationSeconds float64
}

// MaxN is the largest n the virtual GPU runs in full for a cell: at about 100 million thread
// instructions per second per core (docs/benchmarks.md), n = 512 takes a few seconds on 2 cores.
const MaxN = 512

// Emulatable reports whether kernel is a GPU kernel of the table with PTX to run.
func Emulatable(kernel string) bool {
	row, ok := cuda.LookupKernel(kernel)
	return ok && row.Entry != ""
}

// Estimate is the estimated time of one emulation of kernel (a row of the table, or "custom") at size
// n (0 above MaxN, where none runs), from the rates measured on this machine for the virtual GPU's
// ladder kernels (kernels.Rates.SIMTSeconds, keyed by the ladder name: cuda-naive → naive); a
// learner's kernel is priced as the naive kernel, the slowest.
func Estimate(kernel string, n int) time.Duration {
	if n > MaxN {
		return 0
	}
	short := strings.TrimPrefix(kernel, "cuda-")
	sec := kernels.CurrentRates().SIMTSeconds(short, n)
	if sec == 0 {
		sec = kernels.CurrentRates().SIMTSeconds("naive", n)
	}
	return time.Duration(sec * float64(time.Second))
}

var (
	modules   sync.Map // arch → *vgpu.Module of the embedded PTX
	parseOnce sync.Mutex
)

// ownModule parses the embedded PTX of matmul.cu for Arch, once.
func ownModule() (*vgpu.Module, error) {
	if m, ok := modules.Load(Arch); ok {
		return m.(*vgpu.Module), nil
	}
	parseOnce.Lock()
	defer parseOnce.Unlock()
	if m, ok := modules.Load(Arch); ok {
		return m.(*vgpu.Module), nil
	}
	src, err := cuda.PTX.ReadFile(cuda.PTXName("matmul.cu", Arch))
	if err != nil {
		return nil, err
	}
	m, err := vgpu.ParseModule(string(src))
	if err != nil {
		return nil, err
	}
	modules.Store(Arch, m)
	return m, nil
}

// Run emulates req: inputs in [-1, 1), the launch, the check and the model. A fault the sanitizer
// finds, an unsupported instruction or a launch error is the error (a *vgpu.Fault or
// *vgpu.UnsupportedError for callers to show as they are).
func Run(ctx context.Context, req Request) (Result, error) {
	n := req.N
	res := Result{Kernel: req.Kernel, N: n, DType: req.DType, Precision: req.DType, GPU: req.GPU.Name}
	var mod *vgpu.Module
	var entry string
	var grid, block [3]int
	padded := n
	switch {
	case req.Kernel == "custom":
		m, err := vgpu.ParseModule(req.PTX)
		if err != nil {
			return res, err
		}
		mod, entry, grid, block = m, req.Entry, req.Grid, req.Block
	default:
		row, ok := cuda.LookupKernel(req.Kernel)
		if !ok || row.Entry == "" {
			return res, fmt.Errorf("%s has no PTX to emulate", req.Kernel)
		}
		m, err := ownModule()
		if err != nil {
			return res, err
		}
		l := row.LaunchFor(n, Arch, req.DType)
		mod, entry, grid, block, padded, res.Precision = m, l.Entry, l.Grid, l.Block, l.N, l.Precision
	}
	rng := rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	a, b := make([]float64, n*n), make([]float64, n*n)
	kernels.Random(rng, a)
	kernels.Random(rng, b)
	A, B, C, elem := buffers(a, b, n, padded, res.Precision)
	start := time.Now()
	counts, err := vgpu.Launch(ctx, mod, entry, vgpu.LaunchConfig{Grid: grid, Block: block,
		Params:  []vgpu.Arg{vgpu.Ptr(A), vgpu.Ptr(B), vgpu.Ptr(C), vgpu.S32(int32(padded)), vgpu.S32(int32(padded)), vgpu.S32(int32(padded))},
		Buffers: []*vgpu.Buffer{A, B, C}})
	res.EmulationSeconds = time.Since(start).Seconds()
	if err != nil {
		return res, err
	}
	res.Counts = counts
	ref := make([]float64, n*n)
	if err := kernels.Gonum(ctx, ref, rounded(a, res.Precision), rounded(b, res.Precision), n, n, n, kernels.Options{}); err != nil {
		return res, err
	}
	got := unpad(C, n, padded, elem)
	res.RelError = kernels.RelFrobenius(got, ref)
	if math.IsNaN(res.RelError) || math.IsInf(res.RelError, 0) {
		res.RelError = math.MaxFloat64
	}
	res.OK = res.RelError <= gpu.Tolerance(res.Precision)
	res.Model = simt.Roofline(float64(counts.FLOPs), float64(32*(counts.LoadSectors+counts.StoreSectors)), req.GPU)
	return res, nil
}

// buffers lays out A and B padded to p×p in the precision the kernel reads, and C.
func buffers(a, b []float64, n, p int, precision string) (A, B, C *vgpu.Buffer, elem int) {
	pad32 := func(x []float64) []float32 {
		out := make([]float32, p*p)
		for i := range n {
			for j := range n {
				out[i*p+j] = float32(x[i*n+j])
			}
		}
		return out
	}
	switch precision {
	case "float64":
		pad64 := func(x []float64) []float64 {
			out := make([]float64, p*p)
			for i := range n {
				copy(out[i*p:i*p+n], x[i*n:(i+1)*n])
			}
			return out
		}
		return vgpu.Float64Buffer("A", pad64(a)), vgpu.Float64Buffer("B", pad64(b)), vgpu.NewBuffer("C", 8*p*p), 8
	case "bf16", "f16":
		conv := gpu.BF16
		if precision == "f16" {
			conv = gpu.F16
		}
		to16 := func(x []float32) []uint16 {
			out := make([]uint16, len(x))
			for i, v := range x {
				out[i] = conv(v)
			}
			return out
		}
		return vgpu.Uint16Buffer("A", to16(pad32(a))), vgpu.Uint16Buffer("B", to16(pad32(b))), vgpu.NewBuffer("C", 4*p*p), 4
	}
	return vgpu.Float32Buffer("A", pad32(a)), vgpu.Float32Buffer("B", pad32(b)), vgpu.NewBuffer("C", 4*p*p), 4
}

// rounded returns x as the kernel sees it: rounded to its input precision, in float64.
func rounded(x []float64, precision string) []float64 {
	out := make([]float64, len(x))
	for i, v := range x {
		f := float32(v)
		switch precision {
		case "float64":
			out[i] = v
			continue
		case "bf16":
			f = gpu.FromBF16(gpu.BF16(f))
		case "f16":
			f = float16From(gpu.F16(f))
		}
		out[i] = float64(f)
	}
	return out
}

// unpad reads the top-left n×n of the p×p result.
func unpad(C *vgpu.Buffer, n, p, elem int) []float64 {
	out := make([]float64, n*n)
	if elem == 8 {
		full := C.Float64s()
		for i := range n {
			copy(out[i*n:(i+1)*n], full[i*p:i*p+n])
		}
		return out
	}
	full := C.Float32s()
	for i := range n {
		for j := range n {
			out[i*n+j] = float64(full[i*p+j])
		}
	}
	return out
}

// float16From widens IEEE binary16 bits to float32 exactly.
func float16From(b uint16) float32 { return float16.Frombits(b).Float32() }
