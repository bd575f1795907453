package harness

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"

	"github.com/gpuplayground/playground/gpu/nvidia"
	"github.com/gpuplayground/playground/kernels"
	"github.com/gpuplayground/playground/measure"
	"github.com/gpuplayground/playground/numeric"
)

// Result is one measured point (measure.Result).
type Result = measure.Result

// Sink receives a run's events in order, from the goroutine that called Run.
type Sink interface {
	// Progress reports done of total kernel calls (warm-ups included) finished.
	Progress(done, total int)
	// Result reports one measured point.
	Result(Result)
	// Note reports something about a kernel that is not a measurement, e.g. why it cannot run here.
	// level is "error", "warning" (noisy timings) or "info".
	Note(kernel, level, message string)
}

// Env is what a run may use: the kernels it can name, and, for kernels marked Remote, the function
// that measures them in another process (the GPU worker).
type Env struct {
	Kernels []kernels.Kernel
	// Remote measures a Remote kernel at size n with s's precision, repeats and transfers, calling
	// progress after each launch (warm-up included); nil when no kernel is Remote.
	Remote func(ctx context.Context, kernel string, n int, s Spec, progress func(done int)) (Result, error)
	// Noise, if not nil, is how Run judges whether its timings are trustworthy; nil: never warns.
	Noise *Noise
}

// Noise says when a run's timings are noisy (measure.Noise).
type Noise = measure.Noise

// DefaultNoise warns at a spread over 1.5× for points of 1 ms or more (below that, timer resolution
// and cache state dominate) and at a load average (/proc/loadavg, Linux) over runtime.NumCPU.
func DefaultNoise() *Noise { return &Noise{Spread: 1.5, MinSeconds: 1e-3, Load: ProcLoad} }

// spreadWatch passes results on to the sink, keeping the one whose repeats spread most.
type spreadWatch struct {
	Sink
	noise *Noise
	worst Result
	ratio float64
	any   bool
}

func (w *spreadWatch) Result(r Result) {
	w.any = true
	if r.MinSeconds > 0 && r.MinSeconds >= w.noise.MinSeconds && r.MaxSeconds/r.MinSeconds > w.ratio {
		w.worst, w.ratio = r, r.MaxSeconds/r.MinSeconds
	}
	w.Sink.Result(r)
}

// noiseNotes warns, after a run that measured something, when its timings cannot be trusted, each
// note suggesting a rerun.
func (w *spreadWatch) noiseNotes() {
	if !w.any {
		return
	}
	if w.noise.Spread > 0 && w.ratio > w.noise.Spread {
		r := w.worst
		w.Sink.Note(r.Kernel, "warning", fmt.Sprintf("Timings are noisy: %s at n=%d took from %.3g s to %.3g s over its repeats (max/min %.1f×, over %.1f×). Other work may have shared the processor: compare kernels with care, and run the cell again.",
			r.Kernel, r.N, r.MinSeconds, r.MaxSeconds, w.ratio, w.noise.Spread))
	}
	if w.noise.Load == nil {
		return
	}
	if l, cpus, ok := w.noise.Load(); ok && cpus > 0 && l > float64(cpus) {
		w.Sink.Note("", "warning", fmt.Sprintf("The machine was busy during this run: its load average was %.1f on %d logical CPUs, so other work shared the processor and these timings are noisy. Run the cell again when it is quieter.", l, cpus))
	}
}

// ProcLoad reads the 1-minute load average from /proc/loadavg (ok false where there is none: not
// Linux) and the logical CPUs from runtime.NumCPU.
func ProcLoad() (float64, int, bool) {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0, 0, false
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0, 0, false
	}
	l, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return 0, 0, false
	}
	return l, runtime.NumCPU(), true
}

