// Package wgsl is the `wgsl` cell kind: a learner's own WGSL compute kernel, compiled, timed and
// checked in the learner's browser through WebGPU (package cells/shared/webgpu), beside the server's CPU
// kernels and the WGSL ladder it is compared with.
//
// No compiler of the server's reads the WGSL: the browser's WebGPU compiles it, and WGSL has no
// #include or other way to name a file, so the CUDA compilers' source rule (gpu/nvidia's
// CheckIncludes, issue 23) has no WGSL counterpart.
package wgsl

import (
	"fmt"
	"regexp"

	"github.com/gpuplayground/playground/cells"
	"github.com/gpuplayground/playground/cells/shared/kernelcell"
	"github.com/gpuplayground/playground/cells/shared/launch"
	"github.com/gpuplayground/playground/cells/shared/webgpu"
	"github.com/gpuplayground/playground/harness"
	"github.com/gpuplayground/playground/kernels"
)

// Spec is a parsed `wgsl` cell: a YAML header, a line `---`, then the learner's WGSL. The kernel
// computes C = A·B for row-major n×n f32 matrices with these bindings (group 0):
//
//	@group(0) @binding(0) var<storage, read> a: array<f32>;        // A, n×n (array<vec4<f32>> works too)
//	@group(0) @binding(1) var<storage, read> b: array<f32>;        // B
//	@group(0) @binding(2) var<storage, read_write> c: array<f32>;  // C, filled with NaN before the run
//	@group(0) @binding(3) var<uniform> dims: vec4<u32>;            // (n, n, 0, 0)
//
// The header:
//
//	entry: matmul                            # the @compute function
//	workgroup: [16, 16]                      # its @workgroup_size (x, y, z); also passed as the override
//	                                         # constants wg_x, wg_y, wg_z where the WGSL declares them
//	dispatch: ["ceil(n/16)", "ceil(n/16)"]   # workgroups per dimension, formulas in n (launch.Formula)
//	sizes: [64, 256]
//	repeats: 5
//	transfers: true                          # time the upload of A and B and the read-back of C
//	compare: [naive, webgpu-tiled]           # server kernels and WGSL ladder kernels
//	---
//	@compute @workgroup_size(16, 16) fn matmul(…) { … }
type Spec struct {
	Entry     string
	Workgroup [3]int
	Dispatch  launch.Shape
	Sizes     []int
	Repeats   int
	Transfers bool
	// Compare are the server's kernels to time; Browser the WGSL ladder's.
	Compare []string
	Browser []string
	// Source is the WGSL after the `---` line; SourceLine is the cell line it starts on (1-based).
	Source     string
	SourceLine int
}

// MaxSourceBytes caps the WGSL below the `---` line, so that a task carrying it stays under
// cells.MaxTaskBytes.
const MaxSourceBytes = 16 << 10

// WebGPU's default limits (WebGPU §3.6.2, "Limits"), which every adapter offers: a workgroup of at
// most 256 invocations, x and y ≤ 256, z ≤ 64, and at most 65535 workgroups per dimension.
const (
	maxInvocations   = 256
	maxWorkgroupXY   = 256
	maxWorkgroupZ    = 64
	maxWorkgroupsDim = 65535
)

var identifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

type source struct {
	cells.Common `yaml:",inline"`
	Entry        cells.At[string]             `yaml:"entry"`
	Workgroup    cells.At[[]int]              `yaml:"workgroup"`
	Dispatch     cells.At[[]cells.At[string]] `yaml:"dispatch"`
	Sizes        cells.At[[]cells.At[int]]    `yaml:"sizes"`
	DType        cells.At[string]             `yaml:"dtype"`
	Repeats      cells.At[int]                `yaml:"repeats"`
	Transfers    bool                         `yaml:"transfers"`
	Compare      cells.At[[]cells.At[string]] `yaml:"compare"`
}

