// Command playground serves the GPU Playground lessons and runs their experiments on this machine,
// and on other machines that join it as workers.
//
// Usage:
//
//	playground [-addr 127.0.0.1:8080] [-lessons DIR] [-open] [-run-timeout 2m] [-max-n 4096] [-gpu-max-n 8192] [-memory-mib 1024]
//	           [-tls-cert cert.pem -tls-key key.pem] [-data DIR] [-token T] [-instructor-token T] [-grace 60s]
//	           [-session-ttl 168h] [-max-students 200] [-joins-per-address 0] [-join-attempts 20] [-conns-per-address 64]
//	           [-nats-listen ADDR] [-nats URL] [-nats-creds FILE] [-nats-prefix P] [-worker-token T] [-class C] [-no-local-worker]
//	playground worker -join nats://HOST:PORT -token T [-nats-prefix P] [-ca FILE] [-name NAME] [-class C] [-slots N] [-creds FILE] [-max-n 4096] [-gpu-max-n 8192] [-memory-mib 1024]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/gpuplayground/playground/cluster"
	"github.com/gpuplayground/playground/cmd/playground/app"
	"github.com/gpuplayground/playground/gpu"
	"github.com/gpuplayground/playground/harness"
	"github.com/gpuplayground/playground/machine"
	"github.com/gpuplayground/playground/server"
	"github.com/gpuplayground/playground/store"
)

func main() {
	if gpu.ServeChild(os.Args, os.Stdin, os.Stdout) { // the hidden GPU worker subcommand
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	if len(os.Args) > 1 && os.Args[1] == "worker" {
		err = cluster.RunWorker(ctx, workerConfig(os.Args[2:]))
	} else {
		err = app.Serve(ctx, serveConfig(os.Args[1:]))
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "playground:", err)
		os.Exit(1)
	}
}

// limitFlags adds the run limit flags to fs, -run-timeout only with timeout (a worker's runs have
// the server's time limit); the returned function applies them to l.
func limitFlags(fs *flag.FlagSet, timeout bool) func() harness.Limits {
	def := harness.DefaultLimits()
	l := def
	var memMiB int64
	if timeout {
		fs.DurationVar(&l.RunTimeout, "run-timeout", def.RunTimeout, "time limit of one experiment run")
	}
	fs.IntVar(&l.MaxN, "max-n", def.MaxN, "largest matrix size n a cell may ask for")
	fs.IntVar(&l.GPUMaxN, "gpu-max-n", def.GPUMaxN, "largest matrix size n of a cell whose kernels all run on the GPU")
	fs.Int64Var(&memMiB, "memory-mib", def.MemoryBytes>>20, "memory budget in MiB for the three matrices A, B, C of one size")
	return func() harness.Limits {
		l.MemoryBytes = memMiB << 20
		return l
	}
}

