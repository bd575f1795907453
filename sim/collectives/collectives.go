// Package collectives models the time of the collective operations of data-parallel training. It
// models; it measures nothing.
package collectives

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
