package nvidia

import (
	"errors"
	"runtime"
	"strconv"
	"unsafe"
)

// DevicePtr is an address in device memory.
type DevicePtr uint64

// Context is a device's primary context made current on the calling OS thread, with one stream on
// which its kernels, cuBLAS calls and events are queued. CUDA contexts are per thread, so the caller
// must runtime.LockOSThread before Use and make every call from that goroutine (the GPU worker does
// all its work on one locked goroutine).
type Context struct {
	d *Driver
	// stream is created with CU_STREAM_DEFAULT (flags 0), a blocking stream: the synchronous copies
	// and memsets, which run on the legacy default stream, stay ordered with the work queued on it
	// (CUDA Driver API, "Stream synchronization behavior").
	stream uintptr
}

// Use retains device ordinal dev's primary context, makes it current on this thread and creates the
// context's stream.
func (d *Driver) Use(dev int) (*Context, error) {
	var h int32
	if err := d.check("cuDeviceGet", d.cuDeviceGet(&h, int32(dev))); err != nil {
		return nil, err
	}
	var ctx uintptr
	if err := d.check("cuDevicePrimaryCtxRetain", d.cuDevicePrimaryCtxRetain(&ctx, h)); err != nil {
		return nil, err
	}
	if err := d.check("cuCtxSetCurrent", d.cuCtxSetCurrent(ctx)); err != nil {
		return nil, err
	}
	c := &Context{d: d}
	if err := d.check("cuStreamCreate", d.cuStreamCreate(&c.stream, 0)); err != nil {
		return nil, err
	}
	return c, nil
}

// Alloc allocates bytes of device memory.
func (c *Context) Alloc(bytes int) (DevicePtr, error) {
	var p uint64
	err := c.d.check("cuMemAlloc_v2", c.d.cuMemAlloc(&p, uint64(bytes)))
	return DevicePtr(p), err
}

// Free releases device memory from Alloc.
func (c *Context) Free(p DevicePtr) error { return c.d.check("cuMemFree_v2", c.d.cuMemFree(uint64(p))) }

// CopyIn copies a host slice to device memory at dst (synchronous).
func CopyIn[T any](c *Context, dst DevicePtr, src []T) error {
	if len(src) == 0 {
		return nil
	}
	size := uint64(len(src)) * uint64(unsafe.Sizeof(src[0]))
	err := c.d.check("cuMemcpyHtoD_v2", c.d.cuMemcpyHtoD(uint64(dst), unsafe.Pointer(&src[0]), size))
	runtime.KeepAlive(src)
	return err
}

// CopyOut copies device memory at src into a host slice (synchronous).
func CopyOut[T any](c *Context, dst []T, src DevicePtr) error {
	if len(dst) == 0 {
		return nil
	}
	size := uint64(len(dst)) * uint64(unsafe.Sizeof(dst[0]))
	err := c.d.check("cuMemcpyDtoH_v2", c.d.cuMemcpyDtoH(unsafe.Pointer(&dst[0]), uint64(src), size))
	runtime.KeepAlive(dst)
	return err
}

// Fill32 sets words 32-bit words at dst to value (0xFFFFFFFF is a NaN as float32 and, in pairs, as
// float64: used to poison outputs before a run).
func (c *Context) Fill32(dst DevicePtr, value uint32, words int) error {
	return c.d.check("cuMemsetD32_v2", c.d.cuMemsetD32(uint64(dst), value, uint64(words)))
}

// Synchronize waits for all work on the context.
func (c *Context) Synchronize() error { return c.d.check("cuCtxSynchronize", c.d.cuCtxSynchronize()) }

// Module is loaded PTX.
type Module struct {
	c *Context
	h uintptr
}

// LoadPTX JIT-compiles and loads PTX text for the current device.
func (c *Context) LoadPTX(ptx string) (*Module, error) {
	img := append([]byte(ptx), 0)
	var m uintptr
	if err := c.d.check("cuModuleLoadData", c.d.cuModuleLoadData(&m, &img[0])); err != nil {
		return nil, err
	}
	return &Module{c: c, h: m}, nil
}

// Unload releases the module.
func (m *Module) Unload() error { return m.c.d.check("cuModuleUnload", m.c.d.cuModuleUnload(m.h)) }

// Function is a kernel entry point of a module.
type Function struct {
	c *Context
	h uintptr
}

// Function looks up an extern "C" kernel by name.
func (m *Module) Function(name string) (*Function, error) {
	var f uintptr
	if err := m.c.d.check("cuModuleGetFunction", m.c.d.cuModuleGetFunction(&f, m.h, name)); err != nil {
		return nil, err
	}
	return &Function{c: m.c, h: f}, nil
}

// DefaultSharedLimit is the dynamic shared memory a block may be launched with, in bytes, before
// the kernel opts in to more (SetMaxDynamicShared): 48 KiB on every architecture.
const DefaultSharedLimit = 48 << 10

// funcAttrMaxDynamicShared is CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES (CUfunction_attribute).
const funcAttrMaxDynamicShared = 8

// SetMaxDynamicShared lets f be launched with up to bytes of dynamic shared memory per block
// (cuFuncSetAttribute CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES), which a launch asking for
// more than DefaultSharedLimit needs. Its error names the call, or says the driver lacks it.
func (f *Function) SetMaxDynamicShared(bytes int) error {
	if f.c.d.cuFuncSetAttribute == nil {
		return errors.New("cuFuncSetAttribute: this libcuda.so.1 has no such function")
	}
	return f.c.d.check("cuFuncSetAttribute", f.c.d.cuFuncSetAttribute(f.h, funcAttrMaxDynamicShared, int32(bytes)))
}

