// Package machine is how a run reaches a machine: the one machine configuration (Config), the
// start-up of a machine (New builds the kinds' environment, cells.Env, once; Calibrate installs its
// rates for run estimates), the one-machine rule (Gate), the parsing of a run by kind name (Parse,
// ParseWithin), its run with its events paced where it runs (Execute, Paced), and the runner the
// server uses (Runner, Slot, Job): Local, the one in-process runner of the server's own machine, of
// the cluster's local worker and of the tests, or a cluster of machines (package cluster, whose
// workers run their jobs on a Machine too). The one event type is cells.Event (Event here).
package machine

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/gpuplayground/playground/calibrate"
	"github.com/gpuplayground/playground/cells"
	"github.com/gpuplayground/playground/cells/builtin"
	"github.com/gpuplayground/playground/estimate"
	"github.com/gpuplayground/playground/gpu"
	"github.com/gpuplayground/playground/gpu/nvidia"
	"github.com/gpuplayground/playground/harness"
	"github.com/gpuplayground/playground/harness/peaks"
	"github.com/gpuplayground/playground/kernels"
)

// Config is what a machine runs runs with.
type Config struct {
	// Name is the machine's name in captions and chart series (cells.Env.Machine): "" is the
	// server's own machine ("this server"), a worker gives its name.
	Name string
	// Kinds builds the cell kinds the machine runs. Default: builtin.Kinds (Kinds).
	Kinds func(cells.Env) []cells.Kind
	// Limits bound what a run may ask for; zero fields take harness.DefaultLimits.
	Limits harness.Limits
	// GPU starts the GPU worker process. Default: this executable's hidden gpu-worker subcommand
	// (SelfGPU).
	GPU gpu.Transport
	// Devices, if set, replaces the GPU worker's device report (tests, or a report probed already).
	Devices func(context.Context) nvidia.Report
	// Roofline sizes the ceilings' measurement (zero: the defaults).
	Roofline peaks.Options
	// Noise, if not nil, makes timed runs warn when their timings are noisy.
	Noise *harness.Noise
	// Slots is how many runs that time nothing run side by side (Gate); 0: GOMAXPROCS.
	Slots int
	// Calibrate asks the machine's user to measure (or load, kept per CPU and binary) its rates for
	// run estimates at start-up (Machine.Calibrate), before it runs anything: the server as its run
	// queue's first job, a worker before it joins. cmd/playground turns it on; tests leave it off.
	Calibrate bool
	// CompileTimeout and DisassembleTimeout bound a learner's compile, and what the SASS work of
	// Show SASS and the time model adds to it (gpu.Compiler's Timeout and DisassembleTimeout);
	// zero: gpu.CompileTimeout and gpu.DisassembleTimeout. Tests shorten them.
	CompileTimeout, DisassembleTimeout time.Duration
}

// Kinds is f, or builtin.Kinds when f is nil: the one place the default list of kinds is chosen.
func Kinds(f func(cells.Env) []cells.Kind) func(cells.Env) []cells.Kind {
	if f == nil {
		return builtin.Kinds
	}
	return f
}

// SelfGPU is this executable's hidden GPU worker subcommand (gpu.WorkerCommand).
func SelfGPU() gpu.Transport {
	exe, err := os.Executable()
	if err != nil {
		exe = os.Args[0]
	}
	return gpu.Exec{Path: exe, Args: []string{gpu.WorkerCommand}}
}

// HostName is name, or this machine's host name when name is empty ("unknown-host" when it has none).
func HostName(name string) string {
	if name != "" {
		return name
	}
	if host, _ := os.Hostname(); host != "" {
		return host
	}
	return "unknown-host"
}

// CPUModel is the CPU's model name from /proc/cpuinfo, or "unknown CPU".
func CPUModel() string {
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				return strings.TrimSpace(v)
			}
		}
	}
	return "unknown CPU"
}

