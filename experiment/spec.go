// Package experiment parses and validates the YAML spec of a `matmul` lesson cell and runs it: fresh
// random inputs, a float64 reference, a warm-up and timed repeats per kernel and size, each result
// checked against the reference and streamed to a Sink as it is measured.
package experiment

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/gpuplayground/playground/kernels"
	"gopkg.in/yaml.v3"
)

// Spec is a parsed, validated `matmul` cell: every kernel is timed at every size.
type Spec struct {
	// Kernels are kernel names in the order given.
	Kernels []string `json:"kernels"`
	// Sizes are the n of square n×n×n products, in the order given.
	Sizes []int `json:"sizes"`
	// DType is "float32" or "float64".
	DType string `json:"dtype"`
	// Repeats is the number of timed runs per point, after one warm-up run.
	Repeats int `json:"repeats"`
	// Threads is the goroutine count for the parallel kernel.
	Threads int `json:"threads"`
	// Transfers adds host→device and device→host copy times to GPU results (PCIe cost); CPU
	// kernels have no copies.
	Transfers bool `json:"transfers"`
	// Peak draws this CPU's theoretical peak on the chart, with the arithmetic behind it.
	Peak bool `json:"peak"`
}

// Limits bound what one run may ask for.
type Limits struct {
	// MaxN is the largest allowed matrix size n.
	MaxN int
	// GPUMaxN is the largest n for a cell whose kernels all run on the GPU (no CPU kernel and no CPU
	// reference at that size); 0 means MaxN.
	GPUMaxN int
	// MemoryBytes bounds the bytes of the three matrices A, B and C of the largest size. The run also
	// holds a float64 reference (and float64 copies of A and B for float32 runs), not counted here.
	MemoryBytes int64
	// RunTimeout is the run time limit; a spec whose estimated time exceeds it is refused.
	RunTimeout time.Duration
}

// DefaultLimits are the server's defaults: n ≤ 4096 (8192 for GPU-only cells), 1 GiB, 120 s.
func DefaultLimits() Limits {
	return Limits{MaxN: 4096, GPUMaxN: 8192, MemoryBytes: 1 << 30, RunTimeout: 120 * time.Second}
}

// Limits on the remaining fields, fixed so a typo cannot ask for a million repeats.
const (
	maxRepeats = 100
	maxThreads = 1024
	maxPoints  = 200
)

// SpecError is a problem with a spec, located at a 1-based line of the spec text (0 when it concerns
// the spec as a whole).
type SpecError struct {
	Line int
	Msg  string
}

func (e *SpecError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("line %d: %s", e.Line, e.Msg)
	}
	return e.Msg
}

func errAt(n *yaml.Node, format string, args ...any) *SpecError {
	line := 0
	if n != nil {
		line = n.Line
	}
	return &SpecError{Line: line, Msg: fmt.Sprintf(format, args...)}
}

// Parse reads and validates a `matmul` spec against the available kernels and the limits. Errors are
// *SpecError values that say what to fix.
func Parse(src string, available []kernels.Kernel, lim Limits) (Spec, error) {
	return parse(src, available, lim, nil)
}

