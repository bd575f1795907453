package cluster

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/gpuplayground/playground/cells"
	"github.com/gpuplayground/playground/gpu/nvidia"
	"github.com/gpuplayground/playground/machine"
)

// WorkerUser is the NATS user name workers log in with on the embedded server; their password is
// the worker token.
const WorkerUser = "worker"

// Config is how the server side of a cluster starts.
type Config struct {
	// Listen, if set (host:port), lets workers on other machines join the embedded NATS server
	// there. Empty: the embedded server has no port at all (in-process connections only).
	Listen string
	// URL, if set, uses this external NATS server (with JetStream) instead of the embedded one.
	URL string
	// Creds is a NATS credentials file (JWT and nkey seed) for the external server.
	Creds string
	// Token is the workers' password on the embedded server. Empty: a random one, generated once
	// per DataDir and kept there (keptToken), or per start without DataDir.
	Token string
	// TLSCert and TLSKey, if set, are the PEM certificate and key the embedded server's port (Listen)
	// requires TLS with: workers then join at a tls:// URL, and the token, jobs and results travel
	// encrypted. playground uses the web server's -tls-cert and -tls-key.
	TLSCert, TLSKey string
	// DataDir, if set, keeps the JetStream store (the job stream) in DataDir/nats; empty keeps it in
	// memory. Start purges the job stream either way: a job from before a restart has nobody
	// waiting for its events (the server's run store marks such runs interrupted), so it is never
	// run.
	DataDir string
	// LocalWorker runs jobs on this machine, in this process, like a worker that never leaves.
	LocalWorker bool
	// Local is this machine's GPU report, for the local worker's announcement.
	Local nvidia.Report
	// Kinds names the kinds the local worker runs (its announcement).
	Kinds []string
	// Class is the local worker's class of machine, for cells' `machine:` key; "" is none.
	Class string
	// Slots is how many runs that time nothing (cells.Exclusive false) the local worker runs side by
	// side; 0: GOMAXPROCS. A worker on another machine announces its own (Machine.Slots).
	Slots int
	// Machine, if set, is the runner of this machine (machine.Machine, the server's own): the local
	// worker's runs go through its gate (its slots are the local worker's) and run there. Nil: a
	// gate of Slots of its own, and runs run as they are.
	Machine *machine.Machine
	// Heartbeat is how often workers announce themselves; a worker silent for three heartbeats is
	// gone. Default 1 s.
	Heartbeat time.Duration
	// PingInterval is how often this server's NATS connection, and on the embedded server its
	// clients', ping the other end; MaxPingsOut+1 pings unanswered in a row close the connection
	// as stale. Default PingInterval (2 s: stale within StaleAfter); tests shorten it.
	PingInterval time.Duration
	// Settle is how long after Start a run waits for a machine able to run it (of the class it asks
	// for, or with a GPU) to join, rather than failing or going to another machine: workers that
	// served the server before a restart need a reconnect and a heartbeat to announce themselves
	// again, and the runs queued again at start (server.Config.DataDir) should find them. Default
	// 2 s plus three heartbeats where workers can join (Listen or URL), else none; negative: none.
	Settle time.Duration
	// Out receives the worker command to run. Default os.Stdout.
	Out io.Writer
	// Prefix is the deployment's prefix of every NATS name (-nats-prefix; Names), so that several
	// fronts share one NATS server. Default: the prefix last given with this DataDir (keptPrefix),
	// else DefaultPrefix on the embedded server (nobody else is there), and on an external one "pg-"
	// and the data directory's id (derivedPrefix).
	Prefix string
	// prefixKept: Prefix is the one kept in DataDir from an earlier start (Start says so).
	prefixKept bool
}

