package gpu

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpuplayground/playground/gpu/nvidia"
)

const fakeCommand = "fake-worker"

// TestMain lets this test binary be the real worker (as cmd/playground is) or a fake one.
func TestMain(m *testing.M) {
	if strings.HasPrefix(filepath.Base(os.Args[0]), fakePtxasName) {
		fakePtxas(os.Args[1:])
		os.Exit(0)
	}
	if strings.HasPrefix(filepath.Base(os.Args[0]), fakeNvdisasmName) {
		fakeNvdisasm()
		os.Exit(0)
	}
	if ServeChild(os.Args, os.Stdin, os.Stdout) {
		os.Exit(0)
	}
	if len(os.Args) > 1 && os.Args[1] == fakeCommand {
		fakeWorker()
		os.Exit(0)
	}
	if len(os.Args) > 2 && os.Args[1] == confineCommand {
		confineProbe(os.Args[2])
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// fakeWorker misbehaves as each request's op asks: echo (answers, with its pid), hang, crash,
// flood (an endless line), junk (a non-JSON line), stderr-flood then crash, progress (6 progress
// lines, then done).
func fakeWorker() {
	enc := json.NewEncoder(os.Stdout)
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		var req Request
		_ = json.Unmarshal(sc.Bytes(), &req)
		switch req.Op {
		case "echo":
			_ = enc.Encode(Response{ID: req.ID, Done: true, Error: fmt.Sprintf("pid %d", os.Getpid())})
		case "hang":
			select {}
		case "fatal":
			_ = enc.Encode(Response{ID: req.ID, Done: true, Fatal: true, Error: "cuLaunchKernel: CUDA_ERROR_ILLEGAL_ADDRESS (700)"})
			os.Exit(1)
		case "fatal-no-done": // says it is finished, but neither ends the request nor exits
			fmt.Fprintln(os.Stderr, "context is gone")
			_ = enc.Encode(Response{ID: req.ID, Fatal: true, Error: "cuCtxSynchronize: CUDA_ERROR_LAUNCH_FAILED (719)"})
			select {}
		case "compile": // a compile that never ends, with a progress line that must not restart its limit
			_ = enc.Encode(Response{ID: req.ID, Progress: &[2]int{1, 2}})
			select {}
		case "crash":
			fmt.Fprintln(os.Stderr, "CUDA_ERROR_ILLEGAL_ADDRESS in fake kernel")
			os.Exit(3)
		case "flood":
			for {
				os.Stdout.Write(bytes.Repeat([]byte("x"), 1<<16))
			}
		case "junk":
			fmt.Println("warning: something printed to stdout")
		case "stderr-flood":
			for range 1000 {
				fmt.Fprintln(os.Stderr, strings.Repeat("noise ", 20))
			}
			fmt.Fprintln(os.Stderr, "last words")
			os.Exit(2)
		case "progress":
			for i := range 6 {
				_ = enc.Encode(Response{ID: req.ID, Progress: &[2]int{i + 1, 6}})
			}
			_ = enc.Encode(Response{ID: req.ID, Done: true})
		}
	}
}

// fakeSupervisor runs the fake worker under a fake clock: its launch time limit fires only when the
// test advances the clock, however slowly a busy machine runs the worker.
func fakeSupervisor(t *testing.T, limit time.Duration) (*Supervisor, *fakeClock) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	clk := newFakeClock()
	tr := &killOnCleanup{Transport: Exec{Path: exe, Args: []string{fakeCommand}}}
	s := &Supervisor{Transport: tr, LaunchTimeout: limit, timers: clk}
	t.Cleanup(func() {
		tr.killAll() // ends a Do that a bug left waiting, so that Close can take the lock
		s.Close()
	})
	return s, clk
}

// killOnCleanup is a Transport that remembers its workers so that a failed test can kill them.
type killOnCleanup struct {
	Transport
	mu    sync.Mutex
	conns []Conn
}

func (k *killOnCleanup) Start() (Conn, error) {
	c, err := k.Transport.Start()
	if err == nil {
		k.mu.Lock()
		k.conns = append(k.conns, c)
		k.mu.Unlock()
	}
	return c, err
}

func (k *killOnCleanup) killAll() {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, c := range k.conns {
		c.Kill()
	}
}

