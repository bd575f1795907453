package wgsl

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/gpuplayground/playground/cells"
	"github.com/gpuplayground/playground/cells/shared/kernelcell"
	"github.com/gpuplayground/playground/cells/shared/webgpu"
	"github.com/gpuplayground/playground/harness"
)

//go:embed render.js
var script string

// New returns the wgsl kind for env; its editor highlights a YAML header, a line "---", then WGSL.
func New(env cells.Env) cells.Kind {
	return cells.Define(cells.Def[Spec]{Name: "wgsl", Script: script, Language: "yaml+wgsl",
		Parse: func(src string) (Spec, error) { return Parse(src, env.Kernels, env.Limits) },
		Run:   func(s Spec, _ cells.Cell) cells.Run { return &run{env: env, spec: s} }})
}

type run struct {
	env  cells.Env
	spec Spec
}

func (r *run) measured() harness.Spec {
	return harness.Spec{Kernels: r.spec.Compare, Sizes: r.spec.Sizes, DType: "float32", Repeats: r.spec.Repeats, Threads: 1}
}

// compileEstimate guesses the browser's compile of the learner's kernel.
const compileEstimate = 2 * time.Second

func (r *run) Estimate() time.Duration {
	est := compileEstimate + time.Duration(r.measured().EstimateSeconds(r.env.Kernels, r.env.Rates.Get())*float64(time.Second))
	for _, n := range r.spec.Sizes {
		est += time.Duration(webgpu.EstimateSeconds(1+len(r.spec.Browser), n, r.spec.Repeats) * float64(time.Second))
	}
	return est
}

// Run compiles the learner's WGSL in the browser first (its errors, on the cell's own lines, are the
// run's error); then times the compared server kernels here; then, in the browser, the learner's
// kernel ("custom") and the compared WGSL ladder kernels. Without a browser page or WebGPU the
// browser's kernels each get a note and the server's still run.
func (r *run) Run(ctx context.Context, e cells.Emitter) error {
	custom := webgpu.TaskKernel{Name: "custom", Source: r.spec.Source, Entry: r.spec.Entry, Workgroup: &r.spec.Workgroup}
	raw, err := cells.Ask(ctx, e, webgpu.Task{Op: "compile", Kernels: []webgpu.TaskKernel{custom}})
	browser := true
	switch {
	case errors.Is(err, cells.ErrNoBrowser):
		browser = false
		e.Note("warning", "custom: not compiled or run: this run has no browser page behind it, and a wgsl cell's kernel runs in the browser, through WebGPU (run the cell from its lesson page)")
		for _, name := range r.spec.Browser {
			e.Note("warning", name+": not run: no browser page is behind this run")
		}
	case err != nil:
		return err
	default:
		a, err := webgpu.Decode(raw, webgpu.Task{Op: "compile"})
		if err != nil {
			return err
		}
		if a.Unavailable != "" {
			browser = false
			webgpu.NoteUnavailable(e, a, r.request().Kernels)
			break
		}
		var errs []string
		for _, m := range a.Compile {
			if m.Type == "error" {
				errs = append(errs, r.spec.compileMessage(m))
			} else {
				e.Note("warning", r.spec.compileMessage(m))
			}
		}
		if len(errs) > 0 {
			return fmt.Errorf("the kernel does not compile:\n%s", strings.Join(errs, "\n"))
		}
		e.Note("info", fmt.Sprintf("custom: %s compiles in your browser (%s)", r.spec.Entry, a.Adapter.Label()))
	}
	parts := 1
	if len(r.spec.Compare) > 0 && browser {
		parts = 2
	}
	sink := &kernelcell.Results{E: cells.Stage(e, 0, parts), Machine: r.env.Machine}
	if err := harness.Run(ctx, r.measured(), kernelcell.Harness(r.env), sink); err != nil {
		return err
	}
	if !browser {
		return nil
	}
	return sink.Browser(ctx, cells.Stage(e, parts-1, parts), r.request())
}

// request is the browser's part: the learner's kernel, then the compared ladder kernels.
func (r *run) request() webgpu.Request {
	req := kernelcell.BrowserRequest(r.spec.Browser, r.measured())
	custom := webgpu.TaskKernel{Name: "custom", Source: r.spec.Source, Entry: r.spec.Entry, Workgroup: &r.spec.Workgroup}
	req.Kernels = append([]webgpu.TaskKernel{custom}, req.Kernels...)
	req.Transfers = r.spec.Transfers
	req.Dispatch = func(n int) [3]int {
		d, _ := r.spec.DispatchFor(n) // Parse checked every size
		return d
	}
	return req
}
