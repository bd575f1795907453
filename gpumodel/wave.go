package gpumodel

import (
	"context"
	"maps"
	"math"
	"math/bits"
	"slices"

	"github.com/gpuplayground/playground/vgpu"
)

// The DRAM reads of a sampled launch, between two regimes of the hardware's L2.
//
// A sampled launch runs a run of consecutive blocks in dispatch order through a cold L2, one after
// another (vgpurun's sample). That is the steady state of a launch of many waves ("staggered"):
// blocks finish and are replaced one by one at spread phases, so data that block i and block i + d
// both read stays in the L2 only if what the d blocks in between touch fits in it, as in the serial replay; a
// GEMM's reuse a grid row apart then misses. A launch's first wave is not in that state: its blocks
// start together ("in step") and walk through k nearly in lockstep, so the L2 holds what the whole
// wave shares, and the wave reads from DRAM about its unique sectors (Nsight Compute on an H100 at
// n = 4096: regblock, 3.9 waves, read 345 MB, its waves' unique footprint 327 MB, the run's replay
// 2.7 GB; naive, 62 waves, 32.7 GB, the run's 35.4 GB, its waves' footprint 4 GB).
//
// WaveReads estimates both. The staggered reads per block are the run's (its DRAM reads / its
// blocks). The in-step reads are each wave's unique L2 load sectors, built from the sampled blocks'
// own L2 load streams (vgpu.CacheConfig.L2Access) and the grid's regularity: a block's sectors in
// each buffer are taken to be block (x0, y0)'s moved by (x − x0)·sx + (y − y0)·sy sectors, where sx
// is the shift between the run's neighbours along x (every neighbouring pair of the run must agree,
// sector for sector) and sy the shift to one more block, a grid row away, emulated for it (waveProbe).
// A grid that is not that regular (a shift that does not hold, a 3-D grid, blocks reading different
// amounts) keeps the staggered estimate. A wave is the blocks resident at once on all SMs (the
// theoretical occupancy's blocks per SM × SMs), in dispatch order.
//
// The launch's wave w (w = 1, 2, …) is taken to be in step with weight 1/√w and staggered with the
// rest: each wave's blocks start as the previous wave's finish, and their run times vary
// independently, so the spread of their phases grows as √w (a random walk) and the share of a
// wave's reuse the L2 still catches falls as its inverse, the first wave being in step. That law,
// and its unit (the first wave wholly in step), are assumptions, not measurements: the hardware's
// phase spread is not measured here (1/w was the other law weighed, on the same five kernels). With
// it four of the five sampled GEMMs of the H100's n = 4096 CSV come within 0.86–1.6× of the measured
// DRAM reads and regblock, whose 3.9 waves the hardware keeps nearly in step, 3.0×
// (docs/benchmarks.md, "Sampled launches' L2").
//
// The L2's size. A sector that several blocks of a wave read stays in the L2 between its first and
// last reader only if what the wave streams in between fits in it: with the readers' phases a part
// s of the loop apart, the wave streams s × U bytes, U its unique load bytes (a wave walks its
// footprint once a loop), so reuse survives a spread up to the window D = L2 / U (at most one
// loop). The law above was set on the H100 SXM (WaveLawGPU), so its spread is read there: the
// share 1/√w is the window over the spread, and wave w's spread is √w × D_H100, D_H100 the
// kernel's own window on that GPU (its wave of that GPU's resident blocks, the same footprints).
// A kernel's spread, in parts of its loop, is taken to be the same on every GPU (its blocks' run
// times vary by the same share), so on a GPU g the share of wave w in step is
// min(1, (D_g / D_H100) / √w): 1/√w on the H100 (and the H200, the same SMs and L2), less where the
// L2 holds less of a wave's footprint (the RTX A6000's 6 MB against a wave of cuda-coalesced's 68
// MB: D = 0.09 against the H100's 0.77: Reach 0.12), more where it holds more. D_g / D_H100 is WaveDRAM.Reach;
// no constant is added, and the readers' phase spread stays unmeasured (an assumption, as the law).
// It is a heuristic, not a measured law: Reach is 1 on the H100 at every n (its own L2's size never
// enters there), and the data kept here cannot tell it from Reach = D_g alone (docs/benchmarks.md,
// "The wave estimate and the L2's size": what it rests on, and what it does not show).

