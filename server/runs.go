package server

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"sync"
	"time"

	"github.com/gpuplayground/playground/cells"
	"github.com/gpuplayground/playground/machine"
	"github.com/gpuplayground/playground/store"
)

// job is one run, queued or running, of one student. Exactly one terminal message is sent for it
// (finish) to each connection that shows it. Every message but `queued` is kept in the store as it
// is sent, and goes to the connections the run is attached to, if any: a run outlives its
// connection, and a replay (a refresh, a reconnect, a second tab) sends what it kept, then attaches
// the new connection beside the others.
type job struct {
	s       *Server // nil in unit tests: nothing is kept
	runID   int64   // the store's id
	student store.Student
	// owner is the key of the run's fair share: the student when students sign in, else the
	// remote address (one machine, one person).
	owner                string
	lesson, cell, action string
	run                  cells.Run
	req                  Job // what the run was parsed from, for executors on other machines
	exclusive            bool
	estimate             time.Duration
	ctx                  context.Context
	cancel               context.CancelCauseFunc
	once                 sync.Once

	// Set by the queue under its lock.
	round, seq uint64
	startedAt  time.Time
	// noMachine, while the run waits, says why no machine connected now can take it (Unplaced);
	// "" when one can.
	noMachine string

	mu    sync.Mutex
	views map[*conn]string // the connections that show the run, each with the run's id there
	// replaying holds, for a view attach is still replaying to, the live messages sent meanwhile:
	// attach sends them after the replay, in order, without holding mu while it sends.
	replaying map[*conn][]Message
	nextSeq   int64
	ended     bool
	// ask receives the page's answer to the outstanding task, task (ask.go); task is not kept in
	// the store but sent again to a connection that attaches while it is outstanding.
	ask  chan json.RawMessage
	task json.RawMessage
	// browser is set the first time the run asks its page (store.Run.Browser).
	browser bool
	// pageGone is closed when the outstanding task has had no page showing the run for
	// Config.PageGone (goneTimer, ask.go).
	pageGone  chan struct{}
	goneTimer *time.Timer
}

// view is one connection that shows a run, with the run's id there.
type view struct {
	c  *conn
	id string
}

// viewsLocked lists j's views; j.mu is held.
func (j *job) viewsLocked() []view {
	out := make([]view, 0, len(j.views))
	for c, id := range j.views {
		out = append(out, view{c, id})
	}
	return out
}

// liveViewsLocked lists j's views that m can be sent to now, and holds m (with the view's id) for
// those attach is still replaying to; j.mu is held.
func (j *job) liveViewsLocked(m Message) []view {
	vs := j.viewsLocked()
	out := vs[:0]
	for _, v := range vs {
		if buf, ok := j.replaying[v.c]; ok {
			m.ID = v.id
			j.replaying[v.c] = append(buf, m)
			continue
		}
		out = append(out, v)
	}
	return out
}

// emit sends m to the attached connections, after keeping it; with ctx nil it never waits
// (queue positions, sent under the queue's lock), otherwise it is paced (conn.sendPaced).
func (j *job) emit(ctx context.Context, m Message) {
	m = withoutStack(fmt.Sprintf("run %d", j.runID), m) // once, for the log; kept and sent without it
	j.mu.Lock()
	j.keep(m)
	vs := j.liveViewsLocked(m)
	j.mu.Unlock()
	for _, v := range vs {
		m.ID = v.id
		if ctx == nil {
			v.c.send(m)
		} else {
			v.c.sendPaced(ctx, m)
		}
	}
}

// keep stores m as the run's next message; j.mu is held. Only the latest chart and progress are
// kept (a run redraws its chart up to four times a second). Tasks are not kept: a replay sends only
// the outstanding one (attach), never one the page has answered.
func (j *job) keep(m Message) {
	if j.s == nil || j.runID == 0 || m.Type == TypeQueued || m.Type == TypeTask {
		return
	}
	m.ID = ""
	m = withoutStack(fmt.Sprintf("run %d", j.runID), m) // kept without a stack trace: /api/runs shows what is kept
	b, err := json.Marshal(m)
	if err != nil {
		log.Printf("run %d: %v", j.runID, err)
		return
	}
	j.nextSeq++
	if err := j.s.store.AddMessage(context.Background(), j.runID, j.nextSeq, m.Type, string(b), m.Type == TypeChart || m.Type == TypeProgress); err != nil {
		log.Printf("run %d: keeping a message: %v", j.runID, err)
	}
}

// keepRef keeps, as the run's next message, a reference to run from's messages (store.AddRef): a
// replay shows them there, but for their start and end.
func (j *job) keepRef(from int64) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.nextSeq++
	if err := j.s.store.AddRef(context.Background(), j.runID, j.nextSeq, from); err != nil {
		log.Printf("run %d: keeping its reference to run %d: %v", j.runID, from, err)
	}
}

