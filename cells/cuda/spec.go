// Package cuda is the `cuda` cell kind: a learner's own CUDA C++ kernel, compiled to PTX by NVRTC in
// the GPU worker (Show PTX), and where the server has a GPU timed as `custom` beside the kernels it is
// compared with.
package cuda

import (
	"errors"
	"fmt"
	"math"
	"regexp"

	"github.com/gpuplayground/playground/cells"
	"github.com/gpuplayground/playground/cells/matmul"
	"github.com/gpuplayground/playground/datasheet"
	"github.com/gpuplayground/playground/experiment"
	"github.com/gpuplayground/playground/kernels"
	kcuda "github.com/gpuplayground/playground/kernels/cuda"
)

// Spec is a parsed `cuda` cell: a YAML header, a line `---`, then the learner's CUDA C++. The
// kernel computes C = A·B for row-major n×n matrices and is launched as
// kernel(const T* A, const T* B, T* C, int M, int N, int K) with T float or double:
//
//	kernel: my_matmul                   # the extern "C" __global__ function to launch
//	block: [16, 16]                     # threads per block (x, y, z)
//	grid: ["ceil(n/16)", "ceil(n/16)"]  # blocks per grid, formulas in n (see Formula)
//	sizes: [256, 512]
//	dtype: float32                      # float32 | float64
//	repeats: 5
//	compare: [cublas]                   # other kernels timed alongside
//	gpu: T4                             # without a GPU: the datasheet the emulated times are modelled on
//	---
//	extern "C" __global__ void my_matmul(const float* A, const float* B, float* C, int M, int N, int K) { … }
type Spec struct {
	Kernel  string
	Block   [3]int
	Grid    Launch
	Sizes   []int
	DType   string
	Repeats int
	Compare []string
	// GPU, if the cell names one, is the datasheet GPU that emulated times are modelled on.
	GPU *datasheet.GPU
	// Source is the CUDA C++ after the `---` line; SourceLine is the cell line it starts on (1-based).
	Source     string
	SourceLine int
}

// MaxSourceBytes caps the kernel source below the `---` line.
const MaxSourceBytes = 32 << 10

// Launch limits from the CUDA C++ Programming Guide, "Compute Capabilities" (technical
// specifications table): at most 1024 threads per block, block z ≤ 64, grid y and z ≤ 65535.
const (
	maxThreadsPerBlock = 1024
	maxBlockZ          = 64
	maxGridX           = math.MaxInt32
	maxGridYZ          = 65535
)

var identifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

type source struct {
	cells.Common `yaml:",inline"`
	Kernel       cells.At[string]             `yaml:"kernel"`
	Block        cells.At[[]int]              `yaml:"block"`
	Grid         cells.At[[]cells.At[string]] `yaml:"grid"`
	Sizes        cells.At[[]cells.At[int]]    `yaml:"sizes"`
	DType        cells.At[string]             `yaml:"dtype"`
	Repeats      cells.At[int]                `yaml:"repeats"`
	Compare      cells.At[[]cells.At[string]] `yaml:"compare"`
	GPU          cells.At[string]             `yaml:"gpu"`
}