// Cluster is the server side: the NATS connection, the workers known and the executor of the
// server's run queue (machine.Runner).
type Cluster struct {
	cfg    Config
	names  Names              // of cfg.Prefix
	ns     *natsserver.Server // nil with an external server
	nc     *nats.Conn
	js     jetstream.JetStream
	stream jetstream.Stream
	// givenUp is the bucket of the runs this server gave up on (givenup.go).
	givenUp jetstream.KeyValue
	tmpDir  string
	local   *worker
	here    *machine.Local // runs the local worker's runs (local)
	epoch   string         // random, per Start: workers stop jobs of any other (Names.Start)
	seq     atomic.Uint64  // the last job's number (job.Seq)

	mu      sync.Mutex
	settled time.Time // until then, a run no machine known can run waits (Config.Settle)
	workers map[string]*worker
	// refused are the workers refused a place (hello), with why: the operator is told once, the
	// worker at each announcement; forgotten when one leaves.
	refused map[string]string
	// replaced are workers replaced by a restart of theirs (restartOf), with why: not heard again.
	replaced map[string]string
	// tallies are the counts of the machines that left, by trustKey (what the operator configured), for their return.
	tallies map[string]tally
	// refusals are the JetStream refusals told to the operator, with when (tellRefused).
	refusals map[string]time.Time
	changed  chan struct{} // closed and replaced whenever a worker comes, goes or is freed
	// prices are the runs' estimates on each machine, kept by Estimate for placing them (pick).
	prices  priceBook
	closed  bool
	closing chan struct{} // closed by Close
	// natsDown is closed while this server's own NATS connection is down (since downSince, for
	// downErr) and replaced when it is back: runs on workers end then, blaming the connection,
	// not the worker (natsLostError).
	natsDown  chan struct{}
	downSince time.Time
	downErr   error
	// lostAt and lostErr are the last loss of the connection, kept after it is back.
	lostAt  time.Time
	lostErr error
	stop    context.CancelFunc
	done    sync.WaitGroup
	// guardPoke asks guardConns to look at the workers' connections now.
	guardPoke chan struct{}
}

// Start starts the NATS side: the embedded server (or a connection to cfg.URL), the job stream, the
// announcement listener and the watchdog that drops silent workers. Close stops it.
func Start(ctx context.Context, cfg Config) (*Cluster, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	names, err := NewNames(cfg.Prefix)
	if err != nil {
		return nil, err
	}
	c := &Cluster{cfg: cfg, names: names, workers: map[string]*worker{}, changed: make(chan struct{}), closing: make(chan struct{}),
		natsDown: make(chan struct{}), epoch: randomToken(), guardPoke: make(chan struct{}, 1)}
	if err := c.connect(); err != nil {
		c.Close()
		return nil, err
	}
	if err := c.openStream(ctx); err != nil {
		c.Close()
		return nil, fmt.Errorf("JetStream job stream: %w", err)
	}
	if cfg.LocalWorker {
		c.addLocal()
	}
	if _, err := c.nc.Subscribe(c.names.Hello()+"*", c.hello); err != nil {
		c.Close()
		return nil, err
	}
	if _, err := c.nc.Subscribe(c.names.Bye()+"*", c.bye); err != nil {
		c.Close()
		return nil, err
	}
	c.announce()
	c.startWatch()
	if cfg.prefixKept {
		c.say("the NATS names' prefix is %s, kept in %s from an earlier start (its workers use it); -nats-prefix changes it", cfg.Prefix, filepath.Join(cfg.DataDir, "nats", "prefix"))
	}
	return c, nil
}

