// Package server serves the lessons over HTTP and runs their experiments for websocket clients,
// streaming progress, results and charts as they are measured: runs that measure one at a time with
// the machine to themselves, runs that time nothing on free cores beside each other, each kind served
// round-robin over students. With a class token, students sign in (access.go); their runs, edits and
// every message a run sent are kept in package store, so a run outlives its page (runs.go).
package server

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"io/fs"
	"log"
	"net"
	"net/http"
	"os"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/cli/browser"
	"github.com/gpuplayground/playground/cells"
	"github.com/gpuplayground/playground/estimate"
	"github.com/gpuplayground/playground/gpu"
	"github.com/gpuplayground/playground/gpu/nvidia"
	"github.com/gpuplayground/playground/harness"
	"github.com/gpuplayground/playground/lessons"
	"github.com/gpuplayground/playground/machine"
	"github.com/gpuplayground/playground/static"
	"github.com/gpuplayground/playground/store"
)

// The disk guard's defaults (Config.MinFreeBytes, Config.MaxFreeBytes; store.DiskGuard.Need):
// 5 % of the data disk kept free, but never less than 64 MiB nor more than 1 GiB. The floor is
// what the store may write between one check and the next with room to spare: SQLite's
// write-ahead log before a checkpoint (about 4 MiB at its default 1,000 pages), and the results of
// the runs in flight, each student's at most Config.StudentQuota (20 MiB). The cap keeps a large
// disk usable: 1 GiB is hundreds of classes' worth of runs, where 5 % of 1 TB would be 50 GB.
const (
	DefaultMinFreeBytes = 64 << 20
	DefaultMaxFreeBytes = 1 << 30
)

