package e2e

import (
	"context"
	"sync"
	"time"

	"github.com/gpuplayground/playground/cells"
	"github.com/gpuplayground/playground/cells/cellstest"
	"github.com/gpuplayground/playground/machine"
)

// recording is a cellstest.Recorder that also keeps every call its run made, in order, to make
// them again into another emitter (replay).
type recording struct {
	cellstest.Recorder
	source string // the cell's source the run was parsed from
	mu     sync.Mutex
	calls  []func(cells.Emitter)
}

func (r *recording) keep(call func(cells.Emitter)) {
	r.mu.Lock()
	r.calls = append(r.calls, call)
	r.mu.Unlock()
}

func (r *recording) Emit(ev cells.Event) {
	r.keep(func(e cells.Emitter) { e.Emit(ev) })
	r.Recorder.Emit(ev)
}

func (r *recording) Progress(done, total int) {
	r.keep(func(e cells.Emitter) { e.Progress(done, total) })
	r.Recorder.Progress(done, total)
}

func (r *recording) Note(level, text string) {
	r.keep(func(e cells.Emitter) { e.Note(level, text) })
	r.Recorder.Note(level, text)
}

func (r *recording) Table(t cells.Table) {
	r.keep(func(e cells.Emitter) { e.Table(t) })
	r.Recorder.Table(t)
}

func (r *recording) Row(row cells.Row) {
	r.keep(func(e cells.Emitter) { e.Row(row) })
	r.Recorder.Row(row)
}

// Chart draws the chart once, for the recorder and the replay.
func (r *recording) Chart(draw func() (string, error)) {
	svg, err := draw()
	drawn := func() (string, error) { return svg, err }
	r.keep(func(e cells.Emitter) { e.Chart(drawn) })
	r.Recorder.Chart(drawn)
}

func (r *recording) Frames(frames ...any) {
	r.keep(func(e cells.Emitter) { e.Frames(frames...) })
	r.Recorder.Frames(frames...)
}

func (r *recording) Text(title, body string) {
	r.keep(func(e cells.Emitter) { e.Text(title, body) })
	r.Recorder.Text(title, body)
}

// replay is a cells.Run that makes a recording's calls again.
type replay struct{ rec *recording }

func (p replay) Estimate() time.Duration { return time.Second }

func (p replay) Run(ctx context.Context, e cells.Emitter) error {
	for _, call := range p.rec.calls {
		if err := ctx.Err(); err != nil {
			return err
		}
		call(e)
	}
	return nil
}

// replayRunner is a machine.Runner for a test server whose runs of lesson cells, at the sources
// startLessonRuns ran them at, are that run's events made again (its recording), paced as a
// machine paces a run's; any other run runs. Its machine has slots slots.
type replayRunner struct {
	*machine.Local
	counts *replayCounts
}

// replayCounts counts a replayRunner's runs: replayed, and run as asked.
type replayCounts struct {
	mu            sync.Mutex
	replayed, ran int
}

func (c *replayCounts) add(replayed bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if replayed {
		c.replayed++
	} else {
		c.ran++
	}
}

func (c *replayCounts) get() (replayed, ran int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.replayed, c.ran
}

func newReplayRunner(slots int) replayRunner {
	return replayRunner{machine.NewLocal(machine.Bare(slots)), &replayCounts{}}
}

func (r replayRunner) TryAcquire(run cells.Run) (machine.Slot, bool, bool, error) {
	s, ok, drain, err := r.Local.TryAcquire(run)
	if !ok || err != nil {
		return s, ok, drain, err
	}
	return replaySlot{s, r.counts}, true, false, nil
}

type replaySlot struct {
	machine.Slot
	counts *replayCounts
}

// Execute replays the recording of j's cell if startLessonRuns ran it at j's source (waiting for
// its lesson's runs), or runs r.
func (s replaySlot) Execute(ctx context.Context, j machine.Job, r cells.Run, e cells.Emitter) error {
	rec := recordingOf(ctx, j)
	s.counts.add(rec != nil)
	if rec != nil {
		return machine.Paced(ctx, replay{rec}, e, "")
	}
	return s.Slot.Execute(ctx, j, r, e)
}

// recordingOf is the recording of j's cell run at j's source by startLessonRuns, nil if there is
// none (another source, an action, a cell of no embedded lesson).
func recordingOf(ctx context.Context, j machine.Job) *recording {
	if j.Action != "" || lessonCharts.runs == nil {
		return nil
	}
	l, ok := lessonCharts.runs[j.Lesson]
	if !ok {
		return nil
	}
	select {
	case <-l.done:
	case <-ctx.Done():
		return nil
	}
	if rec := l.recordings[j.Cell.ID]; rec != nil && rec.source == j.Cell.Source {
		return rec
	}
	return nil
}
