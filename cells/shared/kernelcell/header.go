// Package kernelcell is what the kernel-timing kinds share (matmul, roofline, cuda, wgsl): the
// kernel-cell header (kernels, sizes, dtype, repeats, threads, transfers, peak, gpu) and its
// validation, the `results` table and chart of measured kernels, the split of a cell's kernels into
// measured and emulated ones, and the `emulated` table of kernels run in the virtual GPU.
package kernelcell

import (
	"fmt"
	"math"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/gpuplayground/playground/cells"
	"github.com/gpuplayground/playground/cells/shared/webgpu"
	"github.com/gpuplayground/playground/estimate"
	"github.com/gpuplayground/playground/gpumodel"
	"github.com/gpuplayground/playground/harness"
	"github.com/gpuplayground/playground/kernels"
)

// Spec is a parsed, validated kernel-cell header: a `matmul` cell, and the part of a `roofline`
// cell that names kernels and sizes.
type Spec struct {
	harness.Spec
	// Peak draws this CPU's measured peak on the chart, saying how it was measured.
	Peak bool
	// GPU, if the cell names one, is the datasheet GPU that emulated kernels' times are modelled on
	// (and a roofline cell draws); nil means the first of gpumodel.GPUs.
	GPU *gpumodel.GPU
	// Browser are the webgpu kernels the cell lists, in order, run in the learner's browser; they are
	// not in Kernels.
	Browser []string
	// Show names columns of the cell's tables shown beside their primary ones (cells.ParseShow).
	Show []string
}

// Source is a kernel-cell header's YAML (a matmul cell's whole source), decoded by cells.Decode.
type Source struct {
	cells.Common `yaml:",inline"`
	Kernels      cells.At[[]cells.At[string]] `yaml:"kernels"`
	Sizes        cells.At[[]cells.At[int]]    `yaml:"sizes"`
	DType        cells.At[string]             `yaml:"dtype"`
	Repeats      cells.At[int]                `yaml:"repeats"`
	Threads      cells.At[int]                `yaml:"threads"`
	Transfers    bool                         `yaml:"transfers"`
	Peak         bool                         `yaml:"peak"`
	GPU          cells.At[string]             `yaml:"gpu"`
	Show         cells.At[[]cells.At[string]] `yaml:"show"`
}

// Limits on the remaining fields, fixed so a typo cannot ask for a million repeats.
const (
	DefaultRepeats = 5
	MaxRepeats     = 100
	maxThreads     = 1024
	maxPoints      = 200
)

// Caps on a cell's lists, checked before their items: MaxKernels names (matmul's and roofline's
// kernels, cuda's compare) and MaxSizes sizes.
const (
	MaxKernels = 32
	MaxSizes   = 32
)

// Parse reads and validates a `matmul` cell (a kernel-cell header) against the available kernels
// and the limits, refusing a run that rates (the machine's estimate.Current) price over the run
// time limit. Errors are *cells.SpecError values that say what to fix.
func Parse(src string, available []kernels.Kernel, lim harness.Limits, rates *estimate.Rates) (Spec, error) {
	var y Source
	if err := cells.Decode(src, &y); err != nil {
		return Spec{}, err
	}
	return y.Validate(available, lim, rates)
}

