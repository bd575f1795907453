package gpu

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// Conn is a started worker: requests go to it, response lines come from it.
type Conn interface {
	io.Writer             // request lines
	Responses() io.Reader // response lines
	Kill()                // stops the worker at once
	Wait() error          // waits for the worker to end and says how it ended
	StderrTail() string   // the last few KiB it wrote to stderr
}

// Transport starts workers. Exec starts a child process; a remote GPU machine can implement it too.
type Transport interface {
	Start() (Conn, error)
}

// DefaultLaunchTimeout is how long the worker may go without a sign of progress (each kernel call
// reports one) before it is killed.
const DefaultLaunchTimeout = 30 * time.Second

// maxLine bounds one response line; a worker that sends more is broken and is killed.
const maxLine = 1 << 20

// Supervisor sends requests to one worker at a time, starting it on demand and restarting it after
// it dies. A request that is cancelled, or that shows no progress for LaunchTimeout, kills the
// worker; so does a worker that breaks the protocol. The caller gets an error that says which.
type Supervisor struct {
	Transport Transport
	// LaunchTimeout defaults to DefaultLaunchTimeout.
	LaunchTimeout time.Duration

	// timers makes the launch time limit's timer; nil means the real clock. Tests inject a fake
	// clock so that no test depends on how fast a busy machine runs.
	timers clock
	// timeout, when set, replaces the launch time limit's error, and the limit then bounds the
	// whole request: progress lines do not restart it (the Compiler's compiles).
	timeout func(limit time.Duration) error

	turnOnce sync.Once
	turn     chan struct{} // holds a token while a request runs: one at a time, and waiting is cancellable

	conn   Conn
	lines  chan lineOrErr
	quit   chan struct{} // closed when conn is stopped, so its reader never blocks
	nextID int64
}

type lineOrErr struct {
	resp Response
	err  error
}

// WorkerError says why a request failed in the worker process rather than in the request itself.
type WorkerError struct {
	// Kind is "timeout", "crashed", "fatal" (it said its GPU state is broken and exited before
	// finishing the request), "protocol", "panic" (a bug on this side) or "start".
	Kind string
	Msg  string
}

func (e *WorkerError) Error() string { return "GPU worker " + e.Msg }

// Do sends req and passes every response for it to on (from this goroutine) until the final one.
// It returns the worker's error for the request, a *WorkerError if the worker died, hung or broke the
// protocol (it is then stopped, and the next Do starts a fresh one), or context.Cause(ctx) when ctx
// ends first (the worker is killed: a kernel cannot be interrupted any other way). A request waits
// for the one before it to finish; ctx ending stops the wait too. A panic in on stops the worker
// and becomes Do's error ("panic" WorkerError), so no request leaves a worker in the middle of an
// answer.
func (s *Supervisor) Do(ctx context.Context, req Request, on func(Response)) (err error) {
	if err := s.lock(ctx); err != nil {
		return err
	}
	defer s.unlock()
	defer s.recoverPanic(&err)
	if err := ctx.Err(); err != nil {
		return context.Cause(ctx)
	}
	id, err := s.send(req)
	if err != nil {
		return err
	}
	return s.await(ctx, id, on)
}

// recoverPanic, deferred by Do, turns a panic (in Do's on, say) into a "panic" WorkerError in *err and
// stops the worker, which may be in the middle of an answer.
func (s *Supervisor) recoverPanic(err *error) {
	if p := recover(); p != nil {
		if s.conn != nil {
			s.stop()
		}
		*err = &WorkerError{Kind: "panic", Msg: fmt.Sprintf("request failed on the server's side: panic: %v; the next run starts a fresh worker", p)}
	}
}

