package server

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/gpuplayground/playground/gpu/nvidia"
	"github.com/gpuplayground/playground/harness/peaks"
	"github.com/gpuplayground/playground/machine"
)

// The abuse suite: what an attacker on loopback could send, over the real websocket. Every case
// checks that the server answers /healthz promptly throughout, that its memory stays bounded, and
// that every run ends with exactly one terminal message.

// healthWatch polls /healthz every 20 ms until stopped and reports the slowest answer.
func healthWatch(t *testing.T, base string) (stop func() time.Duration) {
	t.Helper()
	done := make(chan struct{})
	var mu sync.Mutex
	var worst time.Duration
	var failed error
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-done:
				return
			case <-time.After(20 * time.Millisecond):
			}
			start := time.Now()
			resp, err := http.Get(base + "/healthz")
			took := time.Since(start)
			mu.Lock()
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode != 200 {
					err = fmt.Errorf("/healthz: %s", resp.Status)
				}
			}
			if err != nil && failed == nil {
				failed = err
			}
			worst = max(worst, took)
			mu.Unlock()
		}
	})
	return func() time.Duration {
		close(done)
		wg.Wait()
		if failed != nil {
			t.Errorf("the server stopped answering: %v", failed)
		}
		// Every /healthz was answered (failed above); how fast is logged, not asserted: a busy
		// machine stretches it, and latency belongs in a benchmark.
		t.Logf("slowest /healthz answer during the attack: %v", worst)
		return worst
	}
}

// rssMiB is this process's resident memory (the server runs in it), from /proc; 0 where unknown.
func rssMiB() int {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")))
			return kb >> 10
		}
	}
	return 0
}

// maxRSSGrowthMiB bounds how much memory an attack may make the server keep.
const maxRSSGrowthMiB = 512

func TestAbuseForeignHostRefused(t *testing.T) {
	t.Parallel()
	_, base := startServer(t, Config{})
	port := strings.TrimPrefix(base, "http://127.0.0.1")
	for _, host := range []string{"evil.example" + port, "evil.example", "10.0.0.1" + port} {
		req, _ := http.NewRequest("GET", base+"/", nil)
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("Host %s: page %d, want 403", host, resp.StatusCode)
		}
		h := http.Header{"Host": {host}, "Origin": {"http://" + host}}
		d := websocket.Dialer{}
		_, resp, err = d.Dial("ws"+strings.TrimPrefix(base, "http")+"/ws", h)
		if err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
			t.Errorf("Host %s: websocket %v (%v), want 403", host, resp, err)
		}
	}
	for _, host := range []string{"localhost" + port, "127.0.0.1" + port, "[::1]" + port, "127.0.0.2" + port, "app.localhost" + port} {
		req, _ := http.NewRequest("GET", base+"/", nil)
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("Host %s: page %d, want 200", host, resp.StatusCode)
		}
	}
}

