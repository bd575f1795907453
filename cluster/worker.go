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
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"

	"github.com/gpuplayground/playground/cells"
	"github.com/gpuplayground/playground/estimate"
	"github.com/gpuplayground/playground/internal/untrusted"
	"github.com/gpuplayground/playground/machine"
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
	// Config is the worker's machine (machine.New): Name is its name in results (default: the host
	// name); Slots is how many runs that time nothing (cells.Exclusive false) it runs side by side,
	// 1 to MaxSlots (0: GOMAXPROCS, at most MaxSlots; a run that measures runs alone); Kinds default
	// to builtin.Kinds; Limits bound what a run may ask for (zero fields: harness.DefaultLimits),
	// its run time limit aside (the server's travels with each job); Calibrate measures (or loads)
	// its rates for run estimates before it joins, which it reports to the server, which prices
	// the runs this machine can take with them (off: it reports none).
	machine.Config
	// Class is the class of machine that cells' `machine:` key names (e.g. "h100"); "" is none.
	Class string
	// Heartbeat is how often the worker announces itself. Default 1 s; the server's must match.
	Heartbeat time.Duration
	// PingInterval is how often the worker's NATS connection pings the server; MaxPingsOut+1 pings
	// unanswered in a row close it as stale, and it reconnects. Default PingInterval (2 s).
	PingInterval time.Duration
	// Out receives a line when the worker joins. Default os.Stdout.
	Out io.Writer
	// RequestTimeout bounds the wait for the NATS server's answer to making the worker's consumer
	// at a join: then, a refusal that waiting will not change (an untrusted certificate, a wrong
	// token) ends the join, and anything else is tried again. Default 5 s; tests shorten it.
	RequestTimeout time.Duration
	// PullWait is how long one pull for the worker's next job waits for one before the next pull;
	// stopping the worker ends it at once. Default 2 s.
	PullWait time.Duration
	// Prefix is the deployment's prefix of every NATS name (-nats-prefix; Names): the server's,
	// as its worker command says. Default DefaultPrefix.
	Prefix string
	names  Names // of Prefix

	// pulled, if set (tests), is called after a job is pulled and before it is started: a test
	// freezes the worker there (SIGSTOP) to stand for one frozen while holding a job.
	pulled func()
	// rates, if set (tests), are installed as this machine's calibrated rates instead of measuring.
	rates *estimate.Rates
}

// withDefaults fills in cfg's defaults and checks its class and slots.
func (cfg WorkerConfig) withDefaults() (WorkerConfig, error) {
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = time.Second
	}
	if cfg.PingInterval <= 0 {
		cfg.PingInterval = PingInterval
	}
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = 5 * time.Second
	}
	if cfg.PullWait <= 0 {
		cfg.PullWait = 2 * time.Second
	}
	if cfg.Out == nil {
		cfg.Out = os.Stdout
	}
	if cfg.Prefix == "" {
		cfg.Prefix = DefaultPrefix
	}
	var err error
	if cfg.names, err = NewNames(cfg.Prefix); err != nil {
		return cfg, err
	}
	if cfg.Class != "" {
		if err := cells.CheckClass(cfg.Class); err != nil {
			return cfg, fmt.Errorf("-%w (as a cell's machine: key)", err)
		}
	}
	switch {
	case cfg.Slots < 0 || cfg.Slots > MaxSlots:
		return cfg, fmt.Errorf("-slots %d: give 1 to %d runs that time nothing side by side (0: GOMAXPROCS)", cfg.Slots, MaxSlots)
	case cfg.Slots == 0:
		cfg.Slots = min(runtime.GOMAXPROCS(0), MaxSlots)
	}
	return cfg, nil
}