// send starts the worker if none is running, numbers req with the next request ID and writes it to the
// worker as one line. It returns the ID, or a WorkerError if the worker could not start or take it.
func (s *Supervisor) send(req Request) (int64, error) {
	if s.conn == nil {
		if err := s.start(); err != nil {
			return 0, err
		}
	}
	s.nextID++
	req.ID = s.nextID
	line, err := json.Marshal(req)
	if err != nil {
		return 0, err
	}
	if _, err := s.conn.Write(append(line, '\n')); err != nil {
		return 0, s.died("crashed", fmt.Sprintf("could not take the request (%v)", err))
	}
	return req.ID, nil
}

// await passes the worker's responses to request id to on until the final one (answer), skipping late
// answers to abandoned requests. It stops the worker and returns an error when ctx ends, when the
// launch time limit passes without a response (each one restarts it, unless s.timeout is set), when
// the worker ends, or when it sends a line that is not a response.
func (s *Supervisor) await(ctx context.Context, id int64, on func(Response)) error {
	limit := s.LaunchTimeout
	if limit <= 0 {
		limit = DefaultLaunchTimeout
	}
	timer := s.newTimer(limit)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			s.stop()
			return context.Cause(ctx)
		case <-timer.C():
			s.stop()
			if s.timeout != nil {
				return s.timeout(limit)
			}
			return &WorkerError{Kind: "timeout", Msg: fmt.Sprintf("showed no progress for %s and was stopped (a kernel that never ends?); the next run starts a fresh worker", limit)}
		case l, ok := <-s.lines:
			if !ok {
				return s.died("crashed", "")
			}
			if l.err != nil {
				s.stop()
				return &WorkerError{Kind: "protocol", Msg: "broke the protocol and was stopped: " + l.err.Error()}
			}
			if l.resp.ID != id {
				continue // a late answer to a request that was abandoned
			}
			if s.timeout == nil {
				timer.Reset(limit)
			}
			if done, err := s.answer(l.resp, on); done {
				return err
			}
		}
	}
}

// answer passes one response to on and says whether it ends the request, and with which error: the
// request's own error on its last line (Done), or a "fatal" WorkerError when the worker says it is
// exiting before that line. A worker that reports a fatal error is stopped, to start afresh next time.
func (s *Supervisor) answer(resp Response, on func(Response)) (done bool, err error) {
	on(resp)
	if resp.Fatal && !resp.Done {
		// It exits after this line, so the request's last line never comes: end the
		// request with the worker's error now, and start afresh next time.
		msg := resp.Error
		if msg == "" {
			msg = "no reason given"
		}
		return true, s.died("fatal", "stopped with a fatal error ("+msg+")")
	}
	if resp.Fatal {
		s.stop() // it exits by itself; make sure, and start afresh next time
	}
	if !resp.Done {
		return false, nil
	}
	if resp.Error != "" {
		return true, errors.New(resp.Error)
	}
	return true, nil
}

// clock starts timers: the real one (realClock) or a test's fake.
type clock interface {
	NewTimer(d time.Duration) timer
}

// timer is the part of *time.Timer that Do uses; Reset and Stop leave no stale value in C.
type timer interface {
	C() <-chan time.Time
	Reset(d time.Duration)
	Stop()
}

type realClock struct{}

func (realClock) NewTimer(d time.Duration) timer { return realTimer{time.NewTimer(d)} }

type realTimer struct{ t *time.Timer }

func (r realTimer) C() <-chan time.Time   { return r.t.C }
func (r realTimer) Reset(d time.Duration) { r.t.Reset(d) }
func (r realTimer) Stop()                 { r.t.Stop() }

func (s *Supervisor) newTimer(d time.Duration) timer {
	if s.timers == nil {
		return realClock{}.NewTimer(d)
	}
	return s.timers.NewTimer(d)
}