// withDefaults fills in cfg's defaults and checks its class.
func (cfg Config) withDefaults() (Config, error) {
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = time.Second
	}
	if cfg.PingInterval <= 0 {
		cfg.PingInterval = PingInterval
	}
	switch {
	case cfg.Listen == "" && cfg.URL == "":
		cfg.Settle = 0 // no worker can join: nothing to wait for
	case cfg.Settle == 0:
		cfg.Settle = 2*time.Second + 3*cfg.Heartbeat
	}
	if cfg.Out == nil {
		cfg.Out = os.Stdout
	}
	if cfg.Class != "" {
		if err := cells.CheckClass(cfg.Class); err != nil {
			return cfg, fmt.Errorf("-%w (as a cell's machine: key)", err)
		}
	}
	given := cfg.Prefix
	var err error
	if cfg.Prefix, err = keptPrefix(cfg.DataDir, cfg.Prefix); err != nil || cfg.Prefix != "" {
		cfg.prefixKept = given == "" && cfg.Prefix != ""
		return cfg, err
	}
	if cfg.URL == "" {
		cfg.Prefix = DefaultPrefix
		return cfg, nil
	}
	cfg.Prefix, err = derivedPrefix(cfg.DataDir)
	return cfg, err
}

// openStream makes (or opens) the job stream and purges it, and the bucket of given-up runs.
func (c *Cluster) openStream(ctx context.Context) error {
	storage := jetstream.MemoryStorage
	if c.cfg.DataDir != "" || c.cfg.URL != "" {
		storage = jetstream.FileStorage
	}
	var err error
	if c.js, err = jetstream.New(c.nc); err != nil {
		return err
	}
	c.stream, err = c.js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name: c.names.Stream(), Subjects: []string{c.names.Jobs() + "*"}, Retention: jetstream.WorkQueuePolicy,
		Storage: storage, MaxMsgSize: maxJob, MaxAge: 24 * time.Hour, Description: "GPU Playground runs waiting for a worker"})
	if err != nil {
		return err
	}
	if err := c.openGivenUp(ctx, storage); err != nil {
		return err
	}
	// Jobs left from before a restart have nobody waiting for them: this server's run store
	// already marked those runs interrupted, so a worker must not run them blind (measuring on a
	// machine this server now thinks is free). Queued runs survive a restart in the run store,
	// not here.
	return c.stream.Purge(ctx)
}

// addLocal adds this machine as the worker that never leaves, on the gate of cfg.Machine (or a bare
// machine's of cfg.Slots); its runs run through the one in-process runner (machine.Local).
func (c *Cluster) addLocal() {
	m := c.cfg.Machine
	if m == nil {
		m = machine.Bare(c.cfg.Slots)
	}
	// The server parsed the run without its time limit, to price it on whichever machine takes it
	// (it is an Estimator); here it runs under this machine's own limits, as on a worker.
	c.here = machine.NewLocal(m)
	c.here.Reparse = c.cfg.Machine != nil
	g := m.Gate
	c.local = &worker{m: describe("local-"+randomToken(), "", c.cfg.Local, c.cfg.Kinds), local: true, gate: g, gone: make(chan struct{})}
	c.local.m.Name += " (this server)"
	c.local.m.Class = c.cfg.Class
	c.local.m.Slots = g.Slots()
	c.workers[c.local.m.ID] = c.local
}

// startWatch starts the watchdog and, with a settle time (Config.Settle), the look at the runs
// still waiting for a machine once it is over.
func (c *Cluster) startWatch() {
	wctx, stop := context.WithCancel(context.Background())
	c.stop = stop
	c.done.Add(1)
	go func() {
		defer c.done.Done()
		c.watchdog(wctx)
	}()
	if c.ns != nil && c.cfg.Listen != "" {
		c.done.Add(1)
		go func() {
			defer c.done.Done()
			c.guardConns(wctx)
		}()
	}
	if c.cfg.Settle <= 0 {
		return
	}
	c.mu.Lock()
	c.settled = time.Now().Add(c.cfg.Settle)
	c.mu.Unlock()
	c.done.Add(1)
	go func() { // then the runs still waiting for a machine that has not come are looked at again
		defer c.done.Done()
		select {
		case <-time.After(c.cfg.Settle):
			c.mu.Lock()
			c.broadcast()
			c.mu.Unlock()
		case <-wctx.Done():
		}
	}()
}

