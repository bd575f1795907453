package vgpu

import (
	"context"
	"encoding/binary"
	"testing"
)

// storePoisonPTX stores the poison's own bytes (0xFFFFFFFF, a NaN) in c[0] and a quiet NaN in c[1].
const storePoisonPTX = `.version 7.0
.target sm_80
.address_size 64
.visible .entry k(.param .u64 c) {
	.reg .b64 %rd<2>;
	.reg .b32 %r<3>;
	ld.param.u64 %rd1, [c];
	cvta.to.global.u64 %rd1, %rd1;
	mov.b32 %r1, -1;
	st.global.b32 [%rd1], %r1;
	mov.b32 %r2, 0x7fc00000;
	st.global.b32 [%rd1+4], %r2;
	ret;
}
`

// A store marks the bytes it wrote, even when it writes the poison's own bytes, and only those;
// Keep puts the bytes and the marks back; an input's bytes all count as written.
func TestWrittenAnyAndKeep(t *testing.T) {
	m, err := ParseModule(storePoisonPTX)
	if err != nil {
		t.Fatal(err)
	}
	c := NewOutput("c", 16, Poisoned)
	restore := c.Keep()
	launch := func() {
		t.Helper()
		if _, err := Launch(context.Background(), m, "k", LaunchConfig{Grid: [3]int{1, 1, 1}, Block: [3]int{1, 1, 1}, Params: []Arg{Ptr(c)}, Buffers: []*Buffer{c}}); err != nil {
			t.Fatal(err)
		}
	}
	launch()
	for _, tc := range []struct {
		off, n int
		want   bool
	}{{0, 4, true}, {4, 4, true}, {0, 8, true}, {3, 2, true}, {8, 8, false}, {12, 4, false}, {12, 8, false}, {-1, 4, false}} {
		if got := c.WrittenAny(tc.off, tc.n); got != tc.want {
			t.Errorf("after the launch, WrittenAny(%d, %d) = %v, want %v", tc.off, tc.n, got, tc.want)
		}
	}
	if got := binary.LittleEndian.Uint32(c.Data); got != 0xFFFFFFFF {
		t.Errorf("c[0] = %#x, want the poison's bytes, as stored", got)
	}
	restore()
	if c.WrittenAny(0, 16) || binary.LittleEndian.Uint32(c.Data[4:]) != 0xFFFFFFFF {
		t.Errorf("after Keep's restore: written %v, c[1] %#x; want nothing written and the poison back", c.WrittenAny(0, 16), binary.LittleEndian.Uint32(c.Data[4:]))
	}
	if in := NewBuffer("in", 8); !in.WrittenAny(0, 8) || in.WrittenAny(4, 8) {
		t.Errorf("an input's bytes: WrittenAny(0, 8) = %v, (4, 8) past its end = %v; want true, false", in.WrittenAny(0, 8), in.WrittenAny(4, 8))
	}
}
