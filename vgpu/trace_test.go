package vgpu

import (
	"context"
	"testing"
)

// Each thread of a 2-D grid copies in[i] to out[i], i its global x index (row y of blocks apart).
const copyPTX = header + `.visible .entry copy(.param .u64 in, .param .u64 out)
{
	.reg .b32 %r<8>;
	.reg .b64 %rd<8>;
	.reg .f32 %f<2>;
	ld.param.u64 %rd1, [in];
	ld.param.u64 %rd2, [out];
	mov.u32 %r1, %ctaid.x;
	mov.u32 %r2, %ntid.x;
	mov.u32 %r3, %tid.x;
	mad.lo.s32 %r4, %r1, %r2, %r3;
	mul.wide.s32 %rd3, %r4, 4;
	add.s64 %rd4, %rd1, %rd3;
	ld.global.f32 %f1, [%rd4];
	add.s64 %rd5, %rd2, %rd3;
	st.global.f32 [%rd5], %f1;
	ret;
}
`

func TestTraceGlobalAccesses(t *testing.T) {
	m := mustParse(t, copyPTX)
	in, out := NewBuffer("in", 4*256), NewBuffer("out", 4*256)
	var evs []TraceEvent
	cfg := LaunchConfig{Grid: [3]int{4}, Block: [3]int{64}, Params: []Arg{Ptr(in), Ptr(out)}, Buffers: []*Buffer{in, out},
		Trace: func(e TraceEvent) { evs = append(evs, e) }}
	if _, err := Launch(context.Background(), m, "copy", cfg); err != nil {
		t.Fatal(err)
	}
	// CTA (0,0,0) only: 2 warps × (one load, one store)
	if len(evs) != 4 {
		t.Fatalf("%d events, want 4", len(evs))
	}
	loads := 0
	for _, e := range evs {
		if e.Block != [3]int{} || e.Sectors != 4 || e.Size != 4 || len(e.Lanes) != 32 {
			t.Errorf("event %+v", e)
		}
		buf := 1
		if !e.Store {
			loads++
			buf = 0
			if e.Opcode != "ld.global.f32" || e.Line != lineOf(t, copyPTX, "ld.global.f32") {
				t.Errorf("load event opcode %q line %d", e.Opcode, e.Line)
			}
		}
		for j, l := range e.Lanes {
			if l.Lane != j || l.Buffer != buf || l.Offset != int64(4*(32*e.Warp+j)) {
				t.Errorf("warp %d lane %+v", e.Warp, l)
			}
		}
	}
	if loads != 2 {
		t.Errorf("%d load events, want 2", loads)
	}
	evs = nil
	cfg.TraceBlocks, cfg.TraceLimit = [][3]int{{2, 0, 0}}, 1
	if _, err := Launch(context.Background(), m, "copy", cfg); err != nil {
		t.Fatal(err)
	}
	if len(evs) != 1 || evs[0].Block != [3]int{2, 0, 0} || evs[0].Lanes[0].Offset != 4*128 {
		t.Errorf("events %+v", evs)
	}
}

func TestSampledLaunch(t *testing.T) {
	m := mustParse(t, copyPTX)
	xs := make([]float32, 256)
	for i := range xs {
		xs[i] = float32(i + 1)
	}
	in, out := Float32Buffer("in", xs), NewBuffer("out", 4*256)
	cfg := LaunchConfig{Grid: [3]int{4}, Block: [3]int{64}, Params: []Arg{Ptr(in), Ptr(out)}, Buffers: []*Buffer{in, out}}
	full, err := Launch(context.Background(), m, "copy", cfg)
	if err != nil {
		t.Fatal(err)
	}
	clear(out.Data)
	cfg.Only = [][3]int{{1, 0, 0}, {1, 0, 0}}
	c, err := Launch(context.Background(), m, "copy", cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range out.Float32s() {
		want := float32(0)
		if i >= 64 && i < 128 {
			want = xs[i]
		}
		if v != want {
			t.Fatalf("out[%d] = %v, want %v (only CTA 1 runs)", i, v, want)
		}
	}
	if c.Blocks != 1 || c.GridBlocks != 4 || c.Sampled || c.WarpInstructions*4 != full.WarpInstructions {
		t.Errorf("sampled counts: blocks %d of %d, %d warp instructions (full %d)", c.Blocks, c.GridBlocks, c.WarpInstructions, full.WarpInstructions)
	}
	s := c.Scaled()
	if !s.Sampled || s.Blocks != 4 || s.WarpInstructions != full.WarpInstructions || s.LoadSectors != full.LoadSectors ||
		s.Threads != full.Threads || s.Classes != full.Classes || s.Lines[0].Warp != full.Lines[0].Warp {
		t.Errorf("scaled %+v\nfull %+v", s, full)
	}
	if full.Scaled().Sampled {
		t.Errorf("a full launch scaled is not sampled")
	}
	cfg.Only = [][3]int{{4, 0, 0}}
	if _, err := Launch(context.Background(), m, "copy", cfg); err == nil {
		t.Errorf("a block outside the grid is an error")
	}
}
