// Command ladder measures every CPU rung against OpenBLAS (1 and 2 threads) on this machine, and
// prints a markdown table of min/median/max GFLOP/s for docs/benchmarks.md. bench/cpu-ladder.sh
// builds the OpenBLAS program (-openblas) and runs it. Per size, each rung and OpenBLAS are measured
// one after another in each of -rounds rounds, so their ratios come from the same stretch of time.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"

	"github.com/gpuplayground/playground/kernels"
	"github.com/gpuplayground/playground/numeric"
	"golang.org/x/sys/cpu"
)

func main() {
	openblas := flag.String("openblas", "", "the bench/openblas/gemm program")
	sizes := flag.String("sizes", "256,512,1024,2048", "square sizes")
	rounds := flag.Int("rounds", 3, "rounds; each times every rung repeats times")
	repeats := flag.Int("repeats", 3, "timed runs per rung per round, after a warm-up")
	dtypes := flag.String("dtypes", "float32,float64", "precisions")
	slow := flag.Int("slow-max", 1024, "largest n for naive, ikj and tiled (they take minutes above)")
	rungs := flag.String("rungs", "", "comma-separated rungs to time (default all)")
	flag.Parse()
	// OpenBLAS picks its kernels by CPU model; a model newer than the library falls back to generic
	// ones (0.3.21 runs this project's model-207 Xeon as "Prescott"). So it is timed twice: as it
	// detects, and with the kernels matching the CPU's widest vector unit.
	coreType := ""
	switch {
	case cpu.X86.HasAVX512F:
		coreType = "SkylakeX"
	case cpu.X86.HasAVX2:
		coreType = "Haswell"
	}

	for _, dtype := range strings.Split(*dtypes, ",") {
		fmt.Printf("\n### %s (micro-kernel: %s)\n\n", dtype, kernels.MicroKernel(dtype))
		fmt.Println("| rung | n | min GFLOP/s | median | max | median / best OpenBLAS 2 threads |")
		fmt.Println("|---|---|---|---|---|---|")
		for _, s := range strings.Split(*sizes, ",") {
			n, _ := strconv.Atoi(s)
			samples := map[string][]float64{}
			var order []string
			add := func(name string, gs []float64) {
				if _, ok := samples[name]; !ok {
					order = append(order, name)
				}
				samples[name] = append(samples[name], gs...)
			}
			for range *rounds {
				for _, ct := range []string{"", coreType} {
					for _, threads := range []int{1, 2} {
						gs, err := runOpenBLAS(*openblas, dtype, n, *repeats, threads, ct)
						if err != nil {
							log.Fatal(err)
						}
						label := "detected"
						if ct != "" {
							label = ct + " kernels"
						}
						add(fmt.Sprintf("OpenBLAS (%s), %d thread(s)", label, threads), gs)
					}
					if coreType == "" {
						break
					}
				}
				for _, k := range kernels.CPU() {
					if n > *slow && (k.Name == "naive" || k.Name == "ikj" || k.Name == "tiled" || k.Name == "packed") {
						continue
					}
					if *rungs != "" && !slices.Contains(strings.Split(*rungs, ","), k.Name) {
						continue
					}
					add(k.Name, measure(k, dtype, n, *repeats))
				}
			}
			ref := 0.0
			for name, g := range samples {
				if strings.HasPrefix(name, "OpenBLAS") && strings.HasSuffix(name, "2 thread(s)") {
					ref = max(ref, numeric.Median(g))
				}
			}
			for _, name := range order {
				g := samples[name]
				med := numeric.Median(g)
				fmt.Printf("| %s | %d | %.1f | %.1f | %.1f | %.2f |\n", name, n, slices.Min(g), med, slices.Max(g), med/ref)
			}
		}
	}
}

// measure times one rung as the server does: a warm-up, then repeats timed calls.
func measure(k kernels.Kernel, dtype string, n, repeats int) []float64 {
	rng := rand.New(rand.NewPCG(1, uint64(n)))
	var run func(context.Context) error
	if dtype == "float64" {
		a, b, c := make([]float64, n*n), make([]float64, n*n), make([]float64, n*n)
		numeric.Random(rng, a)
		numeric.Random(rng, b)
		run = func(ctx context.Context) error { return k.F64(ctx, c, a, b, n, n, n, kernels.Options{}) }
	} else {
		a, b, c := make([]float32, n*n), make([]float32, n*n), make([]float32, n*n)
		numeric.Random(rng, a)
		numeric.Random(rng, b)
		run = func(ctx context.Context) error { return k.F32(ctx, c, a, b, n, n, n, kernels.Options{}) }
	}
	t, err := numeric.Measure(context.Background(), repeats, run, nil)
	if err != nil {
		log.Fatal(err)
	}
	var gs []float64
	for _, s := range t.Samples {
		gs = append(gs, kernels.FLOPs(n, n, n)/s/1e9)
	}
	return gs
}

func runOpenBLAS(prog, dtype string, n, repeats, threads int, coreType string) ([]float64, error) {
	cmd := exec.Command(prog, map[bool]string{true: "d", false: "s"}[dtype == "float64"], strconv.Itoa(n), strconv.Itoa(repeats))
	cmd.Env = append(os.Environ(), fmt.Sprintf("OPENBLAS_NUM_THREADS=%d", threads))
	if coreType != "" {
		cmd.Env = append(cmd.Env, "OPENBLAS_CORETYPE="+coreType)
	}
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", prog, err)
	}
	var gs []float64
	for _, f := range strings.Fields(string(out)) {
		g, err := strconv.ParseFloat(f, 64)
		if err != nil {
			return nil, err
		}
		gs = append(gs, g)
	}
	return gs, nil
}
