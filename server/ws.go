package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"runtime/debug"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/gorilla/websocket"
	"github.com/gpuplayground/playground/cells"
	"github.com/gpuplayground/playground/lessons"
	"github.com/gpuplayground/playground/machine"
	"github.com/gpuplayground/playground/store"
)

// Websocket limits and timings.
const (
	maxMessage    = 64 << 10        // a frame larger than this gets an error reply
	hardReadLimit = 4 << 20         // a frame larger than this closes the connection
	sendBuffer    = 256             // messages queued for a client; a client this far behind is dropped
	paceWait      = 2 * time.Second // how long a run waits for its client to drain half the buffer
	writeWait     = 10 * time.Second
	pongWait      = 60 * time.Second
	pingEvery     = pongWait * 9 / 10
	maxIDLen      = 128
)

// upgrader refuses upgrades whose Origin differs from the Host (gorilla's default same-origin check)
// with 403.
var upgrader = websocket.Upgrader{ReadBufferSize: 4096, WriteBufferSize: 16384}

// conn is one websocket client: the handler goroutine reads, one writer goroutine writes from a
// buffered channel, and send never blocks (a client that falls sendBuffer messages behind is dropped).
type conn struct {
	s       *Server
	student store.Student
	client  string // the share key (job.owner): the student when students sign in, else the remote address
	ws      *websocket.Conn
	out     chan Message
	ctx     context.Context
	cancel  context.CancelCauseFunc

	mu   sync.Mutex
	jobs map[string]*job
}

func (s *Server) serveWS(w http.ResponseWriter, r *http.Request) {
	student := studentOf(r.Context())
	client := clientOf(r)
	if s.signIn {
		client = fmt.Sprintf("student %d", student.ID)
	}
	if err := s.shares.connect(client); err != nil {
		http.Error(w, err.Error(), http.StatusTooManyRequests)
		return
	}
	defer s.shares.disconnect(client)
	ws, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		return // Upgrade has replied (403 for a foreign Origin)
	}
	// The http.Server's read and write deadlines stay on a hijacked connection: clear them; the
	// reader and the writer set their own (pongWait, writeWait).
	_ = ws.NetConn().SetDeadline(time.Time{})
	if !s.sockets.enter() { // the server is shutting down: it waits for no socket that comes this late
		_ = ws.Close()
		return
	}
	defer s.sockets.leave()
	s.arrive(client)
	defer s.leave(client)
	ctx, cancel := context.WithCancelCause(s.connBase)
	c := &conn{s: s, student: student, client: client, ws: ws, out: make(chan Message, sendBuffer), ctx: ctx, cancel: cancel, jobs: map[string]*job{}}
	lesson := s.online.add(c, r.URL.Query().Get("lesson"), r.Header.Get("Referer"))
	defer s.online.remove(c)
	if student.ID != 0 && lesson != "" && s.lesson(lesson) != nil { // the lesson the student has open (the class list)
		if err := s.store.Seen(ctx, student.ID, lesson); err != nil {
			log.Printf("recording the lesson opened: %v", err)
		}
	}
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		c.writeLoop()
	}()
	c.readLoop()
	c.close(errDisconnect)
	<-writerDone
	_ = ws.Close()
}

// close stops the writer and leaves the connection's runs running, shown nowhere: a replay from
// another connection picks them up, and they are cancelled if their owner stays away longer than
// the grace period (Server.leave).
func (c *conn) close(cause error) {
	c.cancel(cause)
	c.mu.Lock()
	jobs := c.jobs
	c.jobs = map[string]*job{}
	c.mu.Unlock()
	for _, j := range jobs {
		j.detach(c)
	}
}

// send queues m for the client without blocking. A message or note that carries a stack trace is
// cut (clientText).
func (c *conn) send(m Message) {
	if c.ctx.Err() != nil {
		return
	}
	m = withoutStack("websocket "+c.remote(), m)
	select {
	case c.out <- m:
	default:
		c.drop()
	}
}