// WaveDRAM is how a sampled launch's DRAM reads were estimated (WaveReads): Waves is the launch's
// waves (blocks / resident blocks, fractional); InStep and Staggered the whole grid's DRAM read
// bytes with every wave in step and with every wave staggered; Reach the L2's window on this GPU
// over the H100 SXM's (D_g / D_H100 above: wave w is in step with weight min(1, Reach/√w); 0 where
// Why is set); Why says why the in-step estimate was not made ("" when it was, and
// Counts.DRAMReadBytes is the blend).
type WaveDRAM struct {
	Waves             float64
	InStep, Staggered int64
	Reach             float64
	Why               string
}

// WaveLawGPU is the GPU whose measurements the wave estimate's law was set on, the H100 SXM: its
// L2 and resident blocks give the phase spread (WaveReads' lawResident).
func WaveLawGPU() GPU {
	g, err := LookupGPU("H100 SXM")
	if err != nil {
		panic(err) // GPUs lists it
	}
	return g
}

// reach is the L2's window of a wave of unique bytes on a GPU with l2 bytes of L2 over the window
// of the law's wave (lawUnique bytes) on the law's GPU (lawL2): WaveDRAM.Reach. Above 1 where this
// GPU's L2 holds more of its wave than the law's GPU did (the in-step share is still capped at 1).
func reach(l2, unique, lawL2, lawUnique int64) float64 {
	return window(l2, unique) / window(lawL2, lawUnique)
}

// window is the L2's window of a wave that reads unique bytes: the part of its loop over which it
// streams l2 bytes (D = l2 / unique), at most one loop; 1 for a wave that reads nothing.
func window(l2, unique int64) float64 {
	if unique <= 0 {
		return 1
	}
	return min(1, float64(l2)/float64(unique))
}

// blockSectors are one block's distinct L2 load sectors per buffer (index in the launch's
// Buffers), sorted.
type blockSectors map[int][]int64

// Footprints gathers blockSectors from a launch's L2 stream (vgpu.CacheConfig.L2Access), which the
// L2 model calls one sector at a time.
type Footprints struct {
	blocks map[int]blockSectors
	stored map[int]bool // the buffers stored to
}

func newFootprints() *Footprints {
	return &Footprints{blocks: map[int]blockSectors{}, stored: map[int]bool{}}
}

// hook is the L2Access of a launch of only's blocks in grid.
func (f *Footprints) hook(only [][3]int, grid [3]int) func(pos, buffer int, sector int64, store bool) {
	for i := range grid {
		grid[i] = max(grid[i], 1)
	}
	order := make([]int, 0, len(only))
	for _, b := range only {
		order = append(order, linear(b, grid))
	}
	slices.Sort(order)
	order = slices.Compact(order) // the launch's order: vgpu runs Only's distinct blocks sorted
	return func(pos, buffer int, sector int64, store bool) {
		if store && buffer >= 0 {
			f.stored[buffer] = true
		}
		if store || buffer < 0 || pos >= len(order) {
			return
		}
		b := f.blocks[order[pos]]
		if b == nil {
			b = blockSectors{}
			f.blocks[order[pos]] = b
		}
		b[buffer] = append(b[buffer], sector)
	}
}

// finish sorts and de-duplicates every block's sectors.
func (f *Footprints) finish() {
	for _, b := range f.blocks {
		for k, s := range b {
			slices.Sort(s)
			b[k] = slices.Compact(s)
		}
	}
}

func linear(b, grid [3]int) int { return b[0] + grid[0]*(b[1]+grid[1]*b[2]) }

// shiftOf is the shift, per buffer, that moves a's sectors onto b's, sector for sector; false when
// none does (different buffers, sizes or shapes).
func shiftOf(a, b blockSectors) (map[int]int64, bool) {
	if len(a) != len(b) {
		return nil, false
	}
	out := map[int]int64{}
	for k, sa := range a {
		sb, ok := b[k]
		if !ok || len(sa) != len(sb) || len(sa) == 0 {
			return nil, false
		}
		d := sb[0] - sa[0]
		for i := range sa {
			if sb[i]-sa[i] != d {
				return nil, false
			}
		}
		out[k] = d
	}
	return out, true
}

// xShift is the shift between neighbours along x of the run f holds: every pair of its blocks that
// are neighbours in one grid row must give the same one. A grid one block wide needs none (zeros).
func xShift(f *Footprints, grid [3]int) (map[int]int64, bool) {
	var sx map[int]int64
	for i, a := range f.blocks {
		if i%grid[0] == grid[0]-1 {
			continue
		}
		b, ok := f.blocks[i+1]
		if !ok {
			continue
		}
		s, ok := shiftOf(a, b)
		if !ok {
			return nil, false
		}
		if sx != nil && !maps.Equal(sx, s) {
			return nil, false
		}
		sx = s
	}
	if sx == nil && grid[0] > 1 {
		return nil, false
	}
	return sx, true
}

