// Package cluster spreads the playground's runs over several machines through NATS, as the NATS
// transport of package machine: the start-up of an embedded (or external) NATS server with a
// JetStream work-queue stream of jobs (nats.go), the registry of the workers that announce their
// hardware (registry.go), the placement of each run on a free machine able to run it, one
// machine.Gate per machine (placement.go, a machine.Runner), the server's side of a run on a
// worker (transport.go) and the worker, which runs its jobs on its machine.Machine and publishes
// their events (worker.go), and Front, which starts a front's cluster and hands the server its
// runner (serve.go); it knows no server (package app wires them). docs/protocol.md ("Workers")
// describes the wire, docs/run-path.md the path of a run.
package cluster

import (
	"encoding/json"
	"fmt"
	"runtime"
	"strings"

	"github.com/gpuplayground/playground/cells"
	"github.com/gpuplayground/playground/estimate"
	"github.com/gpuplayground/playground/gpu/nvidia"
	"github.com/gpuplayground/playground/machine"
)

// InboxPrefix + worker id is the prefix of a worker's reply subjects (nats.CustomInboxPrefix): on
// the embedded server a worker may subscribe to no other inbox, so none hears another's replies.
// A worker's id is unique to it, whatever the deployment (Names).
const InboxPrefix = "_INBOX."

// consumerName is the name of the durable pull consumer of the job stream through which the worker
// id takes its jobs (filtered to Names.Jobs + id).
func consumerName(id string) string { return "worker-" + id }

// Size caps of the wire.
const (
	// MaxPayload is the largest NATS message the embedded server takes (bytes).
	MaxPayload = 4 << 20
	// maxJob is the largest job message (bytes); a cell's source is at most 64 KiB on the websocket.
	maxJob = 256 << 10
	// maxEvent is the largest event message a worker sends (bytes); a larger chart or text is
	// replaced by a note saying so.
	maxEvent = 2 << 20
)

// Machine is what a worker announces about itself.
type Machine struct {
	// ID is unique per worker process: the public key of the nkey pair it makes at start (on the
	// embedded server it proves it holds the key at connect), a NATS subject token.
	ID string `json:"id"`
	// Name is the machine's name as results show it (the host name unless -name says otherwise).
	Name string `json:"name"`
	// Class is the class of machine a cell may ask for with its `machine:` key (-class); "" is none.
	Class string `json:"class,omitempty"`
	CPU   string `json:"cpu"`
	Cores int    `json:"cores"`
	OS    string `json:"os"`
	Arch  string `json:"arch"`
	// GPUs are the NVIDIA devices' names; empty when GPUUnavailable says why there is none.
	GPUs           []string `json:"gpus,omitempty"`
	GPUUnavailable string   `json:"gpu_unavailable,omitempty"`
	// Compiler compiles learners' CUDA kernels there ("NVRTC 11.8", "clang 14.0.6" or "none").
	Compiler string `json:"compiler,omitempty"`
	// Kinds are the cell kinds the worker runs.
	Kinds []string `json:"kinds,omitempty"`
	// Slots is how many runs that time nothing (cells.Exclusive false) the machine runs side by
	// side (-slots; default GOMAXPROCS there); a run that measures has the machine alone. The
	// server counts 0 (a worker from before this field) as 1 and caps it at MaxSlots.
	Slots int `json:"slots,omitempty"`
	// Host is the machine's host name (whatever -name says): with the name and the network address,
	// what tells a worker restarted on the same machine, which replaces its old entry at once.
	Host string `json:"host,omitempty"`
	// Rates are the machine's calibrated rates for run estimates (package calibrate), sent in its
	// first announcement and in the next after each server start it hears (not every heartbeat:
	// some KiB); absent when it has none (estimate.Defaults price its runs). The server prices a
	// run with the rates of the machines that can take it (Cluster.Estimate).
	Rates *estimate.Rates `json:"rates,omitempty"`

	// claimed marks a worker's Machine as the server knows it: what it says of its hardware is its
	// claim, not this server's knowledge (Summary says so). Never on the wire.
	claimed bool
}

// HasGPU reports whether the machine can measure on an NVIDIA GPU.
func (m Machine) HasGPU() bool { return len(m.GPUs) > 0 && m.GPUUnavailable == "" }

