// Package estimate prices a run before it runs: Rates are how fast this machine does each piece of
// work a cell's estimate counts (every CPU kernel per precision and size, the harness's per-element
// work, the virtual GPU per ladder kernel, the systolic simulator), measured by package calibrate
// or, until then, Defaults; Current holds the rates one machine's runs use. Estimates are guesses
// made before running, never shown as measurements.
package estimate

import (
	_ "embed"
	"encoding/json"
	"errors"
	"math"
	"runtime"
	"slices"
	"sort"
	"time"

	"gonum.org/v1/gonum/mat"
)

// Rates are how fast this machine runs each piece of work that a cell estimate prices: every CPU
// kernel per precision at a ladder of sizes, the harness's per-element work, the SIMT emulator per
// ladder kernel and the systolic simulator. Package calibrate measures them (a few seconds, inside
// the server's run queue) and installs them in the machine's Current; until then estimates use
// Defaults. Estimates are guesses made before running, never shown as measurements.
type Rates struct {
	// Source says where the rates come from: "defaults" or "calibrated".
	Source string `json:"source"`
	// Measured is when they were measured (zero for the defaults); CPU the processor's model name
	// and Procs the GOMAXPROCS they were measured with (the parallel kernels' thread count).
	Measured time.Time `json:"measured"`
	CPU      string    `json:"cpu"`
	Procs    int       `json:"procs"`
	// Kernels maps "name/dtype" (e.g. "naive/float32") to the measured cost of one n×n×n call, in
	// seconds per multiply-add (n³ of them), at increasing n. For naive, "naive/float32/odd" holds
	// sizes whose row stride is not a multiple of 2 KiB: a power-of-two stride maps B's column walk
	// onto a few cache sets, and naive is up to 10× slower there than one size off.
	Kernels map[string][]Point `json:"kernels"`
	// FillNs is the harness's cost per matrix element of fresh random input, in nanoseconds (it also
	// prices poisoning C and checking the result).
	FillNs float64 `json:"fill_ns"`
	// PointSeconds is a run's cost per result besides the work itself: a garbage collection before
	// the timed calls, a table row and a redrawn chart (timed on a cell of tiny products).
	PointSeconds float64 `json:"point_seconds"`
	// SIMT maps an emulated ladder kernel to its emulation cost in seconds per thread multiply-add
	// (n³) at size SIMTN[kernel], and SIMTExp to the exponent p of its cost's growth, t ∝ n^p, fitted
	// between two sizes (the emulator's cost is not cubic: fixed costs per block and per barrier, and
	// more blocks to share among cores, make p 2 to 3).
	SIMT    map[string]float64 `json:"simt"`
	SIMTN   map[string]int     `json:"simt_n"`
	SIMTExp map[string]float64 `json:"simt_exp"`
	// SIMTLaunch maps an emulated ladder kernel to the seconds its launch alone took at SIMTN (the
	// virtual GPU's launch with the cache model, without drawing the inputs or checking C), and
	// SIMTMix to that launch's thread instructions by class (InstrClasses). InstrCosts fits the
	// emulator's cost per thread instruction of each class to them.
	SIMTLaunch map[string]float64                  `json:"simt_launch,omitempty"`
	SIMTMix    map[string][NumInstrClasses]float64 `json:"simt_mix,omitempty"`
	// Systolic is the simulator's cost per cycle of an N×N array: Cycle + PE·N² seconds, and, for
	// arrays animated in a cell (N ≤ AnimatedN, which copy the array's state every cycle), AnimCycle +
	// AnimPE·N².
	Systolic SystolicRates `json:"systolic"`
}

// Point is one calibration point: n and the seconds per multiply-add of one n×n×n call.
type Point struct {
	N   int     `json:"n"`
	SPF float64 `json:"spf"`
}

// SystolicRates price the systolic simulator; see Rates.Systolic.
type SystolicRates struct {
	Cycle     float64 `json:"cycle"`
	PE        float64 `json:"pe"`
	AnimCycle float64 `json:"anim_cycle"`
	AnimPE    float64 `json:"anim_pe"`
	AnimatedN int     `json:"animated_n"`
}

// KernelKey is the Rates.Kernels key of a kernel at a precision.
func KernelKey(name, dtype string) string { return name + "/" + dtype }

