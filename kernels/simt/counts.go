package simt

// Counts is what one launch did, as the hardware would count it.
type Counts struct {
	Blocks, Warps, Threads int64
	// FLOPs counted by the kernel (FMA counts 2).
	FLOPs int64
	// GlobalLoads and GlobalStores are warp-level memory instructions (requests).
	GlobalLoads, GlobalStores int64
	// LoadSectors and StoreSectors are the 32-byte sectors those requests move.
	LoadSectors, StoreSectors int64
	// BytesUsed is the distinct bytes the active lanes asked for (a broadcast counts once);
	// BytesMoved = 32 × sectors.
	BytesUsed int64
	// SharedLoads and SharedStores are warp-level shared-memory instructions.
	SharedLoads, SharedStores int64
	// BankConflicts is the extra shared-memory cycles: an n-way conflict adds n−1.
	BankConflicts int64
	// MaxConflictWays is the worst conflict seen (1 = none).
	MaxConflictWays int64
	// Barriers is the number of block-wide barriers completed.
	Barriers int64
}

// BytesMoved is the global traffic in bytes: every sector counted as read from or written to DRAM
// (no caches), an upper bound on the real DRAM traffic.
func (c Counts) BytesMoved() int64 { return SectorBytes * (c.LoadSectors + c.StoreSectors) }

// CoalescingEfficiency is bytes used / bytes moved (1 = perfectly coalesced), or 0 with no traffic.
func (c Counts) CoalescingEfficiency() float64 {
	if c.BytesMoved() == 0 {
		return 0
	}
	return float64(c.BytesUsed) / float64(c.BytesMoved())
}

func (c *Counts) add(o Counts) {
	c.FLOPs += o.FLOPs
	c.GlobalLoads += o.GlobalLoads
	c.GlobalStores += o.GlobalStores
	c.LoadSectors += o.LoadSectors
	c.StoreSectors += o.StoreSectors
	c.BytesUsed += o.BytesUsed
	c.SharedLoads += o.SharedLoads
	c.SharedStores += o.SharedStores
	c.BankConflicts += o.BankConflicts
	c.MaxConflictWays = max(c.MaxConflictWays, o.MaxConflictWays)
	c.Barriers += o.Barriers
}

// WarpInstruction is one warp-level memory instruction, for tracing: which lanes took part and what
// each touched.
type WarpInstruction struct {
	Block Dim3
	Warp  int
	// Kind is "global load", "global store", "shared load" or "shared store".
	Kind string
	// Addr[lane] is the byte address (global) or shared-memory offset; Active[lane] whether the lane
	// took part.
	Addr   [WarpSize]int64
	Active [WarpSize]bool
	// Sectors (global) or ConflictWays (shared) is what it cost.
	Sectors, ConflictWays int
}

var kindNames = [...]string{"global load", "global store", "shared load", "shared store"}

// countPhase groups the accesses each thread made since the last barrier into warp instructions
// (the k-th access of each lane of a warp is the warp's k-th instruction), counts them, and resets
// the threads' records.
func (c *Counts) countPhase(threads []*Thread, trace func(WarpInstruction), blockIdx Dim3) {
	for w := 0; w*WarpSize < len(threads); w++ {
		lanes := threads[w*WarpSize : min((w+1)*WarpSize, len(threads))]
		longest := 0
		for _, t := range lanes {
			longest = max(longest, len(t.recs))
		}
		for k := range longest {
			// Lanes can disagree on the kind of their k-th access only if they diverged; count each
			// kind present as its own instruction.
			var present [4]bool
			for _, t := range lanes {
				if k < len(t.recs) {
					present[t.recs[k].kind] = true
				}
			}
			for kd := range present {
				if present[kd] {
					c.instruction(lanes, k, kind(kd), trace, blockIdx, w)
				}
			}
		}
		for _, t := range lanes {
			t.recs = t.recs[:0]
		}
	}
}

func (c *Counts) instruction(lanes []*Thread, k int, kd kind, trace func(WarpInstruction), blockIdx Dim3, warp int) {
	var units [2 * WarpSize]int64 // sectors, or shared words (an 8-byte access spans two)
	var banks [2 * WarpSize]int64
	var addrs, none [WarpSize]int64
	nu, na, size := 0, 0, int64(0)
	var wi WarpInstruction
	for lane, t := range lanes {
		if k >= len(t.recs) || t.recs[k].kind != kd {
			continue
		}
		a := t.recs[k]
		wi.Addr[lane], wi.Active[lane] = a.addr, true
		switch kd {
		case globalLoad, globalStore:
			addrs[na], size = a.addr, int64(a.bytes)
			na++
			for s := a.addr / SectorBytes; s <= (a.addr+int64(a.bytes)-1)/SectorBytes; s++ {
				units[nu] = s
				nu++
			}
		default:
			for w := a.addr / BankBytes; w <= (a.addr+int64(a.bytes)-1)/BankBytes; w++ {
				units[nu], banks[nu] = w, w%BankCount
				nu++
			}
		}
	}
	distinct := sortUnique(units[:nu], banks[:nu])
	c.BytesUsed += size * int64(sortUnique(addrs[:na], none[:na]))
	switch kd {
	case globalLoad:
		c.GlobalLoads++
		c.LoadSectors += int64(distinct)
		wi.Sectors = distinct
	case globalStore:
		c.GlobalStores++
		c.StoreSectors += int64(distinct)
		wi.Sectors = distinct
	default:
		if kd == sharedLoad {
			c.SharedLoads++
		} else {
			c.SharedStores++
		}
		// Ways = the most distinct words any one bank must serve.
		var perBank [BankCount]int
		ways := 1
		for i := range distinct {
			b := banks[i]
			perBank[b]++
			ways = max(ways, perBank[b])
		}
		c.BankConflicts += int64(ways - 1)
		c.MaxConflictWays = max(c.MaxConflictWays, int64(ways))
		wi.ConflictWays = ways
	}
	if trace != nil {
		wi.Block, wi.Warp, wi.Kind = blockIdx, warp, kindNames[kd]
		trace(wi)
	}
}

// sortUnique sorts units (carrying banks along) and compacts both to the distinct units, returning
// how many there are. Insertion sort: at most 64 elements, usually already in order.
func sortUnique(units, banks []int64) int {
	for i := 1; i < len(units); i++ {
		for j := i; j > 0 && units[j] < units[j-1]; j-- {
			units[j], units[j-1] = units[j-1], units[j]
			banks[j], banks[j-1] = banks[j-1], banks[j]
		}
	}
	n := 0
	for i := range units {
		if i == 0 || units[i] != units[n-1] {
			units[n], banks[n] = units[i], banks[i]
			n++
		}
	}
	return n
}