// Validate checks y against the available kernels and the limits (see Parse).
func (y Source) Validate(available []kernels.Kernel, lim harness.Limits, rates *estimate.Rates) (Spec, error) {
	s := Spec{Spec: harness.Spec{DType: "float32", Repeats: DefaultRepeats, Threads: runtime.GOMAXPROCS(0), Transfers: y.Transfers}, Peak: y.Peak}
	var err error
	if s.Show, err = cells.ParseShow(y.Show, Tables()...); err != nil {
		return Spec{}, err
	}
	if y.GPU.Line > 0 {
		g, err := gpumodel.LookupGPU(y.GPU.V)
		if err != nil {
			return Spec{}, cells.Errorf(y.GPU.Line, "%v", err)
		}
		s.GPU = &g
	}
	if s.DType, err = DType(y.DType); err != nil {
		return Spec{}, err
	}
	if y.Repeats.Line > 0 {
		if s.Repeats = y.Repeats.V; s.Repeats < 1 || s.Repeats > MaxRepeats {
			return Spec{}, cells.Errorf(y.Repeats.Line, "repeats is %d; use 1 to %d", s.Repeats, MaxRepeats)
		}
	}
	if y.Threads.Line > 0 {
		if s.Threads = y.Threads.V; s.Threads < 1 || s.Threads > maxThreads {
			return Spec{}, cells.Errorf(y.Threads.Line, "threads is %d; use 1 to %d", s.Threads, maxThreads)
		}
	}
	server := y.Kernels
	if server.V, s.Browser, err = BrowserKernels(y.Kernels.V, s.DType); err != nil {
		return Spec{}, err
	}
	if s.Kernels, err = KernelNames(server, s.DType, available, len(s.Browser) == 0, true); err != nil {
		return Spec{}, err
	}
	if s.Sizes, err = Sizes(y.Sizes, s.DType, lim, harness.AllOnGPU(available, s.Kernels)); err != nil {
		return Spec{}, err
	}
	if err := BrowserSizes(y.Sizes, s.Browser); err != nil {
		return Spec{}, err
	}
	if points := (len(s.Kernels) + len(s.Browser)) * len(s.Sizes); points > maxPoints {
		return Spec{}, cells.Errorf(y.Kernels.Line, "too many kernel×size points (%d); use at most %d", points, maxPoints)
	}
	if est := s.EstimateSeconds(available, rates); lim.RunTimeout > 0 && est > lim.RunTimeout.Seconds() {
		return Spec{}, &cells.SpecError{Msg: fmt.Sprintf(
			"this run is estimated to take about %s, over the %s run time limit: use smaller sizes (the largest, n=%d, costs the most), fewer repeats, or drop the slowest kernels (naive is slowest)",
			roundDur(est), lim.RunTimeout, maxOf(s.Sizes)), Err: cells.ErrOverLimit}
	}
	return s, nil
}

// DType validates a dtype key (float32 when absent).
func DType(d cells.At[string]) (string, error) {
	if d.Line == 0 {
		return "float32", nil
	}
	if d.V != "float32" && d.V != "float64" {
		return "", cells.Errorf(d.Line, "unknown dtype %q; use float32 or float64", d.V)
	}
	return d.V, nil
}

// BrowserKernels takes the webgpu kernels (package cells/shared/webgpu) out of a list of kernel names: it
// returns the others, and the webgpu ones in order, each listed once and taking dtype.
func BrowserKernels(list []cells.At[string], dtype string) (server []cells.At[string], browser []string, err error) {
	for _, item := range list {
		if _, ok := webgpu.Lookup(item.V); !ok {
			if strings.HasPrefix(item.V, "webgpu-") {
				return nil, nil, cells.Errorf(item.Line, "unknown kernel %q; the kernels run in your browser are %s", item.V, webgpu.Names())
			}
			server = append(server, item)
			continue
		}
		if why := webgpu.CheckDType(item.V, dtype); why != "" {
			return nil, nil, cells.Errorf(item.Line, "%s", why)
		}
		if slices.Contains(browser, item.V) {
			return nil, nil, cells.Errorf(item.Line, "kernel %q is listed twice", item.V)
		}
		browser = append(browser, item.V)
	}
	return server, browser, nil
}

// BrowserSizes checks sizes against webgpu.MaxN when the cell has browser kernels.
func BrowserSizes(list cells.At[[]cells.At[int]], browser []string) error {
	if len(browser) == 0 {
		return nil
	}
	for _, item := range list.V {
		if item.V > webgpu.MaxN {
			return cells.Errorf(item.Line, "size %d is over the limit of %d for kernels run in your browser (%s)", item.V, webgpu.MaxN, strings.Join(browser, ", "))
		}
	}
	return nil
}

