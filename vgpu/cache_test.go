package vgpu

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// cachePTX: copy has each thread copy one float (src[i] to dst[i], i the global thread index);
// reread has every block read the same blockDim floats of src and write its own part of dst.
const cachePTX = header + `
.visible .entry copy(.param .u64 src, .param .u64 dst)
{
	.reg .b32 %r<5>;
	.reg .b64 %rd<6>;
	.reg .f32 %f<2>;
	ld.param.u64 %rd1, [src];
	ld.param.u64 %rd2, [dst];
	mov.u32 %r1, %ctaid.x;
	mov.u32 %r2, %ntid.x;
	mov.u32 %r3, %tid.x;
	mad.lo.s32 %r4, %r1, %r2, %r3;
	mul.wide.s32 %rd3, %r4, 4;
	add.s64 %rd4, %rd1, %rd3;
	add.s64 %rd5, %rd2, %rd3;
	ld.global.f32 %f1, [%rd4];
	st.global.f32 [%rd5], %f1;
	ret;
}
.visible .entry reread(.param .u64 src, .param .u64 dst)
{
	.reg .b32 %r<5>;
	.reg .b64 %rd<7>;
	.reg .f32 %f<2>;
	ld.param.u64 %rd1, [src];
	ld.param.u64 %rd2, [dst];
	mov.u32 %r1, %ctaid.x;
	mov.u32 %r2, %ntid.x;
	mov.u32 %r3, %tid.x;
	mad.lo.s32 %r4, %r1, %r2, %r3;
	mul.wide.s32 %rd3, %r4, 4;
	mul.wide.s32 %rd6, %r3, 4;
	add.s64 %rd4, %rd1, %rd6;
	add.s64 %rd5, %rd2, %rd3;
	ld.global.f32 %f1, [%rd4];
	st.global.f32 [%rd5], %f1;
	ret;
}
`

