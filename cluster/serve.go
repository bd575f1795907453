package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"

	"github.com/gpuplayground/playground/cells"
	"github.com/gpuplayground/playground/cells/builtin"
	"github.com/gpuplayground/playground/gpu/nvidia"
	"github.com/gpuplayground/playground/server"
)

// ServeConfig is the playground server with its cluster: cmd/playground fills it from flags.
type ServeConfig struct {
	Server  server.Config
	Cluster Config
}

// Serve starts the cluster (cfg.Cluster; its local worker is this process), prints the command
// workers join with when they can, and runs the server with the cluster as its executor until ctx
// ends (server.Run). Then the cluster stops.
func Serve(ctx context.Context, cfg ServeConfig) error {
	if !cfg.Cluster.LocalWorker && cfg.Cluster.Listen == "" && cfg.Cluster.URL == "" {
		return errors.New("-no-local-worker needs -nats-listen or -nats: otherwise no machine could run anything")
	}
	var report nvidia.Report
	if cfg.Server.Devices != nil {
		report = cfg.Server.Devices(ctx)
	} else {
		report = Probe(ctx, cfg.Server.Worker)
	}
	cfg.Server.Devices = func(context.Context) nvidia.Report { return report } // probed once, here
	kinds := cfg.Server.Kinds
	if kinds == nil {
		kinds = builtin.Kinds
	}
	cfg.Cluster.Local = report
	if cfg.Cluster.Slots == 0 {
		cfg.Cluster.Slots = cfg.Server.Slots
	}
	cfg.Cluster.Kinds = nil
	for _, k := range kinds(cells.Env{}) {
		cfg.Cluster.Kinds = append(cfg.Cluster.Kinds, k.Name())
	}
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
		cfg.Server.Executor = server.NewInProcess(cfg.Server.Slots)
		return server.Run(ctx, cfg.Server)
	}
	defer c.Close()
	out := c.cfg.Out
	switch url := c.WorkerURL(); {
	case cfg.Cluster.URL != "":
		fmt.Fprintf(out, "runs go through the NATS server at %s; workers join it with: playground worker -join URL -creds FILE (or a URL with their user and password)\n", redact(url))
	case url != "" && c.cfg.TLSCert != "":
		fmt.Fprintf(out, "workers join with: playground worker -join %s -token %s (add -ca FILE when their machines do not already trust %s)\n", url, c.Token(), c.cfg.TLSCert)
	case url != "":
		fmt.Fprintf(out, "workers join with: playground worker -join %s -token %s\n", url, c.Token())
		if !loopback(cfg.Cluster.Listen) {
			fmt.Fprintln(out, "warning: the workers' NATS port is not encrypted: the worker token, the cells' sources and their results cross the network in clear; give -tls-cert and -tls-key to require TLS there")
		}
	}
	cfg.Server.Executor = c
	return server.Run(ctx, cfg.Server)
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
