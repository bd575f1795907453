package simd

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// Every micro-kernel this CPU can run adds exactly A-panel·B-panel to its tile (checked in float64)
// and leaves the rest of C alone.
func TestMicroKernels(t *testing.T) {
	f32, f64 := All()
	t.Logf("this CPU: %d float32 and %d float64 micro-kernels; best %s / %s", len(f32), len(f64), BestF32().Name, BestF64().Name)
	for _, mk := range f32 {
		t.Run("float32/"+mk.Name, func(t *testing.T) { check(t, mk, 1e-5) })
	}
	for _, mk := range f64 {
		t.Run("float64/"+mk.Name, func(t *testing.T) { check(t, mk, 1e-13) })
	}
}

func check[T ~float32 | ~float64](t *testing.T, mk Micro[T], tol float64) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, k := range []int{1, 2, 17, 256} {
		a, b := make([]T, mk.MR*k), make([]T, mk.NR*k)
		for i := range a {
			a[i] = T(rng.Float64()*2 - 1)
		}
		for i := range b {
			b[i] = T(rng.Float64()*2 - 1)
		}
		ldc := mk.NR + 3 // a wider C: the padding must stay untouched
		c := make([]T, mk.MR*ldc)
		for i := range c {
			c[i] = T(i % 7)
		}
		mk.Fn(k, &a[0], &b[0], &c[0], ldc)
		for i := range mk.MR {
			for j := range ldc {
				want := float64(i*ldc+j) - 7*math.Floor(float64(i*ldc+j)/7)
				if j < mk.NR {
					for p := range k {
						want += float64(a[p*mk.MR+i]) * float64(b[p*mk.NR+j])
					}
				}
				if got := float64(c[i*ldc+j]); math.Abs(got-want) > tol*(1+math.Abs(want))*float64(k) {
					t.Fatalf("k=%d C[%d][%d] = %g, want %g", k, i, j, got, want)
				}
			}
		}
	}
	_ = fmt.Sprint()
}