// echoPID runs an echo request and returns the worker's pid (which it sends as its "error").
func echoPID(t *testing.T, s *Supervisor) string {
	t.Helper()
	err := s.Do(context.Background(), Request{Op: "echo"}, func(Response) {})
	if err == nil || !strings.HasPrefix(err.Error(), "pid ") {
		t.Fatalf("echo: got %v, want the worker's pid", err)
	}
	return err.Error()
}

// doAsync runs s.Do in a goroutine; await takes its error.
func doAsync(ctx context.Context, s *Supervisor, op string) <-chan error {
	errc := make(chan error, 1)
	go func() { errc <- s.Do(ctx, Request{Op: op}, func(Response) {}) }()
	return errc
}

// await returns Do's error. Its 30 s bound only turns a hang into a failure; it is no time budget.
func await(t *testing.T, errc <-chan error) error {
	t.Helper()
	select {
	case err := <-errc:
		return err
	case <-time.After(30 * time.Second):
		t.Fatal("Do did not return in 30 s")
		return nil
	}
}

func TestSupervisorReusesAHealthyWorker(t *testing.T) {
	s, _ := fakeSupervisor(t, time.Second)
	if a, b := echoPID(t, s), echoPID(t, s); a != b {
		t.Errorf("got workers %s and %s, want one reused", a, b)
	}
}