// Parse reads a `cuda` cell. available lists the kernels compare may name; lim bounds sizes as
// for matmul cells (and their number, and compare's, as matmul's lists). The grid formulas are
// parsed here, once, and checked for every size. Errors are *cells.SpecError values with cell line
// numbers.
func Parse(cell string, available []kernels.Kernel, lim experiment.Limits) (Spec, error) {
	header, src, srcLine, err := cells.SplitSource(cell, "cuda", "the kernel source", MaxSourceBytes)
	if err != nil {
		return Spec{}, err
	}
	s := Spec{DType: "float32", Repeats: matmul.DefaultRepeats, Block: [3]int{1, 1, 1}, Grid: Launch{Key: "grid", Src: [3]string{"1", "1", "1"}},
		Source: src, SourceLine: srcLine}
	var y source
	if err := cells.Decode(header, &y); err != nil {
		return Spec{}, err
	}
	if s.Kernel = y.Kernel.V; y.Kernel.Line > 0 && !identifier.MatchString(s.Kernel) {
		return Spec{}, cells.Errorf(y.Kernel.Line, "kernel %q is not a C function name", s.Kernel)
	}
	if y.Block.Line > 0 {
		if err := s.setBlock(y.Block.Line, y.Block.V); err != nil {
			return Spec{}, err
		}
	}
	if y.Grid.Line > 0 {
		if s.Grid, err = ParseLaunch("grid", y.Grid.Line, y.Grid.V); err != nil {
			return Spec{}, err
		}
	}
	if s.DType, err = matmul.DType(y.DType); err != nil {
		return Spec{}, err
	}
	if y.Repeats.Line > 0 {
		if s.Repeats = y.Repeats.V; s.Repeats < 1 || s.Repeats > matmul.MaxRepeats {
			return Spec{}, cells.Errorf(y.Repeats.Line, "repeats is %d; use 1 to %d", s.Repeats, matmul.MaxRepeats)
		}
	}
	if s.Kernel == "" {
		return Spec{}, &cells.SpecError{Line: 1, Msg: "the header needs `kernel: NAME`, the extern \"C\" __global__ function to launch"}
	}
	if err := checkSource(s.Source, s.SourceLine); err != nil {
		return Spec{}, err
	}
	if !regexp.MustCompile(`\b` + s.Kernel + `\s*\(`).MatchString(s.Source) {
		return Spec{}, &cells.SpecError{Line: s.SourceLine, Msg: fmt.Sprintf("the source below `---` has no function %s(…)", s.Kernel)}
	}
	if y.GPU.Line > 0 {
		g, err := datasheet.LookupGPU(y.GPU.V)
		if err != nil {
			return Spec{}, cells.Errorf(y.GPU.Line, "%v", err)
		}
		s.GPU = &g
	}
	if s.Compare, err = matmul.KernelNames(y.Compare, s.DType, available, false); err != nil {
		return Spec{}, err
	}
	// Sizes follow the matmul rules (limits, memory, duplicates); the learner's kernel runs on the GPU.
	if s.Sizes, err = matmul.Sizes(y.Sizes, s.DType, lim, experiment.AllOnGPU(available, s.Compare)); err != nil {
		return Spec{}, err
	}
	for _, n := range s.Sizes {
		if _, line, err := s.Grid.Eval(n, gridLimits); err != nil {
			return Spec{}, &cells.SpecError{Line: line, Msg: err.Error()}
		}
	}
	return s, nil
}

// checkSource applies the compilers' source rule (kernels/cuda.CheckIncludes: only the playground's
// headers, by name; nothing else that reads a file) to the kernel source, which starts on the cell's
// line srcLine, so a refused line is named at parse, before any compiler runs.
func checkSource(src string, srcLine int) error {
	err := kcuda.CheckIncludes(src, "cell.cu")
	var ie *kcuda.IncludeError
	if !errors.As(err, &ie) {
		return err
	}
	return &cells.SpecError{Line: srcLine + ie.Line - 1, Msg: ie.Msg}
}

func (s *Spec) setBlock(line int, block []int) error {
	if len(block) < 1 || len(block) > 3 {
		return cells.Errorf(line, "block has %d numbers; give 1 to 3 (x, y, z)", len(block))
	}
	threads := 1
	for i, b := range block {
		if b < 1 {
			return cells.Errorf(line, "block sizes must be at least 1")
		}
		s.Block[i] = b
		threads *= b
	}
	if threads > maxThreadsPerBlock || s.Block[2] > maxBlockZ {
		return cells.Errorf(line, "a block of %d threads is too many: CUDA allows at most %d per block (and z ≤ %d)", threads, maxThreadsPerBlock, maxBlockZ)
	}
	return nil
}

// GridFor evaluates the grid formulas for size n. Each must give a whole number within CUDA's limits;
// overflow and division by zero are errors.
func (s Spec) GridFor(n int) ([3]int, error) {
	g, _, err := s.Grid.Eval(n, gridLimits)
	return g, err
}

// gridLimits are CUDA's grid dimensions.
var gridLimits = LaunchLimits{Max: [3]int64{maxGridX, maxGridYZ, maxGridYZ}, Unit: "blocks", API: "CUDA"}
