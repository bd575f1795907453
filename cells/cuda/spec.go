// Package cuda is the `cuda` cell kind: a learner's own CUDA C++ kernel, compiled to PTX by NVRTC in
// the GPU worker (Show PTX), and where the server has a GPU timed as `custom` beside the kernels it is
// compared with.
package cuda

import (
	"fmt"
	"math"
	"regexp"
	"strings"

	"github.com/gpuplayground/playground/cells"
	"github.com/gpuplayground/playground/cells/matmul"
	"github.com/gpuplayground/playground/datasheet"
	"github.com/gpuplayground/playground/experiment"
	"github.com/gpuplayground/playground/kernels"
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
	Grid    [3]string
	Sizes   []int
	DType   string
	Repeats int
	Compare []string
	// GPU, if the cell names one, is the datasheet GPU that emulated times are modelled on.
	GPU *datasheet.GPU
	// Source is the CUDA C++ after the `---` line; SourceLine is the cell line it starts on (1-based).
	Source     string
	SourceLine int

	grid [3]*Formula
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
	lines := strings.SplitAfter(cell, "\n")
	sep := -1
	for i, l := range lines {
		if strings.TrimRight(l, " \t\r\n") == "---" {
			sep = i
			break
		}
	}
	if sep < 0 {
		return Spec{}, &cells.SpecError{Msg: "a cuda cell is a YAML header, a line `---`, then the kernel source; no `---` line found"}
	}
	s := Spec{DType: "float32", Repeats: matmul.DefaultRepeats, Block: [3]int{1, 1, 1}, Grid: [3]string{"1", "1", "1"},
		Source: strings.Join(lines[sep+1:], ""), SourceLine: sep + 2}
	if len(s.Source) > MaxSourceBytes {
		return Spec{}, cells.Errorf(s.SourceLine, "the kernel source is %d bytes long; a cuda cell's source is at most %d bytes", len(s.Source), MaxSourceBytes)
	}
	var y source
	if err := cells.Decode(strings.Join(lines[:sep], ""), &y); err != nil {
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
		if err := s.setGrid(y.Grid.Line, y.Grid.V); err != nil {
			return Spec{}, err
		}
	}
	var err error
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
		if _, i, err := s.evalGrid(n); err != nil {
			return Spec{}, &cells.SpecError{Line: y.Grid.V[i].Line, Msg: err.Error()}
		}
	}
	return s, nil
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

func (s *Spec) setGrid(line int, grid []cells.At[string]) error {
	if len(grid) < 1 || len(grid) > 3 {
		return cells.Errorf(line, "grid has %d formulas; give 1 to 3 (x, y, z)", len(grid))
	}
	for i, f := range grid {
		formula, err := ParseFormula(f.V)
		if err != nil {
			return cells.Errorf(f.Line, "grid formula %q: %v (write formulas in n, like ceil(n/16))", f.V, err)
		}
		s.Grid[i], s.grid[i] = f.V, formula
	}
	return nil
}

// GridFor evaluates the grid formulas for size n. Each must give a whole number within CUDA's limits;
// overflow and division by zero are errors.
func (s Spec) GridFor(n int) ([3]int, error) {
	g, _, err := s.evalGrid(n)
	return g, err
}

// evalGrid is GridFor, with the index of the formula that failed.
func (s Spec) evalGrid(n int) ([3]int, int, error) {
	var g [3]int
	for i := range g {
		if s.grid[i] == nil {
			g[i] = 1
			continue
		}
		num, den, err := s.grid[i].Eval(n)
		if err != nil {
			return g, i, fmt.Errorf("grid formula %q for n=%d: %v", s.Grid[i], n, err)
		}
		limit := int64(maxGridYZ)
		if i == 0 {
			limit = maxGridX
		}
		switch {
		case den != 1:
			return g, i, fmt.Errorf("grid formula %q gives %g for n=%d, not a whole number: `/` divides exactly, so round up with ceil(…)", s.Grid[i], float64(num)/float64(den), n)
		case num < 1 || num > limit:
			return g, i, fmt.Errorf("grid formula %q gives %d blocks for n=%d; CUDA allows 1 to %d", s.Grid[i], num, n, limit)
		}
		g[i] = int(num)
	}
	return g, 0, nil
}
