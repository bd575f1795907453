package server

import (
	"github.com/gpuplayground/playground/machine"
)

// The server takes a runner (Config.Executor) and knows no cluster: what a runner is, and the one
// in-process runner, are package machine's. These names are the server's words for them.
type (
	// Executor is where runs execute (machine.Runner).
	Executor = machine.Runner
	// Slot is a machine, or one of its slots, reserved for one run (machine.Slot).
	Slot = machine.Slot
	// Remote is a Slot on another machine (machine.Remote).
	Remote = machine.Remote
	// Job is what a run request named (machine.Job).
	Job = machine.Job
	// MachineInfo is one machine as the machine menu lists it (machine.MachineInfo).
	MachineInfo = machine.MachineInfo
	// MachineRun is a run on a machine, as the instructor sees it (machine.MachineRun).
	MachineRun = machine.MachineRun
	// MachineLister is a runner that lists its machines (machine.Lister).
	MachineLister = machine.Lister
	// Unplaced is a runner that says when no machine could take a run (machine.Unplaced).
	Unplaced = machine.Unplaced
	// Estimator is a runner whose machines price runs (machine.Estimator).
	Estimator = machine.Estimator
	// InProcess is the in-process runner (machine.Local).
	InProcess = machine.Local
)

// NewInProcess returns a runner that runs runs in this process, as they were parsed, with slots
// slots for runs that time nothing (slots ≤ 0: GOMAXPROCS): machine.Local of a bare machine (tests).
func NewInProcess(slots int) *InProcess { return machine.NewLocal(machine.Bare(slots)) }