// connect starts the embedded server and connects to it in process, or connects to cfg.URL.
func (c *Cluster) connect() error {
	opts := []nats.Option{nats.Name("playground server"), nats.MaxReconnects(-1),
		nats.PingInterval(c.cfg.PingInterval), nats.MaxPingsOutstanding(MaxPingsOut),
		nats.DisconnectErrHandler(c.natsLost), nats.ReconnectHandler(c.natsBack)}
	if c.cfg.URL != "" {
		if c.cfg.Creds != "" {
			opts = append(opts, nats.UserCredentials(c.cfg.Creds))
		}
		nc, err := nats.Connect(c.cfg.URL, opts...)
		if err != nil {
			return fmt.Errorf("NATS at %s: %w", redact(c.cfg.URL), err)
		}
		c.nc = nc
		return nil
	}
	if c.cfg.Token == "" {
		tok, err := keptToken(c.cfg.DataDir)
		if err != nil {
			return err
		}
		c.cfg.Token = tok
	}
	internal := randomToken()
	o, err := c.embeddedOptions(internal)
	if err != nil {
		return err
	}
	ns, err := natsserver.NewServer(o)
	if err != nil {
		return fmt.Errorf("embedded NATS server: %w", err)
	}
	c.ns = ns
	ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		return errors.New("embedded NATS server: not ready after 10 s")
	}
	opts = append(opts, nats.InProcessServer(ns), nats.UserInfo("playground", internal))
	nc, err := nats.Connect("", opts...)
	if err != nil {
		return fmt.Errorf("embedded NATS server: %w", err)
	}
	c.nc = nc
	return nil
}

