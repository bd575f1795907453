package gpumodel

import (
	"strings"

	"github.com/gpuplayground/playground/vgpu"
)

// CacheFor is the virtual GPU's cache model for a launch on g with theoretical occupancy o
// (vgpu.CacheConfig; vgpu/cache.go says what it approximates): the L2 is g's; the L1 of an SM is
// its combined L1 and shared memory less the shared-memory carve-out (the smallest of the compute
// capability's carve-outs that holds the resident blocks' shared memory, reserved bytes included,
// as the driver picks it: CUDA C++ Programming Guide, "Shared Memory" for compute capabilities 8.x
// and 9.0), and each of the o.Result.BlocksPerSM resident blocks gets an equal share. Nil where g
// has no cache sizes.
func CacheFor(g GPU, o Occupancy) *vgpu.CacheConfig {
	if g.L1Shared <= 0 || g.L2 <= 0 {
		return nil
	}
	blocks := max(o.Result.BlocksPerSM, 1)
	used := blocks * o.Result.SharedPerBlock
	carve := used
	if lim, err := LookupLimits(g.CC); err == nil {
		for _, c := range lim.Carveouts {
			if c >= used {
				carve = c
				break
			}
		}
	}
	l1 := max(g.L1Shared-carve, 0)
	return &vgpu.CacheConfig{L1Bytes: l1 / blocks, L2Bytes: g.L2}
}

// Model is the modelled time of counts c on g: the largest of the times its limits allow (each
// term in Time.Terms, the largest named in Time.Bound):
//
//   - "compute": the FLOPs at g's FP32 peak, but for the tensor cores' (c.TensorFLOPs) where g has a
//     published tensor-core peak;
//   - "tensor": the tensor cores' FLOPs at TensorPeakFor(g, c) (wgmma's rate where c ran it), spread over the SMs the grid keeps busy
//     (as the per-SM terms below); no term where g has no such peak or the launch no tensor FLOPs;
//   - "DRAM": the DRAM bytes at g's bandwidth: the cache model's reads and writes when c has them
//     (c.Cached: its write-backs during the launch and the dirty sectors left in the L2, which a
//     launch repeated back to back pays for in the next), else 32 bytes per global load and store
//     sector (every access a miss);
//   - "L2": the sectors that reached the L2 (c.Cached), 32 bytes each, at g.L2PerClock bytes per
//     clock (no term where g publishes none), a partly written store sector (PartialStoreSectors)
//     taking PartialStoreSlots sectors' time, and the TMA copies' bytes (c.TMABytes: the virtual
//     GPU does not pass them through its cache model, so they are charged here in full, every copy
//     reading or writing the L2, and are missing from the DRAM term); a multicast copy
//     (.multicast::cluster) is charged once, for its one read of the L2, however many CTAs of the
//     cluster it writes (c.TMAMulticastBytes, the bytes it delivered to each, are not charged);
//   - "L1" or "shared memory": the L1/shared data pipe of each SM, which moves one 128-byte
//     wavefront per clock (SharedBytesPerClock): a global request's distinct 128-byte
//     lines (c.GlobalLines) and the shared wavefronts, bank conflicts included, share it; the term
//     is named after the larger share; cp.async's copies (c.AsyncCopyWavefronts, AsyncCopyLines)
//     do not pass it;
//   - "issue": the warp instructions at one per clock per scheduler (SchedulersPerSM): PTX
//     instructions, which the compiled SASS outnumbers or undercuts by a few tens of percent, or
//     with ModelAtSASS the SASS ones (SASSWarpInstructions);
//   - "atomics": AtomicSeconds.
//
// The per-SM terms (L1, shared memory, issue) spread the work evenly over the SMs, or over the
// grid's blocks when it has fewer blocks than g has SMs (one block per SM). Model has no latency
// term and no launch time: ModelAt, which knows the launch's occupancy, adds them.
func Model(c vgpu.Counts, g GPU) Time {
	return largest(limits(c, g))
}

