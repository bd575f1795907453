// Command gpuladder measures the GPU ladder (cuBLAS SGEMM, TF32 and BF16 on tensor cores, and the
// project's own CUDA kernels) through the playground's GPU worker, and PyTorch's torch.matmul as an
// independent cross-check, on the machine it runs on. It prints a markdown table for
// docs/benchmarks.md: per kernel and size, the TFLOP/s of each round's median launch (the slowest
// round, the median round, the fastest), the median as a share of cuBLAS SGEMM's and of the device's
// FP32 peak derived from its attributes (SMs × FP32 lanes × 2 × clock), and the largest relative
// error against the float64 reference.
//
// Per size, every kernel and PyTorch are measured one after another in each of -rounds rounds, so
// ratios come from the same stretch of time. The kernels are the rows of the GPU kernel table
// (gpu/nvidia/ladder.go, docs/gpu-kernels.md), in its order. It is built here (no Go on the GPU
// machine) with CGO_ENABLED=0 go build -o build/gpuladder ./bench/gpuladder, and run there as
// build/gpuladder -sizes 4096,8192 (the steps are in docs/gpu.md).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gpuplayground/playground/gpu"
	"github.com/gpuplayground/playground/gpu/nvidia"
	"github.com/gpuplayground/playground/kernels"
	"github.com/gpuplayground/playground/numeric"
)

// torchScript times torch.matmul in FP32 with TF32 off, with CUDA events after warm-up, and prints one
// JSON list of seconds per call.
const torchScript = `
import json, sys, torch
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
n, repeats = int(sys.argv[1]), int(sys.argv[2])
a = torch.rand(n, n, device="cuda", dtype=torch.float32) * 2 - 1
b = torch.rand(n, n, device="cuda", dtype=torch.float32) * 2 - 1
for _ in range(3):
    a @ b
torch.cuda.synchronize()
out = []
for _ in range(repeats):
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record(); a @ b; e.record(); torch.cuda.synchronize()
    out.append(s.elapsed_time(e) / 1e3)
print(json.dumps(out))
`

func main() {
	if gpu.ServeChild(os.Args, os.Stdin, os.Stdout) { // this binary is its own GPU worker
		return
	}
	sizes := flag.String("sizes", "4096,8192", "square sizes")
	var all []string
	for _, k := range nvidia.Kernels() {
		all = append(all, k.Name)
	}
	kernelList := flag.String("kernels", strings.Join(all, ","), "GPU kernels, in table order (docs/gpu-kernels.md)")
	rounds := flag.Int("rounds", 3, "rounds; each times every kernel repeats times")
	repeats := flag.Int("repeats", 10, "timed launches per kernel per round, after a warm-up")
	python := flag.String("python", "python3", "Python with PyTorch for the cross-check; empty to skip it")
	flag.Parse()

	exe, err := os.Executable()
	if err != nil {
		log.Fatal(err)
	}
	sup := &gpu.Supervisor{Transport: gpu.Exec{Path: exe, Args: []string{gpu.WorkerCommand}}, LaunchTimeout: 2 * time.Minute}
	defer sup.Close()
	ctx := context.Background()
	peak, hasPeak := printDevice(ctx, sup)
	fmt.Println("\n| kernel | n | slowest round TFLOP/s | median | fastest | median / cuBLAS SGEMM | median / FP32 peak | rel. error |")
	fmt.Println("|---|---|---|---|---|---|---|---|")
	names := strings.Split(*kernelList, ",")
	for _, s := range strings.Split(*sizes, ",") {
		n, err := strconv.Atoi(s)
		if err != nil {
			log.Fatal(err)
		}
		m, err := measureSize(ctx, sup, names, n, *rounds, *repeats, *python)
		if err != nil {
			log.Fatal(err)
		}
		order := slices.Clone(names)
		if *python != "" {
			order = append(order, "torch.matmul")
		}
		base := numeric.Median(m.seconds["cublas"])
		for _, k := range order {
			fmt.Println(m.row(k, base, peak, hasPeak))
		}
	}
}