// embeddedOptions are the embedded NATS server's options: its store, its port (none without
// cfg.Listen) and TLS; internal is the password of this server's own connection.
func (c *Cluster) embeddedOptions(internal string) (*natsserver.Options, error) {
	o := &natsserver.Options{
		ServerName: "playground", JetStream: true, MaxPayload: MaxPayload, NoSigs: true, NoLog: true,
		CustomClientAuthentication: &auth{token: c.cfg.Token, internal: internal, names: c.names, joining: c.pokeGuard}, AlwaysEnableNonce: true,
		// Connections to the workers' port, authenticated or not, are capped so that a flood of
		// them cannot use up the process's open files, which the web server shares; one that does
		// not authenticate within AuthTimeout is closed, and the workers' connections are bounded
		// further by guardConns (docs/security.md).
		MaxConn: MaxNATSConns, AuthTimeout: AuthTimeout,
		// A client whose path went silent (connections open, nothing through) is closed within
		// StaleAfter, as the clients close theirs to it.
		PingInterval: c.cfg.PingInterval, MaxPingsOut: MaxPingsOut,
	}
	if c.cfg.DataDir != "" {
		o.StoreDir = filepath.Join(c.cfg.DataDir, "nats")
	} else {
		dir, err := os.MkdirTemp("", "playground-nats-")
		if err != nil {
			return nil, fmt.Errorf("embedded NATS server: a folder for its store: %w", err)
		}
		c.tmpDir, o.StoreDir = dir, dir
	}
	if c.cfg.Listen == "" {
		o.DontListen = true
	} else {
		host, port, err := net.SplitHostPort(c.cfg.Listen)
		if err != nil {
			return nil, fmt.Errorf("-nats-listen %q: %w", c.cfg.Listen, err)
		}
		o.Host = host
		if o.Port, err = strconv.Atoi(port); err != nil {
			return nil, fmt.Errorf("-nats-listen %q: port: %w", c.cfg.Listen, err)
		}
		if o.Port == 0 {
			o.Port = natsserver.RANDOM_PORT
		}
	}
	if (c.cfg.TLSCert == "") != (c.cfg.TLSKey == "") {
		return nil, errors.New("give both -tls-cert and -tls-key, or neither")
	}
	if c.cfg.TLSCert != "" {
		cert, err := tls.LoadX509KeyPair(c.cfg.TLSCert, c.cfg.TLSKey)
		if err != nil {
			return nil, fmt.Errorf("embedded NATS server: loading the TLS certificate and key: %w", err)
		}
		// The handshake and the authentication, each within seconds: a connection that does
		// neither is closed soon.
		o.TLS, o.TLSTimeout, o.AuthTimeout = true, 2, 2*AuthTimeout
		o.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	return o, nil
}

// keptToken is the worker token generated for the data directory dir: made once and kept in
// dir/nats/worker-token (mode 0600), so that workers started with it rejoin after a restart. With
// no dir, a new random token.
func keptToken(dir string) (string, error) {
	if dir == "" {
		return randomToken(), nil
	}
	path := filepath.Join(dir, "nats", "worker-token")
	if b, err := os.ReadFile(path); err == nil {
		if tok := strings.TrimSpace(string(b)); len(tok) >= 32 {
			return tok, nil
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("the kept worker token: %w", err)
	}
	tok := randomToken()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", fmt.Errorf("keeping the worker token: %w", err)
	}
	if err := os.WriteFile(path, []byte(tok+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("keeping the worker token: %w", err)
	}
	return tok, nil
}

func randomToken() string {
	b := make([]byte, 18)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// natsLost records that this server's own NATS connection dropped (err, if known): the runs on
// workers end saying so (their events cannot reach this server meanwhile), runs wait for a machine
// that can be reached, and the watchdog drops no worker for the silence.
func (c *Cluster) natsLost(_ *nats.Conn, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || !c.downSince.IsZero() {
		return
	}
	c.downSince, c.downErr = time.Now(), err
	c.lostAt, c.lostErr = c.downSince, err
	close(c.natsDown)
	c.say("lost the connection to the NATS server%s: runs on workers end, and runs wait, until it is back; it reconnects by itself. The machines are not to blame", lossReason(err, c.cfg.PingInterval))
	c.broadcast()
}

// natsBack records that the connection is back: the workers get three heartbeats from now to be
// heard again before the watchdog drops them.
func (c *Cluster) natsBack(*nats.Conn) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || c.downSince.IsZero() {
		return
	}
	c.say("reconnected to the NATS server after %s", time.Since(c.downSince).Round(time.Millisecond))
	c.downSince, c.downErr = time.Time{}, nil
	c.natsDown = make(chan struct{})
	for _, w := range c.workers {
		w.seen = time.Now()
	}
	c.broadcast()
}

// queueJob publishes data, the job id for w whose time limit ends at until, to the job stream and
// waits for JetStream's acknowledgement until ctx ends or this server's NATS connection is lost
// meanwhile (natsLost): a job written into a path that went silent before the connection was known
// to be stale is never acknowledged, and its run must not wait for it until its time limit. Then
// the job is given up (should it have been stored after all, its worker never starts it) and the
// error is a natsLostError. A connection already down when it starts is waited for, as before.
func (c *Cluster) queueJob(ctx context.Context, w *worker, id string, data []byte, until time.Time) (*jetstream.PubAck, error) {
	c.mu.Lock()
	down := c.natsDown
	if !c.downSince.IsZero() {
		down = nil // down already: the publish waits in nats.go's buffer for the reconnection
	}
	c.mu.Unlock()
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	lost := make(chan struct{})
	go func() {
		select {
		case <-down:
			close(lost)
			cancel()
		case <-pctx.Done():
		}
	}()
	ack, err := c.js.Publish(pctx, c.names.Jobs()+w.m.ID, data)
	cancel()
	select {
	case <-lost:
		if err != nil && ctx.Err() == nil {
			c.giveUp(w, id, until)
			c.mu.Lock()
			defer c.mu.Unlock()
			return nil, natsLostError{w.m.Name, c.lostAt, c.lostErr, c.cfg.PingInterval}
		}
	default:
	}
	return ack, err
}

// natsLostError is a run on a worker that ended because this server's own NATS connection dropped.
type natsLostError struct {
	machine string
	since   time.Time
	err     error
	ping    time.Duration // the connection's ping interval (Config.PingInterval)
}

func (e natsLostError) Error() string {
	return fmt.Sprintf("this server lost its connection to the NATS server at %s%s, so the run on %s ended: its events could not reach this server. The machine is not to blame; run it again once the connection is back", e.since.Format(time.TimeOnly), lossReason(e.err, e.ping), e.machine)
}

// lossReason is why a NATS connection that pings every ping was lost (err, if known), as a
// parenthesis to add to a line: a silent path (nats.ErrStaleConnection) is named as such.
func lossReason(err error, ping time.Duration) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, nats.ErrStaleConnection):
		return fmt.Sprintf(" (the NATS server answered none of %d pings %s apart: the network path to it went silent)", MaxPingsOut+1, ping)
	}
	return " (" + err.Error() + ")"
}

