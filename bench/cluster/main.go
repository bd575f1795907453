// Command cluster measures runs spread over workers through NATS (package cluster) on this machine:
// runs per minute of a fixed mix of small cells with 1, 2 and 4 local worker processes (joined over
// loopback to the embedded NATS server, this binary re-executed as `worker`, each with -slots slots
// for the runs that time nothing: 0 is GOMAXPROCS, 1 runs every run alone), and the latency NATS
// adds to a run's first event: the median time from Execute to the first event on a worker, minus the
// same for an in-process run (machine.Local).
//
//	go run ./bench/cluster [-workers 1,2,4] [-slots 0] [-runs 40] [-rounds 3] [-latency 50]
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gpuplayground/playground/cells"
	"github.com/gpuplayground/playground/cells/builtin"
	"github.com/gpuplayground/playground/cluster"
	"github.com/gpuplayground/playground/gpu"
	"github.com/gpuplayground/playground/gpu/nvidia"
	"github.com/gpuplayground/playground/harness"
	"github.com/gpuplayground/playground/kernels"
	"github.com/gpuplayground/playground/machine"
)

// mix is the fixed mix of small cells, run in turn.
var mix = []struct{ kind, source string }{
	{"matmul", "kernels: [ikj, gonum]\nsizes: [128]\nrepeats: 3\n"},
	{"systolic", "array: 4\nm: 8\nn: 8\nk: 8\n"},
	{"allreduce", "gradient_mb: 100\ngpus: [2, 4, 8]\nlinks: {nvlink: 450}\n"},
	{"simt", "kernels: [naive]\nn: 64\n"},
}

