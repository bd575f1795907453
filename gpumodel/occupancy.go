package gpumodel

// The occupancy calculator: the CUDA occupancy calculator's arithmetic: from a kernel's registers per
// thread, shared memory per block and block size, the thread blocks and warps resident on one SM
// under each compute capability's published limits, the theoretical occupancy, and the resource
// that limits it.
//
// The arithmetic is that of the CUDA Occupancy Calculator and of cuda_occupancy.h (CUDA Toolkit
// 12.x, cudaOccMaxActiveBlocksPerMultiprocessor), which cudaOccupancyMaxActiveBlocksPerMultiprocessor
// and Nsight Compute's "theoretical occupancy" follow:
//   - warps: a block takes ceil(threads/32) warps; blocks ≤ max warps per SM / warps per block;
//   - registers: a warp's registers are 32 × registers per thread rounded up to the allocation
//     unit (256); each of the SM's 4 sub-partitions (SMSPs) holds a quarter of the register file
//     and whole warps, so warps per SM = 4 × ⌊(registers per SM / 4) / registers per warp⌋;
//     blocks ≤ that / warps per block;
//   - shared memory: a block takes static + dynamic + the driver's reserved bytes, rounded up to
//     the allocation unit; blocks ≤ the configured shared memory per SM / that;
//   - blocks: at most the SM's resident-block limit.
//
// Occupancy is resident warps / max warps per SM.

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// Limits are one compute capability's per-SM limits. Figures from the CUDA C++ Programming Guide
// (12.x), "Compute Capabilities", table "Technical Specifications per Compute Capability", and its
// sections "Compute Capability 7.x / 8.x / 9.0", "Shared Memory" (the carve-outs); the allocation
// units and the sub-partition count from cuda_occupancy.h (CUDA Toolkit 12.x:
// cudaOccRegAllocationGranularity, cudaOccSMemAllocationGranularity,
// cudaOccSubPartitionsPerMultiprocessor) and the CUDA Occupancy Calculator's "GPU Data" sheet.
type Limits struct {
	// CC is the compute capability, "9.0".
	CC string
	// MaxThreadsPerBlock is the largest block, in threads.
	MaxThreadsPerBlock int
	// MaxWarpsPerSM and MaxBlocksPerSM are the resident warps and thread blocks one SM holds.
	MaxWarpsPerSM, MaxBlocksPerSM int
	// RegistersPerSM is the register file in 32-bit registers; MaxRegistersPerBlock and
	// MaxRegistersPerThread the most a block and a thread may have.
	RegistersPerSM, MaxRegistersPerBlock, MaxRegistersPerThread int
	// RegisterUnit is the register allocation unit, in registers per warp: a warp's 32 × registers
	// per thread is rounded up to it.
	RegisterUnit int
	// SubPartitions is the SM's processing blocks (SMSPs), each with a quarter of the register file:
	// warps are given registers within one, and the hardware's per-block register check rounds a
	// block's warps up to a multiple of it (the calculator's "warp allocation granularity").
	SubPartitions int
	// SharedPerSM is the largest shared-memory carve-out per SM, in bytes; Carveouts every size it
	// can be configured to, ascending; SharedPerBlock the most one block may use (with the opt-in
	// attribute), in bytes.
	SharedPerSM    int
	Carveouts      []int
	SharedPerBlock int
	// SharedUnit is the shared-memory allocation unit in bytes; ReservedShared the bytes the driver
	// reserves in every block (1 KiB from compute capability 8.0, for system use).
	SharedUnit, ReservedShared int
}

const kib = 1024

func kibs(ks ...int) []int {
	out := make([]int, len(ks))
	for i, k := range ks {
		out[i] = k * kib
	}
	return out
}

