package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/gpuplayground/playground/cells"
	"github.com/gpuplayground/playground/internal/untrusted"
	"github.com/gpuplayground/playground/machine"
)

// slot is a machine of the cluster, or one of its slots, reserved for one run (machine.Slot).
type slot struct {
	c         *Cluster
	w         *worker
	needs     cells.Needs
	exclusive bool
}

// Machine describes the reserved machine when it is a worker (machine.Remote); "" for this server's.
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
func (s *slot) Execute(ctx context.Context, j machine.Job, r cells.Run, e cells.Emitter) error {
	if s.w.local {
		if len(s.c.Machines()) > 1 {
			cells.Placed(e, s.w.m.Name, s.w.m.Summary())
		}
		return s.c.runHere(ctx, j, r, e)
	}
	for retried := false; ; retried = true {
		streamed, err := s.remote(ctx, j, r, e)
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
		w, aerr := s.c.acquire(ctx, r, s.needs, s.exclusive, except)
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
			return s.c.runHere(ctx, j, r, e)
		}
	}
}

// runHere runs r in this process, on the local worker's slot, through this machine's in-process
// runner (machine.Local).
func (c *Cluster) runHere(ctx context.Context, j machine.Job, r cells.Run, e cells.Emitter) (err error) {
	end := c.tracking(ctx, c.local, j)
	defer func() { end(err) }()
	return c.here.Execute(ctx, j, r, e)
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

// remote publishes the job j (the run run) to s.w and relays its events until its end; streamed
// says whether any event reached e. A measuring run that ended well is held against its price there
// (checkPrice).
func (s *slot) remote(ctx context.Context, j machine.Job, run cells.Run, e cells.Emitter) (streamed bool, err error) {
	c, w := s.c, s.w
	end := c.tracking(ctx, w, j)
	defer func() { end(err) }()
	id := randomToken() // unguessable: a worker may publish only to the subjects of jobs it knows
	// Both subscriptions before the job is published: NATS handles one connection's messages in
	// order, so the worker cannot get the job before the server listens for its events and asks.
	sub, err := c.nc.SubscribeSync(c.names.Run(w.m.ID, id, "events"))
	if err != nil {
		return false, err
	}
	defer func() { _ = sub.Unsubscribe() }()
	asks, err := c.nc.SubscribeSync(c.names.Run(w.m.ID, id, "ask"))
	if err != nil {
		return false, err
	}
	defer func() { _ = asks.Unsubscribe() }()
	seq, until, err := c.publishJob(ctx, w, id, j, c.priceOn(w, run))
	if err != nil {
		return false, err
	}
	c.mu.Lock()
	down := c.natsDown
	c.mu.Unlock()
	// The worker paced the run's events (machine.Paced), but it is not trusted to: they are paced
	// again here, with slack enough that an honest worker's stream passes unchanged.
	paced := &cells.Paced{Out: e, Slack: relaySlack}
	r := &relayer{w: w, e: paced, down: down, maxEvents: maxRunEvents, maxBytes: maxRunBytes, lost: func() error {
		c.mu.Lock()
		defer c.mu.Unlock()
		return natsLostError{w.m.Name, c.lostAt, c.lostErr, c.cfg.PingInterval}
	}}
	defer func() {
		if !r.ended { // the job must not run later on a worker that comes back: give it up
			c.withdraw(w, id, seq, until)
		}
	}()
	err = r.follow(ctx, sub, asks)
	if ctx.Err() == nil {
		paced.Flush() // the last frames and chart it sent
	}
	if err == nil && s.exclusive && !r.takenAt.IsZero() {
		c.checkPrice(w, run, r.endedAt.Sub(r.takenAt))
	}
	return r.streamed, err
}

// publishJob queues the run j as the job id for w on the job stream, with this server's run time
// limit and price, the run's estimate on w it was accepted at (0: none); seq is its sequence there,
// and until the end of its time limit.
func (c *Cluster) publishJob(ctx context.Context, w *worker, id string, j machine.Job, price time.Duration) (seq uint64, until time.Time, err error) {
	timeout := 10 * time.Minute
	if dl, ok := ctx.Deadline(); ok { // the queue's run time limit
		timeout = time.Until(dl)
	}
	data, err := json.Marshal(job{ID: id, Kind: j.Kind, Lesson: j.Lesson, Cell: j.Cell.ID, Action: j.Action,
		Source: j.Cell.Source, Recording: j.Cell.Recording, TimeoutNS: int64(timeout), LimitNS: int64(c.runLimit(timeout)),
		PriceNS: int64(price), Epoch: c.epoch, Seq: c.seq.Add(1)})
	if err != nil {
		return 0, until, err
	}
	if len(data) > maxJob {
		return 0, until, fmt.Errorf("the run request is %d KiB, over the %d KiB cap of a job", len(data)>>10, maxJob>>10)
	}
	ack, err := c.queueJob(ctx, w, id, data, time.Now().Add(timeout))
	if err != nil {
		if ctx.Err() != nil {
			return 0, until, ctx.Err()
		}
		if hint := refusal(err); hint != "" {
			c.tellRefused(err, hint)
			return 0, until, fmt.Errorf("could not queue the run for %s: the NATS server's JetStream refused it (%v); the operator's terminal says what to do", w.m.Name, err)
		}
		if c.nc.Status() != nats.CONNECTED {
			// The connection can go between the job reaching the stream and its acknowledgement
			// reaching this server: either way the connection is to blame, not the machine.
			return 0, until, fmt.Errorf("could not queue the run for %s: this server lost its connection to the NATS server (%s); it reconnects by itself. The machine is not to blame; run it again once the connection is back", w.m.Name, c.nc.Status())
		}
		return 0, until, fmt.Errorf("could not queue the run for %s: %w", w.m.Name, err)
	}
	return ack.Sequence, time.Now().Add(timeout), nil
}

// runLimit is this server's run time limit, which its runs are accepted under: its machine's
// (Config.Machine, built with the server's -run-timeout), or else timeout, the time left to the run.
func (c *Cluster) runLimit(timeout time.Duration) time.Duration {
	if c.cfg.Machine != nil && c.cfg.Machine.Env.Limits.RunTimeout < machine.NoTimeLimit {
		return c.cfg.Machine.Env.Limits.RunTimeout
	}
	return timeout
}

// withdraw gives the job id (stream sequence seq, time limit until) up: w stops it, or never starts
// it if it already pulled it (giveUp), and it is taken off the stream.
func (c *Cluster) withdraw(w *worker, id string, seq uint64, until time.Time) {
	c.giveUp(w, id, until)
	dctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	_ = c.stream.DeleteMsg(dctx, seq)
	cancel()
}

// feed hands a NATS subscription's messages over a channel (a subscription cannot be selected on)
// until stopped or its context ends; then held gives back the message it held (nil if none), so
// that none is lost, and lost has the subscription's error if it failed first (a slow consumer:
// messages were dropped).
type feed struct {
	msgs chan *nats.Msg
	held chan *nats.Msg
	lost chan error
	stop context.CancelFunc
}

func newFeed(ctx context.Context, sub *nats.Subscription) *feed {
	ctx, stop := context.WithCancel(ctx)
	f := &feed{msgs: make(chan *nats.Msg), held: make(chan *nats.Msg, 1), lost: make(chan error, 1), stop: stop}
	go func() {
		for {
			m, err := sub.NextMsgWithContext(ctx)
			if err != nil {
				if ctx.Err() == nil {
					f.lost <- err
				}
				f.held <- nil
				return
			}
			select {
			case f.msgs <- m:
			case <-ctx.Done():
				f.held <- m
				return
			}
		}
	}()
	return f
}

// A worker's events for one run, paced where it runs, are paced again as they are relayed and
// capped: past maxRunEvents messages or maxRunBytes bytes, the run ends (a worker that floods the
// server with events costs its store writes and its pages' messages, whatever the pacing keeps).
const (
	// relaySlack is the relay's cells.Paced Slack: an honest worker's paced events arrive up to
	// half an interval early (the network's jitter) and still pass; a hostile one's are throttled.
	relaySlack = 0.5
	// maxRunEvents bounds the messages a worker sends for one run: far more than a run's paced
	// progress, charts, frames, rows and notes over a long run.
	maxRunEvents = 50_000
	// maxRunBytes bounds the bytes of a worker's messages for one run (each one is under maxEvent).
	maxRunBytes = 256 << 20
)

// relayer relays one job's events from the worker w to the run's emitter e (the run's own emitter,
// paced).
type relayer struct {
	w *worker
	e cells.Emitter
	// maxEvents and maxBytes cap the job's messages (maxRunEvents, maxRunBytes); events and bytes
	// count them.
	maxEvents, maxBytes, events, bytes int
	// down is closed when this server's NATS connection drops; lost is then the run's error.
	down <-chan struct{}
	lost func() error
	// noted: the run's "Ran on" went out; streamed: an event reached e; ended: the job's end came.
	noted, streamed, ended bool
	// takenAt and endedAt are when the worker's taken and end events arrived here (this server's
	// clock: how long the run took there, with no wait in the job stream).
	takenAt, endedAt time.Time
}

// follow relays the job's events (sub) and answers its browser tasks (asks) until its end, ctx's
// end, or the worker's.
func (r *relayer) follow(ctx context.Context, sub, asks *nats.Subscription) error {
	asked, events := newFeed(ctx, asks), newFeed(ctx, sub)
	defer asked.stop()
	defer events.stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-r.down:
			return r.lost()
		case <-r.w.gone:
			// What the worker sent before it said bye is already queued here (NATS delivers one
			// connection's messages in order): its end, when it stopped cleanly. Take that first.
			events.stop()
			var pending []*nats.Msg
			if m := <-events.held; m != nil {
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
				if end, err := r.handle(ctx, m); end {
					return err
				}
			}
			return goneError{r.w.m, r.streamed}
		case err := <-events.lost:
			if r.flooded(sub) { // the subscription's backlog overflowed with what the worker sent past its cap
				return r.tooMany()
			}
			return fmt.Errorf("this server lost events of the run on %s (%v), so the run ended", r.w.m.Name, err)
		case m := <-asked.msgs: // the run's page does a task for the worker
			answerAsk(ctx, m, r.e)
		case m := <-events.msgs:
			if end, err := r.handle(ctx, m); end {
				return err
			}
		}
	}
}

