package kernels

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gpuplayground/playground/numeric"
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/gonum"
)

// reference computes a·b in float64 with gonum's Dgemm, called directly (not through the Gonum kernel).
func reference[T Float](a, b []T, m, n, k int) []float64 {
	a64, b64 := make([]float64, len(a)), make([]float64, len(b))
	for i, v := range a {
		a64[i] = float64(v)
	}
	for i, v := range b {
		b64[i] = float64(v)
	}
	want := make([]float64, m*n)
	if m > 0 && n > 0 && k > 0 {
		gonum.Implementation{}.Dgemm(blas.NoTrans, blas.NoTrans, m, n, k, 1, a64, max(k, 1), b64, max(n, 1), 0, want, max(n, 1))
	}
	return want
}

func checkKernel[T Float](t *testing.T, name string, f Func[T], m, n, k int, tol float64) {
	t.Helper()
	rng := rand.New(rand.NewPCG(uint64(m), uint64(n*1000+k)))
	a, b, c := make([]T, m*k), make([]T, k*n), make([]T, m*n)
	numeric.Random(rng, a)
	numeric.Random(rng, b)
	for i := range c {
		c[i] = 12345 // poison: a kernel must overwrite every element
	}
	if err := f(context.Background(), c, a, b, m, n, k, Options{Threads: 3}); err != nil {
		t.Fatalf("%s %dx%dx%d: %v", name, m, n, k, err)
	}
	if got := numeric.RelFrobenius(c, reference(a, b, m, n, k)); got > tol {
		t.Errorf("%s %dx%dx%d: relative error %g, want ≤ %g", name, m, n, k, got, tol)
	}
}

func TestKernelsMatchReference(t *testing.T) {
	shapes := [][3]int{{1, 1, 1}, {7, 7, 7}, {33, 33, 33}, {64, 64, 64}, {65, 130, 67}, {129, 1, 200}, {3, 100, 1}, {100, 70, 0},
		{97, 33, 300}, {300, 257, 513}}
	for _, kern := range CPU() {
		for _, s := range shapes {
			m, n, k := s[0], s[1], s[2]
			t.Run(fmt.Sprintf("%s/%dx%dx%d", kern.Name, m, n, k), func(t *testing.T) {
				checkKernel(t, kern.Name, kern.F32, m, n, k, numeric.Tolerance("float32"))
				checkKernel(t, kern.Name, kern.F64, m, n, k, numeric.Tolerance("float64"))
			})
		}
	}
}

// tripCtx is a context that counts its Err calls (the kernels' cancellation checks) and, if trip > 0,
// is cancelled from the trip-th call on: cancellation arrives at a chosen point of the work, not
// after a sleep that a busy machine may stretch.
type tripCtx struct {
	context.Context // Background: no deadline, no values
	trip            int64
	polls           atomic.Int64
	once            sync.Once
	done            chan struct{}
	at              time.Time // when it was cancelled
}

func newTripCtx(trip int64) *tripCtx {
	return &tripCtx{Context: context.Background(), trip: trip, done: make(chan struct{})}
}

func (c *tripCtx) Done() <-chan struct{} { return c.done }

func (c *tripCtx) Err() error {
	if n := c.polls.Add(1); c.trip > 0 && n >= c.trip {
		c.once.Do(func() { c.at = time.Now(); close(c.done) })
		return context.Canceled
	}
	return nil
}

// Every kernel stops soon after cancellation: the context is cancelled at the kernel's second check
// (after it has started computing) and the kernel must return context.Canceled. The promise is 0.5 s
// at n = 4096; the test allows 5 s so that a busy machine cannot fail it. How often a kernel checks,
// which is what keeps the promise, is tested exactly by TestKernelsCheckCancellationOften.
func TestKernelsStopPromptly(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates 2048×2048 and 4096×4096 matrices")
	}
	// n = 2048 keeps every kernel busy for seconds except the SIMD ones (over 100 GFLOP/s): they get
	// n = 4096, the size issue 5 names for cancellation.
	rng := rand.New(rand.NewPCG(1, 2))
	inputs := map[int][3][]float32{}
	for _, n := range []int{2048, 4096} {
		a, b := make([]float32, n*n), make([]float32, n*n)
		numeric.Random(rng, a)
		numeric.Random(rng, b)
		inputs[n] = [3][]float32{a, b, make([]float32, n*n)}
	}
	for _, kern := range CPU() {
		n := 2048
		if strings.HasPrefix(kern.Name, "simd") {
			n = 4096
		}
		a, b, c := inputs[n][0], inputs[n][1], inputs[n][2]
		t.Run(kern.Name, func(t *testing.T) {
			ctx := newTripCtx(2)
			errc := make(chan error, 1)
			go func() { errc <- kern.F32(ctx, c, a, b, n, n, n, Options{}) }()
			select {
			case err := <-errc:
				if !errors.Is(err, context.Canceled) {
					t.Fatalf("got error %v after %d checks, want context.Canceled", err, ctx.polls.Load())
				}
				if got := time.Since(ctx.at); got > 5*time.Second {
					t.Errorf("stopped %v after cancel, want ≤ 0.5 s (5 s allowed for a busy machine)", got)
				}
			case <-time.After(60 * time.Second):
				t.Fatal("kernel ignored cancellation for 60 s")
			}
		})
	}
}