// unavailableNote is the one line a run shows for its kernels that cannot run here: friendly words
// for the usual reason (no GPU; the page header links the details), else the reason.
func unavailableNote(names []string, reason string) string {
	list := strings.Join(names, ", ")
	if strings.HasPrefix(reason, "no CUDA device") {
		return list + ": not run, " + nvidia.Friendly(reason) + " (the page header links the details)"
	}
	return list + ": not run, " + reason
}

// Run measures every kernel of s at every size, in the order given, and reports to sink. CPU kernels
// share, per size, fresh random inputs in [-1, 1) (never zero); for each, C is poisoned with NaN, then
// one warm-up call and s.Repeats timed calls run, and the last C is checked against a float64
// reference computed with gonum (once per size, after the first kernel, so that kernel starts at
// once). Remote kernels are measured by env.Remote; when one fails (other than by ctx ending), an
// "error" Note says "<kernel> at n=<n>: <error>", that kernel's later sizes are skipped (the note
// says so; their share of the progress counts as done) and the run goes on with the other kernels.
// The kernels marked Unavailable are skipped, and one Note before any measurement names them and says
// why (its kernel field lists them, comma-separated). When ctx ends, Run returns the error of the call
// it interrupted (the cancel's cause, for a Remote kernel). After the last size, a "warning" Note says
// the timings are noisy (env.Noise) and suggests running again.
// env.Kernels must contain every kernel of s (Parse checked that).
func Run(ctx context.Context, s Spec, env Env, sink Sink) error {
	runnable := s.Kernels[:0:0]
	var skipped []string // kernels that cannot run here, which share one reason (no GPU)
	reason := ""
	for _, name := range s.Kernels {
		if k, _ := kernels.Lookup(env.Kernels, name); k.Unavailable != "" {
			skipped, reason = append(skipped, name), k.Unavailable
		} else {
			runnable = append(runnable, name)
		}
	}
	if len(skipped) > 0 {
		sink.Note(strings.Join(skipped, ","), "error", unavailableNote(skipped, reason))
	}
	s.Kernels = runnable
	if len(runnable) == 0 {
		return nil
	}
	var watch *spreadWatch
	if env.Noise != nil {
		watch = &spreadWatch{Sink: sink, noise: env.Noise}
		sink = watch
	}
	p := &progress{sink: sink, total: len(s.Sizes) * len(s.Kernels) * (s.Repeats + 1)}
	rng := rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	failed := map[string]bool{} // Remote kernels that failed: their later sizes are skipped
	for i, n := range s.Sizes {
		var err error
		last := i == len(s.Sizes)-1
		if s.DType == "float64" {
			err = runSize(ctx, s, n, last, env, rng, p, failed, func(k kernels.Kernel) kernels.Func[float64] { return k.F64 })
		} else {
			err = runSize(ctx, s, n, last, env, rng, p, failed, func(k kernels.Kernel) kernels.Func[float32] { return k.F32 })
		}
		if err != nil {
			return err
		}
	}
	if watch != nil {
		watch.noiseNotes()
	}
	return nil
}

type progress struct {
	sink        Sink
	done, total int
}

// callback returns the per-call progress function of a kernel whose calls start after those done.
func (p *progress) callback() func(done int) {
	base := p.done
	return func(done int) {
		p.done = base + done
		p.sink.Progress(p.done, p.total)
	}
}

// skip counts the calls of a kernel at one size as done, from base (the count before it started):
// a kernel that failed, or whose earlier size failed.
func (p *progress) skip(base, calls int) {
	p.done = base + calls
	p.sink.Progress(p.done, p.total)
}

