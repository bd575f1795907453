package vgpu

import (
	"context"
	"fmt"
	"math"
	"math/bits"
	"runtime"
	"runtime/debug"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
)

// Buffer is a region of global memory the caller provides: a matrix, for example. Kernels get
// pointers to buffers through Ptr arguments; the launch reads and writes Data in place. An input's
// bytes all count as written; an output made by NewOutput (or poisoned with Poison) tracks which
// bytes threads have written, for the initcheck (initcheck.go).
type Buffer struct {
	Name string
	Data []byte
	// Shape, if set, says how the kernel indexes Data, for fault messages (an out-of-bounds access
	// names the element, and its row and column in a matrix).
	Shape   Shape
	written writtenBits // nil: every byte counts as written
}

// Shape is how a buffer's bytes are indexed in the kernel's source: elements of Elem bytes of the
// C++ type Type ("float"), and for a row-major matrix its Rows and Cols (zero: a vector).
type Shape struct {
	Elem       int
	Type       string
	Rows, Cols int
}

// NewBuffer returns a zeroed buffer of size bytes, every byte counting as written (an input, or an
// output the problem defines as zeroed: see NewOutput).
func NewBuffer(name string, size int) *Buffer { return &Buffer{Name: name, Data: make([]byte, size)} }

// Float32Buffer returns a buffer holding xs (little-endian IEEE singles).
func Float32Buffer(name string, xs []float32) *Buffer {
	b := NewBuffer(name, 4*len(xs))
	for i, x := range xs {
		writeN(b.Data[4*i:], 4, uint64(math.Float32bits(x)))
	}
	return b
}

// Float64Buffer returns a buffer holding xs.
func Float64Buffer(name string, xs []float64) *Buffer {
	b := NewBuffer(name, 8*len(xs))
	for i, x := range xs {
		writeN(b.Data[8*i:], 8, math.Float64bits(x))
	}
	return b
}

// Uint16Buffer returns a buffer holding 16-bit words (raw f16 or bf16 data).
func Uint16Buffer(name string, xs []uint16) *Buffer {
	b := NewBuffer(name, 2*len(xs))
	for i, x := range xs {
		writeN(b.Data[2*i:], 2, uint64(x))
	}
	return b
}

// Float32s returns the buffer's contents as float32s.
func (b *Buffer) Float32s() []float32 {
	out := make([]float32, len(b.Data)/4)
	for i := range out {
		out[i] = math.Float32frombits(uint32(readN(b.Data[4*i:], 4)))
	}
	return out
}

// Float64s returns the buffer's contents as float64s.
func (b *Buffer) Float64s() []float64 {
	out := make([]float64, len(b.Data)/8)
	for i := range out {
		out[i] = math.Float64frombits(readN(b.Data[8*i:], 8))
	}
	return out
}

// Arg is one kernel argument: a scalar of the parameter's size, or a pointer into a Buffer.
type Arg struct {
	bits uint64
	size int
	buf  *Buffer
	off  int64
	tmap *TensorMap // TensorMapArg (tma.go)
}

func U32(v uint32) Arg               { return Arg{bits: uint64(v), size: 4} }
func S32(v int32) Arg                { return Arg{bits: uint64(uint32(v)), size: 4} }
func U64(v uint64) Arg               { return Arg{bits: v, size: 8} }
func S64(v int64) Arg                { return Arg{bits: uint64(v), size: 8} }
func F32(v float32) Arg              { return Arg{bits: uint64(math.Float32bits(v)), size: 4} }
func F64(v float64) Arg              { return Arg{bits: math.Float64bits(v), size: 8} }
func Ptr(b *Buffer) Arg              { return Arg{buf: b, size: 8} }
func PtrAt(b *Buffer, off int64) Arg { return Arg{buf: b, off: off, size: 8} }

// LaunchConfig is one kernel launch.
type LaunchConfig struct {
	// Grid is the CTAs per grid and Block the threads per CTA (x, y, z); zeros count as 1.
	Grid, Block [3]int
	// DynamicShared is the bytes of extern (dynamic) shared memory.
	DynamicShared int
	// Params are the kernel's arguments, one per .param in order.
	Params []Arg
	// Buffers are the global memory the pointer arguments point into (every buffer a Ptr names
	// must be listed).
	Buffers []*Buffer
	// Cluster is the CTAs per thread-block cluster (x, y, z), as cudaLaunchKernelEx's cluster
	// dimension; zero: the kernel's __cluster_dims__, if any (cluster.go).
	Cluster [3]int
	// Workers is how many CTAs run in parallel; 0 means GOMAXPROCS.
	Workers int
	// NoRacecheck turns off the shared-memory hazard check (bounds and alignment are always
	// checked).
	NoRacecheck bool
	// Trace, when set, is called for every global-memory warp instruction (ld, st, atom, red) of
	// the CTAs in TraceBlocks (nil: CTA (0,0,0) only), at most TraceLimit times (0: 10000), one
	// call at a time, in each CTA's execution order. A nil Trace costs nothing.
	Trace       func(TraceEvent)
	TraceBlocks [][3]int
	TraceLimit  int
	// Only, when set, runs only these CTAs (sampled execution): the others are skipped entirely,
	// Counts are those of the CTAs that ran (Counts.Blocks of Counts.GridBlocks), and
	// Counts.Scaled estimates the whole grid's.
	Only [][3]int
	// Cache, when set, sends every global sector through an L1 per CTA and an L2 shared by the
	// launch of these sizes (cache.go says what is approximated) and fills Counts' cache fields; nil
	// costs nothing. Warps then take turns every few instructions, as on the hardware, unless Trace
	// is set: a traced launch keeps the long turns, so that a warp's accesses come in runs (its
	// hit rates are then those of warps running further apart).
	Cache *CacheConfig
}

// TraceEvent is one global-memory warp instruction, for replaying a warp's accesses.
type TraceEvent struct {
	Block  [3]int
	Warp   int    // the warp's index in its CTA
	Line   int    // PTX line
	Opcode string // e.g. "ld.global.f32"
	Store  bool   // a store (st, red; atom both loads and stores: Atomic)
	Atomic bool
	// Size is the bytes each lane accesses; Sectors the distinct 32-byte sectors of the request.
	Size    int
	Sectors int
	Lanes   []TraceLane // the active lanes, in lane order
}

// TraceLane is one lane's access: Buffer is the index in LaunchConfig.Buffers (-1: the module's
// .global/.const variables) and Offset the byte offset in it; Address is the raw virtual address.
type TraceLane struct {
	Lane    int
	Buffer  int
	Offset  int64
	Address uint64
}