// RunWorker joins the cluster at cfg.Join and runs the jobs routed to this machine, streaming every
// event back, until ctx ends: a run that measures alone, or up to cfg.Slots runs that time nothing
// side by side (the server routes so; the worker's machine.Gate also holds it to that). A lost
// connection is re-established (the worker rejoins with the same id); runs in progress when ctx
// ends are cancelled and reported, then the worker says bye. It also stops, with an error saying
// why, when the server refuses it a place or a restart of its machine replaced it (a notice), and
// when the NATS server refuses it the names of its prefix (a wrong -nats-prefix); nil when ctx ended.
func RunWorker(ctx context.Context, cfg WorkerConfig) error {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return err
	}
	mc := cfg.Config
	mc.Name = machine.HostName(cfg.Name)
	m := machine.New(ctx, mc)
	defer m.Close()
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
	me := describe(id, cfg.Name, m.GPU.Report, m.Names())
	me.Class = cfg.Class
	me.Slots = cfg.Slots
	calibrateWorker(ctx, cfg, m)
	if m.Env.Rates.Calibrated() {
		me.Rates = m.Env.Rates.Get()
	}
	ctx, quit := context.WithCancelCause(ctx)
	defer quit(nil)
	trouble := &natsTrouble{out: cfg.Out, name: me.Name, join: redact(cfg.Join), prefix: cfg.Prefix, quit: quit}
	nc, err := joinNATS(cfg, me, key, trouble)
	if err != nil {
		return err
	}
	defer nc.Close()
	cons, err := waitConsumer(ctx, cfg, nc, me)
	if cons == nil || err != nil {
		return errors.Join(err, stopCause(ctx))
	}
	trouble.joined.Store(true)
	if sub, err := nc.Subscribe(cfg.names.Notice()+me.ID, func(msg *nats.Msg) { told(msg, quit) }); err == nil {
		defer func() { _ = sub.Unsubscribe() }()
	}
	w := &runner{nc: nc, names: cfg.names, m: m, me: me, out: cfg.Out, running: map[*running]bool{}, pulled: cfg.pulled, beat: cfg.Heartbeat, pullWait: cfg.PullWait}
	nc.SetReconnectHandler(w.reconnected)
	if sub, err := nc.Subscribe(cfg.names.Start(), w.serverStarted); err == nil {
		defer func() { _ = sub.Unsubscribe() }()
	}
	fmt.Fprintf(cfg.Out, "worker %s joined %s: %s, %d slots\n", me.ID[:12], redact(cfg.Join), me.Summary(), me.Slots)
	w.wantRates.Store(true)                                           // the first announcement carries the rates
	defer heartbeat(nc, cfg.names, me, cfg.Heartbeat, &w.wantRates)() // after the jobs: every job ended and was reported before the bye
	w.fetch(ctx, cons, cfg.Slots, remaker(nc, cfg, me))
	return stopCause(ctx)
}

// stopError is why a worker stops by itself (RunWorker's error): the server refused or replaced it
// (notice), or the NATS server refuses it its deployment's names (natsTrouble).
type stopError struct{ why string }

func (e *stopError) Error() string { return e.why }

// stopCause is the stopError that ended ctx, or nil when ctx ended otherwise (or not at all).
func stopCause(ctx context.Context) error {
	var stop *stopError
	if errors.As(context.Cause(ctx), &stop) {
		return stop
	}
	return nil
}

// told reads the server's notice to this worker (Names.Notice) and stops the worker with it.
func told(msg *nats.Msg, quit context.CancelCauseFunc) {
	var n notice
	if json.Unmarshal(msg.Data, &n) != nil {
		return
	}
	switch {
	case n.Replaced != "":
		quit(&stopError{fmt.Sprintf("stopped: %s; this process is no longer a worker of it", untrusted.Line(n.Replaced, untrusted.MaxMessage))})
	case n.Refused != "":
		quit(&stopError{fmt.Sprintf("the server refused this machine: %s; start it again once there is room", untrusted.Line(n.Refused, untrusted.MaxMessage))})
	}
}

// natsTrouble is what a worker's NATS connection reports out of band (nats.ErrorHandler): a
// permissions violation before the worker joined means the NATS server refuses it the names of
// its prefix, a wrong or missing -nats-prefix, and stops it (quit) saying what to pass; after it
// joined, each refused subject is told once, not at every heartbeat.
type natsTrouble struct {
	out                io.Writer
	name, join, prefix string
	quit               context.CancelCauseFunc
	joined             atomic.Bool

	mu   sync.Mutex
	told map[string]bool
}