// Config is everything the server needs; cmd/playground fills it from flags and tests build their own.
type Config struct {
	// Addr is the listen address, host:port. Default 127.0.0.1:8080.
	Addr string
	// Listener, if set, is where Run serves, instead of a listener it opens on Addr (tests take a
	// free port this way).
	Listener net.Listener
	// LessonsDir, if set, serves lessons from this directory (re-read on change) instead of the
	// embedded ones.
	LessonsDir string
	// Open opens the index in the default browser once listening.
	Open bool
	// TLSCert and TLSKey, if both set, are PEM files of a certificate and its key: the server then
	// speaks https (and wss), which browsers on other machines need for WebGPU (a secure context).
	TLSCert, TLSKey string
	// Out receives the URL and warnings. Default os.Stdout.
	Out io.Writer
	// MaxConns bounds the websocket connections of the whole server (default 1000);
	// MaxConnsPerClient and MaxRunsPerClient bound one client's (one remote address's) connections
	// and queued or running runs (defaults 16 and 8).
	MaxConns, MaxConnsPerClient, MaxRunsPerClient int
	// RunBurst and RunRate bound how fast one client (the share of MaxRunsPerClient) may ask for
	// work: every run request, action and shared-result reply takes a token from the client's
	// bucket of RunBurst tokens (default 20), refilled at RunRate tokens per second (default 1); a
	// request that finds none is refused with an error saying so. Negative RunRate: no rate limit.
	RunBurst int
	RunRate  float64
	// SaveBurst and SaveRate bound how fast one client may send save messages (an edit kept) and,
	// in a bucket of their own, replay messages (a kept run shown again): SaveBurst at once (default
	// 30), then SaveRate per second (default 4); past it the message is refused with an error saying
	// so. Negative SaveRate: no limit.
	SaveBurst int
	SaveRate  float64
	// StudentQuota bounds what one student's runs (their sources) and the messages they keep take
	// in the store, in bytes (default 20 MiB): past it, the messages of the student's oldest
	// finished runs are pruned (each keeps its end and a note saying so), and when that is not
	// enough, the student's new runs are refused. Negative: no quota.
	StudentQuota int64
	// MinFreeBytes, MaxFreeBytes and MinFreePercent: while the data directory's disk has less free
	// than MinFreePercent percent of its size (default 5), but at least MinFreeBytes (default 64
	// MiB) and at most MaxFreeBytes (default 1 GiB), new runs, joins and edits are refused with one
	// message saying so; reading runs goes on (store.DiskGuard.Need). Negative MinFreeBytes: never
	// refused; negative MinFreePercent: MinFreeBytes alone; negative MaxFreeBytes: no cap.
	MinFreeBytes   int64
	MaxFreeBytes   int64
	MinFreePercent float64
	// FreeSpace reports the free and total bytes of the file system of dir (DataDir). Default:
	// store.DiskFree where DataDir is set, else nothing is checked; tests inject it.
	FreeSpace func(dir string) (free, total uint64, err error)

	// DataDir holds the database of students, edits, runs and their messages (package store). Empty:
	// an in-memory database that keeps nothing after the server stops (tests); cmd/playground
	// defaults it to store.DefaultDir. A directory that cannot be written stops start-up.
	DataDir string
	// Token, if set, is the class token that students join with (POST /join), required on every
	// page, API call and websocket even on a loopback address. On a non-loopback address without
	// one, Run generates it and prints it in the URL (?token=…).
	Token string
	// InstructorToken signs in an instructor (/class); generated with Token when empty.
	InstructorToken string
	// Grace is how long a student may be away (no connection) before their queued and running runs
	// are cancelled. Default 60 s; negative: at once.
	Grace time.Duration
	// ShareWindow: in a class (students sign in), a run of a cell's unedited source that measures gets, instead of a new
	// measurement, the results of the latest such run this server measured within the window
	// (labelled with when and on what). Default 10 minutes; negative: never shared.
	ShareWindow time.Duration
	// PageGone is how long a run that waits for its page's answer to a browser task (cells.Ask)
	// goes on waiting once no page shows it (closed, or its student on another lesson): then the
	// wait ends with a *cells.PageError, so that it does not hold the machine until the grace period
	// or the run's time limit. A page that attaches in time (a replay) gets the task. Default
	// DefaultPageGone; negative: at once.
	PageGone time.Duration
	// SessionTTL is how long a session signs its student in, from when they joined; then the
	// cookie is refused and they join again (under another name). Default 7 days.
	SessionTTL time.Duration
	// MaxStudents caps the students of the class (instructors and removed students not counted);
	// a join past it is refused. Default 200.
	MaxStudents int
	// JoinsPerAddress, when positive, is how many new students one address may join per JoinWindow
	// (a token bucket: that many at once, then one more every JoinWindow/JoinsPerAddress; default
	// window 10 minutes). Default 0: no limit, since a class in one room often reaches the server
	// through one NAT address; one student's many names are bounded by MaxStudents and seen, and
	// removed or blocked, on /class. Instructors are not counted.
	JoinsPerAddress int
	JoinWindow      time.Duration
	// JoinAttempts is how many wrong sign-in tokens (posted to /join, or in a page's ?token=) one
	// address may send at once; then one more every 3 s, and past that a wrong token is answered 429.
	// The right token is never refused for it, and a request another site's page made (Fetch
	// Metadata's Sec-Fetch-Site) uses none up. Default 20.
	JoinAttempts int
	// ReadHeaderTimeout, ReadTimeout, WriteTimeout and IdleTimeout are http.Server's, for every
	// connection: a request's header must arrive within ReadHeaderTimeout of the connection or of
	// its previous request (default 10 s), the whole request within ReadTimeout (default 30 s), the
	// response be written within WriteTimeout (default 2 min), and a kept-alive connection waits at
	// most IdleTimeout for its next request (default 60 s). A websocket, once upgraded, has its own
	// deadlines instead (ws.go).
	ReadHeaderTimeout, ReadTimeout, WriteTimeout, IdleTimeout time.Duration
	// PaceWait is how long a run's output waits for a websocket client with half its send buffer
	// unread to read it down below half, before the client is dropped as fallen behind. Default
	// 2 s.
	PaceWait time.Duration
	// MaxOpenConns caps the open connections (default: the open-file limit, raised to its hard
	// limit at start, less 128 kept for the database, workers and the like; at least 64).
	// MaxPreAuthConns caps those not signed in yet (no request with a valid session; default 512,
	// at most half of MaxOpenConns) and MaxPreAuthPerAddress those of one address (an IPv4 address
	// or an IPv6 /64; default 64). At a cap (MaxOpenConns included), the oldest connection between
	// requests, signed in or not, or not signed in and stalled in a request (PreAuthRequestTimeout),
	// is closed to make room, else the new one is refused (conns.go).
	MaxOpenConns, MaxPreAuthConns, MaxPreAuthPerAddress int
	// MaxHTTPConnsPerStudent caps a signed-in student's HTTP connections (websockets are
	// MaxConnsPerClient's): at it, the student's oldest idle one is closed to make room, else the
	// request is refused with 429. Default 16.
	MaxHTTPConnsPerStudent int
	// PreAuthRequestTimeout bounds a request on a connection not signed in once its header has
	// arrived: POST /join's body must arrive within it (else 400), and at a cap of connections not
	// signed in, one whose request has been under way longer may be closed to make room (a body
	// that trickles in). Default 5 s.
	PreAuthRequestTimeout time.Duration
	// Config is this server's own machine (machine.New builds it from MachineConfig): its kinds
	// (default builtin.Kinds; tests add their own: the server knows kinds only through them), its
	// limits of a run (zero fields: harness.DefaultLimits), its GPU worker (default this
	// executable's hidden gpu-worker subcommand, so a program that builds a Server calls
	// gpu.ServeChild first thing in main, and in TestMain), its device report (tests), roofline
	// options, noise check (the playground command uses harness.DefaultNoise), slots for runs that
	// time nothing (default GOMAXPROCS; a run that measures takes every slot) and whether the run
	// queue's first job calibrates the rates behind every run estimate (machine.Machine.Calibrate;
	// cmd/playground turns it on, tests leave it off).
	machine.Config
	// Machine, if set, is this machine's runner (package machine), built from MachineConfig by the
	// caller (package app, which shares its gate with the cluster); the machine configuration is then
	// the one it was built with. Default: built by New.
	Machine *machine.Machine
	// Executor is where runs execute. Default: in this process (NewInProcess with Slots): one run
	// that measures at a time, or up to Slots that time nothing; package cluster spreads them over
	// several machines.
	Executor Executor
}