// Liveness of the NATS connections (the front's, the workers' and, on the embedded server, its
// clients'): each end pings the other every PingInterval and closes the connection when
// MaxPingsOut pings in a row went unanswered, so a path that goes silent while its TCP connections
// stay open (a black hole) is noticed within StaleAfter, not after nats.go's default two minutes.
const (
	// PingInterval is how often each end of a NATS connection pings the other.
	PingInterval = 2 * time.Second
	// MaxPingsOut is how many pings may go unanswered; the next unanswered one closes the
	// connection as stale.
	MaxPingsOut = 2
	// StaleAfter is the longest a silent connection goes unnoticed: (MaxPingsOut+1) pings.
	StaleAfter = (MaxPingsOut + 1) * PingInterval
)

// WorkerURL is the URL workers join at (nats://host:port, or tls://host:port when the port
// requires TLS), or "" when no port is open.
func (c *Cluster) WorkerURL() string {
	if c.cfg.URL != "" {
		return c.cfg.URL
	}
	if c.ns == nil || c.cfg.Listen == "" {
		return ""
	}
	a, ok := c.ns.Addr().(*net.TCPAddr)
	if !ok {
		return ""
	}
	host := a.IP.String()
	if a.IP.IsUnspecified() {
		if h, err := os.Hostname(); err == nil {
			host = h
		}
	}
	scheme := "nats://"
	if c.cfg.TLSCert != "" {
		scheme = "tls://"
	}
	return scheme + net.JoinHostPort(host, strconv.Itoa(a.Port))
}

// Token is the workers' password on the embedded server.
func (c *Cluster) Token() string { return c.cfg.Token }

// announce publishes this server's epoch (Names.Start): a worker stops the jobs it still runs for
// a server before this one, whose events nobody waits for.
func (c *Cluster) announce() {
	if c.nc == nil {
		return
	}
	data, _ := json.Marshal(start{Epoch: c.epoch})
	_ = c.nc.Publish(c.names.Start(), data)
}

// Close stops the watchdog, drains the connection and stops the embedded server.
func (c *Cluster) Close() {
	c.mu.Lock()
	if !c.closed {
		close(c.closing)
	}
	c.closed = true
	c.mu.Unlock()
	if c.stop != nil {
		c.stop()
	}
	c.done.Wait()
	if c.nc != nil {
		c.nc.Close()
	}
	if c.ns != nil {
		c.ns.Shutdown()
		c.ns.WaitForShutdown()
	}
	if c.tmpDir != "" {
		_ = os.RemoveAll(c.tmpDir)
	}
}

// MaxNATSConns is the most connections the embedded NATS server accepts (workers, each a
// connection or two, and the server's own): the machine table holds 1,000 machines, but 8 per
// address; 512 keeps the open files that connections can take below the web server's headroom.
const MaxNATSConns = 512

// redact is a NATS URL (or a comma-separated list) with any password in it hidden, for printing.
func redact(urls string) string {
	parts := strings.Split(urls, ",")
	for i, p := range parts {
		if u, err := url.Parse(strings.TrimSpace(p)); err == nil && u.User != nil {
			parts[i] = u.Redacted()
		}
	}
	return strings.Join(parts, ",")
}
