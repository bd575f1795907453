package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/gpuplayground/playground/cells"
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
	id     string
	run    cells.Run
	req    Job // what the run was parsed from, for executors on other machines
	conn   *conn
	ctx    context.Context
	cancel context.CancelCauseFunc
	once   sync.Once
	ask    chan json.RawMessage // the page's answer to the outstanding task (ask.go); guarded by conn.mu
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

// queue takes jobs first in first out and runs each on a machine its executor reserves for it: one
// at a time in process by default, so timings never share the cores; one per free machine with
// several.
type queue struct {
	timeout time.Duration
	exec    Executor

	mu      sync.Mutex
	waiting []*job
	current map[*job]bool // the jobs taken from the line: waiting for a machine or running
	closed  bool          // shutting down: no job is taken or started
	wake    chan struct{}
	running sync.WaitGroup
}

func newQueue(timeout time.Duration, exec Executor) *queue {
	if exec == nil {
		exec = NewInProcess()
	}
	return &queue{timeout: timeout, exec: exec, current: map[*job]bool{}, wake: make(chan struct{}, 1)}
}

// maxWaiting bounds the line; past it a run is refused.
const maxWaiting = 1000

// push adds j to the end of the line and tells its client the position.
func (q *queue) push(j *job) error {
	q.mu.Lock()
	switch {
	case q.closed:
		q.mu.Unlock()
		return errShutdown
	case len(q.waiting) >= maxWaiting:
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

// pop takes the next job and makes it the current one; nil when the line is empty or closed.
func (q *queue) pop() *job {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.waiting) == 0 || q.closed {
		return nil
	}
	j := q.waiting[0]
	q.waiting = q.waiting[1:]
	q.current[j] = true
	q.tellPositions(0)
	return j
}

// dispatch waits for a machine for j (the line behind it waits too) and starts it there.
func (q *queue) dispatch(j *job) {
	slot, err := q.exec.Acquire(j.ctx, j.run)
	if err != nil {
		q.done(j)
		if j.ctx.Err() != nil {
			j.finish(cancelMessage(j.ctx))
		} else {
			j.finish(Message{Type: TypeError, Message: err.Error()})
		}
		return
	}
	q.running.Add(1)
	go func() {
		defer q.running.Done()
		defer q.done(j)
		defer slot.Release()
		q.run(j, slot)
	}()
}

// done forgets a job taken from the line.
func (q *queue) done(j *job) {
	q.mu.Lock()
	delete(q.current, j)
	q.mu.Unlock()
}

// loop runs jobs until ctx ends. Then the running job is cancelled and ends with its `cancelled`
// message, every waiting job gets its `cancelled` too, and loop returns: all before the server closes
// any connection, so every run's terminal message reaches its client.
func (q *queue) loop(ctx context.Context) {
	stop := context.AfterFunc(ctx, func() {
		q.mu.Lock()
		q.closed = true
		for j := range q.current {
			j.cancel(errShutdown)
		}
		q.mu.Unlock()
		select {
		case q.wake <- struct{}{}:
		default:
		}
	})
	defer stop()
	for {
		for j := q.pop(); j != nil; j = q.pop() {
			q.dispatch(j)
		}
		q.mu.Lock()
		closed := q.closed
		q.mu.Unlock()
		if closed {
			break
		}
		<-q.wake
	}
	q.running.Wait()
	q.mu.Lock()
	left := q.waiting
	q.waiting = nil
	q.mu.Unlock()
	for _, j := range left {
		j.finish(Message{Type: TypeCancelled, Message: errShutdown.Error()})
	}
}

// run runs one job in slot and sends its messages, ending with exactly one terminal message. A panic
// in the run becomes its error.
func (q *queue) run(j *job, slot Slot) {
	if j.ctx.Err() != nil {
		j.finish(cancelMessage(j.ctx))
		return
	}
	ctx, stop := context.WithTimeoutCause(j.ctx, q.timeout, timeoutError{q.timeout})
	defer stop()
	j.conn.send(Message{Type: TypeStarted, ID: j.id, Estimate: j.run.Estimate().Seconds()})
	e := &emitter{job: j, ctx: ctx}
	err := func() (err error) {
		defer func() { // a panic in the run (or its chart) is the run's error, never a crash
			if p := recover(); p != nil {
				err = fmt.Errorf("internal error: %v", p)
			}
		}()
		err = slot.Execute(ctx, j.req, j.run, e)
		if ctx.Err() == nil {
			e.flush() // the last frames and the chart of everything
		}
		return err
	}()
	switch {
	case err == nil && ctx.Err() == nil:
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

// Pacing of a run's messages.
const (
	// progressEvery throttles progress messages; the last one of a run is always sent.
	progressEvery = 50 * time.Millisecond
	// chartEvery throttles charts; the last one offered is drawn when the run ends.
	chartEvery = 250 * time.Millisecond
	// framesPerMessage batches animation frames so that a run sends tens of messages, not hundreds,
	// and never fills a client's send buffer by itself.
	framesPerMessage = 20
)

// emitter turns a run's events into messages for its client (cells.Emitter). Its methods are called
// by the run's goroutine, or by one goroutine of it at a time.
type emitter struct {
	job       *job
	ctx       context.Context  // the run's: pacing waits end with it
	now       func() time.Time // the clock of the throttles; nil is time.Now
	lastProg  time.Time
	frames    []any
	chart     func() (string, error) // offered, not yet drawn
	lastChart time.Time
}

// send sends m after the frames batched so far, so that messages keep the order of the events.
func (e *emitter) send(m Message) {
	if m.Type != TypeFrames {
		e.flushFrames()
	}
	m.ID = e.job.id
	ctx := e.ctx
	if ctx == nil {
		ctx = context.Background()
	}
	e.job.conn.sendPaced(ctx, m)
}

func (e *emitter) clock() time.Time {
	if e.now != nil {
		return e.now()
	}
	return time.Now()
}

func (e *emitter) Progress(done, total int) {
	if done < total && e.clock().Sub(e.lastProg) < progressEvery {
		return
	}
	e.lastProg = e.clock()
	e.send(Message{Type: TypeProgress, Progress: &Progress{Done: done, Total: total}})
}

func (e *emitter) Note(level, text string) {
	e.send(Message{Type: TypeNote, Note: &cells.Note{Level: level, Message: text}})
}

func (e *emitter) Table(t cells.Table) { e.send(Message{Type: TypeTable, Table: &t}) }

func (e *emitter) Row(r cells.Row) { e.send(Message{Type: TypeRow, Row: &r}) }

func (e *emitter) Text(title, body string) {
	e.send(Message{Type: TypeText, Text: &cells.Text{Title: title, Body: body}})
}

func (e *emitter) Frames(frames ...any) {
	for _, f := range frames {
		e.frames = append(e.frames, f)
		if len(e.frames) == framesPerMessage {
			e.flushFrames()
		}
	}
}

func (e *emitter) flushFrames() {
	if len(e.frames) > 0 {
		e.send(Message{Type: TypeFrames, Frames: e.frames})
		e.frames = nil
	}
}

func (e *emitter) Chart(draw func() (string, error)) {
	e.chart = draw
	if e.clock().Sub(e.lastChart) >= chartEvery {
		e.drawChart()
	}
}

func (e *emitter) drawChart() {
	if e.chart == nil {
		return
	}
	svg, err := e.chart()
	e.chart, e.lastChart = nil, e.clock()
	if err == nil { // the tables still have the numbers; a chart failure is not a run failure
		e.send(Message{Type: TypeChart, SVG: svg})
	}
}

// flush sends what is batched: frames, then the last chart offered.
func (e *emitter) flush() {
	e.flushFrames()
	e.drawChart()
}
