package cluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"

	"github.com/gpuplayground/playground/cells"
	"github.com/gpuplayground/playground/cells/builtin"
	"github.com/gpuplayground/playground/gpu"
	"github.com/gpuplayground/playground/gpu/nvidia"
	"github.com/gpuplayground/playground/harness"
	"github.com/gpuplayground/playground/harness/peaks"
	"github.com/gpuplayground/playground/kernels"
)

// WorkerConfig is how a worker joins: `playground worker -join URL -token T`.
type WorkerConfig struct {
	// Join is the NATS URL of the server (nats://host:port).
	Join string
	// Token is the worker password the server printed (user WorkerUser); Creds, instead, is a NATS
	// credentials file for an external NATS server.
	Token, Creds string
	// CA, if set, is a PEM file of the certificate authority (or the self-signed certificate) that
	// the server's TLS certificate must chain to (a tls:// Join URL); empty: the system's roots.
	CA string
	// Name is the machine's name in results. Default: the host name.
	Name string
	// Class is the class of machine that cells' `machine:` key names (e.g. "h100"); "" is none.
	Class string
	// Slots is how many runs that time nothing (cells.Exclusive false) this machine runs side by
	// side, 1 to MaxSlots; 0: GOMAXPROCS (at most MaxSlots). A run that measures runs alone.
	Slots int
	// Kinds builds the cell kinds this worker runs. Default: builtin.Kinds.
	Kinds func(cells.Env) []cells.Kind
	// Limits bound what a run may ask for; zero fields take harness.DefaultLimits.
	Limits harness.Limits
	// GPU starts the GPU worker process. Default: this executable's hidden gpu-worker subcommand.
	GPU gpu.Transport
	// Devices, if set, replaces the GPU report (tests).
	Devices func(context.Context) nvidia.Report
	// Roofline sizes the ceilings' measurement (zero: the defaults).
	Roofline peaks.Options
	// Heartbeat is how often the worker announces itself. Default 1 s; the server's must match.
	Heartbeat time.Duration
	// Out receives a line when the worker joins. Default os.Stdout.
	Out io.Writer
}