// Parse reads a `wgsl` cell. available lists the server kernels compare may name; lim bounds sizes
// as for matmul cells. Errors are *cells.SpecError values with cell line numbers.
func Parse(cell string, available []kernels.Kernel, lim harness.Limits) (Spec, error) {
	header, src, srcLine, err := cells.SplitSource(cell, "wgsl", "the WGSL source", MaxSourceBytes)
	if err != nil {
		return Spec{}, err
	}
	s := Spec{Repeats: kernelcell.DefaultRepeats, Workgroup: [3]int{1, 1, 1}, Dispatch: launch.Shape{Key: "dispatch", Src: [3]string{"1", "1", "1"}},
		Source: src, SourceLine: srcLine}
	var y source
	if err := cells.Decode(header, &y); err != nil {
		return Spec{}, err
	}
	if y.Entry.Line == 0 {
		return Spec{}, &cells.SpecError{Line: 1, Msg: "the header needs `entry: NAME`, the @compute function to dispatch"}
	}
	if s.Entry = y.Entry.V; !identifier.MatchString(s.Entry) {
		return Spec{}, cells.Errorf(y.Entry.Line, "entry %q is not a WGSL function name", s.Entry)
	}
	if !regexp.MustCompile(`\bfn\s+` + s.Entry + `\s*\(`).MatchString(s.Source) {
		return Spec{}, &cells.SpecError{Line: s.SourceLine, Msg: fmt.Sprintf("the source below `---` has no function fn %s(…)", s.Entry)}
	}
	if y.Workgroup.Line > 0 {
		if err := s.setWorkgroup(y.Workgroup.Line, y.Workgroup.V); err != nil {
			return Spec{}, err
		}
	}
	if y.Dispatch.Line > 0 {
		if s.Dispatch, err = launch.Parse("dispatch", y.Dispatch.Line, y.Dispatch.V); err != nil {
			return Spec{}, err
		}
	}
	if y.DType.Line > 0 && y.DType.V != "float32" {
		return Spec{}, cells.Errorf(y.DType.Line, "dtype %q: a wgsl cell computes in float32 (WGSL has no float64)", y.DType.V)
	}
	if y.Repeats.Line > 0 {
		if s.Repeats = y.Repeats.V; s.Repeats < 1 || s.Repeats > kernelcell.MaxRepeats {
			return Spec{}, cells.Errorf(y.Repeats.Line, "repeats is %d; use 1 to %d", s.Repeats, kernelcell.MaxRepeats)
		}
	}
	s.Transfers = y.Transfers
	server := y.Compare
	if server.V, s.Browser, err = kernelcell.BrowserKernels(y.Compare.V, "float32"); err != nil {
		return Spec{}, err
	}
	if s.Compare, err = kernelcell.KernelNames(server, "float32", available, false, true); err != nil {
		return Spec{}, err
	}
	if s.Sizes, err = kernelcell.Sizes(y.Sizes, "float32", lim, harness.AllOnGPU(available, s.Compare)); err != nil {
		return Spec{}, err
	}
	if err := kernelcell.BrowserSizes(y.Sizes, []string{"custom"}); err != nil {
		return Spec{}, err
	}
	for j, n := range s.Sizes {
		if _, line, err := s.Dispatch.Eval(n, dispatchLimits); err != nil {
			if line == 0 {
				line = y.Sizes.V[j].Line
			}
			return Spec{}, &cells.SpecError{Line: line, Msg: err.Error()}
		}
	}
	return s, nil
}

func (s *Spec) setWorkgroup(line int, wg []int) error {
	if len(wg) < 1 || len(wg) > 3 {
		return cells.Errorf(line, "workgroup has %d numbers; give 1 to 3 (x, y, z)", len(wg))
	}
	inv := 1
	for i, w := range wg {
		if w < 1 {
			return cells.Errorf(line, "workgroup sizes must be at least 1")
		}
		s.Workgroup[i] = w
		inv *= w
	}
	if inv > maxInvocations || s.Workgroup[0] > maxWorkgroupXY || s.Workgroup[1] > maxWorkgroupXY || s.Workgroup[2] > maxWorkgroupZ {
		return cells.Errorf(line, "a workgroup of %v is too large: WebGPU guarantees at most %d invocations per workgroup (x, y ≤ %d, z ≤ %d)",
			wg, maxInvocations, maxWorkgroupXY, maxWorkgroupZ)
	}
	return nil
}

// DispatchFor evaluates the dispatch formulas for size n: each a whole number of workgroups from 1
// to 65535.
func (s Spec) DispatchFor(n int) ([3]int, error) {
	d, _, err := s.Dispatch.Eval(n, dispatchLimits)
	return d, err
}

// dispatchLimits are WebGPU's workgroups per dimension of a dispatch.
var dispatchLimits = launch.Limits{Max: [3]int64{maxWorkgroupsDim, maxWorkgroupsDim, maxWorkgroupsDim}, Unit: "workgroups", API: "WebGPU"}

// compileError words the browser's compile messages as the cell's own lines: "line 12:5: error: …".
func (s Spec) compileMessage(m webgpu.CompileMessage) string {
	if m.Line < 1 {
		return m.Type + ": " + m.Message
	}
	return fmt.Sprintf("line %d:%d: %s: %s", s.SourceLine+m.Line-1, m.Col, m.Type, m.Message)
}
