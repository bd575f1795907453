// Package app is the playground program, wired: this machine's runner built once (package
// machine), the cluster of machines that run runs (package cluster) and the web server (package
// server), which takes the cluster as its runner and knows no cluster. cmd/playground fills Config
// from its flags; end-to-end tests serve through it as the command does.
package app

import (
	"context"

	"github.com/gpuplayground/playground/cluster"
	"github.com/gpuplayground/playground/machine"
	"github.com/gpuplayground/playground/server"
)

// Config is the playground server with its cluster.
type Config struct {
	Server  server.Config
	Cluster cluster.Config
}

// checked is cfg as Serve runs it: a front without a local worker (-no-local-worker) must have a
// NATS server for workers, and does not calibrate its own CPU (it runs nothing: workers report
// their rates); the server's slots default to the cluster's.
func (cfg Config) checked() (Config, error) {
	if err := cfg.Cluster.Runnable(); err != nil {
		return cfg, err
	}
	if !cfg.Cluster.LocalWorker {
		cfg.Server.Calibrate = false
	}
	if cfg.Server.Slots == 0 {
		cfg.Server.Slots = cfg.Cluster.Slots
	}
	return cfg, nil
}

// Serve builds this machine's runner once (machine.New: its GPU probed, its kinds' environment,
// its gate), starts the cluster on it (cluster.Front; its local worker is this process, on that
// gate) and runs the server on the same machine with the cluster as its runner until ctx ends
// (server.Run). Then the cluster stops.
func Serve(ctx context.Context, cfg Config) error {
	cfg, err := cfg.checked()
	if err != nil {
		return err
	}
	if cfg.Server.Machine == nil {
		cfg.Server.Machine = machine.New(ctx, cfg.Server.MachineConfig())
	}
	cfg.Cluster.Machine = cfg.Server.Machine
	if cfg.Cluster.TLSCert == "" && cfg.Cluster.TLSKey == "" {
		cfg.Cluster.TLSCert, cfg.Cluster.TLSKey = cfg.Server.TLSCert, cfg.Server.TLSKey
	}
	if cfg.Cluster.Out == nil {
		cfg.Cluster.Out = cfg.Server.Out
	}
	return cluster.Front(ctx, cfg.Cluster, func(ctx context.Context, r machine.Runner) error {
		cfg.Server.Executor = r // nil: the server's own machine, in process
		return server.Run(ctx, cfg.Server)
	})
}