// Counts is what one launch did, as an NVIDIA GPU's profiler would count it.
type Counts struct {
	// Blocks are the CTAs that ran (all of the grid, or LaunchConfig.Only's), of GridBlocks.
	Blocks, Warps, Threads int64
	GridBlocks             int64
	// Sampled marks counts scaled from a sample of the grid's CTAs (Scaled): an estimate.
	Sampled bool
	// WarpInstructions are instructions issued per warp; ThreadInstructions the lanes that executed
	// them (predicated-off lanes excluded).
	WarpInstructions, ThreadInstructions int64
	// Classes are the same split by instruction class (index: ClassFMA32 … ClassOther).
	Classes [NumClasses]ClassCount
	// FLOPs are floating-point operations, an FMA counting 2. TensorFLOPs are those of them that
	// tensor-core instructions did (wmma.mma, mma.sync: 2·m·n·k per warp instruction).
	FLOPs, TensorFLOPs int64
	// GlobalLoadRequests and GlobalStoreRequests are warp-level global memory instructions;
	// LoadSectors and StoreSectors the 32-byte sectors they touch; GlobalBytesUsed the distinct
	// bytes the lanes asked for.
	GlobalLoadRequests, GlobalStoreRequests int64
	LoadSectors, StoreSectors               int64
	GlobalBytesUsed                         int64
	// SharedLoadRequests and SharedStoreRequests are warp-level shared-memory instructions;
	// SharedWavefronts the passes the 32 banks needed (Nsight Compute's
	// l1tex__data_pipe_lsu_wavefronts_mem_shared), of all shared requests, atomics included;
	// SharedIdealWavefronts the passes they would need without bank conflicts (the distinct 4-byte
	// words of each pass / 32, rounded up: 1, 2, 4 for a warp's contiguous 4-, 8-, 16-byte access).
	// BankConflicts is the difference (countShared, wmmaWavefronts).
	SharedLoadRequests, SharedStoreRequests int64
	SharedWavefronts, SharedIdealWavefronts int64
	// Barriers are CTA-wide barriers completed (one per CTA per barrier), and completions of
	// counted barriers (bar.sync 1, 64: one per completion, namedbar.go).
	Barriers int64
	// AsyncProxyFences are the fence.proxy.async warp instructions executed by at least one lane
	// (not all predicated off): the fences between the generic proxy's shared-memory writes and
	// the async proxy's reads (PTX ISA 8.x, "membar/fence"), kept for the checks of the
	// instructions that read through the async proxy.
	AsyncProxyFences int64
	// GmmaInstructions are the warp-level wgmma.mma_async instructions (4 per warpgroup
	// instruction: Nsight Compute's sm__inst_executed_pipe_tensor_op_gmma, all of which read
	// shared memory: smsp__sass_inst_executed_op_shared_gmma); GmmaSharedBytes the shared memory
	// they read (B once per warpgroup, A per warp when it is in shared memory), kept apart from
	// the shared load requests and wavefronts (wgmma.go).
	GmmaInstructions, GmmaSharedBytes int64
	// TMARequests are the cp.async.bulk{.tensor} warp instructions (TMA copies) and TMABytes the
	// bytes they moved between global and shared memory (loads: zero-filled box elements included;
	// stores: the elements inside the tensor) (tma.go);
	// neither is part of the global load requests, sectors or Coalescing.
	TMARequests, TMABytes int64
	// TMAMulticastBytes are the bytes multicast TMA copies (.multicast::cluster) wrote into the
	// shared memory of the CTAs of their masks, each destination counted (their global reads are
	// counted once, in TMABytes).
	TMAMulticastBytes int64
	// DSMEMAccesses are the thread-level loads and stores to another CTA's shared memory through
	// a mapa address (distributed shared memory, cluster.go), not counted as shared requests.
	DSMEMAccesses int64
	// Atomics are the thread-level atomic operations (atom and red); GlobalAtomicRequests and
	// SharedAtomicRequests the warp-level ones by state space, and AtomicSectors the 32-byte sectors
	// the global ones touch. Atomic traffic is not part of the load/store sectors or Coalescing.
	// GlobalAtomicPasses and SharedAtomicPasses are the passes the requests needed: lanes of one
	// request updating the same address serialise, so a request takes as many passes as the most
	// lanes sharing one address (1 when all differ, 32 when a whole warp adds to one counter).
	// GlobalAtomics are those of Atomics whose instruction reached global memory (a generic atom
	// is counted by where its accesses went).
	Atomics, GlobalAtomics                     int64
	GlobalAtomicRequests, SharedAtomicRequests int64
	AtomicSectors                              int64
	GlobalAtomicPasses, SharedAtomicPasses     int64
	// GlobalAtomicHotOps is the most thread-level global atomic operations on one address in the
	// launch (they serialise in the L2 whichever warps and CTAs issue them); 0 when the launch's
	// global atomics touched more than MaxHotAddresses addresses, which are not tallied. Scaled
	// multiplies it like the other counts: right for an address the whole grid updates, too high
	// for one each CTA updates alone.
	GlobalAtomicHotOps int64
	// PredicatedOffThreadInstructions are the lanes that were active (not diverged away, not
	// exited) at a guarded instruction whose guard predicate was false: they issued with the warp
	// but did nothing, and are not part of ThreadInstructions.
	PredicatedOffThreadInstructions int64
	// Branches are the warp-level bra instructions executed; DivergentBranches those whose active
	// lanes went different ways (some took it, some did not). BranchEfficiency is the uniform share.
	Branches, DivergentBranches int64
	// GlobalLines are the distinct 128-byte lines of each global load, store and atomic request,
	// summed, but a cp.async.cg's: the lines that pass the L1's data pipe, one per clock
	// (gpumodel.Model's L1 term).
	// AsyncCopyLines are those of cp.async.cg requests, which bypass the L1 and are not in
	// GlobalLines; AsyncCopyWavefronts the shared-memory wavefronts of every cp.async's writes (Nsight
	// Compute's smsp__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ldgsts, which counts 6 for a
	// warp's 16-byte-a-lane copy where this counts 4), not in SharedWavefronts: neither passes the
	// L1's LSU data pipe (vgpu/cpasync.go says how that was seen).
	GlobalLines                         int64
	AsyncCopyLines, AsyncCopyWavefronts int64
	// The cache model's counts (LaunchConfig.Cache; zero without it, Cached false): L1Sectors are
	// the global load and store sectors that looked up the L1 and L1Hits those it held (Nsight
	// Compute's l1tex__t_sector_hit_rate.pct is L1Hits/L1Sectors); L2Sectors are the sectors that
	// reached the L2 (the L1's load misses, every store and atomic) and L2Hits those it held or a
	// store wrote (lts__t_sector_hit_rate.pct); DRAMReadBytes are the L2's misses × 32
	// (dram__bytes_read.sum) and DRAMWriteBytes the dirty sectors it evicted × 32
	// (dram__bytes_write.sum), during the launch; L2DirtyBytes are the dirty sectors × 32 still in
	// the L2 when it ended, which reach DRAM later.
	Cached                        bool
	L2DirtyBytes                  int64
	L1Sectors, L1Hits             int64
	L2Sectors, L2Hits             int64
	DRAMReadBytes, DRAMWriteBytes int64
	// Printf is the kernel's printf output (vprintf), joined in CTA order, at most MaxPrintfBytes
	// (then ending "… (output truncated)").
	Printf string
	// Lines are the counts per PTX line that executed, in line order.
	Lines []LineCount
	// Sources are the counts per source line from .loc directives, when the PTX has them.
	Sources []LineCount
	// Notes are the sanitizer's findings that do not stop the launch: "uninitialised read"s
	// (initcheck.go), the first of each source line, at most MaxNotes, in line order.
	Notes []*Fault
}

