// Package simt emulates how an NVIDIA GPU runs a kernel, in Go, and counts what the hardware would
// do: warp-level memory requests, 32-byte sectors moved (and so coalescing), shared-memory bank
// conflicts, barriers and FLOPs. Kernels are written per thread against a CUDA-shaped API (grid and
// block dimensions, block and thread indices, per-block shared memory, SyncThreads), so the Go ladder
// in ladder.go reads like kernels/cuda/src/matmul.cu.
//
// The model, from the CUDA C++ Programming Guide ("SIMT Architecture", "Compute Capabilities") and
// Best Practices Guide ("Coalesced Access to Global Memory"): threads are grouped into warps of 32 by
// linear thread index; a warp's global accesses are served in 32-byte sectors; shared memory has 32
// banks of 4-byte words, and lanes that touch different words of one bank are served one after
// another (reading the same word is a broadcast). There are no caches: every sector moved is counted
// as DRAM traffic (the "L2-free" count), an upper bound on the real traffic.
//
// Between barriers the threads of a block run one after another; the k-th memory access of each lane
// of a warp is taken to be that warp's k-th memory instruction. That is exact for kernels whose lanes
// follow the same path, as the ladder's do; lanes that skip an access (a bounds check) are inactive
// for it.
package simt

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"runtime"
	"sync"
	"sync/atomic"
)

// WarpSize is the number of threads in a warp on every NVIDIA GPU so far (CUDA C++ Programming Guide).
const WarpSize = 32

// SectorBytes is the unit in which global memory is moved; BankCount banks of BankBytes each make up
// shared memory (CUDA C++ Programming Guide, "Compute Capabilities" 5.x–9.x).
const (
	SectorBytes = 32
	BankCount   = 32
	BankBytes   = 4
)

// Dim3 is a grid or block shape, as CUDA's dim3. Zero components count as 1.
type Dim3 struct{ X, Y, Z int }

func (d Dim3) norm() Dim3 {
	return Dim3{max(d.X, 1), max(d.Y, 1), max(d.Z, 1)}
}

// Size is X·Y·Z.
func (d Dim3) Size() int { d = d.norm(); return d.X * d.Y * d.Z }

// Kernel is the code every thread runs.
type Kernel func(t *Thread)

// Thread is one emulated CUDA thread: its indices and the operations the emulator counts.
type Thread struct {
	BlockIdx, ThreadIdx, BlockDim, GridDim Dim3

	blk   *block
	lane  int // linear index within the warp
	warp  int // warp index within the block
	yield func(struct{}) bool
	recs  []access // this phase's memory accesses, in order
	flops int64
}

// access is one memory access of one lane.
type access struct {
	kind  kind
	bytes uint8
	addr  int64 // a global byte address, or a byte offset in the block's shared memory
}

type kind uint8

const (
	globalLoad kind = iota
	globalStore
	sharedLoad
	sharedStore
)

// errStopped unwinds a thread whose block is abandoned.
var errStopped = errors.New("simt: block stopped")

// SyncThreads is __syncthreads(): the thread waits until every thread of its block has reached a
// barrier. A block in which some threads exit while others wait fails the launch with an error.
func (t *Thread) SyncThreads() {
	if !t.yield(struct{}{}) {
		panic(errStopped)
	}
}

// AddFLOPs counts n floating-point operations done by this thread.
func (t *Thread) AddFLOPs(n int) { t.flops += int64(n) }

// FMA returns a·b + c and counts 2 FLOPs, the fused multiply-add of a matrix multiply.
func FMA[T float32 | float64](t *Thread, a, b, c T) T {
	t.flops += 2
	return a*b + c
}

// Config is a launch: grid and block shapes, and how many blocks to emulate at once.
type Config struct {
	Grid, Block Dim3
	// Workers is how many blocks run in parallel; 0 means GOMAXPROCS.
	Workers int
	// Trace, if set, is called for every warp memory instruction of every block, in order within a
	// block (blocks run in parallel, so calls from different blocks interleave). It slows the
	// emulation; Watch uses it.
	Trace func(WarpInstruction)
}