// tooMany is the run's error when its worker sent more events than the relay takes (maxEvents,
// maxBytes).
func (r *relayer) tooMany() error {
	return fmt.Errorf("the machine %s sent too many events (over %d, or over %d MiB, for one run), so the run ended", r.w.m.Name, r.maxEvents, r.maxBytes>>20)
}

// flooded says whether the job's events relayed, waiting in sub and dropped from it (a slow
// consumer: a burst faster than the relay) number more than maxEvents or, those relayed and
// waiting, weigh more than maxBytes.
func (r *relayer) flooded(sub *nats.Subscription) bool {
	msgs, bytes, err := sub.Pending()
	dropped, derr := sub.Dropped()
	return err == nil && derr == nil && (r.events+msgs+dropped > r.maxEvents || r.bytes+bytes > r.maxBytes)
}

// handle relays one event; end reports the job's end, with the run's outcome.
func (r *relayer) handle(ctx context.Context, m *nats.Msg) (end bool, err error) {
	w := r.w
	r.events++
	r.bytes += len(m.Data)
	if r.events > r.maxEvents || r.bytes > r.maxBytes {
		return true, r.tooMany()
	}
	var ev event
	if json.Unmarshal(m.Data, &ev) != nil {
		return false, nil
	}
	if ev.Type == evTaken {
		r.takenAt = time.Now()
		return false, nil
	}
	if !r.noted {
		cells.Placed(r.e, w.m.Name, w.m.Summary())
		r.noted = true
	}
	if ev.Type != evEnd {
		r.streamed = true
		relay(ev.Event, r.e, w.m.Name)
		return false, nil
	}
	r.ended, r.streamed, r.endedAt = true, true, time.Now()
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
		return true, errors.New(untrusted.Attributed(untrusted.Text(ev.Error, untrusted.MaxMessage), w.m.Name))
	case ev.Error != "":
		return true, errors.New(untrusted.Attributed(untrusted.Text(ev.Error, untrusted.MaxMessage), w.m.Name))
	}
	return true, nil
}