// AliasFree reports whether naive's column walk at size n in dtype avoids the power-of-two stride
// (row stride not a multiple of 2 KiB), the "odd" series of Rates.Kernels.
func AliasFree(n int, dtype string) bool {
	elem := 4
	if dtype == "float64" {
		elem = 8
	}
	return n*elem%2048 != 0
}

// KernelSeconds is the estimated time of one n×n×n call of the named CPU kernel in dtype with the
// given thread count, from the calibration points: seconds per multiply-add interpolated in log n
// between the two points around n (the first point below the ladder, the last above it), times n³;
// the parallel kernels' time scales with the cores they get against those they had when measured.
// It returns 0 for a kernel with no rates.
func (r *Rates) KernelSeconds(name string, n int, dtype string, threads int) float64 {
	key := KernelKey(name, dtype)
	pts := r.Kernels[key]
	if name == "naive" && AliasFree(n, dtype) && len(r.Kernels[key+"/odd"]) > 0 {
		pts = r.Kernels[key+"/odd"]
	}
	if len(pts) == 0 {
		return 0
	}
	spf := interpolate(pts, n)
	s := spf * float64(n) * float64(n) * float64(n)
	if name == "parallel" || name == "simd-parallel" {
		had := min(max(r.Procs, 1), runtime.NumCPU())
		if threads <= 0 {
			threads = runtime.GOMAXPROCS(0)
		}
		got := min(threads, runtime.NumCPU())
		s *= float64(had) / float64(max(got, 1))
	}
	return s
}

// interpolate returns the seconds per multiply-add at n from pts (sorted by n), linear in log n.
func interpolate(pts []Point, n int) float64 {
	i := sort.Search(len(pts), func(i int) bool { return pts[i].N >= n })
	switch {
	case i == 0:
		return pts[0].SPF
	case i == len(pts):
		return pts[len(pts)-1].SPF
	case pts[i].N == n:
		return pts[i].SPF
	}
	lo, hi := pts[i-1], pts[i]
	f := (math.Log(float64(n)) - math.Log(float64(lo.N))) / (math.Log(float64(hi.N)) - math.Log(float64(lo.N)))
	return math.Exp(math.Log(lo.SPF) + f*(math.Log(hi.SPF)-math.Log(lo.SPF)))
}

// FillSeconds is the harness's cost of elems matrix elements of input, poisoning or checking.
func (r *Rates) FillSeconds(elems int) float64 { return float64(elems) * r.FillNs * 1e-9 }

// SIMTSeconds is the estimated emulation time of one ladder kernel at size n: the time measured at
// SIMTN scaled by (n/SIMTN)^SIMTExp; 0 if unknown.
func (r *Rates) SIMTSeconds(kernel string, n int) float64 {
	spf, n0 := r.SIMT[kernel], r.SIMTN[kernel]
	if spf == 0 || n0 == 0 {
		return 0
	}
	p := r.SIMTExp[kernel]
	if p == 0 {
		p = 3
	}
	x0 := float64(n0)
	return spf * x0 * x0 * x0 * math.Pow(float64(n)/x0, p)
}

// Instruction classes of the emulator's cost (Rates.SIMTMix, InstrCosts): thread instructions that
// access global memory (each request's addresses are sorted into sectors and lines and go through
// the cache model), that access shared memory (bank conflicts, the hazard check and the initcheck),
// and all the others.
const (
	InstrGlobal = iota
	InstrShared
	InstrOther
	NumInstrClasses
)

// InstrClasses names the instruction classes, by index.
var InstrClasses = [NumInstrClasses]string{"global memory", "shared memory", "other"}

