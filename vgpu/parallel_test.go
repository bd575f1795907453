package vgpu

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/gpuplayground/playground/gpu/nvidia"
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

// TestParallelCountsAreSerials checks that ladder kernels launched on 1, 2 and 3 workers give the
// same counts, cache model and initcheck included, and the same result bytes.
func TestParallelCountsAreSerials(t *testing.T) {
	m := loadPTX(t, 80)
	const n = 64
	for _, kernel := range []string{"cuda-naive", "cuda-smem", "cuda-regblock"} {
		k, ok := nvidia.LookupKernel(kernel)
		if !ok {
			t.Fatalf("no kernel %s", kernel)
		}
		l := k.LaunchFor(n, 80, "float32")
		run := func(workers int) (Counts, []byte) {
			t.Helper()
			rng := rand.New(rand.NewPCG(5, 6))
			A, B := Float32Buffer("A", randomMatrix(rng, n)), Float32Buffer("B", randomMatrix(rng, n))
			C := NewOutput("C", 4*n*n, Poisoned)
			c, err := Launch(context.Background(), m, l.Entry, LaunchConfig{Grid: l.Grid, Block: l.Block,
				Buffers: []*Buffer{A, B, C}, Workers: workers, Cache: &CacheConfig{L1Bytes: 16 << 10, L2Bytes: 64 << 10},
				Params: []Arg{Ptr(A), Ptr(B), Ptr(C), S32(n), S32(n), S32(n)}})
			if err != nil {
				t.Fatalf("%s, %d workers: %v", kernel, workers, err)
			}
			return c, C.Data
		}
		want, wantC := run(1)
		for _, workers := range []int{2, 3} {
			got, gotC := run(workers)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s, %d workers: counts %+v, want %+v", kernel, workers, got, want)
			}
			if !bytes.Equal(gotC, wantC) {
				t.Errorf("%s, %d workers: C differs from the serial run's", kernel, workers)
			}
		}
	}
}

// sameValuePTX: lane 0 of each of two warps stores to shared word 0 with no barrier, the value
// %r2 (the param v when same is 1, else the thread's index), then thread 0 copies it out.
const sameValuePTX = header + `.visible .entry flag(.param .u64 out, .param .u32 v, .param .u32 same)
{
	.shared .align 4 .b8 s[4];
	.reg .pred %p<3>;
	.reg .b32 %r<5>;
	.reg .b64 %rd<3>;
	ld.param.u64 %rd1, [out];
	ld.param.u32 %r1, [v];
	ld.param.u32 %r3, [same];
	mov.u32 %r2, %tid.x;
	setp.eq.u32 %p1, %r3, 1;
	@%p1 mov.u32 %r2, %r1;
	mov.u32 %r4, s;
	mov.u32 %r3, %laneid;
	setp.eq.u32 %p2, %r3, 0;
	@%p2 st.shared.u32 [%r4], %r2;
	bar.sync 0;
	ld.shared.u32 %r4, [s];
	st.global.u32 [%rd1], %r4;
	ret;
}
`

// TestRacecheckSameValueStores checks the hazard check of stores resolved at once (sharedLanes'
// direct path): a thread of another warp writing the value a word already holds is no hazard, as
// in compute-sanitizer; writing a different value is a write-after-write hazard.
func TestRacecheckSameValueStores(t *testing.T) {
	m := mustParse(t, sameValuePTX)
	for _, same := range []uint32{1, 0} {
		out := NewBuffer("out", 4)
		_, err := Launch(context.Background(), m, "flag", LaunchConfig{Block: [3]int{64},
			Params: []Arg{Ptr(out), U32(7), U32(same)}, Buffers: []*Buffer{out}})
		var f *Fault
		switch {
		case same == 1 && err != nil:
			t.Errorf("same value: got %v, want no error", err)
		case same == 0 && (!errors.As(err, &f) || f.Kind != "hazard"):
			t.Errorf("different values: got %v, want a hazard", err)
		}
	}
}