// ClassCount is the instructions of one class.
type ClassCount struct{ Warp, Thread int64 }

func linearBlock(b [3]int, grid [3]int) (int, bool) {
	for d := range 3 {
		if b[d] < 0 || b[d] >= grid[d] {
			return 0, false
		}
	}
	return b[0] + grid[0]*(b[1]+grid[1]*b[2]), true
}

// Scaled estimates the counts of the whole grid from a sampled launch (LaunchConfig.Only): every
// count is multiplied by GridBlocks/Blocks (rounded), Sampled is set, Printf is kept as it is.
// It is an estimate: exact when every CTA does the same work, as in a matrix multiplication
// whose size is a multiple of its tile; CTAs on a ragged edge of the grid do less.
func (c Counts) Scaled() Counts {
	if c.Blocks == 0 || c.GridBlocks == 0 || c.Blocks == c.GridBlocks {
		return c
	}
	f := float64(c.GridBlocks) / float64(c.Blocks)
	s := func(x *int64) { *x = int64(math.Round(float64(*x) * f)) }
	out := c
	out.Sampled = true
	for _, x := range []*int64{&out.Warps, &out.Threads, &out.WarpInstructions, &out.ThreadInstructions,
		&out.FLOPs, &out.TensorFLOPs, &out.GlobalLoadRequests, &out.GlobalStoreRequests, &out.LoadSectors, &out.StoreSectors,
		&out.GlobalBytesUsed, &out.SharedLoadRequests, &out.SharedStoreRequests, &out.SharedWavefronts,
		&out.Barriers, &out.AsyncProxyFences, &out.GmmaInstructions, &out.GmmaSharedBytes, &out.TMARequests, &out.TMABytes, &out.TMAMulticastBytes, &out.DSMEMAccesses, &out.Atomics, &out.GlobalAtomics, &out.GlobalAtomicRequests, &out.SharedAtomicRequests, &out.AtomicSectors,
		&out.SharedIdealWavefronts, &out.GlobalAtomicPasses, &out.SharedAtomicPasses, &out.GlobalAtomicHotOps,
		&out.PredicatedOffThreadInstructions, &out.Branches, &out.DivergentBranches, &out.GlobalLines,
		&out.AsyncCopyLines, &out.AsyncCopyWavefronts, &out.L1Sectors, &out.L1Hits, &out.L2Sectors, &out.L2Hits, &out.DRAMReadBytes, &out.DRAMWriteBytes, &out.L2DirtyBytes} {
		s(x)
	}
	out.Blocks = c.GridBlocks
	for i := range out.Classes {
		s(&out.Classes[i].Warp)
		s(&out.Classes[i].Thread)
	}
	scaleLines := func(ls []LineCount) []LineCount {
		ls = append([]LineCount(nil), ls...)
		for i := range ls {
			l := &ls[i]
			for _, x := range []*int64{&l.Warp, &l.Thread, &l.Requests, &l.Sectors, &l.BytesUsed, &l.SharedRequests, &l.Wavefronts,
				&l.IdealWavefronts, &l.AtomicPasses, &l.PredicatedOff, &l.DivergentBranches} {
				s(x)
			}
		}
		return ls
	}
	out.Lines = scaleLines(c.Lines)
	out.Sources = scaleLines(c.Sources)
	return out
}

// LineCount is what the instructions of one line did.
type LineCount struct {
	File string // the .file name (Sources only)
	Line int
	// Text is the PTX instruction (Lines only).
	Text                         string
	Warp, Thread                 int64
	Requests, Sectors, BytesUsed int64
	SharedRequests, Wavefronts   int64
	// IdealWavefronts are the shared wavefronts without bank conflicts (Wavefronts − IdealWavefronts
	// are the line's conflicts); AtomicPasses the atomic requests' passes (global and shared);
	// PredicatedOff the active lanes whose guard was false; DivergentBranches the warp-level
	// executions of a bra whose lanes went different ways.
	IdealWavefronts, AtomicPasses    int64
	PredicatedOff, DivergentBranches int64
}

// Coalescing is bytes used / bytes moved by global memory (1 = perfectly coalesced), 0 without traffic.
func (c Counts) Coalescing() float64 {
	moved := 32 * (c.LoadSectors + c.StoreSectors)
	if moved == 0 {
		return 0
	}
	return float64(c.GlobalBytesUsed) / float64(moved)
}

// BankConflicts is the extra shared-memory wavefronts that bank conflicts caused: the wavefronts
// beyond the ideal (Nsight Compute's l1tex__data_bank_conflicts_pipe_lsu_mem_shared), so a
// conflict-free 64- or 128-bit access, which needs 2 or 4 wavefronts anyway, has none.
func (c Counts) BankConflicts() int64 { return c.SharedWavefronts - c.SharedIdealWavefronts }

// ActiveLanes is the mean number of active lanes per warp instruction, predicated-off lanes
// included (32 = no divergence; Nsight Compute's smsp__thread_inst_executed_per_inst_executed).
func (c Counts) ActiveLanes() float64 {
	if c.WarpInstructions == 0 {
		return 0
	}
	return float64(c.ThreadInstructions+c.PredicatedOffThreadInstructions) / float64(c.WarpInstructions)
}

// PredicatedOnLanes is the mean number of lanes per warp instruction that executed it: active and
// with a true guard (Nsight Compute's smsp__thread_inst_executed_pred_on_per_inst_executed).
func (c Counts) PredicatedOnLanes() float64 {
	if c.WarpInstructions == 0 {
		return 0
	}
	return float64(c.ThreadInstructions) / float64(c.WarpInstructions)
}

