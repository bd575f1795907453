// Command compare sets the GFLOP/s the server streams for a kernel against `go test -bench` of the same
// kernel and size, and prints a markdown table for docs/benchmarks.md. bench/compare.sh runs it.
//
// It starts the real server on 127.0.0.1:0. Then, -rounds times, for every kernel and size it runs that
// one benchmark from the compiled kernels test binary (-testbin, built by `go test -c`) for -calls
// iterations, and straight after it the same kernel and size through the server's websocket with
// -calls timed repeats. Each pair is measured back to back, so the machine's drift (large on shared
// 2-core VMs) cancels in the pair's ratio; the table gives the medians over rounds.
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"log"
	"net"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gorilla/websocket"
	"github.com/gpuplayground/playground/gpu"
	"github.com/gpuplayground/playground/kernels"
	"github.com/gpuplayground/playground/numeric"
	"github.com/gpuplayground/playground/server"
)

type key struct {
	kernel, dtype string
	n             int
}

func (k key) bench() string {
	return fmt.Sprintf("BenchmarkMatmul/%s/%s/n=%d$", k.kernel, k.dtype, k.n)
}

var gflopsRE = regexp.MustCompile(`\s([\d.]+) GFLOP/s`)

func main() {
	if gpu.ServeChild(os.Args, os.Stdin, os.Stdout) { // the server it starts runs its GPU worker from this binary
		return
	}
	testbin := flag.String("testbin", "", "kernels test binary built by `go test -c ./kernels`")
	rounds := flag.Int("rounds", 7, "measurement pairs per kernel and size")
	calls := flag.Int("calls", 20, "timed calls per benchmark run and per server run")
	dtype := flag.String("dtype", "float32", "precision to compare")
	only := flag.String("kernels", "", "comma-separated kernels to compare (default all)")
	flag.Parse()

	var keys []key
	for _, k := range kernels.CPU() {
		if *only != "" && !slices.Contains(strings.Split(*only, ","), k.Name) {
			continue
		}
		for _, n := range []int{256, 512} {
			keys = append(keys, key{k.Name, *dtype, n})
		}
	}

	srv, err := server.New(server.Config{})
	if err != nil {
		log.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = srv.Serve(ctx, ln) }()
	ws, _, err := websocket.DefaultDialer.Dial("ws://"+ln.Addr().String()+"/ws", nil)
	if err != nil {
		log.Fatal(err)
	}
	defer ws.Close()

	bench, served, ratios := map[key][]float64{}, map[key][]float64{}, map[key][]float64{}
	for r := range *rounds {
		for _, k := range keys {
			b, err := runBench(*testbin, k, *calls)
			if err != nil {
				log.Fatal(err)
			}
			s, err := runServer(ws, k, *calls, fmt.Sprintf("%s-%d-%d", k.kernel, k.n, r))
			if err != nil {
				log.Fatalf("%v: %v", k, err)
			}
			bench[k], served[k], ratios[k] = append(bench[k], b), append(served[k], s), append(ratios[k], s/b)
			fmt.Fprintf(os.Stderr, "round %d %s/%s/n=%d: bench %.2f server %.2f GFLOP/s\n", r, k.kernel, k.dtype, k.n, b, s)
		}
	}
	fmt.Println("| kernel | dtype | n | `go test -bench` GFLOP/s | server GFLOP/s | server / bench (median of pairs) | within ±10% |")
	fmt.Println("|---|---|---|---|---|---|---|")
	for _, k := range keys {
		ratio := numeric.Median(ratios[k])
		ok := "yes"
		if ratio < 0.9 || ratio > 1.1 {
			ok = "**no**"
		}
		fmt.Printf("| %s | %s | %d | %.2f | %.2f | %.3f | %s |\n", k.kernel, k.dtype, k.n,
			numeric.Median(bench[k]), numeric.Median(served[k]), ratio, ok)
	}
}

// runBench runs one benchmark of the test binary for calls iterations and returns its GFLOP/s.
func runBench(testbin string, k key, calls int) (float64, error) {
	cmd := exec.Command(testbin, "-test.run", "^$", "-test.bench", k.bench(), "-test.benchtime", fmt.Sprintf("%dx", calls))
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return 0, fmt.Errorf("%s: %w", testbin, err)
	}
	m := gflopsRE.FindSubmatch(out)
	if m == nil {
		return 0, fmt.Errorf("no GFLOP/s in the output of %s:\n%s", k.bench(), bytes.TrimSpace(out))
	}
	return strconv.ParseFloat(string(m[1]), 64)
}

// runServer runs one kernel at one size through the websocket and returns the streamed GFLOP/s.
func runServer(ws *websocket.Conn, k key, repeats int, id string) (float64, error) {
	src := fmt.Sprintf("kernels: [%s]\nsizes: [%d]\ndtype: %s\nrepeats: %d\n", k.kernel, k.n, k.dtype, repeats)
	msg := server.Message{Type: server.TypeRun, ID: id, RunRequest: &server.RunRequest{
		Lesson: "fast-cpu-matmul", Cell: "fast-cpu-matmul-0", Source: src}}
	if err := ws.WriteJSON(msg); err != nil {
		return 0, err
	}
	gflops, col := 0.0, -1
	_ = ws.SetReadDeadline(time.Now().Add(5 * time.Minute))
	for {
		var m server.Message
		if err := ws.ReadJSON(&m); err != nil {
			return 0, err
		}
		if m.ID != id {
			continue
		}
		switch m.Type {
		case server.TypeTable:
			for i, c := range m.Table.Columns {
				if c.Unit == "GFLOP/s" {
					col = i
				}
			}
		case server.TypeRow:
			if col >= 0 && col < len(m.Row.Values) {
				gflops, _ = m.Row.Values[col].(float64)
			}
		case server.TypeDone:
			return gflops, nil
		case server.TypeError, server.TypeCancelled:
			return 0, fmt.Errorf("%s: %s", m.Type, m.Message)
		}
	}
}