// LimitsTable is the per-SM limits of compute capabilities 7.0 (V100), 7.5 (T4), 8.0 (A100), 8.6
// (GA10x), 8.9 (Ada: RTX 4080) and 9.0 (H100). Sources as for Limits. It returns a fresh slice.
func LimitsTable() []Limits {
	l := func(cc string, warps, blocks int, carve []int, perBlock, unit, reserved int) Limits {
		return Limits{CC: cc, MaxThreadsPerBlock: 1024, MaxWarpsPerSM: warps, MaxBlocksPerSM: blocks,
			RegistersPerSM: 64 * kib, MaxRegistersPerBlock: 64 * kib, MaxRegistersPerThread: 255,
			RegisterUnit: 256, SubPartitions: 4,
			SharedPerSM: carve[len(carve)-1], Carveouts: carve, SharedPerBlock: perBlock,
			SharedUnit: unit, ReservedShared: reserved}
	}
	return []Limits{
		l("7.0", 64, 32, kibs(0, 8, 16, 32, 64, 96), 96*kib, 256, 0),
		l("7.5", 32, 16, kibs(32, 64), 64*kib, 256, 0),
		l("8.0", 64, 32, kibs(0, 8, 16, 32, 64, 100, 132, 164), 163*kib, 128, kib),
		l("8.6", 48, 16, kibs(0, 8, 16, 32, 64, 100), 99*kib, 128, kib),
		l("8.9", 48, 24, kibs(0, 8, 16, 32, 64, 100), 99*kib, 128, kib),
		l("9.0", 64, 32, kibs(0, 8, 16, 32, 64, 100, 132, 164, 196, 228), 227*kib, 128, kib),
	}
}

// LookupLimits returns the limits of compute capability cc ("9.0").
func LookupLimits(cc string) (Limits, error) {
	var known []string
	for _, l := range LimitsTable() {
		if l.CC == cc {
			return l, nil
		}
		known = append(known, l.CC)
	}
	return Limits{}, fmt.Errorf("no occupancy limits for compute capability %q; known: %s", cc, strings.Join(known, ", "))
}

// Unlimited is the per-resource limit of a resource the kernel does not use (no registers
// counted, no shared memory on a GPU that reserves none), as the calculator's INT_MAX.
const Unlimited = math.MaxInt32

// Resource names, in the order OccupancyResult.Limiters lists ties.
const (
	LimitWarps        = "warps"
	LimitRegisters    = "registers"
	LimitSharedMemory = "shared memory"
	LimitBlocks       = "blocks"
)

// OccupancyResult is a kernel's occupancy on one SM.
type OccupancyResult struct {
	// BlocksPerSM and WarpsPerSM are the resident thread blocks and warps; Occupancy is WarpsPerSM
	// over the SM's maximum (0 to 1): the theoretical occupancy.
	BlocksPerSM, WarpsPerSM int
	Occupancy               float64
	// Limiters names the resources whose limit is BlocksPerSM (LimitWarps, LimitRegisters,
	// LimitSharedMemory, LimitBlocks), all of them when several tie.
	Limiters []string
	// Each resource's limit in blocks per SM (Unlimited for one the kernel does not use), as Nsight
	// Compute's launch__occupancy_limit_* metrics.
	WarpLimit, RegisterLimit, SharedLimit, BlockLimit int
	// WarpsPerBlock; RegistersPerWarp allocated (after rounding); SharedPerBlock allocated in bytes
	// (static + dynamic + reserved, rounded up to the allocation unit); Carveout the shared memory
	// per SM the shared limit was computed against, in bytes.
	WarpsPerBlock, RegistersPerWarp, SharedPerBlock, Carveout int
}

// Limiting is Limiters joined: "registers", or "warps and registers" for a tie.
func (r OccupancyResult) Limiting() string { return strings.Join(r.Limiters, " and ") }

// OccupancyFor is the occupancy of blocks of blockThreads threads using regsPerThread registers
// (0: not counted) and sharedPerBlock bytes of shared memory (static plus dynamic, without the
// driver's reserve) on compute capability cc, with the largest shared-memory carve-out: the
// calculator's default when no carve-out preference is set. It is an error when such a block
// cannot launch at all.
func OccupancyFor(cc string, blockThreads, regsPerThread, sharedPerBlock int) (OccupancyResult, error) {
	l, err := LookupLimits(cc)
	if err != nil {
		return OccupancyResult{}, err
	}
	return l.Occupancy(blockThreads, regsPerThread, sharedPerBlock, l.SharedPerSM)
}