// A worker that dies or breaks the protocol is reported as such. The fake clock never moves, so
// no error here can be a time limit that a busy machine ran into.
func TestSupervisorSurvivesBadWorkers(t *testing.T) {
	tests := []struct {
		op, kind string
		want     []string
	}{
		{"crash", "crashed", []string{"exit status 3", "CUDA_ERROR_ILLEGAL_ADDRESS in fake kernel"}},
		{"flood", "protocol", []string{"broke the protocol"}},
		{"junk", "protocol", []string{"not a response line", "warning: something printed"}},
		{"stderr-flood", "crashed", []string{"exit status 2", "last words"}},
	}
	for _, tt := range tests {
		t.Run(tt.op, func(t *testing.T) {
			s, _ := fakeSupervisor(t, 300*time.Millisecond)
			before := echoPID(t, s)
			err := await(t, doAsync(context.Background(), s, tt.op))
			var we *WorkerError
			if !errors.As(err, &we) || we.Kind != tt.kind {
				t.Fatalf("got %v, want a %s WorkerError", err, tt.kind)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
			if len(err.Error()) > 6000 {
				t.Errorf("error is %d bytes: the stderr tail is not bounded", len(err.Error()))
			}
			if after := echoPID(t, s); after == before {
				t.Errorf("the next request reused the broken worker %s", after)
			}
		})
	}
}

// A worker that shows no progress is stopped when the limit has passed on the (fake) clock, not
// before, and the next request gets a fresh worker.
func TestSupervisorStopsAHungWorker(t *testing.T) {
	const limit = 300 * time.Millisecond
	s, clk := fakeSupervisor(t, limit)
	before := echoPID(t, s)
	errc := doAsync(context.Background(), s, "hang")
	clk.waitTimers(t, 2) // the echo's and the hang's: the request is sent
	if clk.Advance(limit - time.Nanosecond) {
		t.Fatal("the limit fired before it had passed")
	}
	if !clk.Advance(time.Nanosecond) {
		t.Fatal("the limit did not fire when it had passed")
	}
	err := await(t, errc)
	var we *WorkerError
	if !errors.As(err, &we) || we.Kind != "timeout" || !strings.Contains(err.Error(), "no progress for 300ms") {
		t.Fatalf("got %v, want a timeout WorkerError saying no progress for 300ms", err)
	}
	if after := echoPID(t, s); after == before {
		t.Errorf("the next request reused the hung worker %s", after)
	}
}

// Cancelling kills a hung worker at once. The promise is 0.5 s; 5 s is allowed so that a busy
// machine cannot fail the test, which still catches a cancel that waits for the time limit (a
// minute here, and the fake clock never reaches it).
func TestSupervisorCancelKillsPromptly(t *testing.T) {
	s, clk := fakeSupervisor(t, time.Minute)
	before := echoPID(t, s)
	stop := errors.New("stopped")
	ctx, cancel := context.WithCancelCause(context.Background())
	errc := doAsync(ctx, s, "hang")
	clk.waitTimers(t, 2) // the request is sent and Do waits for its answer
	start := time.Now()
	cancel(stop)
	err := await(t, errc)
	if !errors.Is(err, stop) {
		t.Fatalf("got %v, want the cancel cause", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("cancel took %v, want ≤ 0.5 s (5 s allowed for a busy machine)", d)
	}
	if echoPID(t, s) == before {
		t.Error("the hung worker was reused")
	}
}

// Each progress line restarts the time limit: slow but steady work is not killed. Every step takes
// 80 % of the limit on the fake clock, 4.8 limits in all, which a limit that progress did not
// restart would not survive.
func TestSupervisorProgressResetsTheLimit(t *testing.T) {
	const limit = 250 * time.Millisecond
	s, clk := fakeSupervisor(t, limit)
	var progress []string
	err := s.Do(context.Background(), Request{Op: "progress"}, func(r Response) {
		if r.Progress != nil {
			progress = append(progress, fmt.Sprint(*r.Progress))
			if clk.Advance(limit * 4 / 5) {
				t.Errorf("the limit fired 0.8 limits after progress line %d", len(progress))
			}
		}
	})
	if err != nil || len(progress) != 6 {
		t.Errorf("got %v after %v, want 6 progress lines and success", err, progress)
	}
}

func TestSupervisorCannotStart(t *testing.T) {
	s := &Supervisor{Transport: Exec{Path: "/nonexistent/worker"}}
	var we *WorkerError
	if err := s.Do(context.Background(), Request{Op: "echo"}, func(Response) {}); !errors.As(err, &we) || we.Kind != "start" {
		t.Errorf("got %v, want a start WorkerError", err)
	}
}

// The real worker (this binary's gpu-worker subcommand) answers a probe like the in-process probe.
func realWorker(t *testing.T) *Supervisor {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	s := &Supervisor{Transport: Exec{Path: exe, Args: []string{WorkerCommand}}}
	t.Cleanup(s.Close)
	return s
}

func TestProbeThroughTheRealWorker(t *testing.T) {
	got := Probe(context.Background(), realWorker(t))
	want := nvidia.Probe()
	if got.Unavailable != want.Unavailable || len(got.Devices) != len(want.Devices) {
		t.Errorf("worker report %+v, want %+v", got, want)
	}
}

func TestProbeOfABrokenWorkerSaysSo(t *testing.T) {
	exe, _ := os.Executable()
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	r := Probe(ctx, &Supervisor{Transport: Exec{Path: exe, Args: []string{fakeCommand}}}) // the fake never answers "probe"
	if !strings.HasPrefix(r.Unavailable, "no CUDA device: the GPU probe failed") {
		t.Errorf("got %q", r.Unavailable)
	}
}

func TestServeAnswersUnknownOps(t *testing.T) {
	var out bytes.Buffer
	Serve(strings.NewReader(`{"id":7,"op":"launch"}`+"\n"+`nonsense`+"\n"), &out)
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], `"id":7`) || !strings.Contains(lines[0], `unknown op \"launch\"`) ||
		!strings.Contains(lines[1], "bad request") {
		t.Errorf("got %q", lines)
	}
	if ServeChild([]string{"playground", "-addr", ":0"}, strings.NewReader(""), &out) {
		t.Error("ServeChild handled ordinary arguments")
	}
}

func needNVRTC(t *testing.T) {
	t.Helper()
	if _, err := nvidia.LoadNVRTC(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("NVRTC is required in CI: %v", err)
		}
		t.Skipf("skipping: no NVRTC (%v)", err)
	}
}

// realCompiler compiles in this test binary's gpu-worker subcommand, as the server does.
func realCompiler(t *testing.T) (*Compiler, *killOnCleanup) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	tr := &killOnCleanup{Transport: Exec{Path: exe, Args: []string{WorkerCommand}}}
	t.Cleanup(tr.killAll)
	return &Compiler{Transport: tr}, tr
}