// printDevice probes the GPU through the worker (the program ends if there is none) and prints the
// time, the device, its libraries and the FP32 peak derived from its attributes, which it returns
// (hasPeak false where it cannot be derived).
func printDevice(ctx context.Context, sup *gpu.Supervisor) (peak float64, hasPeak bool) {
	report := gpu.Probe(ctx, sup)
	if report.Unavailable != "" {
		log.Fatal(report.Unavailable)
	}
	dev := report.Devices[0]
	fmt.Printf("# %s; %s\n", time.Now().UTC().Format("2006-01-02T15:04Z"), report.Summary())
	for _, l := range report.Libraries {
		fmt.Printf("# %s: %s (%s)\n", l.Name, l.Path, l.Via)
	}
	peak, hasPeak = dev.PeakFP32()
	if hasPeak {
		fmt.Printf("# FP32 peak derived from the attributes: %.1f TFLOP/s\n", peak/1e12)
	}
	return peak, hasPeak
}

// sizeResult is one size's measurements: per kernel (and "torch.matmul"), each round's median
// seconds, and the largest relative error of its rounds (none for torch.matmul, which is not checked).
type sizeResult struct {
	n       int
	seconds map[string][]float64
	relErr  map[string]float64
}

// measureSize runs rounds rounds at n: in each, every kernel in names through the worker (repeats
// timed launches after a warm-up) and then, unless python is empty, torch.matmul. A kernel whose
// result is over its tolerance is an error.
func measureSize(ctx context.Context, sup *gpu.Supervisor, names []string, n, rounds, repeats int, python string) (sizeResult, error) {
	m := sizeResult{n: n, seconds: map[string][]float64{}, relErr: map[string]float64{}}
	for range rounds {
		for _, k := range names {
			r, err := gpu.Run(ctx, sup, gpu.Request{Kernel: k, N: n, DType: "float32", Repeats: repeats}, nil)
			if err != nil {
				return m, err
			}
			if !r.OK {
				return m, fmt.Errorf("%s at n=%d: relative error %g is over the tolerance", k, n, r.RelError)
			}
			// The worker reports the median, min and max of its launches; keep the median of each round.
			m.seconds[k] = append(m.seconds[k], r.Seconds)
			m.relErr[k] = max(m.relErr[k], r.RelError)
		}
		if python != "" {
			ts, err := runTorch(python, n, repeats)
			if err != nil {
				return m, err
			}
			m.seconds["torch.matmul"] = append(m.seconds["torch.matmul"], numeric.Median(ts))
		}
	}
	return m, nil
}

// row is kernel k's markdown table row: TFLOP/s of its slowest, median and fastest round, its
// median as a share of base (cuBLAS SGEMM's median seconds; – where 0) and of peak (– without one),
// and its largest relative error.
func (m sizeResult) row(k string, base, peak float64, hasPeak bool) string {
	flops := kernels.FLOPs(m.n, m.n, m.n)
	ts := m.seconds[k]
	med := numeric.Median(ts)
	row := fmt.Sprintf("| %s | %d | %.1f | %.1f | %.1f | ", k, m.n, flops/slices.Max(ts)/1e12, flops/med/1e12, flops/slices.Min(ts)/1e12)
	if base > 0 {
		row += fmt.Sprintf("%.0f%% | ", 100*base/med)
	} else {
		row += "– | "
	}
	if hasPeak {
		row += fmt.Sprintf("%.0f%% | ", 100*flops/med/peak)
	} else {
		row += "– | "
	}
	if e, ok := m.relErr[k]; ok {
		row += fmt.Sprintf("%.1e |", e)
	} else {
		row += "not checked |"
	}
	return row
}

// runTorch times torch.matmul at n in the given Python and returns seconds per call.
func runTorch(python string, n, repeats int) ([]float64, error) {
	out, err := exec.Command(python, "-c", torchScript, strconv.Itoa(n), strconv.Itoa(repeats)).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return nil, fmt.Errorf("torch.matmul n=%d: %v\n%s", n, err, ee.Stderr)
		}
		return nil, fmt.Errorf("torch.matmul n=%d: %v", n, err)
	}
	var ts []float64
	if err := json.Unmarshal(out, &ts); err != nil || len(ts) == 0 {
		return nil, fmt.Errorf("torch.matmul n=%d printed %q: %v", n, out, err)
	}
	return ts, nil
}
