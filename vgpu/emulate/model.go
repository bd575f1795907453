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
//   - "compute": the FLOPs at g's FP32 peak, but for the tensor cores' (c.TensorFLOPs) where g has a
//     published tensor-core peak;
//   - "tensor": the tensor cores' FLOPs at TensorPeak(g), spread over the SMs the grid keeps busy
//     (as the per-SM terms below); no term where g has no such peak or the launch no tensor FLOPs;
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
// grid's blocks when it has fewer blocks than g has SMs (one block per SM). Model has no latency
// term and no launch time: ModelAt, which knows the launch's occupancy, adds them.
func Model(c vgpu.Counts, g datasheet.GPU) datasheet.Model {
	return largest(limits(c, g))
}

// ModelAt is Model with o resident on each SM, which adds two terms:
//
//   - "latency": LatencySeconds, the time the warps take when each waits for its own loads and
//     dependent instructions and only the W warps resident on an SM overlap their waits (Little's
//     law), from g.Latency (none where g has no latencies or o no warps);
//   - "launch": LaunchSeconds, the fixed time of starting and finishing a grid, which nothing
//     overlaps: it is added to the largest of the other terms, and named the bound where it is
//     longer than all of them.
func ModelAt(c vgpu.Counts, g datasheet.GPU, o Occupancy) datasheet.Model {
	terms := limits(c, g)
	if s := LatencySeconds(c, g, o); s > 0 {
		terms = append(terms, datasheet.Term{Name: "latency", Seconds: s})
	}
	m := largest(terms)
	launch := LaunchSeconds(g)
	m.Terms = append(m.Terms, datasheet.Term{Name: "launch", Seconds: launch})
	if launch > m.Seconds {
		m.Bound = "launch"
	}
	m.Seconds += launch
	return m
}

// limits are Model's terms.
func limits(c vgpu.Counts, g datasheet.GPU) []datasheet.Term {
	dram := float64(32 * (c.LoadSectors + c.StoreSectors))
	if c.Cached {
		dram = float64(c.DRAMReadBytes + c.DRAMWriteBytes + c.L2DirtyBytes)
	}
	flops, tensor := c.FLOPs, TensorPeak(g)
	if tensor > 0 {
		flops -= c.TensorFLOPs
	}
	terms := []datasheet.Term{{Name: "compute", Seconds: float64(flops) / g.FP32}, {Name: "DRAM", Seconds: dram / g.DRAM}}
	// a grid of fewer blocks than SMs keeps only that many SMs busy
	sms := max(g.SMs, 1)
	if c.GridBlocks > 0 && c.GridBlocks < int64(sms) {
		sms = int(c.GridBlocks)
	}
	if tensor > 0 && c.TensorFLOPs > 0 {
		terms = append(terms, datasheet.Term{Name: "tensor", Seconds: float64(c.TensorFLOPs) / (tensor * float64(sms) / float64(max(g.SMs, 1)))})
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
	return append(terms, datasheet.Term{Name: "atomics", Seconds: AtomicSeconds(c, g)})
}

// largest is the model whose time is the longest of terms, named in Bound ("compute" when all are 0).
func largest(terms []datasheet.Term) datasheet.Model {
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