// BranchEfficiency is the percentage of executed bra instructions whose active lanes all went the
// same way (the PTX-level counterpart of Nsight Compute's
// smsp__sass_average_branch_targets_threads_uniform.pct); 100 when no branch executed.
func (c Counts) BranchEfficiency() float64 {
	if c.Branches == 0 {
		return 100
	}
	return 100 * float64(c.Branches-c.DivergentBranches) / float64(c.Branches)
}

// L1HitRate is the percentage of L1 sector lookups that hit (0 without any).
func (c Counts) L1HitRate() float64 { return pct(c.L1Hits, c.L1Sectors) }

// L2HitRate is the percentage of L2 sector accesses that hit (0 without any).
func (c Counts) L2HitRate() float64 { return pct(c.L2Hits, c.L2Sectors) }

func pct(a, b int64) float64 {
	if b == 0 {
		return 0
	}
	return 100 * float64(a) / float64(b)
}

// AtomicSerialisation is the extra passes same-address atomics cost: passes beyond one per request.
func (c Counts) AtomicSerialisation() int64 {
	return c.GlobalAtomicPasses + c.SharedAtomicPasses - c.GlobalAtomicRequests - c.SharedAtomicRequests
}

type launch struct {
	ctx       context.Context
	mod       *Module
	prog      *program
	bufs      [][]byte
	params    []byte
	grid      [3]int
	block     [3]int
	nthreads  int
	shared    int
	racecheck bool
	gr        *globalRace // the global race check between blocks (nil: off)
	poisoned  uint64      // bit i&63 set when L.bufs[i] has written marks (initcheck.go)
	// the initcheck's marks of each buffer of bufs (nil: all written) and the buffers' names
	written []writtenBits
	names   []string
	shapes  []Shape // of the buffers, as names

	l2      *l2Model // nil: no cache model
	l1Bytes int
	quantum int

	trace      func(TraceEvent)
	traceLeft  int
	traceMu    sync.Mutex
	traced     map[int]bool // CTA linear indices traced
	printMu    sync.Mutex
	prints     []printChunk
	printBytes int
	printTrunc bool

	// clusterDims is the cluster shape ({1, 1, 1} without clusters) and clusterSize its CTAs
	clusterDims [3]int
	clusterSize int

	tmaps map[uint64]tmap // the TensorMapArg parameters' maps by generic address (tma.go)
}

func (L *launch) source(loc int32) string {
	if loc < 0 || int(loc) >= len(L.mod.Locs) {
		return ""
	}
	lc := L.mod.Locs[loc]
	f := L.mod.Files[lc.File]
	if f == "" {
		f = fmt.Sprintf("file %d", lc.File)
	}
	return fmt.Sprintf("%s:%d", f, lc.Line)
}

type cta struct {
	L        *launch
	hot      atomHot // global atomic operations per address, over the CTAs this worker ran
	prog     *program
	wk       *cta // counts owner (itself)
	counts   []instCount
	warps    []*warp
	shared   []byte
	gclock   blockClock // the global race check's view of the block (globalrace.go)
	shadow   []shadow   // the hazard check's records per 4-byte word, and per byte of split words
	bytes    []shadow
	seq      uint32      // the hazard check's clock: barriers and warp synchronisations (racecheck.go)
	barSeq   uint32      // seq at the last barrier
	clocks   []warpClock // per warp, made at the first warp synchronisation
	swritten writtenBits
	sFull    int                   // the leading words of swritten known all written (initShared's fast path)
	uninit   map[int32]*uninitNote // this worker's uninitialised reads, by instruction
	linear   int                   // the CTA's linear index in the grid
	idx      [3]int
	lanes    [warpSize]memLane
	direct   []byte // the last memOp's memory when all its lanes were resolved at once (mem.go), else nil
	pattern  uint8  // the last memOp's address pattern when direct is set (patUniform…), else patNone
	sortBuf  [4 * warpSize]uint64
	seen     []uint32 // per 4-byte word of shared memory: the bank count's pass that last met it (bankPassSeen)
	pass     uint32
	out      []byte // this CTA's printf output
	// the cache model (cache.go): this worker's L1 (nil without one), the running CTA's stream to
	// the L2, and this worker's L1 counts and global lines
	l1                *cacheLevel
	lineBuf           [256]uint64 // a request's lines and their sectors (cacheRequest)
	maskBuf           [256]uint8
	stream            []uint64
	l1Sectors, l1Hits int64
	lines, asyncLines int64
	tracing           bool
	barriers          uint64
	nbars             [16]namedBar         // the counted barriers (namedbar.go)
	named             [][]uint32           // racecheck: per warp, its clock over the warps (namedbar.go)
	mbars             map[uint32]*mbarrier // the block's initialised mbarriers by shared offset (mbarrier.go)
	proxyFences       int64                // fence.proxy.async warp instructions executed (hopper.go)
	wg                *wgState             // wgmma groups and the async-proxy check's records (wgmma.go), nil without wgmma
	bulk              []bulkCopy           // TMA copies in flight (tma.go)
	bulkBytes         int64                // their bytes
	dsmem             int64                // Counts.DSMEMAccesses
	tmaRequests       int64                // Counts.TMARequests and TMABytes (tma.go)
	tmaBytes          int64                // Counts.TMABytes
	tmaMulticastBytes int64                // Counts.TMAMulticastBytes
	bulkMarks         []bulkMark           // shared chunks TMA copies in flight will write (tmarace.go)
	bulkMarked        int                  // how many are marked
	ts                *tmaStores           // TMA stores in flight (tmastorerace.go), nil before the first
	storeMarked       int                  // shared chunks TMA stores in flight read
	dsm               []dsmRec             // per shared byte, accesses across the cluster (dsmemrace.go)
	dsmLive           bool                 // another CTA accessed it since the last barrier.cluster phase
	clock             uint64               // %clock64 and %globaltimer (hopper.go)
	done              <-chan struct{}

	// the running cluster (nil: none), the CTA's rank in it and its threads' barrier.cluster.arrive
	// counts (cluster.go)
	cl        *cluster
	rank      int
	clArrived []uint32
}

type faultPanic struct{ err error }

func (c *cta) fault(f *Fault, w *warp, l int, in *inst) {
	c.locate(f, w, l, in)
	panic(faultPanic{f})
}

// locate fills in where f happened: the CTA, lane l's thread, in's PTX line, text and source line.
func (c *cta) locate(f *Fault, w *warp, l int, in *inst) {
	f.Block = c.idx
	f.Thread = c.threadXYZ(w.first + l)
	f.Line = int(in.line)
	f.Instr = c.L.mod.Line(int(in.line))
	if f.Source == "" {
		f.Source = c.L.source(in.loc)
	}
}

