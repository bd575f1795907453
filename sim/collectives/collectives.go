// Package collectives models the time of the collective operations of data-parallel training. It
// models; it measures nothing.
package collectives

import "math"

// RingAllReduce is the modelled time in seconds of a ring all-reduce of size bytes over p devices,
// each link moving bandwidth bytes/s in each direction with latency seconds per message. The ring
// does a reduce-scatter then an all-gather, 2(p−1) steps, each sending size/p bytes to the next
// device, so the time is 2(p−1)·(latency + size/(p·bandwidth)): the α–β model of Thakur, Rabenseifner
// and Gropp, "Optimization of Collective Communication Operations in MPICH" (IJHPCA 19(1), 2005), for
// the bandwidth-optimal ring of Patarasuk and Yuan, "Bandwidth Optimal All-reduce Algorithms for
// Clusters of Workstations" (JPDC 69(2), 2009). One device needs no communication: 0.
func RingAllReduce(bytes float64, p int, bandwidth, latency float64) float64 {
	if p <= 1 {
		return 0
	}
	steps := float64(2 * (p - 1))
	return steps * (latency + bytes/float64(p)/bandwidth)
}

// BusBandwidth is the "bus bandwidth" NCCL reports for an all-reduce that took seconds: the data
// each device must move, 2(p−1)/p·bytes, over the time (NCCL tests, PERFORMANCE.md). For the model
// without latency it equals the link bandwidth, whatever p.
func BusBandwidth(bytes float64, p int, seconds float64) float64 {
	if p <= 1 || seconds == 0 {
		return 0
	}
	return 2 * float64(p-1) / float64(p) * bytes / seconds
}

// GatherBusBandwidth is NCCL's bus bandwidth for an all-gather or a reduce-scatter of bytes that
// took seconds: each device moves (p−1)/p·bytes (NCCL tests, PERFORMANCE.md), half an all-reduce's.
func GatherBusBandwidth(bytes float64, p int, seconds float64) float64 {
	return BusBandwidth(bytes, p, seconds) / 2
}

// RingAllGather is the modelled time in seconds of a ring all-gather over p devices that ends with
// every device holding all bytes (each starts with bytes/p): p−1 steps, each sending bytes/p to the
// next device, so (p−1)·(latency + bytes/(p·bandwidth)), half a ring all-reduce (Thakur et al. 2005;
// the all-reduce above is a reduce-scatter followed by an all-gather). ZeRO stage 3 and FSDP gather
// sharded weights this way, and context parallelism gathers keys and values (Rajbhandari et al.,
// "ZeRO: Memory Optimizations Toward Training Trillion Parameter Models", SC 2020). One device: 0.
func RingAllGather(bytes float64, p int, bandwidth, latency float64) float64 {
	if p <= 1 {
		return 0
	}
	return float64(p-1) * (latency + bytes/float64(p)/bandwidth)
}

// RingReduceScatter is the modelled time in seconds of a ring reduce-scatter of bytes over p devices
// (each ends with the sum of one p-th): the same p−1 steps of bytes/p as RingAllGather.
func RingReduceScatter(bytes float64, p int, bandwidth, latency float64) float64 {
	return RingAllGather(bytes, p, bandwidth, latency)
}

// SendRecv is the modelled time in seconds of one point-to-point message of bytes: latency +
// bytes/bandwidth (pipeline parallelism passes activations between stages this way).
func SendRecv(bytes, bandwidth, latency float64) float64 {
	return latency + bytes/bandwidth
}

// TreeAllReduce is the modelled time in seconds of an all-reduce of bytes over p devices by NCCL's
// double binary tree: two trees, each reducing half the data up to its root and broadcasting it back
// down, every device an inner node of one and a leaf of the other, pipelined in chunks so that each
// link carries the data once each way (P. Sanders, J. Speck and J. L. Träff, "Two-tree algorithms for
// full bandwidth broadcast, reduction and scan", Parallel Computing 35(12), 2009; S. Jeaugey,
// "Massively Scale Your Deep Learning Training with NCCL 2.4", NVIDIA blog, 2019). The model is its
// α–β bound: 2·⌈log₂ p⌉ messages of latency (up and down the depth of a tree) plus 2·bytes/bandwidth,
// pipeline start-up left out. Against the ring's 2(p−1) latencies, the tree's grow with log p, so it
// wins on small messages and many devices; the ring's bandwidth term, 2(p−1)/p·bytes/bandwidth, is a
// little smaller. One device: 0.
func TreeAllReduce(bytes float64, p int, bandwidth, latency float64) float64 {
	if p <= 1 {
		return 0
	}
	depth := math.Ceil(math.Log2(float64(p)))
	return 2*depth*latency + 2*bytes/bandwidth
}
