// Command classroom is the classroom load benchmark: a server on 127.0.0.1 with sign-in on and a
// fresh data directory, and -students students who each join (POST /join), open their own
// websocket and send -runs runs of a small measuring cell at once; every -reconnect-every'th
// student closes its websocket mid-run, reconnects, lists its runs (/api/runs) and replays the
// ones it has not seen end. It checks that every run ends with exactly one terminal message and
// that the database has every run done, and prints, as markdown for docs/benchmarks.md, the p50
// and p99 time from sending a run to its `queued` message and the server's RSS and goroutines
// before, during and after the load.
//
// The server is this binary re-executed (-serve DIR), so that its RSS and goroutines are the
// server's alone. Loopback only, bounded: -timeout ends the run.
//
//	go run ./bench/classroom [-students 200] [-runs 3] [-reconnect-every 5] [-timeout 5m]
package main

import (
	"bufio"
	"context"
	"encoding/csv"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"
	"github.com/gpuplayground/playground/cells/builtin"
	"github.com/gpuplayground/playground/gpu"
	"github.com/gpuplayground/playground/gpu/nvidia"
	"github.com/gpuplayground/playground/machine"
	"github.com/gpuplayground/playground/server"
)

const (
	token  = "bench-class"
	lesson = "counting-flops"
	cell   = "counting-flops-0"
	// source is a small measuring run: one CPU kernel at n = 32, one timed repeat; edited, so
	// never answered with shared results.
	source = "kernels: [naive]\nsizes: [32]\nrepeats: 1\n"
)

func main() {
	if gpu.ServeChild(os.Args, os.Stdin, os.Stdout) {
		return
	}
	serve := flag.String("serve", "", "internal: serve with this data directory and answer `stats` on stdin")
	students := flag.Int("students", 200, "students, each with its own websocket")
	runs := flag.Int("runs", 3, "runs per student, sent at once")
	reconnectEvery := flag.Int("reconnect-every", 5, "every n-th student disconnects mid-run and reconnects (0: none)")
	timeout := flag.Duration("timeout", 5*time.Minute, "give up after this long")
	interference := flag.Int("interference", 5, "runs of a measuring cell alone, then as many beside a flood of simulator runs (0: skip)")
	flag.Parse()
	if *serve != "" {
		serveChild(*serve)
		return
	}
	if err := bench(*students, *runs, *reconnectEvery, *interference, *timeout); err != nil {
		log.Fatal(err)
	}
}

// serveChild runs the server and answers each `stats` line on stdin with
// "STATS goroutines rssKiB".
func serveChild(dir string) {
	s, err := server.New(server.Config{Config: machine.Config{Kinds: builtin.Kinds, Devices: func(context.Context) nvidia.Report {
		return nvidia.Report{Unavailable: "the classroom benchmark does not probe GPUs"}
	}}, DataDir: dir, Token: token, InstructorToken: "bench-teacher",
		MaxConns: 2000, Out: io.Discard,
		// Every simulated student joins from 127.0.0.1: lift the per-address and per-class limits.
		JoinsPerAddress: 100000, JoinAttempts: 100000, MaxStudents: 100000, MaxPreAuthPerAddress: 100000})
	if err != nil {
		log.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("URL http://%s\n", ln.Addr())
	go func() {
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
			runtime.GC()
			fmt.Printf("STATS %d %d\n", runtime.NumGoroutine(), rssKiB())
		}
		os.Exit(0)
	}()
	log.Fatal(s.Serve(context.Background(), ln))
}

func rssKiB() int {
	b, _ := os.ReadFile("/proc/self/status")
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			return n
		}
	}
	return 0
}

type child struct {
	in  io.Writer
	out *bufio.Scanner
}

func (c child) stats() (goroutines, rss int) {
	fmt.Fprintln(c.in, "stats")
	for c.out.Scan() {
		if f := strings.Fields(c.out.Text()); len(f) == 3 && f[0] == "STATS" {
			goroutines, _ = strconv.Atoi(f[1])
			rss, _ = strconv.Atoi(f[2])
			return
		}
	}
	return 0, 0
}

type studentResult struct {
	toQueued  []time.Duration
	terminals map[int]int // run index → terminal messages seen
	err       error
}

