package server

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/gpuplayground/playground/cells"
	"github.com/gpuplayground/playground/machine"
)

// Causes of a run's cancellation, reported to the learner.
var (
	errStopped    = errors.New("stopped")
	errDisconnect = errors.New("the connection closed")
	errShutdown   = errors.New("the server is shutting down")
	errGone       = errors.New("its student was away longer than the grace period")
)

// timeoutError is the cause when a run hits the run time limit.
type timeoutError struct{ limit time.Duration }

func (e timeoutError) Error() string {
	return fmt.Sprintf("the run hit the %s time limit and was stopped: use smaller sizes, fewer repeats or fewer kernels", e.limit)
}

// queue schedules runs on its executor's machines (Executor). On every machine a run that measures
// (cells.Exclusive) has the machine to itself, and runs that time nothing share its cores, one slot
// each (the executor keeps that rule). Each of the two kinds of run waits in a fair line (fairLine:
// round-robin over students); whenever anything changes, the queue offers the waiting runs in fair
// order, the non-measuring ones first, and starts every one that a machine can take now: a run that
// waits for a busy machine (a GPU worker, say) does not hold up the runs behind it that another
// machine or a free slot can take. After each measuring run the waiting non-measuring runs get the
// free slots first; then a measuring run that waits only for them to end (Executor's drain) stops
// new non-measuring runs from starting until it has its machine: neither kind starves.
type queue struct {
	timeout time.Duration
	exec    Executor
	// execute runs a job in its slot: slot.Execute; tests wrap it.
	execute func(ctx context.Context, slot Slot, req Job, run cells.Run, e cells.Emitter) error

	mu        sync.Mutex
	exclusive fairLine
	shared    fairLine
	current   map[*job]bool // the runs taken from the lines: running on a machine
	draining  bool          // a measuring run waits for non-measuring ones to end: none new starts
	paused    bool          // an instructor paused the queue: nothing new starts
	closed    bool          // shutting down: no job is taken or started
	// keepWaiting: at shutdown the waiting runs stay queued in the store, for the next server on
	// the same data directory to run (Server.requeue), instead of ending cancelled.
	keepWaiting bool
	wake        chan struct{}
	running     sync.WaitGroup
	// placed are the waiting runs whose "no machine can run this" changed (noMachine), to tell
	// their pages and the operator outside the lock (loop).
	placed []*job
	// done counts the runs that ended since start, errors those that ended with an error (not a
	// cancel nor the time limit): this server's machine's counts in /api/machines.
	done, errors int
	// say prints a line for the operator (Config.Out); nil: nothing.
	say func(format string, args ...any)
}

func newQueue(timeout time.Duration, exec Executor) *queue {
	return &queue{timeout: timeout, exec: exec, current: map[*job]bool{}, wake: make(chan struct{}, 1),
		execute: func(ctx context.Context, slot Slot, req Job, run cells.Run, e cells.Emitter) error {
			return slot.Execute(ctx, req, run, e)
		}}
}

// maxWaiting bounds the lines; past it a run is refused.
const maxWaiting = 1000

func (q *queue) poke() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

func (q *queue) line(j *job) *fairLine {
	if j.exclusive {
		return &q.exclusive
	}
	return &q.shared
}

// push adds j to its line and tells the waiting runs their positions.
func (q *queue) push(j *job) error {
	q.mu.Lock()
	defer q.poke()
	defer q.mu.Unlock()
	switch {
	case q.closed:
		return errShutdown
	case q.exclusive.len()+q.shared.len() >= maxWaiting:
		return fmt.Errorf("the server has %d runs waiting; try again in a minute", maxWaiting)
	}
	i := q.line(j).push(j)
	// Sent under the lock (send never blocks) so that no started can overtake it.
	q.tellPositions(q.line(j), i)
	return nil
}

// remove takes j out of its line; it reports false if j was not waiting (running or finished).
func (q *queue) remove(j *job) bool {
	q.mu.Lock()
	defer q.poke() // a measuring run that left may have held back the others (draining)
	defer q.mu.Unlock()
	l := q.line(j)
	i := l.remove(j)
	if i < 0 {
		return false
	}
	q.tellPositions(l, i)
	return true
}

