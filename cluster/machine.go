package cluster

import (
	"context"
	"net/url"
	"os"
	"runtime"
	"strings"

	"github.com/gpuplayground/playground/gpu"
	"github.com/gpuplayground/playground/gpu/nvidia"
	"github.com/gpuplayground/playground/machine"
)

// Probe asks a GPU worker process (package gpu; the playground binary's hidden gpu-worker
// subcommand by default) what this machine offers for GPU work, then stops it.
func Probe(ctx context.Context, t gpu.Transport) nvidia.Report {
	if t == nil {
		t = machine.SelfGPU()
	}
	s := &gpu.Supervisor{Transport: t}
	defer s.Close()
	return gpu.Probe(ctx, s)
}

// describe is this machine as a worker announces it, from its GPU report; id is its Machine.ID (a
// NATS subject token).
func describe(id, name string, r nvidia.Report, kinds []string) Machine {
	m := Machine{ID: id, Name: machineName(name), CPU: cpuModel(), Cores: runtime.NumCPU(),
		OS: runtime.GOOS, Arch: runtime.GOARCH, GPUUnavailable: r.Unavailable, Compiler: r.Compiler, Kinds: kinds}
	for _, d := range r.Devices {
		m.GPUs = append(m.GPUs, d.Name)
	}
	return m
}

// machineName is name, or this machine's host name when name is empty.
func machineName(name string) string {
	if name != "" {
		return name
	}
	if host, _ := os.Hostname(); host != "" {
		return host
	}
	return "unknown-host"
}

// redact is a NATS URL (or a comma-separated list) with any password in it hidden, for printing.
func redact(urls string) string {
	parts := strings.Split(urls, ",")
	for i, p := range parts {
		if u, err := url.Parse(strings.TrimSpace(p)); err == nil && u.User != nil {
			parts[i] = u.Redacted()
		}
	}
	return strings.Join(parts, ",")
}

// cpuModel is the CPU's model name from /proc/cpuinfo, or "unknown CPU".
func cpuModel() string {
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				return strings.TrimSpace(v)
			}
		}
	}
	return "unknown CPU"
}