func roundUp(x, unit int) int { return (x + unit - 1) / unit * unit }

// Occupancy is OccupancyFor on l with the shared memory per SM configured to carveout bytes (one of
// l.Carveouts). As in the calculator, a carve-out smaller than one block's shared memory is
// raised to the smallest configurable size that holds it.
func (l Limits) Occupancy(blockThreads, regsPerThread, sharedPerBlock, carveout int) (OccupancyResult, error) {
	switch {
	case blockThreads < 1 || blockThreads > l.MaxThreadsPerBlock:
		return OccupancyResult{}, fmt.Errorf("a block of %d threads: compute capability %s allows 1 to %d", blockThreads, l.CC, l.MaxThreadsPerBlock)
	case regsPerThread < 0 || regsPerThread > l.MaxRegistersPerThread:
		return OccupancyResult{}, fmt.Errorf("%d registers per thread: compute capability %s allows at most %d", regsPerThread, l.CC, l.MaxRegistersPerThread)
	case sharedPerBlock < 0 || sharedPerBlock > l.SharedPerBlock:
		return OccupancyResult{}, fmt.Errorf("%d bytes of shared memory per block: compute capability %s allows at most %d", sharedPerBlock, l.CC, l.SharedPerBlock)
	case !slices.Contains(l.Carveouts, carveout):
		return OccupancyResult{}, fmt.Errorf("a carve-out of %d bytes: compute capability %s configures %v", carveout, l.CC, l.Carveouts)
	}
	r := OccupancyResult{WarpsPerBlock: (blockThreads + 31) / 32, BlockLimit: l.MaxBlocksPerSM}
	r.WarpLimit = l.MaxWarpsPerSM / r.WarpsPerBlock
	r.RegisterLimit = Unlimited
	if regsPerThread > 0 {
		r.RegistersPerWarp = roundUp(32*regsPerThread, l.RegisterUnit)
		// the hardware's check rounds the block's warps up to whole sub-partitions; the software's does not
		if r.RegistersPerWarp*roundUp(r.WarpsPerBlock, l.SubPartitions) > l.MaxRegistersPerBlock {
			return OccupancyResult{}, fmt.Errorf("%d registers per thread in blocks of %d threads: over the %d registers a block may have (compute capability %s)",
				regsPerThread, blockThreads, l.MaxRegistersPerBlock, l.CC)
		}
		perPartition := l.RegistersPerSM / l.SubPartitions / r.RegistersPerWarp
		r.RegisterLimit = perPartition * l.SubPartitions / r.WarpsPerBlock
	}
	r.SharedLimit, r.Carveout = Unlimited, carveout
	if s := sharedPerBlock + l.ReservedShared; s > 0 {
		r.SharedPerBlock = roundUp(s, l.SharedUnit)
		if carveout < r.SharedPerBlock {
			// the largest carve-out holds SharedPerBlock + ReservedShared, so one always does
			r.Carveout = l.Carveouts[slices.IndexFunc(l.Carveouts, func(c int) bool { return c >= r.SharedPerBlock })]
		}
		r.SharedLimit = r.Carveout / r.SharedPerBlock
	}
	r.BlocksPerSM = min(r.WarpLimit, r.RegisterLimit, r.SharedLimit, r.BlockLimit)
	for _, lim := range []struct {
		name string
		n    int
	}{{LimitWarps, r.WarpLimit}, {LimitRegisters, r.RegisterLimit}, {LimitSharedMemory, r.SharedLimit}, {LimitBlocks, r.BlockLimit}} {
		if lim.n == r.BlocksPerSM {
			r.Limiters = append(r.Limiters, lim.name)
		}
	}
	r.WarpsPerSM = r.BlocksPerSM * r.WarpsPerBlock
	r.Occupancy = float64(r.WarpsPerSM) / float64(l.MaxWarpsPerSM)
	return r, nil
}