// setPaused pauses or resumes the queue: paused, running runs go on and nothing new starts.
func (q *queue) setPaused(p bool) {
	q.mu.Lock()
	q.paused = p
	q.mu.Unlock()
	q.poke()
}

// remaining is how long a running job is expected to go on, from its estimate (never below zero).
func remaining(j *job, now time.Time) time.Duration {
	return max(j.estimate-now.Sub(j.startedAt), 0)
}

// tellPositions re-sends position and estimated wait to the runs of line l from index from on;
// q.mu is held. The wait adds the estimates of the runs ahead to the longest remaining one of those
// running: for a measuring run, every measuring run ahead; for one that times nothing, the
// measuring run about to start, if any, and the runs ahead of it in its own line, spread over the
// slots of one machine (GOMAXPROCS: an estimate, as on one machine).
func (q *queue) tellPositions(l *fairLine, from int) {
	now := time.Now()
	var base time.Duration
	for j := range q.current {
		base = max(base, remaining(j, now))
	}
	var ahead time.Duration
	if l == &q.shared && q.draining && q.exclusive.len() > 0 {
		ahead = q.exclusive.jobs[0].estimate
	}
	slots := time.Duration(runtime.GOMAXPROCS(0))
	for i, w := range l.jobs {
		if i >= from {
			wait := base + ahead
			if l == &q.shared {
				wait = base + ahead/slots
			}
			w.emit(nil, Message{Type: TypeQueued, Position: i + 1, Wait: wait.Seconds()})
		}
		ahead += w.estimate
	}
}

// started is a job that got a machine.
type started struct {
	j    *job
	slot Slot
}

// next picks the runs to start now, reserving a machine for each, and marks them running; q.mu is
// held. Runs that can never run (err from the executor) are taken out of their line and returned
// in failed, to end with their error outside the lock.
func (q *queue) next() (out []started, failed []failedJob) {
	if q.paused || q.closed {
		return nil, nil
	}
	take := func(l *fairLine, exclusive bool) (drain bool) {
		for i := 0; i < len(l.jobs); {
			j := l.jobs[i]
			slot, ok, d, err := q.exec.TryAcquire(j.run)
			switch {
			case err != nil:
				l.take(i)
				failed = append(failed, failedJob{j, err})
			case ok:
				l.take(i)
				q.current[j] = true
				out = append(out, started{j, slot})
			default:
				drain = drain || d
				q.checkPlaced(j)
				i++
			}
		}
		return drain
	}
	wasDraining := q.draining
	if !q.draining {
		take(&q.shared, false)
	}
	q.draining = take(&q.exclusive, true)
	if wasDraining && !q.draining {
		q.poke() // the runs that time nothing may start again: another look
	}
	if len(out) > 0 || len(failed) > 0 {
		q.tellPositions(&q.shared, 0)
		q.tellPositions(&q.exclusive, 0)
	}
	return out, failed
}

// checkPlaced asks the executor, when it can tell (Unplaced), whether any machine connected now
// could take the waiting run j, and records j for loop to tell when the answer changed; q.mu is
// held.
func (q *queue) checkPlaced(j *job) {
	u, ok := q.exec.(Unplaced)
	if !ok {
		return
	}
	if why := u.NoMachine(j.run); why != j.noMachine {
		j.noMachine = why
		q.placed = append(q.placed, j)
	}
}

// tellPlaced tells the page of each run in js, and the operator, that no machine connected now can
// take it (its noMachine, read under q.mu), or that one can again.
func (q *queue) tellPlaced(js []*job) {
	for _, j := range js {
		q.mu.Lock()
		why := j.noMachine
		q.mu.Unlock()
		if j.ctx.Err() != nil {
			continue
		}
		who := fmt.Sprintf("run %d of %s (lesson %s, cell %s)", j.runID, j.student.Name, j.lesson, j.cell)
		if why == "" {
			j.emit(nil, noteMessage("info", "A machine that can run this is connected now."))
			q.log("%s: a machine that can run it is connected now", who)
			continue
		}
		j.emit(nil, noteMessage("warning", why+". The run keeps its place in the queue and starts when such a machine joins."))
		q.log("%s waits: %s", who, why)
	}
}

