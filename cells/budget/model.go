package budget

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/gpuplayground/playground/cells"
	"github.com/gpuplayground/playground/cells/shared/webgpu"
	"github.com/gpuplayground/playground/harness"
	"github.com/gpuplayground/playground/harness/peaks"
	"github.com/gpuplayground/playground/sim/collectives"
)

// Rate is something that computes: this machine's CPU (measured), a datasheet chip (modelled), and,
// once the browser measures it, the learner's own GPU through WebGPU (measured there). Each becomes
// rows of the budget.
type Rate struct {
	// Name names the machine ("this machine's CPU", "H100 SXM"); Level is how its figures are known:
	// "measured" or "datasheet".
	Name, Level string
	// FLOPs is its peak in FLOP/s and Bandwidth its memory bandwidth in bytes/s (0: not known, and the
	// memory term is left out); Memory its memory's capacity in bytes (0: not known, not checked).
	FLOPs, Bandwidth, Memory float64
	// Clusters says whether the rate is a chip that clusters are built from.
	Clusters bool
	// Achieved says FLOPs is a rate a real GEMM reached (the learner's GPU through WebGPU), not a
	// peak: the cell's utilisation is not applied to it again.
	Achieved bool
	// How says where the figures come from.
	How string
}

// Estimate is one modelled time: Chips chips at Rate, the work split evenly between them.
type Estimate struct {
	Rate  Rate
	Chips int
	// Compute is the FLOPs at utilisation × peak over all chips; Memory each chip reading its share of
	// the workload's bytes at full bandwidth; Communication the all-reduces (Steps of them) on a
	// cluster, or, for a workload with a Shape, every parallelism's communication; Bubble the
	// pipeline's idle time (Plan's layout).
	Compute, Memory, Communication, Bubble float64
	// Plan is the split of a cluster of a workload with a Shape (nil otherwise).
	Plan *Plan
}

// Seconds is the modelled time: the larger of compute and memory (they overlap), plus the pipeline
// bubble and communication (not overlapped: the pessimistic case).
func (e Estimate) Seconds() float64 {
	return math.Max(e.Compute, e.Memory) + e.Bubble + e.Communication
}

// Dominant names the largest term: "arithmetic", "memory", "pipeline bubble" or "communication".
func (e Estimate) Dominant() string {
	switch {
	case e.Bubble > e.Compute && e.Bubble > e.Memory && e.Bubble >= e.Communication:
		return "pipeline bubble"
	case e.Communication > e.Compute && e.Communication > e.Memory:
		return "communication"
	case e.Memory > e.Compute:
		return "memory"
	}
	return "arithmetic"
}

// Model is the time of s's workload on chips chips at r: total FLOPs / (chips × utilisation × peak),
// each chip's share of the bytes at its bandwidth, and, on more than one chip, steps ring all-reduces
// of the gradient over links of s.LinkGBs (collectives.RingAllReduce). A workload with no steps has no
// communication term. A workload with a Shape on more than one chip is split as PlanFor says, and
// its time is steps × the plan's modelled step (package sim/parallel); when no layout fits, the
// estimate has its Plan with Fits false and no time.
func Model(s Spec, r Rate, chips int) Estimate {
	e := Estimate{Rate: r, Chips: chips}
	if w := s.Workload; chips > 1 && w.Shape != nil && w.Steps > 0 {
		p := PlanFor(s, r, chips)
		e.Plan = &p
		if p.Fits {
			e.Compute, e.Bubble, e.Communication = w.Steps*p.Step.Compute, w.Steps*p.Step.Bubble, w.Steps*p.Step.Communication()
		}
		return e
	}
	util := s.Utilisation
	if r.Achieved {
		util = 1
	}
	e.Compute = s.TotalFLOPs() / (float64(chips) * util * r.FLOPs)
	if r.Bandwidth > 0 && s.Workload.Bytes > 0 {
		e.Memory = s.Workload.Bytes / float64(chips) / r.Bandwidth
	}
	if chips > 1 && s.Workload.Steps > 0 {
		e.Communication = s.Workload.Steps * collectives.RingAllReduce(s.Workload.GradientBytes, chips, s.LinkGBs*1e9, s.LatencyUS*1e-6)
	}
	return e
}

