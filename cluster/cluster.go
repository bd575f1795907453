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
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/gpuplayground/playground/cells"
	"github.com/gpuplayground/playground/gpu/nvidia"
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
	// Heartbeat is how often workers announce themselves; a worker silent for three heartbeats is
	// gone. Default 1 s.
	Heartbeat time.Duration
	// Settle is how long after Start a run waits for a machine able to run it (of the class it asks
	// for, or with a GPU) to join, rather than failing or going to another machine: workers that
	// served the server before a restart need a reconnect and a heartbeat to announce themselves
	// again, and the runs queued again at start (server.Config.DataDir) should find them. Default
	// 2 s plus three heartbeats where workers can join (Listen or URL), else none; negative: none.
	Settle time.Duration
	// Out receives the worker command to run. Default os.Stdout.
	Out io.Writer
}

// Cluster is the server side: the NATS connection, the workers known and the executor of the
// server's run queue (server.Executor).
type Cluster struct {
	cfg    Config
	ns     *natsserver.Server // nil with an external server
	nc     *nats.Conn
	js     jetstream.JetStream
	stream jetstream.Stream
	tmpDir string
	local  *worker
	epoch  string // random, per Start: workers stop jobs of any other (SubjectStart)

	mu      sync.Mutex
	settled time.Time // until then, a run no machine known can run waits (Config.Settle)
	workers map[string]*worker
	refused map[string]bool // workers refused a place (hello), told once; forgotten when one leaves
	changed chan struct{}   // closed and replaced whenever a worker comes, goes or is freed
	closed  bool
	stop    context.CancelFunc
	done    sync.WaitGroup
}

// worker is a machine as the server knows it.
type worker struct {
	m     Machine
	local bool
	seen  time.Time // last announcement
	heavy bool      // reserved for a run that measures (cells.Exclusive)
	light int       // runs that time nothing running here
	slots int       // how many runs that time nothing may run side by side (Machine.Slots, capped)
	addr  string    // the network address it joined from ("" when unknown: Cluster.address)
	freed time.Time // when its last run ended, to spread runs over free machines
	gone  chan struct{}
}

// Start starts the NATS side: the embedded server (or a connection to cfg.URL), the job stream, the
// announcement listener and the watchdog that drops silent workers. Close stops it.
func Start(ctx context.Context, cfg Config) (*Cluster, error) {
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = time.Second
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
			return nil, fmt.Errorf("-%w (as a cell's machine: key)", err)
		}
	}
	c := &Cluster{cfg: cfg, workers: map[string]*worker{}, changed: make(chan struct{}), epoch: randomToken()}
	if err := c.connect(); err != nil {
		c.Close()
		return nil, err
	}
	storage := jetstream.MemoryStorage
	if cfg.DataDir != "" || cfg.URL != "" {
		storage = jetstream.FileStorage
	}
	var err error
	c.js, err = jetstream.New(c.nc)
	if err == nil {
		c.stream, err = c.js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
			Name: Stream, Subjects: []string{SubjectJobs + "*"}, Retention: jetstream.WorkQueuePolicy,
			Storage: storage, MaxMsgSize: maxJob, MaxAge: 24 * time.Hour, Description: "GPU Playground runs waiting for a worker"})
	}
	if err == nil {
		// Jobs left from before a restart have nobody waiting for them: this server's run store
		// already marked those runs interrupted, so a worker must not run them blind (measuring on a
		// machine this server now thinks is free). Queued runs survive a restart in the run store,
		// not here.
		err = c.stream.Purge(ctx)
	}
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("JetStream job stream: %w", err)
	}
	if cfg.LocalWorker {
		slots := cfg.Slots
		if slots <= 0 {
			slots = runtime.GOMAXPROCS(0)
		}
		c.local = &worker{m: describe("local-"+randomToken(), "", cfg.Local, cfg.Kinds), local: true, slots: slots, gone: make(chan struct{})}
		c.local.m.Name += " (this server)"
		c.local.m.Class = cfg.Class
		c.local.m.Slots = slots
		c.workers[c.local.m.ID] = c.local
	}
	if _, err := c.nc.Subscribe(SubjectHello+"*", c.hello); err != nil {
		c.Close()
		return nil, err
	}
	if _, err := c.nc.Subscribe(SubjectBye+"*", c.bye); err != nil {
		c.Close()
		return nil, err
	}
	c.announce()
	wctx, stop := context.WithCancel(context.Background())
	c.stop = stop
	c.done.Add(1)
	go func() {
		defer c.done.Done()
		c.watchdog(wctx)
	}()
	if cfg.Settle > 0 {
		c.mu.Lock()
		c.settled = time.Now().Add(cfg.Settle)
		c.mu.Unlock()
		c.done.Add(1)
		go func() { // then the runs still waiting for a machine that has not come are looked at again
			defer c.done.Done()
			select {
			case <-time.After(cfg.Settle):
				c.mu.Lock()
				c.broadcast()
				c.mu.Unlock()
			case <-wctx.Done():
			}
		}()
	}
	return c, nil
}

