package vgpu

import (
	"math"
	"math/rand/v2"
	"testing"
)

// fma.rn.f32's common case (the float64 sum of the exact product and the addend, rounded once to
// float32) gives what the exact path (twoSum, then roundF32 with the error's sign) gives, bit for
// bit, on random operands with many NaNs (two NaN operands: which one's payload comes out),
// infinities, zeros, subnormals and halfway sums, on full and partial warps, the destination one
// of the sources.
func TestFmaF32FastPathIsTheExactOne(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	operand := func() uint32 {
		switch rng.IntN(6) {
		case 0:
			return 0x7f800000 | rng.Uint32()&0x807fffff // NaN or ±Inf
		case 1:
			return rng.Uint32() & 0x807fffff // subnormal or zero
		case 2:
			return math.Float32bits(float32(rng.IntN(64)) / 8) // small sums, some halfway
		case 3:
			return math.Float32bits(float32(rng.Float64()*2 - 1))
		}
		return rng.Uint32()
	}
	for i := range 20000 {
		w := &warp{regs: make([][warpSize]uint64, 3)}
		for r := range 3 {
			for l := range warpSize {
				w.regs[r][l] = uint64(operand())
			}
		}
		var want [warpSize]uint64
		for l := range warpSize {
			p := float64(math.Float32frombits(uint32(w.regs[0][l]))) * float64(math.Float32frombits(uint32(w.regs[1][l])))
			s, e := twoSum(p, float64(math.Float32frombits(uint32(w.regs[2][l]))))
			want[l] = uint64(math.Float32bits(roundF32(s, rmNearest, e)))
		}
		m := uint32(fullMask)
		if i%2 == 1 {
			m = rng.Uint32() | 1
		}
		old := w.regs[2]
		execFmaF32(w, &inst{a: 0, b: 1, c: 2, d: 2}, m)
		for l := range warpSize {
			if m&(1<<l) == 0 {
				want[l] = old[l]
			}
			if got := w.regs[2][l]; got != want[l] {
				t.Fatalf("lane %d: fma(%#x, %#x, %#x) = %#x, want %#x", l, w.regs[0][l], w.regs[1][l], old[l], got, want[l])
			}
		}
	}
}