// ModelAt is Model with o resident on each SM, which adds two terms:
//
//   - "latency": LatencySeconds, the time the warps take when each waits for its own loads and
//     dependent instructions, and warps in step (the resident blocks', where barriers keep them
//     together) for the scheduler that issues each instruction to all of them in turn, the tensor
//     cores and the shared-memory pipe they share, and only the W warps resident on an SM overlap
//     their waits (Little's law), from g.Latency (none where g has no latencies or o no warps);
//   - "launch": LaunchSeconds, the fixed time of starting and finishing a grid, which nothing
//     overlaps: it is added to the largest of the other terms, and named the bound where it is
//     longer than all of them.
func ModelAt(c vgpu.Counts, g GPU, o Occupancy) Time {
	return ModelAtSASS(c, g, o, nil)
}

// ModelAtSASS is ModelAt charging the SASS that ptxas compiled c's PTX lines to: the issue term
// counts SASSWarpInstructions(c, sass), and the latency term's runs issue sass's slots for each
// instruction (their dependence chains stay the PTX's). A nil sass is ModelAt.
func ModelAtSASS(c vgpu.Counts, g GPU, o Occupancy, sass SASSPerLine) Time {
	terms := limitsSASS(c, g, sass)
	if s := latencySeconds(c, g, o, sass); s > 0 {
		terms = append(terms, Term{Name: "latency", Seconds: s})
	}
	m := largest(terms)
	launch := LaunchSeconds(g)
	m.Terms = append(m.Terms, Term{Name: "launch", Seconds: launch})
	if launch > m.Seconds {
		m.Bound = "launch"
	}
	m.Seconds += launch
	return m
}

// limits are Model's terms.
func limits(c vgpu.Counts, g GPU) []Term { return limitsSASS(c, g, nil) }

// limitsSASS are Model's terms with the issue term in sass's instructions (nil: the PTX's).
func limitsSASS(c vgpu.Counts, g GPU, sass SASSPerLine) []Term {
	dram := float64(32 * (c.LoadSectors + c.StoreSectors))
	if c.Cached {
		dram = float64(c.DRAMReadBytes + c.DRAMWriteBytes + c.L2DirtyBytes)
	}
	flops, tensor := c.FLOPs, TensorPeakFor(g, c)
	if tensor > 0 {
		flops -= c.TensorFLOPs
	}
	terms := []Term{{Name: "compute", Seconds: float64(flops) / g.FP32}, {Name: "DRAM", Seconds: dram / g.DRAM}}
	// a grid of fewer blocks than SMs keeps only that many SMs busy
	sms := max(g.SMs, 1)
	if c.GridBlocks > 0 && c.GridBlocks < int64(sms) {
		sms = int(c.GridBlocks)
	}
	if tensor > 0 && c.TensorFLOPs > 0 {
		terms = append(terms, Term{Name: "tensor", Seconds: float64(c.TensorFLOPs) / (tensor * float64(sms) / float64(max(g.SMs, 1)))})
	}
	if sm := g.Clock * float64(sms); g.Clock > 0 {
		if c.Cached && g.L2PerClock > 0 {
			partial := float64(min(PartialStoreSectors(c), c.L2Sectors))
			sectors := float64(c.L2Sectors) - partial + partial*PartialStoreSlots() + float64(c.TMABytes)/32
			terms = append(terms, Term{Name: "L2", Seconds: 32 * sectors / (g.L2PerClock * g.Clock)})
		}
		pipe := "L1"
		if c.SharedWavefronts > c.GlobalLines {
			pipe = "shared memory"
		}
		terms = append(terms, Term{Name: pipe, Seconds: float64(c.GlobalLines+c.SharedWavefronts) / sm},
			Term{Name: "issue", Seconds: float64(SASSWarpInstructions(c, sass)) / (SchedulersPerSM * sm)})
	}
	return append(terms, Term{Name: "atomics", Seconds: AtomicSeconds(c, g)})
}