// KernelNames validates a list of kernel names against the available kernels: at most MaxKernels,
// each known, taking dtype, and listed once; required says the list may not be empty. browser says
// the cell takes the kernels run in the learner's browser too (BrowserKernels took them out of
// list): its errors then name those as well, so that they name every kernel the cell takes.
func KernelNames(list cells.At[[]cells.At[string]], dtype string, available []kernels.Kernel, required, browser bool) ([]string, error) {
	known := kernels.Names(available)
	if browser {
		known += "; run in your browser: " + webgpu.Names()
	}
	if required && len(list.V) == 0 {
		return nil, cells.Errorf(list.Line, "no kernels: add `kernels: [...]` with some of: %s", known)
	}
	if len(list.V) > MaxKernels {
		return nil, cells.Errorf(list.Line, "%d kernels listed; a cell lists at most %d", len(list.V), MaxKernels)
	}
	var names []string
	for _, item := range list.V {
		k, ok := kernels.Lookup(available, item.V)
		if !ok {
			return nil, cells.Errorf(item.Line, "unknown kernel %q; known kernels: %s", item.V, known)
		}
		if !k.Takes(dtype) {
			return nil, cells.Errorf(item.Line, "kernel %q takes %s matrices only, not %s", item.V, strings.Join(k.DTypes, " or "), dtype)
		}
		for _, seen := range names {
			if seen == item.V {
				return nil, cells.Errorf(item.Line, "kernel %q is listed twice", item.V)
			}
		}
		names = append(names, item.V)
	}
	return names, nil
}

// Sizes validates a list of at most MaxSizes sizes against the limits: up to lim.MaxN, or lim.GPUMaxN where every
// kernel of the cell runs on the GPU (gpuOnly), within the memory budget for dtype, each once.
func Sizes(list cells.At[[]cells.At[int]], dtype string, lim harness.Limits, gpuOnly bool) ([]int, error) {
	if len(list.V) == 0 {
		return nil, cells.Errorf(list.Line, "no sizes: add `sizes: [...]`, e.g. sizes: [64, 128, 256]")
	}
	if len(list.V) > MaxSizes {
		return nil, cells.Errorf(list.Line, "%d sizes; a cell takes at most %d", len(list.V), MaxSizes)
	}
	elem := int64(harness.Spec{DType: dtype}.ElemBytes())
	maxN := lim.MaxN
	if gpuOnly && lim.GPUMaxN > maxN {
		maxN = lim.GPUMaxN
	}
	var sizes []int
	for _, item := range list.V {
		n := item.V
		switch {
		case n < 1:
			return nil, cells.Errorf(item.Line, "size %d is too small; n must be at least 1", n)
		case maxN > 0 && n > maxN && !gpuOnly && lim.GPUMaxN > maxN && n <= lim.GPUMaxN:
			return nil, cells.Errorf(item.Line, "size %d is over the limit of %d for cells with CPU kernels; sizes up to %d are allowed when every kernel is a GPU kernel", n, maxN, lim.GPUMaxN)
		case maxN > 0 && n > maxN:
			return nil, cells.Errorf(item.Line, "size %d is over the limit of %d; use a smaller n", n, maxN)
		}
		for _, seen := range sizes {
			if seen == n {
				return nil, cells.Errorf(item.Line, "size %d is listed twice", n)
			}
		}
		if need := 3 * int64(n) * int64(n) * elem; lim.MemoryBytes > 0 && need > lim.MemoryBytes {
			hint := ""
			if dtype == "float64" {
				hint = " or dtype float32"
			}
			return nil, cells.Errorf(item.Line, "n=%d in %s needs %s for A, B and C, over the memory budget of %s: use a smaller n%s",
				n, dtype, mib(need), mib(lim.MemoryBytes), hint)
		}
		sizes = append(sizes, n)
	}
	return sizes, nil
}

func mib(b int64) string { return fmt.Sprintf("%.0f MiB", float64(b)/(1<<20)) }

func roundDur(sec float64) time.Duration {
	if math.IsInf(sec, 0) || sec > 1e9 {
		return time.Duration(math.MaxInt64).Round(time.Hour)
	}
	return time.Duration(sec * float64(time.Second)).Round(time.Second)
}

func maxOf(xs []int) int {
	m := 0
	for _, x := range xs {
		m = max(m, x)
	}
	return m
}
