// Package cuda is the `cuda` cell kind: a learner's own CUDA C++ kernel, compiled to PTX by NVRTC in
// the GPU worker (Show PTX), and where the server has a GPU timed as `custom` beside the kernels it is
// compared with.
package cuda

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"

	"github.com/gpuplayground/playground/cells"
	"github.com/gpuplayground/playground/cells/shared/kernelcell"
	"github.com/gpuplayground/playground/cells/shared/launch"
	kcuda "github.com/gpuplayground/playground/gpu/nvidia"
	"github.com/gpuplayground/playground/gpumodel"
	"github.com/gpuplayground/playground/harness"
	"github.com/gpuplayground/playground/kernels"
	"github.com/gpuplayground/playground/problems"
)

// Spec is a parsed `cuda` cell: a YAML header, a line `---`, then the learner's CUDA C++. The
// kernel computes its problem (package problems; matmul, C = A·B for row-major n×n matrices, by
// default) and is launched with the problem's signature, e.g.
// kernel(const T* A, const T* B, T* C, int M, int N, int K) with T float or double:
//
//	kernel: my_matmul                   # the extern "C" __global__ function to launch
//	problem: matmul                     # matmul | transpose | reduce | histogram | softmax | scan
//	block: [16, 16]                     # threads per block (x, y, z)
//	grid: ["ceil(n/16)", "ceil(n/16)"]  # blocks per grid, formulas in n (see launch.Formula)
//	shared_bytes: "16*16*4"             # dynamic (extern __shared__) bytes per block, a formula in n
//	registers: 64                       # without a GPU: the registers per thread to assume (occupancy)
//	sizes: [256, 512]
//	dtype: float32                      # float32 | float64
//	precision: fp32                     # the lowest it computes in: fp32 | tf32 | bf16 | fp16
//	repeats: 5
//	compare: [cublas]                   # other kernels timed alongside (matmul only)
//	gpu: T4                             # without a GPU: the datasheet the emulated times are modelled on (a Hopper: compiles for compute_90a)
//	show: [occupancy, modelled]         # columns shown beside the tables' primary ones (cells.ParseShow)
//	variants: [{block: [32, 8]}]        # other launches emulated beside it (not matmul; Variant)
//	tensor_maps: [{param: tm, of: A, box: [32, 32], swizzle: 128}]  # TMA maps after the problem's parameters (TensorMap; the GPU worker makes them with cuTensorMapEncodeTiled)
//	---
//	extern "C" __global__ void my_matmul(const float* A, const float* B, float* C, int M, int N, int K) { … }
type Spec struct {
	Kernel  string
	Problem *problems.Problem
	Block   [3]int
	Grid    launch.Shape
	// Shared is the dynamic shared memory per block in bytes, a formula in n (nil: none), written on
	// sharedLine.
	Shared     *launch.Formula
	sharedLine int
	// Registers, if not 0, is the registers per thread the virtual GPU's occupancy and modelled time
	// assume for the kernel (1 to MaxRegisters), a what-if in place of those ptxas allocates for the
	// datasheet GPU's architecture (ptxasRegisters; where there is no ptxas, the only figure).
	Registers int
	// Show names columns shown beside the tables' primary ones (cells.ParseShow).
	Show  []string
	Sizes []int
	DType string
	// Precision sets the check's tolerance (the problem's, for this precision).
	Precision problems.Precision
	Repeats   int
	Compare   []string
	// GPU, if the cell names one, is the datasheet GPU that emulated times are modelled on.
	GPU *gpumodel.GPU
	// Variants are the other launches the cell emulates beside its kernel (problems other than
	// matmul; Variant).
	Variants []Variant
	// TensorMaps are the tensor maps the kernel takes after its problem's parameters (TensorMap):
	// the virtual GPU's, or made by the GPU worker with cuTensorMapEncodeTiled.
	TensorMaps []TensorMap
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
	// MaxSharedBytes is the dynamic shared memory a block may ask for without opting in
	// (cudaFuncAttributeMaxDynamicSharedMemorySize), 48 KiB on every architecture since Kepler.
	MaxSharedBytes = 48 << 10
	// MaxRegisters is the most registers per thread on every compute capability from 3.5 on
	// (the CUDA C++ Programming Guide's technical specifications: 255).
	MaxRegisters = 255
)

var identifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