// RunWorker joins the cluster at cfg.Join and runs the jobs routed to this machine, streaming every
// event back, until ctx ends: a run that measures alone, or up to cfg.Slots runs that time nothing
// side by side (the server routes so; the worker also holds itself to it). A lost connection is
// re-established (the worker rejoins with the same id); runs in progress when ctx ends are
// cancelled and reported, then the worker says bye.
func RunWorker(ctx context.Context, cfg WorkerConfig) error {
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = time.Second
	}
	if cfg.Out == nil {
		cfg.Out = os.Stdout
	}
	if cfg.Kinds == nil {
		cfg.Kinds = builtin.Kinds
	}
	if cfg.GPU == nil {
		cfg.GPU = selfGPU()
	}
	if cfg.Class != "" {
		if err := cells.CheckClass(cfg.Class); err != nil {
			return fmt.Errorf("-%w (as a cell's machine: key)", err)
		}
	}
	switch {
	case cfg.Slots < 0 || cfg.Slots > MaxSlots:
		return fmt.Errorf("-slots %d: give 1 to %d runs that time nothing side by side (0: GOMAXPROCS)", cfg.Slots, MaxSlots)
	case cfg.Slots == 0:
		cfg.Slots = min(runtime.GOMAXPROCS(0), MaxSlots)
	}
	lim := cfg.Limits.WithDefaults()
	m := &gpu.Machine{Worker: &gpu.Supervisor{Transport: cfg.GPU}}
	defer m.Worker.Close()
	if cfg.Devices != nil {
		m.Report = cfg.Devices(ctx)
	} else {
		m.Report = Probe(ctx, cfg.GPU)
	}
	env := cells.Env{Kernels: append(kernels.CPU(), nvidia.GEMMs(m.Unavailable())...), Limits: lim, GPU: m,
		Roofline: &peaks.Cache{Options: cfg.Roofline}, Machine: machineName(cfg.Name)}
	kinds := cfg.Kinds(env)
	var names []string
	for _, k := range kinds {
		names = append(names, k.Name())
	}
	// The worker's identity: a user nkey pair made now; its public key is the worker's id, which
	// the embedded server checks (auth) and scopes its permissions to.
	key, err := nkeys.CreateUser()
	if err != nil {
		return fmt.Errorf("making the worker's nkey: %w", err)
	}
	defer key.Wipe()
	id, err := key.PublicKey()
	if err != nil {
		return fmt.Errorf("making the worker's nkey: %w", err)
	}
	me := describe(id, cfg.Name, m.Report, names)
	me.Class = cfg.Class
	me.Slots = cfg.Slots

	opts := []nats.Option{nats.Name("playground worker " + me.Name), nats.MaxReconnects(-1), nats.ReconnectWait(time.Second),
		nats.RetryOnFailedConnect(true), nats.CustomInboxPrefix(InboxPrefix + id)}
	switch {
	case cfg.Creds != "":
		opts = append(opts, nats.UserCredentials(cfg.Creds))
	case cfg.Token != "":
		opts = append(opts, nats.UserInfo(WorkerUser, cfg.Token), nats.Nkey(id, key.Sign))
	}
	if cfg.CA != "" {
		opts = append(opts, nats.RootCAs(cfg.CA))
	}
	nc, err := nats.Connect(cfg.Join, opts...)
	if err != nil {
		return fmt.Errorf("joining %s: %w", redact(cfg.Join), err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	hello, _ := json.Marshal(me)
	announce := func() { _ = nc.Publish(SubjectHello+me.ID, hello) }
	consumer := func(ctx context.Context) (jetstream.Consumer, error) {
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		return js.CreateOrUpdateConsumer(ctx, Stream, jetstream.ConsumerConfig{
			Durable: consumerName(me.ID), FilterSubject: SubjectJobs + me.ID, AckPolicy: jetstream.AckExplicitPolicy,
			MaxAckPending: cfg.Slots, AckWait: time.Hour, MaxDeliver: 1, InactiveThreshold: time.Hour,
			Description: "jobs for " + me.Summary()})
	}
	var cons jetstream.Consumer
	for { // the server creates the stream; wait for it (and for the connection)
		if cons, err = consumer(ctx); err == nil {
			break
		}
		if errors.Is(err, jetstream.ErrJetStreamNotEnabled) || isAuth(err) || isAuth(nc.LastError()) || isTLS(nc.LastError()) {
			return fmt.Errorf("joining %s: %w", redact(cfg.Join), errors.Join(err, nc.LastError()))
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(time.Second):
		}
	}
	if status := nc.Status(); status != nats.CONNECTED {
		return fmt.Errorf("joining %s: connection %s", redact(cfg.Join), status)
	}
	w := &runner{nc: nc, kinds: kinds, me: me, out: cfg.Out, running: map[*running]bool{}}
	if sub, err := nc.Subscribe(SubjectStart, w.serverStarted); err == nil {
		defer func() { _ = sub.Unsubscribe() }()
	}
	fmt.Fprintf(cfg.Out, "worker %s joined %s: %s, %d slots\n", me.ID[:12], redact(cfg.Join), me.Summary(), me.Slots)
	announce()
	var beats sync.WaitGroup
	beats.Add(1)
	bctx, stopBeats := context.WithCancel(context.Background())
	go func() {
		defer beats.Done()
		t := time.NewTicker(cfg.Heartbeat)
		defer t.Stop()
		for {
			select {
			case <-bctx.Done():
				return
			case <-t.C:
				announce()
			}
		}
	}()
	defer func() {
		stopBeats()
		beats.Wait()
		_ = nc.Publish(SubjectBye+me.ID, hello)
		_ = nc.Flush()
	}()
	// A permit is a job fetched and not yet acknowledged: at most cfg.Slots, as the consumer's
	// MaxAckPending. Each job runs in its own goroutine; runner.gate keeps the one-machine rule.
	permits := make(chan struct{}, cfg.Slots)
	var jobs sync.WaitGroup
	defer jobs.Wait() // before the bye: every job ended and was reported
	for ctx.Err() == nil {
		select {
		case permits <- struct{}{}:
		case <-ctx.Done():
			continue
		}
		batch, err := cons.Fetch(1, jetstream.FetchMaxWait(2*time.Second))
		if err != nil { // e.g. a server restarted without its store: make the consumer again
			<-permits
			select {
			case <-ctx.Done():
			case <-time.After(500 * time.Millisecond):
				if c, err := consumer(ctx); err == nil {
					cons = c
				}
			}
			continue
		}
		got, started := false, false
		for msg := range batch.Messages() {
			got = true
			j, ok := w.accept(msg)
			if !ok {
				continue
			}
			started = true
			jobs.Add(1)
			go func() {
				defer jobs.Done()
				defer func() { <-permits }() // after the job's acknowledgement
				w.run(ctx, msg, j)
			}()
		}
		if !started {
			<-permits
		}
		if err := batch.Error(); !got && err != nil && ctx.Err() == nil {
			// The consumer may be gone (a server restarted without its store): make it again.
			if c, cerr := consumer(ctx); cerr == nil {
				cons = c
			} else {
				time.Sleep(500 * time.Millisecond)
			}
		}
	}
	return nil
}

// isTLS reports whether err is a TLS certificate the worker does not trust (or one for another
// host): waiting will not change it.
func isTLS(err error) bool {
	var unknown x509.UnknownAuthorityError
	var host x509.HostnameError
	var verify *tls.CertificateVerificationError
	return errors.As(err, &unknown) || errors.As(err, &host) || errors.As(err, &verify)
}

func isAuth(err error) bool {
	return errors.Is(err, nats.ErrAuthorization) || errors.Is(err, nats.ErrAuthExpired) || errors.Is(err, nats.ErrAuthRevoked)
}

// runner runs jobs on a worker, several at once.
type runner struct {
	nc    *nats.Conn
	kinds []cells.Kind
	me    Machine
	out   io.Writer
	gate  gate

	mu      sync.Mutex
	epoch   string            // the epoch of the server last heard of (SubjectStart, or a job's)
	running map[*running]bool // the jobs running now
}

// running is a job in progress, for stopping it when a new server starts.
type running struct {
	epoch  string
	cancel context.CancelFunc
}

// accept reads a fetched job; it acknowledges and drops (ok false) one that is not a job or whose
// time limit passed while it waited (stale).
func (w *runner) accept(msg jetstream.Msg) (j job, ok bool) {
	if err := json.Unmarshal(msg.Data(), &j); err != nil || j.ID == "" {
		_ = msg.Ack() // not a job: nobody waits for it
		return j, false
	}
	if stale(msg, j, time.Now()) {
		_ = msg.Ack() // its time limit passed while it waited: the server that queued it has given up on it
		return j, false
	}
	return j, true
}

// serverStarted hears a server's epoch (SubjectStart).
func (w *runner) serverStarted(msg *nats.Msg) {
	var s start
	if json.Unmarshal(msg.Data, &s) == nil && s.Epoch != "" {
		w.newEpoch(s.Epoch)
	}
}

// newEpoch records the epoch of the server now in charge and stops the jobs of any other: they
// come from a server before a restart, and nobody waits for their events.
func (w *runner) newEpoch(epoch string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if epoch == w.epoch {
		return
	}
	w.epoch = epoch
	for r := range w.running {
		if r.epoch != epoch {
			r.cancel()
			fmt.Fprintf(w.out, "worker %s: stopped a run from before the server restarted\n", w.me.Name)
		}
	}
}

// run runs one job and acknowledges it after its end event. It waits for the machine first when
// the one-machine rule says so (gate): a job left running from before a server restart may still
// hold it.
func (w *runner) run(ctx context.Context, msg jetstream.Msg, j job) {
	defer func() { _ = msg.Ack() }()
	pub := &publisher{nc: w.nc, subject: runSubject(w.me.ID, j.ID, "events"), ask: runSubject(w.me.ID, j.ID, "ask")}
	out := &cells.Paced{Out: pub} // Paced.Ask sends what is batched before the task
	me := w.me
	pub.publish(event{Type: evTaken, Machine: &me})
	timeout := time.Duration(j.TimeoutNS)
	if timeout <= 0 {
		timeout = 10 * time.Minute
	}
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	sub, err := w.nc.Subscribe(runSubject(w.me.ID, j.ID, "cancel"), func(*nats.Msg) { cancel() })
	if err == nil {
		defer func() { _ = sub.Unsubscribe() }()
	}
	if j.Epoch != "" {
		w.newEpoch(j.Epoch)
	}
	self := &running{epoch: j.Epoch, cancel: cancel}
	w.mu.Lock()
	w.running[self] = true
	w.mu.Unlock()
	defer func() {
		w.mu.Lock()
		delete(w.running, self)
		w.mu.Unlock()
	}()
	r, exclusive, err := w.parse(j)
	if err == nil {
		if err = w.gate.enter(rctx, exclusive); err == nil {
			err = w.execute(rctx, r, out)
			w.gate.leave(exclusive)
		}
	}
	if rctx.Err() == nil {
		out.Flush()
	}
	end := event{Type: evEnd}
	switch {
	case ctx.Err() != nil:
		// This worker is stopping: neither the server's cancel nor the time limit, so an error the
		// server reports at once.
		end.Error = fmt.Sprintf("the worker on %s was stopped during the run", w.me.Name)
	case rctx.Err() != nil:
		end.Cancelled = true
		end.Error = fmt.Sprintf("the run was stopped on %s", w.me.Name)
		if errors.Is(rctx.Err(), context.DeadlineExceeded) {
			end.Error = fmt.Sprintf("the run hit the %s time limit on %s and was stopped", timeout.Round(time.Second), w.me.Name)
		}
	case err != nil:
		end.Error = err.Error()
	}
	pub.publish(end)
	_ = w.nc.Flush()
}

// gate holds a worker's own machine to the one-machine rule whatever it is sent: a run that
// measures starts only when nothing else runs there, and a run that times nothing only when no
// measuring run does. The server routes so anyway; the gate covers jobs still running from before
// a server restart. The zero gate is open.
type gate struct {
	mu      sync.Mutex
	heavy   bool          // a run that measures runs
	light   int           // runs that time nothing running
	changed chan struct{} // closed and replaced on every leave
}

// enter waits until a run (exclusive: one that measures) may start, and records it; err is ctx's
// cause if ctx ends first.
func (g *gate) enter(ctx context.Context, exclusive bool) error {
	for {
		g.mu.Lock()
		if !g.heavy && (!exclusive || g.light == 0) {
			if exclusive {
				g.heavy = true
			} else {
				g.light++
			}
			g.mu.Unlock()
			return nil
		}
		if g.changed == nil {
			g.changed = make(chan struct{})
		}
		ch := g.changed
		g.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
}

// leave records that a run entered with exclusive ended.
func (g *gate) leave(exclusive bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if exclusive {
		g.heavy = false
	} else if g.light > 0 {
		g.light--
	}
	if g.changed != nil {
		close(g.changed)
		g.changed = nil
	}
}

// stale reports whether j's time limit, counted from when it entered the stream, is already past at
// now: nobody waits for its events any more (the server stopped waiting, or restarted), so running
// it would only keep this machine busy measuring for no one.
func stale(msg jetstream.Msg, j job, now time.Time) bool {
	md, err := msg.Metadata()
	if err != nil || j.TimeoutNS <= 0 {
		return false
	}
	return now.After(md.Timestamp.Add(time.Duration(j.TimeoutNS)))
}

// parse parses the job with this worker's kinds; exclusive says whether the run measures
// (cells.Exclusive). A panic is the error.
func (w *runner) parse(j job) (r cells.Run, exclusive bool, err error) {
	defer func() {
		if p := recover(); p != nil {
			r, err = nil, fmt.Errorf("internal error on %s: %v", w.me.Name, p)
		}
	}()
	k, ok := cells.Lookup(w.kinds, j.Kind)
	if !ok {
		return nil, false, fmt.Errorf("the machine %s cannot run %s cells", w.me.Name, j.Kind)
	}
	r, err = cells.Parse(k, j.Action, cells.Cell{ID: j.Cell, Source: j.Source, Recording: j.Recording})
	if err != nil {
		return nil, false, fmt.Errorf("on %s: %w", w.me.Name, err)
	}
	return r, cells.Exclusive(r), nil
}

// execute runs r; a panic is the run's error.
func (w *runner) execute(ctx context.Context, r cells.Run, e cells.Emitter) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("internal error on %s: %v", w.me.Name, p)
		}
	}()
	return r.Run(ctx, e)
}

