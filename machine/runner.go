package machine

import (
	"context"
	"sync"
	"time"

	"github.com/gpuplayground/playground/cells"
)

// Runner is where the server's run queue runs its runs: in this process (Local) by default, or on
// the machines of a cluster (package cluster). Every machine follows one rule: a run that measures (cells.Exclusive) has the
// machine to itself; runs that time nothing share its cores, one slot each, and never run beside a
// measuring one. The queue keeps the order (fair rounds over students) and, on every change, offers
// its waiting runs in that order to TryAcquire, starting each that gets a Slot; so a run that waits
// for a busy machine never holds up a run behind it that another machine (or a free slot) can take.
type Runner interface {
	// TryAcquire reserves, without waiting, a machine able to run r (cells.NeedsOf): the whole
	// machine for a run that measures, one slot for one that times nothing. ok is false when no able
	// machine is free now; drain then reports that an able machine is busy only with runs that time
	// nothing (a measuring run gets it once they end, if no new one starts there). err is set when r
	// can never run (such as no machine of the class its cell asks for).
	TryAcquire(r cells.Run) (s Slot, ok, drain bool, err error)
	// Changed returns a channel that is closed at the next change that may let a run start (a slot
	// freed, a machine joined or left). Take it before TryAcquire so that no change is missed.
	Changed() <-chan struct{}
}

