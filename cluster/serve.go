package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"

	"github.com/gpuplayground/playground/machine"
)

// Front starts the cluster of a front (cfg: the server's side; cfg.Machine, if set, is this
// machine's runner, whose gate and kinds the local worker uses) and calls serve with the runner that
// the server's runs go to: the cluster, after the command workers join with is printed where they
// can. When NATS cannot start and neither a port for workers (Listen) nor an external NATS server
// (URL) was asked for, this machine needs none: serve gets a nil runner, and the server runs every
// run in process on its own machine. A front without a local worker must have a way for workers to
// join. The cluster stops when serve returns. cmd/playground wires the server to it (package app).
func Front(ctx context.Context, cfg Config, serve func(context.Context, machine.Runner) error) error {
	if err := cfg.Runnable(); err != nil {
		return err
	}
	if m := cfg.Machine; m != nil {
		cfg.Local, cfg.Kinds, cfg.Slots = m.GPU.Report, m.Names(), m.Gate.Slots()
	}
	if cfg.Out == nil {
		cfg.Out = os.Stdout
	}
	c, err := Start(ctx, cfg)
	if err != nil {
		if cfg.Listen != "" || cfg.URL != "" {
			return err
		}
		// Alone, this machine needs no NATS: run in process as a server of one machine does.
		fmt.Fprintf(cfg.Out, "warning: %v; running every run in this process\n", err)
		return serve(ctx, nil)
	}
	defer c.Close()
	c.printJoin(c.cfg.Out, cfg)
	return serve(ctx, c)
}

// Runnable says why a front of cfg could run nothing: without a local worker (-no-local-worker),
// it must have a NATS server for workers to join (Listen or URL); nil when it can.
func (cfg Config) Runnable() error {
	if !cfg.LocalWorker && cfg.Listen == "" && cfg.URL == "" {
		return errors.New("-no-local-worker needs -nats-listen or -nats: otherwise no machine could run anything")
	}
	return nil
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
