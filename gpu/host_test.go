package gpu

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gpuplayground/playground/kernels"
)

func TestBF16Rounding(t *testing.T) {
	tests := []struct {
		in   float32
		want uint16
	}{
		{1, 0x3f80},
		{-2, 0xc000},
		{math.Float32frombits(0x3f808000), 0x3f80}, // exactly halfway, even below: stays
		{math.Float32frombits(0x3f818000), 0x3f82}, // exactly halfway, odd below: rounds up to even
		{math.Float32frombits(0x3f808001), 0x3f81}, // just above halfway: up
		{float32(math.Inf(1)), 0x7f80},
	}
	for _, tt := range tests {
		if got := BF16(tt.in); got != tt.want {
			t.Errorf("BF16(%g) = %#04x, want %#04x", tt.in, got, tt.want)
		}
	}
	if got := FromBF16(BF16(float32(math.NaN()))); !math.IsNaN(float64(got)) {
		t.Errorf("NaN became %g", got)
	}
	// Round trip error is within half a unit in the last place (2^-8 relative).
	rng := rand.New(rand.NewPCG(1, 2))
	for range 10000 {
		x := float32(rng.NormFloat64())
		if rel := math.Abs(float64(FromBF16(BF16(x))-x)) / math.Abs(float64(x)); rel > 1.0/256 {
			t.Fatalf("BF16 round trip of %g: relative error %g > 2^-8", x, rel)
		}
	}
}

func TestF16(t *testing.T) {
	if got := F16(1); got != 0x3c00 {
		t.Errorf("F16(1) = %#04x, want 0x3c00", got)
	}
	if got := F16(65536); got != 0x7c00 { // overflows to +Inf
		t.Errorf("F16(65536) = %#04x, want +Inf 0x7c00", got)
	}
}

func TestPad16(t *testing.T) {
	a := []float32{1, 2, 3, 4, 5, 6, 7, 8, 9}
	p, size := Pad16(a, 3, BF16)
	if size != 16 || len(p) != 256 || p[0] != BF16(1) || p[2] != BF16(3) || p[16] != BF16(4) || p[3] != 0 || p[48] != 0 {
		t.Errorf("got size %d, first rows %v", size, p[:20])
	}
}

func TestRelErrorFullAndSampled(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{100, 1100} {
		a, b, c := make([]float32, n*n), make([]float32, n*n), make([]float32, n*n)
		kernels.Random(rng, a)
		kernels.Random(rng, b)
		if err := kernels.Gonum(context.Background(), c, a, b, n, n, n, kernels.Options{}); err != nil {
			t.Fatal(err)
		}
		good, err := RelError(context.Background(), c, a, b, n, rng)
		if err != nil || good > 1e-5 {
			t.Errorf("n=%d correct result: rel error %g, %v", n, good, err)
		}
		for i := range c {
			c[i] *= 1.01 // every entry 1% off
		}
		bad, _ := RelError(context.Background(), c, a, b, n, rng)
		if math.Abs(bad-0.01) > 1e-3 {
			t.Errorf("n=%d result 1%% off: rel error %g, want 0.01", n, bad)
		}
		c[n*n-1] = float32(math.NaN())
		if n <= fullCheckMax {
			if nan, _ := RelError(context.Background(), c, a, b, n, rng); !math.IsInf(nan, 1) {
				t.Errorf("n=%d NaN result: rel error %g, want +Inf", n, nan)
			}
		}
	}
}

func TestOwnKernelLaunchesCoverTheMatrix(t *testing.T) {
	for _, name := range []string{"cuda-naive", "cuda-coalesced", "cuda-smem", "cuda-regblock", "cuda-wmma"} {
		for _, n := range []int{1, 100, 4096} {
			l, _, ok := OwnKernel(name, n, 90)
			if !ok {
				t.Fatalf("%s unknown", name)
			}
			threads := l.Block[0] * l.Block[1] * l.Block[2]
			if threads > 1024 || threads%32 != 0 {
				t.Errorf("%s: block %v is not whole warps within 1024 threads", name, l.Block)
			}
			// Each kernel's tile per block, from matmul.cu.
			tile := map[string][2]int{"cuda-naive": {32, 8}, "cuda-coalesced": {32, 8}, "cuda-smem": {32, 32}, "cuda-regblock": {128, 128}, "cuda-wmma": {64, 64}}[name]
			if l.Grid[0]*tile[0] < n || l.Grid[1]*tile[1] < n {
				t.Errorf("%s n=%d: grid %v does not cover the matrix", name, n, l.Grid)
			}
		}
	}
	if l, prec, _ := OwnKernel("cuda-wmma", 64, 75); l.Entry != "cuda_wmma_f16" || prec != "f16" {
		t.Errorf("sm_75 WMMA: got %s %s, want the FP16 kernel", l.Entry, prec)
	}
}
