package nvidia

import (
	"fmt"
	"math/bits"
	"runtime"
	"unsafe"
)

// TensorMap is an encoded tensor map (cuda.h's CUtensorMap): 128 opaque bytes, 64-byte aligned,
// that cuTensorMapEncodeTiled fills and a kernel takes by value as a `const __grid_constant__
// CUtensorMap` parameter (Function.LaunchShared passes it so). The zero value is no map.
type TensorMap struct {
	opaque *[TensorMapBytes]byte // 64-byte aligned, in memory the Go collector never moves
}

// TensorMapMinCC is the lowest compute capability with tensor maps (TMA): sm_90, Hopper (cuda.h).
const TensorMapMinCC = 90

// TensorMapBytes is sizeof(CUtensorMap) (CU_TENSOR_MAP_NUM_QWORDS 16 × 8 bytes); TensorMapAlign its
// alignment.
const (
	TensorMapBytes = 128
	TensorMapAlign = 64
)

// newTensorMap allocates a zeroed map at a 64-byte aligned address (Go's allocator aligns only to
// the element type, so the map is cut from a larger buffer).
func newTensorMap() TensorMap {
	buf := make([]byte, TensorMapBytes+TensorMapAlign)
	off := (TensorMapAlign - int(uintptr(unsafe.Pointer(&buf[0]))%TensorMapAlign)) % TensorMapAlign
	return TensorMap{opaque: (*[TensorMapBytes]byte)(buf[off : off+TensorMapBytes])}
}

// Bytes is a copy of the map's 128 bytes (nil for the zero TensorMap).
func (m TensorMap) Bytes() []byte {
	if m.opaque == nil {
		return nil
	}
	return append([]byte(nil), m.opaque[:]...)
}

// TensorDataType is cuda.h's CUtensorMapDataType.
type TensorDataType int32

// The tensor element types (cuda.h, CUDA 12.4), with their sizes in tensorElemBytes.
const (
	TensorUint8 TensorDataType = iota
	TensorUint16
	TensorUint32
	TensorInt32
	TensorUint64
	TensorInt64
	TensorFloat16
	TensorFloat32
	TensorFloat64
	TensorBFloat16
	TensorFloat32FTZ
	TensorTFloat32
	TensorTFloat32FTZ
)

// tensorElemBytes is each TensorDataType's element size in bytes, as cuda.h's comments give it.
var tensorElemBytes = [...]uint64{1, 2, 4, 4, 8, 8, 2, 4, 8, 2, 4, 4, 4}

// Interleave (CUtensorMapInterleave), Swizzle (CUtensorMapSwizzle), L2 promotion
// (CUtensorMapL2promotion) and out-of-bounds fill (CUtensorMapFloatOOBfill) of cuda.h.
const (
	InterleaveNone, Interleave16B, Interleave32B                             = 0, 1, 2
	SwizzleNone, Swizzle32B, Swizzle64B, Swizzle128B                         = 0, 1, 2, 3
	L2PromotionNone, L2Promotion64B, L2Promotion128B, L2Promotion256B        = 0, 1, 2, 3
	OOBFillNone, OOBFillNaNRequestZeroFMA                                    = 0, 1
	maxTensorRank, maxBoxDim, maxElementStride                               = 5, 256, 8
	maxGlobalDim, maxGlobalStride                                     uint64 = 1 << 32, 1 << 40
)

// TiledMap describes a tiled tensor map, cuTensorMapEncodeTiled's arguments: Name (the kernel
// parameter, for errors only), the element type, the tensor's device address, its size in elements
// per dimension (innermost first), its strides in bytes for every dimension but the innermost, the
// box one copy moves in elements per dimension, the element strides (nil: all 1), and the enums.
type TiledMap struct {
	Name           string
	DataType       TensorDataType
	Address        DevicePtr
	Dims           []uint64
	Strides        []uint64
	Box            []uint32
	ElementStrides []uint32
	Interleave     int32
	Swizzle        int32
	L2Promotion    int32
	OOBFill        int32
}

// swizzleBytes is each swizzle mode's span in bytes (0: none).
var swizzleBytes = [...]uint64{0, 32, 64, 128}

