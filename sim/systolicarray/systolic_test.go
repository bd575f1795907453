package systolicarray

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/gpuplayground/playground/kernels"
	"github.com/gpuplayground/playground/numeric"
)

func TestMultiplyMatchesGonumAndClosedForm(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, tt := range [][4]int{{4, 4, 4, 4}, {4, 1, 1, 1}, {4, 7, 5, 9}, {8, 16, 16, 16}, {3, 10, 2, 17}, {16, 33, 40, 20}} {
		N, m, n, k := tt[0], tt[1], tt[2], tt[3]
		t.Run(fmt.Sprintf("N=%d/%dx%dx%d", N, m, n, k), func(t *testing.T) {
			a, b := make([]float32, m*k), make([]float32, k*n)
			numeric.Random(rng, a)
			numeric.Random(rng, b)
			c, st, err := Multiply(context.Background(), N, a, b, m, n, k, nil)
			if err != nil {
				t.Fatal(err)
			}
			want := make([]float64, m*n)
			a64, b64 := make([]float64, len(a)), make([]float64, len(b))
			for i := range a {
				a64[i] = float64(a[i])
			}
			for i := range b {
				b64[i] = float64(b[i])
			}
			if err := kernels.Gonum(context.Background(), want, a64, b64, m, n, k, kernels.Options{}); err != nil {
				t.Fatal(err)
			}
			if rel := numeric.RelFrobenius(c, want); rel > 1e-5 {
				t.Errorf("relative error %g", rel)
			}
			if cf := Cycles(N, m, n, k); st != cf {
				t.Errorf("simulated %+v, closed form %+v", st, cf)
			}
			if u := st.Utilisation(N); !(u > 0 && u <= 1) {
				t.Errorf("utilisation %g", u)
			}
		})
	}
}

// Hand-checked: a 2×2 array, A 1×2, B 2×2: one tile; 2 weight cycles + 1 + 2·2 − 2 = 3 compute cycles.
func TestTinyByHand(t *testing.T) {
	c, st, err := Multiply(context.Background(), 2, []float32{1, 2}, []float32{3, 4, 5, 6}, 1, 2, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c[0] != 1*3+2*5 || c[1] != 1*4+2*6 || st.Cycles != 5 || st.Tiles != 1 {
		t.Errorf("got C %v, %+v; want [13 16], 5 cycles, 1 tile", c, st)
	}
	if u := st.Utilisation(2); u != 4.0/(4*5) {
		t.Errorf("utilisation %g, want 0.2", u)
	}
}

func TestFramesShowTheSkew(t *testing.T) {
	var frames []Frame
	_, _, err := Multiply(context.Background(), 3, []float32{1, 2, 3, 4, 5, 6, 7, 8, 9}, []float32{1, 0, 0, 0, 1, 0, 0, 0, 1}, 3, 3, 3,
		func(f Frame) { frames = append(frames, f) })
	if err != nil {
		t.Fatal(err)
	}
	if len(frames) != 3+2*3-2 {
		t.Fatalf("got %d frames, want m + 2N − 2 = 7", len(frames))
	}
	// Cycle 0: only PE(0,0) holds an activation, A[0][0] = 1. Cycle 1: row 0 has moved right and row 1 starts.
	if f := frames[0]; f.A[0][0] != 1 || f.A[0][1] != 0 || f.A[1][0] != 0 {
		t.Errorf("cycle 0 activations %v", f.A)
	}
	if f := frames[1]; f.A[0][1] != 1 || f.A[0][0] != 4 || f.A[1][0] != 2 {
		t.Errorf("cycle 1 activations %v", f.A)
	}
	outs := 0
	for _, f := range frames {
		outs += len(f.Out)
	}
	if outs != 9 {
		t.Errorf("%d outputs left the array, want 9", outs)
	}
}

func TestCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := Multiply(ctx, 4, make([]float32, 16), make([]float32, 16), 4, 4, 4, nil); err != context.Canceled {
		t.Errorf("got %v", err)
	}
}
