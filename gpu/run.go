package gpu

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"unsafe"

	"github.com/gpuplayground/playground/gpu/nvidia"
	"github.com/gpuplayground/playground/harness"
	"github.com/gpuplayground/playground/kernels"
	"github.com/gpuplayground/playground/numeric"
)

// device is the worker's GPU state, made on the first run and kept for the worker's life. All of it
// is used from the one OS thread that Serve locks.
type device struct {
	ctx *nvidia.Context
	cc  int
	own *nvidia.Module // gpu/nvidia/src/matmul.cu
	// hopper is gpu/nvidia/src/hopper.cu's compute_90a PTX, loaded at the first Hopper rung.
	hopper *nvidia.Module
	sms    int // multiprocessors (CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
	blas   *nvidia.CuBLAS
	rng    *rand.Rand
}

func openDevice() (*device, error) {
	drv, err := nvidia.LoadDriver()
	if err != nil {
		return nil, fmt.Errorf("no CUDA device: %w", err)
	}
	devs, err := drv.Devices()
	if err != nil || len(devs) == 0 {
		return nil, fmt.Errorf("no CUDA device: %v", err)
	}
	ctx, err := drv.Use(0)
	if err != nil {
		return nil, err
	}
	return &device{ctx: ctx, cc: devs[0].ComputeCapability, sms: devs[0].SMs, rng: rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))}, nil
}

// ownModule compiles matmul.cu for this device with NVRTC and loads it. It loads the embedded PTX
// instead where NVRTC is missing (a machine with only the driver) or where NVRTC is newer than the
// driver, whose JIT then refuses the PTX with CUDA_ERROR_UNSUPPORTED_PTX_VERSION.
func (d *device) ownModule() (*nvidia.Module, error) {
	if d.own != nil {
		return d.own, nil
	}
	src, err := fs.ReadFile(nvidia.Sources, "src/matmul.cu")
	if err != nil {
		return nil, err
	}
	why := ""
	if nv, nvErr := nvidia.LoadNVRTC(); nvErr != nil {
		why = fmt.Sprintf("no NVRTC (%v)", nvErr)
	} else {
		arch, err := nv.ArchFor(d.cc)
		if err != nil {
			return nil, err
		}
		ptx, err := nvidia.CompileArch(nv, string(src), "matmul.cu", arch)
		if err != nil {
			return nil, err
		}
		d.own, err = d.ctx.LoadPTX(ptx)
		if err == nil || !tooNewPTX(err) {
			return d.own, err
		}
		why = fmt.Sprintf("NVRTC's PTX: %v", err)
	}
	arch, ok := nvidia.BestPTXArch(d.cc)
	if !ok {
		return nil, fmt.Errorf("%s and no embedded PTX for sm_%d", why, d.cc)
	}
	b, err := fs.ReadFile(nvidia.PTX, nvidia.PTXName("matmul.cu", arch))
	if err != nil {
		return nil, err
	}
	if d.own, err = d.ctx.LoadPTX(string(b)); err != nil {
		return nil, fmt.Errorf("embedded compute_%d PTX, loaded because of %s: %w", arch, why, err)
	}
	return d.own, nil
}

// tooNewPTX reports the driver refusing PTX made by a newer CUDA than its own.
func tooNewPTX(err error) bool {
	var ce *nvidia.Error
	return errors.As(err, &ce) && ce.Name == "CUDA_ERROR_UNSUPPORTED_PTX_VERSION"
}

func (d *device) cublas() (*nvidia.CuBLAS, error) {
	if d.blas != nil {
		return d.blas, nil
	}
	var err error
	d.blas, err = nvidia.Loader{}.CuBLAS(d.ctx)
	return d.blas, err
}

// sticky reports a CUDA error that leaves the context unusable (the 7xx launch failures): the worker
// must exit and be restarted.
func sticky(err error) bool {
	var ce *nvidia.Error
	return errors.As(err, &ce) && ce.Code >= 700 && ce.Code < 800
}

// run measures one kernel at one size: warm-up and Repeats timed launches (CUDA events), optional
// copy times, and the relative error against a float64 reference. progress is called after each launch.
func (d *device) run(req Request, progress func(done, total int)) (harness.Result, error) {
	n := req.N
	res := harness.Result{Kernel: req.Kernel, N: n, DType: req.DType}
	if n < 1 || req.Repeats < 1 {
		return res, fmt.Errorf("bad run request: n=%d repeats=%d", n, req.Repeats)
	}
	if req.Kernel == "custom" {
		return d.runCustom(req, res, progress)
	}
	if req.DType == "float64" {
		return runTyped[float64](d, req, res, progress)
	}
	return runTyped[float32](d, req, res, progress)
}

// plan is how one kernel is launched: the device buffers it reads and a function that launches it.
type plan struct {
	launch    func() error
	precision string
	// in16, when set, converts the inputs to 16 bits (BF16 or FP16), padded to padded×padded, the
	// size the kernel runs on.
	in16   func(a []float32) []uint16
	padded int
}

