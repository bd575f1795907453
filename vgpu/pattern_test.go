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
