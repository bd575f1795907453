package server

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/gpuplayground/playground/chart"
	"github.com/gpuplayground/playground/experiment"
	"github.com/gpuplayground/playground/kernels/systolic"
	"github.com/gpuplayground/playground/lessons"
)

// Causes of a run's cancellation, reported to the learner.
var (
	errStopped    = errors.New("stopped")
	errDisconnect = errors.New("the connection closed")
	errShutdown   = errors.New("the server is shutting down")
)

// timeoutError is the cause when a run hits the run time limit.
type timeoutError struct{ limit time.Duration }

func (e timeoutError) Error() string {
	return fmt.Sprintf("the run hit the %s time limit and was stopped: use smaller sizes, fewer repeats or fewer kernels", e.limit)
}

// job is one run, queued or running. Exactly one terminal message is sent for it (finish).
type job struct {
	id string
	// run measures the job, reporting to sink; it is the cell kind's harness (see Server.plan).
	run    func(ctx context.Context, sink *streamSink) error
	conn   *conn
	ctx    context.Context
	cancel context.CancelCauseFunc
	once   sync.Once
}

// finish sends the run's terminal message once and forgets the job; later calls do nothing.
func (j *job) finish(m Message) {
	j.once.Do(func() {
		j.cancel(context.Canceled)
		m.ID = j.id
		j.conn.forget(j.id)
		j.conn.send(m)
	})
}

// queue runs jobs one at a time, first in first out, so timings never share the cores.
type queue struct {
	timeout time.Duration

	mu      sync.Mutex
	waiting []*job
	wake    chan struct{}
}

func newQueue(timeout time.Duration) *queue {
	return &queue{timeout: timeout, wake: make(chan struct{}, 1)}
}

// maxWaiting bounds the line; past it a run is refused.
const maxWaiting = 1000

// push adds j to the end of the line and tells its client the position.
func (q *queue) push(j *job) error {
	q.mu.Lock()
	if len(q.waiting) >= maxWaiting {
		q.mu.Unlock()
		return fmt.Errorf("the server has %d runs waiting; try again in a minute", maxWaiting)
	}
	q.waiting = append(q.waiting, j)
	// Sent under the lock (send never blocks) so that no started can overtake it.
	j.conn.send(Message{Type: TypeQueued, ID: j.id, Position: len(q.waiting)})
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
	return nil
}

// remove takes j out of the line; it reports false if j was not waiting (running or finished).
func (q *queue) remove(j *job) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	for i, w := range q.waiting {
		if w == j {
			q.waiting = append(q.waiting[:i], q.waiting[i+1:]...)
			q.tellPositions(i)
			return true
		}
	}
	return false
}

// tellPositions re-sends positions to the waiting jobs from index from on; q.mu is held.
func (q *queue) tellPositions(from int) {
	for i := from; i < len(q.waiting); i++ {
		w := q.waiting[i]
		w.conn.send(Message{Type: TypeQueued, ID: w.id, Position: i + 1})
	}
}

func (q *queue) pop() *job {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.waiting) == 0 {
		return nil
	}
	j := q.waiting[0]
	q.waiting = q.waiting[1:]
	q.tellPositions(0)
	return j
}

// loop runs jobs until ctx ends, then cancels everything still waiting.
func (q *queue) loop(ctx context.Context) {
	for {
		for j := q.pop(); j != nil; j = q.pop() {
			q.run(j)
		}
		select {
		case <-q.wake:
		case <-ctx.Done():
			q.mu.Lock()
			left := q.waiting
			q.waiting = nil
			q.mu.Unlock()
			for _, j := range left {
				j.finish(Message{Type: TypeCancelled, Message: errShutdown.Error()})
			}
			return
		}
	}
}

// run measures one job and sends its messages, ending with exactly one terminal message.
func (q *queue) run(j *job) {
	if j.ctx.Err() != nil {
		j.finish(cancelMessage(j.ctx))
		return
	}
	ctx, stop := context.WithTimeoutCause(j.ctx, q.timeout, timeoutError{q.timeout})
	defer stop()
	j.conn.send(Message{Type: TypeStarted, ID: j.id})
	sink := &streamSink{job: j}
	err := func() (err error) {
		defer func() {
			if p := recover(); p != nil {
				err = fmt.Errorf("internal error: %v", p)
			}
		}()
		return j.run(ctx, sink)
	}()
	switch {
	case err == nil:
		j.finish(Message{Type: TypeDone})
	case ctx.Err() != nil:
		var te timeoutError
		if errors.As(context.Cause(ctx), &te) {
			j.finish(Message{Type: TypeError, Message: te.Error()})
		} else {
			j.finish(cancelMessage(ctx))
		}
	default:
		j.finish(Message{Type: TypeError, Message: err.Error()})
	}
}

func cancelMessage(ctx context.Context) Message {
	return Message{Type: TypeCancelled, Message: context.Cause(ctx).Error()}
}

// progressEvery throttles progress messages; the last one of a run is always sent.
const progressEvery = 50 * time.Millisecond

