package cuda

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/gpuplayground/playground/cells"
	"github.com/gpuplayground/playground/cells/cellstest"
	kcuda "github.com/gpuplayground/playground/gpu/nvidia"
	"github.com/gpuplayground/playground/harness"
	"github.com/gpuplayground/playground/measure"
)

// tmaGPU is a server without a device whose compiler is NVRTC 12.4 for compute_90 (TMA is Hopper's).
type tmaGPU struct{ testGPU }

func (g *tmaGPU) Arch() int { return 90 }
func (g *tmaGPU) Compile(ctx context.Context, src, name, arch string) (string, error) {
	return kcuda.CompileFor(ctx, g.nv, nil, kcuda.FindHeaders(g.nv), src, name, archOr(arch, "90"))
}

// tmaTransposeCell transposes with one TMA copy per 32×32 tile, 128-byte swizzled in shared memory:
// the kernel undoes the swizzle (16-byte chunk c of row r lands at chunk c ^ (r % 8)) as it reads.
const tmaTransposeCell = `kernel: k
problem: transpose
block: [32, 8]
grid: ["ceil(n/32)", "ceil(n/32)"]
sizes: [40, 64]
tensor_maps: [{param: tmIn, of: in, box: [32, 32], swizzle: 128}]
---
#include <cuda.h>
__device__ unsigned sh(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }
extern "C" __global__ void k(const float* in, float* out, int rows, int cols, const __grid_constant__ CUtensorMap tmIn) {
	__shared__ alignas(1024) float tile[32 * 32];
	__shared__ unsigned long long bar;
	int x0 = 32 * blockIdx.x, y0 = 32 * blockIdx.y, t = threadIdx.y * 32 + threadIdx.x;
	if (t == 0) asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(sh(&bar)) : "memory");
	__syncthreads();
	if (t == 0) {
		asm volatile("mbarrier.arrive.expect_tx.release.cta.shared::cta.b64 _, [%0], 4096;" :: "r"(sh(&bar)) : "memory");
		asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
			:: "r"(sh(tile)), "l"(&tmIn), "r"(x0), "r"(y0), "r"(sh(&bar)) : "memory");
	}
	unsigned done = 0;
	while (!done)
		asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.acquire.cta.shared::cta.b64 p, [%1], 0; selp.u32 %0, 1, 0, p; }"
			: "=r"(done) : "r"(sh(&bar)) : "memory");
	for (int r = threadIdx.y; r < 32; r += 8) {
		int c = threadIdx.x, gr = y0 + r, gc = x0 + c;
		if (gr < rows && gc < cols) out[gc * rows + gr] = tile[r * 32 + (((c / 4) ^ (r % 8)) * 4) + c % 4];
	}
}
`

// A cell's tensor map reaches its kernel: NVRTC 12.4 compiles the TMA transpose with <cuda.h>'s
// CUtensorMap, and the virtual GPU runs it at a size of whole tiles and one of ragged tiles (the
// copy fills what lies outside the matrix with zeros), its transpose checked ok.
func TestTensorMapCellEmulated(t *testing.T) {
	nv, err := kcuda.LoadNVRTCFrom([]string{"libnvrtc.so.12"})
	if err != nil {
		t.Skipf("skipping: no NVRTC 12 (%v)", err)
	}
	rec := runCellOn(t, tmaTransposeCell, &tmaGPU{testGPU{nv: nv}})
	rows := rec.RowsOf("emulated")
	if len(rows) != 2 {
		t.Fatalf("got %d emulated rows, want 2; notes %+v", len(rows), rec.Notes)
	}
	for _, r := range rows {
		if r.Bad || r.Values[5] != "ok" {
			t.Errorf("row %v: want ok", r.Values)
		}
	}
}

// Without the swizzle the kernel's reads (which undo it) are wrong: the check fails, so the map's
// swizzle is what the virtual GPU applied.
func TestTensorMapCellSwizzleMatters(t *testing.T) {
	nv, err := kcuda.LoadNVRTCFrom([]string{"libnvrtc.so.12"})
	if err != nil {
		t.Skipf("skipping: no NVRTC 12 (%v)", err)
	}
	cell := strings.Replace(tmaTransposeCell, "swizzle: 128", "swizzle: 0", 1)
	k := New(cells.Env{Kernels: gpuAvailable(), Limits: harness.DefaultLimits(), GPU: &tmaGPU{testGPU{nv: nv}}})
	r, err := k.Parse(cells.Cell{Source: cell})
	if err != nil {
		t.Fatal(err)
	}
	rec := &cellstest.Recorder{}
	_ = r.Run(context.Background(), rec) // the failed check is in the rows
	rows := rec.RowsOf("emulated")
	bad := 0
	for _, row := range rows {
		if row.Bad {
			bad++
		}
	}
	if len(rows) == 0 || bad != len(rows) {
		t.Errorf("unswizzled map: %d of %d rows failed, want all", bad, len(rows))
	}
}

