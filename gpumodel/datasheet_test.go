package gpumodel

import (
	"testing"
)

// Every GPU names a compute capability whose occupancy limits are known.
func TestGPUsComputeCapability(t *testing.T) {
	for _, g := range GPUs {
		if _, err := LookupLimits(g.CC); err != nil {
			t.Errorf("%s: %v", g.Name, err)
		}
	}
}

// Every GPU has cache sizes with their source, its combined L1 and shared memory holds the largest
// shared-memory carve-out of its compute capability, and an L2 bandwidth, where given, is between
// 1 and 10 kB per clock.
func TestGPUsCaches(t *testing.T) {
	for _, g := range GPUs {
		lim, err := LookupLimits(g.CC)
		if err != nil {
			t.Fatal(err)
		}
		if g.L1Shared < lim.SharedPerSM || g.L2 < 1<<20 || g.CacheSource == "" {
			t.Errorf("%s: L1/shared %d bytes (carve-out up to %d), L2 %d bytes, source %q", g.Name, g.L1Shared, lim.SharedPerSM, g.L2, g.CacheSource)
		}
		if g.L2PerClock != 0 && (g.L2PerClock < 1e3 || g.L2PerClock > 1e4) {
			t.Errorf("%s: L2 %g bytes per clock", g.Name, g.L2PerClock)
		}
	}
}

// AtClock scales the FP32 peak with the clock and leaves the DRAM bandwidth.
func TestAtClock(t *testing.T) {
	g := GPUs[0]
	h := g.AtClock(g.Clock / 2)
	if got, want := [3]float64{h.Clock, h.FP32, h.DRAM}, [3]float64{g.Clock / 2, g.FP32 / 2, g.DRAM}; got != want {
		t.Errorf("clock, FP32, DRAM = %v, want %v", got, want)
	}
}