func (c Config) withDefaults() Config {
	c.Limits = c.Limits.WithDefaults()
	if c.Addr == "" {
		c.Addr = "127.0.0.1:8080"
	}
	c.Kinds = machine.Kinds(c.Kinds)
	if c.MaxConns <= 0 {
		c.MaxConns = 1000
	}
	if c.MaxConnsPerClient <= 0 {
		c.MaxConnsPerClient = 16
	}
	if c.MaxRunsPerClient <= 0 {
		c.MaxRunsPerClient = 8
	}
	if c.RunBurst <= 0 {
		c.RunBurst = 20
	}
	if c.RunRate == 0 {
		c.RunRate = 1
	}
	if c.SaveBurst <= 0 {
		c.SaveBurst = 30
	}
	if c.SaveRate == 0 {
		c.SaveRate = 4
	}
	if c.StudentQuota == 0 {
		c.StudentQuota = 20 << 20
	}
	if c.MinFreeBytes == 0 {
		c.MinFreeBytes = DefaultMinFreeBytes
	}
	if c.MaxFreeBytes == 0 {
		c.MaxFreeBytes = DefaultMaxFreeBytes
	}
	if c.MinFreePercent == 0 {
		c.MinFreePercent = 5
	}
	if c.FreeSpace == nil && c.DataDir != "" {
		c.FreeSpace = store.DiskFree
	}
	if c.Out == nil {
		c.Out = os.Stdout
	}
	if c.Grace == 0 {
		c.Grace = 60 * time.Second
	}
	if c.ShareWindow == 0 {
		c.ShareWindow = 10 * time.Minute
	}
	if c.PageGone == 0 {
		c.PageGone = DefaultPageGone
	}
	if c.Slots <= 0 {
		c.Slots = runtime.GOMAXPROCS(0)
	}
	c = c.identityDefaults()
	if c.GPU == nil {
		c.GPU = machine.SelfGPU()
	}
	return c
}