func TestCompileThroughTheRealWorker(t *testing.T) {
	needNVRTC(t)
	c, _ := realCompiler(t)
	ptx, err := c.Compile(context.Background(), `extern "C" __global__ void twice(float* x) { x[threadIdx.x] *= 2; }`, "ok.cu", "80")
	if err != nil || !strings.Contains(ptx, ".entry twice(") || !strings.Contains(ptx, ".target sm_80") {
		t.Fatalf("got %v and %.200q, want PTX for sm_80 with entry twice", err, ptx)
	}
	_, err = c.Compile(context.Background(), "extern \"C\" __global__ void k(float* x) {\n  x[0] = nope;\n}\n", "cell.cu", "80")
	if err == nil || !strings.Contains(err.Error(), "cell.cu(2): error") {
		t.Errorf("got %v, want NVRTC's log pointing at cell.cu line 2", err)
	}
}

// bomb is a preprocessor bomb: `levels` macros, each expanding to two of the one before, used once:
// 2^levels expansions. With empty A0 it costs time only; with A0 "+1" it builds a 2^levels-token
// expression, which costs memory too.
func bomb(levels int, a0 string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "#define A0 %s\n", a0)
	for i := 1; i <= levels; i++ {
		fmt.Fprintf(&b, "#define A%d A%d A%d\n", i, i-1, i-1)
	}
	fmt.Fprintf(&b, "extern \"C\" __global__ void k(float* p) { p[0] = 0 A%d; }\n", levels)
	return b.String()
}

// A compile bomb through real NVRTC ends at the compile time limit with an error that says so, not
// as a kernel that never ends. The limit runs on the real clock (the compile process does the
// work); 28 levels take NVRTC hours, so a busy machine can only make the limit fire later.
func TestCompileBombTakesTooLong(t *testing.T) {
	needNVRTC(t)
	c, _ := realCompiler(t)
	c.Timeout = 2 * time.Second
	errc := make(chan error, 1)
	go func() { _, err := c.Compile(context.Background(), bomb(28, ""), "cell.cu", "80"); errc <- err }()
	err := await(t, errc)
	var te *CompileTimeoutError
	if !errors.As(err, &te) || !strings.HasPrefix(err.Error(), "compilation took too long (limit 2s): ") {
		t.Fatalf("got %v, want compilation took too long (limit 2s): …", err)
	}
	// The next compile works: nothing of the bomb is left behind.
	if _, err := c.Compile(context.Background(), `extern "C" __global__ void k(float* p) { p[0] = 1; }`, "cell.cu", "80"); err != nil {
		t.Errorf("the compile after the bomb: %v", err)
	}
}

// A bomb that builds a huge expression runs into the compile process's memory limit, and the error
// names the limit. Usually NVRTC's allocation fails first and it reports "out of memory"; when the
// process's own runtime does (the race detector's allocator, say), the process ends, and the error
// says so and names the limit too.
func TestCompileBombRunsOutOfMemory(t *testing.T) {
	needNVRTC(t)
	c, _ := realCompiler(t)
	c.Timeout, c.Memory = 10*time.Minute, 256<<20
	errc := make(chan error, 1)
	go func() { _, err := c.Compile(context.Background(), bomb(28, "+1"), "cell.cu", "80"); errc <- err }()
	err := await(t, errc)
	if err == nil || !strings.HasPrefix(err.Error(), "compilation ran out of memory (limit 256 MiB): ") &&
		!(strings.HasPrefix(err.Error(), "the compiler's process ended unexpectedly") && strings.HasSuffix(err.Error(), "(its memory is limited to 256 MiB)")) {
		t.Fatalf("got %v, want compilation ran out of memory (limit 256 MiB): …", err)
	}
}

// Stop ends a running compile at once: its process is killed, not waited for.
func TestCompileCancelKillsPromptly(t *testing.T) {
	needNVRTC(t)
	c, tr := realCompiler(t)
	clk := newFakeClock()
	c.timers, c.Timeout = clk, time.Minute // the fake clock never reaches the limit
	stop := errors.New("stopped")
	ctx, cancel := context.WithCancelCause(context.Background())
	errc := make(chan error, 1)
	go func() { _, err := c.Compile(ctx, bomb(28, ""), "cell.cu", "80"); errc <- err }()
	clk.waitTimers(t, 1) // the request is sent: NVRTC is expanding the bomb
	start := time.Now()
	cancel(stop)
	if err := await(t, errc); !errors.Is(err, stop) {
		t.Fatalf("got %v, want the cancel cause", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("cancel took %v, want ≤ 0.5 s (5 s allowed for a busy machine)", d)
	}
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if len(tr.conns) != 1 {
		t.Fatalf("%d compile processes started, want 1", len(tr.conns))
	}
	if err := tr.conns[0].Wait(); err == nil {
		t.Error("the compile process ended by itself; want it killed")
	}
}

// fakeCompiler compiles with the fake worker, whose compiles never end, under a fake clock.
func fakeCompiler(t *testing.T) (*Compiler, *fakeClock) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	tr := &killOnCleanup{Transport: Exec{Path: exe, Args: []string{fakeCommand}}}
	t.Cleanup(tr.killAll)
	clk := newFakeClock()
	return &Compiler{Transport: tr, timers: clk}, clk
}