// bench starts the server in a fresh data directory, runs the class against it, checks every run's
// terminal messages and the database, and prints the markdown tables (then the interference
// measurement, unless interference is 0). It fails if any run went wrong.
func bench(students, runs, reconnectEvery, interference int, timeout time.Duration) error {
	dir, err := os.MkdirTemp("", "classroom-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	srv, base, stop, err := startServer(dir)
	if err != nil {
		return err
	}
	defer stop()
	before := srv.snapshot()

	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	load := runClass(ctx, srv, base, students, runs, reconnectEvery)
	load.stats[0] = before
	toQueued, bad := tally(load.results, runs)
	done, err := countDone(base)
	if err != nil {
		return err
	}
	printLoad(load, runs, reconnectEvery, toQueued, bad, done)
	if interference > 0 {
		if err := measureInterference(ctx, base, interference); err != nil {
			return err
		}
	}
	if bad > 0 || done != students*runs {
		return fmt.Errorf("%d problems, %d of %d runs done", bad, done, students*runs)
	}
	return nil
}

// startServer re-executes this binary as the server (-serve dir) and waits for the URL it prints.
// stop kills the server and closes its stdin; until then the stdin pipe is kept open (it is not
// collected and closed while the child serves).
func startServer(dir string) (srv child, base string, stop func(), err error) {
	exe, err := os.Executable()
	if err != nil {
		return child{}, "", nil, err
	}
	cmd := exec.Command(exe, "-serve", dir)
	cmd.Stderr = os.Stderr
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		stdin.Close()
		return child{}, "", nil, err
	}
	stop = func() {
		cmd.Process.Kill()
		stdin.Close()
	}
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if u, ok := strings.CutPrefix(sc.Text(), "URL "); ok {
			base = u
			break
		}
	}
	if base == "" {
		stop()
		return child{}, "", nil, fmt.Errorf("the server printed no URL")
	}
	return child{in: stdin, out: sc}, base, stop, nil
}

// serverStats is the server's goroutines and RSS at one moment.
type serverStats struct{ goroutines, rssKiB int }

func (c child) snapshot() serverStats {
	g, r := c.stats()
	return serverStats{g, r}
}

// classLoad is what one class's load gave: each student's result, the time until every student had
// finished, and the server's stats before, during (all runs sent) and after (all ended, sockets
// closed).
type classLoad struct {
	results []studentResult
	elapsed time.Duration
	stats   [3]serverStats // before, during, after
}

// runClass runs the students at once (every reconnectEvery'th one reconnecting mid-run), takes the
// server's stats once all have sent their runs and again 2 s after all have finished, and returns
// what each student saw. The caller fills in stats[0], the stats before.
func runClass(ctx context.Context, srv child, base string, students, runs, reconnectEvery int) classLoad {
	load := classLoad{results: make([]studentResult, students)}
	var joined, submitted sync.WaitGroup
	joined.Add(students)
	submitted.Add(students)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range students {
		wg.Add(1)
		go func() {
			defer wg.Done()
			load.results[i] = runStudent(ctx, base, i, runs, reconnectEvery > 0 && i%reconnectEvery == 0, &joined, &submitted)
		}()
	}
	submitted.Wait()
	load.stats[1] = srv.snapshot()
	wg.Wait()
	load.elapsed = time.Since(start)
	time.Sleep(2 * time.Second) // connections closed; let the server let go of them
	load.stats[2] = srv.snapshot()
	return load
}

// tally logs every student that failed and every run that did not end with exactly one terminal
// message, and returns those problems' count and all the send-to-queued times, sorted.
func tally(results []studentResult, runs int) (toQueued []time.Duration, bad int) {
	for i, r := range results {
		if r.err != nil {
			log.Printf("student %d: %v", i, r.err)
			bad++
			continue
		}
		toQueued = append(toQueued, r.toQueued...)
		for k := range runs {
			if r.terminals[k] != 1 {
				log.Printf("student %d run %d: %d terminal messages, want 1", i, k, r.terminals[k])
				bad++
			}
		}
	}
	slices.Sort(toQueued)
	return toQueued, bad
}

// printLoad prints the load's two markdown tables: the runs (with the p50 and p99 of the sorted
// toQueued, the problems and the runs done in the database) and the server's goroutines and RSS.
func printLoad(load classLoad, runs, reconnectEvery int, toQueued []time.Duration, bad, done int) {
	students := len(load.results)
	pct := func(p float64) time.Duration {
		if len(toQueued) == 0 {
			return 0
		}
		return toQueued[min(len(toQueued)-1, int(p*float64(len(toQueued))))]
	}
	fmt.Printf("| students | runs | reconnecting | all done in | queued p50 | queued p99 | runs done in the database | problems |\n|---|---|---|---|---|---|---|---|\n")
	reconnecting := 0
	if reconnectEvery > 0 {
		reconnecting = (students + reconnectEvery - 1) / reconnectEvery
	}
	fmt.Printf("| %d | %d | %d | %.1f s | %.1f ms | %.1f ms | %d of %d | %d |\n\n", students, students*runs, reconnecting, load.elapsed.Seconds(),
		float64(pct(0.5).Microseconds())/1000, float64(pct(0.99).Microseconds())/1000, done, students*runs, bad)
	b, d, a := load.stats[0], load.stats[1], load.stats[2]
	fmt.Printf("| server | before | during (all runs sent) | after (all ended, sockets closed) |\n|---|---|---|---|\n")
	fmt.Printf("| goroutines | %d | %d | %d |\n| RSS | %.0f MiB | %.0f MiB | %.0f MiB |\n", b.goroutines, d.goroutines, a.goroutines,
		float64(b.rssKiB)/1024, float64(d.rssKiB)/1024, float64(a.rssKiB)/1024)
}

