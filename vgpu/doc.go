// Package vgpu is the virtual GPU: it parses the PTX that NVRTC (CUDA 11.8–13) and clang emit
// (PTX ISA 7.x–8.x, .target sm_70–sm_90, .address_size 64) and executes one kernel launch warp by
// warp, with the counts an NVIDIA profiler would report and a sanitizer like compute-sanitizer's.
// Semantic choices cite "PTX ISA 8.x" (NVIDIA's Parallel Thread Execution ISA document) by section.
//
// # API
//
//	mod, err := vgpu.ParseModule(ptxText)           // *ParseError names the line
//	A := vgpu.Float32Buffer("A", a)                 // global memory the caller owns
//	counts, err := vgpu.Launch(ctx, mod, "cuda_naive", vgpu.LaunchConfig{
//		Grid: [3]int{8, 32, 1}, Block: [3]int{32, 8, 1},
//		Params:  []vgpu.Arg{vgpu.Ptr(A), vgpu.Ptr(B), vgpu.Ptr(C), vgpu.S32(n), vgpu.S32(n), vgpu.S32(n)},
//		Buffers: []*vgpu.Buffer{A, B, C},
//	})
//	c := C.Float32s()
//
// An output buffer is made with NewOutput(name, size, vgpu.Poisoned) (every byte Poison, as a GPU's
// fresh memory is garbage: see "Initial memory" below; its written marks take a bit per byte) or
// vgpu.Zeroed (an output the problem defines as zeroed); buffers made otherwise are inputs, every
// byte initialised.
//
// Launch returns *Fault for what the sanitizer finds (kind "out of bounds", "misaligned", "hazard")
// and for barrier errors, divergent warp synchronisation, traps, failed assertions ("assertion": the
// message, and "file:line" from the assert in Source) and a call stack exhausted ("stack
// overflow"), with block, thread, address, PTX line and instruction, and the .loc source line when
// the PTX has one; an out-of-bounds access of a buffer names it (Buffer.Name: the kernel's parameter)
// and, with Buffer.Shape, the element and its row and column. *UnsupportedError is an instruction
// the virtual GPU does not implement (opcode, PTX line, .loc source line and the CUDA feature in
// words, Feature: never a silent wrong answer); ctx's error when ctx is done. The counts of the work done are returned with a fault too,
// printf output included (Counts.Printf), and so are Counts.Notes: the findings that do not stop a
// launch, "uninitialised read"s (*Fault values, at most MaxNotes).
//
// LaunchConfig.Trace receives the global-memory warp instructions (TraceEvent: warp, PTX line,
// opcode, load/store/atomic, sectors, and each active lane's buffer and offset) of the CTAs in
// TraceBlocks (default CTA (0,0,0)), at most TraceLimit (default 10000), one call at a time; nil
// costs nothing. LaunchConfig.Only runs a sample of the grid's CTAs (the rest are skipped); Counts
// then covers those (Counts.Blocks of Counts.GridBlocks) and Counts.Scaled() estimates the whole
// grid's, marked Sampled.
//
// # Execution model
//
// CTAs run in parallel on LaunchConfig.Workers goroutines (default GOMAXPROCS), taken in launch
// order; counts are merged in a fixed order, so they do not depend on the workers, and a launch that
// faults returns the fault of the first faulting CTA in launch order, as one worker would. In a
// CTA, warps of 32 lanes take turns of up to 4096 instructions, and the context is checked between
// turns, so a kernel that loops forever stops when ctx is cancelled. A warp executes in lockstep
// under an active mask; divergent branches are handled with the min-PC policy (exec.go): every lane keeps its own PC,
// the lanes with the lowest PC run, and lanes meeting at a PC merge again, which reconverges
// structured code at the immediate post-dominator. bar.sync releases when every live (not exited)
// thread of the CTA waits at the same barrier instruction; threads waiting at different barrier
// instructions are a "barrier" fault naming both, never a hang, and so is a barrier that threads
// of the block went past without waiting before they exited (synccheck.go). An mbarrier wait
// (test_wait, try_wait) whose phase has not completed parks its lanes until it does; when no
// thread of the CTA can run while some wait on an mbarrier phase, the launch stops with a "hang"
// fault at the wait's line (mbarrier.go), never a time-out. A completed mbarrier phase orders the
// block's shared-memory accesses for the hazard check as a barrier does.
//
// Calls (call.go): a kernel's program holds the code of every .func it can reach, each with its own
// registers. Each thread has a stack in its local memory holding one frame per active call (the
// function's parameters and results, its .local variables, its call sequences' .param variables and,
// for a recursive function, the save area of its registers). Lanes inside calls are ordered by their
// whole call stack, so a divergent call reconverges after it returns. Atomics (atomic.go) are one
// indivisible step per lane, lanes in lane order; global atomics use sync/atomic on the buffer words
// (a striped lock for words the host has not aligned), so they are sequentially consistent across
// the CTAs running in parallel; .volatile/.relaxed/.acquire/.release loads and stores of global
// memory are atomic word accesses too. printf output is collected per CTA and joined in CTA order.
//
// # Supported
//
// Directives: .version .target .address_size .file .loc .section (skipped) .pragma .visible .extern
// .weak .entry .func (definitions and prototypes) with .param lists, .maxntid .reqntid
// .minnctapersm .maxnreg, .reg (with %r<N> ranges, nested { } scopes), .shared (static; extern
// dynamic, placed after the static shared memory), .local, module-level .global and .const with
// initialisers, labels, @p / @!p guards.
//
// Instructions: mov (registers, immediates incl. 0f/0d hex floats, special registers %tid %ntid
// %ctaid %nctaid %laneid %warpid %nwarpid %lanemask_*, variable addresses, packing and unpacking
// with {a, b}); ld, ldu and st (.param .global .shared .local .const and generic; scalar, .v2, .v4;
// .nc and cache and ordering qualifiers accepted); cvta and cvta.to (.global .shared .local .const
// .param); add sub mul (.lo .hi .wide) mad (.lo .hi .wide, .sat) div rem min max abs neg sad on
// 8–64-bit integers; and or xor not cnot shl shr (amounts clamped) popc clz bfind (.shiftamt) brev bfe prmt (default
// mode) on .b types and predicates; add sub mul fma mad div rcp sqrt (.rn .rz .rm .rp, .ftz, .sat),
// abs neg min max copysign, rsqrt ex2 lg2 sin cos tanh (.approx: computed in float64 and rounded
// once, more accurate than hardware) on f32 and f64; setp with every integer and float comparison
// (incl. unordered and .num/.nan) and .and/.or/.xor with a (negated) predicate, two destinations
// p|q; selp, slct; cvt between all integer types (wrapping or .sat), integers and f16/bf16/f32/f64
// (.rn .rz .rm .rp), float to integer (.rni .rzi .rmi .rpi, saturating; NaN → 0, or 1<<(bits−1)
// from .f64 or to a 64-bit integer), float to float (narrowing with a rounding mode, .rni… to
// integral values; .relu and .satfinite from .f32 to .f16/.bf16), f32 pairs to .f16x2/.bf16x2
// (cvt.rn/.rz{.relu}{.satfinite}.f16x2.f32 d, a, b: a in the upper half), 8-bit float pairs
// (.e4m3x2, .e5m2x2) from two .f32 or an .f16x2 (.rn.satfinite{.relu}) and to .f16x2 (cvt8.go); bra (.uni), ret, exit, trap,
// bar.sync / barrier.sync (barriers 0–15, all threads), named barriers with a thread count
// (bar.sync a, b; bar.arrive a, b; barrier.sync/arrive{.aligned}; a and b immediates or
// registers: namedbar.go), bar.warp.sync (the lanes are in lockstep
// already; it orders its member lanes for the hazard check), membar/fence (no-ops: the
// interpreter is sequentially consistent); atom (add on u32 s32 u64 s64 f32 f64, min/max on u32 s32
// u64 s64, inc/dec on u32 with PTX's wrap-around, exch cas and or xor on b32/b64) and red (the same
// but cas) on .global, .shared and generic addresses; shfl.sync (up, down, bfly, idx, with the clamp
// and segment mask of c and the optional predicate result), vote.sync (all, any, uni, ballot),
// match.sync (any, all with its predicate; b32, b64), redux.sync (add min max on u32/s32, and or
// xor on b32), activemask (the lanes executing a .sync instruction must be exactly the live lanes of its member
// mask, else a "divergent warp sync" fault: the kernel's bug); call (.uni) to .func definitions with .param (or register) arguments and
// results, recursion included, and to the external vprintf (%d %i %u %x %X %o %c %s %p %f %F %e %E
// %g %G %a %%, flags, width, precision, * and the h hh l ll z j t length modifiers, C's inf/nan and
// %g) and __assertfail; lop3.b32, bfi, mul24/mad24 (.lo .hi); add sub mul fma (.rn, .sat) neg abs
// min max on f16, bf16, f16x2 and bf16x2, setp on f16 and bf16; wmma.load.a/.b/.c, wmma.mma, wmma.store.d for m16n16k16 with f16
// or bf16 inputs and f32 accumulators, on global or shared memory, as warp-collective operations;
// ldmatrix.sync.aligned.m8n8.{x1,x2,x4}{.trans}.shared.b16 and mma.sync.aligned.m16n8k16 and
// m16n8k8 .row.col.f32.{f16,bf16}.{f16,bf16}.f32 with the PTX ISA's fragment layouts (mma.go);
// cp.async.ca/.cg.shared.global of 4, 8 or 16 bytes with src-size or ignore-src, commit_group,
// wait_group and wait_all (cpasync.go: the shared destination is written at the wait that covers it)
// and cp.async.mbarrier.arrive{.noinc}; the CTA's mbarriers (mbarrier.go: init, arrive with an
// optional count, arrive.expect_tx, arrive_drop, expect_tx, complete_tx, test_wait and try_wait
// with a state or .parity, inval, on .shared{::cta} or generic addresses: cuda::barrier,
// cuda::memcpy_async with a barrier, the __mbarrier_* primitives); elect.sync and
// fence.proxy.async (hopper.go: counted, Counts.AsyncProxyFences; other fences are no-ops),
// setmaxnreg (a hint: registers keep their values);
// wgmma.mma_async.sync.aligned.m64nNk16.f32.{f16,bf16}.{f16,bf16} (N a multiple of 8 up to 256; B
// and optionally A through shared-memory matrix descriptors with no, 32-, 64- or 128-byte swizzle,
// or A in registers; scale-d, imm-scale-a/-b, imm-trans-a/-b), wgmma.fence, wgmma.commit_group and
// wgmma.wait_group (wgmma.go: each warp of the warpgroup computes its 16 rows of D when it executes
// it; a descriptor's nonzero matrix base offset is unsupported);
// cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes (the 1-D bulk copy) and
// cp.async.bulk.tensor.{1-5}d.shared::cluster.global.tile.mbarrier::complete_tx::bytes with a
// tensor map made by TensorMapArg (tma.go: zero fill outside the tensor, 32/64/128-byte swizzle,
// the bytes completed on the mbarrier when a thread waits on it; Counts.TMARequests and TMABytes),
// both with .multicast::cluster and a CTA mask (the box lands in each masked CTA's shared memory
// and completes on its barrier; Counts.TMAMulticastBytes),
// and the stores back: cp.async.bulk{.tensor.Nd}.global.shared::cta{.tile}.bulk_group with
// cp.async.bulk.commit_group and wait_group{.read};
// thread-block clusters (cluster.go: __cluster_dims__ or LaunchConfig.Cluster, co-scheduled CTAs,
// %cluster_ctarank %cluster_nctarank %clusterid %nclusterid %cluster_ctaid %cluster_nctaid
// %is_explicit_cluster, mapa, ld/st.shared::cluster and generic accesses to another CTA's shared
// memory, barrier.cluster.arrive/wait; Counts.DSMEMAccesses);
// mov from %clock, %clock64 and %globaltimer (a per-CTA count of instructions that only grows,
// not time).
//
// # Not supported yet (each is an *UnsupportedError naming the opcode, its CUDA feature, and its PTX and source lines)
//
// redux.sync on f32, min/max/fma with other modifiers on f16/bf16 (and .ftz on them), setp on f16x2
// and bf16x2, 16-bit, 128-bit
// and vector atomics, atomics on f16/bf16, testp, set, bar.red,
// brx.idx, indirect calls (through a register), calls to external functions
// other than vprintf and __assertfail (device malloc/free, separately compiled device code),
// textures and surfaces, other mma.sync shapes and types (f16 accumulators, integers, tf32, fp8),
// stmatrix, TMA im2col (an UnsupportedError naming it), prefetch and reductions, mbarrier operations on .shared::cluster
// other than arrive, mbarrier.pending_count and arrive.noComplete, wgmma shapes and types other
// than m64nNk16 with f32 accumulators, red.async/st.async to another CTA, wmma with f16
// accumulators or other shapes,
// .address_size 32.
//
// # Adding an instruction
//
// Decoding is table-driven (optable.go; GPGPU-Sim's opcodes.def is the model): an opcode's base
// name (before its first dot) picks a row, and the row's function checks the type suffixes,
// modifiers and operand shapes and fills in an inst whose exec function the interpreter calls, a
// warp at a time, under the active mask. Where a new opcode goes:
//
//   - An arithmetic or logic opcode on integer or float registers: a row of aluOps (aluops.go) with
//     its source count, source types (srcShape), accepted modifier and the builders of its lane
//     function for integer types (intOp) and for f32/f64 (floatOp); decodeALU reads the operands,
//     execALU runs it. A new atomic operation: its constant and name in atomOps and a row of
//     atomRows (atomic.go) with its types and function. A new cvt direction: cvtKinds (cvt.go).
//   - Any other family (a Hopper instruction, say): a row of opRows (optable.go) with its base
//     names, its form (one instruction of the family, which TestOpRowsDecodeTheirForms decodes)
//     and its decoder method, and that method and its exec function in the file of its kind
//     (hopper.go for Hopper's, warplevel.go for warp-collective ones, mem.go for memory). The exec
//     function reads and writes w.regs for the lanes in m; the scheduler counts it (launch.go) by
//     the decoder's inst.class (ClassInt unless set) and inst.flops.
//   - A line in "Supported" above; if features (decode.go) names its prefix as a CUDA feature not
//     supported, narrow or drop that entry.
//   - A test that runs a PTX kernel using it: TestInstructionSemantics (isa_test.go) or the
//     family's own _test.go. The guard in internal/layout keeps every function, decoders
//     included, within 80 lines.
//
// # Counts
//
// Per launch (Counts) and per PTX line and .loc source line (Counts.Lines, Counts.Sources), as
// Nsight Compute's metrics count them (docs/vgpu-metrics.md maps each to its metric and says where
// PTX-level counts differ from the SASS-level ones): warp and thread instructions (thread = lanes
// that executed, predicated-off lanes excluded) by class (ClassNames), FLOPs (an FMA is 2, a
// wmma.mma 8192 per warp, an mma.sync m16n8k16 4096; Counts.TensorFLOPs those of tensor-core
// instructions), global load and store requests, 32-byte sectors and the distinct bytes
// used (Counts.Coalescing = used / moved), shared-memory requests, wavefronts and ideal wavefronts
// (32 banks of 4-byte words; lanes reading one word share it; up to 8 bytes the warp is served at
// once, 16 bytes per half-warp, each unit taking the most distinct words in one bank, ideally its
// distinct words / 32; a 16-bit wmma tile in shared memory is one request read as 4 warp-wide
// 32-bit accesses of the mma fragment layout, an f32 tile as one pass: what an H100 counts,
// docs/vgpu-metrics.md; an ldmatrix is one request whose wavefronts are, per 8×8 matrix, the
// bankPass of its 8 rows of 16 bytes: 1 per matrix without conflicts; a cp.async is a global load
// request and a shared store request), Counts.BankConflicts (wavefronts − ideal), Counts.ActiveLanes (predicated-off lanes count as active: divergence only)
// beside the predicated-off lanes, branches and divergent branches (Counts.BranchEfficiency),
// barriers (bar.sync released per CTA, and each completion of a counted barrier; each mbarrier instruction is a warp instruction of class
// "barrier"), fence.proxy.async instructions (Counts.AsyncProxyFences), wgmma.mma_async warp
// instructions and the shared bytes they read (Counts.GmmaInstructions, GmmaSharedBytes: apart
// from the shared requests; 2·64·N·16 FLOPs per warpgroup instruction), and atomics (Counts.Atomics, GlobalAtomicRequests and AtomicSectors,
// SharedAtomicRequests, the passes same-address lanes serialise into: Counts.AtomicSerialisation,
// and the operations on the launch's hottest global address, GlobalAtomicHotOps; atomic traffic is
// counted apart from the load/store sectors and Coalescing).
//
// # Initial memory
//
// A GPU clears nothing: fresh global memory and a block's shared memory hold whatever was there.
// The virtual GPU is no kinder. Output buffers made by NewOutput(…, Poisoned) and every block's
// shared memory (static and dynamic) start filled with Poison bytes (0xFF: 0xFFFFFFFF is a NaN as
// float32, all-ones a NaN as float64 and -1 as an integer), the pattern the GPU worker fills C with
// before its launches (gpu.PoisonWord), so a kernel that accumulates into C without writing it
// first, or reads shared memory it never wrote, is wrong here at every size as on a GPU. Outputs
// made with Zeroed, and inputs, start as their bytes say. Registers and .local memory start at 0.
//
// # Sanitizer
//
// Every access is bounds- and alignment-checked against its state space (global buffers, the CTA's
// shared memory, the thread's local frame, the kernel's parameters).
//
// Initcheck (initcheck.go; Compute Sanitizer documentation, "Initcheck Tool", which covers global
// memory only): a bit per byte of each poisoned output and of the block's shared memory marks the
// bytes threads have written (an output's marks last across launches until Buffer.Poison). A load
// or atomic of a byte no thread has written is an "uninitialised read" note with the block, thread,
// PTX line and .loc source line of its first occurrence (in the lowest block) per source line, and
// how many such reads the line made; the launch goes on and its result is still checked.
//
// Racecheck (racecheck.go, on unless LaunchConfig.NoRacecheck; Compute Sanitizer documentation,
// "Racecheck Tool"): two accesses of one byte of shared memory by different threads, at least one
// a write, are a "hazard" fault (read after write, write after read, write after write) naming both
// threads, PTX lines and source lines, unless a barrier (bar.sync) or a completed mbarrier phase separates them or, for two
// lanes of one warp, a warp synchronisation naming both does: bar.warp.sync (__syncwarp), shfl.sync,
// vote.sync, match.sync, redux.sync, with their member masks, transitively. Bytes, not words, are checked: two lanes
// writing the halves of one word do not race. A write of the value already there is not reported,
// nor are atomics (they do not race with each other) or wmma on shared memory. ldmatrix reads are
// checked as the reads of the lanes that gave the rows' addresses; a cp.async's shared write is
// checked (and marked written for the initcheck) as its thread's store at the cp.async.wait_group
// that completes it, so a read before the wait, or by another thread not ordered after the wait by
// a barrier, is an uninitialised read or a hazard. A wgmma reading shared bytes written through
// the generic proxy (st.shared, atomics, cp.async) with no fence.proxy.async executed in the CTA
// since is a "hazard", and so is a generic write to bytes a wgmma read whose group its warp has not
// waited for (wgmma.go); a wgmma's shared reads are initchecked as loads are. An access of a
// wgmma's accumulator registers before the wgmma.wait_group that completes it is a "hazard" on
// Space "register" (wgmmahold.go; without racecheck it sees the old values). A TMA copy's
// destination is its from the issue to the wait that completes it: an access of it in between, or
// a copy issued into bytes other threads accessed in the barrier interval, is a "hazard" naming
// the copy (tmarace.go). A TMA store's shared source is its until the issuing thread's
// cp.async.bulk.wait_group{.read} completes its group, and its global destination until
// wait_group: a write of the source, or a read of the destination, in between is a "hazard"; a
// source other threads wrote with no barrier, or through the generic proxy with no
// fence.proxy.async, before the store is one too (tmastorerace.go). Accesses of another CTA's
// shared memory through distributed shared memory are racechecked against the owner's and the
// other CTAs' (unordered by the PTX memory model's release/acquire patterns at cluster scope:
// barrier.cluster, a remote mbarrier arrive the owner waits on, a release write another CTA
// observes: a "hazard" on Space "shared::cluster") and initchecked (dsmemrace.go).
//
// The global race check (globalrace.go, with racecheck; beyond compute-sanitizer, whose racecheck
// covers shared memory only): a plain load of a global word that another block wrote is a "hazard"
// fault on Space "global" naming both lines, unless the PTX memory model's release and acquire
// patterns order them: the writer's block executed a fence at .gpu or .sys scope (membar.gl,
// fence.sc, fence.acq_rel: __threadfence()) after the write and then an atomic or strong store on
// some location, which the reader's block then observed with an atomic or strong load. Decided by
// happens-before (an epoch per block, a clock per synchronisation location), not by the order
// blocks happened to run; reads only, blocks as single agents, bounded in words and clocks.
//
// # Memory bounds per launch
//
// The caller's buffers are used in place. Beyond them a launch allocates, per worker: the CTA's
// register file (at most MaxRegisterFileBytes = 64 MiB), shared memory (at most MaxSharedBytes =
// 227 KiB) with its hazard records (10× the shared size, plus 40× once an access covers part of a
// word) and written marks (a bit per byte), the warps' synchronisation clocks (4 KiB for a warp
// that synchronises part of its lanes), local memory (the thread's stack: exactly
// what the deepest call chain's frames need, RecursiveStackBytes = 16 KiB for a kernel that can
// recurse, at most MaxLocalBytes = 64 KiB per thread, so at most 64 MiB for 1024 threads; calls at
// most MaxCallDepth = 256 deep, beyond either a "stack overflow" fault), the call stacks' return
// sites (8 bytes × MaxCallDepth per thread, only for kernels that call) and one counter record per
// instruction, a record of each initialised mbarrier (at most one per 8 bytes of shared memory),
// for a kernel with wgmma 24 bytes per byte of shared memory (wgmma.go's proxy and reader records);
// plus a copy of the module's .global/.const variables, and at most MaxPrintfBytes =
// 64 KiB of printf output per launch ("… (output truncated)" beyond; the launch stops keeping CTAs'
// output once it holds that much, so which CTAs' lines survive truncation depends on scheduling). A trace keeps nothing: each
// event goes to the callback. A module is at most MaxSourceBytes = 16 MiB of text
// with at most MaxRegisters = 65536 registers per function.
package vgpu