type source struct {
	cells.Common `yaml:",inline"`
	Kernel       cells.At[string]                      `yaml:"kernel"`
	Block        cells.At[[]int]                       `yaml:"block"`
	Grid         cells.At[[]cells.At[string]]          `yaml:"grid"`
	Sizes        cells.At[[]cells.At[int]]             `yaml:"sizes"`
	DType        cells.At[string]                      `yaml:"dtype"`
	Repeats      cells.At[int]                         `yaml:"repeats"`
	Compare      cells.At[[]cells.At[string]]          `yaml:"compare"`
	GPU          cells.At[string]                      `yaml:"gpu"`
	Problem      cells.At[string]                      `yaml:"problem"`
	Precision    cells.At[string]                      `yaml:"precision"`
	SharedBytes  cells.At[string]                      `yaml:"shared_bytes"`
	Registers    cells.At[int]                         `yaml:"registers"`
	Show         cells.At[[]cells.At[string]]          `yaml:"show"`
	Variants     cells.At[[]cells.At[variantSource]]   `yaml:"variants"`
	TensorMaps   cells.At[[]cells.At[tensorMapSource]] `yaml:"tensor_maps"`
}

// Parse reads a `cuda` cell. available lists the kernels compare may name; lim bounds sizes as
// for matmul cells (and their number, and compare's, as matmul's lists). The grid formulas are
// parsed here, once, and checked for every size. Errors are *cells.SpecError values with cell line
// numbers.
func Parse(cell string, available []kernels.Kernel, lim harness.Limits) (Spec, error) {
	header, src, srcLine, err := cells.SplitSource(cell, "cuda", "the kernel source", MaxSourceBytes)
	if err != nil {
		return Spec{}, err
	}
	s := Spec{DType: "float32", Repeats: kernelcell.DefaultRepeats, Block: [3]int{1, 1, 1}, Grid: launch.Shape{Key: "grid", Src: [3]string{"1", "1", "1"}},
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
		if s.Grid, err = launch.Parse("grid", y.Grid.Line, y.Grid.V); err != nil {
			return Spec{}, err
		}
	}
	if s.DType, err = kernelcell.DType(y.DType); err != nil {
		return Spec{}, err
	}
	if err := s.setProblem(y); err != nil {
		return Spec{}, err
	}
	if y.Repeats.Line > 0 {
		if s.Repeats = y.Repeats.V; s.Repeats < 1 || s.Repeats > kernelcell.MaxRepeats {
			return Spec{}, cells.Errorf(y.Repeats.Line, "repeats is %d; use 1 to %d", s.Repeats, kernelcell.MaxRepeats)
		}
	}
	if y.Registers.Line > 0 {
		if s.Registers = y.Registers.V; s.Registers < 1 || s.Registers > MaxRegisters {
			return Spec{}, cells.Errorf(y.Registers.Line, "registers is %d; a thread may have 1 to %d", s.Registers, MaxRegisters)
		}
	}
	if s.Show, err = cells.ParseShow(y.Show, kernelcell.Tables()...); err != nil {
		return Spec{}, err
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
		g, err := gpumodel.LookupGPU(y.GPU.V)
		if err != nil {
			return Spec{}, cells.Errorf(y.GPU.Line, "%v", err)
		}
		s.GPU = &g
	}
	if s.Problem.Name != "matmul" && y.Compare.Line > 0 {
		return Spec{}, cells.Errorf(y.Compare.Line, "compare times other matrix-multiply kernels; a %s cell compares with none", s.Problem.Name)
	}
	if s.Compare, err = kernelcell.KernelNames(y.Compare, s.DType, available, false, false); err != nil {
		return Spec{}, err
	}
	if err := s.setSizes(y.Sizes, available, lim); err != nil {
		return Spec{}, err
	}
	if err := s.setTensorMaps(y.TensorMaps); err != nil {
		return Spec{}, err
	}
	if err := s.setVariants(y.Variants); err != nil {
		return Spec{}, err
	}
	return s, nil
}

// setSizes reads the sizes (after the problem and compare) and checks the grid and shared_bytes
// formulas at each.
func (s *Spec) setSizes(list cells.At[[]cells.At[int]], available []kernels.Kernel, lim harness.Limits) error {
	var err error
	if s.Problem.Name == "matmul" {
		// Sizes follow the matmul rules (limits, memory, duplicates); the learner's kernel runs on the GPU.
		s.Sizes, err = kernelcell.Sizes(list, s.DType, lim, harness.AllOnGPU(available, s.Compare))
	} else {
		s.Sizes, err = problemSizes(list, s.Problem, s.DType, lim)
	}
	if err != nil {
		return err
	}
	for _, n := range s.Sizes {
		if _, line, err := s.Grid.Eval(n, gridLimits); err != nil {
			return &cells.SpecError{Line: line, Msg: err.Error()}
		}
		if _, err := s.SharedFor(n); err != nil {
			return &cells.SpecError{Line: s.sharedLine, Msg: err.Error()}
		}
	}
	return nil
}

