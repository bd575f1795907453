package gpumodel

import "github.com/gpuplayground/playground/vgpu"

// Atomic rates of an H100 SXM, measured with bench/gpucheck/atomics.cu (2026-11-25, 4.2 million
// float atomicAdds per launch): one address takes 5.67e8 operations/s (its updates serialise in
// the L2); warps whose 32 lanes each share an address (a different one per warp) 5.61e10 passes/s;
// every thread its own address 3.06e11 operations/s. Other GPUs are scaled by their clock
// (GPU.Clock), an assumption: their atomics were not measured.
const (
	h100Clock                  = 1.98e9
	h100SameAddressRate        = 5.67e8
	h100AtomicPassRate         = 5.61e10
	h100AtomicOpRate           = 3.06e11
	sharedAtomicPassesPerClock = 1 // shared atomic passes per clock per SM: one wavefront each
)

// AtomicSeconds is the modelled time of c's atomics on g: the longest of the operations on the
// hottest global address at the same-address rate, the global atomic passes (lanes of a request
// sharing an address serialise) at the pass rate, the thread-level global atomics at the operation
// rate (all three measured on the H100's L2, so shared-memory atomics are not charged there), and
// the shared atomic passes at one per clock on each SM. A launch whose atomics touch more than
// vgpu.MaxHotAddresses addresses has no hottest-address term (not tallied).
func AtomicSeconds(c vgpu.Counts, g GPU) float64 {
	if g.Clock <= 0 || c.Atomics == 0 {
		return 0
	}
	k := g.Clock / h100Clock
	return max(float64(c.GlobalAtomicHotOps)/(h100SameAddressRate*k),
		float64(c.GlobalAtomicPasses)/(h100AtomicPassRate*k),
		float64(c.GlobalAtomics)/(h100AtomicOpRate*k),
		float64(c.SharedAtomicPasses)/(sharedAtomicPassesPerClock*g.Clock*float64(max(g.SMs, 1))))
}
