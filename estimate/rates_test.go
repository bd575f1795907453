package estimate

import (
	"math"
	"runtime"
	"testing"
)

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(math.Abs(a), math.Abs(b)) }

// A kernel's estimate is its measured cost per multiply-add times n³: exactly at a calibration point,
// interpolated in log n between two, the end points' beyond the ladder.
func TestKernelSecondsFromPoints(t *testing.T) {
	r := &Rates{Procs: 1, Kernels: map[string][]Point{
		"ikj/float32": {{N: 64, SPF: 1e-9}, {N: 256, SPF: 4e-9}},
	}}
	for _, tt := range []struct {
		n   int
		spf float64
	}{{16, 1e-9}, {64, 1e-9}, {128, 2e-9}, {256, 4e-9}, {4096, 4e-9}} {
		want := tt.spf * math.Pow(float64(tt.n), 3)
		if got := r.KernelSeconds("ikj", tt.n, "float32", 1); !near(got, want) {
			t.Errorf("n=%d: %g s, want %g", tt.n, got, want)
		}
	}
	if got := r.KernelSeconds("ikj", 64, "float64", 1); got != 0 {
		t.Errorf("no float64 rates: %g, want 0", got)
	}
}

// Naive is priced from its odd series at sizes whose row stride is not a multiple of 2 KiB, and from
// the power-of-two series at those that are.
func TestNaiveAliasingSeries(t *testing.T) {
	r := &Rates{Kernels: map[string][]Point{
		"naive/float32":     {{N: 1024, SPF: 10e-9}},
		"naive/float32/odd": {{N: 992, SPF: 1e-9}},
	}}
	if !AliasFree(1000, "float32") || AliasFree(1024, "float32") || AliasFree(512, "float32") || AliasFree(256, "float64") {
		t.Fatalf("AliasFree: wrong classes")
	}
	slow, fast := r.KernelSeconds("naive", 1024, "float32", 1), r.KernelSeconds("naive", 1000, "float32", 1)
	if !near(slow, 10e-9*1024*1024*1024) || !near(fast, 1e-9*1000*1000*1000) {
		t.Errorf("naive 1024: %g s, 1000: %g s", slow, fast)
	}
}

// The parallel kernels' time scales with the cores they get against those they were measured with.
func TestParallelScalesWithThreads(t *testing.T) {
	if runtime.NumCPU() < 2 {
		t.Skip("one CPU")
	}
	r := &Rates{Procs: 2, Kernels: map[string][]Point{"parallel/float64": {{N: 64, SPF: 1e-9}}, "gonum/float64": {{N: 64, SPF: 1e-9}}}}
	one, two := r.KernelSeconds("parallel", 64, "float64", 1), r.KernelSeconds("parallel", 64, "float64", 2)
	if !near(one, 2*two) {
		t.Errorf("1 thread %g s, 2 threads %g s: want twice", one, two)
	}
	if many := r.KernelSeconds("parallel", 64, "float64", 1000); !near(many, two) {
		t.Errorf("1000 threads on %d CPUs: %g s, want the 2-thread %g", runtime.NumCPU(), many, two)
	}
	if a, b := r.KernelSeconds("gonum", 64, "float64", 1), r.KernelSeconds("gonum", 64, "float64", 2); a != b {
		t.Errorf("gonum ignores threads: %g vs %g", a, b)
	}
}

// The SIMT emulator's cost grows as its fitted power of n from the calibration size; the
// systolic simulator's with cycles, PEs and animation.
func TestSimulatorRates(t *testing.T) {
	r := &Rates{SIMT: map[string]float64{"naive": 1e-7}, SIMTN: map[string]int{"naive": 64}, SIMTExp: map[string]float64{"naive": 2.5},
		Systolic: SystolicRates{Cycle: 1e-6, PE: 1e-9, AnimCycle: 2e-6, AnimPE: 1e-8, AnimatedN: 16}}
	if got, want := r.SIMTSeconds("naive", 64), 1e-7*64*64*64; !near(got, want) {
		t.Errorf("at calibration: %g, want %g", got, want)
	}
	if got, want := r.SIMTSeconds("naive", 256), 1e-7*64*64*64*math.Pow(4, 2.5); !near(got, want) {
		t.Errorf("above calibration: %g, want %g", got, want)
	}
	if got := r.SIMTSeconds("smem", 64); got != 0 {
		t.Errorf("unknown kernel: %g", got)
	}
	if got, want := r.SystolicSeconds(128, 1000, false), 1000*(1e-6+1e-9*128*128); !near(got, want) {
		t.Errorf("systolic: %g, want %g", got, want)
	}
	if got, want := r.SystolicSeconds(16, 1000, true), 1000*(2e-6+1e-8*256); !near(got, want) {
		t.Errorf("animated systolic: %g, want %g", got, want)
	}
}

// InstrCosts recovers the cost per thread instruction of each class from launches that cost exactly
// their mix at known costs, ignores a launch without a mix, and declines with fewer than two.
func TestInstrCostsRecoversCosts(t *testing.T) {
	want := [NumInstrClasses]float64{6e-9, 9e-9, 3e-9}
	r := &Rates{SIMTLaunch: map[string]float64{}, SIMTMix: map[string][NumInstrClasses]float64{}}
	for k, mix := range map[string][NumInstrClasses]float64{
		"naive": {4e6, 0, 7e6}, "smem": {1e5, 4e6, 4e6}, "regblock": {3e5, 4e6, 28e6}, "blocktile1d": {8e4, 2e6, 4e6},
	} {
		r.SIMTMix[k] = mix
		r.SIMTLaunch[k] = mix[0]*want[0] + mix[1]*want[1] + mix[2]*want[2]
	}
	r.SIMTLaunch["wmma"] = 1 // no mix: not fitted
	got, ok := r.InstrCosts()
	if !ok {
		t.Fatal("no fit")
	}
	for i := range want {
		if math.Abs(got[i]-want[i]) > 1e-6*want[i] {
			t.Errorf("%s: %g s per thread instruction, want %g", InstrClasses[i], got[i], want[i])
		}
	}
	one := &Rates{SIMTLaunch: map[string]float64{"naive": 1}, SIMTMix: map[string][NumInstrClasses]float64{"naive": {1, 0, 1}}}
	if _, ok := one.InstrCosts(); ok {
		t.Error("fitted three costs to one launch")
	}
}
