package vgpu

import (
	"context"
	"errors"
	"testing"
)

const shflPTX = header + `.visible .entry reduce(.param .u64 out, .param .u32 width)
{
	.reg .pred %p<4>;
	.reg .b32 %r<12>;
	.reg .b64 %rd<4>;
	ld.param.u64 %rd1, [out];
	mov.u32 %r1, %laneid;
	shfl.sync.down.b32 %r2, %r1, 16, 31, -1;
	add.s32 %r1, %r1, %r2;
	shfl.sync.down.b32 %r2, %r1, 8, 31, -1;
	add.s32 %r1, %r1, %r2;
	shfl.sync.down.b32 %r2, %r1, 4, 31, -1;
	add.s32 %r1, %r1, %r2;
	shfl.sync.down.b32 %r2, %r1, 2, 31, -1;
	add.s32 %r1, %r1, %r2;
	shfl.sync.down.b32 %r2|%p1, %r1, 1, 31, -1;
	add.s32 %r1, %r1, %r2;
	mov.u32 %r3, %laneid;
	shfl.sync.up.b32 %r4|%p2, %r3, 1, 0, -1;      // lane l gets l-1; lane 0 keeps 0 and p2 false
	shfl.sync.bfly.b32 %r5, %r3, 1, 31, -1;       // l ^ 1
	shfl.sync.idx.b32 %r6, %r3, 7, 31, -1;        // 7
	and.b32 %r7, %r3, 1;
	setp.eq.u32 %p3, %r7, 1;
	vote.sync.ballot.b32 %r8, %p3, -1;
	vote.sync.any.pred %p3, %p3, -1;
	selp.u32 %r9, 1, 0, %p3;
	vote.sync.all.pred %p3, !%p2, -1;             // false: only lane 0 has !p2
	selp.u32 %r10, 1, 0, %p3;
	activemask.b32 %r11;
	setp.ne.u32 %p3, %r3, 2;
	@%p3 bra DONE;
	st.global.u32 [%rd1], %r1;
	st.global.u32 [%rd1+4], %r4;
	st.global.u32 [%rd1+8], %r5;
	st.global.u32 [%rd1+12], %r6;
	st.global.u32 [%rd1+16], %r8;
	st.global.u32 [%rd1+20], %r9;
	st.global.u32 [%rd1+24], %r10;
	st.global.u32 [%rd1+28], %r11;
DONE:
	ret;
}
`

func TestShuffleAndVote(t *testing.T) {
	m := mustParse(t, shflPTX)
	out := NewBuffer("out", 32)
	c, err := Launch(context.Background(), m, "reduce", LaunchConfig{Block: [3]int{32}, Params: []Arg{Ptr(out), U32(32)}, Buffers: []*Buffer{out}})
	if err != nil {
		t.Fatal(err)
	}
	// lane 2 of a tree reduction holds a partial sum: lanes 2..3 + 6..7 + … every lane ≡ 2,3 (mod 4)?
	// Compute it the slow way.
	var lanes [32]uint32
	for i := range lanes {
		lanes[i] = uint32(i)
	}
	for _, off := range []int{16, 8, 4, 2, 1} {
		var next [32]uint32
		for i := range lanes {
			src := i
			if i+off <= 31 {
				src = i + off
			}
			next[i] = lanes[i] + lanes[src]
		}
		lanes = next
	}
	want := []uint32{lanes[2], 1, 3, 7, 0xaaaaaaaa, 1, 0, 0xffffffff}
	for i, w := range want {
		if got := uint32(readN(out.Data[4*i:], 4)); got != w {
			t.Errorf("word %d: %#x, want %#x", i, got, w)
		}
	}
	if c.Classes[ClassShuffle].Warp != 12 {
		t.Errorf("%d shuffle/vote warp instructions, want 12", c.Classes[ClassShuffle].Warp)
	}
	// lane 0 of a full reduction is the sum of all lane ids
	if lanes[0] != 496 {
		t.Fatalf("reference reduction %d", lanes[0])
	}
	// a shuffle some members of its mask do not reach is a fault
	bad := mustParse(t, header+`.visible .entry k()
{
	.reg .pred %p<2>;
	.reg .b32 %r<4>;
	mov.u32 %r1, %laneid;
	setp.lt.u32 %p1, %r1, 16;
	@%p1 bra END;
	shfl.sync.down.b32 %r2, %r1, 1, 31, -1;
END:
	ret;
}
`)
	_, err = Launch(context.Background(), bad, "k", LaunchConfig{Block: [3]int{32}})
	var f *Fault
	if !errors.As(err, &f) || f.Kind != "divergent warp sync" {
		t.Fatalf("got %v, want a fault for a diverged shfl.sync", err)
	}
}
