package cuda

import (
	"fmt"
	"sync"
	"unsafe"
)

// Driver is the CUDA driver API (libcuda.so.1), which comes with the NVIDIA driver. It binds what the
// device report needs; memory, modules, launches and events come with the GPU runs.
type Driver struct {
	Lib Loaded

	cuInit               func(flags uint32) int32
	cuDriverGetVersion   func(v *int32) int32
	cuDeviceGetCount     func(n *int32) int32
	cuDeviceGet          func(dev *int32, ordinal int32) int32
	cuDeviceGetName      func(name *byte, size int32, dev int32) int32
	cuDeviceGetAttribute func(v *int32, attr int32, dev int32) int32
	cuDeviceTotalMem     func(bytes *uint64, dev int32) int32
	cuGetErrorName       func(code int32, name **byte) int32
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
	d := &Driver{Lib: lib}
	if err := bind(lib,
		&d.cuInit, "cuInit",
		&d.cuDriverGetVersion, "cuDriverGetVersion",
		&d.cuDeviceGetCount, "cuDeviceGetCount",
		&d.cuDeviceGet, "cuDeviceGet",
		&d.cuDeviceGetName, "cuDeviceGetName",
		&d.cuDeviceGetAttribute, "cuDeviceGetAttribute",
		&d.cuDeviceTotalMem, "cuDeviceTotalMem_v2",
		&d.cuGetErrorName, "cuGetErrorName",
	); err != nil {
		return nil, err
	}
	if err := d.check("cuInit", d.cuInit(0)); err != nil {
		return nil, err
	}
	return d, nil
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

// Device describes one GPU as the driver reports it.
type Device struct {
	Ordinal int    `json:"ordinal"`
	Name    string `json:"name"`
	// ComputeCapability is major*10+minor, e.g. 90 for sm_90 (Hopper).
	ComputeCapability int `json:"compute_capability"`
	SMs               int `json:"sms"`
	// MemoryBytes is the total device memory in bytes.
	MemoryBytes uint64 `json:"memory_bytes"`
	// ClockKHz is the SM clock and MemoryClockKHz the memory clock, in kHz; MemoryBusBits the memory
	// bus width in bits.
	ClockKHz       int `json:"clock_khz"`
	MemoryClockKHz int `json:"memory_clock_khz"`
	MemoryBusBits  int `json:"memory_bus_bits"`
	L2Bytes        int `json:"l2_bytes"`
}

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
