package server

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/gpuplayground/playground/gpu"
	"github.com/gpuplayground/playground/gpu/nvidia"
	"github.com/gpuplayground/playground/harness"
	"github.com/gpuplayground/playground/internal/testparallel"
)

const fakeGPUCommand = "fake-gpu-worker"

// TestMain lets this test binary serve as the GPU worker that the servers under test start, or as
// a fake worker with a GPU.
func TestMain(m *testing.M) {
	if gpu.ServeChild(os.Args, os.Stdin, os.Stdout) {
		os.Exit(0)
	}
	if len(os.Args) > 3 && os.Args[1] == serveCommand {
		serveForTest(os.Args[2:])
	}
	if len(os.Args) > 1 && os.Args[1] == fakeGPUCommand {
		fakeGPU()
		os.Exit(0)
	}
	// The tests that call t.Parallel wait (timeouts, sessions, compile limits, worker processes)
	// far more than they compute: up to eight run at once, after the others.
	testparallel.Default(8)
	os.Exit(m.Run())
}

// fakeGPU is a worker on a pretend device: it reports one GPU, compiles anything, and answers each
// run with progress lines and a result that echoes the request, so tests can check what was asked.
func fakeGPU() {
	enc := json.NewEncoder(os.Stdout)
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var req gpu.Request
		_ = json.Unmarshal(sc.Bytes(), &req)
		switch req.Op {
		case "probe":
			_ = enc.Encode(gpu.Response{ID: req.ID, Done: true, Report: &nvidia.Report{Driver: "13.0",
				Devices: []nvidia.Device{{Name: "Fake GPU", ComputeCapability: 90, SMs: 132, MemoryBytes: 80 << 30,
					ClockKHz: 1980000, MemoryClockKHz: 2619000, MemoryBusBits: 5120}}}})
		case "compile": // with the real compiler where there is one, so that the PTX runs in the virtual GPU
			ptx := "// fake PTX for " + req.Name
			if nv, cl, err := nvidia.ChosenCompiler(); err == nil {
				if ptx, err = nvidia.CompileFor(context.Background(), nv, cl, nvidia.FindHeaders(nv), req.Source, req.Name, req.Arch); err != nil {
					_ = enc.Encode(gpu.Response{ID: req.ID, Done: true, Error: err.Error()})
					continue
				}
			}
			_ = enc.Encode(gpu.Response{ID: req.ID, Done: true, PTX: ptx})
		case "run":
			if req.Kernel == "custom" {
				g := (req.N + 15) / 16 // the cell's grid formula, ceil(n/16)
				if req.Entry != "twice_mm" || req.Block != [3]int{16, 16, 1} || req.Grid != [3]int{g, g, 1} || !strings.Contains(req.PTX, "twice_mm") {
					_ = enc.Encode(gpu.Response{ID: req.ID, Done: true, Error: fmt.Sprintf("fake: wrong launch %s %v %v", req.Entry, req.Block, req.Grid)})
					continue
				}
			}
			for i := 1; i <= req.Repeats+1; i++ {
				_ = enc.Encode(gpu.Response{ID: req.ID, Progress: &[2]int{i, req.Repeats + 1}})
			}
			_ = enc.Encode(gpu.Response{ID: req.ID, Done: true, Result: &harness.Result{
				Kernel: req.Kernel, N: req.N, DType: req.DType, Seconds: 1e-3, MinSeconds: 1e-3, MaxSeconds: 1e-3,
				GFLOPS: 1, OK: true, H2DSeconds: map[bool]float64{true: 1}[req.Transfers]}})
		}
	}
}
