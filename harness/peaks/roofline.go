// Package peaks measures this machine's two ceilings, peak arithmetic (GFLOP/s) and memory
// bandwidth (GB/s), and places results under them: the roofline model of Williams, Waterman and
// Patterson ("Roofline: An Insightful Visual Performance Model for Multicore Architectures", CACM
// 52(4), 2009), where attainable FLOP/s = min(peak, arithmetic intensity × bandwidth).
package peaks

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gpuplayground/playground/kernels"
	"github.com/gpuplayground/playground/measure"
	"github.com/gpuplayground/playground/numeric"
)

// Ceilings are a machine's measured roofs (measure.Ceilings).
type Ceilings = measure.Ceilings

// MatmulIntensity is the arithmetic intensity of an n×n×n product under the stated byte model: A and
// B read once and C written once, 3·n²·elemBytes bytes for 2·n³ FLOPs (the best case; a kernel that
// re-reads from memory has lower real intensity).
func MatmulIntensity(n, elemBytes int) float64 {
	return kernels.FLOPs(n, n, n) / (3 * float64(n) * float64(n) * float64(elemBytes))
}

// Options size the measurement; the zero value uses the defaults (the peak options' defaults, n = 128,
// 256 and 512 for the GEMM kernels, triad arrays sized from the last-level cache, 7 repeats).
type Options struct {
	Peak PeakOptions
	// PeakSizes are the GEMM sizes (the name is older than the FMA peak).
	PeakSizes         []int
	TriadMiB, Repeats int
}

// Measure times the ceilings: the float32 and float64 peaks (MeasurePeak), each CPU kernel but naive
// on float32 products of every PeakSizes size (3·512²·4 B = 3 MiB at most: in cache; the best median
// is GEMMGFLOPS), and the triad over three TriadMiB arrays, each Repeats times after a warm-up, keeping
// medians. It takes a few seconds and honours ctx.
func Measure(ctx context.Context, o Options) (Ceilings, error) {
	if len(o.PeakSizes) == 0 {
		o.PeakSizes = []int{128, 256, 512}
	}
	cache := lastLevelCacheMiB()
	if o.TriadMiB == 0 {
		// Three arrays together 4× the cache, within 64–256 MiB each (a laptop's L3 is 8–36 MiB).
		o.TriadMiB = min(256, max(64, 4*cache/3))
	}
	if o.Repeats == 0 {
		o.Repeats = 7
	}
	c := Ceilings{TriadMiB: o.TriadMiB, Threads: runtime.GOMAXPROCS(0),
		Measured: time.Now().UTC().Format(time.RFC3339), CacheMiB: cache, BeyondCache: cache > 0 && 3*o.TriadMiB >= 4*cache}
	var err error
	if c.FP32, err = MeasurePeak(ctx, "float32", o.Peak); err != nil {
		return Ceilings{}, err
	}
	if c.FP64, err = MeasurePeak(ctx, "float64", o.Peak); err != nil {
		return Ceilings{}, err
	}
	c.PeakGFLOPS = c.FP32.GFLOPS
	rng := rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	for _, n := range o.PeakSizes {
		a, b, out := make([]float32, n*n), make([]float32, n*n), make([]float32, n*n)
		numeric.Random(rng, a)
		numeric.Random(rng, b)
		for _, k := range kernels.CPU() {
			if k.Name == "naive" {
				continue // never the fastest; slow to time
			}
			t, err := numeric.Measure(ctx, o.Repeats, func(ctx context.Context) error {
				return k.F32(ctx, out, a, b, n, n, n, kernels.Options{})
			}, nil)
			if err != nil {
				return Ceilings{}, err
			}
			if g := t.GFLOPS(kernels.FLOPs(n, n, n)); g > c.GEMMGFLOPS {
				c.GEMMGFLOPS, c.GEMMKernel, c.GEMMN = g, k.Name, n
			}
		}
	}
	bw, err := Triad(ctx, o.TriadMiB<<20/8, o.Repeats)
	if err != nil {
		return Ceilings{}, err
	}
	c.BandwidthGBs = bw
	return c, nil
}

// lastLevelCacheMiB reads the largest cache Linux reports for CPU 0, in MiB (0 if unknown).
func lastLevelCacheMiB() int {
	best := 0
	for i := range 5 {
		b, err := os.ReadFile(fmt.Sprintf("/sys/devices/system/cpu/cpu0/cache/index%d/size", i))
		if err != nil {
			continue
		}
		s := strings.TrimSpace(string(b))
		var v int
		switch {
		case strings.HasSuffix(s, "K"):
			fmt.Sscanf(s, "%dK", &v)
			v /= 1024
		case strings.HasSuffix(s, "M"):
			fmt.Sscanf(s, "%dM", &v)
		}
		best = max(best, v)
	}
	return best
}

// Triad runs the STREAM triad a[i] = b[i] + 3·c[i] over float64 arrays of n elements, split across
// GOMAXPROCS goroutines, and returns the median bandwidth in GB/s (24 bytes per element: read b and
// c, write a, as STREAM counts; McCalpin, "Memory Bandwidth and Machine Balance", IEEE TCCA 1995).
func Triad(ctx context.Context, n, repeats int) (float64, error) {
	av, bv, cv := make([]float64, n), make([]float64, n), make([]float64, n)
	for i := range bv {
		bv[i], cv[i] = 1, 2
	}
	workers := runtime.GOMAXPROCS(0)
	run := func(context.Context) error {
		var wg sync.WaitGroup
		chunk := (n + workers - 1) / workers
		for w := range workers {
			lo, hi := w*chunk, min((w+1)*chunk, n)
			wg.Go(func() {
				x, y, z := av[lo:hi], bv[lo:hi], cv[lo:hi]
				y, z = y[:len(x)], z[:len(x)]
				for i := range x {
					x[i] = y[i] + 3*z[i]
				}
			})
		}
		wg.Wait()
		return ctx.Err()
	}
	t, err := numeric.Measure(ctx, repeats, run, nil)
	if err != nil {
		return 0, err
	}
	if slices.ContainsFunc(av, func(x float64) bool { return x != 7 }) {
		panic("roofline: triad computed the wrong values")
	}
	return 24 * float64(n) / t.Median / 1e9, nil
}

// Cache measures the ceilings once, when first asked through Get, and keeps them. A measurement that
// MeasureEstimate is a pessimistic guess of how long Measure takes with the default options on a
// small machine: a run that may measure the ceilings (Cache.Get) adds it to its estimate.
const MeasureEstimate = 20 * time.Second

// fails (a cancelled run, say) is not kept: the next Get measures again. Peek never measures.
type Cache struct {
	// Options size the measurement (zero: the defaults).
	Options Options

	mu sync.Mutex // held while measuring: one measurement at a time
	c  atomic.Pointer[Ceilings]
}

// Get returns the kept ceilings, measuring them first if there are none (callers wait). Call it where
// nothing else is being timed (the server's run queue): the measurement loads every core.
func (k *Cache) Get(ctx context.Context) (Ceilings, error) {
	if c := k.c.Load(); c != nil {
		return *c, nil
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if c := k.c.Load(); c != nil { // measured while this call waited
		return *c, nil
	}
	c, err := Measure(ctx, k.Options)
	if err != nil {
		return Ceilings{}, err
	}
	k.c.Store(&c)
	return c, nil
}

// Peek returns the kept ceilings and true, or false if none are measured yet. It never measures and
// never waits for a measurement in progress.
func (k *Cache) Peek() (Ceilings, bool) {
	if c := k.c.Load(); c != nil {
		return *c, true
	}
	return Ceilings{}, false
}