// Machine is one machine's runner: its GPU, the environment its kinds were built with, its kinds,
// and its gate.
type Machine struct {
	// GPU is this machine's GPU host (its supervised GPU worker) and device report.
	GPU *gpu.Machine
	// Env is what the kinds use, built once.
	Env cells.Env
	// Kinds are the kinds built with Env.
	Kinds []cells.Kind
	// Gate keeps the one-machine rule here.
	Gate *Gate

	kinds func(cells.Env) []cells.Kind
}

// New probes the GPU (cfg.Devices, or the GPU worker, stopped again once it answered) and builds
// the environment and the kinds. Close stops its GPU worker.
func New(ctx context.Context, cfg Config) *Machine {
	if cfg.GPU == nil {
		cfg.GPU = SelfGPU()
	}
	m := &Machine{GPU: &gpu.Machine{Worker: &gpu.Supervisor{Transport: cfg.GPU},
		Compiler: &gpu.Compiler{Transport: cfg.GPU, Timeout: cfg.CompileTimeout, DisassembleTimeout: cfg.DisassembleTimeout}},
		Gate: NewGate(cfg.Slots), kinds: Kinds(cfg.Kinds)}
	if cfg.Devices != nil {
		m.GPU.Report = cfg.Devices(ctx)
	} else {
		m.GPU.Report = gpu.Probe(ctx, m.GPU.Worker)
		m.GPU.Worker.Close() // idle, it holds nothing; it starts again at the first GPU run
	}
	// GPU kernels are known to every cell: measured by the worker where there is a device (the
	// Hopper rungs on an sm_90 one only), and otherwise each reports why it did not run.
	m.Env = cells.Env{
		Kernels:  append(kernels.CPU(), nvidia.GEMMsOn(m.GPU.Unavailable(), m.GPU.Arch())...),
		Limits:   cfg.Limits.WithDefaults(),
		GPU:      m.GPU,
		Rates:    &estimate.Current{},
		Roofline: &peaks.Cache{Options: cfg.Roofline},
		Noise:    cfg.Noise,
		Machine:  cfg.Name,
	}
	m.Kinds = m.kinds(m.Env)
	return m
}

// KindsWith builds the kinds again with other limits (the lessons' cells are checked against the
// default limits, whatever this machine's are).
func (m *Machine) KindsWith(lim harness.Limits) []cells.Kind {
	env := m.Env
	env.Limits = lim
	return m.kinds(env)
}

// NoTimeLimit is a run time limit that never ends a run (about 146 years): the limit of kinds that
// price a run rather than refuse it (KindsWithRates, and the server's own where machines price runs).
const NoTimeLimit time.Duration = 1 << 62

// KindsWithRates builds the kinds again pricing runs with rates (another machine's, as it reported
// them; nil: estimate.Defaults), for estimating a run on that machine: their time limit is lifted
// (a parse prices the run rather than refusing it), as the caller compares the estimate with its own.
func (m *Machine) KindsWithRates(rates *estimate.Rates) []cells.Kind {
	env := m.Env
	env.Limits.RunTimeout = NoTimeLimit
	env.Rates = &estimate.Current{}
	env.Rates.Set(rates)
	return m.kinds(env)
}

// Names are the names of the machine's kinds.
func (m *Machine) Names() []string {
	var names []string
	for _, k := range m.Kinds {
		names = append(names, k.Name())
	}
	return names
}

// Calibrate measures this machine's rates for run estimates (package calibrate), or loads those kept
// in the user cache for this CPU and binary, and installs them in Env.Rates, sized by the machine's
// limits; it says on out what came of it. A failure leaves the rates as they were (estimate.Defaults
// at start-up), and says so. It times the machine: call it while nothing else runs.
func (m *Machine) Calibrate(ctx context.Context, out io.Writer) {
	path, err := calibrate.CachePath()
	if err != nil {
		path = ""
	}
	r, measured, err := calibrate.Ensure(ctx, path, m.Env.Rates, calibrate.Options{MaxN: m.Env.Limits.MaxN, RunTimeout: m.Env.Limits.RunTimeout})
	switch {
	case err != nil:
		fmt.Fprintf(out, "calibration: %v; run estimates use the built-in rates\n", err)
	case measured:
		fmt.Fprintf(out, "measured this machine's rates for run estimates (kept in %s)\n", path)
	default:
		fmt.Fprintf(out, "run estimates use this machine's rates measured %s\n", r.Measured.Format(time.RFC3339))
	}
}

