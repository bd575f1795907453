package vgpurun

import (
	"fmt"

	"github.com/gpuplayground/playground/gpu/nvidia"
	"github.com/gpuplayground/playground/problems"
	"github.com/gpuplayground/playground/vgpu"
)

// TensorMap is a tensor map a learner's kernel takes (a `const __grid_constant__ CUtensorMap`
// parameter) after its problem's parameters: a tiled map of one of the problem's row-major n×n
// matrices, as cuTensorMapEncodeTiled would make it (vgpu.TensorMap).
type TensorMap struct {
	// Of names the problem's matrix (problems.Buffer.Name: "in", "A", …).
	Of string
	// Box is the copied box in elements, innermost (columns) first.
	Box [2]int
	// Swizzle is the shared-memory swizzle span in bytes: 0 (none), 32, 64 or 128.
	Swizzle int
}

// tensorMapArgs are the kernel parameters of tms over bufs, p's buffers at n: each matrix n×n of
// dtype's element size, n·size bytes between rows. An error names a map whose matrix p lacks;
// vgpu.Launch checks the rest as cuTensorMapEncodeTiled would (box sizes, strides, swizzle span).
func tensorMapArgs(p *problems.Problem, bufs []*vgpu.Buffer, tms []TensorMap, n int, dtype string) ([]vgpu.Arg, error) {
	var args []vgpu.Arg
	for _, tm := range tms {
		i := bufferIndex(p, tm.Of)
		if i < 0 || !p.Buffers[i].Matrix {
			return nil, fmt.Errorf("a tensor map of %q: %s has no such matrix", tm.Of, p.Name)
		}
		elem := p.Buffers[i].ElemBytes(dtype)
		args = append(args, vgpu.TensorMapArg(vgpu.TensorMap{Buffer: bufs[i], ElemBytes: elem,
			Dims: []int{n, n}, Strides: []int64{int64(n * elem)}, Box: tm.Box[:], Swizzle: vgpu.Swizzle(tm.Swizzle)}))
	}
	return args, nil
}

// bufferIndex is the index of p's buffer called name, or -1.
func bufferIndex(p *problems.Problem, name string) int {
	for i, b := range p.Buffers {
		if b.Name == name {
			return i
		}
	}
	return -1
}

// tensorMapsNote says, for a parameter-count error, that the k tensor maps follow the prototype.
func tensorMapsNote(k int) string {
	if k == 0 {
		return ""
	}
	return fmt.Sprintf(", then the cell's %d tensor map(s) as `const __grid_constant__ CUtensorMap` parameters", k)
}

// tableTensorMaps are the kernel parameters of a table kernel's tensor maps (nvidia.Kernel.TensorMaps)
// over its row-major inputs a (m×k) and b (k×n), of 16-bit elements.
func tableTensorMaps(tms []nvidia.RungMap, a, b *vgpu.Buffer, m, n, k int) []vgpu.Arg {
	var args []vgpu.Arg
	for _, tm := range tms {
		buf, dims := a, []int{k, m}
		if tm.Of == "B" {
			buf, dims = b, []int{n, k}
		}
		args = append(args, vgpu.TensorMapArg(vgpu.TensorMap{Buffer: buf, ElemBytes: 2, Dims: dims,
			Strides: []int64{int64(2 * dims[0])}, Box: tm.Box[:], Swizzle: vgpu.Swizzle(tm.Swizzle)}))
	}
	return args
}
