package collectives

import (
	"math"
	"testing"
)

func TestRingAllReduce(t *testing.T) {
	if got := RingAllReduce(1e9, 1, 1e9, 1e-6); got != 0 {
		t.Errorf("one device: %g, want 0", got)
	}
	// 2 devices, 1 GB, 10 GB/s, no latency: 2 steps of 0.5 GB = 0.1 s.
	if got := RingAllReduce(1e9, 2, 10e9, 0); math.Abs(got-0.1) > 1e-12 {
		t.Errorf("got %g, want 0.1", got)
	}
	// Bandwidth term approaches 2·S/B as p grows; latency term grows linearly.
	big := RingAllReduce(1e9, 1024, 10e9, 0)
	if math.Abs(big-2*1e9/10e9*1023/1024) > 1e-12 {
		t.Errorf("p=1024: %g", big)
	}
	if got := RingAllReduce(0, 8, 10e9, 5e-6); math.Abs(got-14*5e-6) > 1e-15 {
		t.Errorf("latency only: %g, want 14 messages × 5 µs", got)
	}
	for _, p := range []int{2, 8, 64} {
		s := RingAllReduce(4e8, p, 25e9, 0)
		if bb := BusBandwidth(4e8, p, s); math.Abs(bb-25e9) > 1 {
			t.Errorf("p=%d bus bandwidth %g, want the link's 25e9", p, bb)
		}
	}
}

func TestAllGatherAndReduceScatter(t *testing.T) {
	// 4 devices, 1 GB, 10 GB/s, no latency: 3 steps of 0.25 GB = 0.075 s, half the all-reduce.
	if got := RingAllGather(1e9, 4, 10e9, 0); math.Abs(got-0.075) > 1e-12 {
		t.Errorf("all-gather: got %g, want 0.075", got)
	}
	if got, want := RingReduceScatter(1e9, 4, 10e9, 0)+RingAllGather(1e9, 4, 10e9, 0), RingAllReduce(1e9, 4, 10e9, 0); math.Abs(got-want) > 1e-12 {
		t.Errorf("reduce-scatter + all-gather = %g, want the all-reduce's %g", got, want)
	}
	if got := RingAllGather(1e9, 1, 10e9, 1); got != 0 {
		t.Errorf("one device: %g", got)
	}
	// 8 messages' latency: 7 × 5 µs.
	if got := RingAllGather(0, 8, 1e9, 5e-6); math.Abs(got-35e-6) > 1e-15 {
		t.Errorf("latency only: %g", got)
	}
	if got := SendRecv(1e9, 50e9, 5e-6); math.Abs(got-(0.02+5e-6)) > 1e-15 {
		t.Errorf("send: %g", got)
	}
}

// The tree's latency grows with log₂ p, the ring's with p: for a small message on many devices the
// tree wins; for a large one on few devices the ring's (p−1)/p bandwidth term wins.
func TestTreeAgainstRing(t *testing.T) {
	if got := TreeAllReduce(1e9, 1, 1e9, 1e-6); got != 0 {
		t.Errorf("one device: %g, want 0", got)
	}
	// 1,024 devices, 5 µs per message, 1 MB over 50 GB/s: tree 2·10·5 µs + 40 µs = 140 µs; ring
	// 2·1023·(5 µs + 1e6/1024/50e9 s) ≈ 10.27 ms.
	tree, ring := TreeAllReduce(1e6, 1024, 50e9, 5e-6), RingAllReduce(1e6, 1024, 50e9, 5e-6)
	if math.Abs(tree-140e-6) > 1e-12 || tree >= ring/50 {
		t.Errorf("small message on 1,024 devices: tree %g s, ring %g s", tree, ring)
	}
	// 8 devices, 1 GB, no latency: tree 2 S/B = 40 ms, ring 2·7/8·S/B = 35 ms.
	tree, ring = TreeAllReduce(1e9, 8, 50e9, 0), RingAllReduce(1e9, 8, 50e9, 0)
	if math.Abs(tree-0.04) > 1e-12 || math.Abs(ring-0.035) > 1e-12 {
		t.Errorf("1 GB on 8 devices: tree %g s, ring %g s", tree, ring)
	}
}
