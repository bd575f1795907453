package server

import (
	"context"
	"errors"
	"fmt"
	"log"
	"slices"
	"sort"
	"time"

	"github.com/gpuplayground/playground/cells"
	"github.com/gpuplayground/playground/lessons"
	"github.com/gpuplayground/playground/store"
)

// Accepting a run is one step, accept: validate the request, price it, record it in one store
// transaction (store.Accept), queue it. The websocket code decodes the frame and sends the answer
// (conn.startRun); nothing in between goes back to it.

// runRequest is a `run` message as accept takes it: the connection it came on (whose student and
// client ask, and which shows the run under id) and what it asks for.
type runRequest struct {
	from *conn
	id   string
	req  *RunRequest // nil: the message named no cell
}

// accepted is an accepted run request: job, queued (or ended at once, when the queue refused it;
// its terminal message tells), or, with prev set, the job that answers with the results of prev, an
// earlier run of the same unedited cell, whose kept messages are msgs (conn.share sends them).
type accepted struct {
	job  *job
	prev *store.Run
	msgs []store.Message
}

// tooLong refuses a run estimated over the run time limit (err wraps cells.ErrOverLimit). run, when
// the server refused the parsed run (overLimit), can still show its cell's recorded rows
// (cells.ShowRecorded); fit is the largest of the cell's sizes that fit (Server.fit), or nil.
type tooLong struct {
	err error
	run cells.Run
	fit *Fit
}

func (e *tooLong) Error() string { return e.err.Error() }
func (e *tooLong) Unwrap() error { return e.err }

// priced is what a valid request costs: its run, parsed by its cell's kind, the run's estimate on
// the machines that can take it, and the class of machine asked for ("" where the cell names its
// own); or, where the results of an earlier run of the unedited cell answer it, that run (prev) and
// its kept messages, and no machine time.
type priced struct {
	run   cells.Run
	est   time.Duration
	class string
	prev  *store.Run
	msgs  []store.Message
}

// accept takes run request r in one step, in this order:
//  1. validate: the lesson and cell it names (cellFor), the disk's room (store.Room) and the
//     client's rate (conn.rate);
//  2. price: parse the source by the cell's kind, with its estimate (parse; over the run time limit
//     a *tooLong), or find shared results that answer it (price);
//  3. record, in one store transaction (store.Accept): the student's edit of the cell, and for a
//     priced run the quota (pruning their oldest finished runs), the admission (the id unused on the
//     connection, the client's share of runs) and the run, queued;
//  4. queue it (or, for shared results, make the job that answers with them).
//
// Every request that passes step 1 keeps its edit, refused or not. The store calls use their own
// context, not the connection's: a request read from the socket is recorded even if the
// connection has just failed (its run goes on, and a replay shows it).
func (s *Server) accept(r runRequest) (accepted, error) {
	c := r.from
	l, cell, err := s.cellFor(r.id, r.req)
	if err != nil {
		return accepted{}, err
	}
	if err := s.store.Room(); err != nil {
		return accepted{}, err
	}
	if err := c.rate("run"); err != nil {
		return accepted{}, err
	}
	p, refused := s.price(r, l, cell)
	rec, err := s.record(r, l, cell, p, refused)
	if err != nil {
		return accepted{}, err
	}
	return s.enqueue(r, cell, p, rec), nil
}

// price prices a request for cell of lesson l (accept's step 2): its run and estimate, or the
// shared results that answer it (signed-in students, the unedited cell's run without action or
// Fresh, a run that measures, results within Config.ShareWindow). The error refuses the request.
func (s *Server) price(r runRequest, l *lessons.Lesson, cell lessons.Cell) (priced, error) {
	q := r.req
	run, est, err := s.parse(cell, q.Action, q.Source, q.Machine)
	if errors.Is(err, cells.ErrOverLimit) {
		long := &tooLong{err: err, fit: s.fit(cell, q.Action, q.Source, q.Machine)}
		if over := (*overLimit)(nil); errors.As(err, &over) {
			long.run = over.run
		}
		return priced{}, long
	}
	if err != nil {
		return priced{}, err
	}
	p := priced{run: run, est: est, class: cells.Cell{Source: q.Source, Machine: q.Machine}.PageClass()}
	if !s.signIn || q.Source != cell.Source || q.Action != "" || q.Fresh || s.cfg.ShareWindow <= 0 || !cells.Exclusive(run) {
		return p, nil
	}
	prev, ok, err := s.store.LatestUnedited(context.Background(), l.Slug, cell.ID, "", q.Source, p.class, time.Now().Add(-s.cfg.ShareWindow))
	if err != nil {
		log.Printf("looking for shared results: %v", err)
		return p, nil
	}
	if !ok {
		return p, nil
	}
	if p.msgs, err = s.store.Messages(context.Background(), prev.ID); err != nil {
		return priced{}, err
	}
	p.prev = &prev
	return p, nil
}