// log prints a line for the operator, stamped with the time, if the queue has somewhere to print.
func (q *queue) log(format string, args ...any) {
	if q.say != nil {
		q.say("%s "+format, append([]any{time.Now().Format(time.DateTime)}, args...)...)
	}
}

// noteMessage is a note of level with text, as a run's message.
func noteMessage(level, text string) Message {
	return Message{Type: TypeNote, Body: machine.Body{Note: &cells.Note{Level: level, Message: text}}}
}

type failedJob struct {
	j   *job
	err error
}

// ended forgets j, taken from a line, once it has ended.
func (q *queue) ended(j *job) {
	q.mu.Lock()
	delete(q.current, j)
	q.mu.Unlock()
	q.poke()
}

// loop starts runs until ctx ends. Then the running ones are cancelled and end with their
// `cancelled` message, every waiting run gets its `cancelled` too, and loop returns: all before the
// server closes any connection, so every run's terminal message reaches its client.
func (q *queue) loop(ctx context.Context) {
	stop := context.AfterFunc(ctx, func() {
		q.mu.Lock()
		q.closed = true
		for j := range q.current {
			j.cancel(errShutdown)
		}
		q.mu.Unlock()
		q.poke()
	})
	defer stop()
	for {
		changed := q.exec.Changed()
		q.mu.Lock()
		start, failed := q.next()
		closed := q.closed
		for _, s := range start {
			s.j.startedAt = time.Now()
			q.running.Add(1)
		}
		placed := q.placed
		q.placed = nil
		q.mu.Unlock()
		q.tellPlaced(placed)
		for _, f := range failed {
			if f.j.ctx.Err() != nil {
				f.j.finish(cancelMessage(f.j.ctx))
			} else {
				f.j.finish(Message{Type: TypeError, Message: f.err.Error()})
			}
		}
		if closed {
			break
		}
		for _, s := range start {
			go func() {
				defer q.running.Done()
				defer q.ended(s.j)
				defer s.slot.Release()
				q.run(s.j, s.slot)
			}()
		}
		select {
		case <-q.wake:
		case <-changed:
		}
	}
	q.running.Wait()
	q.mu.Lock()
	left := append(q.exclusive.drain(), q.shared.drain()...)
	q.mu.Unlock()
	for _, j := range left {
		if q.keepWaiting && j.ctx.Err() == nil {
			// Not ended: the page hears that the connection dropped, and picks the run up again
			// once the server is back (replay).
			j.emit(nil, Message{Type: TypeNote, Body: machine.Body{Note: &cells.Note{Level: "info",
				Message: "The server is stopping: this run keeps its place in the queue and runs when the server is back."}}})
			continue
		}
		j.finish(Message{Type: TypeCancelled, Message: errShutdown.Error()})
	}
}

// counts are how many runs ended since start, and how many of them with an error.
func (q *queue) counts() (done, errs int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.done, q.errors
}

// queueState is a snapshot of the queue for the instructor's view, copied under the queue's lock.
type queueState struct {
	Paused           bool
	Running, Waiting []classRun
}

func (q *queue) state() queueState {
	q.mu.Lock()
	defer q.mu.Unlock()
	view := func(j *job) classRun {
		return classRun{Run: j.runID, Student: j.student.Name, Lesson: j.lesson, Cell: j.cell, Action: j.action,
			Measures: j.exclusive, Estimate: j.estimate.Seconds(), Started: j.startedAt, NoMachine: j.noMachine}
	}
	st := queueState{Paused: q.paused, Running: []classRun{}, Waiting: []classRun{}}
	for j := range q.current {
		st.Running = append(st.Running, view(j))
	}
	for _, j := range append(slices.Clone(q.exclusive.jobs), q.shared.jobs...) {
		st.Waiting = append(st.Waiting, view(j))
	}
	return st
}

