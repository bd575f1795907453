package cuda

import (
	"regexp"
	"slices"

	"github.com/gpuplayground/playground/cells"
	"github.com/gpuplayground/playground/measure"
	"github.com/gpuplayground/playground/vgpurun"
)

// TensorMap is one item of a cell's `tensor_maps:` list: a tiled tensor map (TMA) of one of the
// problem's matrices, which the kernel takes as the `const __grid_constant__ CUtensorMap` parameter
// Param after its problem's parameters, in the list's order, e.g.
//
//	tensor_maps: [{param: tmIn, of: in, box: [32, 32], swizzle: 128}]
//
// The matrix is row-major n×n of the cell's dtype; Box is the box copied by one
// cp.async.bulk.tensor, in elements, columns first (as cuTensorMapEncodeTiled's boxDim).
type TensorMap struct {
	Param string
	Map   vgpurun.TensorMap
}

// MaxTensorMaps bounds a cell's tensor maps (a kernel's parameters are 4 KiB at most; a map is 128 bytes).
const MaxTensorMaps = measure.MaxTensorMaps

// tensorMapSource is one item of `tensor_maps:`.
type tensorMapSource struct {
	Param   cells.At[string] `yaml:"param"`
	Of      cells.At[string] `yaml:"of"`
	Box     cells.At[[]int]  `yaml:"box"`
	Swizzle cells.At[int]    `yaml:"swizzle"`
}

// setTensorMaps reads `tensor_maps:` (after dtype, problem and source), checking each map as
// cuTensorMapEncodeTiled would: box sizes 1 to 256, the box's row a multiple of 16 bytes and, with
// a swizzle (32, 64 or 128 bytes), no wider than its span.
func (s *Spec) setTensorMaps(list cells.At[[]cells.At[tensorMapSource]]) error {
	if list.Line == 0 {
		return nil
	}
	if len(list.V) == 0 || len(list.V) > MaxTensorMaps {
		return cells.Errorf(list.Line, "%d tensor maps; give 1 to %d", len(list.V), MaxTensorMaps)
	}
	for _, item := range list.V {
		y := item.V
		tm := TensorMap{Param: y.Param.V, Map: vgpurun.TensorMap{Of: y.Of.V, Swizzle: y.Swizzle.V}}
		if err := s.checkTensorMapParam(item.Line, tm.Param); err != nil {
			return err
		}
		elem, err := s.matrixElemBytes(cmpLine(y.Of.Line, item.Line), tm.Map.Of)
		if err != nil {
			return err
		}
		line := cmpLine(y.Box.Line, item.Line)
		if len(y.Box.V) != 2 {
			return cells.Errorf(line, "tensor map %s: box has %d sizes; give 2 (columns, rows), e.g. box: [32, 32]", tm.Param, len(y.Box.V))
		}
		copy(tm.Map.Box[:], y.Box.V)
		for _, b := range tm.Map.Box {
			if b < 1 || b > 256 {
				return cells.Errorf(line, "tensor map %s: box size %d; each is 1 to 256 elements", tm.Param, b)
			}
		}
		row := tm.Map.Box[0] * elem
		switch sw := tm.Map.Swizzle; {
		case row%16 != 0:
			return cells.Errorf(line, "tensor map %s: the box's row is %d bytes, not a multiple of 16", tm.Param, row)
		case sw != 0 && sw != 32 && sw != 64 && sw != 128:
			return cells.Errorf(cmpLine(y.Swizzle.Line, item.Line), "tensor map %s: swizzle %d; use 0 (none), 32, 64 or 128 bytes", tm.Param, sw)
		case sw != 0 && row > sw:
			return cells.Errorf(line, "tensor map %s: the box's row is %d bytes, more than the %d-byte swizzle span (use box[0] ≤ %d)", tm.Param, row, sw, sw/elem)
		}
		s.TensorMaps = append(s.TensorMaps, tm)
	}
	return nil
}

// checkTensorMapParam checks that param names a CUtensorMap parameter of the source, listed once
// and after the maps listed before it (s.TensorMaps) in the source's order: the maps bind to the
// kernel's parameters by the list's order, so another order would swap them.
func (s *Spec) checkTensorMapParam(line int, param string) error {
	if !identifier.MatchString(param) {
		return cells.Errorf(line, "tensor map param %q is not a parameter name", param)
	}
	if slices.ContainsFunc(s.TensorMaps, func(t TensorMap) bool { return t.Param == param }) {
		return cells.Errorf(line, "tensor map param %s is listed twice", param)
	}
	at := tensorMapParamAt(s.Source, param)
	if at < 0 {
		return cells.Errorf(line, "unknown param %s: the kernel has no `const __grid_constant__ CUtensorMap %s` parameter", param, param)
	}
	if k := len(s.TensorMaps); k > 0 && tensorMapParamAt(s.Source, s.TensorMaps[k-1].Param) > at {
		prev := s.TensorMaps[k-1].Param
		return cells.Errorf(line, "tensor map %s is listed after %s, but the kernel takes %s first: list tensor_maps in the kernel's parameter order (the maps are passed in the list's order)", param, prev, param)
	}
	return nil
}

// tensorMapParamAt is the offset in src of the first `CUtensorMap param` declaration, or -1. param
// is an identifier.
func tensorMapParamAt(src, param string) int {
	loc := regexp.MustCompile(`\bCUtensorMap\s+` + param + `\b`).FindStringIndex(src)
	if loc == nil {
		return -1
	}
	return loc[0]
}

// matrixElemBytes is the element size of the problem's matrix called of in the cell's dtype.
func (s *Spec) matrixElemBytes(line int, of string) (int, error) {
	var names []string
	for _, b := range s.Problem.Buffers {
		if b.Matrix && b.Name == of {
			return b.ElemBytes(s.DType), nil
		}
		if b.Matrix {
			names = append(names, b.Name)
		}
	}
	if len(names) == 0 {
		return 0, cells.Errorf(line, "tensor maps are of matrices; %s has none", s.Problem.Name)
	}
	return 0, cells.Errorf(line, "tensor map of %q: %s's matrices are %v", of, s.Problem.Name, names)
}

// cmpLine is line, or fallback where the key was not given (0).
func cmpLine(line, fallback int) int {
	if line > 0 {
		return line
	}
	return fallback
}

// tensorMapRequests are the maps for the virtual GPU's launch (vgpurun.Request.TensorMaps).
func (s Spec) tensorMapRequests() []vgpurun.TensorMap {
	var out []vgpurun.TensorMap
	for _, t := range s.TensorMaps {
		out = append(out, t.Map)
	}
	return out
}

// workerTensorMaps are the maps for the GPU worker's launch (measure.Request.TensorMaps), which
// makes each with cuTensorMapEncodeTiled over the device's copy of the matrix.
func (s Spec) workerTensorMaps() []measure.TensorMap {
	var out []measure.TensorMap
	for _, t := range s.TensorMaps {
		out = append(out, measure.TensorMap{Param: t.Param, Of: t.Map.Of, Box: t.Map.Box, Swizzle: t.Map.Swizzle})
	}
	return out
}