func (c *cta) threadXYZ(i int) [3]int {
	b := c.L.block
	return [3]int{i % b[0], i / b[0] % b[1], i / (b[0] * b[1])}
}

// scheduling quantum: instructions a warp issues before the next warp's turn (and the next check
// of the context)
const quantum = 4096

// Launch runs entry of mod over the grid and returns the launch's counts. It stops with ctx's error
// when ctx is done (checked every few thousand warp instructions, so a kernel that never ends
// stops too), with a *Fault for a sanitizer finding or a barrier error, and with an
// *UnsupportedError for an instruction the virtual GPU does not implement.
func Launch(ctx context.Context, mod *Module, entry string, cfg LaunchConfig) (Counts, error) {
	fn := mod.Function(entry)
	if fn == nil || fn.decl {
		return Counts{}, fmt.Errorf("no kernel %q in the PTX module", entry)
	}
	if !fn.Entry {
		return Counts{}, fmt.Errorf("%s is a .func, not a kernel (.entry)", entry)
	}
	if _, err := fn.decoded(); err != nil {
		return Counts{}, err
	}
	L, err := newLaunch(ctx, mod, fn, cfg)
	if err != nil {
		return Counts{}, err
	}
	index, err := L.setBuffers(cfg.Buffers)
	if err != nil {
		return Counts{}, err
	}
	if err := L.setParams(fn, cfg.Params, index); err != nil {
		return Counts{}, err
	}
	if L.racecheck {
		L.gr = newGlobalRace(len(L.bufs))
	}
	gridBlocks := L.grid[0] * L.grid[1] * L.grid[2]
	nblocks := gridBlocks
	only, err := onlyBlocks(cfg.Only, L.grid) // the CTAs to run (linear indices), nil: all
	if err != nil {
		return Counts{}, err
	}
	if only != nil {
		nblocks = len(only)
		if L.clusterSize > 1 { // the whole clusters of the blocks named
			only = L.clustersOf(only)
			nblocks = len(only) * L.clusterSize
		}
	}
	workers := cfg.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	nwarps := (L.nthreads + warpSize - 1) / warpSize
	ctas, runErr := L.runCTAs(max(1, min(workers, nblocks/L.clusterSize)), nblocks, nwarps, only)
	cnt := L.counts(ctas, nblocks, nwarps)
	cnt.GlobalAtomicHotOps = hottest(ctas)
	if m := L.l2; m != nil {
		cnt.Cached = true
		cnt.L2Sectors, cnt.L2Hits = m.sectors, m.hits
		cnt.DRAMReadBytes, cnt.DRAMWriteBytes = SectorBytes*m.dramRead, SectorBytes*m.dramWrite
		if m.l2 != nil {
			cnt.L2DirtyBytes = SectorBytes * m.l2.dirty()
		}
	}
	cnt.GridBlocks = int64(gridBlocks)
	cnt.Printf = L.printOutput()
	cnt.Notes = append(L.notes(ctas), L.gr.note()...)
	if runErr != nil {
		return cnt, runErr
	}
	return cnt, ctx.Err()
}

// newLaunch checks cfg's shape and shared memory against fn and the limits, and makes the launch
// with its cache model and trace, before any buffer.
func newLaunch(ctx context.Context, mod *Module, fn *Function, cfg LaunchConfig) (*launch, error) {
	prog, err := fn.decoded()
	if err != nil {
		return nil, err
	}
	grid, block, err := launchShape(fn, cfg)
	if err != nil {
		return nil, err
	}
	nthreads := block[0] * block[1] * block[2]
	if cfg.DynamicShared < 0 {
		return nil, fmt.Errorf("negative dynamic shared memory")
	}
	shared := prog.sharedTop
	if cfg.DynamicShared > 0 {
		shared = (prog.sharedTop+prog.dynAlign-1)/prog.dynAlign*prog.dynAlign + cfg.DynamicShared
	}
	if shared > MaxSharedBytes {
		return nil, fmt.Errorf("%d bytes of shared memory per block, over the %d-byte limit", shared, MaxSharedBytes)
	}
	nwarps := (nthreads + warpSize - 1) / warpSize
	if rf := int64(prog.nregs) * int64(nwarps) * warpSize * 8; rf > MaxRegisterFileBytes {
		return nil, fmt.Errorf("the register file of one block would be %d bytes, over the %d-byte limit", rf, MaxRegisterFileBytes)
	}
	L := &launch{ctx: ctx, mod: mod, prog: prog, grid: grid, block: block, nthreads: nthreads, shared: shared,
		racecheck: !cfg.NoRacecheck, quantum: quantum}
	if L.clusterDims, err = clusterShape(fn, cfg, grid); err != nil {
		return nil, err
	}
	L.clusterSize = L.clusterDims[0] * L.clusterDims[1] * L.clusterDims[2]
	if cfg.Cache != nil {
		L.l2 = newL2Model(cfg.Cache.L2Bytes)
		L.l2.observe = cfg.Cache.L2Access
		L.l1Bytes, L.quantum = cfg.Cache.L1Bytes, cacheQuantum
		if cfg.Trace != nil {
			L.quantum = quantum // a watched warp's accesses come in runs (see Cache)
		}
	}
	L.bufs = append(L.bufs, moduleData(mod))
	L.written, L.names, L.shapes = append(L.written, nil), append(L.names, ""), append(L.shapes, Shape{})
	if cfg.Trace != nil {
		L.trace, L.traceLeft, L.traced = cfg.Trace, cfg.TraceLimit, map[int]bool{}
		if L.traceLeft <= 0 {
			L.traceLeft = 10000
		}
		tb := cfg.TraceBlocks
		if tb == nil {
			tb = [][3]int{{}}
		}
		for _, b := range tb {
			if i, ok := linearBlock(b, grid); ok {
				L.traced[i] = true
			}
		}
	}
	return L, nil
}

// launchShape is cfg's grid and block (a 0 dimension is 1), checked against the hardware's limits
// and fn's .reqntid and .maxntid.
func launchShape(fn *Function, cfg LaunchConfig) (grid, block [3]int, err error) {
	norm := func(d [3]int) [3]int {
		for i := range d {
			if d[i] == 0 {
				d[i] = 1
			}
		}
		return d
	}
	grid, block = norm(cfg.Grid), norm(cfg.Block)
	for i := range 3 {
		if grid[i] < 0 || block[i] < 0 {
			return grid, block, fmt.Errorf("negative launch dimension")
		}
	}
	nthreads := block[0] * block[1] * block[2]
	if nthreads > 1024 || block[2] > 64 {
		return grid, block, fmt.Errorf("a block of %v threads is too many: at most 1024, z at most 64", block)
	}
	if grid[1] > 65535 || grid[2] > 65535 || grid[0] > math.MaxInt32 {
		return grid, block, fmt.Errorf("grid %v out of range", grid)
	}
	if r := fn.ReqNTID; r != ([3]int{}) && r != block {
		return grid, block, fmt.Errorf("%s requires blocks of %v (.reqntid), launched with %v", fn.Name, r, block)
	}
	if mx := fn.MaxNTID; mx != ([3]int{}) && nthreads > mx[0]*mx[1]*mx[2] {
		return grid, block, fmt.Errorf("%s allows at most %d threads per block (.maxntid), launched with %d", fn.Name, mx[0]*mx[1]*mx[2], nthreads)
	}
	return grid, block, nil
}