// lock waits for the supervisor's turn, or for ctx to end (its cause is the error).
func (s *Supervisor) lock(ctx context.Context) error {
	s.turnOnce.Do(func() { s.turn = make(chan struct{}, 1) })
	select {
	case s.turn <- struct{}{}:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

func (s *Supervisor) unlock() { <-s.turn }

// Close stops the worker, if one is running, after the request in flight (if any) has ended.
func (s *Supervisor) Close() {
	_ = s.lock(context.Background())
	defer s.unlock()
	if s.conn != nil {
		s.stop()
	}
}

func (s *Supervisor) start() error {
	if s.Transport == nil {
		return &WorkerError{Kind: "start", Msg: "has no transport"}
	}
	c, err := s.Transport.Start()
	if err != nil {
		return &WorkerError{Kind: "start", Msg: "could not start: " + err.Error()}
	}
	s.conn, s.lines, s.quit = c, make(chan lineOrErr, 64), make(chan struct{})
	go readLines(c.Responses(), s.lines, s.quit)
	return nil
}

// readLines decodes response lines until EOF (then closes out), a bad line (sends the error), or quit.
// A panic (in a Transport's reader, say) is sent as a protocol error, never a crash of the server.
func readLines(r io.Reader, out chan<- lineOrErr, quit <-chan struct{}) {
	defer close(out)
	send := func(l lineOrErr) bool {
		select {
		case out <- l:
			return true
		case <-quit:
			return false
		}
	}
	defer func() {
		if p := recover(); p != nil {
			send(lineOrErr{err: fmt.Errorf("reading its output panicked: %v", p)})
		}
	}()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxLine)
	for sc.Scan() {
		var resp Response
		if err := json.Unmarshal(sc.Bytes(), &resp); err != nil {
			send(lineOrErr{err: fmt.Errorf("not a response line: %.80q", sc.Text())})
			return
		}
		if !send(lineOrErr{resp: resp}) {
			return
		}
	}
	if err := sc.Err(); err != nil {
		send(lineOrErr{err: fmt.Errorf("reading its output: %v", err)})
	}
}

// died reports a worker that ended on its own (crashed), with how it ended and its last words.
func (s *Supervisor) died(kind, msg string) error {
	c := s.conn
	c.Kill()
	waitErr := c.Wait()
	close(s.quit)
	s.conn, s.lines, s.quit = nil, nil, nil
	if msg == "" {
		msg = "ended unexpectedly"
		if waitErr != nil {
			msg += " (" + waitErr.Error() + ")"
		}
	}
	if tail := strings.TrimSpace(c.StderrTail()); tail != "" {
		msg += "; it said: " + tail
	}
	return &WorkerError{Kind: kind, Msg: msg + "; the next run starts a fresh worker"}
}

// stop kills the worker and forgets it.
func (s *Supervisor) stop() {
	s.conn.Kill()
	_ = s.conn.Wait()
	close(s.quit)
	s.conn, s.lines, s.quit = nil, nil, nil
}

// Exec is the Transport that runs a program (normally this binary with the hidden gpu-worker
// subcommand) as the worker.
type Exec struct {
	Path string
	Args []string
	// Env, when not nil, is the program's whole environment (else it inherits this process's), and
	// Dir its working folder ("": this process's).
	Env []string
	Dir string
}

// Start starts the program with its stdin and stdout as the protocol pipes.
func (e Exec) Start() (Conn, error) {
	cmd := exec.Command(e.Path, e.Args...)
	cmd.Env, cmd.Dir = e.Env, e.Dir
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	p := &process{cmd: cmd, stdin: stdin, stdout: stdout, stderr: &tail{max: 4 << 10}}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return p, nil
}

type process struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout io.Reader
	stderr *tail
	once   sync.Once
	err    error
}

func (p *process) Write(b []byte) (int, error) { return p.stdin.Write(b) }
func (p *process) Responses() io.Reader        { return p.stdout }
func (p *process) StderrTail() string          { return p.stderr.String() }
func (p *process) Kill()                       { _ = p.cmd.Process.Kill() }
func (p *process) Wait() error {
	p.once.Do(func() {
		_ = p.stdin.Close()
		p.err = p.cmd.Wait()
	})
	return p.err
}

// tail keeps the last max bytes written to it, so a worker that floods stderr costs bounded memory.
type tail struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (t *tail) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, b...)
	if len(t.buf) > t.max {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-t.max:]...)
	}
	return len(b), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}
