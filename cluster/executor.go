package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/gpuplayground/playground/cells"
	"github.com/gpuplayground/playground/server"
)

// TryAcquire reserves a free machine able to run r, if there is one now (server.Executor): one
// with a GPU for a run that needs one, whenever the cluster has such a machine; the whole machine
// for a run that measures, one of its slots for one that times nothing.
func (c *Cluster) TryAcquire(r cells.Run) (server.Slot, bool, bool, error) {
	n, ex := cells.NeedsOf(r), cells.Exclusive(r)
	w, drain, err := c.tryAcquire(n, ex, nil)
	if err != nil || w == nil {
		return nil, false, drain, err
	}
	return &slot{c: c, w: w, needs: n, exclusive: ex}, true, false, nil
}

// ListMachines lists the machines connected now for the page's machine menu (server.MachineLister):
// this server's own first, if it runs runs, then the workers by class and name.
func (c *Cluster) ListMachines() []server.MachineInfo {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := []server.MachineInfo{}
	for _, w := range c.workers {
		out = append(out, server.MachineInfo{Name: w.m.Name, Class: w.m.Class, Summary: w.m.Summary(), GPU: w.m.HasGPU(), Here: w.local})
	}
	slices.SortFunc(out, func(a, b server.MachineInfo) int {
		switch {
		case a.Here != b.Here:
			if a.Here {
				return -1
			}
			return 1
		case a.Class != b.Class:
			return strings.Compare(a.Class, b.Class)
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out
}

// Acquire waits until a machine able to run r is free and reserves it (server.Acquire).
func (c *Cluster) Acquire(ctx context.Context, r cells.Run) (server.Slot, error) {
	return server.Acquire(ctx, c, r)
}

type slot struct {
	c         *Cluster
	w         *worker
	needs     cells.Needs
	exclusive bool
}

// Machine describes the reserved machine when it is a worker (server.Remote); "" for this server's.
func (s *slot) Machine() string {
	if s.w == nil || s.w.local {
		return ""
	}
	return s.w.m.Summary()
}

func (s *slot) Release() {
	if s.w != nil {
		s.c.release(s.w, s.exclusive)
		s.w = nil
	}
}

// Execute runs r on the reserved machine: here, or on a worker by publishing the job and relaying
// its events to e. Every run on a cluster with more than one machine first notes which machine it
// ran on. A worker that vanishes before sending any event is replaced once by another able one.
func (s *slot) Execute(ctx context.Context, j server.Job, r cells.Run, e cells.Emitter) error {
	if s.w.local {
		if len(s.c.Machines()) > 1 {
			cells.Placed(e, s.w.m.Name, s.w.m.Summary())
		}
		return r.Run(ctx, e)
	}
	for retried := false; ; retried = true {
		streamed, err := s.remote(ctx, j, e)
		var gone goneError
		if !errors.As(err, &gone) || streamed || retried {
			return err
		}
		// Nothing was streamed: once, another connected machine able to run it takes the job.
		s.c.release(s.w, s.exclusive)
		s.w = nil
		except := map[string]bool{gone.m.ID: true}
		if !s.c.another(s.needs, except) {
			return err
		}
		w, aerr := s.c.acquire(ctx, s.needs, s.exclusive, except)
		if aerr != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return err
		}
		s.w = w
		e.Note("warning", fmt.Sprintf("%s stopped answering before the run started; the run moved to %s.", gone.m.Name, w.m.Name))
		if w.local {
			cells.Placed(e, w.m.Name, w.m.Summary())
			return r.Run(ctx, e)
		}
	}
}

// goneError is a worker that stopped answering during a run; streamed says whether it had sent
// anything.
type goneError struct {
	m        Machine
	streamed bool
}

func (g goneError) Error() string {
	if g.streamed {
		return fmt.Sprintf("the machine %s stopped answering during the run (no announcement for 3 heartbeats), so the run ended; the results above came from it", g.m.Name)
	}
	return fmt.Sprintf("the machine %s stopped answering before the run sent anything (no announcement for 3 heartbeats), and no other machine could take it", g.m.Name)
}

// remote publishes the job to s.w and relays its events until its end; streamed says whether any
// event reached e.
func (s *slot) remote(ctx context.Context, j server.Job, e cells.Emitter) (streamed bool, err error) {
	c, w := s.c, s.w
	id := randomToken() // unguessable: a worker may publish only to the subjects of jobs it knows
	// Both subscriptions before the job is published: NATS handles one connection's messages in
	// order, so the worker cannot get the job before the server listens for its events and asks.
	sub, err := c.nc.SubscribeSync(runSubject(w.m.ID, id, "events"))
	if err != nil {
		return false, err
	}
	defer func() { _ = sub.Unsubscribe() }()
	asks, err := c.nc.SubscribeSync(runSubject(w.m.ID, id, "ask"))
	if err != nil {
		return false, err
	}
	defer func() { _ = asks.Unsubscribe() }()
	timeout := 10 * time.Minute
	if dl, ok := ctx.Deadline(); ok { // the queue's run time limit
		timeout = time.Until(dl)
	}
	data, err := json.Marshal(job{ID: id, Kind: j.Kind, Lesson: j.Lesson, Cell: j.Cell.ID, Action: j.Action,
		Source: j.Cell.Source, Recording: j.Cell.Recording, TimeoutNS: int64(timeout), Epoch: c.epoch})
	if err != nil {
		return false, err
	}
	if len(data) > maxJob {
		return false, fmt.Errorf("the run request is %d KiB, over the %d KiB cap of a job", len(data)>>10, maxJob>>10)
	}
	ack, err := c.js.Publish(ctx, SubjectJobs+w.m.ID, data)
	if err != nil {
		if ctx.Err() != nil {
			return false, ctx.Err()
		}
		return false, fmt.Errorf("could not queue the run for %s: %w", w.m.Name, err)
	}
	seq := ack.Sequence
	ended := false
	defer func() {
		if !ended { // the job must not run later on a worker that comes back: take it off the stream
			dctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			_ = c.stream.DeleteMsg(dctx, seq)
			cancel()
			_ = c.nc.Publish(runSubject(w.m.ID, id, "cancel"), nil)
		}
	}()
	// A NATS subscription cannot be selected on: a goroutine each hands its messages over. The
	// events' one gives back the message it holds when stopped (held), so that none is lost.
	asked, events := make(chan *nats.Msg), make(chan *nats.Msg)
	rctx, stop := context.WithCancel(ctx)
	defer stop()
	go func() {
		for {
			m, err := asks.NextMsgWithContext(rctx)
			if err != nil {
				return
			}
			select {
			case asked <- m:
			case <-rctx.Done():
				return
			}
		}
	}()
	ectx, stopEvents := context.WithCancel(rctx)
	defer stopEvents()
	held := make(chan *nats.Msg, 1)
	lost := make(chan error, 1) // the subscription failed (a slow consumer: events were dropped)
	go func() {
		for {
			m, err := sub.NextMsgWithContext(ectx)
			if err != nil {
				if ectx.Err() == nil {
					lost <- err
				}
				held <- nil
				return
			}
			select {
			case events <- m:
			case <-ectx.Done():
				held <- m
				return
			}
		}
	}()
	noted := false
	// handle relays one event; end reports the job's end, with the run's outcome.
	handle := func(m *nats.Msg) (end bool, err error) {
		var ev event
		if json.Unmarshal(m.Data, &ev) != nil || ev.Type == evTaken {
			return false, nil
		}
		if !noted {
			cells.Placed(e, w.m.Name, w.m.Summary())
			noted = true
		}
		if ev.Type != evEnd {
			streamed = true
			relay(ev, e, w.m.Name)
			return false, nil
		}
		ended, streamed = true, true
		switch {
		case ev.Cancelled:
			// The worker stopped it: on the server's cancel, or at the deadline it was given,
			// which its clock may reach a moment before this one.
			if dl, ok := ctx.Deadline(); ok && ctx.Err() == nil {
				select {
				case <-ctx.Done():
				case <-time.After(time.Until(dl) + time.Second):
				}
			}
			if ctx.Err() != nil {
				return true, ctx.Err()
			}
			return true, errors.New(attributed(cleanText(ev.Error, maxMessageLen), w.m.Name))
		case ev.Error != "":
			return true, errors.New(attributed(cleanText(ev.Error, maxMessageLen), w.m.Name))
		}
		return true, nil
	}
	for {
		select {
		case <-ctx.Done():
			return streamed, ctx.Err()
		case <-w.gone:
			// What the worker sent before it said bye is already queued here (NATS delivers one
			// connection's messages in order): its end, when it stopped cleanly. Take that first.
			stopEvents()
			var pending []*nats.Msg
			if m := <-held; m != nil {
				pending = append(pending, m)
			}
			for {
				m, err := sub.NextMsg(0)
				if err != nil {
					break
				}
				pending = append(pending, m)
			}
			for _, m := range pending {
				if end, err := handle(m); end {
					return streamed, err
				}
			}
			return streamed, goneError{w.m, streamed}
		case err := <-lost:
			return streamed, fmt.Errorf("this server lost events of the run on %s (%v), so the run ended", w.m.Name, err)
		case m := <-asked: // the run's page does a task for the worker
			answerAsk(ctx, m, e)
		case m := <-events:
			if end, err := handle(m); end {
				return streamed, err
			}
		}
	}
}

// answerAsk hands a worker's task (an ask request, its strings cleaned: cleanRaw) to the page behind
// the run and replies with what came of it. It blocks the relay, as the worker's run waits for the answer anyway.
func answerAsk(ctx context.Context, m *nats.Msg, e cells.Emitter) {
	var reply askReply
	raw, err := cells.Ask(ctx, e, cleanRaw(m.Data))
	var pe *cells.PageError
	switch {
	case err == nil:
		reply.Result = raw
	case errors.Is(err, cells.ErrNoBrowser):
		reply.NoBrowser = true
	case errors.As(err, &pe):
		reply.PageError = pe.Message
	default:
		reply.Error = err.Error()
	}
	data, _ := json.Marshal(reply)
	_ = m.Respond(data)
}

// relay passes one event from the worker named machine to the run's emitter. A worker is not
// trusted with the page nor with saying where its results come from: every string is cleaned
// (clean.go), a note's level is one the page knows, captions and notes that say "this server" say
// "the machine NAME" instead (attributed), and a chart is re-written through sanitizeSVG's
// allow-list or left out with a note saying so.
func relay(ev event, e cells.Emitter, machine string) {
	switch ev.Type {
	case evProgress:
		e.Progress(max(ev.Done, 0), max(ev.Total, 0))
	case evNote:
		if ev.Note != nil {
			e.Note(cleanLevel(ev.Note.Level), attributed(cleanText(ev.Note.Message, maxMessageLen), machine))
		}
	case evTable:
		if ev.Table != nil {
			e.Table(cleanTable(*ev.Table, machine))
		}
	case evRow:
		if ev.Row != nil {
			r := cells.Row{Table: cleanLine(ev.Row.Table, maxLineLen), Bad: ev.Row.Bad, Values: ev.Row.Values[:min(len(ev.Row.Values), maxList)]}
			for i, v := range r.Values {
				r.Values[i] = cleanValue(v, 0)
			}
			e.Row(r)
		}
	case evChart:
		svg, err := sanitizeSVG(ev.SVG)
		if err != nil {
			e.Note("warning", fmt.Sprintf("a chart from %s was left out: it is not an SVG chart (%s)", machine, cleanLine(err.Error(), maxLineLen)))
			return
		}
		e.Chart(func() (string, error) { return svg, nil })
	case evFrames:
		for i, f := range ev.Frames {
			ev.Frames[i] = cleanValue(f, 0)
		}
		e.Frames(ev.Frames...)
	case evText:
		if ev.Text != nil {
			e.Text(attributed(cleanLine(ev.Text.Title, maxLineLen), machine), cleanText(ev.Text.Body, maxTextLen))
		}
	}
}

// cleanTable is a table from the worker named machine with its strings cleaned, at most maxList
// columns, and a caption that does not say "this server" (attributed).
func cleanTable(t cells.Table, machine string) cells.Table {
	cols := t.Columns[:min(len(t.Columns), maxList)]
	out := cells.Table{ID: cleanLine(t.ID, maxLineLen), Caption: attributed(cleanLine(t.Caption, maxLineLen), machine),
		Columns: make([]cells.Column, 0, len(cols))}
	for _, c := range cols {
		out.Columns = append(out.Columns, cells.Column{Label: cleanLine(c.Label, maxLineLen), Unit: cleanLine(c.Unit, maxLineLen)})
	}
	return out
}
