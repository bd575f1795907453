// Command playground serves the GPU Playground lessons and runs their experiments on this machine.
//
// Usage:
//
//	playground [-addr 127.0.0.1:8080] [-lessons DIR] [-open] [-run-timeout 2m] [-max-n 4096] [-gpu-max-n 8192] [-memory-mib 1024]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/gpuplayground/playground/cells/builtin"
	"github.com/gpuplayground/playground/experiment"
	"github.com/gpuplayground/playground/gpu"
	"github.com/gpuplayground/playground/server"
)

func main() {
	if gpu.ServeChild(os.Args, os.Stdin, os.Stdout) { // the hidden GPU worker subcommand
		return
	}
	cfg := server.Config{Kinds: builtin.Kinds, Calibrate: true, Noise: experiment.DefaultNoise()}
	def := experiment.DefaultLimits()
	var memMiB int64
	flag.StringVar(&cfg.Addr, "addr", "127.0.0.1:8080", "listen address (host:port); a non-loopback host is reachable from other machines")
	flag.StringVar(&cfg.LessonsDir, "lessons", "", "serve lessons from this directory, re-read on change, instead of the embedded ones")
	flag.BoolVar(&cfg.Open, "open", false, "open the lessons in the default browser")
	flag.DurationVar(&cfg.RunTimeout, "run-timeout", def.RunTimeout, "time limit of one experiment run")
	flag.IntVar(&cfg.MaxN, "max-n", def.MaxN, "largest matrix size n a cell may ask for")
	flag.IntVar(&cfg.GPUMaxN, "gpu-max-n", def.GPUMaxN, "largest matrix size n of a cell whose kernels all run on the GPU")
	flag.Int64Var(&memMiB, "memory-mib", def.MemoryBytes>>20, "memory budget in MiB for the three matrices A, B, C of one size")
	flag.Parse()
	cfg.MemoryBytes = memMiB << 20

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := server.Run(ctx, cfg); err != nil {
		fmt.Fprintln(os.Stderr, "playground:", err)
		os.Exit(1)
	}
}
