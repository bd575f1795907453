package cuda

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/gpuplayground/playground/cells"
	"github.com/gpuplayground/playground/cells/cellstest"
	"github.com/gpuplayground/playground/gpu"
	kcuda "github.com/gpuplayground/playground/gpu/nvidia"
	"github.com/gpuplayground/playground/harness"
	pt "github.com/gpuplayground/playground/problems/problemstest"
	"github.com/gpuplayground/playground/vgpurun"
)

// emulatingGPU is a testGPU that is a vgpurun.Emulator: it notes each launch it is asked to run
// (kernel@n), and runs it with vgpurun.Run.
type emulatingGPU struct {
	testGPU
	launches []string
}

func (g *emulatingGPU) Emulate(ctx context.Context, req vgpurun.Request) (vgpurun.Result, error) {
	g.launches = append(g.launches, fmt.Sprintf("%s@%d", req.Kernel, req.N))
	return vgpurun.Run(ctx, req)
}

// Where the server's GPU host is a vgpurun.Emulator (a test's, sharing identical launches between
// cells), every launch a cuda cell's run and its Show PTX make in the virtual GPU goes to it: the
// learner's kernel, its variants, and a matmul cell's compared kernels.
func TestLaunchesGoToTheHostsEmulator(t *testing.T) {
	nv, err := kcuda.LoadNVRTC()
	if err != nil {
		t.Skipf("skipping: no NVRTC (%v)", err)
	}
	transpose := strings.Replace(tiledTransposeCell, "sizes: [40, 64]", "sizes: [32]\nvariants: [{block: [32, 2]}]", 1) + pt.TiledTranspose
	matmul := "kernel: k\nblock: [16, 16]\ngrid: [\"ceil(n/16)\", \"ceil(n/16)\"]\nsizes: [16]\ncompare: [cuda-naive]\n---\n#define ROUND(x) (x)\n" + pt.RoundingMatmul
	for _, tc := range []struct {
		name, cell string
		want       []string
	}{
		{"a transpose cell with a variant", transpose, []string{"custom@32", "custom@32"}},
		{"a matmul cell comparing cuda-naive", matmul, []string{"custom@16", "cuda-naive@16"}},
	} {
		g := &emulatingGPU{testGPU: testGPU{nv: nv}}
		rec := runCellOn(t, tc.cell, g)
		if len(rec.RowsOf("emulated")) != len(tc.want) {
			t.Errorf("%s: %d emulated rows, want %d", tc.name, len(rec.RowsOf("emulated")), len(tc.want))
		}
		if !slices.Equal(g.launches, tc.want) {
			t.Errorf("%s: the host ran %v, want %v", tc.name, g.launches, tc.want)
		}
	}
	g := &emulatingGPU{testGPU: testGPU{nv: nv}}
	p := newShowPTX(cells.Env{Kernels: gpuAvailable(), Limits: harness.DefaultLimits(), GPU: g}, mustParse(t, transpose))
	if err := p.Run(context.Background(), &cellstest.Recorder{}); err != nil {
		t.Fatal(err)
	}
	if want := []string{"custom@32"}; !slices.Equal(g.launches, want) {
		t.Errorf("Show PTX: the host ran %v, want %v", g.launches, want)
	}
}

// A variant that changes only the registers assumed launches nothing of its own: its rows are the
// cell's launches (one per size), with its own occupancy; a variant's own dynamic
// shared memory still launches.
func TestRegistersVariantSharesTheCellsLaunch(t *testing.T) {
	nv, err := kcuda.LoadNVRTC()
	if err != nil {
		t.Skipf("skipping: no NVRTC (%v)", err)
	}
	cell := strings.Replace(tiledTransposeCell, "sizes: [40, 64]", "sizes: [32, 40]\nvariants: [{registers: 128}, {shared_bytes: \"n*8\"}]", 1) + pt.TiledTranspose
	g := &emulatingGPU{testGPU: testGPU{nv: nv}}
	rec := runCellOn(t, cell, g)
	if want := []string{"custom@32", "custom@40", "custom@32", "custom@40"}; !slices.Equal(g.launches, want) {
		t.Errorf("the host ran %v, want %v (the cell's, then the shared_bytes variant's)", g.launches, want)
	}
	rows, col := rec.RowsOf("emulated"), occupancyColumn(rec)
	if len(rows) != 6 {
		t.Fatalf("%d emulated rows, want 6", len(rows))
	}
	for i, r := range rows {
		text, _ := r.Values[col].(string)
		if assumed := strings.Contains(text, "128 registers assumed"); assumed != (i == 2 || i == 3) || r.Bad {
			t.Errorf("row %d (%v): occupancy %q; want 128 registers assumed in rows 2 and 3 only, and ok", i, r.Values[0], text)
		}
		// The emulation time (the last column) is this CPU's, measured: the registers variant's rows
		// emulated nothing.
		if secs, _ := r.Values[len(r.Values)-1].(float64); (secs == 0) != (i == 2 || i == 3) {
			t.Errorf("row %d (%v): emulation %v s; want 0 in rows 2 and 3 only", i, r.Values[0], secs)
		}
	}
}

// A server's GPU host runs its cells' launches itself (vgpurun.Run): it is no vgpurun.Emulator,
// which only tests' hosts are.
func TestServersHostIsNoEmulator(t *testing.T) {
	var host cells.GPU = &gpu.Machine{}
	if _, ok := host.(vgpurun.Emulator); ok {
		t.Error("*gpu.Machine is a vgpurun.Emulator: a learner's launches would not run as vgpurun.Run runs them")
	}
}