// launchCopy runs entry of cachePTX over blocks blocks of 256 threads with cache (and workers) and
// returns the counts.
func launchCopy(t *testing.T, entry string, blocks, workers int, cache *CacheConfig) Counts {
	t.Helper()
	src, dst := NewBuffer("src", 4*256*blocks), NewBuffer("dst", 4*256*blocks)
	c, err := Launch(context.Background(), mustParse(t, cachePTX), entry, LaunchConfig{Grid: [3]int{blocks}, Block: [3]int{256},
		Params: []Arg{Ptr(src), Ptr(dst)}, Buffers: []*Buffer{src, dst}, Workers: workers, Cache: cache})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// A copy reads every sector once and writes every sector once: no L1 hits, every load an L2 miss
// and every store an L2 hit (50%, as Nsight Compute measured for the copy kernel on an H100), and
// the DRAM reads are the input's bytes; the output stays in the L2, dirty. With an L2 far smaller
// than the output, the dirty sectors it evicts are written to DRAM: all of the output but what the
// L2 still holds at the end.
func TestCacheCopy(t *testing.T) {
	const blocks = 64
	bytes := int64(4 * 256 * blocks)
	c := launchCopy(t, "copy", blocks, 0, &CacheConfig{L1Bytes: 32 << 10, L2Bytes: 1 << 20})
	if !c.Cached {
		t.Fatal("Cached is false with a cache model")
	}
	if got, want := c.L1HitRate(), 0.0; got != want {
		t.Errorf("L1 hit rate = %v, want %v", got, want)
	}
	if got, want := c.L2HitRate(), 50.0; got != want {
		t.Errorf("L2 hit rate = %v, want %v", got, want)
	}
	if got, want := [3]int64{c.DRAMReadBytes, c.DRAMWriteBytes, c.L2DirtyBytes}, [3]int64{bytes, 0, bytes}; got != want {
		t.Errorf("DRAM read, write bytes, dirty in the L2 = %v, want %v", got, want)
	}
	small := launchCopy(t, "copy", blocks, 0, &CacheConfig{L1Bytes: 32 << 10, L2Bytes: 8 << 10})
	if got, lo, hi := small.DRAMWriteBytes, bytes-8<<10, bytes; got < lo || got > hi {
		t.Errorf("DRAM write bytes with an 8 KiB L2 = %d, want %d to %d", got, lo, hi)
	}
	if got, want := small.DRAMWriteBytes+small.L2DirtyBytes, bytes; got != want {
		t.Errorf("DRAM write bytes + dirty in the L2 with an 8 KiB L2 = %d, want %d", got, want)
	}
	if got, want := small.DRAMReadBytes, bytes; got != want {
		t.Errorf("DRAM read bytes with an 8 KiB L2 = %d, want %d", got, want)
	}
}

// Blocks that read the same data hit in the shared L2 after the first, and the counts do not
// depend on how many workers ran the blocks (the streams are replayed in block order).
func TestCacheL2SharedAndDeterministic(t *testing.T) {
	const blocks = 32
	cache := &CacheConfig{L1Bytes: 32 << 10, L2Bytes: 1 << 20}
	one := launchCopy(t, "reread", blocks, 1, cache)
	if got, want := one.DRAMReadBytes, int64(4*256); got != want {
		t.Errorf("DRAM read bytes = %d, want %d (only the first block's reads miss)", got, want)
	}
	// loads: 32 sectors per block, the first block's miss; stores: all hits
	loads, stores := int64(32*blocks), int64(32*blocks)
	if got, want := one.L2Hits, loads-32+stores; got != want {
		t.Errorf("L2 hits = %d, want %d", got, want)
	}
	many := launchCopy(t, "reread", blocks, 4, cache)
	pick := func(c Counts) [6]int64 {
		return [6]int64{c.L1Sectors, c.L1Hits, c.L2Sectors, c.L2Hits, c.DRAMReadBytes, c.DRAMWriteBytes}
	}
	if got, want := pick(many), pick(one); got != want {
		t.Errorf("with 4 workers %v, with 1 %v", got, want)
	}
}

// A warp's load then store of the same sectors: the store finds them in the L1 (50% L1 hits) and
// the L2 counts the store as a hit (50%). A request's 128-byte lines are the L1's tag lookups: 1
// for 32 consecutive floats, 32 for floats 128 bytes apart. Without a cache model the cache counts
// are zero.
func TestCacheLoadThenStoreAndLines(t *testing.T) {
	m := mustParse(t, stridePTX)
	for _, tc := range []struct {
		stride uint32
		lines  int64
	}{{1, 2}, {32, 64}} {
		buf := NewBuffer("x", 4*32*32)
		c, err := Launch(context.Background(), m, "strided", LaunchConfig{Block: [3]int{32},
			Params: []Arg{Ptr(buf), U32(tc.stride)}, Buffers: []*Buffer{buf}, Cache: &CacheConfig{L1Bytes: 16 << 10, L2Bytes: 64 << 10}})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := [3]float64{c.L1HitRate(), c.L2HitRate(), float64(c.GlobalLines)}, [3]float64{50, 50, float64(tc.lines)}; got != want {
			t.Errorf("stride %d: L1 hit %%, L2 hit %%, lines = %v, want %v", tc.stride, got, want)
		}
		plain, err := Launch(context.Background(), m, "strided", LaunchConfig{Block: [3]int{32},
			Params: []Arg{Ptr(buf), U32(tc.stride)}, Buffers: []*Buffer{buf}})
		if err != nil {
			t.Fatal(err)
		}
		if plain.Cached || plain.L2Sectors != 0 || plain.GlobalLines != tc.lines {
			t.Errorf("stride %d without a cache: Cached %v, L2 sectors %d, lines %d", tc.stride, plain.Cached, plain.L2Sectors, plain.GlobalLines)
		}
	}
}

// The LRU set-associative level: a sector hits after a fill, a second sector of the same line is a
// miss (sectors are valid on their own), and a full set evicts its least recently used line,
// reporting the dirty sectors it held.
func TestCacheLevelLRU(t *testing.T) {
	k := newCacheLevel(CacheWays * LineBytes) // one set
	if hit, _ := k.access(0, true); hit {
		t.Error("cold access hit")
	}
	if hit, _ := k.access(0, false); !hit {
		t.Error("second access missed")
	}
	if hit, _ := k.access(1, false); hit {
		t.Error("another sector of the line hit")
	}
	for i := uint64(1); i < CacheWays; i++ { // fill the other ways: line i is sector 4i
		k.access(4*i, false)
	}
	_, wb := k.access(4*CacheWays, false) // evicts line 0 with its one dirty sector
	if got, want := wb, 1; got != want {
		t.Errorf("dirty sectors evicted = %d, want %d", got, want)
	}
	if hit, _ := k.access(4, false); !hit {
		t.Error("line 1 was evicted instead of line 0")
	}
}

// An L1 that keeps a line group (lineGroup: a repeated load request of many lines used at once)
// hits, misses, evicts and sends to the L2 exactly what a level looking up every line in turn does,
// and ends in the same state: random requests over a pool of lines a little larger than the cache,
// many of them repeats of the last one (sometimes with a sector more), some stores, and lines that
// evict the group's.
func TestCacheGroupIsLineByLine(t *testing.T) {
	const bytes = 4 * CacheWays * LineBytes // 4 sets
	rng := rand.New(rand.NewPCG(3, 4))
	c := &cta{l1: newL1(bytes)}
	ref := newCacheLevel(bytes)
	var refStream []uint64
	var big []uint64 // the last request of groupMin lines or more, and its sectors
	var bigMasks []uint8
	retouched := 0
	for req := range 30000 {
		store := rng.IntN(10) == 0
		var lines []uint64
		var masks []uint8
		switch r := rng.IntN(10); {
		case r < 4 && big != nil: // the big request again, sometimes with a sector more
			lines, masks = big, bigMasks
			if rng.IntN(4) == 0 {
				masks[rng.IntN(len(masks))] |= 1 << rng.IntN(4)
			}
		default: // a new request: small ones may evict the big one's lines without replacing it
			n := 1 + rng.IntN(groupMin)
			if r >= 7 {
				n = 1 + rng.IntN(groupMax)
			}
			lines, masks = randomRequest(rng, n)
			if len(lines) >= groupMin {
				big, bigMasks = lines, masks
			}
		}
		now := c.l1.now
		misses := c.l1Lines(lines, masks, store)
		if c.l1.now == now+uint64(len(lines)) && c.l1.grp.pending && misses == 0 && !store {
			retouched++
		}
		refMisses := 0
		for i, l := range lines {
			hit, _, _ := ref.accessLine(l, masks[i], false)
			miss := masks[i] &^ hit
			refMisses += popcount4(miss)
			if store {
				miss = masks[i]
			}
			for m := miss; m != 0; m &= m - 1 {
				kind := toL2Load
				if store {
					kind = toL2Store
				}
				refStream = append(refStream, (l<<2|uint64(popcount4((m&-m)-1)))<<2|kind)
			}
		}
		if misses != refMisses {
			t.Fatalf("request %d: %d sectors missed, want %d", req, misses, refMisses)
		}
	}
	if !slices.Equal(c.stream, refStream) {
		t.Error("the streams to the L2 differ")
	}
	k := c.l1
	if k.grp.pending {
		k.settle()
	}
	if !slices.Equal(k.tag, ref.tag) || !slices.Equal(k.state, ref.state) || !slices.Equal(k.used, ref.used) || k.now != ref.now {
		t.Error("the caches end in different states")
	}
	if retouched < 1000 {
		t.Errorf("%d requests used the group at once, want at least 1000 (the test tests too little)", retouched)
	}
}

// randomRequest is up to n distinct lines of 80 (the test's cache holds 64), ascending, each with
// some of its sectors.
func randomRequest(rng *rand.Rand, n int) ([]uint64, []uint8) {
	set := map[uint64]bool{}
	for range n {
		set[uint64(rng.IntN(5*CacheWays*4))] = true
	}
	var lines []uint64
	for l := range set {
		lines = append(lines, l)
	}
	slices.Sort(lines)
	masks := make([]uint8, len(lines))
	for i := range masks {
		masks[i] = uint8(1 + rng.IntN(15))
	}
	return lines, masks
}

// spinPTX: block 0 loops for ever, the others return at once.
const spinPTX = header + `
.visible .entry spin()
{
	.reg .b32 %r<2>;
	.reg .pred %p<2>;
	mov.u32 %r1, %ctaid.x;
	setp.ne.u32 %p1, %r1, 0;
	@%p1 bra DONE;
LOOP:
	bra LOOP;
DONE:
	ret;
}
`

// With the cache model on, the workers that finished the blocks after a slow block 0 wait to hand
// their streams to the L2 in order (at most maxPending of them); when block 0 stops (here: the
// context's deadline), they are woken and the launch returns, not left waiting for its stream.
func TestCacheStoppedBlockDoesNotHang(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := Launch(ctx, mustParse(t, spinPTX), "spin", LaunchConfig{Grid: [3]int{4 * maxPending}, Block: [3]int{32},
			Workers: 4, Cache: &CacheConfig{L1Bytes: 32 << 10, L2Bytes: 1 << 20}})
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("err = %v, want the context's deadline", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the launch did not return 10 s after its context's deadline")
	}
}
