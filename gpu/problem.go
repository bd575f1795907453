package gpu

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/gpuplayground/playground/gpu/nvidia"
	"github.com/gpuplayground/playground/harness"
	"github.com/gpuplayground/playground/numeric"
	"github.com/gpuplayground/playground/problems"
)

// customFunction loads a learner's kernel from req.PTX, compiled beforehand by the sandboxed
// Compiler (this worker, which holds the GPU and runs unconfined, never compiles learner source:
// docs/security.md), and returns its entry point and the module to unload after the run.
func (d *device) customFunction(req Request) (*nvidia.Function, *nvidia.Module, error) {
	if req.PTX == "" {
		return nil, nil, errors.New("a custom kernel needs its PTX (compiled by the Compiler), not its source")
	}
	mod, err := d.ctx.LoadPTX(req.PTX)
	if tooNewPTX(err) {
		return nil, nil, fmt.Errorf("the compiler makes PTX newer than this driver accepts: use an NVRTC no newer than the driver's CUDA version: %w", err)
	}
	if err != nil {
		return nil, nil, err
	}
	fn, err := mod.Function(req.Entry)
	if err != nil {
		mod.Unload()
		return nil, nil, err
	}
	return fn, mod, nil
}

// problemRequest resolves req's problem (matmul where it names none) and precision (the dtype's
// default where it names none).
func problemRequest(req Request) (*problems.Problem, problems.Precision, error) {
	p, err := problems.Lookup(cmp.Or(req.Problem, problems.Default))
	if err != nil {
		return nil, problems.Precision{}, err
	}
	prec := problems.DefaultPrecision(req.DType)
	if req.Precision != "" {
		if prec, err = problems.LookupPrecision(req.Precision); err != nil {
			return nil, prec, err
		}
	}
	return p, prec, nil
}

// deviceBuffers are one launch's buffers on the device, in the problem's order.
type deviceBuffers struct {
	ptrs  []nvidia.DevicePtr
	bytes []int
}

func (d *device) allocBuffers(p *problems.Problem, n int, dtype string) (*deviceBuffers, error) {
	db := &deviceBuffers{}
	for _, b := range p.Buffers {
		size := b.Bytes(n, dtype)
		ptr, err := d.ctx.Alloc(size)
		if err != nil {
			db.free(d)
			return nil, err
		}
		db.ptrs, db.bytes = append(db.ptrs, ptr), append(db.bytes, size)
	}
	return db, nil
}

func (db *deviceBuffers) free(d *device) {
	for _, p := range db.ptrs {
		d.ctx.Free(p)
	}
}

// runCustom measures a learner's kernel for its problem (req.Problem, docs/worker.md): fresh inputs
// copied in, the output poisoned (all ones: NaN) once and, where the problem zeroes it, zeroed
// before every launch (outside the timed span), a warm-up and Repeats timed launches with
// req.SharedBytes of dynamic shared memory and req.TensorMaps made over the device buffers
// (tensorMapArgs), then the output checked against the problem's float64
// reference at req.Precision; where the problem's full reference is too costly at n (matmul above
// 1024, attention above 512: problems.Problem.SampledCheck), on checkEntries' random sample.
func (d *device) runCustom(req Request, res harness.Result, progress func(done, total int)) (harness.Result, error) {
	p, prec, err := problemRequest(req)
	if err != nil {
		return res, err
	}
	n := req.N
	if n < 1 || n > p.MaxN {
		return res, fmt.Errorf("n=%d: %s takes n from 1 to %d", n, p.Name, p.MaxN)
	}
	fn, mod, err := d.customFunction(req)
	if err != nil {
		return res, err
	}
	defer mod.Unload()
	host := p.Inputs(d.rng, n, req.DType)
	db, err := d.allocBuffers(p, n, req.DType)
	if err != nil {
		return res, err
	}
	defer db.free(d)
	args := make([]any, 0, len(db.ptrs)+len(p.ParamNames))
	for _, ptr := range db.ptrs {
		args = append(args, ptr)
	}
	for _, v := range p.Params(n) {
		args = append(args, v)
	}
	maps, err := d.tensorMapArgs(p, req, db)
	if err != nil {
		return res, err
	}
	args = append(args, maps...)
	if err := checkLaunchParams(req.PTX, req.Entry, args); err != nil {
		return res, err
	}
	out := p.Out()
	zero := func() error {
		if !p.Buffers[out].Zeroed {
			return nil
		}
		return d.ctx.Fill32(db.ptrs[out], 0, db.bytes[out]/4)
	}
	launch := func() error { return fn.LaunchShared(req.Grid, req.Block, req.SharedBytes, args...) }
	samples, h2d, err := d.timeCustom(p, req, host, db, zero, launch, progress)
	if err != nil {
		return res, err
	}
	data := make([]byte, db.bytes[out])
	d2h, err := d.timedCopyOut(data, db.ptrs[out])
	if err != nil {
		return res, err
	}
	got := p.Buffers[out].Decode(data, req.DType)
	v, err := p.Check(context.Background(), n, host, got, checkEntries(p, n, len(got), d.rng), prec, req.DType)
	if err != nil {
		return res, err
	}
	res.Seconds = numeric.Median(samples)
	res.MinSeconds, res.MaxSeconds = slices.Min(samples), slices.Max(samples)
	res.GFLOPS = p.FLOPs(n) / res.Seconds / 1e9
	res.RelError, res.OK = v.Err, v.OK
	if req.Transfers {
		inBytes := 0
		for i, b := range db.bytes {
			if i != out {
				inBytes += b
			}
		}
		res.H2DSeconds, res.D2HSeconds = h2d, d2h
		res.TransferGBps = float64(inBytes+db.bytes[out]) / (h2d + d2h) / 1e9
	}
	return res, nil
}