func serveConfig(args []string) app.Config {
	cfg := app.Config{Server: server.Config{Config: machine.Config{Calibrate: true, Noise: harness.DefaultNoise()}}}
	fs := flag.NewFlagSet("playground", flag.ExitOnError)
	var noLocal bool
	fs.StringVar(&cfg.Server.Addr, "addr", "127.0.0.1:8080", "listen address (host:port); a non-loopback host is reachable from other machines")
	fs.StringVar(&cfg.Server.LessonsDir, "lessons", "", "serve lessons from this directory, re-read on change, instead of the embedded ones")
	fs.BoolVar(&cfg.Server.Open, "open", false, "open the lessons in the default browser")
	fs.StringVar(&cfg.Server.TLSCert, "tls-cert", "", "serve https with this PEM certificate (with -tls-key): browsers on other machines need https for WebGPU; the workers' NATS port then requires TLS too")
	fs.StringVar(&cfg.Server.TLSKey, "tls-key", "", "the PEM private key of -tls-cert")
	limits := limitFlags(fs, true)
	dataDir, err := store.DefaultDir()
	if err != nil {
		dataDir = ""
	}
	fs.StringVar(&cfg.Server.DataDir, "data", dataDir, "data directory: the database of students, edits and runs, and the job queue's JetStream store in DIR/nats")
	fs.StringVar(&cfg.Server.Token, "token", "", "class token students join with; required on every request when set (default: generated when -addr is not loopback)")
	fs.StringVar(&cfg.Server.InstructorToken, "instructor-token", "", "token that signs in the instructor (/class); default generated")
	fs.DurationVar(&cfg.Server.Grace, "grace", 60*time.Second, "how long a student may be away before their queued and running runs are cancelled")
	fs.DurationVar(&cfg.Server.SessionTTL, "session-ttl", 7*24*time.Hour, "how long a session signs its student in, from when they joined; then they join again")
	fs.IntVar(&cfg.Server.MaxStudents, "max-students", 200, "most students in the class (instructors and removed students not counted); later joins are refused")
	fs.IntVar(&cfg.Server.JoinsPerAddress, "joins-per-address", 0, "most new students one network address may join per 10 minutes; 0: no limit (a class often shares one address behind NAT: /class shows names per address, to remove or block)")
	fs.IntVar(&cfg.Server.JoinAttempts, "join-attempts", 20, "wrong sign-in tokens one network address may send at once, then one every 3 s (the right token is never refused; other sites' pages use none)")
	fs.IntVar(&cfg.Server.MaxPreAuthPerAddress, "conns-per-address", 64, "most connections not yet signed in from one network address (raise it where a class shares one address behind NAT)")
	fs.StringVar(&cfg.Cluster.Listen, "nats-listen", "", "let workers join the embedded NATS server at this address (host:port), with the worker token")
	fs.StringVar(&cfg.Cluster.URL, "nats", "", "use this external NATS server (with JetStream) instead of the embedded one")
	fs.StringVar(&cfg.Cluster.Creds, "nats-creds", "", "NATS credentials file for -nats")
	fs.StringVar(&cfg.Cluster.Prefix, "nats-prefix", "", "the prefix of every NATS stream, bucket and subject of this class, so that several classes share one NATS server (default: the one last given with this -data, kept there; else "+cluster.DefaultPrefix+" on the embedded server, and with -nats pg- and the data directory's id); workers join with the same -nats-prefix")
	fs.StringVar(&cfg.Cluster.Token, "worker-token", "", "the workers' password on the embedded NATS server (default: a random one, kept in the data directory's nats/worker-token, printed)")
	fs.StringVar(&cfg.Cluster.Class, "class", "", "this machine's class, which a cell's machine: key or a page's machine menu may ask for")
	fs.BoolVar(&noLocal, "no-local-worker", false, "run nothing on this machine: a front end for the workers that join")
	_ = fs.Parse(args)
	if cfg.Server.DataDir == "" {
		fmt.Fprintln(os.Stderr, "playground: no per-user data directory; give one with -data DIR")
		os.Exit(2)
	}
	cfg.Cluster.DataDir = cfg.Server.DataDir
	cfg.Server.Limits = limits()
	cfg.Cluster.LocalWorker = !noLocal
	return cfg
}

func workerConfig(args []string) cluster.WorkerConfig {
	cfg := cluster.WorkerConfig{Config: machine.Config{Calibrate: true}}
	fs := flag.NewFlagSet("playground worker", flag.ExitOnError)
	fs.StringVar(&cfg.Join, "join", "", "the server's NATS URL, nats://HOST:PORT or tls://HOST:PORT (the server prints it)")
	fs.StringVar(&cfg.Token, "token", "", "the worker token the server printed")
	fs.StringVar(&cfg.Creds, "creds", "", "NATS credentials file, for an external NATS server")
	fs.StringVar(&cfg.Prefix, "nats-prefix", cluster.DefaultPrefix, "the class's prefix of NATS names, as the server's worker command gives it (several classes on one NATS server)")
	fs.StringVar(&cfg.CA, "ca", "", "PEM file of the CA (or the self-signed certificate) the server's TLS certificate must chain to, for a tls:// URL the system does not already trust")
	fs.StringVar(&cfg.Name, "name", "", "this machine's name in results (default: the host name)")
	fs.StringVar(&cfg.Class, "class", "", "this machine's class, which a cell's machine: key or a page's machine menu may ask for (lower-case letters, digits, dashes)")
	fs.IntVar(&cfg.Slots, "slots", 0, fmt.Sprintf("how many runs that time nothing (emulation, simulators, models) run side by side, 1 to %d; a run that measures always runs alone (default GOMAXPROCS)", cluster.MaxSlots))
	limits := limitFlags(fs, false)
	_ = fs.Parse(args)
	cfg.Limits = limits()
	if cfg.Join == "" {
		fmt.Fprintln(os.Stderr, "playground worker: -join nats://HOST:PORT is required")
		os.Exit(2)
	}
	return cfg
}
