package emulate

import (
	"github.com/gpuplayground/playground/sim/datasheet"
	"github.com/gpuplayground/playground/sim/occupancy"
	"github.com/gpuplayground/playground/vgpu"
)

// CacheFor is the virtual GPU's cache model for a launch on g with theoretical occupancy o
// (vgpu.CacheConfig; vgpu/cache.go says what it approximates): the L2 is g's; the L1 of an SM is
// its combined L1 and shared memory less the shared-memory carve-out (the smallest of the compute
// capability's carve-outs that holds the resident blocks' shared memory, reserved bytes included,
// as the driver picks it: CUDA C++ Programming Guide, "Shared Memory" for compute capabilities 8.x
// and 9.0), and each of the o.Result.BlocksPerSM resident blocks gets an equal share. Nil where g
// has no cache sizes.
func CacheFor(g datasheet.GPU, o Occupancy) *vgpu.CacheConfig {
	if g.L1Shared <= 0 || g.L2 <= 0 {
		return nil
	}
	blocks := max(o.Result.BlocksPerSM, 1)
	used := blocks * o.Result.SharedPerBlock
	carve := used
	if lim, err := occupancy.Lookup(g.CC); err == nil {
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
// term in Model.Terms, the largest named in Model.Bound):
//
//   - "compute": the FLOPs at g's FP32 peak;
//   - "DRAM": the DRAM bytes at g's bandwidth: the cache model's reads and writes when c has them
//     (c.Cached: its write-backs during the launch and the dirty sectors left in the L2, which a
//     launch repeated back to back pays for in the next), else 32 bytes per global load and store
//     sector (every access a miss);
//   - "L2": the sectors that reached the L2 (c.Cached), 32 bytes each, at g.L2PerClock bytes per
//     clock (no term where g publishes none);
//   - "L1" or "shared memory": the L1/shared data pipe of each SM, which moves one 128-byte
//     wavefront per clock (datasheet.SharedBytesPerClock): a global request's distinct 128-byte
//     lines (c.GlobalLines) and the shared wavefronts, bank conflicts included, share it; the term
//     is named after the larger share;
//   - "issue": the warp instructions at one per clock per scheduler (datasheet.SchedulersPerSM);
//     PTX instructions, which the compiled SASS outnumbers or undercuts by a few tens of percent;
//   - "atomics": AtomicSeconds.
//
// The per-SM terms (L1, shared memory, issue) spread the work evenly over the SMs, or over the
// grid's blocks when it has fewer blocks than g has SMs (one block per SM). There is no latency
// term yet: a launch whose warps wait on memory or on dependent instructions with too few other
// warps to hide it (low occupancy, a grid of one wave or less) is slower than modelled, as is a
// launch of a few microseconds, where starting the grid is much of the time.
func Model(c vgpu.Counts, g datasheet.GPU) datasheet.Model {
	dram := float64(32 * (c.LoadSectors + c.StoreSectors))
	if c.Cached {
		dram = float64(c.DRAMReadBytes + c.DRAMWriteBytes + c.L2DirtyBytes)
	}
	terms := []datasheet.Term{{Name: "compute", Seconds: float64(c.FLOPs) / g.FP32}, {Name: "DRAM", Seconds: dram / g.DRAM}}
	// a grid of fewer blocks than SMs keeps only that many SMs busy
	sms := max(g.SMs, 1)
	if c.GridBlocks > 0 && c.GridBlocks < int64(sms) {
		sms = int(c.GridBlocks)
	}
	if sm := g.Clock * float64(sms); g.Clock > 0 {
		if c.Cached && g.L2PerClock > 0 {
			terms = append(terms, datasheet.Term{Name: "L2", Seconds: float64(32*c.L2Sectors) / (g.L2PerClock * g.Clock)})
		}
		pipe := "L1"
		if c.SharedWavefronts > c.GlobalLines {
			pipe = "shared memory"
		}
		terms = append(terms, datasheet.Term{Name: pipe, Seconds: float64(c.GlobalLines+c.SharedWavefronts) / sm},
			datasheet.Term{Name: "issue", Seconds: float64(c.WarpInstructions) / (datasheet.SchedulersPerSM * sm)})
	}
	terms = append(terms, datasheet.Term{Name: "atomics", Seconds: AtomicSeconds(c, g)})
	m := datasheet.Model{Terms: terms}
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
