package experiment

import (
	"fmt"
	"math"
	"regexp"
	"strings"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/vm"
	"github.com/gpuplayground/playground/kernels"
	"gopkg.in/yaml.v3"
)

// CUDASpec is a parsed `cuda` cell: a YAML header, a line `---`, then the learner's CUDA C++. The
// kernel computes C = A·B for row-major n×n matrices and is launched as
// kernel(const T* A, const T* B, T* C, int M, int N, int K) with T float or double:
//
//	kernel: my_matmul                   # the extern "C" __global__ function to launch
//	block: [16, 16]                     # threads per block (x, y, z)
//	grid: ["ceil(n/16)", "ceil(n/16)"]  # blocks per grid, formulas in n (expr-lang syntax)
//	sizes: [256, 512]
//	dtype: float32                      # float32 | float64
//	repeats: 5
//	compare: [cublas]                   # other kernels timed alongside
//	---
//	extern "C" __global__ void my_matmul(const float* A, const float* B, float* C, int M, int N, int K) { … }
type CUDASpec struct {
	Kernel  string
	Block   [3]int
	Grid    [3]string
	Sizes   []int
	DType   string
	Repeats int
	Compare []string
	// Source is the CUDA C++ after the `---` line; SourceLine is the cell line it starts on (1-based).
	Source     string
	SourceLine int

	grid [3]*vm.Program
}

// Launch limits from the CUDA C++ Programming Guide, "Compute Capabilities" (technical
// specifications table): at most 1024 threads per block, block z ≤ 64, grid y and z ≤ 65535.
const (
	maxThreadsPerBlock = 1024
	maxBlockZ          = 64
	maxGridX           = math.MaxInt32
	maxGridYZ          = 65535
)

var identifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// ParseCUDA reads a `cuda` cell. available lists the kernels compare may name; lim bounds sizes as
// for matmul cells. Errors are *SpecError values with cell line numbers.
func ParseCUDA(cell string, available []kernels.Kernel, lim Limits) (CUDASpec, error) {
	lines := strings.SplitAfter(cell, "\n")
	sep := -1
	for i, l := range lines {
		if strings.TrimRight(l, " \t\r\n") == "---" {
			sep = i
			break
		}
	}
	if sep < 0 {
		return CUDASpec{}, &SpecError{Msg: "a cuda cell is a YAML header, a line `---`, then the kernel source; no `---` line found"}
	}
	s := CUDASpec{DType: "float32", Repeats: 5, Block: [3]int{1, 1, 1}, Grid: [3]string{"1", "1", "1"},
		Source: strings.Join(lines[sep+1:], ""), SourceLine: sep + 2}
	var block []int
	var grid []string
	var sizesNode, compareNode *yaml.Node
	gridLine := 0
	err := eachKey(strings.Join(lines[:sep], ""), "kernel, block, grid, sizes, dtype, repeats, compare", func(key, val *yaml.Node) error {
		var err error
		switch key.Value {
		case "kernel":
			if err = decode(val, &s.Kernel, "the kernel's function name"); err == nil && !identifier.MatchString(s.Kernel) {
				err = errAt(val, "kernel %q is not a C function name", s.Kernel)
			}
		case "block":
			if err = decode(val, &block, "a list of 1 to 3 whole numbers, like [16, 16]"); err == nil {
				err = s.setBlock(val, block)
			}
		case "grid":
			gridLine = key.Line
			if err = decode(val, &grid, `a list of 1 to 3 formulas in n, like ["ceil(n/16)", "ceil(n/16)"]`); err == nil {
				err = s.setGrid(val, grid)
			}
		case "sizes":
			sizesNode, err = val, decode(val, &s.Sizes, "a list of whole numbers, like [256, 512]")
		case "dtype":
			if err = decode(val, &s.DType, "float32 or float64"); err == nil && s.DType != "float32" && s.DType != "float64" {
				err = errAt(val, "unknown dtype %q; use float32 or float64", s.DType)
			}
		case "repeats":
			if err = decode(val, &s.Repeats, "a whole number"); err == nil && (s.Repeats < 1 || s.Repeats > maxRepeats) {
				err = errAt(val, "repeats is %d; use 1 to %d", s.Repeats, maxRepeats)
			}
		case "compare":
			compareNode, err = val, decode(val, &s.Compare, "a list of kernel names, like [cublas]")
		default:
			err = errAt(key, "unknown key %q; known keys: kernel, block, grid, sizes, dtype, repeats, compare", key.Value)
		}
		if err != nil {
			return err
		}
		return nil
	})
	if err != nil {
		return CUDASpec{}, err
	}
	if s.Kernel == "" {
		return CUDASpec{}, &SpecError{Line: 1, Msg: "the header needs `kernel: NAME`, the extern \"C\" __global__ function to launch"}
	}
	if !regexp.MustCompile(`\b` + s.Kernel + `\s*\(`).MatchString(s.Source) {
		return CUDASpec{}, &SpecError{Line: s.SourceLine, Msg: fmt.Sprintf("the source below `---` has no function %s(…)", s.Kernel)}
	}
	for i, name := range s.Compare {
		if _, ok := kernels.Lookup(available, name); !ok {
			return CUDASpec{}, errAt(compareNode.Content[i], "unknown kernel %q; known kernels: %s", name, kernels.Names(available))
		}
	}
	// Sizes follow the matmul rules (limits, memory, duplicates); the learner's kernel runs on the GPU.
	ms := Spec{Kernels: []string{"custom"}, Sizes: s.Sizes, DType: s.DType}
	if err := ms.checkSizes(sizesNode, lim, allOnGPU(available, s.Compare)); err != nil {
		return CUDASpec{}, err
	}
	for _, n := range s.Sizes {
		if _, err := s.GridFor(n); err != nil {
			return CUDASpec{}, &SpecError{Line: gridLine, Msg: err.Error()}
		}
	}
	return s, nil
}