// connect starts the embedded server and connects to it in process, or connects to cfg.URL.
func (c *Cluster) connect() error {
	opts := []nats.Option{nats.Name("playground server"), nats.MaxReconnects(-1)}
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
	o := &natsserver.Options{
		ServerName: "playground", JetStream: true, MaxPayload: MaxPayload, NoSigs: true, NoLog: true,
		CustomClientAuthentication: &auth{token: c.cfg.Token, internal: internal}, AlwaysEnableNonce: true,
		// Connections to the workers' port, authenticated or not, are capped so that a flood of
		// them cannot use up the process's open files, which the web server shares
		// (docs/security.md).
		MaxConn: MaxNATSConns,
	}
	if c.cfg.DataDir != "" {
		o.StoreDir = filepath.Join(c.cfg.DataDir, "nats")
	} else {
		dir, err := os.MkdirTemp("", "playground-nats-")
		if err != nil {
			return fmt.Errorf("embedded NATS server: a folder for its store: %w", err)
		}
		c.tmpDir, o.StoreDir = dir, dir
	}
	if c.cfg.Listen == "" {
		o.DontListen = true
	} else {
		host, port, err := net.SplitHostPort(c.cfg.Listen)
		if err != nil {
			return fmt.Errorf("-nats-listen %q: %w", c.cfg.Listen, err)
		}
		o.Host = host
		if o.Port, err = strconv.Atoi(port); err != nil {
			return fmt.Errorf("-nats-listen %q: port: %w", c.cfg.Listen, err)
		}
		if o.Port == 0 {
			o.Port = natsserver.RANDOM_PORT
		}
	}
	if (c.cfg.TLSCert == "") != (c.cfg.TLSKey == "") {
		return errors.New("give both -tls-cert and -tls-key, or neither")
	}
	if c.cfg.TLSCert != "" {
		cert, err := tls.LoadX509KeyPair(c.cfg.TLSCert, c.cfg.TLSKey)
		if err != nil {
			return fmt.Errorf("embedded NATS server: loading the TLS certificate and key: %w", err)
		}
		o.TLS, o.TLSTimeout = true, 5
		o.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
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

// Machines lists the workers known now, this server's own first.
func (c *Cluster) Machines() []Machine {
	c.mu.Lock()
	defer c.mu.Unlock()
	var ms []Machine
	if c.local != nil {
		ms = append(ms, c.local.m)
	}
	for _, w := range c.workers {
		if !w.local {
			ms = append(ms, w.m)
		}
	}
	return ms
}

// announced reads the Machine of a hello or bye (prefix): ok only when its ID is the subject's
// last token, which on the embedded server only that worker may publish to.
func announced(msg *nats.Msg, prefix string) (m Machine, ok bool) {
	if json.Unmarshal(msg.Data, &m) != nil || m.ID == "" || msg.Subject != prefix+m.ID {
		return m, false
	}
	return m, true
}

// Caps of the table of machines (hello).
const (
	// maxWorkers bounds the machines one server keeps track of.
	maxWorkers = 1000
	// MaxPerAddress bounds the machines that join from one network address (the source IP of their
	// NATS connections to the embedded server). Every worker shares the one worker token and makes
	// its own nkey, so an address is the only thing one token holder cannot multiply at will: one
	// of them cannot fill the table and leave no room for the real workers.
	MaxPerAddress = 8
)

// hello records a worker's announcement: a new worker joins, a known one stays alive. One whose
// Machine.ID is not its subject's (another worker's, or this server's own) is ignored. A new
// worker's announcement is cleaned (cleanMachine) and its name made unique (uniqueName); one the
// table has no room for (admit) is refused, and the operator told why, once per worker.
func (c *Cluster) hello(msg *nats.Msg) {
	m, ok := announced(msg, SubjectHello)
	if !ok {
		return
	}
	c.mu.Lock()
	w, refused := c.workers[m.ID], c.refused[m.ID]
	if w != nil {
		w.seen = time.Now()
	}
	c.mu.Unlock()
	if w != nil || refused {
		return
	}
	addr := c.address(m.ID) // outside c.mu: it asks the embedded NATS server
	m = cleanMachine(m)
	if m.Class != "" && cells.CheckClass(m.Class) != nil { // not one a page or cell could name
		m.Class = ""
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || c.workers[m.ID] != nil {
		return
	}
	m.Name, m.claimed = c.uniqueName(m.Name, m.ID), true
	if why := c.admit(addr); why != "" {
		if c.refused == nil || len(c.refused) >= maxWorkers {
			c.refused = map[string]bool{}
		}
		c.refused[m.ID] = true
		c.say("machine refused: %s (worker %s): %s", m.Summary(), shortID(m.ID), why)
		return
	}
	// w.m never changes after this: an id is one worker process
	w = &worker{m: m, addr: addr, slots: capSlots(m.Slots), seen: time.Now(), gone: make(chan struct{})}
	c.workers[m.ID] = w
	c.say("machine joined: %s", m.Summary())
	c.broadcast()
	// A worker new to this server may have been another's (a restart): it stops that one's jobs.
	c.announce()
}

// admit says why a new worker joining from addr ("" when unknown) has no room in the table, or ""
// when it has: at most maxWorkers machines, and at most MaxPerAddress from one address. c.mu is held.
func (c *Cluster) admit(addr string) string {
	if len(c.workers) >= maxWorkers {
		return fmt.Sprintf("this server already has %d machines, its most", maxWorkers)
	}
	if addr == "" {
		return ""
	}
	n := 0
	for _, w := range c.workers {
		if w.addr == addr {
			n++
		}
	}
	if n >= MaxPerAddress {
		return fmt.Sprintf("%d machines already joined from %s, the most from one address", n, addr)
	}
	return ""
}

// address is the network address worker id connects to the embedded NATS server from, as
// MaxPerAddress counts it: an IPv4 address, or an IPv6 address's /64 (one host's, or one site's,
// usual share); "" with an external NATS server, or for a connection in process.
func (c *Cluster) address(id string) string {
	if c.ns == nil {
		return ""
	}
	cz, err := c.ns.Connz(&natsserver.ConnzOptions{User: id, Limit: 1})
	if err != nil || len(cz.Conns) == 0 {
		return ""
	}
	return addressOf(cz.Conns[0].IP)
}

// addressOf is the address MaxPerAddress counts for the client IP ip (address).
func addressOf(ip string) string {
	parsed := net.ParseIP(ip)
	switch {
	case parsed == nil:
		return ip
	case parsed.To4() != nil:
		return parsed.To4().String() // ::ffff:10.0.0.5 is 10.0.0.5
	}
	return parsed.Mask(net.CIDRMask(64, 128)).String() + "/64"
}

// uniqueName is name, a new worker's (id), unless a machine known already has it or it claims to be
// this server: then name and the start of the worker's id, so that no worker passes for another
// machine or for this server in results and the machine menu. c.mu is held.
func (c *Cluster) uniqueName(name, id string) string {
	taken := indexFold(name, "this server") >= 0
	for _, w := range c.workers {
		taken = taken || strings.EqualFold(w.m.Name, name)
	}
	if !taken {
		return name
	}
	return replaceFold(name, "this server", "a worker") + " [" + shortID(id) + "]"
}

// shortID is the start of a worker's id (its public nkey) as the operator sees it.
func shortID(id string) string { return cleanLine(id[:min(len(id), 12)], 12) }

// MaxSlots caps the runs that time nothing one worker runs side by side: a worker refuses a larger
// -slots, and the server counts a larger announcement as MaxSlots.
const MaxSlots = 64

// capSlots is how many runs that time nothing the server sends a worker that announced slots at
// once: 1 for none (a worker from before Machine.Slots, which runs one run at a time), at most
// MaxSlots.
func capSlots(slots int) int {
	return min(max(slots, 1), MaxSlots)
}

// announce publishes this server's epoch (SubjectStart): a worker stops the jobs it still runs for
// a server before this one, whose events nobody waits for.
func (c *Cluster) announce() {
	if c.nc == nil {
		return
	}
	data, _ := json.Marshal(start{Epoch: c.epoch})
	_ = c.nc.Publish(SubjectStart, data)
}

// bye forgets a worker that stopped cleanly.
func (c *Cluster) bye(msg *nats.Msg) {
	m, ok := announced(msg, SubjectBye)
	if !ok {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if w := c.workers[m.ID]; w != nil && !w.local {
		c.drop(w)
	}
}

// drop forgets w and tells its run it is gone; c.mu is held.
func (c *Cluster) drop(w *worker) {
	c.say("machine left: %s", w.m.Name)
	delete(c.workers, w.m.ID)
	c.refused = nil // there is room again: the workers refused try again at their next heartbeat
	close(w.gone)
	c.broadcast()
}

// say prints a line for the operator (Config.Out), if there is one.
func (c *Cluster) say(format string, args ...any) {
	if c.cfg.Out != nil {
		fmt.Fprintf(c.cfg.Out, format+"\n", args...)
	}
}

// broadcast wakes everything waiting for a machine; c.mu is held.
func (c *Cluster) broadcast() {
	close(c.changed)
	c.changed = make(chan struct{})
}

// watchdog drops workers silent for three heartbeats.
func (c *Cluster) watchdog(ctx context.Context) {
	t := time.NewTicker(c.cfg.Heartbeat / 2)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			c.mu.Lock()
			for _, w := range c.workers {
				if !w.local && now.Sub(w.seen) > 3*c.cfg.Heartbeat {
					c.drop(w)
				}
			}
			c.mu.Unlock()
		}
	}
}

// Close stops the watchdog, drains the connection and stops the embedded server.
func (c *Cluster) Close() {
	c.mu.Lock()
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

// pick reserves a free worker for n, not one of except: the whole machine for a run that measures
// (exclusive), one of its slots for one that times nothing; nil when none is free now. drain then
// reports that an able machine is busy only with runs that time nothing. A run that needs a GPU
// goes only to machines with one, unless no machine known has one (then it runs anywhere and says
// why its GPU kernels did not run, as on one machine). A run that asks for a class of machine goes
// only to machines of that class. Among the free machines, a run that measures takes the one free
// longest; a run that times nothing takes a free slot on a machine already running such runs (the
// fullest) before an idle machine, so that idle machines stay free for measuring runs. c.mu is held.
func (c *Cluster) pick(n cells.Needs, exclusive bool, except map[string]bool) (best *worker, drain bool) {
	able := func(w *worker) bool { return w.m.Meets(n) }
	if !c.able(n, except) {
		able = func(w *worker) bool { return n.Machine == "" || w.m.Class == n.Machine }
	}
	for _, w := range c.workers {
		if except[w.m.ID] || !able(w) {
			continue
		}
		if !w.free(exclusive) {
			drain = drain || exclusive && !w.heavy && w.light > 0
			continue
		}
		if best == nil || better(w, best, exclusive) {
			best = w
		}
	}
	if best != nil {
		best.take(exclusive)
		drain = false
	}
	return best, drain
}

// better reports whether the free machine a suits a run (exclusive: one that measures) better than
// the free machine b (pick); c.mu is held.
func better(a, b *worker, exclusive bool) bool {
	if !exclusive && a.light != b.light {
		return a.light > b.light
	}
	return a.freed.Before(b.freed)
}

// free reports whether w can take a run now: a run that measures only an idle machine, one that
// times nothing a free slot beside others like it; c.mu is held.
func (w *worker) free(exclusive bool) bool {
	switch {
	case w.heavy:
		return false
	case exclusive:
		return w.light == 0
	default:
		return w.light < w.slots
	}
}

// take reserves w for a run; c.mu is held.
func (w *worker) take(exclusive bool) {
	if exclusive {
		w.heavy = true
	} else {
		w.light++
	}
}

// tryAcquire reserves a worker for n if one is free now (pick); err when none can ever take it.
func (c *Cluster) tryAcquire(n cells.Needs, exclusive bool, except map[string]bool) (w *worker, drain bool, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, false, errors.New("the cluster is shutting down")
	}
	if time.Now().Before(c.settled) && !c.able(n, except) {
		return nil, false, nil // its machine may be rejoining after a restart (Config.Settle)
	}
	if n.Machine != "" && !c.hasClass(n.Machine, except) {
		return nil, false, fmt.Errorf("no machine of class %q is connected (classes now: %s): pick another in the page's machine menu, or change or remove the cell's machine: key", n.Machine, c.classes())
	}
	w, drain = c.pick(n, exclusive, except)
	return w, drain, nil
}

// acquire waits until pick finds a worker, or ctx ends.
func (c *Cluster) acquire(ctx context.Context, n cells.Needs, exclusive bool, except map[string]bool) (*worker, error) {
	for {
		ch := c.Changed()
		w, _, err := c.tryAcquire(n, exclusive, except)
		if err != nil || w != nil {
			return w, err
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	}
}

// Changed returns a channel closed when a worker comes, goes or is freed (server.Executor).
func (c *Cluster) Changed() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.changed
}

// another reports whether a machine not in except that may run a run with needs n is connected
// (busy or free). c.mu is not held.
func (c *Cluster) another(n cells.Needs, except map[string]bool) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, w := range c.workers {
		if !except[w.m.ID] && (n.Machine == "" || w.m.Class == n.Machine) {
			return true
		}
	}
	return false
}

// able reports whether a machine with what n asks for is connected, not one of except; c.mu is held.
func (c *Cluster) able(n cells.Needs, except map[string]bool) bool {
	for _, w := range c.workers {
		if w.m.Meets(n) && !except[w.m.ID] {
			return true
		}
	}
	return false
}

// hasClass reports whether a machine of class is connected, not one of except; c.mu is held.
func (c *Cluster) hasClass(class string, except map[string]bool) bool {
	for _, w := range c.workers {
		if w.m.Class == class && !except[w.m.ID] {
			return true
		}
	}
	return false
}

// classes lists the classes of the machines connected, or says there are none; c.mu is held.
func (c *Cluster) classes() string {
	var cs []string
	for _, w := range c.workers {
		if w.m.Class != "" && !slices.Contains(cs, w.m.Class) {
			cs = append(cs, w.m.Class)
		}
	}
	if len(cs) == 0 {
		return "none"
	}
	slices.Sort(cs)
	return strings.Join(cs, ", ")
}

// release frees what a run held of w.
func (c *Cluster) release(w *worker, exclusive bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if exclusive {
		w.heavy = false
	} else if w.light > 0 {
		w.light--
	}
	w.freed = time.Now()
	c.broadcast()
}

// MaxNATSConns is the most connections the embedded NATS server accepts (workers, each a
// connection or two, and the server's own): the machine table holds 1,000 machines, but 8 per
// address; 512 keeps the open files that connections can take below the web server's headroom.
const MaxNATSConns = 512