// countDone signs in as the instructor and counts the runs that the class's results CSV shows done.
func countDone(base string) (int, error) {
	c, err := joinAs(base, "bench-teacher", "Teacher")
	if err != nil {
		return 0, err
	}
	resp, err := c.Get(base + "/api/class/results.csv")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	rows, err := csv.NewReader(resp.Body).ReadAll()
	if err != nil {
		return 0, err
	}
	runsDone := map[string]bool{}
	for _, f := range rows[1:] { // student, run, lesson, cell, action, edited, status, …
		if f[6] == "done" {
			runsDone[f[1]] = true
		}
	}
	return len(runsDone), nil
}

func joinAs(base, tok, name string) (*http.Client, error) {
	jar, _ := cookiejar.New(nil)
	// No keep-alive: each student's few requests get fresh connections, never a stale pooled one.
	c := &http.Client{Jar: jar, Timeout: time.Minute, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.PostForm(base+"/join", url.Values{"token": {tok}, "name": {name}})
	if err != nil {
		return nil, err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("join %s: %s", name, resp.Status)
	}
	return c, nil
}

func dialWS(ctx context.Context, base string, c *http.Client) (*websocket.Conn, error) {
	u, _ := url.Parse(base)
	h := http.Header{"Origin": {base}}
	for _, ck := range c.Jar.Cookies(u) {
		h.Add("Cookie", ck.String())
	}
	ws, _, err := websocket.DefaultDialer.DialContext(ctx, "ws"+strings.TrimPrefix(base, "http")+"/ws", h)
	return ws, err
}

// runStudent joins, sends its runs at once and reads until each has ended; a reconnecting student
// closes its socket after its first `started`, reconnects and replays the runs it has not seen end.
func runStudent(ctx context.Context, base string, i, runs int, reconnect bool, joined, submitted *sync.WaitGroup) (res studentResult) {
	res.terminals = map[int]int{}
	sentOnce := false
	defer func() {
		if !sentOnce {
			submitted.Done()
		}
	}()
	c, err := joinAs(base, token, fmt.Sprintf("student %03d", i))
	joined.Done()
	if err != nil {
		res.err = err
		return
	}
	s := &studentConn{c: c, base: base}
	if s.ws, err = dialWS(ctx, base, c); err != nil {
		res.err = err
		return
	}
	// Both close the socket the student has at the time: a reconnect replaces it.
	defer func() { s.ws.Close() }()
	context.AfterFunc(ctx, func() { s.ws.Close() })
	if res.err = s.sendRuns(runs); res.err != nil {
		return
	}
	submitted.Done()
	sentOnce = true
	if res.err = s.awaitEnds(ctx, &res, runs, reconnect); res.err != nil {
		return
	}
	s.countLateTerminals(res.terminals)
	return res
}

// studentConn is one student's session: its signed-in client, its current websocket, and its runs:
// when each was sent (until its first `queued`) and each message id's run index.
type studentConn struct {
	c     *http.Client
	base  string
	ws    *websocket.Conn
	sent  map[string]time.Time
	index map[string]int
}

// sendRuns sends the student's runs r0, r1, … at once, noting when each was sent.
func (s *studentConn) sendRuns(runs int) error {
	s.sent, s.index = map[string]time.Time{}, map[string]int{}
	for k := range runs {
		id := fmt.Sprintf("r%d", k)
		s.sent[id], s.index[id] = time.Now(), k
		msg := map[string]any{"type": "run", "id": id, "lesson": lesson, "cell": cell, "source": source}
		if err := s.ws.WriteJSON(msg); err != nil {
			return err
		}
	}
	return nil
}

// awaitEnds reads until each of the runs has had a terminal message, counting them in
// res.terminals and timing each run's first `queued` into res.toQueued. A reconnecting student drops
// its socket once, mid-run (reconnectMidRun). An error message for no run of its own ends the wait.
func (s *studentConn) awaitEnds(ctx context.Context, res *studentResult, runs int, reconnect bool) error {
	dropped := false
	for len(res.terminals) < runs {
		var m server.Message
		if err := s.ws.ReadJSON(&m); err != nil {
			return fmt.Errorf("reading: %w", err)
		}
		k, ok := s.index[m.ID]
		if !ok {
			if m.Type == server.TypeError {
				return fmt.Errorf("error: %s", m.Message)
			}
			continue
		}
		if m.Type == server.TypeQueued {
			if t, first := s.sent[m.ID]; first {
				res.toQueued = append(res.toQueued, time.Since(t))
				delete(s.sent, m.ID)
			}
		}
		if server.Terminal(m.Type) {
			res.terminals[k]++
		}
		// Close mid-run: once every run is recorded (each has had its queued) and one has started.
		if reconnect && !dropped && len(s.sent) == 0 && m.Type == server.TypeStarted {
			dropped = true
			if err := s.reconnectMidRun(ctx, res.terminals); err != nil {
				return err
			}
		}
	}
	return nil
}

// reconnectMidRun closes the student's socket, opens a new one 200 ms later and replays the runs
// whose end it has not seen (replayUnended).
func (s *studentConn) reconnectMidRun(ctx context.Context, terminals map[int]int) error {
	s.ws.Close()
	time.Sleep(200 * time.Millisecond)
	var err error
	if s.ws, err = dialWS(ctx, s.base, s.c); err != nil {
		return err
	}
	return replayUnended(s.c, s.base, s.ws, terminals, s.index)
}

// countLateTerminals reads for 300 ms more, after every run has ended: nothing more may come, so a
// second terminal message for a run shows in terminals here.
func (s *studentConn) countLateTerminals(terminals map[int]int) {
	_ = s.ws.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	for {
		var m server.Message
		if err := s.ws.ReadJSON(&m); err != nil {
			break
		}
		if k, ok := s.index[m.ID]; ok && server.Terminal(m.Type) {
			terminals[k]++
		}
	}
}

// replayUnended lists the student's runs (in the order sent) and replays those whose end it has not
// seen, under new ids that map to the same run index.
func replayUnended(c *http.Client, base string, ws *websocket.Conn, terminals map[int]int, index map[string]int) error {
	resp, err := c.Get(base + "/api/runs")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var body struct {
		Runs []struct {
			ID int64 `json:"id"`
		} `json:"runs"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return err
	}
	for k, r := range body.Runs {
		if terminals[k] > 0 {
			continue
		}
		id := fmt.Sprintf("replay%d", k)
		index[id] = k
		if err := ws.WriteJSON(map[string]any{"type": "replay", "id": id, "run": r.ID}); err != nil {
			return err
		}
	}
	return nil
}

// measureInterference times a measuring cell (gonum at n = 256, 5 repeats) alone, then again while
// eight other students keep the shared slots busy with systolic simulator runs (a 64×64 array,
// too large to animate, so that their output is small) (runs that time
// nothing), and prints the median GFLOP/s of each. The queue never runs a shared run beside a
// measuring one, so the two should agree within the machine's noise.
func measureInterference(ctx context.Context, base string, n int) error {
	c, err := joinAs(base, token, "timer")
	if err != nil {
		return err
	}
	ws, err := dialWS(ctx, base, c)
	if err != nil {
		return err
	}
	defer ws.Close()
	simCell, err := systolicCell(c, base)
	if err != nil {
		return err
	}
	alone, err := measureSeries(ws, "alone", n)
	if err != nil {
		return err
	}
	stopFlood := floodSimulators(ctx, base, simCell)
	time.Sleep(time.Second)
	beside, err := measureSeries(ws, "beside", n)
	simRuns := stopFlood()
	if err != nil {
		return err
	}
	med := func(x []float64) float64 { return x[len(x)/2] }
	fmt.Printf("\n| gonum, n = 256, %d runs each | median GFLOP/s | min | max |\n|---|---|---|---|\n", n)
	fmt.Printf("| alone | %.2f | %.2f | %.2f |\n", med(alone), alone[0], alone[len(alone)-1])
	fmt.Printf("| beside 8 students' systolic runs (%d ran meanwhile) | %.2f | %.2f | %.2f |\n", simRuns, med(beside), beside[0], beside[len(beside)-1])
	fmt.Printf("\nratio of medians, beside / alone: %.3f\n", med(beside)/med(alone))
	return nil
}

// measuringSource is the measuring cell that measureInterference times: gonum at n = 256, 5 repeats.
const measuringSource = "kernels: [gonum]\nsizes: [256]\nrepeats: 5\n"

// measureSeries runs the measuring cell n times on ws, one after another (ids label0, label1, …),
// and returns the GFLOP/s of each, sorted.
func measureSeries(ws *websocket.Conn, label string, n int) ([]float64, error) {
	var out []float64
	for i := range n {
		g, err := measureOnce(ws, fmt.Sprintf("%s%d", label, i))
		if err != nil {
			return nil, err
		}
		out = append(out, g)
	}
	slices.Sort(out)
	return out, nil
}

// measureOnce runs the measuring cell on ws as id and returns the throughput column of its results
// table's last row; a run that ends other than done is an error.
func measureOnce(ws *websocket.Conn, id string) (float64, error) {
	if err := ws.WriteJSON(map[string]any{"type": "run", "id": id, "lesson": lesson, "cell": cell, "source": measuringSource}); err != nil {
		return 0, err
	}
	var cols []string
	gflops := 0.0
	for {
		var m server.Message
		if err := ws.ReadJSON(&m); err != nil {
			return 0, err
		}
		if m.ID != id {
			continue
		}
		switch {
		case m.Type == server.TypeTable && m.Table.ID == "results":
			cols = nil
			for _, col := range m.Table.Columns {
				cols = append(cols, col.Label)
			}
		case m.Type == server.TypeRow && m.Row.Table == "results":
			if i := slices.Index(cols, "throughput"); i >= 0 && i < len(m.Row.Values) {
				gflops, _ = m.Row.Values[i].(float64)
			}
		case server.Terminal(m.Type):
			if m.Type != server.TypeDone {
				return 0, fmt.Errorf("measuring run %s: %s %s", id, m.Type, m.Message)
			}
			return gflops, nil
		}
	}
}

// floodSimulators starts eight students that each run simCell (the systolic simulator of TPUs and systolic arrays) over
// and over, one run at a time, until stop is called. stop waits for them to end and returns how many
// simulator runs ended meanwhile.
func floodSimulators(ctx context.Context, base, simCell string) (stop func() int) {
	floodCtx, stopFlood := context.WithCancel(ctx)
	var flood sync.WaitGroup
	simRuns := 0
	var mu sync.Mutex
	ended := func() {
		mu.Lock()
		simRuns++
		mu.Unlock()
	}
	for f := range 8 {
		flood.Add(1)
		go func() {
			defer flood.Done()
			simulatorStudent(floodCtx, base, simCell, f, ended)
		}()
	}
	return func() int {
		stopFlood()
		flood.Wait()
		return simRuns
	}
}

// simulatorStudent joins as "simulator f" and runs simCell with a 64×64 array (too big to animate:
// a row and a chart, no frames) until ctx ends or the socket fails, calling ended after each run's
// terminal message.
func simulatorStudent(ctx context.Context, base, simCell string, f int, ended func()) {
	fc, err := joinAs(base, token, fmt.Sprintf("simulator %d", f))
	if err != nil {
		return
	}
	fws, err := dialWS(ctx, base, fc)
	if err != nil {
		return
	}
	defer fws.Close()
	context.AfterFunc(ctx, func() { fws.Close() })
	for k := 0; ctx.Err() == nil; k++ {
		id := fmt.Sprintf("s%d", k)
		src := "array: 64\nm: 512\nn: 256\nk: 256\nclock_mhz: 700\n" // too big to animate: a row and a chart, no frames
		if fws.WriteJSON(map[string]any{"type": "run", "id": id, "lesson": "tpus-and-systolic-arrays", "cell": simCell, "source": src}) != nil {
			return
		}
		for {
			var m server.Message
			if fws.ReadJSON(&m) != nil {
				return
			}
			if m.ID == id && server.Terminal(m.Type) {
				ended()
				break
			}
		}
	}
}

// systolicCell finds the id of the systolic cell with array: 16 in the page of TPUs and systolic arrays.
func systolicCell(c *http.Client, base string) (string, error) {
	resp, err := c.Get(base + "/lessons/tpus-and-systolic-arrays")
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var ids []string
	for _, part := range strings.Split(string(b), `data-cell="`)[1:] {
		id, rest, _ := strings.Cut(part, `"`)
		if strings.Contains(rest[:min(len(rest), 400)], `data-kind="systolic"`) {
			ids = append(ids, id)
		}
	}
	if len(ids) < 2 {
		return "", fmt.Errorf("TPUs and systolic arrays has %d systolic cells, want 2", len(ids))
	}
	return ids[1], nil
}