func (s *CUDASpec) setBlock(node *yaml.Node, block []int) error {
	if len(block) < 1 || len(block) > 3 {
		return errAt(node, "block has %d numbers; give 1 to 3 (x, y, z)", len(block))
	}
	threads := 1
	for i, b := range block {
		if b < 1 {
			return errAt(node, "block sizes must be at least 1")
		}
		s.Block[i] = b
		threads *= b
	}
	if threads > maxThreadsPerBlock || s.Block[2] > maxBlockZ {
		return errAt(node, "a block of %d threads is too many: CUDA allows at most %d per block (and z ≤ %d)", threads, maxThreadsPerBlock, maxBlockZ)
	}
	return nil
}

func (s *CUDASpec) setGrid(node *yaml.Node, grid []string) error {
	if len(grid) < 1 || len(grid) > 3 {
		return errAt(node, "grid has %d formulas; give 1 to 3 (x, y, z)", len(grid))
	}
	for i, f := range grid {
		prog, err := expr.Compile(f, expr.Env(map[string]any{"n": 0}))
		if err != nil {
			return errAt(node, "grid formula %q: %v (write formulas in n, like ceil(n/16))", f, err)
		}
		s.Grid[i], s.grid[i] = f, prog
	}
	return nil
}

// GridFor evaluates the grid formulas for size n. Each must give a whole number within CUDA's limits.
func (s CUDASpec) GridFor(n int) ([3]int, error) {
	var g [3]int
	for i := range g {
		if s.grid[i] == nil {
			g[i] = 1
			continue
		}
		out, err := expr.Run(s.grid[i], map[string]any{"n": n})
		if err != nil {
			return g, fmt.Errorf("grid formula %q for n=%d: %v", s.Grid[i], n, err)
		}
		var v float64
		switch x := out.(type) {
		case int:
			v = float64(x)
		case float64:
			v = x
		default:
			return g, fmt.Errorf("grid formula %q gives %v, not a number", s.Grid[i], out)
		}
		limit := float64(maxGridYZ)
		if i == 0 {
			limit = maxGridX
		}
		switch {
		case v != math.Trunc(v):
			return g, fmt.Errorf("grid formula %q gives %g for n=%d, not a whole number: `/` divides exactly, so round up with ceil(…)", s.Grid[i], v, n)
		case v < 1 || v > limit:
			return g, fmt.Errorf("grid formula %q gives %g blocks for n=%d; CUDA allows 1 to %.0f", s.Grid[i], v, n, limit)
		}
		g[i] = int(v)
	}
	return g, nil
}

// Checkers validates cell sources of the kinds this package runs (matmul, cuda, simt, systolic,
// roofline, allreduce)
// against the default limits, as lessons are checked at start-up (a lesson cell must run on any
// default server).
func Checkers(available []kernels.Kernel) map[string]func(string) error {
	return map[string]func(string) error{
		"matmul":    func(src string) error { _, err := Parse(src, available, DefaultLimits()); return err },
		"cuda":      func(src string) error { _, err := ParseCUDA(src, available, DefaultLimits()); return err },
		"simt":      func(src string) error { _, err := ParseSIMT(src); return err },
		"systolic":  func(src string) error { _, err := ParseSystolic(src); return err },
		"roofline":  func(src string) error { _, err := ParseRoofline(src, available, DefaultLimits()); return err },
		"allreduce": func(src string) error { _, err := ParseAllReduce(src); return err },
	}
}