// streamSink turns a run's events into messages: progress, then per result the result and a fresh chart.
type streamSink struct {
	job      *job
	results  []experiment.Result
	simt     []experiment.SIMTResult
	frames   []systolic.Frame
	warps    []experiment.WarpFrame
	lastProg time.Time
	// chart draws the results so far; nil means chart.Throughput.
	chart func([]experiment.Result) (string, error)
}

// framesPerMessage batches animation frames so that a run sends tens of messages, not hundreds, and
// never fills a client's send buffer by itself.
const framesPerMessage = 20

// Frame queues one cycle of a simulated systolic array for the next frames message, keeping the
// weights only on a tile's first cycle and the values to 3 decimals (they are for the eye).
func (s *streamSink) Frame(f systolic.Frame) {
	if f.Cycle != 0 {
		f.W = nil
	}
	for _, g := range [][][]float32{f.A, f.P, f.W} {
		for _, row := range g {
			for i, v := range row {
				row[i] = float32(math.Round(float64(v)*1000) / 1000)
			}
		}
	}
	s.frames = append(s.frames, f)
	if len(s.frames) == framesPerMessage {
		s.flushFrames()
	}
}

func (s *streamSink) flushFrames() {
	if len(s.frames) > 0 {
		s.job.conn.send(Message{Type: TypeFrames, ID: s.job.id, Frames: s.frames})
		s.frames = nil
	}
}

// Systolic sends the last frames, the simulated product, and the utilisation chart of real arrays
// beside this one.
func (s *streamSink) Systolic(r experiment.SystolicResult) {
	s.flushFrames()
	s.job.conn.send(Message{Type: TypeSystolic, ID: s.job.id, Systolic: &r})
	arrays := []chart.Array{{Label: "TPU v1: 256×256", N: 256}, {Label: "TPU v4 MXU: 128×128", N: 128}}
	if r.Array != 256 && r.Array != 128 {
		arrays = append(arrays, chart.Array{Label: fmt.Sprintf("this cell: %d×%d", r.Array, r.Array), N: r.Array})
	}
	svg, err := chart.Utilisation(arrays, func(N, n int) (int64, int64) {
		st := systolic.Cycles(N, n, n, n)
		return st.MACs, st.Cycles
	})
	if err == nil {
		s.job.conn.send(Message{Type: TypeChart, ID: s.job.id, SVG: svg})
	}
}

// Warp queues one watched warp instruction for the next warps message (called from the emulator's
// block goroutine; the run goroutine reads s.warps only after the launch has returned).
func (s *streamSink) Warp(f experiment.WarpFrame) {
	s.warps = append(s.warps, f)
	if len(s.warps) == framesPerMessage {
		s.job.conn.send(Message{Type: TypeWarps, ID: s.job.id, Warps: s.warps})
		s.warps = nil
	}
}

// SIMT sends the last watched frames, one emulated kernel's counts and the counts chart so far.
func (s *streamSink) SIMT(r experiment.SIMTResult) {
	if len(s.warps) > 0 {
		s.job.conn.send(Message{Type: TypeWarps, ID: s.job.id, Warps: s.warps})
		s.warps = nil
	}
	s.simt = append(s.simt, r)
	s.job.conn.send(Message{Type: TypeSIMT, ID: s.job.id, SIMT: &r})
	if svg, err := chart.Counts(s.simt); err == nil {
		s.job.conn.send(Message{Type: TypeChart, ID: s.job.id, SVG: svg})
	}
}

func (s *streamSink) Progress(done, total int) {
	if done < total && time.Since(s.lastProg) < progressEvery {
		return
	}
	s.lastProg = time.Now()
	s.job.conn.send(Message{Type: TypeProgress, ID: s.job.id, Progress: &Progress{Done: done, Total: total}})
}

// Recorded sends the results of rec for the given kernels, if it has any.
func (s *streamSink) Recorded(rec lessons.Recording, kernels []string) {
	var rs []experiment.Result
	for _, r := range rec.Results {
		if slices.Contains(kernels, r.Kernel) {
			rs = append(rs, r)
		}
	}
	if len(rs) == 0 {
		return
	}
	s.job.conn.send(Message{Type: TypeRecorded, ID: s.job.id, Recorded: &Recorded{
		Label: rec.Label(), Device: rec.Device, Driver: rec.Driver, Date: rec.Date, Command: rec.Command, Results: rs}})
}

func (s *streamSink) Note(kernel, level, message string) {
	s.job.conn.send(Message{Type: TypeNote, ID: s.job.id, Note: &Note{Kernel: kernel, Level: level, Message: message}})
}

func (s *streamSink) Result(r experiment.Result) {
	s.results = append(s.results, r)
	s.job.conn.send(Message{Type: TypeResult, ID: s.job.id, Result: &r})
	draw := s.chart
	if draw == nil {
		draw = chart.Throughput
	}
	svg, err := draw(s.results)
	if err != nil {
		return // the table still has the numbers; a chart failure is not a run failure
	}
	s.job.conn.send(Message{Type: TypeChart, ID: s.job.id, SVG: svg})
}
