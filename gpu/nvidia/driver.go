package nvidia

import (
	"fmt"
	"sync"
	"unsafe"

	"github.com/gpuplayground/playground/measure"
)

// Driver is the CUDA driver API (libcuda.so.1), which comes with the NVIDIA driver.
type Driver struct {
	Lib Loaded

	cuInit                   func(flags uint32) int32
	cuDriverGetVersion       func(v *int32) int32
	cuDeviceGetCount         func(n *int32) int32
	cuDeviceGet              func(dev *int32, ordinal int32) int32
	cuDeviceGetName          func(name *byte, size int32, dev int32) int32
	cuDeviceGetAttribute     func(v *int32, attr int32, dev int32) int32
	cuDeviceTotalMem         func(bytes *uint64, dev int32) int32
	cuGetErrorName           func(code int32, name **byte) int32
	cuDevicePrimaryCtxRetain func(ctx *uintptr, dev int32) int32
	cuCtxSetCurrent          func(ctx uintptr) int32
	cuCtxSynchronize         func() int32
	cuMemAlloc               func(dptr *uint64, size uint64) int32
	cuMemFree                func(dptr uint64) int32
	cuMemcpyHtoD             func(dst uint64, src unsafe.Pointer, size uint64) int32
	cuMemcpyDtoH             func(dst unsafe.Pointer, src uint64, size uint64) int32
	cuMemsetD32              func(dst uint64, value uint32, n uint64) int32
	cuModuleLoadData         func(mod *uintptr, image *byte) int32
	cuModuleGetFunction      func(fn *uintptr, mod uintptr, name string) int32
	cuModuleUnload           func(mod uintptr) int32
	cuLaunchKernel           func(fn uintptr, gx, gy, gz, bx, by, bz, smem uint32, stream uintptr, params *unsafe.Pointer, extra uintptr) int32
	cuEventCreate            func(ev *uintptr, flags uint32) int32
	cuEventRecord            func(ev, stream uintptr) int32
	cuEventSynchronize       func(ev uintptr) int32
	cuEventElapsedTime       func(ms *float32, start, end uintptr) int32
	cuEventDestroy           func(ev uintptr) int32
	cuStreamCreate           func(stream *uintptr, flags uint32) int32
	cuStreamDestroy          func(stream uintptr) int32
	// cuTensorMapEncodeTiled (CUDA 12.0 and newer) is bound where the library has it, else nil
	// (optionalSymbols): an older driver still runs everything but tensor maps.
	cuTensorMapEncodeTiled func(tensorMap unsafe.Pointer, dataType int32, rank uint32, global uint64, dims, strides *uint64,
		box, elementStrides *uint32, interleave, swizzle, l2Promotion, oobFill int32) int32
	// cuFuncSetAttribute (CUDA 9.0 and newer) is bound where the library has it, else nil: a kernel
	// asking for over 48 KiB of dynamic shared memory needs it.
	cuFuncSetAttribute func(fn uintptr, attr, value int32) int32
	// cuLaunchKernelEx (CUDA 12.0 and newer), bound where the library has it, else nil: a launch in
	// thread-block clusters needs it.
	cuLaunchKernelEx func(config unsafe.Pointer, fn uintptr, params *unsafe.Pointer, extra uintptr) int32
}

var (
	driverOnce sync.Once
	driverLib  *Driver
	driverErr  error
)

// LoadDriver opens and binds libcuda.so.1 once per process and calls cuInit(0). Its errors read
// "libcuda.so.1 not found (tried …)" or "cuInit: CUDA_ERROR_NO_DEVICE (100)".
func LoadDriver() (*Driver, error) {
	driverOnce.Do(func() { driverLib, driverErr = Loader{}.Driver() })
	return driverLib, driverErr
}

// Driver opens and binds the driver API with this loader and initialises it.
func (l Loader) Driver() (*Driver, error) {
	lib, err := l.Load(DriverNames)
	if err != nil {
		return nil, err
	}
	d, err := bindDriver(lib)
	if err != nil {
		return nil, err
	}
	if err := d.check("cuInit", d.cuInit(0)); err != nil {
		return nil, err
	}
	return d, nil
}

// bindDriver binds every driver API function the playground calls, without initialising the driver.
func bindDriver(lib Loaded) (*Driver, error) {
	d := &Driver{Lib: lib}
	if err := bind(lib, d.symbols()...); err != nil {
		return nil, err
	}
	opt := d.optionalSymbols()
	for i := 0; i < len(opt); i += 2 {
		_ = sym(lib, opt[i], opt[i+1].(string)) // missing: left nil, and the call that needs it says so
	}
	return d, nil
}

// optionalSymbols are the driver functions bound where the library has them (symbols' form).
func (d *Driver) optionalSymbols() []any {
	return []any{&d.cuTensorMapEncodeTiled, "cuTensorMapEncodeTiled", &d.cuFuncSetAttribute, "cuFuncSetAttribute",
		&d.cuLaunchKernelEx, "cuLaunchKernelEx"}
}