// Every kernel checks for cancellation at least once per 96 rows of C (packMC, the largest block of
// rows any kernel computes between checks), counted on an uncancelled run, so the work between two
// checks is bounded whatever the machine's speed.
func TestKernelsCheckCancellationOften(t *testing.T) {
	const m, n, k = 4 * packMC, 512, 512
	rng := rand.New(rand.NewPCG(5, 6))
	a, b, c := make([]float32, m*k), make([]float32, k*n), make([]float32, m*n)
	numeric.Random(rng, a)
	numeric.Random(rng, b)
	for _, kern := range CPU() {
		t.Run(kern.Name, func(t *testing.T) {
			ctx := newTripCtx(0)
			if err := kern.F32(ctx, c, a, b, m, n, k, Options{}); err != nil {
				t.Fatal(err)
			}
			if got, want := ctx.polls.Load(), int64(m/packMC); got < want {
				t.Errorf("checked ctx %d times for %d rows, want ≥ %d (once per %d rows)", got, m, want, packMC)
			}
		})
	}
}

// The packed rungs at ragged sizes, checked against gonum's Dgemm: each shape leaves a ragged edge at
// every level of the packing, none a multiple of any tile (MR 4 or 6, NR 4 to 32, KC 256, MC 96, NC
// 2048). 199×101×517 is two whole MC blocks of A and 7 rows (7 is no multiple of MR), 101 columns
// (3 whole panels of NR 32 and 5), and two whole KC blocks and 5; 13×2085×261 is two NC blocks of B,
// the second 37 columns, with a second KC block of 5. The 1000 and 1023 (square: over 100
// times these two's work, 12 CPU s) cut no edge these do not; 1, 7 and 33 are its small ones.
func TestPackedRaggedSizes(t *testing.T) {
	shapes := [][3]int{{1, 1, 1}, {7, 7, 7}, {33, 33, 33}, {2*packMC + 7, 3*32 + 5, 2*packKC + 5}, {13, packNC + 37, packKC + 5}}
	for _, name := range []string{"packed", "simd", "simd-parallel"} {
		kern, _ := Lookup(CPU(), name)
		for _, s := range shapes {
			m, n, k := s[0], s[1], s[2]
			t.Run(fmt.Sprintf("%s/%dx%dx%d", name, m, n, k), func(t *testing.T) {
				checkKernel(t, name, kern.F32, m, n, k, numeric.Tolerance("float32"))
				checkKernel(t, name, kern.F64, m, n, k, numeric.Tolerance("float64"))
			})
		}
	}
}

// errAgainstAbs is the Frobenius norm of got − want over that of absWant = |A|·|B|: the measure a
// floating-point product's error is bounded by (|Ĉ − C| ≤ γ_K |A||B|, Higham, "Accuracy and
// Stability of Numerical Algorithms", 2nd ed., §3.5), so that a product whose entries cancel to
// nearly nothing (a 1×1×187 one, say) is not held to a relative error of its tiny result.
func errAgainstAbs(got []float32, want, absWant []float64) float64 {
	var num, den float64
	for i, w := range want {
		d := float64(got[i]) - w
		num += d * d
		den += absWant[i] * absWant[i]
	}
	if den == 0 {
		if num == 0 {
			return 0
		}
		return math.Inf(1)
	}
	return math.Sqrt(num / den)
}

func abs(x []float32) []float32 {
	out := make([]float32, len(x))
	for i, v := range x {
		out[i] = float32(math.Abs(float64(v)))
	}
	return out
}

func FuzzPacked(f *testing.F) {
	f.Add(uint8(1), uint8(1), uint8(1), uint8(1))
	f.Add(uint8(13), uint8(37), uint8(5), uint8(3))
	f.Add(uint8(97), uint8(33), uint8(255), uint8(2))
	f.Fuzz(func(t *testing.T, m, n, k, threads uint8) {
		for _, name := range []string{"packed", "simd", "simd-parallel"} {
			kern, _ := Lookup(CPU(), name)
			rng := rand.New(rand.NewPCG(uint64(m), uint64(n)))
			M, N, K := int(m), int(n), int(k)
			a, b, c := make([]float32, M*K), make([]float32, K*N), make([]float32, M*N)
			numeric.Random(rng, a)
			numeric.Random(rng, b)
			if err := kern.F32(context.Background(), c, a, b, M, N, K, Options{Threads: int(threads%4) + 1}); err != nil {
				t.Fatal(err)
			}
			if rel := errAgainstAbs(c, reference(a, b, M, N, K), reference(abs(a), abs(b), M, N, K)); rel > numeric.Tolerance("float32") {
				t.Fatalf("%s %dx%dx%d: error %g of the size of |A|·|B|", name, M, N, K, rel)
			}
		}
	})
}
