// Package calibrate measures the rates behind every run estimate on this machine (estimate.Rates): each
// CPU kernel per precision at a ladder of sizes, the harness's per-element work, the SIMT emulator per
// ladder kernel and the systolic simulator. It takes a few seconds on a 2-core machine: large sizes
// are timed on a slice of rows of the product (a kernel's cost per row is the same for every row), so
// a 4096 point costs one block of rows, not a whole product. Run it where nothing else is timed (the
// server's run queue), and keep the result with Save / Load under os.UserCacheDir.
package calibrate

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"time"

	"github.com/gpuplayground/playground/cells"
	"github.com/gpuplayground/playground/cells/shared/kernelcell"
	"github.com/gpuplayground/playground/estimate"
	"github.com/gpuplayground/playground/gpu/nvidia"
	"github.com/gpuplayground/playground/gpumodel"
	"github.com/gpuplayground/playground/harness"
	"github.com/gpuplayground/playground/kernels"
	"github.com/gpuplayground/playground/numeric"
	"github.com/gpuplayground/playground/sim/systolicarray"
	"github.com/gpuplayground/playground/vgpurun"
)

// Options bound a calibration. The zero value is valid.
type Options struct {
	// MaxN is the largest size measured (the server's largest n); 0 means 4096.
	MaxN int
	// RunTimeout stops a kernel's ladder at the first size whose whole call is projected over it (a
	// larger size would be refused anyway); 0 means 120 s.
	RunTimeout time.Duration
	// SliceBudget is the longest one timed slice is allowed to be projected to take; a larger size
	// is not measured and the kernel's largest measured rate stands for it. 0 means 0.25 s.
	SliceBudget time.Duration
	// Kernels, if set, limits the CPU kernels measured (tests); others keep no rates.
	Kernels []string
	// Sizes, if set, replaces the ladder of sizes (tests).
	Sizes []int
	// SkipSimulators skips the SIMT emulator and the systolic simulator (tests).
	SkipSimulators bool
	// SIMTKernels, if set, limits the ladder kernels (vgpurun.Ladder's names) the SIMT emulator is
	// timed on (tests: the three largest Hopper rungs take about 7 CPU s); others keep no rates.
	SIMTKernels []string
}

// Ladder is the sizes every CPU kernel is measured at (up to Options.MaxN), and OddLadder naive's
// second series, one size below each, whose row stride is not a power of two.
var (
	Ladder    = []int{16, 32, 64, 128, 256, 512, 1024, 2048, 4096}
	OddLadder = []int{62, 124, 248, 496, 992, 1984, 3968}
)

// minSlice is the shortest timed call: shorter slices are grown (more rows) to reach it.
const minSlice = 3 * time.Millisecond

// Measure measures the rates. It returns ctx.Err() when cancelled (within one timed slice).
func Measure(ctx context.Context, opt Options) (*estimate.Rates, error) {
	if opt.MaxN <= 0 {
		opt.MaxN = 4096
	}
	if opt.RunTimeout <= 0 {
		opt.RunTimeout = 120 * time.Second
	}
	if opt.SliceBudget <= 0 {
		opt.SliceBudget = 250 * time.Millisecond
	}
	sizes := opt.Sizes
	if sizes == nil {
		sizes = Ladder
	}
	r := &estimate.Rates{Source: "calibrated", Measured: time.Now().UTC(), CPU: CPUModel(), Procs: runtime.GOMAXPROCS(0),
		Kernels: map[string][]estimate.Point{}, SIMT: map[string]float64{}, SIMTN: map[string]int{}, SIMTExp: map[string]float64{},
		SIMTLaunch: map[string]float64{}, SIMTMix: map[string][estimate.NumInstrClasses]float64{}}
	var ks []kernels.Kernel
	for _, k := range kernels.CPU() {
		if opt.Kernels == nil || slices.Contains(opt.Kernels, k.Name) {
			ks = append(ks, k)
		}
	}
	odd := OddLadder
	if opt.Sizes != nil {
		odd = nil
	}
	var err error
	for _, dtype := range []string{"float32", "float64"} {
		if dtype == "float64" {
			err = measureKernels[float64](ctx, r, ks, dtype, sizes, odd, opt)
		} else {
			err = measureKernels[float32](ctx, r, ks, dtype, sizes, odd, opt)
		}
		if err != nil {
			return nil, err
		}
	}
	fill, err := fillNs(ctx)
	if err != nil {
		return nil, err
	}
	r.FillNs = fill
	if r.PointSeconds, err = pointSeconds(ctx); err != nil {
		return nil, err
	}
	if opt.SkipSimulators {
		return r, nil
	}
	for _, k := range opt.simtKernels() {
		if err := simtRate(ctx, r, k); err != nil {
			return nil, err
		}
	}
	if r.Systolic, err = systolicRates(ctx); err != nil {
		return nil, err
	}
	return r, nil
}