// yShift is the shift along y, per buffer, from base (the run's first block's sectors) to the
// block a grid row away (waveProbe), emulated here with cfg's configuration (its stores undone: only
// the run's are checked); zeros for a grid one row high. why says why there is none.
func yShift(ctx context.Context, mod *vgpu.Module, entry string, cfg vgpu.LaunchConfig, f *Footprints, base blockSectors, grid [3]int) (map[int]int64, string) {
	sy := map[int]int64{}
	p, ok := waveProbe(cfg.Only, grid)
	if !ok {
		return sy, ""
	}
	pf := newFootprints()
	probe := cfg
	probe.Only, probe.Trace = [][3]int{p}, nil
	cache := *cfg.Cache
	cache.L2Access = pf.hook(probe.Only, grid)
	probe.Cache = &cache
	var restore []func() // the probe's stores undone, bytes and written marks (the check reads both)
	for k := range f.stored {
		if k < len(cfg.Buffers) {
			restore = append(restore, cfg.Buffers[k].Keep())
		}
	}
	_, err := vgpu.Launch(ctx, mod, entry, probe)
	for _, undo := range restore {
		undo()
	}
	if err != nil {
		return nil, "the probe block failed: " + err.Error()
	}
	pf.finish()
	s, ok := shiftOf(base, pf.blocks[linear(p, grid)])
	if !ok {
		return nil, "its blocks' footprints are not shifts of one another along y"
	}
	for k, d := range s {
		sy[k] = d * int64(p[1]-cfg.Only[0][1])
	}
	return sy, ""
}

// WaveProbeBlocks is the blocks the wave estimate adds to a sampled launch of a grid of gridY rows
// that runs its default sample: its probe block, a grid row away (waveProbe).
func WaveProbeBlocks(gridY int) int {
	if gridY > 1 {
		return 1
	}
	return 0
}

// waveProbe is the block a grid row from the run's first (below it, or above it on the last row),
// whose footprint gives the shift along y; false for a grid one row high.
func waveProbe(only [][3]int, grid [3]int) ([3]int, bool) {
	if grid[1] <= 1 || len(only) == 0 {
		return [3]int{}, false
	}
	b := only[0]
	if b[1]+1 < grid[1] {
		return [3]int{b[0], b[1] + 1, b[2]}, true
	}
	return [3]int{b[0], b[1] - 1, b[2]}, true
}

// inStepReads is the DRAM read bytes of the launch's waves of resident blocks each (in dispatch
// order) when each wave reads its unique load sectors once: per wave and buffer, the union of base
// (block b0's sectors) moved by each of the wave's blocks' shifts, within the buffer's sectors
// (sizes, bytes). It returns the bytes of each wave, of the first maxWaves only where maxWaves > 0;
// nil if ctx ended first. Its cost per wave and buffer is the least of the wave's distinct shifts ×
// the words of a bitset spanning base, base's sectors × the words of one spanning the shifts, and
// the two counts' product (sectorUnion).
func inStepReads(ctx context.Context, base blockSectors, b0 [3]int, sx, sy map[int]int64, grid [3]int, resident int, sizes []int64, maxWaves int) []int64 {
	total := grid[0] * grid[1]
	if maxWaves > 0 {
		total = min(total, maxWaves*resident)
	}
	var out []int64
	u := map[int]*sectorUnion{}
	for k, s := range base {
		u[k] = newSectorUnion(s, sizes[k]/32)
	}
	var shifts []int64
	var mark []uint64
	for start := 0; start < total; start += resident {
		if ctx.Err() != nil {
			return nil
		}
		var bytes int64
		for k := range base {
			shifts = shifts[:0]
			for i := start; i < min(start+resident, total); i++ {
				x, y := i%grid[0], i/grid[0]
				shifts = append(shifts, int64(x-b0[0])*sx[k]+int64(y-b0[1])*sy[k])
			}
			shifts = distinct(shifts, &mark)
			bytes += 32 * u[k].count(shifts)
		}
		out = append(out, bytes)
	}
	return out
}

