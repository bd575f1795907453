package simd

import (
	"runtime"
	"testing"

	"golang.org/x/sys/cpu"
)

// Every FMA loop computes acc = a·acc + b exactly as many times as asked, on each of its Len()
// accumulators and nothing beyond them, and reports the FLOPs it did. The inputs keep every value an
// exactly representable integer, so the results are checked for equality, not within a tolerance.
func TestFMALoopsComputeExactly(t *testing.T) {
	f32, f64 := FMALoops()
	for _, f := range f32 {
		t.Run("float32/"+f.Name, func(t *testing.T) { checkFMA(t, f) })
	}
	for _, f := range f64 {
		t.Run("float64/"+f.Name, func(t *testing.T) { checkFMA(t, f) })
	}
}

func checkFMA[T ~float32 | ~float64](t *testing.T, f FMALoop[T]) {
	for _, tc := range []struct {
		n    int
		a, b T
	}{{0, 2, 1}, {1, 2, 1}, {2, 2, 1}, {10, 2, 1}, {3, 3, -1}, {100000, 1, 1}} {
		const pad = 16 // sentinels after the accumulators must stay untouched
		acc := make([]T, f.Len()+pad)
		for i := range acc {
			acc[i] = T(i%7 - 3)
		}
		if got, want := f.Run(tc.n, acc, tc.a, tc.b), 2*float64(tc.n)*float64(FMAAcc*f.Lanes); got != want {
			t.Errorf("n=%d: Run returned %g FLOPs, want %g", tc.n, got, want)
		}
		for i := range acc {
			want := T(i%7 - 3)
			if i < f.Len() {
				for range tc.n {
					want = tc.a*want + tc.b
				}
			}
			if acc[i] != want {
				t.Fatalf("n=%d a=%g b=%g: acc[%d] = %g, want %g", tc.n, float64(tc.a), float64(tc.b), i, float64(acc[i]), float64(want))
			}
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("Run with too few accumulators did not panic")
		}
	}()
	f.Run(1, make([]T, f.Len()-1), 1, 1)
}

// FMALoops offers every loop this CPU supports, narrowest first, and the Best ones are the widest.
func TestFMALoopsCoverThisCPU(t *testing.T) {
	f32, f64 := FMALoops()
	var want []int // vector bits of float32 loops
	want = append(want, 32)
	if runtime.GOARCH == "amd64" && cpu.X86.HasAVX2 && cpu.X86.HasFMA {
		want = append(want, 256)
	}
	if runtime.GOARCH == "amd64" && cpu.X86.HasAVX512F {
		want = append(want, 512)
	}
	if len(f32) != len(want) || len(f64) != len(want) {
		t.Fatalf("%d float32 and %d float64 loops, want %d", len(f32), len(f64), len(want))
	}
	for i, bits := range want {
		if f32[i].Bits != bits || f64[i].Bits != max(bits, 64) {
			t.Errorf("loop %d: %d / %d bits, want %d", i, f32[i].Bits, f64[i].Bits, bits)
		}
		if i > 0 && (f32[i].Lanes*32 != bits || f64[i].Lanes*64 != bits || !f32[i].Vector || !f64[i].Vector) {
			t.Errorf("loop %d: %+v / %+v", i, f32[i], f64[i])
		}
	}
	if f32[0].Vector || f32[0].Lanes != 1 || f64[0].Vector || f64[0].Lanes != 1 {
		t.Errorf("portable loops: %+v / %+v", f32[0], f64[0])
	}
	if BestFMAF32().Name != f32[len(f32)-1].Name || BestFMAF64().Name != f64[len(f64)-1].Name {
		t.Errorf("best: %s / %s", BestFMAF32().Name, BestFMAF64().Name)
	}
	t.Logf("this CPU: %d FMA loops; widest %s", len(f32), BestFMAF32().Name)
}

// One core's FMA throughput per loop (the peak on all cores is measured in package harness/peaks).
func BenchmarkFMALoop(b *testing.B) {
	f32, f64 := FMALoops()
	for _, f := range f32 {
		b.Run("float32/"+f.Name, func(b *testing.B) { benchFMA(b, f) })
	}
	for _, f := range f64 {
		b.Run("float64/"+f.Name, func(b *testing.B) { benchFMA(b, f) })
	}
}

func benchFMA[T ~float32 | ~float64](b *testing.B, f FMALoop[T]) {
	acc := make([]T, f.Len())
	const n = 10000
	var flops float64
	for b.Loop() {
		flops += f.Run(n, acc, 0.5, 1)
	}
	b.ReportMetric(flops/b.Elapsed().Seconds()/1e9, "GFLOP/s")
}