// Launch runs kernel on every thread of the grid and returns the counts. It returns ctx's error when
// cancelled (checked between blocks and between barrier phases), and an error for a barrier that not
// every thread of a block reaches, or a thread that panics (for example an out-of-bounds access).
func Launch(ctx context.Context, cfg Config, kernel Kernel) (Counts, error) {
	grid, blockDim := cfg.Grid.norm(), cfg.Block.norm()
	if blockDim.Size() > 1024 {
		return Counts{}, fmt.Errorf("a block of %d threads is too many: CUDA allows 1024", blockDim.Size())
	}
	workers := cfg.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	nBlocks := grid.Size()
	var next atomic.Int64
	totals := make([]Counts, workers)
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range min(workers, nBlocks) {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= nBlocks {
					return
				}
				if err := ctx.Err(); err != nil {
					errs[w] = err
					return
				}
				idx := Dim3{i % grid.X, i / grid.X % grid.Y, i / (grid.X * grid.Y)}
				if err := runBlock(ctx, cfg, grid, blockDim, idx, kernel, &totals[w]); err != nil {
					errs[w] = err
					next.Store(int64(nBlocks)) // stop the others
					return
				}
			}
		})
	}
	wg.Wait()
	var c Counts
	for _, t := range totals {
		c.add(t)
	}
	c.Blocks = int64(nBlocks)
	c.Threads = int64(nBlocks * blockDim.Size())
	c.Warps = int64(nBlocks * ((blockDim.Size() + WarpSize - 1) / WarpSize))
	for _, err := range errs {
		if err != nil {
			return c, err
		}
	}
	return c, ctx.Err()
}

// block is the state threads of one block share.
type block struct {
	shared     map[string]any
	sharedSize int64
}

func runBlock(ctx context.Context, cfg Config, grid, dim, idx Dim3, kernel Kernel, c *Counts) error {
	n := dim.Size()
	blk := &block{shared: map[string]any{}}
	threads := make([]*Thread, n)
	nexts := make([]func() (struct{}, bool), n)
	stops := make([]func(), n)
	defer func() {
		for _, stop := range stops {
			if stop != nil {
				stop()
			}
		}
	}()
	for i := range n {
		t := &Thread{BlockIdx: idx, ThreadIdx: Dim3{i % dim.X, i / dim.X % dim.Y, i / (dim.X * dim.Y)},
			BlockDim: dim, GridDim: grid, blk: blk, lane: i % WarpSize, warp: i / WarpSize}
		threads[i] = t
		nexts[i], stops[i] = iter.Pull(func(yield func(struct{}) bool) {
			defer func() {
				if p := recover(); p != nil && p != errStopped { // errStopped: abandoned at a barrier
					panic(p)
				}
			}()
			t.yield = yield
			kernel(t)
		})
	}
	done := make([]bool, n)
	for {
		waiting, finished := 0, 0
		for i, t := range threads {
			if done[i] {
				finished++
				continue
			}
			ok, err := step(nexts[i], t, idx)
			if err != nil {
				return err
			}
			if ok {
				waiting++
			} else {
				done[i] = true
				finished++
			}
		}
		c.countPhase(threads, cfg.Trace, idx)
		if waiting == 0 {
			break
		}
		if finished > 0 {
			return fmt.Errorf("barrier mismatch in block (%d,%d,%d): %d threads wait at SyncThreads while %d have exited; every thread of a block must reach each barrier (a barrier inside a branch not all threads take?)",
				idx.X, idx.Y, idx.Z, waiting, finished)
		}
		c.Barriers++
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	for _, t := range threads {
		c.FLOPs += t.flops
	}
	return nil
}

// step resumes one thread until its next barrier (true) or its end (false), turning a panic in the
// kernel (an out-of-bounds access, say) into an error that names the thread.
func step(next func() (struct{}, bool), t *Thread, idx Dim3) (ok bool, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("thread (%d,%d,%d) of block (%d,%d,%d): %v", t.ThreadIdx.X, t.ThreadIdx.Y, t.ThreadIdx.Z, idx.X, idx.Y, idx.Z, p)
		}
	}()
	_, ok = next()
	return ok, nil
}