// Check checks t as the CUDA driver API documents cuTensorMapEncodeTiled's requirements (cuda.h,
// CUDA 12.4): rank 1 to 5 (3 or more when interleaved); the address 16-byte aligned (32 with 32-byte
// interleave); each size 1 to 2^32; each stride a multiple of 16 (32) bytes, below 2^40 and covering
// the dimensions below it; each box size 1 to 256 and, without interleave, the box's inner dimension
// a multiple of 16 bytes and (swizzled) no wider than the swizzle span; element strides 1 to 8; the
// enums in range; 32-byte interleave only with the 32-byte swizzle; the NaN fill only for floats.
// Its error names the map and the argument.
func (t TiledMap) Check() error {
	rank := len(t.Dims)
	switch {
	case t.DataType < 0 || int(t.DataType) >= len(tensorElemBytes):
		return t.errorf("data type %d is not a CUtensorMapDataType (0 to %d)", t.DataType, len(tensorElemBytes)-1)
	case rank < 1 || rank > maxTensorRank:
		return t.errorf("rank %d; a tensor map has 1 to %d dimensions", rank, maxTensorRank)
	case t.Interleave < InterleaveNone || t.Interleave > Interleave32B:
		return t.errorf("interleave %d is not a CUtensorMapInterleave (0 to 2)", t.Interleave)
	case t.Interleave != InterleaveNone && rank < 3:
		return t.errorf("an interleaved map has 3 or more dimensions, not %d", rank)
	case t.Swizzle < SwizzleNone || t.Swizzle > Swizzle128B:
		return t.errorf("swizzle %d is not a CUtensorMapSwizzle (0 to 3)", t.Swizzle)
	case t.Interleave == Interleave32B && t.Swizzle != Swizzle32B:
		return t.errorf("32-byte interleave needs the 32-byte swizzle")
	case t.L2Promotion < L2PromotionNone || t.L2Promotion > L2Promotion256B:
		return t.errorf("L2 promotion %d is not a CUtensorMapL2promotion (0 to 3)", t.L2Promotion)
	case t.OOBFill < OOBFillNone || t.OOBFill > OOBFillNaNRequestZeroFMA:
		return t.errorf("out-of-bounds fill %d is not a CUtensorMapFloatOOBfill (0 or 1)", t.OOBFill)
	case t.OOBFill == OOBFillNaNRequestZeroFMA && !t.DataType.float():
		return t.errorf("the NaN out-of-bounds fill needs a floating-point data type, not %d", t.DataType)
	}
	align := uint64(16)
	if t.Interleave == Interleave32B {
		align = 32
	}
	if t.Address == 0 || uint64(t.Address)%align != 0 {
		return t.errorf("global address %#x is not %d-byte aligned", uint64(t.Address), align)
	}
	if err := t.checkGlobal(align); err != nil {
		return err
	}
	return t.checkBox()
}

// float says whether dt is a floating-point type (the NaN fill needs one).
func (dt TensorDataType) float() bool { return dt >= TensorFloat16 }

// checkGlobal checks the tensor's sizes and strides (Check).
func (t TiledMap) checkGlobal(align uint64) error {
	rank := len(t.Dims)
	if len(t.Strides) != rank-1 {
		return t.errorf("%d global strides for %d dimensions; give one fewer than the dimensions", len(t.Strides), rank)
	}
	for i, d := range t.Dims {
		if d < 1 || d > maxGlobalDim {
			return t.errorf("global size %d of dimension %d; each is 1 to 2^32", d, i)
		}
	}
	covered := t.Dims[0] * tensorElemBytes[t.DataType] // bytes the dimensions below stride i span
	for i, s := range t.Strides {
		switch {
		case s%align != 0:
			return t.errorf("global stride %d bytes of dimension %d is not a multiple of %d", s, i+1, align)
		case s >= maxGlobalStride:
			return t.errorf("global stride %d bytes of dimension %d; each is below 2^40", s, i+1)
		case s < covered:
			return t.errorf("global stride %d bytes of dimension %d is less than the %d bytes the dimensions below it span", s, i+1, covered)
		}
		hi, lo := bits.Mul64(s, t.Dims[i+1])
		if hi != 0 {
			return t.errorf("dimensions 0 to %d span %d×%d bytes, more than 2^64", i+1, s, t.Dims[i+1])
		}
		covered = lo
	}
	return nil
}