// withoutStack is m with its message and its note's cut where they carry a stack trace
// (clientText; what names m in the server's log).
func withoutStack(what string, m Message) Message {
	m.Message = clientText(what, m.Message)
	if m.Note != nil && stackLine.MatchString(m.Note.Message) {
		n := *m.Note
		n.Message = clientText(what, n.Message)
		m.Note = &n
	}
	return m
}

// drop disconnects a client that fell too far behind.
func (c *conn) drop() {
	log.Printf("websocket %s: dropping a client %d messages behind", c.remote(), len(c.out))
	c.cancel(errors.New("the client fell too far behind"))
	if c.ws != nil {
		_ = c.ws.NetConn().Close() // unblocks the reader, which cancels the runs
	}
}

func (c *conn) remote() string {
	if c.ws == nil {
		return "(no socket)"
	}
	return c.ws.RemoteAddr().String()
}

// sendPaced is send for a run's own output: while the client's buffer is half full it waits for
// the writer to drain it (a client that reads normally drains it in milliseconds), so that no burst
// of a run can overflow the buffer and get its own client dropped. A client that has not drained it
// after paceWait is dropped; the wait also ends when ctx does.
func (c *conn) sendPaced(ctx context.Context, m Message) {
	var deadline time.Time
	for len(c.out) >= cap(c.out)/2 && c.ctx.Err() == nil && ctx.Err() == nil {
		if deadline.IsZero() {
			deadline = time.Now().Add(paceWait)
		} else if time.Now().After(deadline) {
			c.drop()
			return
		}
		time.Sleep(time.Millisecond)
	}
	c.send(m)
}

// writeLoop is the connection's only writer. When the connection's context ends it flushes what is
// already queued (terminal messages of cancelled runs), sends a close frame and closes the socket.
func (c *conn) writeLoop() {
	defer func() { // a panic here ends this connection, never the server
		if p := recover(); p != nil {
			log.Printf("websocket %s: internal error writing: %v", c.remote(), p)
			c.cancel(fmt.Errorf("internal error: %v", p))
		}
	}()
	ping := time.NewTicker(pingEvery)
	defer ping.Stop()
	defer c.ws.NetConn().Close() // unblocks the reader
	for {
		var err error
		select {
		case m := <-c.out:
			err = c.write(m)
		case <-ping.C:
			err = c.ws.WriteControl(websocket.PingMessage, nil, time.Now().Add(writeWait))
		case <-c.ctx.Done():
			for len(c.out) > 0 && c.write(<-c.out) == nil {
			}
			code, reason := websocket.CloseNormalClosure, ""
			if errors.Is(context.Cause(c.ctx), errShutdown) {
				code, reason = websocket.CloseGoingAway, errShutdown.Error()
			}
			_ = c.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, reason), time.Now().Add(time.Second))
			return
		}
		if err != nil {
			c.cancel(err)
			return
		}
	}
}

func (c *conn) write(m Message) error {
	_ = c.ws.SetWriteDeadline(time.Now().Add(writeWait))
	return c.ws.WriteJSON(m)
}

func (c *conn) readLoop() {
	c.ws.SetReadLimit(hardReadLimit)
	_ = c.ws.SetReadDeadline(time.Now().Add(pongWait))
	c.ws.SetPongHandler(func(string) error { return c.ws.SetReadDeadline(time.Now().Add(pongWait)) })
	for {
		typ, r, err := c.ws.NextReader()
		if err != nil {
			return
		}
		_ = c.ws.SetReadDeadline(time.Now().Add(pongWait))
		data, err := io.ReadAll(io.LimitReader(r, maxMessage+1))
		if err != nil {
			return
		}
		if len(data) > maxMessage {
			if _, err := io.Copy(io.Discard, r); err != nil {
				return
			}
			c.send(Message{Type: TypeError, Message: fmt.Sprintf("message is over the %d KiB limit: shorten the spec", maxMessage>>10)})
			continue
		}
		if typ != websocket.TextMessage {
			c.send(Message{Type: TypeError, Message: "send JSON text messages, not binary"})
			continue
		}
		c.handleSafely(data)
	}
}