// One client cannot take every connection, nor fill the line: its excess is refused with the cap in
// the message, and another client's connection and run are still accepted.
func TestAbuseOneClientFloods(t *testing.T) {
	cfg := probeConfig(t)
	cfg.MaxConnsPerClient, cfg.MaxRunsPerClient, cfg.MaxConns = 4, 6, 9
	cfg.Grace = -1 // a client gone is gone at once
	_, base := startServer(t, cfg)
	stop := healthWatch(t, base)
	rss := rssMiB()
	var flood []*websocket.Conn
	for i := range cfg.MaxConnsPerClient + 1 {
		ws, err := dialFrom(base, "127.0.0.5")
		if i < cfg.MaxConnsPerClient {
			if err != nil {
				t.Fatalf("connection %d: %v", i, err)
			}
			flood = append(flood, ws)
			continue
		}
		if err == nil || !strings.Contains(err.Error(), "bad handshake") {
			t.Errorf("connection %d of one client: %v, want refused", i, err)
		}
	}
	// Runs: the flooder fills its share across its connections; the next is refused.
	for i := range cfg.MaxRunsPerClient + 1 {
		ws := flood[i%len(flood)]
		id := fmt.Sprintf("f%d", i)
		if err := ws.WriteJSON(probeMsg(id, "wait: true")); err != nil {
			t.Fatal(err)
		}
		first := collectFirst(t, ws, id)
		if i < cfg.MaxRunsPerClient && first.Type != TypeQueued {
			t.Fatalf("run %d: got %+v, want queued", i, first)
		}
		if i == cfg.MaxRunsPerClient && (first.Type != TypeError || !strings.Contains(first.Message, "6 runs queued or running, the limit per client")) {
			t.Errorf("run over the share: got %+v, want an error naming the limit", first)
		}
	}
	// Another client still gets in, and its run is accepted (it waits behind the flood).
	other, err := dialFrom(base, "127.0.0.6")
	if err != nil {
		t.Fatalf("another client refused: %v", err)
	}
	defer other.Close()
	if err := other.WriteJSON(probeMsg("mine", "rows: 1")); err != nil {
		t.Fatal(err)
	}
	if first := collectFirst(t, other, "mine"); first.Type != TypeQueued {
		t.Errorf("the other client's run: got %+v, want queued", first)
	}
	// The global cap: 4 + 1 connections open; 4 more from a third client fill it to 9; the next is refused.
	for i := range 5 {
		ws, err := dialFrom(base, "127.0.0.7")
		if i < 4 {
			if err != nil {
				t.Fatalf("third client, connection %d: %v", i, err)
			}
			defer ws.Close()
		} else if err == nil {
			t.Errorf("connection over the server's cap accepted")
		}
	}
	// The flood ends: its runs are cancelled, and the other client's run completes.
	for _, ws := range flood {
		ws.Close()
	}
	if msgs := collect(t, other, "mine", 60*time.Second); msgs[len(msgs)-1].Type != TypeDone {
		t.Errorf("the other client's run ended %+v", msgs[len(msgs)-1])
	}
	assertQuiet(t, other, "mine", 200*time.Millisecond)
	stop()
	if grew := rssMiB() - rss; grew > maxRSSGrowthMiB {
		t.Errorf("memory grew by %d MiB", grew)
	}
}

// collectFirst returns the first message for run id.
func collectFirst(t *testing.T, ws *websocket.Conn, id string) Message {
	t.Helper()
	_ = ws.SetReadDeadline(time.Now().Add(30 * time.Second))
	for {
		var m Message
		if err := ws.ReadJSON(&m); err != nil {
			t.Fatalf("run %s: %v", id, err)
		}
		if m.ID == id {
			return m
		}
	}
}