// fairLine is a waiting line served round-robin over students: each run gets a round, one more
// than its student's previous run's (and never below the round now being served), and the line is
// ordered by round, then arrival. So a student's second run waits behind every other student's
// first, however early it was sent.
type fairLine struct {
	jobs  []*job
	round uint64           // the round of the run taken last
	next  map[int64]uint64 // per student, the round their next run gets
	seq   uint64
}

func (l *fairLine) len() int { return len(l.jobs) }

// push inserts j in order and returns its index.
func (l *fairLine) push(j *job) int {
	if l.next == nil {
		l.next = map[int64]uint64{}
	}
	j.round = max(l.round, l.next[j.student.ID])
	l.next[j.student.ID] = j.round + 1
	l.seq++
	j.seq = l.seq
	i := sort.Search(len(l.jobs), func(i int) bool {
		w := l.jobs[i]
		return w.round > j.round || w.round == j.round && w.seq > j.seq
	})
	l.jobs = slices.Insert(l.jobs, i, j)
	return i
}

// take takes the run at index i out of the line, as pop does the first.
func (l *fairLine) take(i int) *job {
	j := l.jobs[i]
	l.jobs = slices.Delete(l.jobs, i, i+1)
	l.round = max(l.round, j.round)
	for st, r := range l.next { // forget students who are behind the round: they start afresh
		if r <= l.round {
			delete(l.next, st)
		}
	}
	return j
}

// remove takes j out and returns where it was, or -1.
func (l *fairLine) remove(j *job) int {
	i := slices.Index(l.jobs, j)
	if i >= 0 {
		l.jobs = slices.Delete(l.jobs, i, i+1)
	}
	return i
}

func (l *fairLine) drain() []*job {
	out := l.jobs
	l.jobs = nil
	return out
}

// run runs one job in slot and sends its messages, ending with exactly one terminal message. A panic in the
// run becomes its error.
func (q *queue) run(j *job, slot Slot) {
	if j.ctx.Err() != nil {
		j.finish(cancelMessage(j.ctx))
		return
	}
	ctx, stop := context.WithTimeoutCause(j.ctx, q.timeout, timeoutError{q.timeout})
	defer stop()
	j.started(slot)
	// The slot's machine paces the run's events (machine.Paced) into e, which sends each at once.
	e := newEmitter(j, ctx)
	err := func() (err error) {
		defer func() { // a panic in the run is the run's error, never a crash
			if p := recover(); p != nil {
				err = fmt.Errorf("internal error: %v", p)
			}
		}()
		req := j.req
		req.Run, req.Student = j.runID, j.student.Name
		return q.execute(ctx, slot, req, j.run, e)
	}()
	q.mu.Lock()
	q.done++
	if err != nil && ctx.Err() == nil {
		q.errors++
	}
	q.mu.Unlock()
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

// emitter turns a run's events into messages for its client, each at once (machine.Events); the
// machine that runs the run paces them (machine.Paced: progress, charts, frame batches).
type emitter struct {
	machine.Events
	job *job
	ctx context.Context // the run's: pacing waits end with it
}

func newEmitter(j *job, ctx context.Context) *emitter {
	e := &emitter{job: j, ctx: ctx}
	e.Events = func(ev machine.Event) { e.send(eventMessage(ev)) }
	return e
}

func (e *emitter) send(m Message) {
	ctx := e.ctx
	if ctx == nil {
		ctx = context.Background()
	}
	e.job.emit(ctx, m)
}

// Placed keeps the machine that runs the run (cells.Placer: another of a cluster's machines, or
// this one when others are connected) with the run, and tells the page in the note "Ran on SUMMARY."
// with the machine's name (ran_on).
func (e *emitter) Placed(name, summary string) {
	e.job.ranOn(summary)
	e.send(eventMessage(machine.Placed(name, summary)))
}