// checkEntries is the output entries (of size entries) the check compares at n: nil (all of them)
// where p's full reference is affordable, else sampledEntries random ones drawn from rng.
func checkEntries(p *problems.Problem, n, size int, rng *rand.Rand) []int {
	if !p.SampledCheck(n) {
		return nil
	}
	which := make([]int, sampledEntries)
	for i := range which {
		which[i] = rng.IntN(size)
	}
	return which
}

// timer returns a function that times f on the stream with two CUDA events, and the function that
// destroys them.
func (d *device) timer() (func(f func() error) (float64, error), func(), error) {
	start, err := d.ctx.NewEvent()
	if err != nil {
		return nil, nil, err
	}
	stop, err := d.ctx.NewEvent()
	if err != nil {
		start.Destroy()
		return nil, nil, err
	}
	timed := func(f func() error) (float64, error) {
		if err := start.Record(); err != nil {
			return 0, err
		}
		if err := f(); err != nil {
			return 0, err
		}
		if err := stop.Record(); err != nil {
			return 0, err
		}
		return stop.Since(start)
	}
	return timed, func() { start.Destroy(); stop.Destroy() }, nil
}

// timeCustom copies the inputs in (timed: h2d), poisons the output, then times a warm-up and
// req.Repeats launches, calling zero before each; it returns the timed launches' seconds.
func (d *device) timeCustom(p *problems.Problem, req Request, host [][]float64, db *deviceBuffers,
	zero, launch func() error, progress func(done, total int)) ([]float64, float64, error) {
	timed, done, err := d.timer()
	if err != nil {
		return nil, 0, err
	}
	defer done()
	h2d, err := timed(func() error {
		for i, b := range p.Buffers {
			if !b.Output {
				if err := nvidia.CopyIn(d.ctx, db.ptrs[i], b.Encode(host[i], req.DType)); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, 0, err
	}
	out := p.Out()
	if err := d.ctx.Fill32(db.ptrs[out], PoisonWord, db.bytes[out]/4); err != nil { // poison: NaN until written
		return nil, 0, err
	}
	total := req.Repeats + 1
	samples := make([]float64, 0, req.Repeats)
	for r := range total {
		if err := zero(); err != nil {
			return nil, 0, err
		}
		s, err := timed(launch)
		if err != nil {
			return nil, 0, err
		}
		if r > 0 { // the first is the warm-up
			samples = append(samples, s)
		}
		progress(r+1, total)
	}
	return samples, h2d, d.ctx.Synchronize()
}

// timedCopyOut copies the device buffer src into dst, timed.
func (d *device) timedCopyOut(dst []byte, src nvidia.DevicePtr) (float64, error) {
	timed, done, err := d.timer()
	if err != nil {
		return 0, err
	}
	defer done()
	return timed(func() error { return nvidia.CopyOut(d.ctx, dst, src) })
}