// setProblem reads the problem, precision and shared_bytes keys (after dtype).
func (s *Spec) setProblem(y source) error {
	var err error
	if s.Problem, err = problems.Lookup(cmp.Or(y.Problem.V, problems.Default)); err != nil {
		return cells.Errorf(y.Problem.Line, "%v", err)
	}
	s.Precision = problems.DefaultPrecision(s.DType)
	if y.Precision.Line > 0 {
		if s.Precision, err = problems.LookupPrecision(y.Precision.V); err != nil {
			return cells.Errorf(y.Precision.Line, "%v", err)
		}
	}
	if y.SharedBytes.Line > 0 {
		if s.Shared, err = launch.ParseFormula(y.SharedBytes.V); err != nil {
			return cells.Errorf(y.SharedBytes.Line, "shared_bytes formula %q: %v (write a formula in n, like 16*16*4 or n*4)", y.SharedBytes.V, err)
		}
		s.sharedLine = y.SharedBytes.Line
	}
	return nil
}

// problemSizes checks the sizes of a cell whose problem is not matmul: 1 to the problem's MaxN,
// its buffers within the memory limit, none twice, at most kernelcell.MaxSizes of them.
func problemSizes(list cells.At[[]cells.At[int]], p *problems.Problem, dtype string, lim harness.Limits) ([]int, error) {
	if len(list.V) == 0 {
		return nil, cells.Errorf(list.Line, "no sizes: add `sizes: [...]`, e.g. sizes: [1024, 4096]")
	}
	if len(list.V) > kernelcell.MaxSizes {
		return nil, cells.Errorf(list.Line, "%d sizes; a cell takes at most %d", len(list.V), kernelcell.MaxSizes)
	}
	var sizes []int
	for _, item := range list.V {
		n := item.V
		switch {
		case n < 1:
			return nil, cells.Errorf(item.Line, "size %d is too small; n must be at least 1", n)
		case n > p.MaxN:
			return nil, cells.Errorf(item.Line, "size %d is over the limit of %d for %s; use a smaller n", n, p.MaxN, p.Name)
		case slices.Contains(sizes, n):
			return nil, cells.Errorf(item.Line, "size %d is listed twice", n)
		}
		if need := p.Memory(n, dtype); lim.MemoryBytes > 0 && need > lim.MemoryBytes {
			return nil, cells.Errorf(item.Line, "n=%d in %s needs %.0f MiB for the buffers, over the memory budget of %.0f MiB: use a smaller n",
				n, dtype, float64(need)/(1<<20), float64(lim.MemoryBytes)/(1<<20))
		}
		sizes = append(sizes, n)
	}
	return sizes, nil
}

// checkSource applies the compilers' source rule (gpu/nvidia.CheckIncludes: only the playground's
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
var gridLimits = launch.Limits{Max: [3]int64{maxGridX, maxGridYZ, maxGridYZ}, Unit: "blocks", API: "CUDA"}

// SharedFor evaluates the shared_bytes formula for size n: a whole number of bytes, 0 to
// MaxSharedBytes (0 where the cell gives none).
func (s Spec) SharedFor(n int) (int, error) {
	if s.Shared == nil {
		return 0, nil
	}
	num, den, err := s.Shared.Eval(n)
	switch {
	case err != nil:
		return 0, fmt.Errorf("shared_bytes formula %q for n=%d: %v", s.Shared, n, err)
	case den != 1:
		return 0, fmt.Errorf("shared_bytes formula %q gives %g for n=%d, not a whole number of bytes", s.Shared, float64(num)/float64(den), n)
	case num < 0 || num > MaxSharedBytes:
		return 0, fmt.Errorf("shared_bytes formula %q gives %d bytes for n=%d; a block may have 0 to %d bytes of dynamic shared memory (48 KiB, CUDA's limit without opting in)", s.Shared, num, n, MaxSharedBytes)
	}
	return int(num), nil
}