// MachineConfig is the configuration of this server's own machine (machine.New), with its
// defaults.
func (c Config) MachineConfig() machine.Config {
	return c.withDefaults().Config
}

// Server is the playground: its lessons, its run queue and its connections.
type Server struct {
	cfg     Config
	library lessons.Library
	// renamed are the lessons' and cells' former names: old lesson URLs redirect, and what the store
	// keeps under them is moved to the current names at start (renamed.go).
	renamed lessons.Renamed
	// mach runs the runs here: the GPU, the kinds' environment and the gate of this machine.
	mach *machine.Machine
	// kinds are the cell kinds, with this server's limits (mach.Kinds).
	kinds   []cells.Kind
	queue   *queue
	pages   *template.Template
	machine string
	gpu     *gpu.Machine
	// roof holds this machine's roofline ceilings, measured by the first run that needs them.
	roof cells.Roofline
	// rates price runs before they run: the defaults until the calibration job installs this
	// machine's (Config.Calibrate).
	rates *estimate.Current

	shares *shares
	// search is the index page's search index (search.go), built at start for the embedded
	// lessons; nil for a lesson directory.
	search []byte
	store  *store.Store
	// signIn is set when students must join (a token is set); local is then unused, else it is the
	// one student everyone is.
	signIn bool
	local  store.Student
	sess   sessions
	here   presence
	live   sync.Map // stored run id → *job, while queued or running
	online online
	// loopbackOnly is set when the listener is on loopback: then Host headers must name loopback.
	loopbackOnly bool
	// joins and attempts limit, per address, new students (nil: no limit) and wrong sign-in
	// tokens; connLimits counts the connections (conns.go).
	joins, attempts *addrLimits
	connLimits      *connLimits
	// removed holds the ids of students the instructor removed (int64 → true): their open
	// websockets take no more requests (ws.go) until they are closed.
	removed sync.Map
	// verdicts caches the progress grid's challenge verdicts of finished runs (progress.go).
	verdicts verdicts

	// connBase is the parent of every connection's context; it ends after the run queue has sent
	// every run's terminal message.
	connBase  context.Context
	stopConns context.CancelCauseFunc
	sockets   sockets
}

//go:embed templates/*.html
var templateFS embed.FS

