// Package webgpu runs matrix-multiply kernels on the learner's own GPU through WebGPU in the browser
// that asked for the run: the WGSL ladder (static/webgpu/*.wgsl, served as static files) that a
// `matmul` cell may list beside the server's kernels, and a `wgsl` cell's own kernel. The server
// hands each size to the page as a task (cells.Ask); the page's browser module (static/webgpu/
// runner.js) compiles, times and checks the kernels there and answers with raw timings, which this
// package validates strictly before they become rows of the run's `browser` table and points of its
// chart.
//
// Timing and checking in the browser (runner.js): fresh random inputs in [-1, 1) per size, one or
// two warm-up dispatches, then `repeats` timed batches of dispatches, fewer where they would
// outlast KernelBudget (a software adapter also runs no size above SoftwareMaxN); GPU time from timestamp queries where the
// adapter offers the `timestamp-query` feature, else wall-clock time over a batch of dispatches
// ended by queue.onSubmittedWorkDone(). C is checked against a float64 reference computed in
// JavaScript: every entry for n ≤ 512, 1024 sampled entries above. The WebGPU and WGSL
// specifications: https://www.w3.org/TR/webgpu/ and https://www.w3.org/TR/WGSL/.
package webgpu

import (
	"fmt"
	"slices"
	"strings"
)

// Kernel is one WGSL kernel of the ladder.
type Kernel struct {
	// Name is what a cell lists, e.g. "webgpu-tiled"; the f16 variants end in "-f16".
	Name string
	// Summary is one sentence for learners.
	Summary string
	// F16 marks the variants that read A and B as f16 (accumulating in f32): they need the adapter's
	// `shader-f16` feature and are checked with the FP16-input tolerance.
	F16 bool
	// Tile is the edge of the tile of C one workgroup computes (the WGSL's workgroup size times the
	// entries per invocation): the dispatch is ceil(n/Tile) × ceil(n/Tile) workgroups.
	Tile int
	// Align, if over 1, pads each row of A and B to a multiple of Align numbers (vec4 loads need 4).
	Align int
}

// Dispatch is the workgroups to dispatch at size n.
func (k Kernel) Dispatch(n int) [3]int {
	g := (n + k.Tile - 1) / k.Tile
	return [3]int{g, g, 1}
}

// LeadingDim is the row length A and B are stored with at size n: n rounded up to Align.
func (k Kernel) LeadingDim(n int) int {
	if k.Align <= 1 {
		return n
	}
	return (n + k.Align - 1) / k.Align * k.Align
}

// Ladder is the WGSL ladder, slowest first. The WGSL is in static/webgpu/{base}.wgsl, where base is
// the name without "webgpu-" and "-f16".
var Ladder = func() []Kernel {
	base := []Kernel{
		{Name: "webgpu-naive", Tile: 16, Summary: "one invocation per entry of C; neighbouring invocations take neighbouring rows, so their loads are strided (uncoalesced)"},
		{Name: "webgpu-coalesced", Tile: 16, Summary: "one invocation per entry of C; neighbouring invocations take neighbouring columns, so their loads of B and stores of C are contiguous"},
		{Name: "webgpu-tiled", Tile: 16, Summary: "16×16 tiles of A and B staged in workgroup memory (CUDA's shared memory), a barrier between loading and using them"},
		{Name: "webgpu-regblock", Tile: 64, Align: 4, Summary: "64×64 tiles in workgroup memory loaded with vec4 loads, each invocation keeping a 4×4 block of C in registers"},
	}
	var all []Kernel
	all = append(all, base...)
	for _, k := range base {
		all = append(all, Kernel{Name: k.Name + "-f16", Summary: k.Summary + "; A and B stored as f16, products summed in f32 (needs shader-f16)", F16: true, Tile: k.Tile, Align: k.Align})
	}
	return all
}()

// Lookup finds a ladder kernel by name.
func Lookup(name string) (Kernel, bool) {
	i := slices.IndexFunc(Ladder, func(k Kernel) bool { return k.Name == name })
	if i < 0 {
		return Kernel{}, false
	}
	return Ladder[i], true
}

// Names lists the ladder's names, comma-separated.
func Names() string {
	var names []string
	for _, k := range Ladder {
		names = append(names, k.Name)
	}
	return strings.Join(names, ", ")
}

// MaxN is the largest n a browser kernel takes: an n×n f32 matrix of 4096² is 64 MiB, under
// WebGPU's default maxStorageBufferBindingSize of 128 MiB (WebGPU §3.6.2, "Limits").
const MaxN = 4096

// CheckDType says why a browser kernel cannot take dtype ("" when it can): WGSL has no f64.
func CheckDType(name, dtype string) string {
	if dtype != "float32" {
		return fmt.Sprintf("kernel %q runs in your browser through WebGPU, whose shading language (WGSL) has no float64: use dtype float32", name)
	}
	return ""
}