// simtKernels is the ladder kernels Measure times in the SIMT emulator: SIMTKernels where set, else
// every one of vgpurun.Ladder.
func (o Options) simtKernels() []string {
	if o.SIMTKernels != nil {
		return o.SIMTKernels
	}
	return vgpurun.Ladder()
}

// measureKernels times every kernel of ks in dtype at each size (the naive kernel also at the odd
// sizes), one size at a time so that all kernels share one B, and stores the smoothed points in r. A
// kernel's ladder stops at the first size whose whole call is projected over the run time limit, or
// whose slice is projected over the slice budget.
func measureKernels[T kernels.Float](ctx context.Context, r *estimate.Rates, ks []kernels.Kernel, dtype string, sizes, odd []int, opt Options) error {
	all := slices.Sorted(slices.Values(append(slices.Clone(sizes), odd...)))
	stopped := map[string]bool{}
	raw := map[string][]estimate.Point{}
	for _, n := range slices.Compact(all) {
		if n > opt.MaxN {
			break
		}
		// B is the whole k×n matrix; A and C only the slice's rows. Values need not be random for
		// timing, only ordinary (no zeros, subnormals or infinities).
		b := pattern[T](n * n)
		maxRows := 0
		for _, k := range ks {
			maxRows = max(maxRows, sliceRows(k.Name, n))
		}
		a, c := pattern[T](maxRows*n), make([]T, maxRows*n)
		for _, k := range ks {
			key := estimate.KernelKey(k.Name, dtype)
			if slices.Contains(odd, n) && !slices.Contains(sizes, n) {
				if k.Name != "naive" {
					continue
				}
				key += "/odd"
			} else if !slices.Contains(sizes, n) {
				continue
			}
			if stopped[key] {
				continue
			}
			rows := sliceRows(k.Name, n)
			if pts := raw[key]; len(pts) > 0 {
				if time.Duration(pts[len(pts)-1].SPF*float64(rows)*float64(n)*float64(n)*1e9) > opt.SliceBudget {
					stopped[key] = true
					continue
				}
			}
			f, ok := any(k.F32).(kernels.Func[T])
			if !ok {
				f = any(k.F64).(kernels.Func[T])
			}
			spf, err := timeSlice(ctx, f, k.Name, a, b, c, n, rows)
			if err != nil {
				return fmt.Errorf("calibrate %s %s n=%d: %w", k.Name, dtype, n, err)
			}
			raw[key] = append(raw[key], estimate.Point{N: n, SPF: spf})
			if spf*float64(n)*float64(n)*float64(n) > opt.RunTimeout.Seconds() {
				stopped[key] = true
			}
		}
	}
	for key, pts := range raw {
		r.Kernels[key] = smooth(pts)
	}
	return nil
}

// smooth replaces each point's cost by the median of it and its neighbours (the ends: of two), so
// that one slice slowed by another process does not become the estimate at its size; costs are
// noisy on a shared machine, and a rate's real changes with n (caches) span more than one step.
func smooth(pts []estimate.Point) []estimate.Point {
	out := slices.Clone(pts)
	for i := range pts {
		lo, hi := max(i-1, 0), min(i+2, len(pts))
		var xs []float64
		for _, p := range pts[lo:hi] {
			xs = append(xs, p.SPF)
		}
		if len(xs) == 2 { // an end: the larger of the two, pessimistic
			out[i].SPF = max(xs[0], xs[1])
			continue
		}
		out[i].SPF = numeric.Median(xs)
	}
	return out
}

// pattern returns n ordinary values in [0.5, 1.5).
func pattern[T kernels.Float](n int) []T {
	xs := make([]T, n)
	for i := range xs {
		xs[i] = T(0.5 + float64(i%97)/97)
	}
	return xs
}

// sliceRows is the fewest rows of an n×n×n product that behave like the whole product for a kernel:
// its block of rows (times the cores for the parallel kernels, so every core has a block).
func sliceRows(name string, n int) int {
	p := runtime.GOMAXPROCS(0)
	rows := 1
	switch name {
	case "tiled", "gonum":
		rows = 64
	case "parallel":
		rows = 64 * p
	case "packed", "simd":
		rows = 96
	case "simd-parallel":
		rows = 96 * p
	}
	return min(rows, n)
}