// runSize runs every kernel of s at size n (last: the run's last size), skipping the Remote kernels in
// failed and adding those that fail now.
func runSize[T kernels.Float](ctx context.Context, s Spec, n int, last bool, env Env, rng *rand.Rand,
	p *progress, failed map[string]bool, fn func(kernels.Kernel) kernels.Func[T]) error {
	var a, b, c []T   // CPU inputs and output, made when the first CPU kernel needs them
	var ref []float64 // computed after the first CPU kernel is timed, so that kernel starts at once
	opt := kernels.Options{Threads: s.Threads}
	tol := numeric.Tolerance(s.DType)
	for _, name := range s.Kernels {
		k, _ := kernels.Lookup(env.Kernels, name)
		if k.Remote {
			base := p.done
			if failed[name] {
				p.skip(base, s.Repeats+1)
				continue
			}
			r, err := env.Remote(ctx, name, n, s, p.callback())
			if err != nil && ctx.Err() != nil {
				return err // cancelled: the run ends, with the cause
			}
			if err != nil {
				// The kernel failed (it does not compile or launch, it faulted, the worker hung or
				// crashed): say so, and go on with the others. Its later sizes would most likely
				// fail the same way, after costing a worker restart each.
				msg := fmt.Sprintf("%s at n=%d: %v", name, n, err)
				if !last {
					msg += " (its later sizes are skipped)"
				}
				p.sink.Note(name, "error", msg)
				failed[name] = true
				p.skip(base, s.Repeats+1)
				continue
			}
			p.sink.Result(r)
			continue
		}
		if a == nil {
			a, b, c = make([]T, n*n), make([]T, n*n), make([]T, n*n)
			numeric.Random(rng, a)
			numeric.Random(rng, b)
		}
		f := fn(k)
		nan := T(math.NaN())
		for i := range c {
			c[i] = nan
		}
		collectBeforeTiming()
		t, err := numeric.Measure(ctx, s.Repeats, func(ctx context.Context) error {
			return f(ctx, c, a, b, n, n, n, opt)
		}, p.callback())
		if err != nil {
			return err
		}
		if ref == nil {
			if ref, err = Reference(ctx, a, b, n); err != nil {
				return err
			}
		}
		rel := numeric.RelFrobenius(c, ref)
		if math.IsInf(rel, 0) || math.IsNaN(rel) {
			rel = math.MaxFloat64
		}
		p.sink.Result(Result{
			Kernel: name, N: n, DType: s.DType,
			Seconds: t.Median, MinSeconds: t.Min, MaxSeconds: t.Max,
			GFLOPS:   t.GFLOPS(kernels.FLOPs(n, n, n)),
			RelError: rel, OK: rel <= tol,
		})
	}
	return nil
}

// Reference computes a·b in float64 with gonum's Dgemm (cancellable between row blocks).
func Reference[T kernels.Float](ctx context.Context, a, b []T, n int) ([]float64, error) {
	a64, b64 := toFloat64(a), toFloat64(b)
	ref := make([]float64, n*n)
	if err := kernels.Gonum(ctx, ref, a64, b64, n, n, n, kernels.Options{}); err != nil {
		return nil, err
	}
	return ref, nil
}

func toFloat64[T kernels.Float](xs []T) []float64 {
	if f, ok := any(xs).([]float64); ok {
		return f
	}
	out := make([]float64, len(xs))
	for i, x := range xs {
		out[i] = float64(x)
	}
	return out
}

// collectBeforeTiming collects garbage from input generation, the reference and earlier charts now,
// as the testing package does before each benchmark, so that no GC cycle competes with the timed
// calls, where one could come: the heap is past three quarters of the size at which the next cycle
// ends (heapNearGoal), or a cycle is under way (it starts past that). Below it (a server's small
// runs one after another) a forced full cycle costs more than the calls it guards: about 10 ms of
// CPU each for a heap of 12 MB, 6.6 of 11 CPU seconds for 656 small points in a row.
func collectBeforeTiming() {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/gc/heap/goal:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 || s[1].Value.Kind() != metrics.KindUint64 ||
		heapNearGoal(s[0].Value.Uint64(), s[1].Value.Uint64()) {
		runtime.GC()
	}
}

// heapNearGoal reports whether a heap of objects bytes (live and not yet swept) is past three
// quarters of goal, the heap size at which the GC means its current or next cycle to end.
func heapNearGoal(objects, goal uint64) bool { return objects > goal/4*3 }