// PoisonWord is what C holds before a kernel writes it, in every 32-bit word: 0xFFFFFFFF, a NaN as
// float32 and (in pairs) as float64, so an entry no thread wrote fails the check instead of passing
// for zero. The virtual GPU starts its output buffers from the same bytes (vgpu.Poison, 0xFF each).
const PoisonWord = 0xFFFFFFFF

// launcher returns the function that launches a row of the GPU kernel table as l says, on the device
// buffers *dA, *dB and *dC (read when it is called, after they are allocated).
func (d *device) launcher(row nvidia.Kernel, l nvidia.Launch, dA, dB, dC *nvidia.DevicePtr, dtype string) (func() error, error) {
	m := l.N
	if row.BLAS != nil {
		blas, err := d.cublas()
		if err != nil {
			return nil, err
		}
		switch call := *row.BLAS; {
		case call.GemmEx:
			return func() error { return blas.GemmEx(m, m, m, *dA, *dB, call.Input, *dC, call.Compute) }, nil
		case dtype == "float64":
			return func() error { return blas.Dgemm(m, m, m, *dA, *dB, *dC) }, nil
		default:
			return func() error { return blas.Sgemm(m, m, m, *dA, *dB, *dC) }, nil
		}
	}
	own, err := d.ownModule()
	if err != nil {
		return nil, err
	}
	fn, err := own.Function(l.Entry)
	if err != nil {
		return nil, err
	}
	return func() error {
		return fn.Launch(l.Grid, l.Block, *dA, *dB, *dC, int32(m), int32(m), int32(m))
	}, nil
}

// runTyped measures a row of the GPU kernel table on random n×n matrices of T: it plans the launch,
// allocates and fills the device buffers, times the launches and the copies, and checks C against a
// float64 reference. Each step is a function below, in the order runTyped calls them.
func runTyped[T kernels.Float](d *device, req Request, res harness.Result, progress func(done, total int)) (harness.Result, error) {
	n := req.N
	var zero T
	elem := int(unsafe.Sizeof(zero))
	a, b := make([]T, n*n), make([]T, n*n)
	numeric.Random(d.rng, a)
	numeric.Random(d.rng, b)

	var dA, dB, dC nvidia.DevicePtr
	p, err := d.planKernel(req, &dA, &dB, &dC)
	if err != nil {
		return res, err
	}
	// Device buffers: inputs in T (or 16-bit), output always T (FP32 for the 16-bit paths).
	pd := p.padded
	a16, b16, inBytes := deviceInputs(p, a, b, elem)
	outBytes := pd * pd * elem
	free, err := d.allocABC(&dA, &dB, &dC, inBytes, outBytes)
	if err != nil {
		return res, err
	}
	defer free()

	timed, destroy, err := d.timer()
	if err != nil {
		return res, err
	}
	defer destroy()

	h2d, err := timed(func() error { return copyInputs(d.ctx, dA, dB, a, b, a16, b16) })
	if err != nil {
		return res, err
	}
	if err := d.ctx.Fill32(dC, PoisonWord, outBytes/4); err != nil { // poison: NaN until written
		return res, err
	}
	samples, err := timeLaunches(timed, p.launch, req.Repeats, progress)
	if err != nil {
		return res, err
	}
	c, d2h, err := fetchOutput[T](d, timed, dC, n, pd)
	if err != nil {
		return res, err
	}
	rel, err := checkedError(c, a, b, n, d.rng)
	if err != nil {
		return res, err
	}
	res.Seconds = numeric.Median(samples)
	res.MinSeconds, res.MaxSeconds = slices.Min(samples), slices.Max(samples)
	res.GFLOPS = kernels.FLOPs(n, n, n) / res.Seconds / 1e9
	res.RelError, res.OK = rel, rel <= Tolerance(p.precision)
	if req.Transfers {
		res.H2DSeconds, res.D2HSeconds = h2d, d2h
		res.TransferGBps = float64(2*inBytes+outBytes) / (h2d + d2h) / 1e9
	}
	return res, nil
}