// Acquire waits until ex reserves a machine for r (Runner.TryAcquire), or ctx ends: for callers
// that run one run at a time, outside the queue (benchmarks, tests).
func Acquire(ctx context.Context, ex Runner, r cells.Run) (Slot, error) {
	for {
		ch := ex.Changed()
		s, ok, _, err := ex.TryAcquire(r)
		if err != nil {
			return nil, err
		}
		if ok {
			return s, nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	}
}

// Slot is a machine (or one of its slots) reserved for one run.
type Slot interface {
	// Execute runs r on the machine, reporting its events to e from the calling goroutine (paced
	// where it runs: machine.Paced, so e sends each event it gets at once), and
	// returns as cells.Run.Run does: ctx's error when cancelled or timed out. job is the request r was
	// parsed from, for machines that parse it again with their own kinds.
	Execute(ctx context.Context, job Job, r cells.Run, e cells.Emitter) error
	// Release frees the machine; called once, after Execute has returned (or instead of it).
	Release()
}

// Remote is a Slot on a machine other than this server's: Machine describes it in one line (name,
// class, CPU, GPU), kept with the run in place of this server's description.
type Remote interface {
	Machine() string
}

// MachineInfo is one machine that runs runs, as the page's machine menu lists it (GET /api/machines).
type MachineInfo struct {
	// Name is the machine's name in results (a worker's -name, else its host name).
	Name string `json:"name"`
	// Class is the class of machine a page or a cell's machine: key may ask for; "" is none.
	Class string `json:"class,omitempty"`
	// Summary describes it in one line: name, class, CPU, cores and GPU, as "Ran on" notes do.
	Summary string `json:"summary"`
	// GPU is true when it measures on an NVIDIA GPU.
	GPU bool `json:"gpu"`
	// Here marks this server's own machine.
	Here bool `json:"here,omitempty"`

	// What the operator watches (/class, GET /api/machines for scripts).
	// Slots is how many runs that time nothing it runs side by side (a run that measures runs alone).
	Slots int `json:"slots"`
	// Busy is how many runs it runs now; Measuring says one of them measures (has it alone).
	Busy      int  `json:"busy"`
	Measuring bool `json:"measuring,omitempty"`
	// Runs are the runs on it now; an instructor sees them, a learner's menu gets none (the runs
	// are other students' data).
	Runs []MachineRun `json:"runs,omitempty"`
	// LastHeartbeat is when the machine last announced itself (this server's clock); zero for this
	// server's own machine, which never leaves.
	LastHeartbeat time.Time `json:"last_heartbeat,omitzero"`
	// Done counts the runs that ended on it since it first joined (kept over its rejoins and
	// restarts); Errors those of them that ended with an error of the machine's (not a cancel, the
	// time limit, nor a loss of the server's own NATS connection).
	Done   int `json:"runs_done"`
	Errors int `json:"errors"`

	// Price says how a worker's measuring runs bear out the prices its reported rates give them
	// (package cluster, trust.go): "unproven" (no run yet with them), "on price", "slower than
	// priced" (a loaded machine: not accused) or "demoted"; "" for this server's own machine and
	// a worker that reported no rates (estimate.Defaults price its runs). Only on price do its
	// prices place runs and price learners' estimates.
	Price string `json:"price,omitempty"`
	// PriceRatio is the median over its recent measuring runs of the time each took, beyond a
	// second, per second of its price (1: as priced); 0 with none.
	PriceRatio float64 `json:"price_ratio,omitempty"`
	// Demoted, when set, says why the worker is demoted, since DemotedAt: its rates claim it is
	// faster than its runs show. It lasts across the worker's restarts, until it runs on price.
	Demoted   string    `json:"demoted,omitempty"`
	DemotedAt time.Time `json:"demoted_at,omitzero"`
}

// MachineRun is a run on a machine, as the instructor sees it (MachineInfo.Runs).
type MachineRun struct {
	Run     int64     `json:"run"`
	Student string    `json:"student"`
	Lesson  string    `json:"lesson"`
	Cell    string    `json:"cell"`
	Started time.Time `json:"started"`
}

// Lister is a Runner that runs runs on machines it can list (package cluster): the
// page's machine menu offers their classes. An executor that is not one runs everything here.
type Lister interface {
	// ListMachines lists the machines connected now, this server's own first (if it runs runs).
	ListMachines() []MachineInfo
}

// Unplaced is a Runner that can tell when no machine connected now, busy or free, could take a
// run (package cluster): the queue then notes it to the run's page, the operator's terminal and
// /class, and the run keeps its place until such a machine joins.
type Unplaced interface {
	// NoMachine says why no machine connected now could take r, naming the machines connected,
	// e.g. "no machine is connected that can run this: it asks for class h100; connected machines:
	// lab-1 (class lab)"; "" when one could (whether busy or free).
	NoMachine(r cells.Run) string
}

// Estimator is a Runner whose machines price runs with their own rates (package cluster): the
// estimate of a run, for the refusal of one over the time limit and for the queue's wait, is the one
// on the machines that can take it.
type Estimator interface {
	// Estimate is how long r, parsed from job, is expected to take on the fastest machine connected
	// now that can take it; ok is false when no such machine is known (then r.Estimate() stands).
	Estimate(job Job, r cells.Run) (d time.Duration, ok bool)
}

// Job is what a run request named, with the kind its cell has: enough for another process with the
// same lessons and kinds to parse the same run.
type Job struct {
	// Kind is the cell's kind name (the lesson fence's info string), looked up among the kinds.
	Kind   string
	Lesson string
	Action string
	// Cell holds the cell id, the learner's source and the cell's recording, if any.
	Cell cells.Cell
	// Run is the run's id in the store (0 when it is kept nowhere) and Student its student's name:
	// for the operator's list of machines (MachineInfo.Runs), not sent to workers.
	Run     int64
	Student string
}

// Local is the in-process runner, the one runner of this process's machine, whoever uses it: the
// server's own machine (the default Runner), the local worker of a cluster (package cluster) and the
// tests. Runs execute here on m, one that measures at a time, or up to its slots that time nothing
// side by side (m.Gate keeps the rule), their events paced (Machine.Execute).
type Local struct {
	m *Machine
	// Reparse: the runs come parsed without their time limit, priced for whichever machine of
	// several takes them (an Estimator's); each is parsed again here under this machine's own limits,
	// as a worker does (Machine.ParseWithin), so that its kinds sample down or refuse what would
	// outrun them.
	Reparse bool
}

// NewLocal returns the in-process runner of m.
func NewLocal(m *Machine) *Local { return &Local{m: m} }

// Bare is a machine with a gate of slots slots (slots ≤ 0: GOMAXPROCS) and nothing else: its runs
// run as they were parsed, its kinds are none (tests, and a cluster given no runner of this machine).
func Bare(slots int) *Machine {
	return &Machine{Gate: NewGate(slots), kinds: func(cells.Env) []cells.Kind { return nil }}
}

// TryAcquire reserves the machine for a measuring run when nothing runs, or a slot for a run that
// times nothing when no measuring run runs and a slot is free.
func (l *Local) TryAcquire(r cells.Run) (Slot, bool, bool, error) {
	ex := cells.Exclusive(r)
	if ok, drain := l.m.Gate.TryEnter(ex); !ok {
		return nil, false, drain, nil
	}
	return &localSlot{l: l, exclusive: ex}, true, false, nil
}

// Changed is closed when a slot is released.
func (l *Local) Changed() <-chan struct{} { return l.m.Gate.Changed() }

// Execute runs r, parsed from j, on this machine, entered already (TryAcquire, or a cluster's
// placement on this machine's gate): parsed again under this machine's limits first with Reparse.
func (l *Local) Execute(ctx context.Context, j Job, r cells.Run, e cells.Emitter) error {
	if l.Reparse {
		var err error
		if r, err = l.m.Parse(j.Kind, j.Action, j.Cell); err != nil {
			return err
		}
	}
	return l.m.Execute(ctx, r, e)
}

type localSlot struct {
	l         *Local
	exclusive bool
	once      sync.Once
}

func (s *localSlot) Execute(ctx context.Context, j Job, r cells.Run, e cells.Emitter) error {
	return s.l.Execute(ctx, j, r, e)
}

func (s *localSlot) Release() {
	s.once.Do(func() { s.l.m.Gate.Leave(s.exclusive) })
}