func (t *natsTrouble) handle(_ *nats.Conn, _ *nats.Subscription, err error) {
	if err == nil {
		return
	}
	if errors.Is(err, nats.ErrPermissionViolation) && !t.joined.Load() {
		t.quit(&stopError{fmt.Sprintf("joining %s: the NATS server refuses this worker the names of the prefix %q (%v): give -nats-prefix the prefix of the front's worker command (it prints playground worker -join URL … -nats-prefix P; without the flag the prefix is %s, the embedded server's)",
			t.join, t.prefix, err, DefaultPrefix)})
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.told[err.Error()] || len(t.told) >= 32 {
		return
	}
	if t.told == nil {
		t.told = map[string]bool{}
	}
	t.told[err.Error()] = true
	fmt.Fprintf(t.out, "worker %s: the NATS server says: %v (told once)\n", t.name, err)
}

// calibrateWorker installs this machine's rates for run estimates (Config.Calibrate, or the
// test's rates) before it joins; a failure leaves estimate.Defaults and says so.
func calibrateWorker(ctx context.Context, cfg WorkerConfig, m *machine.Machine) {
	switch {
	case cfg.rates != nil:
		m.Env.Rates.Set(cfg.rates)
	case cfg.Calibrate:
		m.Calibrate(ctx, cfg.Out)
	}
}

// joinNATS connects to the server's NATS as the worker me, with the key it made; trouble hears
// what the connection reports out of band.
func joinNATS(cfg WorkerConfig, me Machine, key nkeys.KeyPair, trouble *natsTrouble) (*nats.Conn, error) {
	opts := []nats.Option{nats.Name("playground worker " + me.Name), nats.MaxReconnects(-1), nats.ReconnectWait(time.Second),
		nats.RetryOnFailedConnect(true), nats.CustomInboxPrefix(InboxPrefix + me.ID),
		nats.PingInterval(cfg.PingInterval), nats.MaxPingsOutstanding(MaxPingsOut),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil { // nil: this worker closed it
				fmt.Fprintf(cfg.Out, "worker %s: lost the connection to the NATS server%s; it reconnects by itself\n", me.Name, lossReason(err, cfg.PingInterval))
			}
		}),
		nats.ErrorHandler(trouble.handle)}
	switch {
	case cfg.Creds != "":
		opts = append(opts, nats.UserCredentials(cfg.Creds))
	case cfg.Token != "":
		opts = append(opts, nats.UserInfo(WorkerUser, cfg.Token), nats.Nkey(me.ID, key.Sign))
	}
	if cfg.CA != "" {
		opts = append(opts, nats.RootCAs(cfg.CA))
	}
	nc, err := nats.Connect(cfg.Join, opts...)
	if err != nil {
		return nil, fmt.Errorf("joining %s: %w", redact(cfg.Join), err)
	}
	return nc, nil
}

// consumer makes (or finds) the worker me's durable pull consumer of the job stream: at most cfg.Slots
// jobs fetched and not yet acknowledged, each held only while the worker says it works on it (an
// in-progress acknowledgement every heartbeat beat, keepJob): a worker frozen or cut off loses its
// jobs after ackWait(beat), not after a fixed hour, and its slots are free again (its jobs are not
// delivered again: MaxDeliver 1; the server gave them up or moved them). A consumer nobody pulls
// from for inactive is deleted by JetStream; the server deletes a departed worker's at once.
func consumer(ctx context.Context, nc *nats.Conn, cfg WorkerConfig, me Machine) (jetstream.Consumer, error) {
	return consumerWithin(ctx, nc, cfg, me, cfg.RequestTimeout)
}