// The largest spec every kind accepts, with a client that reads normally: each run ends with
// exactly one terminal message, done, and the client is never dropped.
func TestAbuseLargestSpecs(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the largest spec of every kind")
	}
	cfg := Config{Config: machine.Config{Roofline: peaks.Options{PeakSizes: []int{64}, TriadMiB: 4, Repeats: 2}}}
	_, base := startServer(t, cfg)
	stop := healthWatch(t, base)
	rss := rssMiB()
	sizes := make([]string, 25)
	for i := range sizes {
		sizes[i] = strconv.Itoa(i + 1)
	}
	all := "[naive, ikj, tiled, parallel, gonum, packed, simd, simd-parallel]"
	gpus := make([]string, 32)
	for i := range gpus {
		gpus[i] = strconv.Itoa(1 << (i % 17))
	}
	links := "{a: 1, b: 2, c: 4, d: 8, e: 16, f: 32, g: 64, h: 128}"
	for _, tt := range []struct{ lesson, cell, src string }{
		{"counting-flops", "counting-flops-0", "kernels: " + all + "\nsizes: [" + strings.Join(sizes, ", ") + "]\nrepeats: 1"},
		{"the-roofline", "the-roofline-0", "kernels: " + all + "\nsizes: [" + strings.Join(sizes, ", ") + "]\nrepeats: 1"},
		{"why-coalescing-matters", "why-coalescing-matters-1", "kernels: [naive, coalesced, smem, regblock, naive, coalesced, smem, regblock, naive, coalesced, smem, regblock, naive, coalesced, smem, regblock]\nn: 32\nwatch: true"},
		{"tpus-and-systolic-arrays", "tpus-and-systolic-arrays-0", "array: 16\nm: 64\nn: 64\nk: 64"},
		{"many-gpus", "many-gpus-0", "gradient_mb: 1000\ngpus: [" + strings.Join(gpus, ", ") + "]\nlinks: " + links},
	} {
		id := tt.cell + "#big"
		ws := dial(t, base) // one each: assertQuiet's read deadline ends a connection
		if err := ws.WriteJSON(Message{Type: TypeRun, ID: id, RunRequest: &RunRequest{Lesson: tt.lesson, Cell: tt.cell, Source: tt.src}}); err != nil {
			t.Fatal(err)
		}
		msgs := collect(t, ws, id, 120*time.Second)
		if last := msgs[len(msgs)-1]; last.Type != TypeDone {
			t.Errorf("%s: ended %+v after %d messages, want done", tt.cell, last, len(msgs))
		}
		assertQuiet(t, ws, id, 100*time.Millisecond)
	}
	// A cuda cell at its caps: 32 sizes, compared with every CPU kernel and the project's GPU kernels
	// (all emulated here, with the learner's own), hundreds of rows.
	if _, err := nvidia.LoadNVRTC(); err == nil || os.Getenv("CI") == "true" {
		dir := t.TempDir()
		if err := os.WriteFile(dir+"/k.md", []byte(cudaLesson), 0o644); err != nil {
			t.Fatal(err)
		}
		_, kbase := startServer(t, Config{Config: machine.Config{Devices: noDevice}, LessonsDir: dir})
		src := strings.Replace(cudaCellSrc, "sizes: [32]", "sizes: ["+strings.Join(sizes, ", ")+", 26, 27, 28, 29, 30, 31, 32]", 1)
		src = strings.Replace(src, "compare: [gonum, cublas]", "compare: [naive, ikj, tiled, parallel, gonum, packed, simd, simd-parallel, cuda-naive, cuda-coalesced, cuda-smem, cuda-regblock, cuda-wmma, cublas]", 1)
		ws := dial(t, kbase)
		if err := ws.WriteJSON(Message{Type: TypeRun, ID: "cuda#big", RunRequest: &RunRequest{Lesson: "k", Cell: "k-0", Source: src}}); err != nil {
			t.Fatal(err)
		}
		msgs := collect(t, ws, "cuda#big", 300*time.Second)
		if last := msgs[len(msgs)-1]; last.Type != TypeDone || len(rowsOf(t, msgs, "emulated")) != 32*6 {
			t.Errorf("cuda at its caps: ended %+v with %d emulated rows, want done and %d", last, len(rowsOf(t, msgs, "emulated")), 32*6)
		}
	}
	stop()
	if grew := rssMiB() - rss; grew > maxRSSGrowthMiB {
		t.Errorf("memory grew by %d MiB", grew)
	}
}

// A panic in a run is that run's error, never a crash; the connection and the queue go on.
func TestPanicInARunIsItsError(t *testing.T) {
	_, base := startServer(t, probeConfig(t))
	ws := dial(t, base)
	if err := ws.WriteJSON(probeMsg("p", "panic: true")); err != nil {
		t.Fatal(err)
	}
	if msgs := collect(t, ws, "p", 30*time.Second); msgs[len(msgs)-1].Message != "internal error: probe panics" {
		t.Errorf("got %+v", msgs[len(msgs)-1])
	}
	if err := ws.WriteJSON(probeMsg("q", "rows: 1")); err != nil {
		t.Fatal(err)
	}
	if msgs := collect(t, ws, "q", 30*time.Second); msgs[len(msgs)-1].Type != TypeDone {
		t.Errorf("after the panic: %+v", msgs[len(msgs)-1])
	}
}