// The default compile limit is CompileTimeout (10 s), counted from the request: a progress line
// does not restart it, as it does a run's.
func TestCompileTimeoutIsTheDefaultAndOverall(t *testing.T) {
	c, clk := fakeCompiler(t)
	errc := make(chan error, 1)
	go func() {
		_, err := c.Compile(context.Background(), "anything", "cell.cu", "80")
		errc <- err
	}()
	clk.waitTimers(t, 1)
	if clk.Advance(CompileTimeout - time.Nanosecond) {
		t.Fatal("the limit fired before it had passed")
	}
	if !clk.Advance(time.Nanosecond) {
		t.Fatal("the limit did not fire when it had passed (a progress line restarted it?)")
	}
	err := await(t, errc)
	if err == nil || err.Error() != (&CompileTimeoutError{Limit: 10 * time.Second}).Error() || !strings.HasPrefix(err.Error(), "compilation took too long (limit 10s): ") {
		t.Errorf("got %v, want compilation took too long (limit 10s): …", err)
	}
}

// A compile waiting for a free slot stops waiting when cancelled, while the one running goes on.
func TestCompileWaitingIsCancellable(t *testing.T) {
	c, clk := fakeCompiler(t)
	c.Parallel = 1
	first, cancelFirst := context.WithCancel(context.Background())
	defer cancelFirst()
	firstc := make(chan error, 1)
	go func() { _, err := c.Compile(first, "hangs", "a.cu", "80"); firstc <- err }()
	clk.waitTimers(t, 1) // the first compile is running
	stop := errors.New("stopped")
	ctx, cancel := context.WithCancelCause(context.Background())
	errc := make(chan error, 1)
	go func() { _, err := c.Compile(ctx, "waits", "b.cu", "80"); errc <- err }()
	cancel(stop)
	if err := await(t, errc); !errors.Is(err, stop) {
		t.Fatalf("waiting compile: got %v, want the cancel cause", err)
	}
	select {
	case err := <-firstc:
		t.Fatalf("the running compile ended: %v", err)
	default:
	}
	cancelFirst()
	if err := await(t, firstc); !errors.Is(err, context.Canceled) {
		t.Errorf("running compile: got %v, want context.Canceled", err)
	}
}

// A sticky CUDA error: the worker answers, says it is finished, and exits; the next request gets a
// fresh worker without an error of its own.
func TestFatalAnswerRestartsTheWorker(t *testing.T) {
	s, _ := fakeSupervisor(t, time.Second)
	before := echoPID(t, s)
	err := s.Do(context.Background(), Request{Op: "fatal"}, func(Response) {})
	if err == nil || !strings.Contains(err.Error(), "CUDA_ERROR_ILLEGAL_ADDRESS") {
		t.Fatalf("got %v, want the kernel's error", err)
	}
	if after := echoPID(t, s); after == before {
		t.Error("the broken worker was reused")
	}
}

// A fatal line that is not the request's last (the worker is going away without finishing it) ends
// the request with the worker's error at once, and the next request gets a fresh worker. The fake
// worker then hangs instead of exiting, and the fake clock never reaches the limit, so only the
// fatal line can end the request.
func TestFatalWithoutDoneEndsTheRequest(t *testing.T) {
	s, clk := fakeSupervisor(t, time.Minute)
	before := echoPID(t, s)
	var err error
	select {
	case err = <-doAsync(context.Background(), s, "fatal-no-done"):
	case <-time.After(30 * time.Second): // a hang guard, no time budget
		clk.Advance(time.Hour) // let the limit end the request (it panicked here before the fix)
		t.Fatal("the fatal line did not end the request in 30 s")
	}
	var we *WorkerError
	if !errors.As(err, &we) || we.Kind != "fatal" || !strings.Contains(err.Error(), "CUDA_ERROR_LAUNCH_FAILED (719)") {
		t.Fatalf("got %v, want a fatal WorkerError with the worker's error", err)
	}
	if after := echoPID(t, s); after == before {
		t.Error("the broken worker was reused")
	}
}