// timeSlice times rows×n×n products (rows of A times B) and returns the seconds per multiply-add: a
// warm-up call, then the median of three timed calls (the warm-up alone when it takes over 50 ms);
// rows grow until a call takes minSlice, and calls repeat within a timing below that.
func timeSlice[T kernels.Float](ctx context.Context, f kernels.Func[T], name string, a, b, c []T, n, rows int) (float64, error) {
	reps := 1 // calls per timing, for products too small to time alone
	call := func(m int) (float64, error) {
		start := time.Now()
		for range reps {
			if err := f(ctx, c, a, b, m, n, n, kernels.Options{}); err != nil {
				return 0, err
			}
		}
		return time.Since(start).Seconds() / float64(reps), nil
	}
	t, err := call(rows) // warm-up, and a first look at the time
	if err != nil {
		return 0, err
	}
	if t < minSlice.Seconds() && rows < n && rows < len(a)/n {
		block := sliceRows(name, n)
		grow := int(math.Ceil(minSlice.Seconds() / math.Max(t, 1e-7) * float64(rows)))
		rows = min(len(a)/n, (grow+block-1)/block*block)
		if t, err = call(rows); err != nil { // warm the larger slice
			return 0, err
		}
	}
	if t > 0.05 {
		// A slice this long is all arithmetic (its inputs are already in memory): the first call is
		// the measurement, which keeps the calibration within seconds.
		return t / (float64(rows) * float64(n) * float64(n)), nil
	}
	if t < minSlice.Seconds() {
		reps = int(math.Ceil(minSlice.Seconds() / math.Max(t, 1e-7)))
	}
	ts := []float64{}
	for range 3 {
		if t, err = call(rows); err != nil {
			return 0, err
		}
		ts = append(ts, t)
	}
	return numeric.Median(ts) / (float64(rows) * float64(n) * float64(n)), nil
}

// fillNs times the harness's random input per element.
func fillNs(ctx context.Context) (float64, error) {
	rng := rand.New(rand.NewPCG(3, 4))
	xs := make([]float64, 1<<20)
	var ts []float64
	for range 3 {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		start := time.Now()
		numeric.Random(rng, xs)
		ts = append(ts, time.Since(start).Seconds())
	}
	return numeric.Median(ts) / float64(len(xs)) * 1e9, nil
}

// pointSeconds times a matmul cell's run of tiny products through the harness, as the server runs it
// (a GC per kernel, a row and a chart per result), and returns its cost per result.
func pointSeconds(ctx context.Context) (float64, error) {
	const points = 4
	s := harness.Spec{Kernels: []string{"ikj"}, Sizes: []int{8, 8, 8, 8}, DType: "float32", Repeats: 1, Threads: 1}
	env := harness.Env{Kernels: kernels.CPU()}
	var ts []float64
	for range 3 {
		start := time.Now()
		if err := harness.Run(ctx, s, env, &kernelcell.Results{E: drawing{}}); err != nil {
			return 0, err
		}
		ts = append(ts, time.Since(start).Seconds()/points)
	}
	return numeric.Median(ts), nil
}