// planKernel looks req.Kernel up in the GPU kernel table (gpu/nvidia/ladder.go): a cuBLAS call or an
// entry point of matmul.cu, with its launch shape and input precision on this device. The plan's
// launch reads the device buffers *dA, *dB and *dC when it is called, after they are allocated.
func (d *device) planKernel(req Request, dA, dB, dC *nvidia.DevicePtr) (plan, error) {
	n := req.N
	row, ok := nvidia.LookupKernel(req.Kernel)
	if !ok {
		return plan{}, fmt.Errorf("unknown GPU kernel %q", req.Kernel)
	}
	if !row.Takes(req.DType) {
		return plan{}, fmt.Errorf("%s takes %s matrices only", req.Kernel, strings.Join(row.DTypes, " or "))
	}
	if row.MinCC > d.cc {
		return plan{}, fmt.Errorf("%s needs compute capability %d.%d or newer; this GPU is %d.%d", req.Kernel, row.MinCC/10, row.MinCC%10, d.cc/10, d.cc%10)
	}
	l := row.LaunchFor(n, d.cc, req.DType)
	p := plan{precision: l.Precision, padded: l.N}
	if conv := to16(l.Precision); conv != nil {
		p.in16 = func(x []float32) []uint16 { return Pad(x, n, l.N, conv) }
	}
	var err error
	if row.Arch != "" { // a Hopper rung: hopper.cu's PTX, BF16 inputs with tensor maps over them
		p.launch, err = d.hopperLauncher(row, l, dA, dB, dC, l.N*l.N*2)
	} else {
		p.launch, err = d.launcher(row, l, dA, dB, dC, req.DType)
	}
	if err != nil {
		return plan{}, err
	}
	return p, nil
}

// deviceInputs returns A and B as the kernel reads them and the bytes each takes on the device
// (elem bytes an entry as they are). Where the plan takes 16-bit inputs, a16 and b16 are a and b
// converted and padded to the plan's size; else they are nil and a and b are copied as they are.
func deviceInputs[T kernels.Float](p plan, a, b []T, elem int) (a16, b16 []uint16, inBytes int) {
	pd := p.padded
	if p.in16 == nil {
		return nil, nil, pd * pd * elem
	}
	return p.in16(any(a).([]float32)), p.in16(any(b).([]float32)), pd * pd * 2
}

// allocABC allocates *dA and *dB of inBytes each and *dC of outBytes, in that order, and returns
// the function that frees them, *dC first. When an allocation fails it frees those already made.
func (d *device) allocABC(dA, dB, dC *nvidia.DevicePtr, inBytes, outBytes int) (free func(), err error) {
	var made []nvidia.DevicePtr
	free = func() {
		for _, p := range slices.Backward(made) {
			d.ctx.Free(p)
		}
	}
	for _, buf := range []struct {
		ptr   *nvidia.DevicePtr
		bytes int
	}{{dA, inBytes}, {dB, inBytes}, {dC, outBytes}} {
		if *buf.ptr, err = d.ctx.Alloc(buf.bytes); err != nil {
			free()
			return nil, err
		}
		made = append(made, *buf.ptr)
	}
	return free, nil
}

// copyInputs copies A to dA and B to dB: the 16-bit ones when there are (a16 not nil), else a and b.
func copyInputs[T kernels.Float](ctx *nvidia.Context, dA, dB nvidia.DevicePtr, a, b []T, a16, b16 []uint16) error {
	if a16 != nil {
		if err := nvidia.CopyIn(ctx, dA, a16); err != nil {
			return err
		}
		return nvidia.CopyIn(ctx, dB, b16)
	}
	if err := nvidia.CopyIn(ctx, dA, a); err != nil {
		return err
	}
	return nvidia.CopyIn(ctx, dB, b)
}

// timeLaunches runs launch once to warm up and then repeats times, each timed, calling progress after
// every launch, and returns the timed launches' seconds.
func timeLaunches(timed func(func() error) (float64, error), launch func() error, repeats int, progress func(done, total int)) ([]float64, error) {
	total := repeats + 1
	if _, err := timed(launch); err != nil { // warm-up
		return nil, err
	}
	progress(1, total)
	samples := make([]float64, 0, repeats)
	for r := range repeats {
		s, err := timed(launch)
		if err != nil {
			return nil, err
		}
		samples = append(samples, s)
		progress(r+2, total)
	}
	return samples, nil
}

// fetchOutput waits for the device, copies C (pd×pd entries of T) back from dC, timed, and drops the
// padding: it returns the n×n result and the copy's seconds.
func fetchOutput[T kernels.Float](d *device, timed func(func() error) (float64, error), dC nvidia.DevicePtr, n, pd int) ([]T, float64, error) {
	if err := d.ctx.Synchronize(); err != nil {
		return nil, 0, err
	}
	c := make([]T, pd*pd)
	d2h, err := timed(func() error { return nvidia.CopyOut(d.ctx, c, dC) })
	if err != nil {
		return nil, 0, err
	}
	if pd != n { // drop the padding
		for i := range n {
			copy(c[i*n:i*n+n], c[i*pd:i*pd+n])
		}
		c = c[:n*n]
	}
	return c, d2h, nil
}

// checkedError is C's error relative to a float64 product of a and b (RelError), with an infinite or
// NaN error (a C that holds NaN, such as an entry no thread wrote) made math.MaxFloat64.
func checkedError[T kernels.Float](c, a, b []T, n int, rng *rand.Rand) (float64, error) {
	rel, err := RelError(context.Background(), c, a, b, n, rng)
	if err != nil {
		return 0, err
	}
	if math.IsInf(rel, 0) || math.IsNaN(rel) {
		rel = math.MaxFloat64
	}
	return rel, nil
}