// handleSafely is handle with a panic turned into an error reply, never a crash.
func (c *conn) handleSafely(data []byte) {
	defer func() {
		if p := recover(); p != nil {
			log.Printf("websocket %s: internal error handling a frame: %v\n%s", c.remote(), p, debug.Stack())
			c.send(Message{Type: TypeError, Message: "internal error handling your message (the details are in the server's log)"})
		}
	}()
	c.handle(data)
}

func (c *conn) handle(data []byte) {
	if _, gone := c.s.removed.Load(c.student.ID); gone {
		c.send(Message{Type: TypeError, Message: errRemoved.Error()})
		return
	}
	var m Message
	if err := json.Unmarshal(data, &m); err != nil {
		c.send(Message{Type: TypeError, Message: "malformed JSON message: " + err.Error() +
			`; send {"type":"run",...} or {"type":"cancel","id":...} (docs/protocol.md)`})
		return
	}
	switch m.Type {
	case TypeRun:
		if err := c.startRun(m); err != nil {
			c.send(Message{Type: TypeError, ID: m.ID, Message: err.Error()})
		}
	case TypeCancel:
		c.mu.Lock()
		j := c.jobs[m.ID]
		c.mu.Unlock()
		if j != nil {
			c.s.stopJob(j, errStopped)
		}
	case TypeReplay:
		if err := c.rate("replay"); err != nil {
			c.send(Message{Type: TypeError, ID: m.ID, Message: err.Error()})
		} else if err := c.replay(m); err != nil {
			c.send(Message{Type: TypeError, ID: m.ID, Message: err.Error()})
		}
	case TypeSave:
		if err := c.rate("save"); err != nil {
			c.send(Message{Type: TypeError, Message: "your edit was not saved: " + err.Error()})
		} else if err := c.save(m); err != nil {
			c.send(Message{Type: TypeError, Message: "saving your edit: " + err.Error()})
		}
	case TypeResult:
		if err := c.answer(m); err != nil {
			c.send(Message{Type: TypeError, Message: err.Error()})
		}
	default:
		c.send(Message{Type: TypeError, ID: m.ID, Message: fmt.Sprintf("unknown message type %q; send run, cancel, result, replay or save", m.Type)})
	}
}

// cellFor finds the lesson and cell a request names.
func (c *conn) cellFor(m Message) (*lessons.Lesson, lessons.Cell, error) {
	if m.ID == "" || len(m.ID) > maxIDLen {
		return nil, lessons.Cell{}, fmt.Errorf("a run needs an id of 1 to %d characters", maxIDLen)
	}
	if m.RunRequest == nil {
		return nil, lessons.Cell{}, errors.New(`a run needs "lesson", "cell" and "source"`)
	}
	l := c.s.lesson(m.Lesson)
	if l == nil {
		return nil, lessons.Cell{}, fmt.Errorf("unknown lesson %q: reload the page", m.Lesson)
	}
	if l.Err != nil {
		return nil, lessons.Cell{}, fmt.Errorf("lesson %q has an error: %v", m.Lesson, l.Err)
	}
	cell, ok := l.Cell(m.Cell)
	if !ok {
		return nil, lessons.Cell{}, fmt.Errorf("lesson %q has no cell %q: reload the page", m.Lesson, m.Cell)
	}
	return l, cell, nil
}

// register creates the job for request id, enforcing unique ids and the owner's share of runs. The
// run's context is the server's, not the connection's: a run outlives its connection.
func (c *conn) register(id string, run cells.Run) (*job, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.jobs[id] != nil {
		return nil, fmt.Errorf("run id %q is already in use by a run that has not ended", id)
	}
	j, err := c.s.newJob(c.client, c.student, run)
	if err != nil {
		return nil, err
	}
	j.views = map[*conn]string{c: id}
	c.jobs[id] = j
	return j, nil
}