// New loads and renders the lessons (an error names file:line) and prepares the server.
func New(cfg Config) (*Server, error) {
	cfg = cfg.withDefaults()
	s := &Server{
		cfg:        cfg,
		machine:    machineSummary(),
		shares:     newShares(cfg),
		attempts:   newAddrLimits(joinAttemptEvery, cfg.JoinAttempts, maxAddrLimits),
		connLimits: newConnLimits(cfg.MaxOpenConns, cfg.MaxPreAuthConns, cfg.MaxPreAuthPerAddress, cfg.MaxHTTPConnsPerStudent, cfg.PreAuthRequestTimeout),
	}
	if cfg.JoinsPerAddress > 0 {
		s.joins = newAddrLimits(cfg.JoinWindow/time.Duration(cfg.JoinsPerAddress), cfg.JoinsPerAddress, maxAddrLimits)
	}
	s.mach = cfg.Machine
	if s.mach == nil {
		s.mach = machine.New(context.Background(), cfg.MachineConfig())
	}
	s.gpu, s.roof, s.rates, s.kinds = s.mach.GPU, s.mach.Env.Roofline, s.mach.Env.Rates, s.mach.Kinds
	// Lesson cells must run on a server with the default limits, whatever this one's flags say; a
	// learner's run is checked against this server's limits.
	lessonKinds := lessons.Kinds(s.mach.KindsWith(harness.DefaultLimits()))
	if cfg.LessonsDir != "" {
		d, err := lessons.OpenDir(cfg.LessonsDir, lessonKinds)
		if err != nil {
			return nil, err
		}
		s.library = d
		if s.renamed, err = lessons.LoadRenamed(os.DirFS(cfg.LessonsDir), d.Lessons()); err != nil {
			return nil, err
		}
	} else {
		ls, err := lessons.Load(lessons.Embedded, lessonKinds)
		if err != nil {
			return nil, err
		}
		s.library = lessons.Fixed(ls)
		s.search = searchIndex(ls)
		if s.renamed, err = lessons.LoadRenamed(lessons.Embedded, ls); err != nil {
			return nil, err
		}
	}
	var err error
	s.pages, err = template.New("").Funcs(template.FuncMap{"lower": strings.ToLower}).ParseFS(templateFS, "templates/*.html")
	if err != nil {
		return nil, err
	}
	exec := cfg.Executor
	if exec == nil {
		exec = machine.NewLocal(s.mach) // this machine's runner, in process
	}
	if _, ok := exec.(Estimator); ok {
		// Runs go to machines that price them with their own rates: a learner's run is parsed
		// with this server's kinds without their time limit, and its estimate on the machines that
		// can take it is compared with the limit (parse, estimateOf).
		lifted := s.mach.Env.Limits
		lifted.RunTimeout = machine.NoTimeLimit
		s.kinds = s.mach.KindsWith(lifted)
	}
	s.queue = newQueue(cfg.Limits.RunTimeout, exec)
	s.queue.say = func(format string, args ...any) { fmt.Fprintf(s.cfg.Out, format+"\n", args...) }
	s.connBase, s.stopConns = context.WithCancelCause(context.Background())
	if err := s.openStore(); err != nil {
		return nil, err
	}
	s.queue.keepWaiting = s.store.Path() != "" // the next server on this data directory runs them
	return s, nil
}

// openStore opens the database and finds (or adds) the local student.
func (s *Server) openStore() error {
	st, err := store.Open(s.cfg.DataDir)
	if err != nil {
		return err
	}
	s.store = st
	if err := s.moveRenamed(st); err != nil {
		st.Close()
		return fmt.Errorf("database %s: moving runs and edits to renamed lessons: %w", st.Path(), err)
	}
	if s.cfg.MinFreeBytes >= 0 {
		st.SetDiskGuard(store.DiskGuard{Dir: s.cfg.DataDir, Free: s.cfg.FreeSpace, MinFreeBytes: uint64(s.cfg.MinFreeBytes),
			MaxFreeBytes: uint64(max(s.cfg.MaxFreeBytes, 0)), MinFreePercent: s.cfg.MinFreePercent})
	}
	s.sess.m = map[string]store.Student{}
	s.here = presence{conns: map[string]int{}, timers: map[string]*time.Timer{}}
	s.online.conns = map[*conn]string{}
	s.signIn = s.cfg.Token != ""
	ctx := context.Background()
	local, ok, err := st.StudentByName(ctx, localName)
	if err == nil && !ok {
		local, err = st.AddStudent(ctx, localName, newToken(), true)
	}
	if err != nil {
		st.Close()
		return fmt.Errorf("database %s: %w", st.Path(), err)
	}
	local.Instructor = true // the person at the server's own machine
	s.local = local
	return nil
}

// where describes the machine a run runs on, as kept with the run.
func (s *Server) where() string {
	return "CPU: " + s.machine + "; GPU: " + s.gpu.Report.Summary()
}

