package gpu

import (
	"context"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gpuplayground/playground/gpu/nvidia"
	"github.com/gpuplayground/playground/kernels"
	"github.com/gpuplayground/playground/numeric"
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

func TestPad(t *testing.T) {
	a := []float32{1, 2, 3, 4, 5, 6, 7, 8, 9}
	p := Pad(a, 3, 16, BF16)
	if len(p) != 256 || p[0] != BF16(1) || p[2] != BF16(3) || p[16] != BF16(4) || p[3] != 0 || p[48] != 0 {
		t.Errorf("got first rows %v", p[:20])
	}
	if p := Pad(a, 3, 3, F16); len(p) != 9 || p[8] != F16(9) {
		t.Errorf("unpadded: got %v", p)
	}
}

// Every 16-bit precision of the GPU kernel table has a conversion, and only those.
func TestTo16CoversTheTable(t *testing.T) {
	for _, row := range nvidia.Kernels() {
		for _, cc := range []int{70, 75, 80, 90} {
			_, prec := row.On(cc, "float32")
			if is16 := prec == "bf16" || prec == "f16"; (to16(prec) != nil) != is16 {
				t.Errorf("%s on sm_%d: precision %s, conversion %v", row.Name, cc, prec, to16(prec) != nil)
			}
			if Tolerance(prec) <= 0 {
				t.Errorf("%s on sm_%d: no tolerance for %s", row.Name, cc, prec)
			}
		}
	}
}

func TestRelErrorFullAndSampled(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{100, 1100} {
		a, b, c := make([]float32, n*n), make([]float32, n*n), make([]float32, n*n)
		numeric.Random(rng, a)
		numeric.Random(rng, b)
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

// A kernel the table marks MinCC is refused on an older device, before anything is launched: the
// mma.sync rungs need cp.async and bf16 mma.sync (sm_80); a Turing GPU (7.5) says so.
func TestMinCCRefusedOnOlderDevices(t *testing.T) {
	d := &device{cc: 75}
	_, err := d.planKernel(Request{Kernel: "cuda-mma", N: 64, DType: "float32"}, nil, nil, nil)
	if err == nil || !strings.Contains(err.Error(), "cuda-mma needs compute capability 8.0 or newer; this GPU is 7.5") {
		t.Fatalf("got %v, want a refusal naming 8.0 and 7.5", err)
	}
}

// The Hopper rungs (hopper.cu's compute_90a PTX) are refused before anything is loaded on a device
// older than Hopper (MinCC) and on a newer one, where sm_90a's architecture-specific PTX does not run.
func TestHopperRungsRefusedOffSM90(t *testing.T) {
	for _, tt := range []struct {
		cc   int
		want string
	}{
		{80, "cuda-wgmma-tma needs compute capability 9.0 or newer; this GPU is 8.0"},
		{100, "cuda-wgmma-tma is hopper.cu's compute_90a PTX (wgmma, setmaxnreg), which runs on sm_90 only; this GPU is sm_100"},
	} {
		d := &device{cc: tt.cc}
		_, err := d.planKernel(Request{Kernel: "cuda-wgmma-tma", N: 256, DType: "float32"}, nil, nil, nil)
		if err == nil || err.Error() != tt.want {
			t.Errorf("sm_%d: got %v, want %q", tt.cc, err, tt.want)
		}
	}
}
