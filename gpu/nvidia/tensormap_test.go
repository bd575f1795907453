package nvidia

import (
	"errors"
	"strings"
	"testing"
	"unsafe"
)

// goodMap is a valid 2-D map: a 64×64 float32 matrix at a 256-byte aligned address, 32×32 boxes.
func goodMap() TiledMap {
	return TiledMap{Name: "tmA", DataType: TensorFloat32, Address: 0x7f0000000100, Dims: []uint64{64, 64},
		Strides: []uint64{256}, Box: []uint32{32, 32}}
}

// Each of cuTensorMapEncodeTiled's documented requirements is checked before the call, and the
// error names the map.
func TestTiledMapCheck(t *testing.T) {
	if err := goodMap().Check(); err != nil {
		t.Fatalf("valid map: %v", err)
	}
	for _, tt := range []struct {
		name string
		edit func(*TiledMap)
		want string
	}{
		{"rank 0", func(m *TiledMap) { m.Dims, m.Strides, m.Box = nil, nil, nil }, "rank 0; a tensor map has 1 to 5"},
		{"rank 6", func(m *TiledMap) { m.Dims = make([]uint64, 6) }, "rank 6"},
		{"data type", func(m *TiledMap) { m.DataType = 13 }, "data type 13"},
		{"misaligned address", func(m *TiledMap) { m.Address += 8 }, "not 16-byte aligned"},
		{"null address", func(m *TiledMap) { m.Address = 0 }, "global address 0x0"},
		{"size 0", func(m *TiledMap) { m.Dims[1] = 0 }, "global size 0 of dimension 1"},
		{"size past 2^32", func(m *TiledMap) { m.Dims[1] = 1<<32 + 1 }, "each is 1 to 2^32"},
		{"stride count", func(m *TiledMap) { m.Strides = nil }, "0 global strides for 2 dimensions"},
		{"stride not ×16", func(m *TiledMap) { m.Strides[0] = 264 }, "global stride 264 bytes of dimension 1 is not a multiple of 16"},
		{"stride ≥ 2^40", func(m *TiledMap) { m.Strides[0] = 1 << 40 }, "each is below 2^40"},
		{"stride overlaps rows", func(m *TiledMap) { m.Strides[0] = 128 }, "less than the 256 bytes"},
		{"span past 2^64", func(m *TiledMap) { // 2^32 bytes × 2^32 would wrap to 0 and let a 16-byte stride pass
			m.Dims, m.Strides, m.Box = []uint64{64, 1 << 24, 1 << 32, 2}, []uint64{256, 1 << 32, 16}, []uint32{32, 32, 1, 1}
		}, "dimensions 0 to 2 span 4294967296×4294967296 bytes, more than 2^64"},
		{"box 0", func(m *TiledMap) { m.Box[1] = 0 }, "box size 0 of dimension 1"},
		{"box 257", func(m *TiledMap) { m.Box[1] = 257 }, "each is 1 to 256 elements"},
		{"box count", func(m *TiledMap) { m.Box = m.Box[:1] }, "1 box sizes for 2 dimensions"},
		{"box row not ×16 bytes", func(m *TiledMap) { m.Box[0] = 6 }, "24 bytes, not a multiple of 16"},
		{"element stride 0", func(m *TiledMap) { m.ElementStrides = []uint32{1, 0} }, "element stride 0 of dimension 1"},
		{"element stride 9", func(m *TiledMap) { m.ElementStrides = []uint32{1, 9} }, "each is 1 to 8"},
		{"element stride count", func(m *TiledMap) { m.ElementStrides = []uint32{1} }, "1 element strides"},
		{"swizzle enum", func(m *TiledMap) { m.Swizzle = 4 }, "swizzle 4 is not"},
		{"box wider than swizzle", func(m *TiledMap) { m.Swizzle = Swizzle64B }, "128 bytes, more than the 64-byte swizzle span"},
		{"interleave with rank 2", func(m *TiledMap) { m.Interleave = Interleave16B }, "3 or more dimensions, not 2"},
		{"interleave 32B without swizzle 32B", func(m *TiledMap) {
			m.Dims, m.Strides, m.Box, m.Interleave = []uint64{64, 64, 2}, []uint64{256, 256 * 64}, []uint32{32, 32, 1}, Interleave32B
		}, "needs the 32-byte swizzle"},
		{"L2 promotion", func(m *TiledMap) { m.L2Promotion = 4 }, "L2 promotion 4"},
		{"OOB fill enum", func(m *TiledMap) { m.OOBFill = 2 }, "out-of-bounds fill 2"},
		{"NaN fill of integers", func(m *TiledMap) { m.DataType, m.OOBFill = TensorUint32, OOBFillNaNRequestZeroFMA }, "needs a floating-point"},
	} {
		m := goodMap()
		tt.edit(&m)
		err := m.Check()
		if err == nil || !strings.HasPrefix(err.Error(), "tensor map tmA: ") || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: got %v, want tensor map tmA: …%s…", tt.name, err, tt.want)
		}
	}
	// What is allowed at the limits: the 128-byte box row with the 128-byte swizzle, 5 dimensions.
	m := goodMap()
	m.Swizzle = Swizzle128B
	if err := m.Check(); err != nil {
		t.Errorf("128-byte row, 128-byte swizzle: %v", err)
	}
	m = TiledMap{Name: "t5", DataType: TensorBFloat16, Address: 0x1000, Dims: []uint64{8, 2, 2, 2, 2},
		Strides: []uint64{16, 32, 64, 128}, Box: []uint32{8, 1, 1, 1, 1}, ElementStrides: []uint32{1, 8, 1, 1, 1}}
	if err := m.Check(); err != nil {
		t.Errorf("rank 5: %v", err)
	}
}