// Run listens on cfg.Addr, prints the URL, and serves until ctx ends; see Serve.
func Run(ctx context.Context, cfg Config) error {
	s, err := New(cfg)
	if err != nil {
		return err
	}
	ln, scheme, err := listen(s.cfg, s.connLimits)
	if err != nil {
		return err
	}
	url := scheme + "://" + ln.Addr().String() + "/"
	if ta, ok := ln.Addr().(*net.TCPAddr); ok && ta.IP.IsUnspecified() {
		// Listening on every interface: this machine reaches itself on loopback.
		url = fmt.Sprintf("%s://127.0.0.1:%d/", scheme, ta.Port)
	}
	if !loopback(ln.Addr()) && !s.signIn { // a class: students join with a token
		s.cfg.Token, s.signIn = newToken(), true
	}
	weak := weakTokens(s.cfg.Token, s.cfg.InstructorToken) // the operator's: a generated token is long enough
	if s.signIn && s.cfg.InstructorToken == "" {
		s.cfg.InstructorToken = newToken()
	}
	if s.signIn {
		fmt.Fprintf(s.cfg.Out, "GPU Playground: %s?token=%s\n", url, s.cfg.Token)
		fmt.Fprintf(s.cfg.Out, "  students join with that link (or the token %s and a name), with this machine's address:\n", s.cfg.Token)
		for _, u := range lanURLs(scheme, ln.Addr()) {
			fmt.Fprintf(s.cfg.Out, "    %s?token=%s\n", u, s.cfg.Token)
		}
		fmt.Fprintf(s.cfg.Out, "  instructor: %sclass?token=%s\n", url, s.cfg.InstructorToken)
		fmt.Fprint(s.cfg.Out, weak)
	} else {
		fmt.Fprintf(s.cfg.Out, "GPU Playground: %s\n", url)
	}
	if p := s.store.Path(); p != "" {
		fmt.Fprintf(s.cfg.Out, "  work is kept in %s\n", p)
	}
	if s.cfg.Open {
		if err := browser.OpenURL(url); err != nil {
			fmt.Fprintf(s.cfg.Out, "could not open a browser (%v); open %s yourself\n", err, url)
		}
	}
	return s.Serve(ctx, ln)
}

func loopback(a net.Addr) bool {
	ta, ok := a.(*net.TCPAddr)
	return ok && ta.IP.IsLoopback()
}

// Serve queues again the runs a previous server on the same data directory left queued, serves on
// ln until ctx ends, then shuts down gracefully: running experiments are cancelled, queued ones stay
// queued for the next start when the store is on disk (else they are cancelled too), websockets are
// closed, and it returns nil once everything has stopped.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	s.loopbackOnly = loopback(ln.Addr())
	if !s.loopbackOnly && !s.signIn {
		return errors.New("refusing to serve a non-loopback address without a class token: use Run, or set Config.Token")
	}
	if s.signIn && s.cfg.InstructorToken == "" {
		s.cfg.InstructorToken = newToken()
	}
	s.requeue(context.Background())
	queueCtx, stopQueue := context.WithCancel(context.Background())
	queueDone := make(chan struct{})
	go func() {
		defer close(queueDone)
		if s.cfg.Calibrate { // first, before any run, so that nothing else is timing
			s.mach.Calibrate(queueCtx, s.cfg.Out)
		}
		s.queue.loop(queueCtx)
	}()
	hs := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: s.cfg.ReadHeaderTimeout, ReadTimeout: s.cfg.ReadTimeout,
		WriteTimeout: s.cfg.WriteTimeout, IdleTimeout: s.cfg.IdleTimeout, ConnContext: connContext, ConnState: trackState}
	if tl, ok := ln.(*net.TCPListener); ok { // Run's listener is counted already, under TLS
		ln = &limitListener{Listener: tl, l: s.connLimits}
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	var serveErr error
	select {
	case <-ctx.Done():
	case serveErr = <-errc:
	}
	// Shut down in order: the queue first (the running run is cancelled and sends its `cancelled`,
	// and every queued run sends its `cancelled` or, kept for the next start, a note), then the connections (each writer flushes, then closes), then HTTP.
	stopQueue()
	<-queueDone
	s.stopConns(errShutdown)
	shutCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = hs.Shutdown(shutCtx)
	s.sockets.closeAndWait()
	s.gpu.Worker.Close()
	if err := s.store.Close(); err != nil && serveErr == nil {
		serveErr = err
	}
	if errors.Is(serveErr, http.ErrServerClosed) {
		serveErr = nil
	}
	return serveErr
}

