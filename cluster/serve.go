package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"

	"github.com/gpuplayground/playground/machine"
	"github.com/gpuplayground/playground/server"
)

// ServeConfig is the playground server with its cluster: cmd/playground fills it from flags.
type ServeConfig struct {
	Server  server.Config
	Cluster Config
}

// checked is cfg as Serve runs it: a front without a local worker (-no-local-worker) must have a
// NATS server for workers, and does not calibrate its own CPU (it runs nothing: workers report
// their rates); the server's slots default to the cluster's.
func (cfg ServeConfig) checked() (ServeConfig, error) {
	if !cfg.Cluster.LocalWorker && cfg.Cluster.Listen == "" && cfg.Cluster.URL == "" {
		return cfg, errors.New("-no-local-worker needs -nats-listen or -nats: otherwise no machine could run anything")
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
// its gate), starts the cluster (cfg.Cluster; its local worker is this process, on that gate),
// prints the command workers join with when they can, and runs the server on the same machine
// with the cluster as its executor until ctx ends (server.Run). Then the cluster stops.
func Serve(ctx context.Context, cfg ServeConfig) error {
	cfg, err := cfg.checked()
	if err != nil {
		return err
	}
	if cfg.Server.Machine == nil {
		cfg.Server.Machine = machine.New(ctx, cfg.Server.MachineConfig())
	}
	m := cfg.Server.Machine
	cfg.Cluster.Machine, cfg.Cluster.Local, cfg.Cluster.Kinds = m, m.GPU.Report, m.Names()
	cfg.Cluster.Slots = m.Gate.Slots()
	if cfg.Cluster.TLSCert == "" && cfg.Cluster.TLSKey == "" {
		cfg.Cluster.TLSCert, cfg.Cluster.TLSKey = cfg.Server.TLSCert, cfg.Server.TLSKey
	}
	if cfg.Cluster.Out == nil {
		cfg.Cluster.Out = cfg.Server.Out
	}
	if cfg.Cluster.Out == nil {
		cfg.Cluster.Out = os.Stdout
	}
	c, err := Start(ctx, cfg.Cluster)
	if err != nil {
		if cfg.Cluster.Listen != "" || cfg.Cluster.URL != "" {
			return err
		}
		// Alone, this machine needs no NATS: run in process as a server of one machine does.
		fmt.Fprintf(cfg.Cluster.Out, "warning: %v; running every run in this process\n", err)
		cfg.Server.Executor = nil // the server's own machine, in process
		return server.Run(ctx, cfg.Server)
	}
	defer c.Close()
	c.printJoin(c.cfg.Out, cfg.Cluster)
	cfg.Server.Executor = c
	return server.Run(ctx, cfg.Server)
}

// printJoin prints how workers join, as cfg (the configuration Start was given) allows.
func (c *Cluster) printJoin(out io.Writer, cfg Config) {
	prefix := "" // the default needs no flag
	if p := c.names.Prefix(); p != DefaultPrefix {
		prefix = " -nats-prefix " + p
	}
	switch url := c.WorkerURL(); {
	case cfg.URL != "":
		fmt.Fprintf(out, "runs go through the NATS server at %s, under the names %s… (stream %s); workers join it with: playground worker -join URL%s -creds FILE (or a URL with their user and password)\n",
			redact(url), c.names.Prefix(), c.names.Stream(), prefix)
	case url != "" && c.cfg.TLSCert != "":
		fmt.Fprintf(out, "workers join with: playground worker -join %s -token %s%s (add -ca FILE when their machines do not already trust %s)\n", url, c.Token(), prefix, c.cfg.TLSCert)
	case url != "":
		fmt.Fprintf(out, "workers join with: playground worker -join %s -token %s%s\n", url, c.Token(), prefix)
		if !loopback(cfg.Listen) {
			fmt.Fprintln(out, "warning: the workers' NATS port is not encrypted: the worker token, the cells' sources and their results cross the network in clear; give -tls-cert and -tls-key to require TLS there")
		}
	}
}

// loopback reports whether the host of addr (host:port) is a loopback name or address.
func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