// checkBox checks the box and the element strides (Check).
func (t TiledMap) checkBox() error {
	rank := len(t.Dims)
	if len(t.Box) != rank {
		return t.errorf("%d box sizes for %d dimensions", len(t.Box), rank)
	}
	for i, b := range t.Box {
		if b < 1 || b > maxBoxDim {
			return t.errorf("box size %d of dimension %d; each is 1 to %d elements", b, i, maxBoxDim)
		}
	}
	if t.ElementStrides != nil && len(t.ElementStrides) != rank {
		return t.errorf("%d element strides for %d dimensions", len(t.ElementStrides), rank)
	}
	for i, e := range t.ElementStrides {
		if e < 1 || e > maxElementStride {
			return t.errorf("element stride %d of dimension %d; each is 1 to %d", e, i, maxElementStride)
		}
	}
	if t.Interleave != InterleaveNone {
		return nil
	}
	inner := uint64(t.Box[0]) * tensorElemBytes[t.DataType]
	if inner%16 != 0 {
		return t.errorf("the box's inner dimension is %d bytes, not a multiple of 16", inner)
	}
	if span := swizzleBytes[t.Swizzle]; span != 0 && inner > span {
		return t.errorf("the box's inner dimension is %d bytes, more than the %d-byte swizzle span", inner, span)
	}
	return nil
}

func (t TiledMap) errorf(format string, args ...any) error {
	return fmt.Errorf("tensor map %s: %s", t.Name, fmt.Sprintf(format, args...))
}

// TensorMapError is a tensor map the driver refused: the map's name and the driver's error.
type TensorMapError struct {
	Name string
	Err  error
}

func (e *TensorMapError) Error() string { return fmt.Sprintf("tensor map %s: %v", e.Name, e.Err) }
func (e *TensorMapError) Unwrap() error { return e.Err }

// EncodeTiled checks t (TiledMap.Check) and makes its tensor map with cuTensorMapEncodeTiled (CUDA
// 12.0 or newer; it needs an initialised driver and a device of compute capability 9.0 or more).
// The driver's refusal comes back as a *TensorMapError around an *Error (e.g. "tensor map tmA:
// cuTensorMapEncodeTiled: CUDA_ERROR_INVALID_VALUE (1)"); a driver without the function is an error
// saying so.
func (d *Driver) EncodeTiled(t TiledMap) (TensorMap, error) {
	if err := t.Check(); err != nil {
		return TensorMap{}, err
	}
	if d.cuTensorMapEncodeTiled == nil {
		return TensorMap{}, t.errorf("%s has no cuTensorMapEncodeTiled (tensor maps need a CUDA 12 driver)", d.Lib.Path)
	}
	strides := t.ElementStrides
	if strides == nil {
		strides = make([]uint32, len(t.Dims))
		for i := range strides {
			strides[i] = 1
		}
	}
	m := newTensorMap()
	var globalStrides *uint64
	if len(t.Strides) > 0 {
		globalStrides = &t.Strides[0]
	}
	code := d.cuTensorMapEncodeTiled(unsafe.Pointer(m.opaque), int32(t.DataType), uint32(len(t.Dims)), uint64(t.Address),
		&t.Dims[0], globalStrides, &t.Box[0], &strides[0], t.Interleave, t.Swizzle, t.L2Promotion, t.OOBFill)
	runtime.KeepAlive(t)
	runtime.KeepAlive(strides)
	if err := d.check("cuTensorMapEncodeTiled", code); err != nil {
		return TensorMap{}, &TensorMapError{Name: t.Name, Err: err}
	}
	return m, nil
}

// EncodeTiled makes t's tensor map with the context's driver (Driver.EncodeTiled).
func (c *Context) EncodeTiled(t TiledMap) (TensorMap, error) { return c.d.EncodeTiled(t) }