// On a server with a GPU the kernel is measured there: every worker request carries the cell's
// tensor maps (the worker makes them with cuTensorMapEncodeTiled), and the emulated counts follow.
func TestTensorMapCellMeasuredOnGPU(t *testing.T) {
	nv, err := kcuda.LoadNVRTCFrom([]string{"libnvrtc.so.12"})
	if err != nil {
		t.Skipf("skipping: no NVRTC 12 (%v)", err)
	}
	g := &tmaGPU{testGPU{nv: nv, device: true}}
	rec := runCellOn(t, tmaTransposeCell, g)
	if len(g.requests) != 2 {
		t.Fatalf("got %d worker requests, want one per size", len(g.requests))
	}
	want := []measure.TensorMap{{Param: "tmIn", Of: "in", Box: [2]int{32, 32}, Swizzle: 128}}
	for _, req := range g.requests {
		if !reflect.DeepEqual(req.TensorMaps, want) || req.Problem != "transpose" {
			t.Errorf("n=%d: tensor maps %+v for %q, want %+v", req.N, req.TensorMaps, req.Problem, want)
		}
	}
	if rows := rec.RowsOf("emulated"); len(rows) != 2 {
		t.Errorf("got %d emulated rows beside the measured ones, want 2", len(rows))
	}
}

// Each mistake in a tensor map is an error on its line.
func TestTensorMapSpecErrors(t *testing.T) {
	cases := []struct{ from, to, want string }{
		{"param: tmIn", "param: tmB", "unknown param tmB"},
		{"of: in", "of: out2", `tensor map of "out2"`},
		{"box: [32, 32]", "box: [32, 300]", "box size 300"},
		{"box: [32, 32]", "box: [2, 32]", "not a multiple of 16"},
		{"box: [32, 32]", "box: [64, 32]", "more than the 128-byte swizzle span"},
		{"swizzle: 128", "swizzle: 96", "swizzle 96"},
		{"box: [32, 32]", "box: [32]", "box has 1 sizes"},
	}
	for _, c := range cases {
		cell := strings.Replace(tmaTransposeCell, c.from, c.to, 1)
		_, err := Parse(cell, nil, harness.DefaultLimits())
		var se *cells.SpecError
		if !errors.As(err, &se) || se.Line != 6 || !strings.Contains(se.Msg, c.want) {
			t.Errorf("%s: got %v, want line 6 with %q", c.to, err, c.want)
		}
	}
	if s, err := Parse(tmaTransposeCell, nil, harness.DefaultLimits()); err != nil || len(s.TensorMaps) != 1 || s.TensorMaps[0].Map.Box != [2]int{32, 32} {
		t.Errorf("the good cell: %+v, %v", s.TensorMaps, err)
	} // two maps bind by the list's order: a list in another order than the kernel's parameters is refused
	two := strings.Replace(tmaTransposeCell, "const __grid_constant__ CUtensorMap tmIn)", "const __grid_constant__ CUtensorMap tmIn, const __grid_constant__ CUtensorMap tmOut)", 1)
	ordered := strings.Replace(two, "swizzle: 128}]", "swizzle: 128}, {param: tmOut, of: out, box: [32, 32]}]", 1)
	if s, err := Parse(ordered, nil, harness.DefaultLimits()); err != nil || len(s.TensorMaps) != 2 {
		t.Errorf("two maps in order: %+v, %v", s.TensorMaps, err)
	}
	swapped := strings.Replace(two, "[{param: tmIn, of: in, box: [32, 32], swizzle: 128}]", "[{param: tmOut, of: out, box: [32, 32]}, {param: tmIn, of: in, box: [32, 32], swizzle: 128}]", 1)
	_, err := Parse(swapped, nil, harness.DefaultLimits())
	var se *cells.SpecError
	if want := "tensor map tmIn is listed after tmOut, but the kernel takes tmIn first"; !errors.As(err, &se) || se.Line != 6 || !strings.Contains(se.Msg, want) {
		t.Errorf("two maps swapped: got %v, want line 6 with %q", err, want)
	}
}

// Compiled as the server compiles (gpu.Machine: the confined compile worker, this test binary, with
// the default NVRTC and the headers its sandbox grants), the TMA cell's kernel runs and is ok.
func TestTensorMapCellThroughTheWorker(t *testing.T) {
	needPtxas(t)
	nv, err := kcuda.LoadNVRTC()
	if err != nil {
		t.Skipf("skipping: no NVRTC (%v)", err)
	}
	if v, _ := nv.Version(); !strings.HasPrefix(v, "12.") && !strings.HasPrefix(v, "13.") {
		t.Skipf("skipping: the default NVRTC is %s, without TMA", v)
	}
	rec := runCellOn(t, tmaTransposeCell, workerMachine(t))
	rows := rec.RowsOf("emulated")
	if len(rows) != 2 {
		t.Fatalf("got %d emulated rows, want 2", len(rows))
	}
	for _, r := range rows {
		if r.Bad || r.Values[5] != "ok" {
			t.Errorf("row %v: want ok", r.Values)
		}
	}
}