// A request waiting for the one before it stops waiting when cancelled.
func TestSupervisorWaitingRequestIsCancellable(t *testing.T) {
	s, clk := fakeSupervisor(t, time.Minute)
	hung, cancelHung := context.WithCancel(context.Background())
	hungc := doAsync(hung, s, "hang")
	clk.waitTimers(t, 1) // the hang holds the worker
	stop := errors.New("stopped")
	ctx, cancel := context.WithCancelCause(context.Background())
	errc := doAsync(ctx, s, "echo")
	cancel(stop)
	if err := await(t, errc); !errors.Is(err, stop) {
		t.Fatalf("waiting request: got %v, want the cancel cause", err)
	}
	cancelHung()
	if err := await(t, hungc); !errors.Is(err, context.Canceled) {
		t.Errorf("running request: got %v, want context.Canceled", err)
	}
}

// A panic in a request's callback becomes that request's error, not a crash, and leaves the
// supervisor usable with a fresh worker.
func TestSupervisorPanicInCallbackIsAnError(t *testing.T) {
	s, _ := fakeSupervisor(t, time.Minute)
	before := echoPID(t, s)
	err := s.Do(context.Background(), Request{Op: "progress"}, func(Response) { panic("bug in a kind") })
	var we *WorkerError
	if !errors.As(err, &we) || we.Kind != "panic" || !strings.Contains(err.Error(), "bug in a kind") {
		t.Fatalf("got %v, want a panic WorkerError", err)
	}
	if after := echoPID(t, s); after == before {
		t.Error("the worker interrupted mid-answer was reused")
	}
}

// panicConn is a worker whose output reader panics.
type panicConn struct{ io.Writer }

func (panicConn) Responses() io.Reader { return panicReader{} }
func (panicConn) Kill()                {}
func (panicConn) Wait() error          { return nil }
func (panicConn) StderrTail() string   { return "" }

type panicReader struct{}

func (panicReader) Read([]byte) (int, error) { panic("transport bug") }

type panicTransport struct{}

func (panicTransport) Start() (Conn, error) { return panicConn{io.Discard}, nil }

// A panic while reading the worker's output is a broken protocol, not a crash of the server.
func TestSupervisorPanicInReaderIsAnError(t *testing.T) {
	s := &Supervisor{Transport: panicTransport{}, timers: newFakeClock()}
	err := s.Do(context.Background(), Request{Op: "echo"}, func(Response) {})
	var we *WorkerError
	if !errors.As(err, &we) || we.Kind != "protocol" || !strings.Contains(err.Error(), "transport bug") {
		t.Fatalf("got %v, want a protocol WorkerError", err)
	}
}

func TestRunWithoutGPUSaysWhy(t *testing.T) {
	if _, err := nvidia.LoadDriver(); err == nil {
		t.Skip("this machine has a GPU")
	}
	err := realWorker(t).Do(context.Background(), Request{Op: "run", Kernel: "cublas", N: 64, DType: "float32", Repeats: 1}, func(Response) {})
	if err == nil || !strings.HasPrefix(err.Error(), "no CUDA device: libcuda.so.1 not found") {
		t.Errorf("got %v, want no CUDA device: libcuda.so.1 not found …", err)
	}
}

// Without a fake clock the limit runs on the real one. A busy machine can only make it fire later,
// and await allows 30 s for a 50 ms limit.
func TestSupervisorRealClockStopsAHungWorker(t *testing.T) {
	s, _ := fakeSupervisor(t, 50*time.Millisecond)
	s.timers = nil
	err := await(t, doAsync(context.Background(), s, "hang"))
	var we *WorkerError
	if !errors.As(err, &we) || we.Kind != "timeout" {
		t.Fatalf("got %v, want a timeout WorkerError", err)
	}
}
