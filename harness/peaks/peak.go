package peaks

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/gpuplayground/playground/kernels/simd"
	"github.com/gpuplayground/playground/measure"
)

// Peak is this CPU's arithmetic peak for one element type, measured (measure.Peak).
type Peak = measure.Peak

// LoopGFLOPS is one loop's measured median GFLOP/s (measure.LoopGFLOPS).
type LoopGFLOPS = measure.LoopGFLOPS

// PeakOptions size a peak measurement; the zero value uses the defaults (GOMAXPROCS threads, 5 trials
// of 50 ms).
type PeakOptions struct {
	Threads, Trials int
	Trial           time.Duration
}

// MeasurePeak measures this CPU's peak GFLOP/s for dtype ("float32" or "float64"): every vector FMA
// loop the CPU supports (AVX2 + FMA, AVX-512; the scalar Go loop only where there is neither) on all
// threads at once, keeping the best median. It takes about (Trials + 1) × Trial per loop and honours
// ctx.
func MeasurePeak(ctx context.Context, dtype string, o PeakOptions) (Peak, error) {
	if o.Threads <= 0 {
		o.Threads = runtime.GOMAXPROCS(0)
	}
	if o.Trials <= 0 {
		o.Trials = 5
	}
	if o.Trial <= 0 {
		o.Trial = 50 * time.Millisecond
	}
	p := Peak{DType: dtype, Accumulators: simd.FMAAcc, Threads: o.Threads, Trials: o.Trials, TrialSeconds: o.Trial.Seconds()}
	f32, f64 := simd.FMALoops()
	var err error
	switch dtype {
	case "float32":
		err = measureLoops(ctx, &p, f32, o)
	case "float64":
		err = measureLoops(ctx, &p, f64, o)
	default:
		return Peak{}, fmt.Errorf("roofline: no peak for dtype %q", dtype)
	}
	if err != nil {
		return Peak{}, err
	}
	describe(&p, o.Trial)
	return p, nil
}

// describe writes p.Method.
func describe(p *Peak, trial time.Duration) {
	what := fmt.Sprintf("%d-bit vectors", p.Bits)
	if !p.Vector {
		what = "one element at a time"
	}
	threads := fmt.Sprintf("%d threads", p.Threads)
	if p.Threads == 1 {
		threads = "1 thread"
	}
	p.Method = fmt.Sprintf("measured: %s loop (%s, %d independent accumulators) on %s, median of %d × %s",
		p.Loop, what, p.Accumulators, threads, p.Trials, ms(trial))
	if p.Other.Loop != "" {
		p.Method += fmt.Sprintf("; %s loop: %.3g GFLOP/s", p.Other.Loop, p.Other.GFLOPS)
	}
	if !p.Vector {
		p.Method += "; no vector unit used: a floor, below the CPU's vector peak"
	}
}

// ms writes d in milliseconds, "50 ms" (seconds from 10 s up).
func ms(d time.Duration) string {
	if d >= 10*time.Second {
		return fmt.Sprintf("%.3g s", d.Seconds())
	}
	return fmt.Sprintf("%.3g ms", float64(d)/float64(time.Millisecond))
}

// measureLoops times the vector loops of loops (the scalar one if there is no other) into p. Their
// trials interleave (one trial of each loop, then the next round), so that a busy spell on a shared
// machine slows them alike rather than one of them.
func measureLoops[T float32 | float64](ctx context.Context, p *Peak, loops []simd.FMALoop[T], o PeakOptions) error {
	if vec := slices.DeleteFunc(slices.Clone(loops), func(f simd.FMALoop[T]) bool { return !f.Vector }); len(vec) > 0 {
		loops = vec
	}
	iters := make([]int, len(loops))
	for i, f := range loops {
		iters[i] = calibrate(f)
	}
	rates := make([][]float64, len(loops))
	for round := range o.Trials + 1 { // round 0 warms up (clock, vector unit power-up) and is dropped
		for i, f := range loops {
			g, err := fmaTrial(ctx, f, iters[i], o.Threads, o.Trial)
			if err != nil {
				return err
			}
			if round > 0 {
				rates[i] = append(rates[i], g)
			}
		}
	}
	for i, f := range loops {
		if g := median(rates[i]); g > p.GFLOPS {
			if p.Loop != "" {
				p.Other = LoopGFLOPS{Loop: p.Loop, GFLOPS: p.GFLOPS}
			}
			p.GFLOPS, p.Loop, p.Bits, p.Vector = g, f.Name, f.Bits, f.Vector
		} else {
			p.Other = LoopGFLOPS{Loop: f.Name, GFLOPS: g} // at most two vector loops: AVX2 and AVX-512
		}
	}
	return nil
}

// callTarget is how long one call of a loop should take: short, so that a trial's threads stop
// within a fraction of a percent of each other and a cancelled context is seen soon.
const callTarget = 250 * time.Microsecond

func median(x []float64) float64 {
	x = slices.Sorted(slices.Values(x))
	if len(x)%2 == 1 {
		return x[len(x)/2]
	}
	return (x[len(x)/2-1] + x[len(x)/2]) / 2
}

// calibrate finds the iterations per call that take about callTarget on one thread.
func calibrate[T float32 | float64](f simd.FMALoop[T]) int {
	acc := make([]T, f.Len())
	iters := 1000
	for {
		start := time.Now()
		f.Run(iters, acc, 0.5, 1)
		d := time.Since(start)
		if d >= callTarget/4 || iters >= 1<<30 {
			return max(1, int(float64(iters)*float64(callTarget)/float64(max(d, 1))))
		}
		iters *= 4
	}
}

// fmaTrial runs f on threads goroutines, each locked to its own OS thread, started together, each
// calling f (iters iterations a call) until d has passed; the rate is all their FLOPs over the time
// from the start to the last one's end.
func fmaTrial[T float32 | float64](ctx context.Context, f simd.FMALoop[T], iters, threads int, d time.Duration) (float64, error) {
	var ready, done sync.WaitGroup
	start := make(chan struct{})
	var t0 time.Time
	flops := make([]float64, threads)
	ends := make([]time.Time, threads)
	ready.Add(threads)
	for w := range threads {
		done.Go(func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			acc := make([]T, f.Len()) // each thread its own: the loop reads it once and writes it once
			for i := range acc {
				acc[i] = 1
			}
			ready.Done()
			<-start
			var sum float64
			// a = 0.5, b = 1 draws every value towards 2: no overflow, no subnormals (which some
			// CPUs handle slowly).
			for { // at least one call, so that even a very short trial has a rate
				sum += f.Run(iters, acc, 0.5, 1)
				if time.Since(t0) >= d || ctx.Err() != nil {
					break
				}
			}
			flops[w], ends[w] = sum, time.Now()
		})
	}
	ready.Wait()
	t0 = time.Now()
	close(start)
	done.Wait()
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	var sum float64
	last := t0
	for w := range threads {
		sum += flops[w]
		if ends[w].After(last) {
			last = ends[w]
		}
	}
	return sum / last.Sub(t0).Seconds() / 1e9, nil
}