// started records and announces the start, in slot: a slot on another machine (Remote) is kept
// as where the run ran.
func (j *job) started(slot Slot) {
	if j.s != nil && j.runID != 0 {
		if err := j.s.store.Started(context.Background(), j.runID); err != nil {
			log.Printf("run %d: %v", j.runID, err)
		}
		if r, ok := slot.(Remote); ok {
			j.ranOn(r.Machine())
		}
	}
	j.emit(nil, Message{Type: TypeStarted, Estimate: j.estimate.Seconds()})
}

// ranOn keeps machine (a one-line description; "" is this server) as where j runs.
func (j *job) ranOn(machine string) {
	if j.s == nil || j.runID == 0 || machine == "" {
		return
	}
	if err := j.s.store.RanOn(context.Background(), j.runID, machine); err != nil {
		log.Printf("run %d: %v", j.runID, err)
	}
}

// finish keeps and sends the run's terminal message once and forgets the job; later calls do
// nothing. The store has the run's end before the client hears of it.
func (j *job) finish(m Message) {
	j.once.Do(func() {
		m.Message = clientText(fmt.Sprintf("run %d", j.runID), m.Message) // kept and sent without a stack trace
		j.cancel(context.Canceled)
		j.mu.Lock()
		j.keep(m)
		j.ended = true
		all := j.viewsLocked()
		vs := j.liveViewsLocked(m)
		j.mu.Unlock()
		for _, v := range all {
			v.c.forget(v.id)
		}
		if j.s != nil {
			if j.runID != 0 {
				if err := j.s.store.Ended(context.Background(), j.runID, m.Type, m.Message); err != nil {
					log.Printf("run %d: %v", j.runID, err)
				}
				j.s.live.Delete(j.runID)
				if _, err := j.s.prune(context.Background(), j.student.ID); err != nil {
					log.Printf("run %d: pruning its student's oldest runs: %v", j.runID, err)
				}
			}
			j.s.shares.endRun(j.owner)
		}
		for _, v := range vs {
			m.ID = v.id
			v.c.send(m)
		}
	})
}

// detach stops showing the run on c; the run goes on.
func (j *job) detach(c *conn) {
	j.mu.Lock()
	delete(j.views, c)
	delete(j.replaying, c)
	j.watchPageLocked()
	j.mu.Unlock()
}

// attach replays the run's kept messages to c under the id, and the task the run waits on, if any,
// then shows the run on c too (beside any other connection showing it); it reports false (and sends
// nothing) if the run has ended meanwhile. A connection that has closed is never attached (its
// context's error). Under j.mu it only reads what to replay and adds the view; it sends after
// unlocking (sending may wait for a slow client, and the queue emits under its own lock), while
// live messages of the run meanwhile wait for the replay (j.replaying), so that none is missed,
// sent twice or sent out of order.
func (j *job) attach(c *conn, id string) (bool, error) {
	j.mu.Lock()
	if j.ended {
		j.mu.Unlock()
		return false, nil
	}
	if err := c.ctx.Err(); err != nil { // a closed connection: close has detached its runs, or will find none
		j.mu.Unlock()
		return true, err
	}
	msgs, err := j.s.store.Messages(c.ctx, j.runID)
	if err != nil {
		j.mu.Unlock()
		return true, err
	}
	// Read after the messages: a kept `started` means its start is stored (started).
	r, _, err := j.s.store.GetRun(c.ctx, j.runID)
	if err != nil {
		j.mu.Unlock()
		return true, err
	}
	task := j.task
	oldID, had := j.views[c]
	if j.views == nil {
		j.views = map[*conn]string{}
	}
	if j.replaying == nil {
		j.replaying = map[*conn][]Message{}
	}
	j.views[c] = id
	j.replaying[c] = nil
	j.stopWatchLocked()
	j.mu.Unlock()
	if had && oldID != id {
		c.forget(oldID)
	}
	for _, km := range msgs {
		var m Message
		if json.Unmarshal([]byte(km.Body), &m) == nil {
			m.ID = id
			stampReplayed(&m, r, time.Now())
			c.sendPaced(c.ctx, m)
		}
	}
	if task != nil { // the run waits for its page: this one may answer
		c.sendPaced(c.ctx, Message{Type: TypeTask, ID: id, Task: task})
	}
	for { // then what the run sent meanwhile, until none is held
		j.mu.Lock()
		held, ok := j.replaying[c]
		if len(held) == 0 {
			delete(j.replaying, c)
		} else if ok {
			j.replaying[c] = held[:0:0]
		}
		j.mu.Unlock()
		if len(held) == 0 {
			break
		}
		for _, m := range held {
			c.sendPaced(c.ctx, m)
		}
	}
	if err := c.ctx.Err(); err != nil { // it closed while the replay was sent
		j.detach(c)
		return true, err
	}
	return true, nil
}

