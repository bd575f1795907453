package vgpu

import (
	"context"
	"errors"
	"testing"
)

// lateFaultPTX faults in every block from 3 on (a store 1 MiB past out), after a loop that is long in
// block 3 and short elsewhere: on several workers, later blocks fault before block 3 does.
const lateFaultPTX = header + `.visible .entry spin(.param .u64 out)
{
	.reg .pred %p<3>;
	.reg .b32 %r<4>;
	.reg .b64 %rd<4>;
	ld.param.u64 %rd1, [out];
	mov.u32 %r1, %ctaid.x;
	mov.u32 %r2, 10;
	setp.eq.u32 %p1, %r1, 3;
	@%p1 mov.u32 %r2, 100000;
	mov.u32 %r3, 0;
LOOP:
	add.s32 %r3, %r3, 1;
	setp.lt.u32 %p2, %r3, %r2;
	@%p2 bra LOOP;
	mul.wide.u32 %rd2, %r1, 4;
	setp.ge.u32 %p1, %r1, 3;
	@%p1 add.s64 %rd2, %rd2, 1048576;
	add.s64 %rd3, %rd1, %rd2;
	st.global.u32 [%rd3], %r3;
	ret;
}
`

// TestParallelFaultIsSerials checks that a launch on several workers reports the fault a launch
// on one reports: the first faulting block in launch order, not the first to fault in time.
func TestParallelFaultIsSerials(t *testing.T) {
	m := mustParse(t, lateFaultPTX)
	run := func(workers int) *Fault {
		t.Helper()
		out := NewBuffer("out", 64*4)
		_, err := Launch(context.Background(), m, "spin", LaunchConfig{Grid: [3]int{64}, Block: [3]int{32},
			Params: []Arg{Ptr(out)}, Buffers: []*Buffer{out}, Workers: workers})
		var f *Fault
		if !errors.As(err, &f) {
			t.Fatalf("workers = %d: got %v, want a fault", workers, err)
		}
		return f
	}
	want := run(1)
	if want.Block != [3]int{3, 0, 0} || want.Kind != "out of bounds" {
		t.Fatalf("serial: got %s in block %v, want out of bounds in block (3,0,0)", want.Kind, want.Block)
	}
	for range 10 {
		got := run(4)
		if got.Block != want.Block || got.Thread != want.Thread || got.Msg != want.Msg {
			t.Fatalf("4 workers: got %q in block %v thread %v, want %q in block %v thread %v",
				got.Msg, got.Block, got.Thread, want.Msg, want.Block, want.Thread)
		}
	}
}