// InstrCosts is the emulator's cost per thread instruction of each class (InstrClasses), in
// seconds, fitted to the ladder kernels' launches (SIMTLaunch, SIMTMix): the non-negative costs
// that minimise Σ (estimate − t)²/t over the launches, a launch's timing noise taken to grow with
// its time t (one timing each, on a machine others may load: the short launches, of 0.02–0.2 s,
// varied 2–5× between calibrations on the development VM, the long ones 1.3–1.6×; relative errors
// would let the short ones decide). Every subset of the classes is fitted by least squares, and the
// best fit whose costs are all positive kept; a class no kernel exercises costs 0. ok is false with fewer than two launches measured, or no positive fit.
func (r *Rates) InstrCosts() (cost [NumInstrClasses]float64, ok bool) {
	type point struct {
		mix [NumInstrClasses]float64
		t   float64
	}
	var pts []point
	for k, t := range r.SIMTLaunch {
		if mix, has := r.SIMTMix[k]; has && t > 0 {
			pts = append(pts, point{mix, t})
		}
	}
	if len(pts) < 2 {
		return cost, false
	}
	best := math.Inf(1)
	for subset := 1; subset < 1<<NumInstrClasses; subset++ {
		var idx []int
		for i := range NumInstrClasses {
			if subset&(1<<i) != 0 {
				idx = append(idx, i)
			}
		}
		// normal equations of the residuals (mix·c − t)/√t over the subset's classes
		m := len(idx)
		a := make([][]float64, m)
		for i := range a {
			a[i] = make([]float64, m+1)
		}
		for _, p := range pts {
			for i, ci := range idx {
				for j, cj := range idx {
					a[i][j] += p.mix[ci] * p.mix[cj] / p.t
				}
				a[i][m] += p.mix[ci]
			}
		}
		x, solved := solve(a)
		if !solved || slices.ContainsFunc(x, func(v float64) bool { return !(v > 0) }) {
			continue
		}
		var c [NumInstrClasses]float64
		for i, ci := range idx {
			c[ci] = x[i]
		}
		var res float64
		for _, p := range pts {
			var t float64
			for i := range NumInstrClasses {
				t += p.mix[i] * c[i]
			}
			res += (t - p.t) * (t - p.t) / p.t
		}
		if res < best {
			best, cost, ok = res, c, true
		}
	}
	return cost, ok
}

// solve solves the augmented m×(m+1) system a (gonum's LU with partial pivoting); false when it is
// singular. An ill-conditioned system (gonum's mat.Condition) is still solved: the fit judges each
// solution by its residual, as it did before gonum solved it.
func solve(a [][]float64) ([]float64, bool) {
	m := len(a)
	lhs, rhs := mat.NewDense(m, m, nil), mat.NewVecDense(m, nil)
	for i, row := range a {
		lhs.SetRow(i, row[:m])
		rhs.SetVec(i, row[m])
	}
	var x mat.VecDense
	if err := x.SolveVec(lhs, rhs); err != nil {
		var cond mat.Condition
		if !errors.As(err, &cond) {
			return nil, false
		}
	}
	out := x.RawVector().Data
	if slices.ContainsFunc(out, func(v float64) bool { return math.IsNaN(v) || math.IsInf(v, 0) }) {
		return nil, false
	}
	return out, true
}

// SystolicSeconds is the estimated simulation time of cycles cycles of an N×N array; animated says
// the cell animates it (which copies the array's state every cycle).
func (r *Rates) SystolicSeconds(N int, cycles int64, animated bool) float64 {
	s := r.Systolic
	pe := float64(N) * float64(N)
	if animated {
		return float64(cycles) * (s.AnimCycle + s.AnimPE*pe)
	}
	return float64(cycles) * (s.Cycle + s.PE*pe)
}

// default_rates.json holds Defaults: a calibration on a busy 2-vCPU AMD EPYC (the machine of
// docs/benchmarks.md), every cost then raised by half (go run ./bench/estimates -write-defaults).
// The emulator rates of the ladder kernels added after it (blocktile1d, vectorized, warptile and
// the mma rungs) were filled on 2026-11-29 on such a machine, each as its cost measured between two
// of naive's times the defaults' naive cost (go run ./bench/estimates -fill-defaults): a median of
// nine ratios on a loaded machine, within about half either way.
//
//go:embed default_rates.json
var defaultRatesJSON []byte

var defaultRates = func() *Rates {
	var r Rates
	if err := json.Unmarshal(defaultRatesJSON, &r); err != nil {
		panic("estimate: bad default_rates.json: " + err.Error())
	}
	r.Source = "defaults"
	return &r
}()

// Defaults are the rates estimates use before a calibration is installed: measured once on a
// 2-vCPU AMD EPYC server and made 1.5× slower, so that a faster machine is over-estimated rather than
// a slower one under-estimated before its own calibration. They are not this machine's.
func Defaults() *Rates { return defaultRates }
