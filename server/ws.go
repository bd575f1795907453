package server

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"runtime/debug"
	"sync"
	"time"

	"github.com/gorilla/websocket"
	"github.com/gpuplayground/playground/cells"
	"github.com/gpuplayground/playground/machine"
	"github.com/gpuplayground/playground/store"
)

// Websocket limits and timings.
const (
	maxMessage    = 64 << 10 // a frame larger than this gets an error reply
	hardReadLimit = 4 << 20  // a frame larger than this closes the connection
	sendBuffer    = 256      // messages queued for a client; a client this far behind is dropped
	// defaultPaceWait is Config.PaceWait's default: how long a run waits for its client to drain
	// half the buffer.
	defaultPaceWait = 2 * time.Second
	writeWait       = 10 * time.Second
	pongWait        = 60 * time.Second
	pingEvery       = pongWait * 9 / 10
	maxIDLen        = 128
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

	// paceWait is how long sendPaced waits for the client (Config.PaceWait); 0: defaultPaceWait.
	paceWait time.Duration

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
	c := &conn{s: s, student: student, client: client, ws: ws, out: make(chan Message, sendBuffer), ctx: ctx, cancel: cancel, jobs: map[string]*job{},
		paceWait: s.cfg.PaceWait}
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
// after its paceWait (Config.PaceWait) is dropped; the wait also ends when ctx does.
func (c *conn) sendPaced(ctx context.Context, m Message) {
	var deadline time.Time
	for len(c.out) >= cap(c.out)/2 && c.ctx.Err() == nil && ctx.Err() == nil {
		if deadline.IsZero() {
			deadline = time.Now().Add(cmp.Or(c.paceWait, defaultPaceWait))
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
	b := encode(m)
	_ = c.ws.SetWriteDeadline(time.Now().Add(writeWait))
	return c.ws.WriteMessage(websocket.TextMessage, b)
}

// encode is m as JSON; a message JSON cannot hold (a NaN or an infinity in a row a kind made) is
// replaced by a warning note of the same run saying so, so the learner's connection is not dropped.
func encode(m Message) []byte {
	b, err := json.Marshal(m)
	if err == nil {
		return b
	}
	log.Printf("a %s message could not be encoded: %v", m.Type, err)
	b, _ = json.Marshal(Message{Type: TypeNote, ID: m.ID, Body: machine.Body{Note: &cells.Note{Level: "warning",
		Message: fmt.Sprintf("A %s message of this run could not be sent (%v).", m.Type, err)}}})
	return b
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

// startRun answers a `run` message: accept takes the request in one step, and the connection sends
// the answer: a refusal; for a run over the time limit, the cell's recorded rows, if it has them
// (cells.ShowRecorded), so that the learner sees its measured numbers anyway, then the error with
// the largest of the cell's sizes that fit (Fit), which the page offers to run; or shared results
// (share). A queued run tells its own messages (job).
func (c *conn) startRun(m Message) error {
	a, err := c.s.accept(runRequest{from: c, id: m.ID, req: m.RunRequest})
	if long := (*tooLong)(nil); errors.As(err, &long) {
		if long.run != nil {
			cells.ShowRecorded(long.run, machine.Events(func(ev machine.Event) {
				msg := eventMessage(ev)
				msg.ID = m.ID
				c.sendPaced(c.ctx, msg)
			}))
		}
		c.send(Message{Type: TypeError, ID: m.ID, Message: err.Error(), Fit: long.fit})
		return nil
	}
	if err != nil {
		return err
	}
	if a.prev != nil {
		c.share(m.ID, a)
	}
	return nil
}

// forget drops run id from the connection's runs.
func (c *conn) forget(id string) {
	c.mu.Lock()
	delete(c.jobs, id)
	c.mu.Unlock()
}

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
	l, cell, err := c.s.cellFor("save", m.RunRequest)
	if err != nil {
		return err
	}
	return c.keepEdit(l.Slug, cell.ID, m.Source, m.Source != cell.Source)
}

// share answers a run request (under id) with the results of a.prev, a recent run of the same
// unedited cell (measured, emulated or modelled, as its tables say): a shared message and a note
// that say when and on what it ran, prev's messages (a.msgs), and done. Its job, a.job, is kept as
// a run of the student's that names prev, with a reference to prev's messages (store.AddRef), not a
// copy; while it is sent it counts against the client's share of runs, as any run does.
func (c *conn) share(id string, a accepted) {
	j, prev := a.job, a.prev
	j.emit(c.ctx, Message{Type: TypeShared, Shared: &Shared{Run: prev.ID, Measured: prev.Ended, Machine: prev.Machine}})
	j.emit(c.ctx, Message{Type: TypeNote, Body: machine.Body{Note: &cells.Note{Level: "info", Message: fmt.Sprintf(
		"Shared results: these are from an earlier run (%d) of this unedited cell, which ended at %s UTC on %s; its tables say what was measured, emulated or modelled. Run anyway to run it yourself.",
		prev.ID, prev.Ended.UTC().Format("15:04:05"), prev.Machine)}}})
	j.keepRef(prev.ID)
	for _, km := range a.msgs {
		var out Message
		if json.Unmarshal([]byte(km.Body), &out) != nil || Terminal(out.Type) || out.Type == TypeStarted {
			continue
		}
		out.ID = id
		c.sendPaced(c.ctx, out)
	}
	j.finish(Message{Type: TypeDone})
}