// Launch queues f on the context's stream with grid and block dimensions (x, y, z) and the kernel's
// arguments in order; each argument must be a DevicePtr, int32, float32, float64 or a TensorMap
// (from Driver.EncodeTiled, for a `const __grid_constant__ CUtensorMap` parameter). It returns when
// the launch is queued; errors inside the kernel surface at the next synchronising call.
func (f *Function) Launch(grid, block [3]int, args ...any) error {
	return f.LaunchShared(grid, block, 0, args...)
}

// LaunchShared is Launch with sharedBytes of dynamic shared memory per block (cuLaunchKernel's
// sharedMemBytes, what a kernel's extern __shared__ array gets; up to 48 KiB without opting in).
func (f *Function) LaunchShared(grid, block [3]int, sharedBytes int, args ...any) error {
	var pin runtime.Pinner
	defer pin.Unpin()
	first, err := kernelParams(&pin, args)
	if err != nil {
		return err
	}
	return f.c.d.check("cuLaunchKernel", f.c.d.cuLaunchKernel(f.h,
		uint32(grid[0]), uint32(grid[1]), uint32(grid[2]), uint32(block[0]), uint32(block[1]), uint32(block[2]),
		uint32(sharedBytes), f.c.stream, first, 0))
}

// kernelParams is cuLaunchKernel's array of pointers to the argument values (nil for none), which
// live in Go memory and are pinned with pin for the call.
func kernelParams(pin *runtime.Pinner, args []any) (*unsafe.Pointer, error) {
	params := make([]unsafe.Pointer, len(args))
	for i, a := range args {
		var p unsafe.Pointer
		switch v := a.(type) {
		case DevicePtr:
			p = unsafe.Pointer(&v)
		case int32:
			p = unsafe.Pointer(&v)
		case float32:
			p = unsafe.Pointer(&v)
		case float64:
			p = unsafe.Pointer(&v)
		case TensorMap: // by value: the driver copies its 128 bytes from this 64-byte aligned address
			if v.opaque == nil {
				return nil, errors.New("cuda: kernel argument " + strconv.Itoa(i) + " is an empty tensor map")
			}
			p = unsafe.Pointer(v.opaque)
		default:
			panic("cuda: unsupported kernel argument type")
		}
		pin.Pin(p)
		params[i] = p
	}
	if len(params) == 0 {
		return nil, nil
	}
	pin.Pin(&params[0])
	return &params[0], nil
}

// launchAttribute is cuda.h's CUlaunchAttribute: an id, padding to 8 bytes, a 64-byte value.
type launchAttribute struct {
	id    int32
	_     [4]byte
	value [64]byte
}

// launchConfig is cuda.h's CUlaunchConfig (56 bytes; the stream at offset 32, as in C).
type launchConfig struct {
	grid, block [3]uint32
	shared      uint32
	stream      uintptr
	attrs       *launchAttribute
	numAttrs    uint32
}

// launchAttrClusterDimension is CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION (CUlaunchAttributeID).
const launchAttrClusterDimension = 4

// LaunchCluster is LaunchShared for a kernel launched in thread-block clusters of cluster blocks
// (x, y, z; each grid dimension a multiple of the cluster's), through cuLaunchKernelEx with the
// CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION attribute (sm_90 and newer). Its error says where the driver
// lacks cuLaunchKernelEx (before CUDA 12.0), or names the call.
func (f *Function) LaunchCluster(grid, block, cluster [3]int, sharedBytes int, args ...any) error {
	if f.c.d.cuLaunchKernelEx == nil {
		return errors.New("cuLaunchKernelEx: this libcuda.so.1 has no such function (CUDA 12.0 or newer has)")
	}
	var pin runtime.Pinner
	defer pin.Unpin()
	first, err := kernelParams(&pin, args)
	if err != nil {
		return err
	}
	attr := &launchAttribute{id: launchAttrClusterDimension}
	for i, c := range cluster {
		*(*uint32)(unsafe.Pointer(&attr.value[4*i])) = uint32(c)
	}
	cfg := &launchConfig{shared: uint32(sharedBytes), stream: f.c.stream, attrs: attr, numAttrs: 1}
	for i := range 3 {
		cfg.grid[i], cfg.block[i] = uint32(grid[i]), uint32(block[i])
	}
	pin.Pin(attr)
	pin.Pin(cfg)
	return f.c.d.check("cuLaunchKernelEx", f.c.d.cuLaunchKernelEx(unsafe.Pointer(cfg), f.h, first, 0))
}

// Event is a CUDA event, a timestamp recorded in the stream; events time GPU work without counting
// the host's launch overhead.
type Event struct {
	c *Context
	h uintptr
}

// NewEvent creates an event.
func (c *Context) NewEvent() (*Event, error) {
	var e uintptr
	if err := c.d.check("cuEventCreate", c.d.cuEventCreate(&e, 0)); err != nil {
		return nil, err
	}
	return &Event{c: c, h: e}, nil
}

// Record records the event on the context's stream.
func (e *Event) Record() error {
	return e.c.d.check("cuEventRecord", e.c.d.cuEventRecord(e.h, e.c.stream))
}

// Since waits for e and returns the seconds between start and e.
func (e *Event) Since(start *Event) (float64, error) {
	if err := e.c.d.check("cuEventSynchronize", e.c.d.cuEventSynchronize(e.h)); err != nil {
		return 0, err
	}
	var ms float32
	if err := e.c.d.check("cuEventElapsedTime", e.c.d.cuEventElapsedTime(&ms, start.h, e.h)); err != nil {
		return 0, err
	}
	return float64(ms) / 1e3, nil
}

// Destroy releases the event.
func (e *Event) Destroy() error { return e.c.d.check("cuEventDestroy_v2", e.c.d.cuEventDestroy(e.h)) }