// symbols pairs each function variable with the libcuda symbol it binds (the _v2 names are the
// 64-bit-size versions that cuda.h maps the plain names to).
func (d *Driver) symbols() []any {
	return []any{
		&d.cuInit, "cuInit",
		&d.cuDriverGetVersion, "cuDriverGetVersion",
		&d.cuDeviceGetCount, "cuDeviceGetCount",
		&d.cuDeviceGet, "cuDeviceGet",
		&d.cuDeviceGetName, "cuDeviceGetName",
		&d.cuDeviceGetAttribute, "cuDeviceGetAttribute",
		&d.cuDeviceTotalMem, "cuDeviceTotalMem_v2",
		&d.cuGetErrorName, "cuGetErrorName",
		&d.cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain",
		&d.cuCtxSetCurrent, "cuCtxSetCurrent",
		&d.cuCtxSynchronize, "cuCtxSynchronize",
		&d.cuMemAlloc, "cuMemAlloc_v2",
		&d.cuMemFree, "cuMemFree_v2",
		&d.cuMemcpyHtoD, "cuMemcpyHtoD_v2",
		&d.cuMemcpyDtoH, "cuMemcpyDtoH_v2",
		&d.cuMemsetD32, "cuMemsetD32_v2",
		&d.cuModuleLoadData, "cuModuleLoadData",
		&d.cuModuleGetFunction, "cuModuleGetFunction",
		&d.cuModuleUnload, "cuModuleUnload",
		&d.cuLaunchKernel, "cuLaunchKernel",
		&d.cuEventCreate, "cuEventCreate",
		&d.cuEventRecord, "cuEventRecord",
		&d.cuEventSynchronize, "cuEventSynchronize",
		&d.cuEventElapsedTime, "cuEventElapsedTime",
		&d.cuEventDestroy, "cuEventDestroy_v2",
		&d.cuStreamCreate, "cuStreamCreate",
		&d.cuStreamDestroy, "cuStreamDestroy_v2",
	}
}

// check names a failed driver call, asking the driver for the name (cuGetErrorName) and falling back
// to the table from cuda.h.
func (d *Driver) check(call string, code int32) error {
	if code == 0 {
		return nil
	}
	var p *byte
	if d.cuGetErrorName != nil && d.cuGetErrorName(code, &p) == 0 && p != nil {
		return &Error{Call: call, Code: int(code), Name: cString(p)}
	}
	return check(call, code, cuResultNames)
}

// cString copies a NUL-terminated C string.
func cString(p *byte) string {
	var b []byte
	for ; *p != 0; p = (*byte)(unsafe.Add(unsafe.Pointer(p), 1)) {
		b = append(b, *p)
	}
	return string(b)
}

// Device attributes (CUdevice_attribute in cuda.h).
const (
	attrClockRate       = 13 // kHz
	attrMultiprocessors = 16
	attrMemoryClockRate = 36 // kHz
	attrMemoryBusWidth  = 37 // bits
	attrL2CacheSize     = 38 // bytes
	attrComputeCapMajor = 75
	attrComputeCapMinor = 76
)

// Device describes one GPU as the driver reports it (measure.Device).
type Device = measure.Device

// Version returns the CUDA version the driver supports, e.g. "13.0".
func (d *Driver) Version() (string, error) {
	var v int32
	if err := d.check("cuDriverGetVersion", d.cuDriverGetVersion(&v)); err != nil {
		return "", err
	}
	return fmt.Sprintf("%d.%d", v/1000, v%1000/10), nil
}

// Devices lists every device the driver sees.
func (d *Driver) Devices() ([]Device, error) {
	var n int32
	if err := d.check("cuDeviceGetCount", d.cuDeviceGetCount(&n)); err != nil {
		return nil, err
	}
	out := make([]Device, 0, n)
	for i := range n {
		var dev int32
		if err := d.check("cuDeviceGet", d.cuDeviceGet(&dev, i)); err != nil {
			return nil, err
		}
		name := make([]byte, 256)
		if err := d.check("cuDeviceGetName", d.cuDeviceGetName(&name[0], int32(len(name)), dev)); err != nil {
			return nil, err
		}
		info := Device{Ordinal: int(i), Name: cString(&name[0])}
		if err := d.check("cuDeviceTotalMem_v2", d.cuDeviceTotalMem(&info.MemoryBytes, dev)); err != nil {
			return nil, err
		}
		attrs := []struct {
			id  int32
			dst *int
		}{
			{attrMultiprocessors, &info.SMs}, {attrClockRate, &info.ClockKHz},
			{attrMemoryClockRate, &info.MemoryClockKHz}, {attrMemoryBusWidth, &info.MemoryBusBits},
			{attrL2CacheSize, &info.L2Bytes},
		}
		var major, minor int32
		for _, a := range attrs {
			var v int32
			if err := d.check("cuDeviceGetAttribute", d.cuDeviceGetAttribute(&v, a.id, dev)); err != nil {
				return nil, err
			}
			*a.dst = int(v)
		}
		if err := d.check("cuDeviceGetAttribute", d.cuDeviceGetAttribute(&major, attrComputeCapMajor, dev)); err != nil {
			return nil, err
		}
		if err := d.check("cuDeviceGetAttribute", d.cuDeviceGetAttribute(&minor, attrComputeCapMinor, dev)); err != nil {
			return nil, err
		}
		info.ComputeCapability = int(major*10 + minor)
		out = append(out, info)
	}
	return out, nil
}