// largest is the model whose time is the longest of terms, named in Bound ("compute" when all are 0).
func largest(terms []Term) Time {
	m := Time{Terms: terms}
	for _, t := range terms {
		if t.Seconds > m.Seconds {
			m.Seconds, m.Bound = t.Seconds, t.Name
		}
	}
	if m.Bound == "" {
		m.Bound = "compute"
	}
	return m
}

// The naive transpose of the Shared-memory tiling lesson (bench/gpucheck/launch.cu's
// transpose_naive: blocks of 32×8, one float per thread, the stores going down a column) on an H100
// SXM at n = 4096, under Nsight Compute
// (bench/vgpuvsncu/testdata/h100-ncu-transpose-4096.csv, 2026-11-25, its first launch): 16,786,249
// store sectors (l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum), each written with 4 of its 32
// bytes, in 288,992 ns (gpu__time_duration.sum) at an SM clock of 1,602,342,667 Hz
// (sm__cycles_elapsed.avg.per_second). Nothing else in that launch comes near its time (its loads
// are coalesced, its DRAM traffic is the copy's, which takes 62 µs), so its stores set the rate at
// which the L2 takes partly written sectors.
const (
	ncuNaiveTransposeStoreSectors = 16786249
	ncuNaiveTransposeBytes        = 4 * 4096 * 4096
	ncuNaiveTransposeSeconds      = 288992e-9
	ncuNaiveTransposeClock        = 1602342667
	// h100L2SectorsPerClock is the L2's full-sector rate the datasheet assumes for the H100
	// (GPU.L2PerClock, 5120 bytes per clock) in 32-byte sectors.
	h100L2SectorsPerClock = 5120 / 32
)

// PartialStoreSlots is the time, in full sectors' time at the L2's rate, that the L2 takes for a
// store sector only partly written (a byte-masked write, which the L2 merges into the sector it
// holds): the H100's measured rate for them (the naive transpose above: its partly written
// sectors, counted as PartialStoreSectors counts them, 31.7 per clock) against the 160 full sectors
// per clock the L2 term assumes, about 5. Measured on the H100 only; assumed for the other GPUs
// with an L2 rate.
func PartialStoreSlots() float64 {
	partial := ncuNaiveTransposeStoreSectors - ncuNaiveTransposeBytes/32.0
	perClock := partial / (ncuNaiveTransposeSeconds * ncuNaiveTransposeClock)
	return h100L2SectorsPerClock / perClock
}

// PartialStoreSectors is how many of c's global store sectors were written only in part, at least:
// for each store line of c.Lines, its sectors less the full sectors its bytes could fill (Sectors −
// BytesUsed/32). A coalesced store of 4-byte words has none; a warp's 4-byte stores down a column
// of a row-major matrix, 32 sectors of 4 bytes each, has 28 of its 32 (the count is a lower bound:
// its 4 "full" sectors are partly written too). 0 without per-line counts.
func PartialStoreSectors(c vgpu.Counts) int64 {
	var n int64
	for _, l := range c.Lines {
		n += partialStoreSectors(l)
	}
	return n
}

// partialStoreSectors is PartialStoreSectors of one line: 0 unless it stores to global memory.
func partialStoreSectors(l vgpu.LineCount) int64 {
	if l.Sectors == 0 || !isGlobalStore(parsePTX(l.Text).op) {
		return 0
	}
	return max(l.Sectors-l.BytesUsed/32, 0)
}

// isGlobalStore reports whether the PTX opcode op stores to global memory (st.global, or a
// generic st whose sectors the line counted: generic accesses to shared or local memory have none).
func isGlobalStore(op string) bool {
	return strings.HasPrefix(op, "st.") && !strings.HasPrefix(op, "st.shared") && !strings.HasPrefix(op, "st.local") && !strings.HasPrefix(op, "st.param")
}