// SIMT measures the emulator's rates of the ladder kernels named (vgpurun.Ladder's names), as Measure
// does, into fresh rates that hold nothing else (SIMT, SIMTN, SIMTExp, SIMTLaunch and SIMTMix): for
// comparing kernels measured side by side, as bench/estimates -fill-defaults does.
func SIMT(ctx context.Context, kernels []string) (*estimate.Rates, error) {
	r := &estimate.Rates{Source: "calibrated", Measured: time.Now().UTC(), CPU: CPUModel(), Procs: runtime.GOMAXPROCS(0),
		SIMT: map[string]float64{}, SIMTN: map[string]int{}, SIMTExp: map[string]float64{},
		SIMTLaunch: map[string]float64{}, SIMTMix: map[string][estimate.NumInstrClasses]float64{}}
	for _, k := range kernels {
		if err := simtRate(ctx, r, k); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// simtRate times one ladder kernel in the emulator at two sizes (64 and 128; 128 and 256 for
// regblock, whose 128×128 tile leaves a smaller grid mostly idle; Pad and twice Pad for a kernel that
// pads n to more than 64, which would run the same padded size at both) and fits t ∝ n^p between them, p
// kept within [2.5, 3.5] ([1.8, 3.5] for regblock): bounds from sweeps up to n = 512 on a 2-vCPU
// AMD EPYC (docs/benchmarks.md), where the two-point fit alone under-estimated n = 512 by 2 to 4×.
func simtRate(ctx context.Context, r *estimate.Rates, kernel string) error {
	ns := [2]int{64, 128}
	if kernel == "regblock" {
		ns = [2]int{128, 256}
	}
	if row, ok := nvidia.LookupKernel("cuda-" + kernel); ok && row.Pad > ns[0] {
		ns = [2]int{row.Pad, 2 * row.Pad} // the Hopper rungs pad n to whole tiles: time sizes that differ
	}
	var ts [2]float64
	var res vgpurun.Result
	for i, n := range ns {
		start := time.Now() // a simt cell's run of kernel at n, as cells/simt runs it
		var err error
		if res, err = vgpurun.Run(ctx, vgpurun.Request{Kernel: "cuda-" + kernel, N: n, DType: "float32", GPU: gpumodel.GPUs[0]}); err != nil {
			return fmt.Errorf("%s: %w", kernel, err)
		}
		ts[i] = time.Since(start).Seconds()
	}
	// the launch at the larger n alone, by instruction class, for the cost per thread instruction
	// (estimate.Rates.InstrCosts) that prices a learner's kernel from a probe of one block
	r.SIMTLaunch[kernel], r.SIMTMix[kernel] = res.EmulationSeconds, vgpurun.InstrMix(res.Counts)
	p := math.Log(ts[1]/ts[0]) / math.Log(float64(ns[1])/float64(ns[0]))
	lo := 2.5 // one thread per output: the fit at small n understates the growth measured up to 512
	if kernel == "regblock" {
		lo = 1.8 // its grid grows from 1 block to 16 over the range, and the cores fill
	}
	n := float64(ns[1])
	r.SIMT[kernel], r.SIMTN[kernel], r.SIMTExp[kernel] = ts[1]/(n*n*n), ns[1], min(max(p, lo), 3.5)
	return nil
}

// systolicRates times the simulator on two arrays without animation (32 and 128) and two with (4 and
// 16), and fits cost per cycle = a + b·N² to each pair.
func systolicRates(ctx context.Context) (estimate.SystolicRates, error) {
	perCycle := func(N, m int, animated bool) (float64, error) {
		p := systolicarray.Product{Array: N, M: m, N: N, K: N, ClockMHz: 700}
		var frame func(systolicarray.Frame) // an animated array copies its state every cycle
		if animated {
			frame = func(systolicarray.Frame) {}
		}
		start := time.Now()
		res, err := systolicarray.Simulate(ctx, p, frame)
		if err != nil {
			return 0, err
		}
		return time.Since(start).Seconds() / float64(max(res.Cycles, 1)), nil
	}
	fit := func(n1, m1, n2, m2 int, animated bool) (a, b float64, err error) {
		t1, err := perCycle(n1, m1, animated)
		if err != nil {
			return 0, 0, err
		}
		t2, err := perCycle(n2, m2, animated)
		if err != nil {
			return 0, 0, err
		}
		x1, x2 := float64(n1*n1), float64(n2*n2)
		b = (t2 - t1) / (x2 - x1)
		if b <= 0 { // noise: price every cycle as the larger array's, per PE
			return 0, math.Max(t1/x1, t2/x2), nil
		}
		return math.Max(t1-b*x1, 0), b, nil
	}
	var s estimate.SystolicRates
	var err error
	if s.Cycle, s.PE, err = fit(32, 1024, 128, 256, false); err != nil {
		return s, err
	}
	if s.AnimCycle, s.AnimPE, err = fit(4, 2048, systolicarray.MaxAnimated, 1024, true); err != nil {
		return s, err
	}
	s.AnimatedN = systolicarray.MaxAnimated
	return s, nil
}

// drawing is the emitter of pointSeconds' runs: it draws every chart offered (a pessimistic price:
// the server draws at most one per 250 ms) and drops everything else.
type drawing struct{}

func (drawing) Emit(cells.Event)                  {}
func (drawing) Progress(done, total int)          {}
func (drawing) Note(level, text string)           {}
func (drawing) Table(cells.Table)                 {}
func (drawing) Row(cells.Row)                     {}
func (drawing) Frames(...any)                     {}
func (drawing) Text(title, body string)           {}
func (drawing) Chart(draw func() (string, error)) { _, _ = draw() }