// Close stops the GPU worker.
func (m *Machine) Close() { m.GPU.Worker.Close() }

// where is how errors name the machine: "" for the server's own, else " on NAME".
func (m *Machine) where() string {
	if m.Env.Machine == "" {
		return ""
	}
	return " on " + m.Env.Machine
}

// Parse parses a run of the cell c of kind with action (cells.Parse) with this machine's kinds, as
// a machine that was sent a run by name does. A panic is the error.
func (m *Machine) Parse(kind, action string, c cells.Cell) (cells.Run, error) {
	return m.parse(m.Kinds, kind, action, c)
}

// ParseWithin is Parse under the run time limit limit instead of this machine's own
// (Limits.RunTimeout), its other limits (memory, sizes) kept: a worker parses a job under the limit
// of the server that accepted it, which runs it under that limit too (the job's time limit). limit
// ≤ 0, or this machine's own, is Parse.
func (m *Machine) ParseWithin(kind, action string, c cells.Cell, limit time.Duration) (cells.Run, error) {
	if limit <= 0 || limit == m.Env.Limits.RunTimeout {
		return m.Parse(kind, action, c)
	}
	lim := m.Env.Limits
	lim.RunTimeout = limit
	return m.parse(m.KindsWith(lim), kind, action, c)
}

// parse is Parse with the kinds kinds (built with this machine's environment).
func (m *Machine) parse(kinds []cells.Kind, kind, action string, c cells.Cell) (r cells.Run, err error) {
	defer func() {
		if p := recover(); p != nil {
			r, err = nil, fmt.Errorf("internal error%s: %v", m.where(), p)
		}
	}()
	k, ok := cells.Lookup(kinds, kind)
	if !ok {
		return nil, fmt.Errorf("the machine %s cannot run %s cells", m.Env.Machine, kind)
	}
	r, err = cells.Parse(k, action, c)
	if err != nil && m.Env.Machine != "" {
		return nil, fmt.Errorf("on %s: %w", m.Env.Machine, err)
	}
	return r, err
}

// Execute runs r on a machine already entered (Gate), its events paced into e (Paced); a panic in
// the run is its error.
func (m *Machine) Execute(ctx context.Context, r cells.Run, e cells.Emitter) error {
	return Paced(ctx, r, e, m.where())
}

// Paced runs r with its events paced into e, an emitter that sends each event at once (the
// server's messages to a page, a worker's NATS events): through a cells.Paced, flushed when the run
// ends unless ctx ended first. This is where a run's events are paced: a run relayed from another
// machine was paced there (the cluster's relay paces an untrusted worker's events again, with
// slack enough to pass an honest one's unchanged). A panic in the run (or in drawing its chart) is its error,
// "internal error" followed by where (" on NAME", or "").
func Paced(ctx context.Context, r cells.Run, e cells.Emitter, where string) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("internal error%s: %v", where, p)
		}
	}()
	p := &cells.Paced{Out: e}
	err = r.Run(ctx, p)
	if ctx.Err() == nil {
		p.Flush() // the last frames and the chart of everything
	}
	return err
}

// Run waits until the gate lets r in (a run that measures alone, one that times nothing beside
// others like it), runs it (Execute) and leaves; err is ctx's cause if ctx ends while it waits.
func (m *Machine) Run(ctx context.Context, r cells.Run, e cells.Emitter) error {
	ex := cells.Exclusive(r)
	if err := m.Gate.Enter(ctx, ex); err != nil {
		return err
	}
	defer m.Gate.Leave(ex)
	return m.Execute(ctx, r, e)
}