// record is accept's step 3: one store transaction that keeps the request's edit and, unless the
// request was refused (refused, returned as is), records its run, admitted (the connection's id
// free, the client's share of runs) within the student's quota. A run refused there, or one the
// store could not record, leaves nothing in the client's share.
func (s *Server) record(r runRequest, l *lessons.Lesson, cell lessons.Cell, p priced, refused error) (store.Run, error) {
	c, q := r.from, r.req
	req := store.Request{Student: c.student.ID, Lesson: l.Slug, Cell: cell.ID, Source: q.Source, Edited: q.Source != cell.Source,
		Quota: s.cfg.StudentQuota, PrunedNote: s.prunedNote()}
	admitted := false
	if refused == nil {
		req.Run = &store.Run{Student: c.student.ID, Lesson: l.Slug, Cell: cell.ID, Action: q.Action, Source: q.Source,
			Edited: req.Edited, Machine: s.where(), Owner: c.client, Class: p.class}
		if p.prev != nil {
			req.Run = &store.Run{Student: c.student.ID, Lesson: p.prev.Lesson, Cell: p.prev.Cell, Source: q.Source,
				Machine: p.prev.Machine, SharedFrom: p.prev.ID, Class: p.prev.Class, Owner: c.client}
		}
		req.Admit = func() error {
			if err := c.idFree(r.id); err != nil {
				return err
			}
			if err := s.shares.startRun(c.client); err != nil {
				return err
			}
			admitted = true
			return nil
		}
	}
	rec, err := s.store.Accept(context.Background(), req)
	if refused != nil {
		if err != nil {
			log.Printf("saving an edit: %v", err)
		}
		return store.Run{}, refused
	}
	var over *store.OverQuotaError
	switch {
	case err == nil:
		return rec, nil
	case errors.As(err, &over):
		return store.Run{}, fmt.Errorf("your kept runs take %s, over the %s each student may keep, even with the results of your finished runs removed: cancel queued runs, or ask the instructor",
			bytesText(over.Used), bytesText(over.Quota))
	case !admitted: // refused by the admission, or failed before it
		return store.Run{}, err
	}
	s.shares.endRun(c.client)
	if p.prev != nil {
		return store.Run{}, err
	}
	return store.Run{}, fmt.Errorf("could not record the run: %w", err)
}

// enqueue is accept's step 4: the job of recorded run rec, shown on the connection under the
// request's id, queued; or, for shared results, the job that answers with them (conn.share).
func (s *Server) enqueue(r runRequest, cell lessons.Cell, p priced, rec store.Run) accepted {
	c := r.from
	if p.prev != nil {
		j := &job{s: s, runID: rec.ID, owner: c.client, student: c.student, views: map[*conn]string{c: r.id}}
		j.ctx, j.cancel = context.WithCancelCause(c.ctx)
		c.show(r.id, j)
		return accepted{job: j, prev: p.prev, msgs: p.msgs}
	}
	j := s.makeJob(c.client, c.student, p.run)
	j.views = map[*conn]string{c: r.id}
	c.show(r.id, j)
	j.of(rec.Lesson, cell, rec.Action, rec.Source, p.class, p.est)
	j.runID = rec.ID
	s.live.Store(rec.ID, j)
	if err := s.queue.push(j); err != nil {
		if errors.Is(err, errShutdown) { // the run was accepted, and ends as every run does at shutdown
			j.finish(Message{Type: TypeCancelled, Message: err.Error()})
		} else {
			j.finish(Message{Type: TypeError, Message: err.Error()})
		}
	}
	return accepted{job: j}
}

// idFree says whether id may name a new run on c: not while a run of c's that has not ended has it.
func (c *conn) idFree(id string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.jobs[id] != nil {
		return fmt.Errorf("run id %q is already in use by a run that has not ended", id)
	}
	return nil
}

// show records that c shows j under id (its cancel and result messages name it so).
func (c *conn) show(id string, j *job) {
	c.mu.Lock()
	c.jobs[id] = j
	c.mu.Unlock()
}

// cellFor finds the lesson and cell a request (under id) names.
func (s *Server) cellFor(id string, req *RunRequest) (*lessons.Lesson, lessons.Cell, error) {
	if id == "" || len(id) > maxIDLen {
		return nil, lessons.Cell{}, fmt.Errorf("a run needs an id of 1 to %d characters", maxIDLen)
	}
	if req == nil {
		return nil, lessons.Cell{}, errors.New(`a run needs "lesson", "cell" and "source"`)
	}
	l := s.lesson(req.Lesson)
	if l == nil {
		return nil, lessons.Cell{}, fmt.Errorf("unknown lesson %q: reload the page", req.Lesson)
	}
	if l.Err != nil {
		return nil, lessons.Cell{}, fmt.Errorf("lesson %q has an error: %v", req.Lesson, l.Err)
	}
	cell, ok := l.Cell(req.Cell)
	if !ok {
		return nil, lessons.Cell{}, fmt.Errorf("lesson %q has no cell %q: reload the page", req.Lesson, req.Cell)
	}
	return l, cell, nil
}

