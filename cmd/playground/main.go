// Command playground serves the GPU Playground lessons and runs their experiments on this machine.
//
// Usage:
//
//	playground [-addr 127.0.0.1:8080] [-lessons DIR] [-open] [-run-timeout 2m] [-max-n 4096] [-gpu-max-n 8192] [-memory-mib 1024]
//	           [-data DIR] [-token T] [-instructor-token T] [-grace 60s]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/gpuplayground/playground/cells/builtin"
	"github.com/gpuplayground/playground/experiment"
	"github.com/gpuplayground/playground/gpu"
	"github.com/gpuplayground/playground/server"
	"github.com/gpuplayground/playground/store"
)

func main() {
	if gpu.ServeChild(os.Args, os.Stdin, os.Stdout) { // the hidden GPU worker subcommand
		return
	}
	cfg := server.Config{Kinds: builtin.Kinds, Calibrate: true}
	def := experiment.DefaultLimits()
	var memMiB int64
	flag.StringVar(&cfg.Addr, "addr", "127.0.0.1:8080", "listen address (host:port); a non-loopback host is reachable from other machines")
	flag.StringVar(&cfg.LessonsDir, "lessons", "", "serve lessons from this directory, re-read on change, instead of the embedded ones")
	flag.BoolVar(&cfg.Open, "open", false, "open the lessons in the default browser")
	flag.DurationVar(&cfg.RunTimeout, "run-timeout", def.RunTimeout, "time limit of one experiment run")
	flag.IntVar(&cfg.MaxN, "max-n", def.MaxN, "largest matrix size n a cell may ask for")
	flag.IntVar(&cfg.GPUMaxN, "gpu-max-n", def.GPUMaxN, "largest matrix size n of a cell whose kernels all run on the GPU")
	flag.Int64Var(&memMiB, "memory-mib", def.MemoryBytes>>20, "memory budget in MiB for the three matrices A, B, C of one size")
	dataDir, err := store.DefaultDir()
	if err != nil {
		dataDir = ""
	}
	flag.StringVar(&cfg.DataDir, "data", dataDir, "directory of the database of students, edits and runs")
	flag.StringVar(&cfg.Token, "token", "", "class token students join with; required on every request when set (default: generated when -addr is not loopback)")
	flag.StringVar(&cfg.InstructorToken, "instructor-token", "", "token that signs in the instructor (/class); default generated")
	flag.DurationVar(&cfg.Grace, "grace", 60*time.Second, "how long a student may be away before their queued and running runs are cancelled")
	flag.Parse()
	if cfg.DataDir == "" {
		fmt.Fprintln(os.Stderr, "playground: no per-user data directory; give one with -data DIR")
		os.Exit(2)
	}
	cfg.MemoryBytes = memMiB << 20

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := server.Run(ctx, cfg); err != nil {
		fmt.Fprintln(os.Stderr, "playground:", err)
		os.Exit(1)
	}
}