// parse is Parse for a cell kind that adds keys of its own: extra decodes them.
func parse(src string, available []kernels.Kernel, lim Limits, extra map[string]func(*yaml.Node) error) (Spec, error) {
	s := Spec{DType: "float32", Repeats: 5, Threads: runtime.GOMAXPROCS(0)}
	var kernelsNode, sizesNode *yaml.Node
	err := eachKey(src, "kernels, sizes, dtype, repeats, threads, transfers, peak"+extraKeys(extra), func(key, val *yaml.Node) error {
		var err error
		switch key.Value {
		case "kernels":
			kernelsNode, err = val, decode(val, &s.Kernels, "a list of kernel names, like [naive, gonum]")
		case "sizes":
			sizesNode, err = val, decode(val, &s.Sizes, "a list of whole numbers, like [128, 256]")
		case "dtype":
			err = decode(val, &s.DType, "float32 or float64")
		case "repeats":
			err = decode(val, &s.Repeats, "a whole number")
		case "threads":
			err = decode(val, &s.Threads, "a whole number")
		case "transfers":
			err = decode(val, &s.Transfers, "true or false")
		case "peak":
			err = decode(val, &s.Peak, "true or false")
		default:
			if f, ok := extra[key.Value]; ok {
				err = f(val)
			} else {
				err = errAt(key, "unknown key %q; known keys: kernels, sizes, dtype, repeats, threads, transfers, peak%s", key.Value, extraKeys(extra))
			}
		}
		if err != nil {
			return err
		}
		if key.Value == "dtype" && s.DType != "float32" && s.DType != "float64" {
			return errAt(val, "unknown dtype %q; use float32 or float64", s.DType)
		}
		if key.Value == "repeats" && (s.Repeats < 1 || s.Repeats > maxRepeats) {
			return errAt(val, "repeats is %d; use 1 to %d", s.Repeats, maxRepeats)
		}
		if key.Value == "threads" && (s.Threads < 1 || s.Threads > maxThreads) {
			return errAt(val, "threads is %d; use 1 to %d", s.Threads, maxThreads)
		}
		return nil
	})
	if err != nil {
		return Spec{}, err
	}
	if err := s.checkKernels(kernelsNode, available); err != nil {
		return Spec{}, err
	}
	if err := s.checkSizes(sizesNode, lim, allOnGPU(available, s.Kernels)); err != nil {
		return Spec{}, err
	}
	if est := s.EstimateSeconds(available); lim.RunTimeout > 0 && est > lim.RunTimeout.Seconds() {
		return Spec{}, &SpecError{Msg: fmt.Sprintf(
			"this run is estimated to take about %s, over the %s run time limit: use smaller sizes (the largest, n=%d, costs the most), fewer repeats, or drop the slowest kernels (naive is slowest)",
			roundDur(est), lim.RunTimeout, slicesMax(s.Sizes))}
	}
	return s, nil
}

func (s *Spec) checkKernels(node *yaml.Node, available []kernels.Kernel) error {
	if len(s.Kernels) == 0 {
		return errAt(node, "no kernels: add `kernels: [...]` with some of: %s", kernels.Names(available))
	}
	if len(s.Kernels)*max(len(s.Sizes), 1) > maxPoints {
		return errAt(node, "too many kernel×size points (%d); use at most %d", len(s.Kernels)*len(s.Sizes), maxPoints)
	}
	seen := map[string]bool{}
	for i, name := range s.Kernels {
		item := node.Content[i]
		if _, ok := kernels.Lookup(available, name); !ok {
			return errAt(item, "unknown kernel %q; known kernels: %s", name, kernels.Names(available))
		}
		if seen[name] {
			return errAt(item, "kernel %q is listed twice", name)
		}
		seen[name] = true
	}
	return nil
}

// allOnGPU reports whether every kernel named is a GPU kernel.
func allOnGPU(available []kernels.Kernel, names []string) bool {
	for _, name := range names {
		if k, _ := kernels.Lookup(available, name); !k.OnGPU {
			return false
		}
	}
	return true
}

// checkSizes checks the sizes against the limits: up to lim.MaxN, or lim.GPUMaxN where every kernel
// of the cell runs on the GPU (gpuOnly).
func (s *Spec) checkSizes(node *yaml.Node, lim Limits, gpuOnly bool) error {
	if len(s.Sizes) == 0 {
		return errAt(node, "no sizes: add `sizes: [...]`, e.g. sizes: [64, 128, 256]")
	}
	seen := map[int]bool{}
	elem := int64(s.ElemBytes())
	maxN := lim.MaxN
	if gpuOnly && lim.GPUMaxN > maxN {
		maxN = lim.GPUMaxN
	}
	for i, n := range s.Sizes {
		item := node.Content[i]
		switch {
		case n < 1:
			return errAt(item, "size %d is too small; n must be at least 1", n)
		case maxN > 0 && n > maxN && !gpuOnly && lim.GPUMaxN > maxN && n <= lim.GPUMaxN:
			return errAt(item, "size %d is over the limit of %d for cells with CPU kernels; sizes up to %d are allowed when every kernel is a GPU kernel", n, maxN, lim.GPUMaxN)
		case maxN > 0 && n > maxN:
			return errAt(item, "size %d is over the limit of %d; use a smaller n", n, maxN)
		case seen[n]:
			return errAt(item, "size %d is listed twice", n)
		}
		seen[n] = true
		if need := 3 * int64(n) * int64(n) * elem; lim.MemoryBytes > 0 && need > lim.MemoryBytes {
			return errAt(item, "n=%d in %s needs %s for A, B and C, over the memory budget of %s: use a smaller n%s",
				n, s.DType, mib(need), mib(lim.MemoryBytes), map[bool]string{true: " or dtype float32", false: ""}[s.DType == "float64"])
		}
	}
	return nil
}

