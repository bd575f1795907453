package peaks

import (
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpuplayground/playground/kernels/simd"
)

// quick keeps the peak measurement short in tests.
var quick = PeakOptions{Trials: 3, Trial: 10 * time.Millisecond}

func TestMeasureGivesSaneCeilings(t *testing.T) {
	c, err := Measure(context.Background(), Options{Peak: quick, PeakSizes: []int{64, 128}, TriadMiB: 16, Repeats: 3})
	if err != nil {
		t.Fatal(err)
	}
	// Any CPU of the last twenty years: between 0.1 and 100,000 GFLOP/s, 0.5 and 2,000 GB/s.
	for _, p := range []Peak{c.FP32, c.FP64} {
		if !(p.GFLOPS > 0.1 && p.GFLOPS < 1e5) || !strings.HasPrefix(p.Method, "measured: ") {
			t.Errorf("%s peak %g GFLOP/s, %q", p.DType, p.GFLOPS, p.Method)
		}
	}
	if c.FP32.DType != "float32" || c.FP64.DType != "float64" || c.PeakGFLOPS != c.FP32.GFLOPS ||
		!reflect.DeepEqual(c.Peak("float64"), c.FP64) || !reflect.DeepEqual(c.Peak("float32"), c.FP32) {
		t.Errorf("peaks: %+v / %+v / %g", c.FP32, c.FP64, c.PeakGFLOPS)
	}
	if !(c.GEMMGFLOPS > 0.1 && c.GEMMGFLOPS < 1e5) || c.GEMMKernel == "" || c.GEMMKernel == "naive" {
		t.Errorf("best GEMM %g GFLOP/s by %q", c.GEMMGFLOPS, c.GEMMKernel)
	}
	if !(c.BandwidthGBs > 0.5 && c.BandwidthGBs < 2000) {
		t.Errorf("bandwidth %g GB/s", c.BandwidthGBs)
	}
	for _, dt := range []string{"float32", "float64"} {
		if r := c.Ridge(dt); math.Abs(r-c.Peak(dt).GFLOPS/c.BandwidthGBs) > 1e-12 || r <= 0 {
			t.Errorf("ridge %s %g", dt, r)
		}
	}
	t.Logf("%+v (ridge %.2f FLOP/byte)", c, c.Ridge("float32"))
}

// The peak comes from the loops this CPU has, on every thread, and says so.
func TestMeasurePeak(t *testing.T) {
	f32, f64 := simd.FMALoops()
	for _, tc := range []struct {
		dtype string
		loops []string
	}{{"float32", names(f32)}, {"float64", names(f64)}} {
		p, err := MeasurePeak(context.Background(), tc.dtype, quick)
		if err != nil {
			t.Fatal(err)
		}
		want := tc.loops
		if len(want) > 1 {
			want = want[1:] // the vector loops only; the scalar Go loop where there are none
		}
		got := []string{p.Loop}
		if p.Other.Loop != "" {
			got = append(got, p.Other.Loop)
			if !(p.Other.GFLOPS > 0) || p.Other.GFLOPS > p.GFLOPS || !strings.HasSuffix(p.Method, fmt.Sprintf("; %s loop: %.3g GFLOP/s", p.Other.Loop, p.Other.GFLOPS)) {
				t.Errorf("%s: other loop %+v against peak %g, %q", tc.dtype, p.Other, p.GFLOPS, p.Method)
			}
		}
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) || !(p.GFLOPS > 0) {
			t.Errorf("%s: timed %v (peak by %q), want %v", tc.dtype, got, p.Loop, want)
		}
		threads := runtime.GOMAXPROCS(0)
		if p.DType != tc.dtype || p.Threads != threads || p.Trials != 3 || p.TrialSeconds != 0.01 || p.Accumulators != simd.FMAAcc {
			t.Errorf("%+v", p)
		}
		for _, s := range []string{"measured: " + p.Loop + " loop (", "12 independent accumulators) on ", " thread", ", median of 3 × 10 ms"} {
			if !strings.Contains(p.Method, s) {
				t.Errorf("method %q lacks %q", p.Method, s)
			}
		}
		if p.Vector != strings.Contains(p.Method, "-bit vectors") {
			t.Errorf("method %q for vector=%v", p.Method, p.Vector)
		}
		t.Logf("%s: %.1f GFLOP/s, %s", tc.dtype, p.GFLOPS, p.Method)
	}
	if p, err := MeasurePeak(context.Background(), "float32", PeakOptions{Threads: 1, Trials: 1, Trial: time.Millisecond}); err != nil ||
		p.Threads != 1 || !strings.Contains(p.Method, " on 1 thread, median of 1 × 1 ms") {
		t.Errorf("one thread: %+v, %v", p, err)
	}
	if _, err := MeasurePeak(context.Background(), "int8", quick); err == nil {
		t.Error("a peak for int8")
	}
}