// consumerWithin is consumer, its request answered within timeout.
func consumerWithin(ctx context.Context, nc *nats.Conn, cfg WorkerConfig, me Machine, timeout time.Duration) (jetstream.Consumer, error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return js.CreateOrUpdateConsumer(ctx, cfg.names.Stream(), jetstream.ConsumerConfig{
		Durable: consumerName(me.ID), FilterSubject: cfg.names.Jobs() + me.ID, AckPolicy: jetstream.AckExplicitPolicy,
		MaxAckPending: cfg.Slots, AckWait: ackWait(cfg.Heartbeat), MaxDeliver: 1, InactiveThreshold: inactive,
		Description: "jobs for " + me.Summary()})
}

// ackWait is how long a job fetched stays the worker's without an acknowledgement or an in-progress
// one: five heartbeats, at least 2 s (JetStream's redelivery timer is coarse).
func ackWait(beat time.Duration) time.Duration { return max(5*beat, 2*time.Second) }

// remaker makes the worker's consumer again when fetching fails (runner.fetch's remake): a server
// restarted without its store has none. Each try waits a second for the answer, twice as long as
// the try before it failed, up to cfg.RequestTimeout: the first request after a reconnect to a
// restarted server may never be answered, and a try that waited the full RequestTimeout (5 s) held
// the worker's first job from that server as long. Called from one goroutine.
func remaker(nc *nats.Conn, cfg WorkerConfig, me Machine) func(context.Context) (jetstream.Consumer, error) {
	wait := min(time.Second, cfg.RequestTimeout)
	return func(ctx context.Context) (jetstream.Consumer, error) {
		c, err := consumerWithin(ctx, nc, cfg, me, wait)
		if err != nil {
			wait = min(2*wait, cfg.RequestTimeout)
			return nil, err
		}
		wait = min(time.Second, cfg.RequestTimeout)
		return c, nil
	}
}

// inactive is how long a worker's consumer lives with nobody pulling from it (JetStream's
// InactiveThreshold): a worker pulls every 2 s while it lives.
const inactive = time.Minute

// waitConsumer waits for the server's job stream (and the connection) and makes the worker's
// consumer; nil and no error when ctx ends first, an error when waiting will not help (no
// JetStream, refused credentials, an untrusted certificate).
func waitConsumer(ctx context.Context, cfg WorkerConfig, nc *nats.Conn, me Machine) (jetstream.Consumer, error) {
	var cons jetstream.Consumer
	for told := false; ; {
		var err error
		if cons, err = consumer(ctx, nc, cfg, me); err == nil {
			break
		}
		if errors.Is(err, jetstream.ErrJetStreamNotEnabled) || isAuth(err) || isAuth(nc.LastError()) || isTLS(nc.LastError()) {
			return nil, fmt.Errorf("joining %s: %w", redact(cfg.Join), errors.Join(err, nc.LastError()))
		}
		if errors.Is(err, jetstream.ErrStreamNotFound) && !told {
			told = true
			fmt.Fprintf(cfg.Out, "worker %s: waiting for the job stream %s on %s: is the front started, and is %s its prefix (-nats-prefix; its worker command says)?\n",
				me.Name, cfg.names.Stream(), redact(cfg.Join), cfg.Prefix)
		}
		select {
		case <-ctx.Done():
			return nil, nil
		case <-time.After(time.Second):
		}
	}
	if status := nc.Status(); status != nats.CONNECTED {
		return nil, fmt.Errorf("joining %s: connection %s", redact(cfg.Join), status)
	}
	return cons, nil
}

// heartbeat announces me now and every beat until the returned function is called, which says bye.
// An announcement carries me's rates when wantRates is set (then cleared): the first, and the next
// after each server start the worker hears (runner.serverStarted); the others leave them out.
func heartbeat(nc *nats.Conn, n Names, me Machine, beat time.Duration, wantRates *atomic.Bool) (bye func()) {
	full, _ := json.Marshal(me)
	me.Rates = nil
	hello, _ := json.Marshal(me)
	announce := func() {
		data := hello
		if wantRates.Swap(false) {
			data = full
		}
		_ = nc.Publish(n.Hello()+me.ID, data)
	}
	announce()
	ctx, stop := context.WithCancel(context.Background())
	var beats sync.WaitGroup
	beats.Add(1)
	go func() {
		defer beats.Done()
		t := time.NewTicker(beat)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				announce()
			}
		}
	}()
	return func() {
		stop()
		beats.Wait()
		_ = nc.Publish(n.Bye()+me.ID, hello)
		_ = nc.Flush()
	}
}