// ElemBytes is the size of one matrix element in bytes (4 or 8).
func (s Spec) ElemBytes() int {
	if s.DType == "float64" {
		return 8
	}
	return 4
}

// EstimateSeconds is a rough, pessimistic guess of the whole run's duration in seconds: per size, the
// float64 reference plus a warm-up and Repeats timed calls of every kernel. It is an estimate made
// before running, never a measurement.
func (s Spec) EstimateSeconds(available []kernels.Kernel) float64 {
	ref, _ := kernels.Lookup(kernels.CPU(), "gonum")
	cpu := !allOnGPU(available, s.Kernels) // GPU kernels check their results on the GPU machine
	total := 0.0
	for _, n := range s.Sizes {
		if cpu {
			total += ref.EstimateSeconds(n, "float64", s.Threads) // the float64 reference
		}
		for _, name := range s.Kernels {
			if k, ok := kernels.Lookup(available, name); ok {
				total += float64(s.Repeats+1) * k.EstimateSeconds(n, s.DType, s.Threads)
			}
		}
	}
	return total
}

func decode(n *yaml.Node, v any, want string) error {
	if err := n.Decode(v); err != nil {
		return errAt(n, "expected %s (%s)", want, strings.TrimPrefix(yamlError(err).Msg, "yaml: "))
	}
	return nil
}

// yamlError turns a yaml.v3 error ("yaml: line 3: did not find expected key") into a SpecError.
func yamlError(err error) *SpecError {
	var te *yaml.TypeError
	msg := err.Error()
	if errors.As(err, &te) && len(te.Errors) > 0 {
		msg = te.Errors[0]
	}
	msg = strings.TrimPrefix(msg, "yaml: ")
	var line int
	if _, scanErr := fmt.Sscanf(msg, "line %d:", &line); scanErr == nil {
		msg = strings.TrimSpace(msg[strings.Index(msg, ":")+1:])
		return &SpecError{Line: line, Msg: "YAML: " + msg}
	}
	return &SpecError{Msg: "YAML: " + msg}
}

func mib(b int64) string { return fmt.Sprintf("%.0f MiB", float64(b)/(1<<20)) }

func roundDur(sec float64) time.Duration {
	if math.IsInf(sec, 0) || sec > 1e9 {
		return time.Duration(math.MaxInt64).Round(time.Hour)
	}
	return time.Duration(sec * float64(time.Second)).Round(time.Second)
}

func slicesMax(xs []int) int {
	m := 0
	for _, x := range xs {
		m = max(m, x)
	}
	return m
}

// SourceLine is Line, for callers that place the error inside a larger file.
func (e *SpecError) SourceLine() int { return e.Line }

func extraKeys(extra map[string]func(*yaml.Node) error) string {
	keys := make([]string, 0, len(extra))
	for k := range extra {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(", " + k)
	}
	return b.String()
}

// eachKey parses src as a YAML mapping and calls f for each key and value in order. An empty or
// non-mapping document, a key that appears twice and f's first error stop it; keys lists the cell's
// keys for those messages.
func eachKey(src, keys string, f func(key, val *yaml.Node) error) error {
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(src), &doc); err != nil {
		return yamlError(err)
	}
	if len(doc.Content) == 0 {
		return &SpecError{Msg: "the cell is empty: write YAML keys: " + keys}
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return errAt(root, "the cell must be a YAML mapping of keys: %s", keys)
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(root.Content); i += 2 {
		key := root.Content[i]
		if seen[key.Value] {
			return errAt(key, "key %q appears twice", key.Value)
		}
		seen[key.Value] = true
		if err := f(key, root.Content[i+1]); err != nil {
			return err
		}
	}
	return nil
}
