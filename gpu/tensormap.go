package gpu

import (
	"fmt"
	"math"
	"math/bits"
	"slices"

	"github.com/gpuplayground/playground/gpu/nvidia"
	"github.com/gpuplayground/playground/measure"
	"github.com/gpuplayground/playground/problems"
)

// swizzleModes maps a swizzle span in bytes to cuda.h's CUtensorMapSwizzle.
var swizzleModes = map[int]int32{0: nvidia.SwizzleNone, 32: nvidia.Swizzle32B, 64: nvidia.Swizzle64B, 128: nvidia.Swizzle128B}

// tiledMaps describes req's tensor maps over db, p's buffers on the device at n: each a 2-D map of a
// row-major n×n matrix (n elements, then n rows n·size bytes apart) with the request's box and
// swizzle, no interleave, the L2 promotion CUTLASS uses for its operands (128 bytes) and zero fill
// out of bounds. An error names a map whose matrix p lacks or whose swizzle is not a span.
func tiledMaps(p *problems.Problem, req Request, db *deviceBuffers) ([]nvidia.TiledMap, error) {
	if len(req.TensorMaps) > measure.MaxTensorMaps {
		return nil, fmt.Errorf("%d tensor maps; at most %d", len(req.TensorMaps), measure.MaxTensorMaps)
	}
	n := uint64(req.N)
	var out []nvidia.TiledMap
	for _, tm := range req.TensorMaps {
		i := slices.IndexFunc(p.Buffers, func(b problems.Buffer) bool { return b.Name == tm.Of })
		if i < 0 || !p.Buffers[i].Matrix {
			return nil, fmt.Errorf("tensor map %s: %s has no matrix %q", tm.Param, p.Name, tm.Of)
		}
		swizzle, ok := swizzleModes[tm.Swizzle]
		if !ok {
			return nil, fmt.Errorf("tensor map %s: swizzle %d; use 0, 32, 64 or 128 bytes", tm.Param, tm.Swizzle)
		}
		b := p.Buffers[i]
		elem := uint64(b.ElemBytes(req.DType))
		if err := tensorFits(tm.Param, n, elem, db.bytes[i]); err != nil {
			return nil, err
		}
		for d, b := range tm.Box { // cast only what fits: Check says the range of what does
			if b < 0 || b > math.MaxUint32 {
				return nil, fmt.Errorf("tensor map %s: box size %d of dimension %d is out of range", tm.Param, b, d)
			}
		}
		out = append(out, nvidia.TiledMap{Name: tm.Param, DataType: tensorDataType(b, req.DType), Address: db.ptrs[i],
			Dims: []uint64{n, n}, Strides: []uint64{n * elem}, Box: []uint32{uint32(tm.Box[0]), uint32(tm.Box[1])},
			Swizzle: swizzle, L2Promotion: nvidia.L2Promotion128B})
	}
	return out, nil
}

// tensorFits checks that the n×n tensor of elem-byte elements a map named param declares lies within
// its buffer's size bytes, so that the map cannot reach past the allocation; an error names the map.
func tensorFits(param string, n, elem uint64, size int) error {
	hi, rowBytes := bits.Mul64(n, elem)
	hi2, total := bits.Mul64(n, rowBytes)
	if hi != 0 || hi2 != 0 || size < 0 || total > uint64(size) {
		return fmt.Errorf("tensor map %s: a %d×%d tensor of %d-byte elements is larger than its %d-byte buffer", param, n, n, elem, size)
	}
	return nil
}

// tensorDataType is the CUtensorMapDataType of b's elements in dtype.
func tensorDataType(b problems.Buffer, dtype string) nvidia.TensorDataType {
	switch {
	case b.Elem == problems.Uint32:
		return nvidia.TensorUint32
	case b.ElemBytes(dtype) == 8:
		return nvidia.TensorFloat64
	}
	return nvidia.TensorFloat32
}

// tensorMapArgs makes req's tensor maps over db (tiledMaps) with cuTensorMapEncodeTiled, as the
// kernel's arguments after its problem's parameters.
func (d *device) tensorMapArgs(p *problems.Problem, req Request, db *deviceBuffers) ([]any, error) {
	if len(req.TensorMaps) > 0 && d.cc < nvidia.TensorMapMinCC {
		return nil, fmt.Errorf("tensor maps need a GPU of compute capability %d or newer (Hopper); this one is sm_%d", nvidia.TensorMapMinCC, d.cc)
	}
	maps, err := tiledMaps(p, req, db)
	if err != nil {
		return nil, err
	}
	var args []any
	for _, m := range maps {
		tm, err := d.ctx.EncodeTiled(m)
		if err != nil {
			return nil, err
		}
		args = append(args, tm)
	}
	return args, nil
}