// presence counts each owner's open connections; an owner whose last connection closes and who
// does not come back within the grace period has their runs cancelled.
type presence struct {
	mu     sync.Mutex
	conns  map[string]int
	timers map[string]*time.Timer
}

func (s *Server) arrive(owner string) {
	s.here.mu.Lock()
	defer s.here.mu.Unlock()
	s.here.conns[owner]++
	if t := s.here.timers[owner]; t != nil {
		t.Stop()
		delete(s.here.timers, owner)
	}
}

func (s *Server) leave(owner string) {
	s.here.mu.Lock()
	defer s.here.mu.Unlock()
	s.here.conns[owner]--
	if s.here.conns[owner] > 0 {
		return
	}
	delete(s.here.conns, owner)
	s.graceLocked(owner)
}

// awaitReturn gives owner, who has runs but no connection (after a restart), the grace period to
// come back before their runs are cancelled, as if they had just left.
func (s *Server) awaitReturn(owner string) {
	s.here.mu.Lock()
	defer s.here.mu.Unlock()
	if s.here.conns[owner] == 0 && s.here.timers[owner] == nil {
		s.graceLocked(owner)
	}
}

// graceLocked starts owner's grace period: their runs are cancelled unless a connection of theirs
// arrives within Config.Grace; s.here.mu is held.
func (s *Server) graceLocked(owner string) {
	gone := func() {
		s.here.mu.Lock()
		back := s.here.conns[owner] > 0
		delete(s.here.timers, owner)
		s.here.mu.Unlock()
		if !back {
			s.cancelRunsOf(owner, errGone)
		}
	}
	if s.cfg.Grace < 0 {
		go gone()
		return
	}
	s.here.timers[owner] = time.AfterFunc(s.cfg.Grace, gone)
}

// requeue queues again, in their order, the runs a server before this one left queued when it
// stopped (store.Queued), each as its student sent it (same source, action, page's class of machine
// and fair-share owner);
// their pages pick them up when they reconnect (replay). A run whose lesson, cell or kind is gone
// or whose source no longer parses here ends with an error saying so. Each owner then has the grace
// period to come back, as after a disconnect.
func (s *Server) requeue(ctx context.Context) {
	runs, err := s.store.Queued(ctx)
	if err != nil {
		log.Printf("runs left queued before the restart: %v", err)
		return
	}
	owners := map[string]bool{}
	for _, r := range runs {
		j, err := s.restore(ctx, r)
		if err == nil {
			j.emit(nil, Message{Type: TypeNote, Body: machine.Body{Note: &cells.Note{Level: "info",
				Message: "The server restarted while this run waited in the queue; it was queued again."}}})
			s.live.Store(r.ID, j)
			err = s.queue.push(j)
			if err != nil {
				j.finish(Message{Type: TypeError, Message: err.Error()})
				continue
			}
			owners[j.owner] = true
			continue
		}
		msg := "the server restarted while this run waited, and it could not be queued again: " + err.Error()
		if err := s.store.Ended(ctx, r.ID, TypeError, msg); err != nil {
			log.Printf("run %d: %v", r.ID, err)
		}
	}
	for owner := range owners {
		s.awaitReturn(owner)
	}
}

// restore makes the job of stored run r again, parsed as accept parses a request (Server.parse).
func (s *Server) restore(ctx context.Context, r store.Run) (*job, error) {
	if r.SharedFrom != 0 { // it was showing another run's results, not waiting for a machine
		return nil, fmt.Errorf("it was showing the results of run %d: press Run again", r.SharedFrom)
	}
	l := s.lesson(r.Lesson)
	if l == nil || l.Err != nil {
		return nil, fmt.Errorf("lesson %q is gone or has an error", r.Lesson)
	}
	cell, ok := l.Cell(r.Cell)
	if !ok {
		return nil, fmt.Errorf("lesson %q has no cell %q any more", r.Lesson, r.Cell)
	}
	run, est, err := s.parse(cell, r.Action, r.Source, r.Class)
	if err != nil {
		return nil, err
	}
	student, ok, err := s.store.StudentByID(ctx, r.Student)
	if err != nil || !ok {
		return nil, fmt.Errorf("its student %d is not found (%v)", r.Student, err)
	}
	owner := r.Owner
	if owner == "" { // kept by a server before owners were
		owner = fmt.Sprintf("student %d", r.Student)
	}
	kept, err := s.store.Messages(ctx, r.ID) // a note at the last stop, say: keep after them
	if err != nil {
		return nil, err
	}
	j, err := s.newJob(owner, student, run)
	if err != nil {
		return nil, err
	}
	j.runID = r.ID
	j.of(r.Lesson, cell, r.Action, r.Source, r.Class, est)
	if len(kept) > 0 {
		j.nextSeq = kept[len(kept)-1].Seq
	}
	return j, nil
}