// distinct is xs sorted without repeats, in xs's storage: marked in a bitset (mark's storage)
// spanning them and read back in order where that bitset has no more words than xs has
// elements, else sorted.
func distinct(xs []int64, mark *[]uint64) []int64 {
	if len(xs) == 0 {
		return xs
	}
	lo, hi := slices.Min(xs), slices.Max(xs)
	if (hi-lo)/64 >= int64(len(xs)) {
		slices.Sort(xs)
		return slices.Compact(xs)
	}
	n := int((hi-lo)/64 + 1)
	*mark = slices.Grow((*mark)[:0], n)[:n]
	clear(*mark)
	for _, x := range xs {
		(*mark)[(x-lo)>>6] |= 1 << ((x - lo) & 63)
	}
	xs = xs[:0]
	for w, m := range *mark {
		for ; m != 0; m &= m - 1 {
			xs = append(xs, lo+int64(w)*64+int64(bits.TrailingZeros64(m)))
		}
	}
	return xs
}

// sectorUnion counts the sectors of the union of a block's sectors (sorted, distinct) moved by
// each of a wave's shifts, within [0, limit): inStepReads' sum. It ORs whichever of the two sets
// spans fewer words, as a bitset, at each element of the other; where both are sparse (a bitset
// of either would be mostly empty words) it sets one bit per pair.
type sectorUnion struct {
	sectors []int64
	pattern []uint64 // sectors as a bitset from sectors[0]
	limit   int64
	seen    []uint64 // the union, from sector lo &^ 63
	shifts  []uint64 // a wave's shifts as a bitset
}

func newSectorUnion(sectors []int64, limit int64) *sectorUnion {
	return &sectorUnion{sectors: sectors, pattern: bitsFrom(sectors, nil), limit: limit}
}

// bitsFrom is the sorted xs as a bitset whose bit 0 is xs[0], in buf's storage.
func bitsFrom(xs []int64, buf []uint64) []uint64 {
	if len(xs) == 0 {
		return buf[:0]
	}
	n := int((xs[len(xs)-1]-xs[0])/64 + 1)
	buf = slices.Grow(buf[:0], n)[:n]
	clear(buf)
	for _, x := range xs {
		x -= xs[0]
		buf[x>>6] |= 1 << (x & 63)
	}
	return buf
}

// count is the sectors of the union of u's sectors moved by each of shifts (sorted, distinct)
// within [0, limit).
func (u *sectorUnion) count(shifts []int64) int64 {
	s := u.sectors
	if len(s) == 0 || len(shifts) == 0 {
		return 0
	}
	lo, hi := max(s[0]+shifts[0], 0), min(s[len(s)-1]+shifts[len(shifts)-1]+1, u.limit)
	if lo >= hi {
		return 0
	}
	base := lo &^ 63 // the bit seen[0] starts at
	n := int((hi - base + 63) / 64)
	u.seen = slices.Grow(u.seen[:0], n)[:n]
	clear(u.seen)
	wordsD := (shifts[len(shifts)-1]-shifts[0])/64 + 1
	byS, byD, pairs := int64(len(shifts))*int64(len(u.pattern)), int64(len(s))*wordsD, int64(len(s))*int64(len(shifts))
	switch {
	case pairs <= byS && pairs <= byD:
		for _, d := range shifts {
			for _, v := range s {
				if v += d; v >= lo && v < hi {
					u.seen[(v-base)>>6] |= 1 << ((v - base) & 63)
				}
			}
		}
	case byS <= byD:
		for _, d := range shifts {
			orAt(u.seen, u.pattern, s[0]+d-base)
		}
	default:
		u.shifts = bitsFrom(shifts, u.shifts)
		for _, v := range s {
			orAt(u.seen, u.shifts, v+shifts[0]-base)
		}
	}
	return onesIn(u.seen, lo-base, hi-base)
}

// orAt ORs the bitset src into dst with src's bit 0 at dst's bit at (negative: before dst's
// first), dropping the bits that fall outside dst's words.
func orAt(dst, src []uint64, at int64) {
	w, sh := at>>6, uint(at&63) // floor division: at = 64w + sh, 0 ≤ sh < 64
	first := max(0, -w-1)       // the first source word that reaches dst (word w+i+1 ≥ 0)
	last := min(int64(len(src)), int64(len(dst))-w)
	for i := first; i < last; i++ {
		x := src[i]
		if d := w + i; d >= 0 {
			dst[d] |= x << sh
		}
		if d := w + i + 1; sh != 0 && d < int64(len(dst)) {
			dst[d] |= x >> (64 - sh)
		}
	}
}

// onesIn is the set bits of b from bit lo to bit hi (exclusive).
func onesIn(b []uint64, lo, hi int64) int64 {
	var n int
	for i := lo >> 6; i <= (hi-1)>>6; i++ {
		x := b[i]
		if i == lo>>6 {
			x &= ^uint64(0) << (lo & 63)
		}
		if i == (hi-1)>>6 && hi&63 != 0 {
			x &= 1<<(hi&63) - 1
		}
		n += bits.OnesCount64(x)
	}
	return int64(n)
}