// answerAsk hands a worker's task (an ask request, its strings cleaned: untrusted.Raw) to the page behind
// the run and replies with what came of it. It blocks the relay, as the worker's run waits for the answer anyway.
func answerAsk(ctx context.Context, m *nats.Msg, e cells.Emitter) {
	var reply askReply
	raw, err := cells.Ask(ctx, e, untrusted.Raw(m.Data))
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

// relay passes one event from the worker named name to the run's emitter, cleaned
// (cells.Event.Clean); the emitter paces it (relayer).
func relay(ev machine.Event, e cells.Emitter, name string) {
	if ev, ok := ev.Clean(name); ok {
		e.Emit(ev)
	}
}

// refusal says what the operator can do about a JetStream refusal to store a job (err from a
// publish), or "" when err is no such refusal. The codes are nats-server's JetStream API error codes
// (server/errors.json of nats-server v2.15).
func refusal(err error) string {
	var api *jetstream.APIError
	switch {
	case errors.Is(err, jetstream.ErrNoStreamResponse):
		return "no JetStream stream answered: check that the NATS server runs JetStream (`jetstream {}` in its configuration) and that this server's account may use it"
	case !errors.As(err, &api):
		return ""
	}
	switch api.ErrorCode {
	case 10023: // JSInsufficientResourcesErr
		return "the NATS server's JetStream store is full: free disk (or memory) where it keeps its store (the data directory's nats/ folder for the embedded server), or raise its jetstream max_file_store / max_memory_store"
	case 10028, 10047: // JSMemoryResourcesExceededErr, JSStorageResourcesExceededErr
		return "this account's JetStream limits are reached: raise the account's jetstream max_file / max_mem in the nats-server configuration (docs/several-machines.md, \"Several classes on one NATS server\"), or remove other streams of the account"
	case 10077: // JSStreamStoreFailedF: the stream's own limits (maximum bytes or messages exceeded)
		return "the job stream's limits are reached (" + api.Description + "): too many runs wait for workers at once; check that the workers are connected and taking jobs (`nats stream info PREFIX_JOBS`), or raise the account's per-stream limits"
	}
	if api.Code == 503 || api.Code == 500 {
		return "JetStream could not store the job (" + api.Description + "): see the NATS server's log"
	}
	return ""
}

// tellRefused prints a JetStream refusal for the operator with what to do (hint), at most once a
// minute for the same refusal.
func (c *Cluster) tellRefused(err error, hint string) {
	c.mu.Lock()
	if c.refusals == nil {
		c.refusals = map[string]time.Time{}
	}
	key, now := err.Error(), time.Now()
	last, told := c.refusals[key]
	if !told || now.Sub(last) > time.Minute {
		c.refusals[key] = now
		c.say("JetStream refused a job: %v. What to do: %s", err, hint)
	}
	c.mu.Unlock()
}