// Handler routes the server's pages (refusing foreign Host headers when bound to loopback): /, /lessons/{slug}, /static/..., /healthz, /devices (and as JSON /api/devices) and /ws.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", s.index)
	mux.HandleFunc("GET /lessons/{slug}", s.lessonPage)
	mux.Handle("GET /static/", http.StripPrefix("/static/", noListings(static.FS, revalidated(static.FS, http.FileServerFS(static.FS)))))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(w, "ok\n")
	})
	mux.HandleFunc("GET /devices", s.devicesPage)
	mux.HandleFunc("GET /api/devices", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(s.gpu.Report)
	})
	// The ceilings are measured only inside a run (the queue gives it the machine); this endpoint
	// never measures.
	mux.HandleFunc("GET /api/roofline", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		c, ok := s.roof.Peek()
		if !ok {
			w.WriteHeader(http.StatusNotFound)
			_ = json.NewEncoder(w).Encode(map[string]string{"error": "not measured yet: the first run on this server that needs the ceilings measures them"})
			return
		}
		_ = json.NewEncoder(w).Encode(c)
	})
	mux.HandleFunc("GET /cells/{file}", s.kindScript)
	mux.HandleFunc("GET /ws", s.serveWS)
	mux.HandleFunc("GET /join", s.joinForm)
	mux.HandleFunc("POST /join", s.roomForJoin(s.join))
	mux.HandleFunc("GET /api/search", s.apiSearch)
	mux.HandleFunc("GET /api/state", s.apiState)
	mux.HandleFunc("GET /api/runs", s.apiRuns)
	mux.HandleFunc("GET /api/runs.csv", s.apiRunsCSV)
	mux.HandleFunc("GET /api/machines", s.apiMachines)
	mux.HandleFunc("GET /class", s.instructorOnly(s.classPage))
	mux.HandleFunc("GET /api/class", s.instructorOnly(s.apiClass))
	mux.HandleFunc("POST /api/class/cancel", s.instructorOnly(s.classCancel))
	mux.HandleFunc("POST /api/class/pause", s.instructorOnly(s.classPause))
	mux.HandleFunc("POST /api/class/remove", s.instructorOnly(s.classRemove))
	mux.HandleFunc("POST /api/class/block", s.instructorOnly(s.classBlock))
	mux.HandleFunc("GET /api/class/progress", s.instructorOnly(s.apiClassProgress))
	mux.HandleFunc("GET /api/class/progress.csv", s.instructorOnly(s.classProgressCSV))
	mux.HandleFunc("POST /api/answers", s.apiAnswer)
	mux.HandleFunc("GET /api/class/results.csv", s.instructorOnly(s.classCSV))
	mux.HandleFunc("GET /api/class/cell", s.instructorOnly(s.apiClassCell))
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		s.page(w, http.StatusNotFound, "notfound", nil)
	})
	return securityHeaders(s.checkHost(s.access(mux)))
}