// fetch pulls jobs from cons and runs each in its own goroutine until ctx ends, then waits for them
// to end. A permit is a job fetched and not yet acknowledged: at most slots, as the consumer's
// MaxAckPending; the machine's gate keeps the one-machine rule. remake makes the consumer again
// when fetching fails (a server restarted without its store).
func (w *runner) fetch(ctx context.Context, cons jetstream.Consumer, slots int, remake func(context.Context) (jetstream.Consumer, error)) {
	permits := make(chan struct{}, slots)
	var jobs sync.WaitGroup
	defer jobs.Wait()
	for ctx.Err() == nil {
		select {
		case permits <- struct{}{}:
		case <-ctx.Done():
			continue
		}
		// FetchMaxWait, not a context's deadline: the NATS server ends the pull after pullWait and
		// the client listens a second longer, so a job sent at the pull's last moment still
		// arrives (jobs are delivered once). The worker's stop ends the wait at once (take); a job
		// sent after it is the server's to end, as the worker says bye.
		batch, err := cons.Fetch(1, jetstream.FetchMaxWait(w.pullWait))
		if err != nil {
			<-permits
			select {
			case <-ctx.Done():
			case <-time.After(500 * time.Millisecond):
				if c, err := remake(ctx); err == nil {
					cons = c
				}
			}
			continue
		}
		got, started := w.take(ctx, batch, permits, &jobs)
		if !started {
			<-permits
		}
		if err := batch.Error(); !got && err != nil && ctx.Err() == nil {
			if c, cerr := remake(ctx); cerr == nil {
				cons = c
			} else {
				time.Sleep(500 * time.Millisecond)
			}
		}
	}
}

