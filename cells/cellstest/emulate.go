package cellstest

import (
	"context"
	"fmt"
	"sync"

	"github.com/gpuplayground/playground/vgpurun"
)

// EmulationMemo holds the virtual GPU's launches that NoGPU ran (vgpurun.Emulator), by the whole
// request: a launch asked for again, the same kernel (the table's, or the same PTX, entry and launch
// shape) at the same size, precision, GPU and sample, gets the result it got the first time instead
// of running again. The lessons' cells ask for many such launches (a compared kernel such as
// cuda-coalesced at n = 256 in four cells, a cell's kernel in its run and its Show PTX, a variant
// that changes only the registers assumed). Only the inputs, which each launch draws afresh, differ
// between two such launches, so the result is that of a launch the later run could have drawn.
// A launch with a Trace, or one cancelled, is not kept. Its zero value is empty and ready; it is
// safe for concurrent use. Callers must not change a result's slices and maps: later runs share
// them.
type EmulationMemo struct {
	mu   sync.Mutex
	done map[string]memoEmulation
	runs int
}

// memoEmulation is one launch's result and error.
type memoEmulation struct {
	res vgpurun.Result
	err error
}

// Emulate runs req as vgpurun.Run does, or gives what the same request gave before.
func (m *EmulationMemo) Emulate(ctx context.Context, req vgpurun.Request) (vgpurun.Result, error) {
	if req.Trace != nil {
		return vgpurun.Run(ctx, req)
	}
	key := emulationKey(req)
	m.mu.Lock()
	e, ok := m.done[key]
	m.mu.Unlock()
	if ok {
		return e.res, e.err
	}
	res, err := vgpurun.Run(ctx, req)
	if ctx.Err() != nil {
		return res, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.done == nil {
		m.done = map[string]memoEmulation{}
	}
	m.done[key] = memoEmulation{res, err}
	m.runs++
	return res, err
}

// Runs is how many launches m ran: each request once, but for the same request asked twice at once,
// which runs twice.
func (m *EmulationMemo) Runs() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.runs
}

// emulationKey is everything in req that decides its launch but the Trace: the problem by its name
// (problems.Lookup makes a new *Problem each time).
func emulationKey(req vgpurun.Request) string {
	problem := ""
	if req.Problem != nil {
		problem = req.Problem.Name
	}
	return fmt.Sprintf("%q %q %q %v %v %q %d %#v %#v %d %q %#v %v %d %d %d", req.Kernel, req.PTX, req.Entry, req.Grid, req.Block,
		problem, req.SharedBytes, req.Precision, req.TensorMaps, req.N, req.DType, req.GPU, req.BlockXY, req.TraceLimit, req.Seed, req.SampleBlocks)
}