func main() {
	if gpu.ServeChild(os.Args, os.Stdin, os.Stdout) {
		return
	}
	if len(os.Args) > 5 && os.Args[1] == "worker" {
		slots, err := strconv.Atoi(os.Args[5])
		if err == nil {
			err = cluster.RunWorker(context.Background(), cluster.WorkerConfig{Config: machine.Config{Name: os.Args[4], Slots: slots}, Join: os.Args[2], Token: os.Args[3], Out: os.Stderr})
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	workers := flag.String("workers", "1,2,4", "worker process counts")
	slots := flag.Int("slots", 0, "each worker's slots for runs that time nothing (0: GOMAXPROCS; 1: every run alone)")
	runs := flag.Int("runs", 40, "runs per round")
	rounds := flag.Int("rounds", 3, "rounds per worker count")
	latency := flag.Int("latency", 50, "runs for the first-event latency")
	flag.Parse()
	if err := run(*workers, *slots, *runs, *rounds, *latency); err != nil {
		fmt.Fprintln(os.Stderr, "cluster bench:", err)
		os.Exit(1)
	}
}

// run prints the machine, the table of runs per minute for each worker count in workerList, and the
// first-event latency that NATS adds.
func run(workerList string, slots, runs, rounds, latencyRuns int) error {
	ctx := context.Background()
	env := cells.Env{Kernels: append(kernels.CPU(), nvidia.GEMMs("no CUDA device (bench)")...), Limits: harness.DefaultLimits()}
	kinds := builtin.Kinds(env)
	fmt.Printf("%s, %d logical CPUs, %s, %s, -slots %d\n", cpu(), runtime.NumCPU(), runtime.Version(), time.Now().UTC().Format("2006-01-02"), slots)
	fmt.Println("| workers | runs | runs per minute (median of rounds) | rounds |")
	fmt.Println("|---|---|---|---|")
	var base float64
	for _, f := range strings.Split(workerList, ",") {
		n, err := strconv.Atoi(f)
		if err != nil {
			return err
		}
		rates, err := throughput(ctx, kinds, n, slots, runs, rounds)
		if err != nil {
			return err
		}
		med := median(rates)
		if base == 0 {
			base = med
		}
		fmt.Printf("| %d | %d | %.0f (×%.2f) | %s |\n", n, runs, med, med/base, fmtAll(rates))
	}
	return latency(ctx, kinds, slots, latencyRuns)
}

// throughput starts a cluster of n workers with slots slots each, runs rounds rounds of runs runs of
// the mix on it, and returns each round's runs per minute.
func throughput(ctx context.Context, kinds []cells.Kind, n, slots, runs, rounds int) ([]float64, error) {
	c, stop, err := startWith(ctx, n, slots)
	if err != nil {
		return nil, err
	}
	defer stop()
	var rates []float64
	for range rounds {
		start := time.Now()
		if err := round(ctx, c, kinds, runs); err != nil {
			return nil, err
		}
		rates = append(rates, float64(runs)/time.Since(start).Minutes())
	}
	return rates, nil
}

// round executes runs runs of the mix (run i is mix[i mod len(mix)]) at once on c and waits for them
// all; it returns one of their errors, if any failed.
func round(ctx context.Context, c *cluster.Cluster, kinds []cells.Kind, runs int) error {
	var wg sync.WaitGroup
	errs := make(chan error, runs)
	for i := range runs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m := mix[i%len(mix)]
			j, r := parseKind(kinds, m.kind, m.source)
			if err := execute(ctx, c, j, r, nil); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// latency prints the median first-event time of the allreduce cell (a model: its first event comes
// at once) in process and on one worker through NATS, and their difference.
func latency(ctx context.Context, kinds []cells.Kind, slots, latencyRuns int) error {
	j, r := parseKind(kinds, "allreduce", mix[2].source)
	local := machine.NewLocal(machine.Bare(0))
	inProc, err := firstEvents(ctx, local, j, r, latencyRuns)
	if err != nil {
		return err
	}
	c, stop, err := startWith(ctx, 1, slots)
	if err != nil {
		return err
	}
	defer stop()
	remote, err := firstEvents(ctx, c, j, r, latencyRuns)
	if err != nil {
		return err
	}
	fmt.Printf("\nfirst event of an allreduce run, median of %d: in process %.3f ms, on a worker through NATS %.3f ms: NATS adds %.3f ms\n",
		latencyRuns, median(inProc)*1e3, median(remote)*1e3, (median(remote)-median(inProc))*1e3)
	return nil
}

// firstEvents runs j on ex n times, one after another, and returns each run's firstEvent seconds.
func firstEvents(ctx context.Context, ex machine.Runner, j machine.Job, r cells.Run, n int) ([]float64, error) {
	var out []float64
	for range n {
		d, err := firstEvent(ctx, ex, j, r)
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}

// parseKind parses source as a cell of the named kind (it must parse) and returns its job and run.
func parseKind(kinds []cells.Kind, kind, source string) (machine.Job, cells.Run) {
	k, _ := cells.Lookup(kinds, kind)
	r, err := k.Parse(cells.Cell{ID: "bench", Source: source})
	if err != nil {
		panic(err)
	}
	return machine.Job{Kind: kind, Lesson: "bench", Cell: cells.Cell{ID: "bench", Source: source}}, r
}

// startWith starts a cluster with a loopback port and n worker processes of slots slots, and waits
// for them.
func startWith(ctx context.Context, n, slots int) (*cluster.Cluster, func(), error) {
	c, err := cluster.Start(ctx, cluster.Config{Listen: "127.0.0.1:0", Out: io.Discard}) // no join lines among the rows
	if err != nil {
		return nil, nil, err
	}
	var cmds []*exec.Cmd
	stop := func() {
		for _, cmd := range cmds {
			_ = cmd.Process.Signal(os.Interrupt)
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
		c.Close()
	}
	for i := range n {
		cmd := exec.Command(os.Args[0], "worker", c.WorkerURL(), c.Token(), fmt.Sprint("bench-", i), strconv.Itoa(slots))
		if err := cmd.Start(); err != nil {
			stop()
			return nil, nil, err
		}
		cmds = append(cmds, cmd)
	}
	for deadline := time.Now().Add(time.Minute); len(c.Machines()) < n; {
		if time.Now().After(deadline) {
			stop()
			return nil, nil, fmt.Errorf("%d workers did not join", n)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return c, stop, nil
}

func execute(ctx context.Context, ex machine.Runner, j machine.Job, r cells.Run, first func()) error {
	slot, err := machine.Acquire(ctx, ex, r)
	if err != nil {
		return err
	}
	defer slot.Release()
	return slot.Execute(ctx, j, r, &sink{first: first})
}

// firstEvent is the seconds from Execute to the run's first event other than the machine note.
func firstEvent(ctx context.Context, ex machine.Runner, j machine.Job, r cells.Run) (float64, error) {
	slot, err := machine.Acquire(ctx, ex, r)
	if err != nil {
		return 0, err
	}
	defer slot.Release()
	var once sync.Once
	var d time.Duration
	start := time.Now()
	err = slot.Execute(ctx, j, r, &sink{first: func() { once.Do(func() { d = time.Since(start) }) }})
	return d.Seconds(), err
}

// sink is an Emitter that only notices the first event (machine notes aside).
type sink struct{ first func() }

func (s *sink) hit() {
	if s.first != nil {
		s.first()
	}
}
func (s *sink) Emit(ev cells.Event) {
	if ev.RanOn == "" {
		s.hit()
	}
}
func (s *sink) Progress(int, int) { s.hit() }
func (s *sink) Note(_, text string) {
	if !strings.HasPrefix(text, "Ran on ") {
		s.hit()
	}
}
func (s *sink) Table(cells.Table)            { s.hit() }
func (s *sink) Row(cells.Row)                { s.hit() }
func (s *sink) Chart(func() (string, error)) { s.hit() }
func (s *sink) Frames(...any)                { s.hit() }
func (s *sink) Text(string, string)          { s.hit() }
func median(xs []float64) float64            { s := slices.Clone(xs); slices.Sort(s); return s[len(s)/2] }
func fmtAll(xs []float64) string {
	var parts []string
	for _, x := range xs {
		parts = append(parts, fmt.Sprintf("%.0f", x))
	}
	return strings.Join(parts, ", ")
}

func cpu() string {
	b, _ := os.ReadFile("/proc/cpuinfo")
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown CPU"
}