// WaveReads replaces the DRAM reads of sampled counts c (scaled to the grid; raw are the run's own)
// by the blend of the in-step and staggered estimates above, moving the difference into the L2's
// hits, and says how (WaveDRAM). f holds the run's footprints (from cfg's launch, cfg.Cache's
// L2Access); the probe block is emulated here, with cfg's configuration, and what it stores is
// undone. sizes are cfg.Buffers'
// bytes; resident the blocks resident at once on the whole GPU, lawResident on the whole of
// WaveLawGPU (the same launch's occupancy there; 0: unknown, and this GPU's first wave stands for
// the law's on that GPU's L2). The GPU's L2 is cfg.Cache's (gpumodel.CacheFor copies the
// datasheet's, as WaveLawGPU's is); a launch without a cache model keeps its staggered reads.
func WaveReads(ctx context.Context, mod *vgpu.Module, entry string, cfg vgpu.LaunchConfig, f *Footprints, raw, c vgpu.Counts, resident, lawResident int) (vgpu.Counts, WaveDRAM) {
	grid := cfg.Grid
	for i := range grid {
		grid[i] = max(grid[i], 1)
	}
	total := grid[0] * grid[1] * grid[2]
	w := WaveDRAM{Staggered: c.DRAMReadBytes}
	if cfg.Cache == nil {
		w.Why = "no cache model"
		return c, w
	}
	if resident <= 0 || raw.Blocks == 0 {
		w.Why = "no occupancy"
		return c, w
	}
	w.Waves = float64(total) / float64(resident)
	if grid[2] > 1 {
		w.Why = "a 3-D grid"
		return c, w
	}
	f.finish()
	sx, ok := xShift(f, grid)
	if !ok {
		w.Why = "its blocks' footprints are not shifts of one another along x"
		return c, w
	}
	b0 := cfg.Only[0]
	base, ok := f.blocks[linear(b0, grid)]
	if !ok {
		w.Why = "the run's first block read nothing through the L2"
		return c, w
	}
	sy, why := yShift(ctx, mod, entry, cfg, f, base, grid)
	if why != "" {
		w.Why = why
		return c, w
	}
	sizes := make([]int64, len(cfg.Buffers))
	for i, b := range cfg.Buffers {
		sizes[i] = int64(len(b.Data))
	}
	for k := range base {
		if k >= len(sizes) {
			w.Why = "a buffer outside the launch's"
			return c, w
		}
	}
	waves := inStepReads(ctx, base, b0, sx, sy, grid, min(resident, total), sizes, 0)
	if waves == nil || ctx.Err() != nil {
		w.Why = ctx.Err().Error()
		return c, w
	}
	// The law's wave: the launch's first wave on WaveLawGPU, or, where its occupancy there is
	// unknown, this GPU's first wave over that GPU's L2.
	law, lawFirst := WaveLawGPU(), waves[0]
	if lawResident > 0 {
		first := inStepReads(ctx, base, b0, sx, sy, grid, min(lawResident, total), sizes, 1)
		if first == nil {
			w.Why = ctx.Err().Error()
			return c, w
		}
		lawFirst = first[0]
	}
	w.Reach = reach(int64(cfg.Cache.L2Bytes), waves[0], int64(law.L2), lawFirst)
	perBlock := float64(raw.DRAMReadBytes) / float64(raw.Blocks)
	var blend float64
	for i, b := range waves {
		n := min(resident, total-i*resident)
		inStep := min(1, w.Reach/math.Sqrt(float64(i+1)))
		blend += inStep*float64(b) + (1-inStep)*perBlock*float64(n)
		w.InStep += b
	}
	reads := int64(math.Round(blend))
	if d := (c.DRAMReadBytes - reads) / 32; d != 0 {
		c.L2Hits = min(max(c.L2Hits+d, 0), c.L2Sectors)
	}
	c.DRAMReadBytes = reads
	return c, w
}

// WatchFootprints sets cfg's cache model, for a sampled launch, to gather its blocks' footprints
// (a copy of cfg.Cache with L2Access set) and returns them, for WaveReads; nil, cfg unchanged, for
// a launch run in full (cfg.Only nil) or without a cache model.
func WatchFootprints(cfg *vgpu.LaunchConfig) *Footprints {
	if cfg.Only == nil || cfg.Cache == nil {
		return nil
	}
	f := newFootprints()
	cache := *cfg.Cache
	cache.L2Access = f.hook(cfg.Only, cfg.Grid)
	cfg.Cache = &cache
	return f
}