// Datasheet is the rates of s's devices from their datasheets.
func Datasheet(s Spec) []Rate {
	var out []Rate
	for _, a := range s.Devices {
		out = append(out, Rate{Name: a.Name, Level: "datasheet", FLOPs: a.Dense, Bandwidth: a.DRAM, Memory: a.Memory, Clusters: true,
			How: fmt.Sprintf("%s TFLOP/s dense (%s), %s GB/s, %s of memory (%s)", cells.Number(a.Dense/1e12, 4), a.Format, cells.Number(a.DRAM/1e9, 4), Bytes(a.Memory), a.Source)})
	}
	return out
}

// Estimates models s on every rate, then on every cluster size of the rates clusters are built from
// (when the workload has steps).
func Estimates(s Spec, rates []Rate) []Estimate {
	var out []Estimate
	for _, r := range rates {
		out = append(out, Model(s, r, 1))
	}
	if s.Workload.Steps > 0 {
		for _, n := range s.Cluster {
			for _, r := range rates {
				if r.Clusters {
					out = append(out, Model(s, r, n))
				}
			}
		}
	}
	return out
}

// CPURate is this machine's CPU as a Rate: the float32 peak (an FMA loop on every core) and STREAM
// bandwidth of the roofline cache (cells.Env.Roofline; nil: none) when they are measured already,
// otherwise a quick measurement now (a shorter FMA-loop peak and a 48 MB triad).
func CPURate(ctx context.Context, cache cells.Roofline) (Rate, error) {
	r := Rate{Name: "this machine's CPU", Level: "measured"}
	if cache != nil {
		if c, ok := cache.Peek(); ok {
			r.FLOPs, r.Bandwidth = c.FP32.GFLOPS*1e9, c.BandwidthGBs*1e9
			r.How = fmt.Sprintf("%s GFLOP/s float32 (%s; roofline measurement of %s), %s GB/s (STREAM triad)", cells.Number(c.FP32.GFLOPS, 4), c.FP32.Method, c.Measured, cells.Number(c.BandwidthGBs, 4))
			return r, nil
		}
	}
	pk, err := peaks.MeasurePeak(ctx, "float32", peaks.PeakOptions{Trials: 3, Trial: 20 * time.Millisecond})
	if err != nil {
		return Rate{}, err
	}
	const triadN = 2 << 20 // three float64 arrays of 16 MiB
	gbs, err := peaks.Triad(ctx, triadN, 3)
	if err != nil {
		return Rate{}, err
	}
	r.FLOPs, r.Bandwidth = pk.GFLOPS*1e9, gbs*1e9
	r.How = fmt.Sprintf("%s GFLOP/s float32 (%s, now), %s GB/s (STREAM triad over 16 MiB arrays, median of 3, now)", cells.Number(pk.GFLOPS, 4), pk.Method, cells.Number(gbs, 4))
	return r, nil
}

// BrowserKernel and BrowserN are what the page measures for the learner's GPU: the WGSL ladder's
// fastest kernel at a size a software adapter still finishes in seconds.
const (
	BrowserKernel = "webgpu-regblock"
	BrowserN      = 512
)

// BrowserRate asks the run's page to time BrowserKernel at BrowserN through WebGPU (the `browser`
// table shows the measurement) and returns its median GFLOP/s as an achieved Rate. ok is false, with
// a note already given, when there is no page, no WebGPU, or the result was wrong.
func BrowserRate(ctx context.Context, e cells.Emitter) (r Rate, ok bool, err error) {
	var got []harness.Result
	err = webgpu.Measure(ctx, e, webgpu.Request{Kernels: []webgpu.TaskKernel{{Name: BrowserKernel}}, Sizes: []int{BrowserN}, Repeats: 3},
		func(res harness.Result) { got = append(got, res) })
	if err != nil || len(got) == 0 || !got[0].OK || got[0].GFLOPS <= 0 {
		return Rate{}, false, err
	}
	res := got[0]
	return Rate{Name: res.Kernel, Level: "measured", FLOPs: res.GFLOPS * 1e9, Achieved: true,
		How: fmt.Sprintf("%.4g GFLOP/s, %s at n=%d measured in your browser just now (median of 3; an achieved GEMM rate, so the cell's utilisation is not applied to it)",
			res.GFLOPS, BrowserKernel, BrowserN)}, true, nil
}