// newJob makes the job of run for owner's fair share (refused past the share's limit), as makeJob
// does.
func (s *Server) newJob(owner string, student store.Student, run cells.Run) (*job, error) {
	if err := s.shares.startRun(owner); err != nil {
		return nil, err
	}
	return s.makeJob(owner, student, run), nil
}

// makeJob makes the job of run, of owner's fair share (which has counted it), with a context of
// the server's, not of any connection: a run outlives its connection.
func (s *Server) makeJob(owner string, student store.Student, run cells.Run) *job {
	ctx, cancel := context.WithCancelCause(s.connBase)
	return &job{s: s, run: run, ctx: ctx, cancel: cancel, student: student, owner: owner,
		exclusive: cells.Exclusive(run), estimate: run.Estimate()}
}

// of records what j is a run of: lesson's cell, the action, the source it was parsed from and the
// page's class of machine (for executors on other machines, which parse it again), and its estimate
// on the machines that can take it (parse's).
func (j *job) of(lesson string, cell lessons.Cell, action, source, class string, estimate time.Duration) {
	j.lesson, j.cell, j.action = lesson, cell.ID, action
	j.req = Job{Kind: cell.Kind, Lesson: lesson, Action: action, Cell: cells.Cell{ID: cell.ID, Source: source, Recording: cell.Recording, Machine: class}}
	j.estimate = estimate
}

// parse parses a run of cell from source (and the kind's action, if any) by the cell's kind, for the
// class of machine the page asks for ("" any; the cell's machine: key wins), with its estimate
// (estimateOf: on the machines that can take it), and refuses it if that is over the run time limit.
func (s *Server) parse(cell lessons.Cell, action, source, class string) (cells.Run, time.Duration, error) {
	kind, ok := cells.Lookup(s.kinds, cell.Kind)
	if !ok {
		return nil, 0, fmt.Errorf("this server cannot run %s cells", cell.Kind)
	}
	run, err := cells.Parse(kind, action, cells.Cell{ID: cell.ID, Source: source, Recording: cell.Recording, Machine: class})
	if err != nil {
		return nil, 0, err
	}
	job := Job{Kind: cell.Kind, Action: action, Cell: cells.Cell{ID: cell.ID, Source: source, Recording: cell.Recording, Machine: class}}
	est, limit := s.estimateOf(job, run), s.cfg.Limits.RunTimeout
	if est > limit {
		return nil, 0, &overLimit{est: est, limit: limit, run: run}
	}
	return run, est, nil
}

// overLimit is parse's refusal of a run estimated over the run time limit; run is the refused run,
// which can still show its cell's recorded rows (cells.ShowRecorded).
type overLimit struct {
	est, limit time.Duration
	run        cells.Run
}

func (e *overLimit) Error() string {
	return fmt.Sprintf("this run is estimated to take about %s, over the %s run time limit: ask for less", e.est.Round(time.Second), e.limit)
}

// Unwrap says what kind of refusal it is: cells.ErrOverLimit, as a kind's own at parse.
func (e *overLimit) Unwrap() error { return cells.ErrOverLimit }

// fit finds the largest of a refused cell's own sizes that fit the run time limit: its `sizes:` list
// (cells.Sizes) cut to the sizes up to a bound, in the cell's order, for the largest bound among its
// sizes whose run parse accepts. Fewer sizes never cost more, so the bound is found by bisection:
// a few parses, each an estimate, whatever the list's length. nil when the cell has no such list,
// or not even its smallest size fits.
func (s *Server) fit(cell lessons.Cell, action, source, class string) *Fit {
	sizes, ok := cells.Sizes(source)
	if !ok {
		return nil
	}
	bounds := slices.Compact(slices.Sorted(slices.Values(sizes)))
	try := func(i int) (*Fit, bool) {
		var kept []int
		for _, n := range sizes {
			if n <= bounds[i] {
				kept = append(kept, n)
			}
		}
		src, _ := cells.WithSizes(source, kept)
		_, est, err := s.parse(cell, action, src, class)
		return &Fit{Sizes: kept, Source: src, Estimate: est.Seconds()}, err == nil
	}
	// the first bound that does not fit; the largest (the cell as sent) was refused
	i := sort.Search(len(bounds)-1, func(i int) bool { _, ok := try(i); return !ok })
	if i == 0 {
		return nil
	}
	f, _ := try(i - 1)
	return f
}

// estimateOf is how long run, parsed from job, is expected to take: on the fastest machine that can
// take it, with that machine's rates, when the executor knows its machines' rates (Estimator), else
// the run's own estimate (this server's rates).
func (s *Server) estimateOf(job Job, run cells.Run) time.Duration {
	if e, ok := s.queue.exec.(Estimator); ok {
		if d, ok := e.Estimate(job, run); ok {
			return d
		}
	}
	return run.Estimate()
}
