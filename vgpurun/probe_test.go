//go:build unix

package vgpurun

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/gpuplayground/playground/estimate"
	"github.com/gpuplayground/playground/gpu/nvidia"
	"github.com/gpuplayground/playground/gpumodel"
)

// ladderAsCustom is the table kernel's launch at n as a learner's kernel ("custom", the matmul
// problem), from the embedded PTX.
func ladderAsCustom(t *testing.T, kernel string, n int) Request {
	t.Helper()
	src, err := nvidia.PTX.ReadFile(nvidia.PTXName("matmul.cu", Arch))
	if err != nil {
		t.Fatal(err)
	}
	row, ok := nvidia.LookupKernel(kernel)
	if !ok {
		t.Fatalf("no %s in the kernel table", kernel)
	}
	l := row.LaunchFor(n, Arch, "float32")
	return Request{Kernel: "custom", PTX: string(src), Entry: l.Entry, Grid: l.Grid, Block: l.Block, N: n, DType: "float32",
		GPU: gpumodel.GPUs[0], Seed: 1}
}

// cpuSeconds is the process's CPU time (user and system).
func cpuSeconds(t *testing.T) float64 {
	t.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// A probe of one block prices a learner's kernel by what it executes: its block's thread
// instructions by class, times the blocks the emulation runs, are the whole launch's (the ladder's
// grids are uniform at n = 128); and priced at costs per thread instruction of each class fitted to
// other kernels' launches (the CPU time each took here, the least of three runs: a ratio of CPU
// times, not a wall-clock budget), it predicts the CPU cost of the shared-memory tiled kernel within 1.5×, although that
// kernel costs more per thread instruction than the naive one.
func TestProbePricesKernelsByWhatTheyExecute(t *testing.T) {
	const n = 128
	fit := &estimate.Rates{SIMTLaunch: map[string]float64{}, SIMTMix: map[string][estimate.NumInstrClasses]float64{}}
	probes := map[string]Probe{}
	cpu := map[string]float64{}
	instr := map[string]float64{}
	for _, k := range []string{"cuda-naive", "cuda-coalesced", "cuda-blocktile1d", "cuda-regblock", "cuda-smem"} {
		req := ladderAsCustom(t, k, n)
		p, err := ProbeLaunch(context.Background(), req)
		if err != nil {
			t.Fatalf("%s: %v", k, err)
		}
		var res Result
		for i := range 5 { // the least of five: a GC cycle or another process's work left out (three were not enough beside a loaded machine's other tests)
			c0 := cpuSeconds(t)
			if res, err = Run(context.Background(), req); err != nil || !res.OK {
				t.Fatalf("%s: %v (ok %v)", k, err, res.OK)
			}
			if c := cpuSeconds(t) - c0; i == 0 || c < cpu[k] {
				cpu[k] = c
			}
		}
		mix := InstrMix(res.Counts)
		for i := range mix {
			if got, want := p.Mix[i]*float64(p.Blocks), mix[i]; got != want {
				t.Errorf("%s %s: probe %g × %d blocks = %g thread instructions, the launch %g", k, estimate.InstrClasses[i], p.Mix[i], p.Blocks, got, want)
			}
		}
		probes[k], instr[k] = p, float64(res.Counts.ThreadInstructions)
		if k != "cuda-smem" { // fitted on the others, predicted
			fit.SIMTLaunch[k], fit.SIMTMix[k] = cpu[k], mix
		}
	}
	est := func(k string) float64 {
		s, ok := probes[k].EmulationSeconds(fit)
		if !ok {
			t.Fatal("no costs fitted")
		}
		return s
	}
	perInstr := func(k string) float64 { return cpu[k] / instr[k] }
	t.Logf("CPU ns per thread instruction: naive %.1f, smem %.1f; smem estimated %.3f s, took %.3f s of CPU",
		1e9*perInstr("cuda-naive"), 1e9*perInstr("cuda-smem"), est("cuda-smem"), cpu["cuda-smem"])
	if r := est("cuda-smem") / cpu["cuda-smem"]; r < 1/1.5 || r > 1.5 {
		t.Errorf("smem estimated at %.3f s from its probe, took %.3f s of CPU (×%.2f)", est("cuda-smem"), cpu["cuda-smem"], r)
	}
	// the ratio of the two kernels' estimates tracks the ratio of their CPU costs
	if r := (est("cuda-smem") / est("cuda-naive")) / (cpu["cuda-smem"] / cpu["cuda-naive"]); r < 1/1.5 || r > 1.5 {
		t.Errorf("estimates smem/naive %.2f, CPU costs %.2f", est("cuda-smem")/est("cuda-naive"), cpu["cuda-smem"]/cpu["cuda-naive"])
	}
}

// A sampled launch runs Request.SampleBlocks blocks where it is set below SampledBlocks (a grid of
// few, large blocks), SampledBlocks otherwise, and the probe counts the blocks the run will run: with
// the default sample, the wave estimate's probe block too (watchFootprints), which is not one of
// the counted blocks; with a sample cut for time, no probe block and no wave estimate.
func TestSampleBlocks(t *testing.T) {
	for _, tt := range []struct{ ask, want, priced int }{{2, 2, 2}, {0, SampledBlocks, SampledBlocks + 1}, {100, SampledBlocks, SampledBlocks + 1}} {
		req := ladderAsCustom(t, "cuda-coalesced", 1024)
		req.SampleBlocks = tt.ask
		p, err := ProbeLaunch(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		res, err := Run(context.Background(), req)
		if err != nil || !res.OK {
			t.Fatalf("%v (ok %v)", err, res.OK)
		}
		if res.BlocksRun != int64(tt.want) || !res.Sampled || p.Blocks != tt.priced {
			t.Errorf("SampleBlocks %d: ran %d blocks (sampled %v), probe says %d; want %d, priced %d", tt.ask, res.BlocksRun, res.Sampled, p.Blocks, tt.want, tt.priced)
		}
		if cut := tt.priced == tt.want; cut != (res.Wave.Why == "" && res.Wave.Waves == 0) {
			t.Errorf("SampleBlocks %d: wave estimate %+v; want one only for the default sample", tt.ask, res.Wave)
		}
	}
}