// EncodeTiled passes the checked arguments to the driver (element strides default to 1, the map
// 64-byte aligned), and turns the driver's refusal into an error that names the map and the result.
func TestEncodeTiledCallsAndNamesTheMap(t *testing.T) {
	var calls int
	var got struct {
		aligned    bool
		rank       uint32
		dims       [2]uint64
		stride     uint64
		box, es    [2]uint32
		dtype, swz int32
	}
	result := int32(0)
	d := &Driver{cuTensorMapEncodeTiled: func(tm unsafe.Pointer, dt int32, rank uint32, global uint64, dims, strides *uint64,
		box, es *uint32, interleave, swizzle, l2, oob int32) int32 {
		calls++
		got.aligned = uintptr(tm)%TensorMapAlign == 0
		got.rank, got.dtype, got.swz = rank, dt, swizzle
		got.dims = *(*[2]uint64)(unsafe.Pointer(dims))
		got.stride = *strides
		got.box, got.es = *(*[2]uint32)(unsafe.Pointer(box)), *(*[2]uint32)(unsafe.Pointer(es))
		(*[TensorMapBytes]byte)(tm)[0] = 0xAB
		return result
	}}
	m := goodMap()
	m.Swizzle = Swizzle128B
	tm, err := d.EncodeTiled(m)
	if err != nil {
		t.Fatal(err)
	}
	if !got.aligned || got.rank != 2 || got.dims != [2]uint64{64, 64} || got.stride != 256 || got.box != [2]uint32{32, 32} ||
		got.es != [2]uint32{1, 1} || got.dtype != int32(TensorFloat32) || got.swz != Swizzle128B {
		t.Errorf("the driver got %+v", got)
	}
	if b := tm.Bytes(); len(b) != TensorMapBytes || b[0] != 0xAB {
		t.Errorf("the map's bytes are not what the driver wrote: %x", b)
	}
	result = 1
	_, err = d.EncodeTiled(m)
	var tme *TensorMapError
	var ce *Error
	if !errors.As(err, &tme) || !errors.As(err, &ce) || err.Error() != "tensor map tmA: cuTensorMapEncodeTiled: CUDA_ERROR_INVALID_VALUE (1)" {
		t.Errorf("refused: got %v", err)
	}
	m.Box[0] = 300
	if _, err := d.EncodeTiled(m); err == nil || calls != 2 {
		t.Errorf("an invalid map reached the driver (calls %d) or passed: %v", calls, err)
	}
	old := &Driver{Lib: Loaded{Path: "/x/libcuda.so.1"}}
	if _, err := old.EncodeTiled(goodMap()); err == nil || !strings.Contains(err.Error(), "/x/libcuda.so.1 has no cuTensorMapEncodeTiled") {
		t.Errorf("a CUDA 11 driver: got %v", err)
	}
}

// NVIDIA's own libcuda (driver 535, unpacked; no GPU here) has cuTensorMapEncodeTiled, and the purego
// call with its twelve arguments (six on the stack) reaches it: uninitialised, it answers
// CUDA_ERROR_NOT_INITIALIZED, named through the driver's own cuGetErrorName.
func TestRealDriverEncodeTiledWithoutGPU(t *testing.T) {
	d := realDriver(t)
	if d.cuTensorMapEncodeTiled == nil {
		t.Fatalf("%s: cuTensorMapEncodeTiled not bound", d.Lib.Path)
	}
	_, err := d.EncodeTiled(goodMap())
	var ce *Error
	if !errors.As(err, &ce) || err.Error() != "tensor map tmA: cuTensorMapEncodeTiled: CUDA_ERROR_NOT_INITIALIZED (3)" {
		t.Errorf("got %v, want the driver's CUDA_ERROR_NOT_INITIALIZED for tmA", err)
	}
}

// The launch passes a tensor map by value: its parameter pointer is the map's 64-byte aligned bytes.
func TestLaunchPassesTensorMapByValue(t *testing.T) {
	tm := newTensorMap()
	tm.opaque[5] = 7
	var params []unsafe.Pointer
	d := &Driver{cuLaunchKernel: func(fn uintptr, gx, gy, gz, bx, by, bz, smem uint32, stream uintptr, p *unsafe.Pointer, extra uintptr) int32 {
		params = unsafe.Slice(p, 2)
		if uintptr(params[1])%TensorMapAlign != 0 || (*[TensorMapBytes]byte)(params[1])[5] != 7 || *(*DevicePtr)(params[0]) != 0x100 {
			return 1
		}
		return 0
	}}
	f := &Function{c: &Context{d: d}}
	if err := f.Launch([3]int{1, 1, 1}, [3]int{32, 1, 1}, DevicePtr(0x100), tm); err != nil {
		t.Errorf("launch with a tensor map: %v", err)
	}
	if err := f.Launch([3]int{1, 1, 1}, [3]int{32, 1, 1}, TensorMap{}); err == nil {
		t.Error("an empty tensor map was launched")
	}
}