// Where the CPU has no vector loop, the scalar Go loop is the measurement, and the method says it is a
// floor.
func TestScalarPeakSaysItIsAFloor(t *testing.T) {
	p := Peak{DType: "float64", Accumulators: simd.FMAAcc, Threads: 2, Trials: 3}
	if err := measureLoops(context.Background(), &p, []simd.FMALoop[float64]{simd.GoFMAF64}, PeakOptions{Threads: 2, Trials: 3, Trial: quick.Trial}); err != nil {
		t.Fatal(err)
	}
	describe(&p, quick.Trial)
	if p.Vector || p.Loop != simd.GoFMAF64.Name || p.Bits != 64 || !(p.GFLOPS > 0) || p.Other != (LoopGFLOPS{}) ||
		p.Method != "measured: Go scalar multiply-add loop (one element at a time, 12 independent accumulators) on 2 threads, median of 3 × 10 ms; no vector unit used: a floor, below the CPU's vector peak" {
		t.Errorf("%+v", p)
	}
	t.Log(p.Method)
}

func names[T float32 | float64](loops []simd.FMALoop[T]) (s []string) {
	for _, l := range loops {
		s = append(s, l.Name)
	}
	return s
}

// A cancelled context stops the measurement: before it starts, and in the middle of a trial (ten
// minutes long here, so the test would hang if the threads did not look at ctx).
func TestMeasurePeakCancels(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := MeasurePeak(cancelled, "float32", quick); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := MeasurePeak(ctx, "float64", PeakOptions{Trials: 1, Trial: 10 * time.Minute}); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("timed out: %v", err)
	}
}

func TestBoundAndIntensity(t *testing.T) {
	c := Ceilings{FP32: Peak{GFLOPS: 100}, FP64: Peak{GFLOPS: 50}, BandwidthGBs: 10}
	for _, tt := range []struct {
		dtype    string
		ai, want float64
	}{{"float32", 1, 10}, {"float32", 10, 100}, {"float32", 1000, 100}, {"float32", 0.5, 5}, {"float64", 1000, 50}, {"float64", 2, 20}} {
		if got := c.Bound(tt.dtype, tt.ai); got != tt.want {
			t.Errorf("Bound(%s, %g) = %g, want %g", tt.dtype, tt.ai, got, tt.want)
		}
	}
	if c.Ridge("float32") != 10 || c.Ridge("float64") != 5 {
		t.Errorf("ridges %g, %g", c.Ridge("float32"), c.Ridge("float64"))
	}
	// n = 1024 in float32: 2·1024³ / (3·1024²·4) = 170.67 FLOP/byte.
	if got := MatmulIntensity(1024, 4); math.Abs(got-2048.0/12) > 1e-9 {
		t.Errorf("MatmulIntensity(1024, 4) = %g", got)
	}
}

func TestCacheMeasuresOnlyInGetOnceAndRetriesFailures(t *testing.T) {
	k := Cache{Options: Options{Peak: quick, PeakSizes: []int{64}, TriadMiB: 4, Repeats: 2}}
	if _, ok := k.Peek(); ok {
		t.Fatal("Peek before any Get has ceilings")
	}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := k.Get(cancelled); err == nil {
		t.Fatal("a cancelled measurement succeeded")
	}
	if _, ok := k.Peek(); ok {
		t.Fatal("Peek after a failed Get has ceilings")
	}
	a, err := k.Get(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	b, _ := k.Get(context.Background())
	p, ok := k.Peek()
	if a != b || !ok || a != p {
		t.Errorf("second Get or Peek measured again: %+v vs %+v vs %+v (%v)", a, b, p, ok)
	}
}

// The peak per dtype on one thread and on all (the roofline's), beside which the GEMM benchmarks of
// package kernels show how close a real kernel gets: go test -run '^$' -bench Peak ./roofline.
func BenchmarkPeak(b *testing.B) {
	for _, dt := range []string{"float32", "float64"} {
		for _, threads := range []int{1, runtime.GOMAXPROCS(0)} {
			b.Run(fmt.Sprintf("%s/threads=%d", dt, threads), func(b *testing.B) {
				var p Peak
				for b.Loop() {
					var err error
					if p, err = MeasurePeak(context.Background(), dt, PeakOptions{Threads: threads}); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(p.GFLOPS, "GFLOP/s")
				b.Logf("%s: %.1f GFLOP/s, %s", dt, p.GFLOPS, p.Method)
			})
		}
	}
}