// noListings serves files of fsys with h, and 404 for a directory (no listing of what is there).
func noListings(fsys fs.FS, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := strings.TrimSuffix(r.URL.Path, "/")
		if name == "" {
			name = "."
		}
		if st, err := fs.Stat(fsys, name); err != nil || st.IsDir() || strings.HasSuffix(r.URL.Path, "/") {
			http.NotFound(w, r)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// lesson finds a lesson by slug in the current library, or nil.
func (s *Server) lesson(slug string) *lessons.Lesson {
	for _, l := range s.library.Lessons() {
		if l.Slug == slug {
			return l
		}
	}
	return nil
}

func (s *Server) index(w http.ResponseWriter, r *http.Request) {
	data := map[string]any{"Lessons": s.library.Lessons()}
	st := studentOf(r.Context())
	if st.ID != 0 {
		// The student's last lesson, read fresh (the session cache holds the student as they joined).
		if cur, ok, err := s.store.StudentByName(r.Context(), st.Name); err == nil && ok {
			if l := s.lesson(cur.Lesson); l != nil && l.Err == nil {
				data["Continue"] = l
			}
		}
	}
	s.page(w, http.StatusOK, "index", data)
}

func (s *Server) lessonPage(w http.ResponseWriter, r *http.Request) {
	ls := s.library.Lessons()
	for i, l := range ls {
		if l.Slug != r.PathValue("slug") {
			continue
		}
		if l.Err != nil {
			s.page(w, http.StatusInternalServerError, "broken", map[string]any{"Lesson": l})
			return
		}
		data := map[string]any{"Lesson": l}
		if moved := s.renamed.AnswersTo(l); moved != nil {
			b, _ := json.Marshal(moved) // a map of strings always marshals
			data["RenamedAnswers"] = string(b)
		}
		if i > 0 && ls[i-1].Err == nil {
			data["Prev"] = ls[i-1]
		}
		if i+1 < len(ls) && ls[i+1].Err == nil {
			data["Next"] = ls[i+1]
		}
		s.page(w, http.StatusOK, "lesson", data)
		return
	}
	if now, ok := s.renamed.Lesson(r.PathValue("slug")); ok {
		http.Redirect(w, r, "/lessons/"+now, http.StatusMovedPermanently)
		return
	}
	s.page(w, http.StatusNotFound, "notfound", nil)
}

func (s *Server) page(w http.ResponseWriter, status int, name string, data map[string]any) {
	if data == nil {
		data = map[string]any{}
	}
	data["Machine"] = s.machine
	data["GPU"] = s.gpu.Report.Summary()
	data["NoGPU"] = s.gpu.Unavailable() != ""
	data["GPUShort"] = nvidia.Friendly(s.gpu.Unavailable())
	data["Compiler"] = s.gpu.Report.Compiler
	data["SignIn"] = s.signIn
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	if err := s.pages.ExecuteTemplate(w, name+".html", data); err != nil {
		log.Printf("page %s: %v", name, err)
	}
}

// machineSummary describes where experiments run, e.g. "Intel(R) Xeon(R) Processor, 2 logical CPUs".
func machineSummary() string {
	model := machine.CPUModel()
	return fmt.Sprintf("%s, %d logical CPUs, %s/%s (GOMAXPROCS %d)", model, runtime.NumCPU(), runtime.GOOS, runtime.GOARCH, runtime.GOMAXPROCS(0))
}

// kindScript serves a cell kind's browser module at /cells/{kind}.js.
func (s *Server) kindScript(w http.ResponseWriter, r *http.Request) {
	name, ok := strings.CutSuffix(r.PathValue("file"), ".js")
	k, found := cells.Lookup(s.kinds, name)
	if !ok || !found {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
	serveRevalidated(w, r, name+".js", k.Script())
}

// lanURLs are the URLs other machines may reach a listener on: its own address, or for an
// unspecified one (0.0.0.0, ::) each non-loopback IPv4 address of this machine's interfaces.
func lanURLs(scheme string, a net.Addr) []string {
	ta, ok := a.(*net.TCPAddr)
	if !ok || ta.IP.IsLoopback() {
		return nil
	}
	if !ta.IP.IsUnspecified() {
		return []string{scheme + "://" + ta.String() + "/"}
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil
	}
	var out []string
	for _, ad := range addrs {
		if n, ok := ad.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() {
			out = append(out, fmt.Sprintf("%s://%s/", scheme, net.JoinHostPort(n.IP.String(), fmt.Sprint(ta.Port))))
		}
	}
	return out
}