// publisher is the worker's cells.Emitter under a cells.Paced (which paces the run's events as the
// server's are paced): each event becomes a message on the job's event subject, size-capped.
type publisher struct {
	nc      *nats.Conn
	subject string
	ask     string // the job's ask subject
}

func (p *publisher) publish(ev event) {
	data, err := json.Marshal(ev)
	if err != nil {
		data, _ = json.Marshal(event{Type: evNote, Note: &cells.Note{Level: "error", Message: fmt.Sprintf("a %s event could not be sent: %v", ev.Type, err)}})
	}
	limit := int64(maxEvent)
	if mp := p.nc.MaxPayload(); mp > 0 && mp < limit { // an external server's cap may be lower
		limit = mp
	}
	if int64(len(data)) > limit {
		data, _ = json.Marshal(event{Type: evNote, Note: &cells.Note{Level: "warning",
			Message: fmt.Sprintf("a %s of %d KiB was left out: over the %d KiB cap of a worker's message", ev.Type, len(data)>>10, limit>>10)}})
	}
	_ = p.nc.Publish(p.subject, data)
}

func (p *publisher) Progress(done, total int) {
	p.publish(event{Type: evProgress, Done: done, Total: total})
}

func (p *publisher) Note(level, text string) {
	p.publish(event{Type: evNote, Note: &cells.Note{Level: level, Message: text}})
}