// take starts a job for each message of batch (one pull's) until the batch ends or ctx does, each
// job holding a permit of permits until its acknowledgement, and says whether a message came and
// whether a job started.
func (w *runner) take(ctx context.Context, batch jetstream.MessageBatch, permits chan struct{}, jobs *sync.WaitGroup) (got, started bool) {
	msgs := batch.Messages()
	for {
		select {
		case msg, open := <-msgs:
			if !open {
				return got, started
			}
			got = true
			j, ok := w.accept(msg)
			if !ok {
				continue
			}
			if w.pulled != nil {
				w.pulled()
			}
			started = true
			jobs.Add(1)
			go func() {
				defer jobs.Done()
				defer func() { <-permits }() // after the job's acknowledgement
				w.run(ctx, msg, j)
			}()
		case <-ctx.Done():
			return got, started
		}
	}
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

// runner runs the jobs sent to a worker on its machine (machine.Machine), several at once.
type runner struct {
	nc    *nats.Conn
	names Names
	m     *machine.Machine
	me    Machine
	out   io.Writer
	// pulled is WorkerConfig.pulled.
	pulled func()
	// beat is the heartbeat: how often a job held is acknowledged in progress (keepJob).
	beat time.Duration
	// pullWait is WorkerConfig.PullWait.
	pullWait time.Duration

	mu      sync.Mutex
	epoch   string            // the epoch of the server last heard of (Names.Start, or a job's)
	running map[*running]bool // the jobs running now
	taken   *takenJobs        // the jobs of the current epoch taken (current)
	// wantRates: the next announcement carries this machine's rates (heartbeat).
	wantRates atomic.Bool
}

// running is a job in progress, for stopping it when a new server starts or when the server gave
// up on it while the connection was down (reconnected).
type running struct {
	epoch, job string
	ctx        context.Context // the run's
	cancel     context.CancelFunc
}

// accept reads a fetched job; it acknowledges and drops (ok false) one that is not a job. Whether
// the server still wants it is the run's first question (run): no clock of this machine's is asked.
func (w *runner) accept(msg jetstream.Msg) (j job, ok bool) {
	if err := json.Unmarshal(msg.Data(), &j); err != nil || j.ID == "" {
		_ = msg.Ack() // not a job: nobody waits for it
		return j, false
	}
	return j, true
}

// serverStarted hears a server's epoch (Names.Start).
func (w *runner) serverStarted(msg *nats.Msg) {
	var s start
	if json.Unmarshal(msg.Data, &s) == nil && s.Epoch != "" {
		w.wantRates.Store(true) // a server (re)started or a worker joined: it may not have them
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

// run runs one job on the machine and acknowledges it after its end event. A job the server has
// given up on (givenup.go) is acknowledged without starting it or sending any event; one it gives up
// on later is stopped. The machine waits first when the one-machine rule says so (machine.Gate): a
// job left running from before a server restart may still hold it.
func (w *runner) run(ctx context.Context, msg jetstream.Msg, j job) {
	defer func() { _ = msg.Ack() }()
	defer w.keepJob(msg)()
	if !w.current(ctx, j) {
		return // queued by a server before a restart: nobody waits for its events
	}
	timeout := time.Duration(j.TimeoutNS)
	if timeout <= 0 {
		timeout = 10 * time.Minute
	}
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	// Listen for the give-up and track the job (reconnected reads its key again) before reading
	// the key: a give-up at any moment from here on stops the run.
	defer w.watchGivenUp(j.ID, cancel)()
	defer w.track(rctx, j.Epoch, j.ID, cancel)()
	if gaveUp, ok := w.checkGivenUp(rctx, j.ID); gaveUp || !ok {
		return // never started: the server moved or ended the run, or nothing can be known before the time limit
	}
	pub := newPublisher(w.nc, w.names.Run(w.me.ID, j.ID, "events"), w.names.Run(w.me.ID, j.ID, "ask"))
	me := w.me
	pub.publish(event{Event: machine.Event{Type: evTaken}, Machine: &me})
	r, err := w.parse(j, timeout)
	if err == nil {
		err = w.m.Run(rctx, r, pub) // paced here (machine.Paced); the server re-paces it with slack (relayer)
	}
	pub.publish(w.end(ctx, rctx, timeout, time.Duration(j.PriceNS), err))
	_ = w.nc.Flush()
}

// parse parses j's run as this machine runs it: under the time limit of the server that accepted
// it (job.LimitNS; from a server before that field, timeout, the time it left the run), with this
// machine's own other limits (memory, sizes), and only if it asks for no class of machine but this
// one's. What this machine cannot run is refused with the reason; the server's limit is not its
// to refuse by.
func (w *runner) parse(j job, timeout time.Duration) (cells.Run, error) {
	limit := time.Duration(j.LimitNS)
	if limit <= 0 {
		limit = timeout
	}
	r, err := w.m.ParseWithin(j.Kind, j.Action, cells.Cell{ID: j.Cell, Source: j.Source, Recording: j.Recording}, limit)
	if err != nil {
		return nil, err
	}
	if n := cells.NeedsOf(r); n.Machine != "" && n.Machine != w.me.Class {
		class := "no class"
		if w.me.Class != "" {
			class = "class " + w.me.Class
		}
		return nil, fmt.Errorf("the machine %s is of %s, and the run asks for one of class %s", w.me.Name, class, n.Machine)
	}
	return r, nil
}

// track records the job of the server epoch in progress (ctx and cancel are its run's), so that a
// new server's start stops it (newEpoch), and a give-up missed while disconnected too
// (reconnected); the returned function forgets it.
func (w *runner) track(ctx context.Context, epoch, job string, cancel context.CancelFunc) (forget func()) {
	if epoch != "" {
		w.newEpoch(epoch)
	}
	self := &running{epoch: epoch, job: job, ctx: ctx, cancel: cancel}
	w.mu.Lock()
	w.running[self] = true
	w.mu.Unlock()
	return func() {
		w.mu.Lock()
		delete(w.running, self)
		w.mu.Unlock()
	}
}

// end is a job's end event: ctx is the worker's, rctx the run's (its time limit timeout and the
// server's cancel), price the estimate the server accepted it at (0: none), err the run's error.
func (w *runner) end(ctx, rctx context.Context, timeout, price time.Duration, err error) event {
	end := event{Event: machine.Event{Type: evEnd}}
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
			if price > 0 {
				end.Error += fmt.Sprintf(" (it was accepted at an estimate of %s there)", price.Round(time.Millisecond))
			}
		}
	case err != nil:
		end.Error = err.Error()
	}
	return end
}

// keepJob acknowledges msg in progress every heartbeat until the returned function is called: the
// job stays this worker's while it lives and works on it, whatever its time limit (ackWait).
func (w *runner) keepJob(msg jetstream.Msg) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(w.beat)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				_ = msg.InProgress()
			}
		}
	}()
	return func() {
		close(done)
		wg.Wait()
	}
}

