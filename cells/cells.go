// Package cells defines what a kind of lesson cell is (Kind: parse and validate a source, estimate,
// run into an Emitter of generic events) and the events a run emits; each kind lives in a folder
// below this one, and cells/builtin lists them.
package cells

import (
	"context"
	"fmt"
	"time"

	"github.com/gpuplayground/playground/experiment"
	"github.com/gpuplayground/playground/gpu"
	"github.com/gpuplayground/playground/kernels"
	"github.com/gpuplayground/playground/kernels/cuda"
	"github.com/gpuplayground/playground/roofline"
)

// Kind is one kind of runnable cell: a fenced block in a lesson whose info string is Name. The
// server and the lessons know kinds only through this interface.
type Kind interface {
	// Name is the fence's info string, e.g. "matmul".
	Name() string
	// Parse validates a cell's source (as the learner edited it) and returns what runs it. Errors
	// are *SpecError values whose Line is 1-based within the source.
	Parse(c Cell) (Run, error)
	// Script is the kind's browser module (an ES module, served at /cells/{name}.js), which renders
	// what the shared table, chart, note, text and progress code does not, such as animation frames.
	Script() string
}

// Actioner is a Kind with actions besides Run, each a button on the cell (a `cuda` cell's Show PTX).
type Actioner interface {
	Actions() []Action
}

// Action is a secondary way to run a cell: a button labelled Label that sends a run with this Name.
type Action struct {
	Name  string
	Label string
	// Parse validates the source for this action, like Kind.Parse.
	Parse func(c Cell) (Run, error)
}

// Cell is a cell's identity and source as a run request names it.
type Cell struct {
	// ID is the cell's id: its spec's `id:` key, or "{slug}-{index}".
	ID string
	// Source is the spec text to run.
	Source string
	// Recording, if not nil, is a real earlier run of this cell on a GPU machine.
	Recording *Recording
}

// Run is a parsed, validated cell, ready to run.
type Run interface {
	// Estimate is a pessimistic guess of the run's duration on this machine, made before running;
	// never shown as a measurement.
	Estimate() time.Duration
	// Run does the work, reporting to e from the calling goroutine, and returns ctx's error when
	// cancelled (kernels and simulators check ctx).
	Run(ctx context.Context, e Emitter) error
}

// Exclusive reports whether r needs the machine to itself: true, the default, for a run that
// measures (its timings must not share the cores with other work); a Run that times nothing (an
// emulation, a simulation, a model) says false with an optional method
//
//	Exclusive() bool
//
// and the server then runs it on a free core beside other such runs, but never while an exclusive
// run is measuring.
func Exclusive(r Run) bool {
	if x, ok := r.(interface{ Exclusive() bool }); ok {
		return x.Exclusive()
	}
	return true
}

// Emitter receives a run's events. Its methods do not block; the server turns each into a message
// (docs/protocol.md).
type Emitter interface {
	// Progress reports done of total units of work finished.
	Progress(done, total int)
	// Note reports a line of text: level is "info", "warning" or "error" (something did not run).
	Note(level, text string)
	// Table declares a table; rows for it follow.
	Table(t Table)
	// Row adds one row to a declared table.
	Row(r Row)
	// Chart offers a chart; draw returns a complete SVG document. The server draws it at most every
	// 250 ms during a run, and always the last one offered when the run ends.
	Chart(draw func() (string, error))
	// Frames queues animation frames for the kind's browser module, sent in batches.
	Frames(frames ...any)
	// Text reports preformatted text (such as compiled PTX) under a title.
	Text(title, body string)
}

// Table is a table a run fills row by row.
type Table struct {
	// ID names the table within its run; rows refer to it.
	ID string `json:"id"`
	// Caption says what the numbers are, including whether they are measured, emulated, simulated,
	// modelled or recorded.
	Caption string   `json:"caption"`
	Columns []Column `json:"columns"`
}

// Column is one column of a Table.
type Column struct {
	Label string `json:"label"`
	// Unit, if set, is the unit of the column's numbers ("s", "GFLOP/s", "µs", "%", "B").
	Unit string `json:"unit,omitempty"`
}

// Row is one row of a Table: Values in column order, each a number or a string.
type Row struct {
	Table  string `json:"table"`
	Values []any  `json:"values"`
	// Bad marks a row whose check failed (a wrong result).
	Bad bool `json:"bad,omitempty"`
}

// Note is a line of text about the run.
type Note struct {
	Level   string `json:"level"`
	Message string `json:"message"`
}

// Text is preformatted text under a title.
type Text struct {
	Title string `json:"title"`
	Body  string `json:"body"`
}

// Env is what kinds may use on this server.
type Env struct {
	// Kernels are the kernels cells may name: the CPU kernels, and the GPU kernels, Unavailable
	// where this server has no GPU.
	Kernels []kernels.Kernel
	// Limits bound what a run may ask for.
	Limits experiment.Limits
	// GPU is this server's GPU host (its worker), whether or not it has a device.
	GPU GPU
	// Roofline holds this machine's measured ceilings; a run measures them at first use.
	Roofline *roofline.Cache
}

// GPU is the server's access to its NVIDIA GPU, all of it through the supervised GPU worker.
type GPU interface {
	// Unavailable says why GPU kernels cannot run here; "" when they can.
	Unavailable() string
	// Device is the first GPU, or nil.
	Device() *cuda.Device
	// Measure times one GPU kernel in the worker, calling progress after each launch.
	Measure(ctx context.Context, req gpu.Request, progress func(done int)) (experiment.Result, error)
	// Compile compiles CUDA C++ to PTX for Arch; compile errors come back as the compiler's log.
	Compile(ctx context.Context, source, name string) (string, error)
	// Arch is the virtual architecture learners' kernels compile for (e.g. 80 for compute_80).
	Arch() int
}

// Harness is the timing harness's view of this server: its kernels, with GPU kernels measured by
// the GPU worker.
func (e Env) Harness() experiment.Env {
	return experiment.Env{Kernels: e.Kernels, Remote: func(ctx context.Context, kernel string, n int, s experiment.Spec, progress func(int)) (experiment.Result, error) {
		return e.GPU.Measure(ctx, gpu.Request{Kernel: kernel, N: n, DType: s.DType, Repeats: s.Repeats, Transfers: s.Transfers}, progress)
	}}
}

// Lookup finds the kind named name among ks.
func Lookup(ks []Kind, name string) (Kind, bool) {
	for _, k := range ks {
		if k.Name() == name {
			return k, true
		}
	}
	return nil, false
}

// Parse parses c as kind k's action ("" or "run": the cell's run). An action the kind lacks is an
// error.
func Parse(k Kind, action string, c Cell) (Run, error) {
	if action == "" || action == "run" {
		return k.Parse(c)
	}
	if a, ok := k.(Actioner); ok {
		for _, act := range a.Actions() {
			if act.Name == action {
				return act.Parse(c)
			}
		}
	}
	return nil, fmt.Errorf("a %s cell has no action %q", k.Name(), action)
}

// Stage returns e with its progress mapped into part stage (0-based) of stages equal parts, so that
// a run made of several passes (measured kernels, then emulated ones) reports one bar that only
// moves forward.
func Stage(e Emitter, stage, stages int) Emitter {
	if stages <= 1 {
		return e
	}
	return staged{e, stage, stages}
}

type staged struct {
	Emitter
	stage, stages int
}

func (s staged) Progress(done, total int) {
	s.Emitter.Progress(s.stage*total+done, s.stages*total)
}