// Meets reports whether the machine has what n asks for.
func (m Machine) Meets(n cells.Needs) bool {
	return (!n.GPU || m.HasGPU()) && (n.Machine == "" || n.Machine == m.Class)
}

// Summary describes the machine in one line, e.g. "gpu-box (class h100; AMD EPYC 7763, 16 cores;
// GPU NVIDIA H100)"; a worker's as the server knows it says whose claim its hardware is:
// "gpu-box (class h100; claimed by worker gpu-box: AMD EPYC 7763, 16 cores; GPU NVIDIA H100)".
func (m Machine) Summary() string {
	gpus := "no GPU"
	if m.HasGPU() {
		gpus = "GPU " + strings.Join(m.GPUs, ", ")
	}
	class := ""
	if m.Class != "" {
		class = "class " + m.Class + "; "
	}
	if m.claimed {
		class += "claimed by worker " + m.Name + ": "
	}
	return fmt.Sprintf("%s (%s%s, %d cores; %s)", m.Name, class, m.CPU, m.Cores, gpus)
}

// job is a run request published to a worker: enough for it to parse the same run with the same
// kinds (cells need no serialization).
type job struct {
	ID        string           `json:"id"`
	Kind      string           `json:"kind"`
	Lesson    string           `json:"lesson"`
	Cell      string           `json:"cell"`
	Action    string           `json:"action,omitempty"`
	Source    string           `json:"source"`
	Recording *cells.Recording `json:"recording,omitempty"`
	// TimeoutNS is the run time limit in nanoseconds: the worker stops the run after it even if the
	// server's cancel never arrives.
	TimeoutNS int64 `json:"timeout_ns"`
	// LimitNS is the server's run time limit in nanoseconds (its -run-timeout), under which it
	// accepted the run: the worker parses the run under it rather than its own (a worker has no time
	// limit of its own to refuse by); 0 from a server before this field (then TimeoutNS).
	LimitNS int64 `json:"limit_ns,omitempty"`
	// PriceNS is the run's estimate on this worker, in nanoseconds, that the server accepted it at
	// (from the rates the worker reported; 0: not priced there). The worker names it when the run
	// hits the time limit.
	PriceNS int64 `json:"price_ns,omitempty"`
	// Epoch is the epoch of the server that queued the job (Names.Start, EpochKey), and Seq its
	// number among that server's jobs (1, 2, …, in the order it queued them): the server's own
	// stamp, so that no worker's clock decides whether a job is still wanted (runner.current).
	Epoch string `json:"epoch,omitempty"`
	Seq   uint64 `json:"seq,omitempty"`
}

// start is the body of Names.Start.
type start struct {
	// Epoch is random per server start.
	Epoch string `json:"epoch"`
}

// askReply is the server's answer to a worker's ask request: exactly one field is set.
type askReply struct {
	// Result is the page's result.
	Result json.RawMessage `json:"result,omitempty"`
	// PageError is the page's own {"page_error"} message.
	PageError string `json:"page_error,omitempty"`
	// NoBrowser says no page is behind the run (cells.ErrNoBrowser).
	NoBrowser bool `json:"no_browser,omitempty"`
	// Error is any other reason the task was not done.
	Error string `json:"error,omitempty"`
}

// Event types of the NATS wire besides a run's events (machine.Event's types): "taken" says the
// worker started the job and "end" is the last event of every job.
const (
	evTaken = "taken"
	evEnd   = "end"
)

// event is one message of a job's event subject: a run's event (machine.Event, the type every
// machine streams), or taken or end.
type event struct {
	machine.Event
	Machine *Machine `json:"machine,omitempty"` // taken
	// Error is the run's error (end); Cancelled marks an end caused by the server's cancel or the
	// time limit.
	Error     string `json:"error,omitempty"`
	Cancelled bool   `json:"cancelled,omitempty"`
}

// describe is this machine as a worker announces it, from its GPU report; id is its Machine.ID (a
// NATS subject token).
func describe(id, name string, r nvidia.Report, kinds []string) Machine {
	m := Machine{ID: id, Name: machine.HostName(name), Host: machine.HostName(""), CPU: machine.CPUModel(), Cores: runtime.NumCPU(),
		OS: runtime.GOOS, Arch: runtime.GOARCH, GPUUnavailable: r.Unavailable, Compiler: r.Compiler, Kinds: kinds}
	for _, d := range r.Devices {
		m.GPUs = append(m.GPUs, d.Name)
	}
	return m
}
