package cluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// A run the server gives up on (the learner cancelled it, it hit its time limit, its worker stopped
// answering and it moved, the server shuts down) is recorded as state, not sent as a message: a key
// in the JetStream key-value bucket Names.Bucket, worker id + "." + job id, put by the server and only
// read by workers. A worker listens on the key's subject and then reads the key before it starts a
// job (a job it pulled before the server gave up, while frozen or cut off, is acknowledged and never
// started), keeps listening while the job runs (the key's put reaches it at once), and reads the
// keys of its running jobs again whenever its connection comes back (a put it missed while
// disconnected, or across a NATS restart, stops the run then). docs/protocol.md, "Workers".

// givenUpTTL is how long a given-up key is kept: as long as a job may stay in the job stream
// (its MaxAge), far longer than a run's time limit.
const givenUpTTL = 24 * time.Hour

// givenUpKey is the bucket's key of job on worker.
func givenUpKey(worker, job string) string { return worker + "." + job }

// openGivenUp makes (or opens) the bucket of given-up runs, in the job stream's storage, and records
// this server's epoch there (EpochKey).
func (c *Cluster) openGivenUp(ctx context.Context, storage jetstream.StorageType) error {
	kv, err := c.js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: c.names.Bucket(), TTL: givenUpTTL, Storage: storage,
		MaxValueSize: 64, Description: "GPU Playground runs the server gave up on: a worker never starts them, and stops them"})
	if err != nil {
		return fmt.Errorf("the bucket of given-up runs: %w", err)
	}
	c.givenUp = kv
	return c.putEpoch(ctx)
}

// giveUp records, in the background, that the server gave up on the job id on w, whose time limit
// ends at until: its worker stops it, or never starts it. A put that fails (NATS or JetStream down a
// moment) is tried again every second until it is recorded, the cluster closes, or the job could not
// run any more (a worker stops it at its own time limit).
func (c *Cluster) giveUp(w *worker, id string, until time.Time) {
	put := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_, err := c.givenUp.Put(ctx, givenUpKey(w.m.ID, id), []byte("given up"))
		return err
	}
	c.mu.Lock()
	closed := c.closed
	if !closed {
		c.done.Add(1) // Close waits for the first try at least
	}
	c.mu.Unlock()
	if closed { // Close may be waiting for c.done already: one try, now
		_ = put()
		return
	}
	go func() {
		defer c.done.Done()
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for put() != nil && time.Now().Before(until) {
			select {
			case <-c.closing:
				return
			case <-t.C:
			}
		}
	}()
}

// watchGivenUp calls stop as soon as the server gives up on job (a put of its key): listened to
// before the key is read (checkGivenUp), so that no give-up falls between the two.
func (w *runner) watchGivenUp(job string, stop func()) (unwatch func()) {
	sub, err := w.nc.Subscribe(w.names.GivenUp(w.me.ID, job), func(*nats.Msg) { stop() })
	if err != nil {
		return func() {}
	}
	return func() { _ = sub.Unsubscribe() }
}

// checkGivenUp reads job's key until it gets an answer (every 250 ms while the connection is down
// or JetStream does not answer): gaveUp says the server gave up on it; ok is false when ctx ended
// first.
func (w *runner) checkGivenUp(ctx context.Context, job string) (gaveUp, ok bool) {
	for {
		gaveUp, err := w.lookUp(ctx, job)
		if err == nil {
			return gaveUp, true
		}
		select {
		case <-ctx.Done():
			return false, false
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// lookUp reads job's key once (a JetStream direct get of its subject's last message).
func (w *runner) lookUp(ctx context.Context, job string) (gaveUp bool, err error) {
	m, err := w.directGet(ctx, w.names.GivenUpGet(w.me.ID, job))
	return m != nil, err
}

// directGet asks for the last value of a key of the bucket (subject: its direct-get subject): nil
// and no error when there is none (or a delete marker).
func (w *runner) directGet(ctx context.Context, subject string) (*nats.Msg, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	m, err := w.nc.RequestWithContext(ctx, subject, nil)
	if err != nil {
		return nil, err
	}
	switch status := m.Header.Get("Status"); status {
	case "":
	case "404": // no such key
		return nil, nil
	default:
		return nil, fmt.Errorf("the bucket of given-up runs answered %s %s", status, m.Header.Get("Description"))
	}
	if m.Header.Get(jetstream.SequenceHeader) == "" {
		return nil, errors.New("the bucket of given-up runs answered with no message")
	}
	if m.Header.Get("KV-Operation") != "" { // a delete marker: no value (the server puts only)
		return nil, nil
	}
	return m, nil
}

// EpochKey is the key of the bucket of given-up runs (Names.Bucket) that holds the epoch of the server
// in charge (random per start), put at its start: a worker compares a job's epoch with it before
// it starts the job (runner.current), so that a job of a server before a restart never runs, and
// no clock decides.
const EpochKey = "epoch"

// putEpoch records this server's epoch as the one in charge (EpochKey).
func (c *Cluster) putEpoch(ctx context.Context) error {
	if _, err := c.givenUp.Put(ctx, EpochKey, []byte(c.epoch)); err != nil {
		return fmt.Errorf("recording this server's epoch: %w", err)
	}
	return nil
}

// serverEpoch reads the epoch of the server in charge (EpochKey), trying every 250 ms for at most
// 10 s or until ctx ends; ok is false when it could not be read (or none is kept).
func (w *runner) serverEpoch(ctx context.Context) (epoch string, ok bool) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for {
		m, err := w.directGet(ctx, w.names.EpochGet())
		if err == nil {
			if m == nil {
				return "", false
			}
			return string(m.Data), true
		}
		select {
		case <-ctx.Done():
			return "", false
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// reconnected reads the keys of the running jobs again once the connection is back: a give-up put
// while it was down (a cut, a partition, a NATS restart) reached no subscription. The subscriptions
// are back before this is called (nats.go resends them first), so nothing falls between.
func (w *runner) reconnected(*nats.Conn) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for r := range w.running {
		go func() {
			if gaveUp, _ := w.checkGivenUp(r.ctx, r.job); gaveUp {
				r.cancel()
			}
		}()
	}
}