// cancelRunsOf stops every live run of owner.
func (s *Server) cancelRunsOf(owner string, cause error) {
	s.live.Range(func(_, v any) bool {
		if j := v.(*job); j.owner == owner {
			s.stopJob(j, cause)
		}
		return true
	})
}

// stopJob cancels j: a waiting run ends at once, a running one when its kernel next checks its
// context.
func (s *Server) stopJob(j *job, cause error) {
	j.cancel(cause)
	if s.queue.remove(j) {
		j.finish(Message{Type: TypeCancelled, Message: cause.Error()})
	}
}

// liveJob is the queued or running job of a stored run, or nil.
func (s *Server) liveJob(runID int64) *job {
	if v, ok := s.live.Load(runID); ok {
		return v.(*job)
	}
	return nil
}

// retell re-sends a waiting run its position (after a replay attached it).
func (q *queue) retell(j *job) {
	q.mu.Lock()
	defer q.mu.Unlock()
	l := q.line(j)
	if i := l.index(j); i >= 0 {
		q.tellPositions(l, i)
	}
}

func (l *fairLine) index(j *job) int {
	for i, w := range l.jobs {
		if w == j {
			return i
		}
	}
	return -1
}

// replay sends a stored run of the connection's student to it under the message's id: the kept
// messages, then, for a live run, everything that follows; for an ended one, its terminal message
// (for a run the server's stop interrupted, a `cancelled` that says so). Another student's run is
// answered as if it did not exist.
func (c *conn) replay(m Message) error {
	if m.ID == "" || len(m.ID) > maxIDLen {
		return fmt.Errorf("a replay needs an id of 1 to %d characters", maxIDLen)
	}
	r, ok, err := c.s.store.GetRun(c.ctx, m.Run)
	if err != nil {
		return err
	}
	if !ok || r.Student != c.student.ID {
		return fmt.Errorf("you have no run %d", m.Run)
	}
	if j := c.s.liveJob(r.ID); j != nil {
		c.mu.Lock()
		if c.jobs[m.ID] != nil && c.jobs[m.ID] != j {
			c.mu.Unlock()
			return fmt.Errorf("run id %q is already in use by a run that has not ended", m.ID)
		}
		c.jobs[m.ID] = j
		c.mu.Unlock()
		attached, err := j.attach(c, m.ID)
		if attached {
			if err != nil {
				c.forget(m.ID)
				return err
			}
			c.s.queue.retell(j)
			return nil
		}
		c.forget(m.ID) // it ended meanwhile: its kept messages include its end
		if r, _, err = c.s.store.GetRun(c.ctx, m.Run); err != nil {
			return err
		}
	}
	msgs, err := c.s.store.Messages(c.ctx, r.ID)
	if err != nil {
		return err
	}
	terminal := false
	for _, km := range msgs {
		var out Message
		if json.Unmarshal([]byte(km.Body), &out) == nil {
			out.ID = m.ID
			terminal = terminal || Terminal(out.Type)
			stampReplayed(&out, r, time.Now())
			c.sendPaced(c.ctx, out)
		}
	}
	if !terminal {
		typ := r.Status
		if !Terminal(typ) {
			typ = TypeCancelled
		}
		out := Message{Type: typ, ID: m.ID, Message: r.Status + ": " + r.Message}
		stampReplayed(&out, r, time.Now())
		c.send(out)
	}
	return nil
}

// stampReplayed adds stored run r's times to m, one of its messages replayed at now: its `started`
// gets the run's start, and while the run has not ended the seconds since then (the page's clock
// goes on from there, not from the replay); its terminal message gets the start and the end, so
// that the page states when the run ran and how long it took, never how long the replay took. A
// run the server's stop interrupted has no known end (the next server dated it), so no ended_at.
func stampReplayed(m *Message, r store.Run, now time.Time) {
	switch {
	case m.Type == TypeStarted:
		m.StartedAt = r.Started
		if !r.Started.IsZero() && r.Ended.IsZero() {
			m.Elapsed = max(now.Sub(r.Started).Seconds(), 0)
		}
	case Terminal(m.Type):
		m.StartedAt = r.Started
		if r.Status != store.StatusInterrupted {
			m.EndedAt = r.Ended
		}
	}
}