// newJob makes the job of run for owner's fair share (refused past the share's limit), with a
// context of the server's, not of any connection: a run outlives its connection.
func (s *Server) newJob(owner string, student store.Student, run cells.Run) (*job, error) {
	if err := s.shares.startRun(owner); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancelCause(s.connBase)
	return &job{s: s, run: run, ctx: ctx, cancel: cancel, student: student, owner: owner,
		exclusive: cells.Exclusive(run), estimate: run.Estimate()}, nil
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

// rate takes a token from the client's bucket for what ("run", "save" or "replay"), or says that
// it asks too fast. The instructor, trusted (docs/security.md), and the one local user of a server
// without sign-in, who is the instructor, are not rate-limited.
func (c *conn) rate(what string) error {
	switch {
	case c.student.Instructor:
		return nil
	case what == "run":
		return c.s.shares.allow(c.client)
	default:
		return c.s.shares.allowMessage(c.client, what)
	}
}

// startRun parses the request by its cell's kind (the kind's action, if it names one), refuses it
// if its estimate is over the time limit, and queues it. Every request for a known cell (a run, an
// action, one answered with shared results) is refused while the disk is nearly full, and counts
// against the client's rate (shares.allow) and the student's quota (withinQuota).
func (c *conn) startRun(m Message) error {
	l, cell, err := c.cellFor(m)
	if err != nil {
		return err
	}
	if err := c.s.store.Room(); err != nil {
		return err
	}
	if err := c.rate("run"); err != nil {
		return err
	}
	edited := m.Source != cell.Source
	if err := c.keepEdit(l.Slug, cell.ID, m.Source, edited); err != nil {
		log.Printf("saving an edit: %v", err)
	}
	run, est, err := c.s.parse(cell, m.Action, m.Source, m.Machine)
	if errors.Is(err, cells.ErrOverLimit) {
		c.refuse(m, cell, err)
		return nil
	}
	if err != nil {
		return err
	}
	if err := c.s.withinQuota(context.Background(), c.student.ID); err != nil {
		return err
	}
	class := cells.Cell{Source: m.Source, Machine: m.Machine}.PageClass() // "" where the cell names its own
	if c.s.signIn && !edited && m.Action == "" && !m.Fresh && c.s.cfg.ShareWindow > 0 && cells.Exclusive(run) {
		prev, ok, err := c.s.store.LatestUnedited(context.Background(), l.Slug, cell.ID, "", m.Source, class, time.Now().Add(-c.s.cfg.ShareWindow))
		if err != nil {
			log.Printf("looking for shared results: %v", err)
		} else if ok {
			return c.share(m, prev)
		}
	}
	j, err := c.register(m.ID, run)
	if err != nil {
		return err
	}
	j.of(l.Slug, cell, m.Action, m.Source, class, est)
	rec, err := c.s.store.AddRun(context.Background(), store.Run{Student: c.student.ID, Lesson: l.Slug, Cell: cell.ID, Action: m.Action,
		Source: m.Source, Edited: edited, Machine: c.s.where(), Owner: c.client, Class: class})
	if err != nil {
		j.finish(Message{Type: TypeError, Message: "could not record the run: " + err.Error()})
		return nil
	}
	j.runID = rec.ID
	c.s.live.Store(rec.ID, j)
	if err := c.s.queue.push(j); err != nil {
		if errors.Is(err, errShutdown) { // the run was accepted, and ends as every run does at shutdown
			j.finish(Message{Type: TypeCancelled, Message: err.Error()})
		} else {
			j.finish(Message{Type: TypeError, Message: err.Error()})
		}
	}
	return nil
}

// refuse answers a run request refused as over the run time limit (err, cells.ErrOverLimit): where
// the server refused the parsed run (overLimit), the cell's recorded rows, if it has them
// (cells.ShowRecorded), so that the learner sees its measured numbers anyway; then the error, with
// the largest of the cell's sizes that fit (fit), which the page offers to run.
func (c *conn) refuse(m Message, cell lessons.Cell, err error) {
	if over := (*overLimit)(nil); errors.As(err, &over) {
		cells.ShowRecorded(over.run, machine.Events(func(ev machine.Event) {
			msg := eventMessage(ev)
			msg.ID = m.ID
			c.sendPaced(c.ctx, msg)
		}))
	}
	c.send(Message{Type: TypeError, ID: m.ID, Message: err.Error(), Fit: c.s.fit(cell, m.Action, m.Source, m.Machine)})
}

// forget drops run id from the connection's runs.
func (c *conn) forget(id string) {
	c.mu.Lock()
	delete(c.jobs, id)
	c.mu.Unlock()
}

// The store calls of a run request use their own context, not the connection's: a request read
// from the socket is recorded even if the connection has just failed (its run goes on, and a
// replay shows it).

// keepEdit saves the student's source of a cell, or forgets it when it is the lesson's again.
func (c *conn) keepEdit(lesson, cell, source string, edited bool) error {
	if edited {
		return c.s.store.SaveEdit(context.Background(), c.student.ID, lesson, cell, source)
	}
	return c.s.store.DeleteEdit(context.Background(), c.student.ID, lesson, cell)
}

// save is a `save` message: the cell's source as the student edits it (the lesson's own source
// again, after a Reset, forgets the edit).
func (c *conn) save(m Message) error {
	l, cell, err := c.cellFor(Message{ID: "save", RunRequest: m.RunRequest})
	if err != nil {
		return err
	}
	return c.keepEdit(l.Slug, cell.ID, m.Source, m.Source != cell.Source)
}

// share answers a run request with the results of prev, a recent run of the same unedited cell
// (measured, emulated or modelled, as its tables say): a shared message and a note that say when and
// on what it ran, prev's messages,
// and done. It is kept as a run of the student's that names prev, with a reference to prev's
// messages (store.AddRef), not a copy; while it is sent it counts against the client's share of
// runs, as any run does.
func (c *conn) share(m Message, prev store.Run) error {
	c.mu.Lock()
	inUse := c.jobs[m.ID] != nil
	c.mu.Unlock()
	if inUse {
		return fmt.Errorf("run id %q is already in use by a run that has not ended", m.ID)
	}
	msgs, err := c.s.store.Messages(context.Background(), prev.ID)
	if err != nil {
		return err
	}
	if err := c.s.shares.startRun(c.client); err != nil {
		return err
	}
	rec, err := c.s.store.AddRun(context.Background(), store.Run{Student: c.student.ID, Lesson: prev.Lesson, Cell: prev.Cell, Source: m.Source,
		Machine: prev.Machine, SharedFrom: prev.ID, Class: prev.Class, Owner: c.client})
	if err != nil {
		c.s.shares.endRun(c.client)
		return err
	}
	j := &job{s: c.s, runID: rec.ID, owner: c.client, student: c.student, views: map[*conn]string{c: m.ID}}
	j.ctx, j.cancel = context.WithCancelCause(c.ctx)
	j.emit(c.ctx, Message{Type: TypeShared, Shared: &Shared{Run: prev.ID, Measured: prev.Ended, Machine: prev.Machine}})
	j.emit(c.ctx, Message{Type: TypeNote, Body: machine.Body{Note: &cells.Note{Level: "info", Message: fmt.Sprintf(
		"Shared results: these are from an earlier run (%d) of this unedited cell, which ended at %s UTC on %s; its tables say what was measured, emulated or modelled. Run anyway to run it yourself.",
		prev.ID, prev.Ended.UTC().Format("15:04:05"), prev.Machine)}}})
	j.keepRef(prev.ID)
	for _, km := range msgs {
		var out Message
		if json.Unmarshal([]byte(km.Body), &out) != nil || Terminal(out.Type) || out.Type == TypeStarted {
			continue
		}
		out.ID = m.ID
		c.sendPaced(c.ctx, out)
	}
	c.mu.Lock()
	c.jobs[m.ID] = j
	c.mu.Unlock()
	j.finish(Message{Type: TypeDone})
	return nil
}
