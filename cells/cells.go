// Package cells defines what a kind of lesson cell is (Kind: parse and validate a source, estimate,
// run into an Emitter of generic events), the events a run emits and the Env the runner fills for
// the kinds; each kind lives in a folder below this one, made a Kind by Define from what is its own
// (Def), and cells/builtin lists them (docs/kinds.md). It is an interface package: it imports the
// standard library, plain values (packages measure and estimate) and the cleaning of untrusted
// strings (internal/untrusted, for Event.Clean) only, and what kinds need from the machine (its
// GPU, its roofline ceilings) reaches them through the interfaces GPU and Roofline in Env.
package cells

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/gpuplayground/playground/estimate"
	"github.com/gpuplayground/playground/measure"
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

// Languager is a Kind whose cells are not YAML alone: Language names the editor's highlighting for
// the cell's source, "yaml+cuda" (a YAML header, a line "---", then CUDA C++) or "yaml+wgsl"; a kind
// without it is "yaml".
type Languager interface {
	Language() string
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
	// Machine, if set, is the class of machine the learner picked for the whole page (the page's
	// machine menu): the run's Needs ask for it unless the cell's own `machine:` key names one,
	// which wins. Kinds ignore it; Parse applies it.
	Machine string
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
// (docs/protocol.md). Emit takes any event (Event); the others are shorthands for the events most
// runs emit, each the same as Emit of its event (Events builds them).
type Emitter interface {
	// Emit reports one event: how a run emits an event that has no shorthand.
	Emit(ev Event)
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

// Asker is an Emitter that can hand a task to the browser page that asked for the run: the kind's
// browser module (Kind.Script) receives it, does the work there (such as WebGPU kernels on the
// learner's own GPU) and answers. The server implements it; a run without a page behind it (tests,
// lessons/cells_test.go) has an Emitter that does not, and Ask returns ErrNoBrowser.
//
// The run keeps its place in the server's queue while it waits, so nothing the server times runs at
// the same time as the browser's work. One task is outstanding at a time.
type Asker interface {
	// Ask sends task (JSON-encodable, at most MaxTaskBytes encoded) to the run's page and waits for
	// its answer: the page's result as raw JSON (at most the 64 KiB frame limit; the kind must
	// validate it strictly, it is the learner's browser's word). It returns context.Cause(ctx) when
	// ctx ends first (Stop, a closed connection, the time limit, shutdown).
	Ask(ctx context.Context, task any) (json.RawMessage, error)
}

// MaxTaskBytes caps one task's JSON encoding.
const MaxTaskBytes = 64 << 10

// ErrNoBrowser is Ask's error when no browser page is behind the run.
var ErrNoBrowser = errors.New("no browser page is behind this run (run it from the lesson page in a browser)")

// PageError is Ask's error when the page could not do the task: its result was
// {"page_error": "…"} (its browser module failed or has no task handler).
type PageError struct{ Message string }

func (e *PageError) Error() string {
	return "the page could not do this run's part in the browser: " + e.Message
}

// Ask hands task to the browser behind e's run (see Asker); ErrNoBrowser when there is none, a
// *PageError when the page answered {"page_error": "…"}.
func Ask(ctx context.Context, e Emitter, task any) (json.RawMessage, error) {
	for {
		switch v := e.(type) {
		case Asker:
			raw, err := v.Ask(ctx, task)
			if err != nil {
				return nil, err
			}
			var pe struct {
				PageError *string `json:"page_error"`
			}
			if json.Unmarshal(raw, &pe) == nil && pe.PageError != nil {
				msg := *pe.PageError
				if len(msg) > 500 {
					msg = msg[:500] + "…"
				}
				return nil, &PageError{Message: strings.ToValidUTF8(msg, "")}
			}
			return raw, nil
		case wrapper:
			e = v.unwrap()
		default:
			return nil, ErrNoBrowser
		}
	}
}

// Placer is an Emitter that keeps which machine a run runs on (the server's, for runs that package
// cluster sends to a machine of several): name for the page ("measured on NAME"), summary (one
// line: name, class, CPU, cores, GPU) for the run's record and its note.
type Placer interface {
	Placed(name, summary string)
}

// Placed tells e's run that it runs on the machine name, described by summary: through the Placer
// behind e, or else as the info note "Ran on SUMMARY.".
func Placed(e Emitter, name, summary string) {
	for {
		switch v := e.(type) {
		case Placer:
			v.Placed(name, summary)
			return
		case wrapper:
			e = v.unwrap()
		default:
			e.Note("info", "Ran on "+summary+".")
			return
		}
	}
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
	// Primary marks a column that matters most, the one a lesson asks the learner to compare: where
	// a table marks some, the page shows those and folds the others behind "more columns" (the CSV
	// has them all); a table with none shows every column.
	Primary bool `json:"primary,omitempty"`
	// Key marks a column that says what a row is (kernel, n, …): the page never folds it, and a
	// cell's `show:` key puts the columns it names right after the table's key columns (Table.Show).
	Key bool `json:"key,omitempty"`
}

// Row is one row of a Table: Values in column order, each a number or a string.
type Row struct {
	Table  string `json:"table"`
	Values []any  `json:"values"`
	// Bad marks a row whose check failed (a wrong result).
	Bad bool `json:"bad,omitempty"`
}

// ErrorValue is a relative error as a Row value: "NaN" or "Inf" for those (JSON has neither), and
// "NaN or Inf" for math.MaxFloat64, the mark harness.Result.RelError and the GPU worker put for an
// output that held either; a finite error as it is.
func ErrorValue(x float64) any {
	switch {
	case math.IsNaN(x):
		return "NaN"
	case math.IsInf(x, 0):
		return "Inf"
	case x == math.MaxFloat64:
		return "NaN or Inf"
	}
	return x
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

// Env is what kinds may use on this server. The runner (machine.New) fills it; what needs the
// machine (its GPU, its roofline ceilings) reaches the kinds through the interfaces GPU and Roofline,
// so that this package names only plain values (package measure) and never the timing harness, the
// GPU worker or the kernels themselves. The timing harness's view of an Env is kernelcell.Harness.
type Env struct {
	// Kernels are the kernels cells may name: the CPU kernels, and the GPU kernels, Unavailable
	// where this server has no GPU.
	Kernels []measure.Kernel
	// Limits bound what a run may ask for.
	Limits measure.Limits
	// GPU is this server's GPU host (its worker), whether or not it has a device.
	GPU GPU
	// Rates price runs before they run (estimate.Rates): the machine's calibrated rates once package
	// calibrate has installed them, estimate.Defaults before that and where Rates is nil.
	Rates *estimate.Current
	// Roofline holds this machine's measured ceilings (a *peaks.Cache); a run measures them at first
	// use.
	Roofline Roofline
	// Noise, if not nil, makes timed runs warn when their timings are noisy (harness.Noise).
	Noise *measure.Noise
	// Machine names the machine that runs the runs, for captions and chart series: "" is the
	// server's own (captions say "this server"); a worker of a cluster (package cluster) gives its
	// name, since its results are shown on the server's pages.
	Machine string
}

// Here is how captions name the machine that runs the runs: "this server", or "the machine NAME".
func (e Env) Here() string { return Here(e.Machine) }

// Here is how captions name the machine called machine (Env.Machine): "this server" for "", else
// "the machine NAME".
func Here(machine string) string {
	if machine == "" {
		return "this server"
	}
	return "the machine " + machine
}

// GPU is the server's access to its NVIDIA GPU, all of it through the supervised GPU worker
// (*gpu.Machine).
type GPU interface {
	// Unavailable says why GPU kernels cannot run here; "" when they can.
	Unavailable() string
	// Device is the first GPU, or nil.
	Device() *measure.Device
	// Measure times one GPU kernel in the worker (req.Op is ignored: it runs req.Kernel), calling
	// progress after each launch.
	Measure(ctx context.Context, req measure.Request, progress func(done int)) (measure.Result, error)
	// Compile compiles CUDA C++ to PTX for the virtual architecture arch, written as PTX writes it
	// after "compute_" ("80", "90a"; "": Arch's); compile errors come back as the compiler's log.
	// An architecture-specific arch ("90a") that the compiler cannot target compiles for its
	// compute capability alone ("90"): the PTX's .target says which it got.
	Compile(ctx context.Context, source, name, arch string) (string, error)
	// Arch is the virtual architecture learners' kernels compile for when the cell asks for none
	// (e.g. 80 for compute_80): the device's compute capability, or 80 without one.
	Arch() int
}

// Roofline holds a machine's measured CPU ceilings (peak GFLOP/s per dtype, STREAM bandwidth in
// GB/s), measured once and kept (*peaks.Cache).
type Roofline interface {
	// Get returns the kept ceilings, measuring them first if there are none (callers wait; it loads
	// every core for a few seconds, so call it where nothing else is timed).
	Get(ctx context.Context) (measure.Ceilings, error)
	// Peek returns the kept ceilings and true, or false if none are measured yet; it never measures.
	Peek() (measure.Ceilings, bool)
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
// error, as is a c.Machine that is not a class (CheckClass).
// The run's Needs include the machine class its `machine:` key asks for, else c.Machine, the page's.
func Parse(k Kind, action string, c Cell) (Run, error) {
	if c.Machine != "" {
		if err := CheckClass(c.Machine); err != nil {
			return nil, fmt.Errorf("the page's machine %w", err)
		}
	}
	r, err := parse(k, action, c)
	if err != nil {
		return nil, err
	}
	m := common(c.Source).Machine
	if m == "" {
		m = c.Machine
	}
	if m != "" {
		return onMachine{r, m}, nil
	}
	return r, nil
}

// PageClass is the class of machine the page asks for that applies to c: c.Machine, or "" when the
// cell's own `machine:` key names a class (the source then says where it runs).
func (c Cell) PageClass() string {
	if common(c.Source).Machine != "" {
		return ""
	}
	return c.Machine
}

func parse(k Kind, action string, c Cell) (Run, error) {
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

// onMachine is a run whose cell asks for a class of machine.
type onMachine struct {
	inner   Run
	machine string
}

func (r onMachine) Estimate() time.Duration { return r.inner.Estimate() }

func (r onMachine) Run(ctx context.Context, e Emitter) error { return r.inner.Run(ctx, e) }

// Exclusive is the inner run's (Exclusive): naming a machine does not change whether a run measures.
func (r onMachine) Exclusive() bool { return Exclusive(r.inner) }

func (r onMachine) Needs() Needs {
	n := NeedsOf(r.inner)
	n.Machine = r.machine
	return n
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

// wrapper is an Emitter of this package that wraps another (staged, shown): Ask and Placed look
// through it for what the one inside can do.
type wrapper interface{ unwrap() Emitter }

func (s staged) unwrap() Emitter { return s.Emitter }

func (s staged) Progress(done, total int) {
	s.Emitter.Progress(s.stage*total+done, s.stages*total)
}

func (s staged) Emit(ev Event) {
	if ev.Type == TypeProgress && ev.Progress != nil {
		s.Progress(ev.Done, ev.Total)
		return
	}
	s.Emitter.Emit(ev)
}

// Needs is what a run asks of the machine that runs it, for servers that spread runs over several
// machines (package cluster). The zero value is "any CPU".
type Needs struct {
	// GPU marks a run that measures kernels on an NVIDIA GPU. It still runs on a machine without
	// one (its GPU kernels are emulated or say why they did not run), so it goes to a machine with a
	// GPU whenever one is connected, and elsewhere only when none is.
	GPU bool `json:"gpu,omitempty"`
	// Machine, if set, is the only class of machine the run may go to: the cell's `machine:` key,
	// else the class the learner picked for the page (Cell.Machine).
	Machine string `json:"machine,omitempty"`
}

// Needer is a Run that says what it needs of a machine; a Run without it needs any CPU.
type Needer interface {
	Needs() Needs
}

// NeedsOf returns what r needs of a machine: r.Needs() when r is a Needer, else the zero Needs.
func NeedsOf(r Run) Needs {
	if n, ok := r.(Needer); ok {
		return n.Needs()
	}
	return Needs{}
}
