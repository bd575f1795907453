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
)

// device is the worker's GPU state, made on the first run and kept for the worker's life. All of it
// is used from the one OS thread that Serve locks.
type device struct {
	ctx  *nvidia.Context
	cc   int
	own  *nvidia.Module // gpu/nvidia/src/matmul.cu
	blas *nvidia.CuBLAS
	rng  *rand.Rand
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
	return &device{ctx: ctx, cc: devs[0].ComputeCapability, rng: rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))}, nil
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

func runTyped[T kernels.Float](d *device, req Request, res harness.Result, progress func(done, total int)) (harness.Result, error) {
	n := req.N
	var zero T
	elem := int(unsafe.Sizeof(zero))
	a, b := make([]T, n*n), make([]T, n*n)
	kernels.Random(d.rng, a)
	kernels.Random(d.rng, b)

	p := plan{precision: req.DType, padded: n}
	var dA, dB, dC nvidia.DevicePtr
	var err error
	// One of the GPU kernel table's rows (gpu/nvidia/ladder.go): a cuBLAS call or an entry point
	// of matmul.cu, with its launch shape and input precision on this device.
	row, ok := nvidia.LookupKernel(req.Kernel)
	if !ok {
		return res, fmt.Errorf("unknown GPU kernel %q", req.Kernel)
	}
	if !row.Takes(req.DType) {
		return res, fmt.Errorf("%s takes %s matrices only", req.Kernel, strings.Join(row.DTypes, " or "))
	}
	l := row.LaunchFor(n, d.cc, req.DType)
	p.precision, p.padded = l.Precision, l.N
	if conv := to16(l.Precision); conv != nil {
		p.in16 = func(x []float32) []uint16 { return Pad(x, n, l.N, conv) }
	}
	if p.launch, err = d.launcher(row, l, &dA, &dB, &dC, req.DType); err != nil {
		return res, err
	}

	// Device buffers: inputs in T (or 16-bit), output always T (FP32 for the 16-bit paths).
	pd := p.padded
	inBytes := pd * pd * elem
	var a16, b16 []uint16
	if p.in16 != nil {
		a16 = p.in16(any(a).([]float32))
		b16 = p.in16(any(b).([]float32))
		inBytes = pd * pd * 2
	}
	if dA, err = d.ctx.Alloc(inBytes); err != nil {
		return res, err
	}
	defer d.ctx.Free(dA)
	if dB, err = d.ctx.Alloc(inBytes); err != nil {
		return res, err
	}
	defer d.ctx.Free(dB)
	if dC, err = d.ctx.Alloc(pd * pd * elem); err != nil {
		return res, err
	}
	defer d.ctx.Free(dC)

	timed, destroy, err := d.timer()
	if err != nil {
		return res, err
	}
	defer destroy()

	h2d, err := timed(func() error {
		if a16 != nil {
			if err := nvidia.CopyIn(d.ctx, dA, a16); err != nil {
				return err
			}
			return nvidia.CopyIn(d.ctx, dB, b16)
		}
		if err := nvidia.CopyIn(d.ctx, dA, a); err != nil {
			return err
		}
		return nvidia.CopyIn(d.ctx, dB, b)
	})
	if err != nil {
		return res, err
	}
	if err := d.ctx.Fill32(dC, PoisonWord, pd*pd*elem/4); err != nil { // poison: NaN until written
		return res, err
	}
	total := req.Repeats + 1
	if _, err := timed(p.launch); err != nil { // warm-up
		return res, err
	}
	progress(1, total)
	samples := make([]float64, 0, req.Repeats)
	for r := range req.Repeats {
		s, err := timed(p.launch)
		if err != nil {
			return res, err
		}
		samples = append(samples, s)
		progress(r+2, total)
	}
	if err := d.ctx.Synchronize(); err != nil {
		return res, err
	}
	c := make([]T, pd*pd)
	d2h, err := timed(func() error { return nvidia.CopyOut(d.ctx, c, dC) })
	if err != nil {
		return res, err
	}
	if pd != n { // drop the padding
		for i := range n {
			copy(c[i*n:i*n+n], c[i*pd:i*pd+n])
		}
		c = c[:n*n]
	}
	rel, err := RelError(context.Background(), c, a, b, n, d.rng)
	if err != nil {
		return res, err
	}
	if math.IsInf(rel, 0) || math.IsNaN(rel) {
		rel = math.MaxFloat64
	}
	res.Seconds = kernels.Median(samples)
	res.MinSeconds, res.MaxSeconds = slices.Min(samples), slices.Max(samples)
	res.GFLOPS = kernels.FLOPs(n, n, n) / res.Seconds / 1e9
	res.RelError, res.OK = rel, rel <= Tolerance(p.precision)
	if req.Transfers {
		res.H2DSeconds, res.D2HSeconds = h2d, d2h
		res.TransferGBps = float64(2*inBytes+pd*pd*elem) / (h2d + d2h) / 1e9
	}
	return res, nil
}
