package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/gpuplayground/playground/cells"
)

// DefaultPageGone is Config.PageGone's default: how long a browser task waits with no page showing
// its run.
const DefaultPageGone = 10 * time.Second

// errPageGone ends the wait of a browser task that no page shows (Config.PageGone).
var errPageGone = &cells.PageError{Message: "the page that was running this closed"}

// maxResult caps a result's JSON: the frame limit, less room for the envelope.
const maxResult = maxMessage - 1024

// Ask sends task to the run's page as a `task` message and waits for the page's `result` (cells.Asker).
// The task goes to every connection showing the run, and again to one that attaches (a replay after
// a reload): the first result from a connection of the run's student that shows it is the answer.
// The run keeps its queue slot meanwhile. The wait ends with ctx (Stop, the student away past the grace
// period, the run's time limit, shutdown), or with a *cells.PageError when no connection has shown the
// run for Config.PageGone (the page closed and none attached again in time).
func (e *emitter) Ask(ctx context.Context, task any) (json.RawMessage, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // kernel sources are full of < and >
	if err := enc.Encode(task); err != nil {
		return nil, fmt.Errorf("encoding a task for the browser: %w", err)
	}
	raw := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	if len(raw) > cells.MaxTaskBytes {
		return nil, fmt.Errorf("a task for the browser is %d bytes, over the %d-byte cap", len(raw), cells.MaxTaskBytes)
	}
	j := e.job
	ch := make(chan json.RawMessage, 1)
	j.mu.Lock()
	if j.ask != nil {
		j.mu.Unlock()
		return nil, errors.New("this run already waits for the browser's answer to another task")
	}
	j.ask, j.task = ch, raw
	gone := make(chan struct{})
	j.pageGone = gone
	j.watchPageLocked()
	first := !j.browser
	j.browser = true
	j.mu.Unlock()
	if first && j.s != nil && j.runID != 0 { // its results are this student's browser's: never shared
		if err := j.s.store.AskedBrowser(context.Background(), j.runID); err != nil {
			j.mu.Lock()
			if j.ask == ch {
				j.ask, j.task = nil, nil
			}
			j.mu.Unlock()
			return nil, fmt.Errorf("could not record that the run asks the browser: %w", err)
		}
	}
	defer func() {
		j.mu.Lock()
		if j.ask == ch {
			j.ask, j.task = nil, nil
		}
		if j.pageGone == gone {
			j.pageGone = nil
			j.stopWatchLocked()
		}
		j.mu.Unlock()
	}()
	e.send(Message{Type: TypeTask, Task: raw})
	select {
	case r := <-ch:
		return r, nil
	case <-gone:
		return nil, errPageGone
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
}

// watchPageLocked starts the page-gone timer when a task is outstanding and no connection shows the
// run (Config.PageGone); j.mu is held. The timer ends the task's wait unless a connection attached
// meanwhile (attach stops it).
func (j *job) watchPageLocked() {
	if j.pageGone == nil || len(j.views) > 0 || j.goneTimer != nil {
		return
	}
	d := DefaultPageGone
	if j.s != nil {
		d = j.s.cfg.PageGone
	}
	gone := j.pageGone
	var t *time.Timer
	t = time.AfterFunc(max(d, 0), func() {
		j.mu.Lock()
		defer j.mu.Unlock()
		if j.goneTimer != t { // stopped (a page attached) before it could take the lock
			return
		}
		j.goneTimer = nil
		if j.pageGone == gone && len(j.views) == 0 {
			close(gone)
			j.pageGone = nil
		}
	})
	j.goneTimer = t
}

// stopWatchLocked stops the page-gone timer, if any; j.mu is held.
func (j *job) stopWatchLocked() {
	if j.goneTimer != nil {
		j.goneTimer.Stop()
		j.goneTimer = nil
	}
}

// answer hands a `result` frame to the run of this connection that waits for one (a run it started
// or replayed: only the run's own student's connections have it). A result for a run that is not
// this connection's, or that asked nothing, or that is over the cap or empty, is an
// error reply; the run itself goes on waiting (until its page answers properly or its context ends).
func (c *conn) answer(m Message) error {
	if m.ID == "" || len(m.ID) > maxIDLen {
		return fmt.Errorf("a result needs the id of the run that asked for it (1 to %d characters)", maxIDLen)
	}
	if len(m.Result) == 0 || string(m.Result) == "null" {
		return fmt.Errorf("the result for run %q is empty", m.ID)
	}
	if len(m.Result) > maxResult {
		return fmt.Errorf("the result for run %q is %d bytes, over the %d-byte cap", m.ID, len(m.Result), maxResult)
	}
	c.mu.Lock()
	j := c.jobs[m.ID]
	c.mu.Unlock()
	if j == nil {
		return fmt.Errorf("no run %q of this connection is running: a result answers a task of your own running run", m.ID)
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.ask == nil {
		return fmt.Errorf("run %q has no task waiting for a result", m.ID)
	}
	j.ask <- m.Result // buffered, and ask is cleared at once, so this never blocks
	j.ask, j.task = nil, nil
	return nil
}