// Specs built to make parsing heavy (the attacks that once took the server down: a grid formula
// that built gigabyte strings, thousands of sizes) are refused when parsed, cheaply, with the cap.
func TestAbuseHeavySpecsRefusedAtParse(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(dir+"/k.md", []byte(cudaLesson), 0o644); err != nil {
		t.Fatal(err)
	}
	_, base := startServer(t, Config{Config: machine.Config{Devices: noDevice}, LessonsDir: dir})
	stop := healthWatch(t, base)
	rss := rssMiB()
	ws := dial(t, base)
	many := make([]string, 8192)
	for i := range many {
		many[i] = strconv.Itoa(i%4096 + 1)
	}
	bomb := `replace(replace(repeat("x", 100000), "x", repeat("y", 10000)), "y", repeat("z", 10000))`
	for id, tt := range map[string]struct{ cell, src, want string }{
		"formula": {"k-0", strings.Replace(cudaCellSrc, `"ceil(n/16)", "ceil(n/16)"`, strconv.Quote(bomb)+`, "1"`, 1), "grid formula"},
		"sizes":   {"k-1", "kernels: [ikj]\nsizes: [" + strings.Join(many, ", ") + "]", "at most 16384 bytes"},
		"cuda":    {"k-0", strings.Replace(cudaCellSrc, "sizes: [32]", "sizes: ["+strings.Join(many[:2000], ", ")+"]", 1), "at most 32"},
	} {
		m := Message{Type: TypeRun, ID: id, RunRequest: &RunRequest{Lesson: "k", Cell: tt.cell, Source: tt.src}}
		if err := ws.WriteJSON(m); err != nil {
			t.Fatal(err)
		}
		if first := collectFirst(t, ws, id); first.Type != TypeError || !strings.Contains(first.Message, tt.want) {
			t.Errorf("%s: got %+v, want an error with %q", id, first, tt.want)
		}
	}
	stop()
	if grew := rssMiB() - rss; grew > maxRSSGrowthMiB {
		t.Errorf("memory grew by %d MiB", grew)
	}
}

// noDevice is the device report of a server without a GPU (no probe).
func noDevice(context.Context) nvidia.Report {
	return nvidia.Report{Unavailable: "no CUDA device: libcuda.so.1 not found"}
}

// A preprocessor bomb in a cuda cell: Stop ends its compile at once, and left alone it ends with
// "compilation took too long" at the server's compile limit; the queue and the server go on. The
// limit is the configured one, shortened from the default 10 s + 10 s (Show PTX counts SASS lines,
// which gains DisassembleTimeout) to 6 s + 2 s, so that the bomb costs 8 s, not 20; a normal
// Show PTX after it, under the same limit, took 4 s in all at a load average of 21 on 2 cores, 7 s
// with -race beside the parallel tests (its compile less: the limit counts the compile alone).
// That Show PTX is the one whose PTX, per-line counts and store counts checkShowPTX checks: one
// compile for both.
func TestAbuseCompileBomb(t *testing.T) {
	t.Parallel()
	requireNVRTC(t)
	cfg := cudaConfig(t)
	cfg.CompileTimeout, cfg.DisassembleTimeout = 6*time.Second, 2*time.Second
	_, base := startServer(t, cfg)
	stop := healthWatch(t, base)
	ws := dial(t, base)
	var bomb strings.Builder
	bomb.WriteString("kernel: twice_mm\nsizes: [32]\n---\n#define A0 x\n")
	for i := 1; i <= 28; i++ {
		fmt.Fprintf(&bomb, "#define A%d A%d A%d\n", i, i-1, i-1)
	}
	bomb.WriteString("extern \"C\" __global__ void twice_mm(const float* A, const float* B, float* C, int M, int N, int K) { int A28; }\n")
	stopped := ptxMsg("stopped", bomb.String())
	if err := ws.WriteJSON(stopped); err != nil {
		t.Fatal(err)
	}
	collectUntil(t, ws, TypeStarted)
	start := time.Now()
	if err := ws.WriteJSON(Message{Type: TypeCancel, ID: "stopped"}); err != nil {
		t.Fatal(err)
	}
	if msgs := collect(t, ws, "stopped", 30*time.Second); msgs[len(msgs)-1].Type != TypeCancelled {
		t.Errorf("Stop during the compile: %+v", msgs[len(msgs)-1])
	}
	// Cancelled, not "compilation took too long": Stop ended the compile before its own 8 s limit.
	t.Logf("Stop during the compile took %v", time.Since(start))
	if err := ws.WriteJSON(ptxMsg("alone", bomb.String())); err != nil {
		t.Fatal(err)
	}
	if msgs := collect(t, ws, "alone", 120*time.Second); !strings.Contains(msgs[len(msgs)-1].Message, "compilation took too long (limit 8s)") {
		t.Errorf("the bomb left alone: %+v, want the configured limit's error", msgs[len(msgs)-1])
	}
	if err := ws.WriteJSON(ptxMsg("after", cudaCellSrc)); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	defer func() { t.Logf("the normal compile after the bomb took %v", time.Since(start)) }()
	checkShowPTX(t, collect(t, ws, "after", 60*time.Second))
	stop()
}
