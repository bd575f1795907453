package cuda

import (
	"context"
	"math"
	"strings"
	"testing"

	kcuda "github.com/gpuplayground/playground/gpu/nvidia"
	"github.com/gpuplayground/playground/gpumodel"
	"github.com/gpuplayground/playground/problems"
	pt "github.com/gpuplayground/playground/problems/problemstest"
	"github.com/gpuplayground/playground/vgpurun"
)

// termSeconds is m's term named name (0 where it has none).
func termSeconds(m gpumodel.Time, name string) float64 {
	for _, t := range m.Terms {
		if t.Name == name {
			return t.Seconds
		}
	}
	return 0
}

// Assumed registers set the occupancy as the calculator does and the modelled time with it: on an
// H100, 111 registers per thread in blocks of 256 threads leave 16 warps per SM (25%, limited by
// registers), so the latency term, Little's law over the warps resident, is longer than the one at
// the 64 warps the launch had without registers (its grid, sampled, has more warps than 64 per
// SM), but less than 4 times it: the resident blocks are in step (gpumodel's inStep), so a
// quarter of the warps also issue in step after each wait in a quarter of the time (2.0 times on
// 2026-11-29; exactly 4 while each block's waits were taken to be hidden by the others); the rate
// scales with the time; and a block that
// cannot have that many registers does not launch.
func TestAssumedRegisters(t *testing.T) {
	nv, err := kcuda.LoadNVRTC()
	if err != nil {
		t.Skipf("skipping: no NVRTC (%v)", err)
	}
	ptx, err := kcuda.CompileArch(nv, pt.TiledTranspose, "cell.cu", 80)
	if err != nil {
		t.Fatal(err)
	}
	p, err := problems.Lookup("transpose")
	if err != nil {
		t.Fatal(err)
	}
	g := gpumodel.GPUs[0]
	block := [3]int{32, 8, 1}
	res, err := vgpurun.Run(context.Background(), vgpurun.Request{Kernel: "custom", PTX: ptx, Entry: "k", Problem: p,
		Grid: [3]int{64, 64, 1}, Block: block, N: 2048, DType: "float32", GPU: g, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Occupancy.Result.WarpsPerSM; got != 64 {
		t.Fatalf("without registers: %d warps per SM, want 64", got)
	}
	got, err := assumeRegisters(res, 111, block, g)
	if err != nil {
		t.Fatal(err)
	}
	if o := got.Occupancy; o.Result.WarpsPerSM != 16 || o.Result.Limiting() != "registers" || o.Text != "25% (registers; 111 registers assumed)" {
		t.Errorf("occupancy: got %d warps, %q, %q; want 16, registers, 25%% … assumed", o.Result.WarpsPerSM, o.Result.Limiting(), o.Text)
	}
	before, after := termSeconds(res.Model, "latency"), termSeconds(got.Model, "latency")
	if before <= 0 || after/before <= 1.5 || after/before >= 4 {
		t.Errorf("latency term: got %g s with registers, %g s without; want between 1.5 and 4 times", after, before)
	}
	if a, b := got.Rate*got.Model.Seconds, res.Rate*res.Model.Seconds; math.Abs(a-b) > 1e-9*b {
		t.Errorf("rate × time: got %g, want %g (the same work)", a, b)
	}
	if _, err := assumeRegisters(res, 255, [3]int{1024, 1, 1}, g); err == nil || !strings.Contains(err.Error(), "does not launch") {
		t.Errorf("255 registers in blocks of 1024: got %v, want does not launch", err)
	}
}

// A cell's registers: key reaches its emulated row: the occupancy column says they are assumed.
func TestRegistersKeyInTheRow(t *testing.T) {
	cell := strings.Replace(tiledTransposeCell, "sizes:", "registers: 111\nsizes:", 1) + pt.TiledTranspose
	rec, _ := runCell(t, cell, false)
	rows := rec.RowsOf("emulated")
	if len(rows) != 2 {
		t.Fatalf("got %d emulated rows, want 2", len(rows))
	}
	col := -1
	for i, c := range rec.Tables[0].Columns {
		if strings.HasPrefix(c.Label, "occupancy") {
			col = i
		}
	}
	for _, r := range rows {
		if got := r.Values[col]; got != "25% (registers; 111 registers assumed)" {
			t.Errorf("occupancy: got %v, want 25%% (registers; 111 registers assumed)", got)
		}
	}
}