// current reports whether j was queued by the server in charge now: its epoch is the one the server
// keeps in the bucket of given-up runs (EpochKey), read now, so that no clock, this machine's nor
// the stream's, decides. A job of another epoch (a server before a restart, whose runs nobody waits
// for) is dropped unrun; one whose epoch cannot be read before ctx ends (JetStream away) is run, as
// its give-up check (checkGivenUp) waits for JetStream anyway. A job seen before (the same epoch
// and sequence, delivered again) is dropped: a job runs at most once.
func (w *runner) current(ctx context.Context, j job) bool {
	if j.Epoch == "" {
		return true
	}
	epoch, ok := w.serverEpoch(ctx)
	if ok && epoch != j.Epoch {
		fmt.Fprintf(w.out, "worker %s: dropped job %d of a server before a restart, unrun\n", w.me.Name, j.Seq)
		return false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.taken == nil || w.taken.epoch != j.Epoch {
		w.taken = &takenJobs{epoch: j.Epoch, seqs: map[uint64]bool{}}
	}
	if w.taken.seqs[j.Seq] {
		return false
	}
	if len(w.taken.seqs) >= maxTaken {
		clear(w.taken.seqs)
	}
	w.taken.seqs[j.Seq] = true
	return true
}

// takenJobs are the sequences of the jobs of one server epoch this worker took (runner.current).
type takenJobs struct {
	epoch string
	seqs  map[uint64]bool
}

// maxTaken bounds runner.taken: far more jobs than a worker holds at once.
const maxTaken = 4096

// publisher is the worker's cells.Emitter under a cells.Paced (which paces the run's events as the
// server's are paced): each event (machine.Events) becomes a message on the job's event subject,
// size-capped.
type publisher struct {
	machine.Events
	nc      *nats.Conn
	subject string
	ask     string // the job's ask subject
}

func newPublisher(nc *nats.Conn, subject, ask string) *publisher {
	p := &publisher{nc: nc, subject: subject, ask: ask}
	p.Events = func(ev machine.Event) { p.publish(event{Event: ev}) }
	return p
}

func (p *publisher) publish(ev event) {
	data, err := json.Marshal(ev)
	if err != nil {
		data, _ = json.Marshal(noteEvent("error", fmt.Sprintf("a %s event could not be sent: %v", ev.Type, err)))
	}
	limit := int64(maxEvent)
	if mp := p.nc.MaxPayload(); mp > 0 && mp < limit { // an external server's cap may be lower
		limit = mp
	}
	if int64(len(data)) > limit {
		data, _ = json.Marshal(noteEvent("warning",
			fmt.Sprintf("a %s of %d KiB was left out: over the %d KiB cap of a worker's message", ev.Type, len(data)>>10, limit>>10)))
	}
	_ = p.nc.Publish(p.subject, data)
}

// noteEvent is a note of level with text, as an event of the wire.
func noteEvent(level, text string) event {
	return event{Event: machine.Event{Type: machine.TypeNote, Body: machine.Body{Note: &cells.Note{Level: level, Message: text}}}}
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
