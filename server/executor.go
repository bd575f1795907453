package server

import (
	"context"

	"github.com/gpuplayground/playground/cells"
)

// Executor is where the run queue's runs execute: in this process by default (one at a time), or
// on other machines (package cluster). The queue takes its runs in order and, for each, waits for
// Acquire, then runs it in the Slot it got, so an executor with several machines runs several at once.
type Executor interface {
	// Acquire waits until a machine able to run r (cells.NeedsOf) is free and reserves it. It
	// returns ctx's error when ctx ends first, or another error when r can never run.
	Acquire(ctx context.Context, r cells.Run) (Slot, error)
}

// Slot is a machine reserved for one run.
type Slot interface {
	// Execute runs r on the machine, reporting its events to e from the calling goroutine, and
	// returns as cells.Run.Run does: ctx's error when cancelled or timed out. job is the request r was
	// parsed from, for machines that parse it again with their own kinds.
	Execute(ctx context.Context, job Job, r cells.Run, e cells.Emitter) error
	// Release frees the machine; called once, after Execute has returned (or instead of it).
	Release()
}

// Job is what a run request named, with the kind its cell has: enough for another process with the
// same lessons and kinds to parse the same run.
type Job struct {
	// Kind is the cell's kind name (the lesson fence's info string), looked up among the kinds.
	Kind   string
	Lesson string
	Action string
	// Cell holds the cell id, the learner's source and the cell's recording, if any.
	Cell cells.Cell
}

// InProcess is the default Executor: runs execute in this process, one at a time.
type InProcess struct{ token chan struct{} }

// NewInProcess returns an executor that runs one run at a time in this process.
func NewInProcess() *InProcess { return &InProcess{token: make(chan struct{}, 1)} }

// Acquire waits for the run before to end.
func (p *InProcess) Acquire(ctx context.Context, _ cells.Run) (Slot, error) {
	select {
	case p.token <- struct{}{}:
		return inProcessSlot{p}, nil
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
}

type inProcessSlot struct{ p *InProcess }

func (s inProcessSlot) Execute(ctx context.Context, _ Job, r cells.Run, e cells.Emitter) error {
	return r.Run(ctx, e)
}

func (s inProcessSlot) Release() { <-s.p.token }