// setBuffers adds the launch's buffers (global windows 2, 3, …) with their initcheck marks, and
// returns each buffer's index.
func (L *launch) setBuffers(bufs []*Buffer) (map[*Buffer]int, error) {
	index := map[*Buffer]int{}
	for i, b := range bufs {
		if b == nil {
			return nil, fmt.Errorf("buffer %d is nil", i)
		}
		if uint64(len(b.Data)) > offsetMask {
			return nil, fmt.Errorf("buffer %s is too large", b.Name)
		}
		index[b] = i
		L.bufs = append(L.bufs, b.Data)
		L.written, L.names, L.shapes = append(L.written, b.written), append(L.names, b.Name), append(L.shapes, b.Shape)
		if b.written != nil {
			L.poisoned |= 1 << ((i + 1) & 63)
		}
	}
	return index, nil
}

// setParams writes the parameter block (PTX ISA 8.x, 5.1.6.1 "Kernel Function Parameters"): a
// pointer argument becomes its buffer's window address.
func (L *launch) setParams(fn *Function, params []Arg, index map[*Buffer]int) error {
	if len(params) != len(fn.Params) {
		return fmt.Errorf("%s takes %d parameters, got %d", fn.Name, len(fn.Params), len(params))
	}
	L.params = make([]byte, fn.ParamBytes)
	for i, a := range params {
		p := fn.Params[i]
		v := a.bits
		if a.buf != nil {
			bi, ok := index[a.buf]
			if !ok {
				return fmt.Errorf("parameter %d points into buffer %q, which is not in Buffers", i, a.buf.Name)
			}
			v = uint64(bi+2)<<windowShift + uint64(a.off)
		}
		if a.size != p.Size {
			return fmt.Errorf("parameter %d (%s) is %d bytes, the argument %d", i, p.Name, p.Size, a.size)
		}
		if a.tmap != nil {
			if err := L.setTensorMap(i, p, a.tmap, index); err != nil {
				return err
			}
			continue
		}
		writeN(L.params[p.Offset:], p.Size, v)
	}
	return nil
}

// onlyBlocks is LaunchConfig.Only as sorted, distinct linear indices (nil when only is nil).
func onlyBlocks(only [][3]int, grid [3]int) ([]int, error) {
	if only == nil {
		return nil, nil
	}
	out := []int{} // not nil: an empty Only runs no block
	seen := map[int]bool{}
	for _, b := range only {
		i, ok := linearBlock(b, grid)
		if !ok {
			return nil, fmt.Errorf("Only: block %v is outside the grid %v", b, grid)
		}
		if !seen[i] {
			seen[i] = true
			out = append(out, i)
		}
	}
	sort.Ints(out)
	return out, nil
}

// runCTAs runs the nblocks CTAs (only's, or all) on workers goroutines, each with a CTA of its own
// that takes the next block in order until none is left or one faults; it returns the workers'
// CTAs (their counts) and the error of the first block in that order that failed (nil: none).
//
// The error is the one a run on one worker would return: blocks are taken in order, so when the
// block at position p faults every block before it has been taken; those still running finish
// (and may fault in turn, an earlier position winning), no later one starts, and a later one
// already running may fault too but loses. The counts of a launch that faults cover the blocks
// run until then, which on several workers can include later blocks.
func (L *launch) runCTAs(workers, nblocks, nwarps int, only []int) ([]*cta, error) {
	n := L.clusterSize // the CTAs a worker runs together: a cluster's (cluster.go)
	nblocks /= n
	ctas := make([]*cta, 0, workers*n)
	errs := make([]error, workers)
	failed := make([]int, workers) // the position of the block whose error errs holds
	var next atomic.Int64
	var wg sync.WaitGroup
	for wi := range workers {
		group := make([]*cta, n)
		for r := range group {
			group[r] = newCTA(L, nwarps)
		}
		ctas = append(ctas, group...)
		c := group[0]
		wg.Go(func() {
			pos := 0
			defer func() {
				if r := recover(); r != nil { // a fault, or a bug of the interpreter: an error, never a crash
					if fp, ok := r.(faultPanic); ok {
						errs[wi] = fp.err
					} else {
						errs[wi] = fmt.Errorf("internal error in the virtual GPU (please report it, with the kernel): %v\n%s", r, debug.Stack())
					}
					failed[wi] = pos
					next.Store(int64(nblocks))
					if L.l2 != nil {
						L.l2.abort() // no worker waits for this CTA's stream
					}
				}
			}()
			for {
				pos = int(next.Add(1) - 1)
				if pos >= nblocks {
					return
				}
				i := pos
				if only != nil {
					i = only[pos]
				}
				if n > 1 {
					L.runCluster(group, i) // i: the cluster's index
				} else {
					c.run(i)
				}
				for r, c := range group {
					if L.l2 != nil {
						c.stream = L.l2.done(pos*n+r, c.stream)
					}
				}
			}
		})
	}
	wg.Wait()
	var first error
	at := nblocks
	for wi, err := range errs {
		if err != nil && failed[wi] < at {
			first, at = err, failed[wi]
		}
	}
	return ctas, first
}

func newCTA(L *launch, nwarps int) *cta {
	p := L.prog
	c := &cta{L: L, prog: p, counts: make([]instCount, len(p.code)), shared: make([]byte, L.shared), done: L.ctx.Done()}
	c.wk = c
	if L.racecheck {
		c.shadow = make([]shadow, (L.shared+3)/4)
	}
	c.swritten = make(writtenBits, (L.shared+31)/32)
	c.wg = newWgState(p, L.shared)
	c.seen = make([]uint32, (L.shared+3)/4)
	if L.l2 != nil {
		c.l1 = newL1(L.l1Bytes)
	}
	for i := range nwarps {
		w := &warp{regs: make([][warpSize]uint64, p.nregs), preds: make([]uint32, p.npreds), id: i,
			first: i * warpSize, c: c, local: make([]byte, warpSize*p.localSize), past: make([]uint32, len(p.bars)), pastPC: make([]int32, len(p.bars))}
		if p.calls {
			w.stack = make([]frameRec, warpSize*MaxCallDepth)
		}
		c.warps = append(c.warps, w)
	}
	return c
}

