package vgpu

import (
	"math/bits"
	"math/rand/v2"
	"testing"
)

// TestSharedPatternCounts checks countShared's shortcut for the address patterns sharedLanes
// recognises (one address, consecutive lanes' bytes) against bankPass on the gathered words, for
// every access width and random lane masks and addresses.
func TestSharedPatternCounts(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{4, 8, 16} {
		for range 200 {
			m := rng.Uint32()
			if m == 0 {
				m = fullMask
			}
			for _, pat := range []uint8{patUniform, patConsecutive} {
				w := &warp{}
				a := uint64(rng.IntN(1024)) * uint64(n)
				for t := m; t != 0; t &= t - 1 {
					w.addr[bits.TrailingZeros32(t)] = a
					if pat == patConsecutive {
						a += uint64(n)
					}
				}
				var got, want instCount
				c := &cta{}
				c.pattern = pat
				c.countShared(&got, w, m, n)
				c.pattern = patNone
				c.countShared(&want, w, m, n)
				if got != want {
					t.Fatalf("n = %d, mask %#x, pattern %d: got %+v, want %+v", n, m, pat, got, want)
				}
			}
		}
	}
}

// TestBankPassSeen checks the unsorted bank count against bankPass on random requests of words,
// with repeats, some in one bank.
func TestBankPassSeen(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	c := &cta{seen: make([]uint32, 4096)}
	for i := range 2000 {
		k := 1 + rng.IntN(4*warpSize)
		s := make([]uint64, k)
		for j := range s {
			switch rng.IntN(3) {
			case 0:
				s[j] = uint64(rng.IntN(64))
			case 1:
				s[j] = uint64(32 * rng.IntN(128)) // bank 0
			default:
				s[j] = uint64(rng.IntN(4096))
			}
		}
		if i == 1000 {
			c.pass = ^uint32(0) // the stamps wrap at the next pass
		}
		gw, gi := c.bankPassSeen(append([]uint64(nil), s...))
		ww, wi := bankPass(s)
		if gw != ww || gi != wi {
			t.Fatalf("%v: got %d wavefronts (ideal %d), want %d (%d)", s, gw, gi, ww, wi)
		}
	}
}

// TestBankPassChunks checks the count by chunks of 8- and 16-byte lanes against bankPass on the
// lanes' words, for random lane masks and aligned addresses (repeated, in few banks or spread),
// across the stamps' wrap; and that a misaligned lane or one past shared memory is left to the
// words' count.
func TestBankPassChunks(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	c := &cta{seen: make([]uint32, 4096)}
	for i := range 2000 {
		words := []int{2, 4}[i%2]
		m := rng.Uint32() | 1
		w := &warp{}
		var s []uint64
		for t := m; t != 0; t &= t - 1 {
			var a uint64
			switch rng.IntN(3) {
			case 0:
				a = uint64(rng.IntN(16) * words)
			case 1:
				a = uint64(32 * rng.IntN(64)) // bank 0 first
			default:
				a = uint64(rng.IntN(4096/words) * words)
			}
			w.addr[bits.TrailingZeros32(t)] = a << 2
			for j := range words {
				s = append(s, a+uint64(j))
			}
		}
		if i == 1000 {
			c.pass = ^uint32(0) // the stamps wrap at the next pass
		}
		gw, gi, ok := c.bankPassChunks(w, m, words)
		ww, wi := bankPass(s)
		if !ok || gw != ww || gi != wi {
			t.Fatalf("%d words per lane at %v: got %d wavefronts (ideal %d, %v), want %d (%d)", words, s, gw, gi, ok, ww, wi)
		}
	}
	w := &warp{}
	w.addr[0] = 8 // word 2: not a 16-byte chunk's first
	if _, _, ok := c.bankPassChunks(w, 1, 4); ok {
		t.Error("a misaligned 16-byte lane counted by chunks")
	}
	w.addr[0] = 4 * 4094 // words 4094–4097: past shared memory's 4096
	if _, _, ok := c.bankPassChunks(w, 1, 4); ok {
		t.Error("a lane past shared memory counted by chunks")
	}
}

// TestGlobalApartCounts checks countGlobal's shortcuts for the global requests globalLanes finds
// a line apart (ascending, each address in a line of its own) or consecutive against the sectors, lines and bytes
// counted from the gathered addresses, for every access width, strides below, at and above a
// line, descending and repeated addresses, and random lane masks; and that the shortcuts are taken.
func TestGlobalApartCounts(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	c := &cta{L: &launch{bufs: [][]byte{make([]byte, 1<<20)}}}
	w := &warp{regs: make([][warpSize]uint64, 1)}
	taken := map[uint8]int{}
	for i := range 3000 {
		n := 1 << rng.IntN(6) // 1 … 32 bytes
		in := &inst{a: 0, size: uint8(n), nvec: 1, space: spGlobal}
		stride := int64([]int{0, 1, 4, 31, 32, 33, 40, 64, 200}[rng.IntN(9)]) * int64(n)
		if i%3 == 0 {
			stride = -stride
		}
		m := rng.Uint32() | 1
		if i%2 == 0 { // a run of lanes
			m = fullMask >> rng.IntN(warpSize) << rng.IntN(8)
		}
		a := int64(1<<windowShift) + 1<<19 + int64(rng.IntN(1024))*int64(n)
		for l := range warpSize {
			w.regs[0][l] = uint64(a + int64(l)*stride)
		}
		c.direct, c.pattern = nil, patNone
		_, k, sorted := c.globalLanes(w, in, m, accLoad, &w.regs[0], n, true)
		taken[c.pattern]++
		var got, want instCount
		lines := c.lines
		c.countGlobal(&got, w, m, n, accLoad, k, sorted)
		gotLines := c.lines - lines
		c.pattern = patNone
		c.countGlobal(&want, w, m, n, accLoad, 0, false)
		if wantLines := c.lines - lines - gotLines; got != want || gotLines != wantLines {
			t.Fatalf("n = %d, stride %d, mask %#x: got %+v and %d lines, want %+v and %d", n, stride, m, got, gotLines, want, wantLines)
		}
	}
	if taken[patApart] == 0 || taken[patConsecutive] == 0 {
		t.Fatalf("requests a line apart: %d, consecutive: %d; want some of each", taken[patApart], taken[patConsecutive])
	}
}