func (p *publisher) Table(t cells.Table) { p.publish(event{Type: evTable, Table: &t}) }

func (p *publisher) Row(r cells.Row) { p.publish(event{Type: evRow, Row: &r}) }

func (p *publisher) Text(title, body string) {
	p.publish(event{Type: evText, Text: &cells.Text{Title: title, Body: body}})
}

func (p *publisher) Frames(frames ...any) { p.publish(event{Type: evFrames, Frames: frames}) }

func (p *publisher) Chart(draw func() (string, error)) {
	if svg, err := draw(); err == nil {
		p.publish(event{Type: evChart, SVG: svg})
	}
}

// Ask hands task to the page behind the run, through the server (a request on the job's ask
// subject): the run's browser part works on a worker as it does on the server's own machine.
func (p *publisher) Ask(ctx context.Context, task any) (json.RawMessage, error) {
	data, err := json.Marshal(task)
	if err != nil {
		return nil, err
	}
	if len(data) > cells.MaxTaskBytes {
		return nil, fmt.Errorf("a browser task of %d KiB, over the %d KiB cap", len(data)>>10, cells.MaxTaskBytes>>10)
	}
	m, err := p.nc.RequestWithContext(ctx, p.ask, data)
	if err != nil {
		if ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		return nil, fmt.Errorf("the server did not pass the browser task on: %w", err)
	}
	var r askReply
	if err := json.Unmarshal(m.Data, &r); err != nil {
		return nil, fmt.Errorf("the server's answer to a browser task: %w", err)
	}
	switch {
	case r.NoBrowser:
		return nil, cells.ErrNoBrowser
	case r.PageError != "":
		return json.Marshal(map[string]string{"page_error": r.PageError}) // cells.Ask makes it a *PageError
	case r.Error != "":
		return nil, errors.New(r.Error)
	}
	return r.Result, nil
}