func (c *cta) run(i int) {
	defer c.flushPrint(i)
	c.cl, c.rank = nil, 0
	c.start(i)
	for {
		if c.step() || c.completeBulk(0, true) || c.cl.release() { // TMA copies complete when nothing else can run (tma.go)
			continue
		}
		c.checkHang()
		c.clusterHang() // a barrier.cluster.wait of a CTA alone (cluster.go)
		if !c.releaseBarrier() {
			return
		}
	}
}

// start makes c block i, every thread at the kernel's first instruction.
func (c *cta) start(i int) {
	L := c.L
	c.tracing = L.trace != nil && L.traced[i]
	g := L.grid
	c.idx, c.linear = [3]int{i % g[0], i / g[0] % g[1], i / (g[0] * g[1])}, i
	c.newInterval()
	fill(c.shared, Poison) // shared memory starts poisoned and unwritten for every block
	if c.l1 != nil {
		c.l1.reset() // every CTA starts with a cold L1 (cache.go)
	}
	clear(c.swritten)
	if r := L.shared % 32; r != 0 { // the last word's bytes past shared memory: never accessed
		c.swritten[len(c.swritten)-1] = ^uint32(0) << r
	}
	c.sFull = 0
	clear(c.mbars)
	c.wg.reset()
	c.bulk, c.bulkBytes = c.bulk[:0], 0
	c.resetAsyncChecks() // dsmemrace.go
	clear(c.clArrived)
	c.clock = 0
	c.resetNamed() // namedbar.go
	for _, w := range c.warps {
		n := min(warpSize, L.nthreads-w.first)
		w.live = uint32(1<<n - 1)
		if n == warpSize {
			w.live = fullMask
		}
		w.active, w.waiting, w.atBar, w.atMbar, w.atNamed = w.live, 0, 0, 0, 0
		w.liveAtRelease = w.live
		clear(w.past)
		for l := range w.barPC {
			w.barPC[l] = -1
		}
		w.pc, w.minWait = 0, math.MaxInt32
		w.callers, w.depth, w.base, w.stackTop = 0, [warpSize]int32{}, [warpSize]uint32{}, 0
		clear(w.regs)
		clear(w.preds)
		clear(w.local)
		if w.async != nil {
			w.async.pending, w.async.commits = w.async.pending[:0], [warpSize]uint32{}
		}
		c.fillConsts(w)
	}
}

// step gives each warp that can run a turn of a quantum, reporting whether any ran.
func (c *cta) step() bool {
	ran := false
	for _, w := range c.warps {
		if w.active != 0 {
			c.clock += uint64(c.L.quantum - c.runWarp(w, c.L.quantum))
			ran = true
		}
	}
	c.checkDone()
	return ran
}

// releaseBarrier is called when no warp can run: every live thread has exited or waits at a
// barrier. It releases the barrier (true), or returns false when all threads have exited. Threads
// waiting at different barriers are an error, never a hang (PTX ISA 8.x, section 9.7.13.1
// "bar.sync": all threads of the CTA must reach the same barrier; exited threads do not take part).
func (c *cta) releaseBarrier() bool {
	c.namedHang() // threads waiting at a counted barrier then wait forever (namedbar.go)
	var first *warp
	firstLane := 0
	waiting := 0
	for _, w := range c.warps {
		for t := w.atBar; t != 0; t &= t - 1 {
			l := bits.TrailingZeros32(t)
			waiting++
			if first == nil {
				first, firstLane = w, l
				continue
			}
			if w.barPC[l] != first.barPC[firstLane] {
				a, b := &c.prog.code[first.barPC[firstLane]], &c.prog.code[w.barPC[l]]
				f := &Fault{Kind: "barrier", Msg: "it waits at a different barrier from another thread of its block: a __syncthreads() that not every thread reaches (CUDA C++ Programming Guide, \"Synchronization Functions\": allowed in conditional code only if the condition is the same for the whole block)"}
				f.OtherThread = c.threadXYZ(first.first + firstLane)
				f.OtherLine = int(a.line)
				f.OtherInstr = c.L.mod.Line(int(a.line))
				f.OtherSource = c.L.source(a.loc)
				c.fault(f, w, l, b)
			}
		}
	}
	if waiting == 0 {
		return false
	}
	c.checkSkipped(first.barPC[firstLane], first, firstLane)
	c.barriers++
	c.newInterval()
	c.wg.orderAll()
	c.sharedWritten()
	for _, w := range c.warps {
		w.waiting |= w.atBar
		w.atBar = 0
		w.liveAtRelease = w.live
		clear(w.past)
		w.pick()
	}
	return true
}

func (c *cta) fillConsts(w *warp) {
	L := c.L
	for _, k := range c.prog.consts {
		r := &w.regs[k.reg]
		for l := range warpSize {
			t := w.first + l
			var v uint64
			switch k.kind {
			case ckImm:
				v = k.val
			case ckTid:
				v = uint64(c.threadXYZ(t)[k.dim])
			case ckNtid:
				v = uint64(L.block[k.dim])
			case ckCtaid:
				v = uint64(c.idx[k.dim])
			case ckNctaid:
				v = uint64(L.grid[k.dim])
			case ckLaneid:
				v = uint64(l)
			case ckWarpid:
				v = uint64(w.id)
			case ckNwarpid:
				v = uint64(len(c.warps))
			case ckLanemaskEq:
				v = 1 << l
			case ckLanemaskLt:
				v = 1<<l - 1
			case ckLanemaskLe:
				v = 1<<(l+1) - 1
			case ckLanemaskGt:
				v = uint64(uint32(fullMask) << (l + 1))
			case ckLanemaskGe:
				v = uint64(uint32(fullMask) << l)
			case ckDynSmem:
				v = uint64(L.shared - c.prog.sharedTop)
			case ckTotalSmem:
				v = uint64(L.shared)
			case ckClusterCtarank, ckClusterNctarank, ckClusterid, ckNclusterid, ckClusterCtaid, ckClusterNctaid, ckExplicitCluster:
				v = c.clusterConst(k.kind, int(k.dim))
			}
			r[l] = v
		}
	}
}

func (L *launch) counts(ctas []*cta, nblocks, nwarps int) Counts {
	p := L.prog
	var out Counts
	out.Blocks = int64(nblocks)
	out.Threads = int64(nblocks * L.nthreads)
	out.Warps = int64(nblocks * nwarps)
	total := make([]instCount, len(p.code))
	for _, c := range ctas {
		out.Barriers += int64(c.barriers)
		out.AsyncProxyFences += c.proxyFences
		out.TMARequests += c.tmaRequests
		out.DSMEMAccesses += c.dsmem
		out.TMABytes += c.tmaBytes
		out.TMAMulticastBytes += c.tmaMulticastBytes
		out.GlobalLines += c.lines
		out.AsyncCopyLines += c.asyncLines
		out.L1Sectors += c.l1Sectors
		out.L1Hits += c.l1Hits
		for i, x := range c.counts {
			total[i].add(x)
		}
	}
	lines := map[int]*LineCount{}
	srcs := map[Loc]*LineCount{}
	for i, x := range total {
		if x.warp == 0 {
			continue
		}
		in := &p.code[i]
		out.addInst(in, x)
		lc := lines[int(in.line)]
		if lc == nil {
			lc = &LineCount{Line: int(in.line), Text: L.mod.Line(int(in.line))}
			lines[int(in.line)] = lc
		}
		lc.add(x)
		if in.loc >= 0 && int(in.loc) < len(L.mod.Locs) {
			loc := L.mod.Locs[in.loc]
			key := Loc{File: loc.File, Line: loc.Line}
			sc := srcs[key]
			if sc == nil {
				sc = &LineCount{File: L.mod.Files[loc.File], Line: loc.Line}
				srcs[key] = sc
			}
			sc.add(x)
		}
	}
	for _, lc := range lines {
		out.Lines = append(out.Lines, *lc)
	}
	sort.Slice(out.Lines, func(i, j int) bool { return out.Lines[i].Line < out.Lines[j].Line })
	for _, sc := range srcs {
		out.Sources = append(out.Sources, *sc)
	}
	sort.Slice(out.Sources, func(i, j int) bool {
		a, b := out.Sources[i], out.Sources[j]
		if a.File != b.File {
			return a.File < b.File
		}
		return a.Line < b.Line
	})
	return out
}

func (t *instCount) add(x instCount) {
	t.warp += x.warp
	t.thread += x.thread
	t.gReq += x.gReq
	t.gSectors += x.gSectors
	t.gBytes += x.gBytes
	t.sReq += x.sReq
	t.sWave += x.sWave
	t.sIdeal += x.sIdeal
	t.gPass += x.gPass
	t.sPass += x.sPass
	t.predOff += x.predOff
	t.divergent += x.divergent
}

func (lc *LineCount) add(x instCount) {
	lc.Warp += int64(x.warp)
	lc.Thread += int64(x.thread)
	lc.Requests += int64(x.gReq)
	lc.Sectors += int64(x.gSectors)
	lc.BytesUsed += int64(x.gBytes)
	lc.SharedRequests += int64(x.sReq)
	lc.Wavefronts += int64(x.sWave)
	lc.IdealWavefronts += int64(x.sIdeal)
	lc.AtomicPasses += int64(x.gPass + x.sPass)
	lc.PredicatedOff += int64(x.predOff)
	lc.DivergentBranches += int64(x.divergent)
}

// addInst adds what instruction in did (x, summed over the CTAs) to the launch's totals.
func (out *Counts) addInst(in *inst, x instCount) {
	out.WarpInstructions += int64(x.warp)
	out.ThreadInstructions += int64(x.thread)
	out.Classes[in.class].Warp += int64(x.warp)
	out.Classes[in.class].Thread += int64(x.thread)
	out.FLOPs += int64(in.flops) * int64(x.thread)
	if in.class == ClassTensor {
		out.TensorFLOPs += int64(in.flops) * int64(x.thread)
	}
	if in.wg != nil && in.wg.kind == wgMma {
		out.GmmaInstructions += int64(x.warp)
		out.GmmaSharedBytes += int64(x.warp) * in.wg.sharedBytes()
	}
	switch in.class {
	case ClassLoad:
		out.GlobalLoadRequests += int64(x.gReq)
		out.LoadSectors += int64(x.gSectors)
		if in.cp != nil { // cp.async: a global load and a shared store
			out.SharedStoreRequests += int64(x.sReq)
		} else {
			out.SharedLoadRequests += int64(x.sReq)
		}
	case ClassStore:
		out.GlobalStoreRequests += int64(x.gReq)
		out.StoreSectors += int64(x.gSectors)
		out.SharedStoreRequests += int64(x.sReq)
	case ClassAtomic:
		out.Atomics += int64(x.thread)
		if x.gReq > 0 {
			out.GlobalAtomics += int64(x.thread)
		}
		out.GlobalAtomicRequests += int64(x.gReq)
		out.AtomicSectors += int64(x.gSectors)
		out.SharedAtomicRequests += int64(x.sReq)
		out.GlobalAtomicPasses += int64(x.gPass)
		out.SharedAtomicPasses += int64(x.sPass)
	}
	if in.ctl == ctlBra {
		out.Branches += int64(x.warp)
		out.DivergentBranches += int64(x.divergent)
	}
	out.PredicatedOffThreadInstructions += int64(x.predOff)
	if in.class != ClassAtomic {
		out.GlobalBytesUsed += int64(x.gBytes)
	}
	if in.cp != nil { // an LDGSTS's shared writes, which Nsight Compute counts apart
		out.AsyncCopyWavefronts += int64(x.sWave)
		return
	}
	out.SharedIdealWavefronts += int64(x.sIdeal)
	out.SharedWavefronts += int64(x.sWave)
}

// MaxHotAddresses is how many distinct global addresses a launch's atomics are tallied over
// (Counts.GlobalAtomicHotOps): enough for counters, reductions and histograms of up to 256 bins.
const MaxHotAddresses = 256

// atomHot tallies thread-level global atomic operations per address, for up to MaxHotAddresses
// addresses; spread marks a launch whose atomics went beyond them.
type atomHot struct {
	addr   [MaxHotAddresses]uint64
	ops    [MaxHotAddresses]uint64
	k      int
	spread bool
}

func (h *atomHot) add(a, ops uint64) {
	for i := range h.k {
		if h.addr[i] == a {
			h.ops[i] += ops
			return
		}
	}
	if h.k == MaxHotAddresses {
		h.spread = true
		return
	}
	h.addr[h.k], h.ops[h.k] = a, ops
	h.k++
}

// hottest merges the workers' tallies: the most operations on one address, 0 when spread.
func hottest(ctas []*cta) int64 {
	var all atomHot
	for _, c := range ctas {
		h := &c.hot
		for i := range h.k {
			all.add(h.addr[i], h.ops[i])
		}
		if h.spread || all.spread {
			return 0
		}
	}
	return int64(slices.Max(append(all.ops[:all.k:all.k], 0)))
}
