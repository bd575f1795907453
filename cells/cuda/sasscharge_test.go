package cuda

import (
	"strings"
	"testing"

	kcuda "github.com/gpuplayground/playground/gpu/nvidia"
	"github.com/gpuplayground/playground/gpumodel"
	pt "github.com/gpuplayground/playground/problems/problemstest"
	"github.com/gpuplayground/playground/vgpu"
	"github.com/gpuplayground/playground/vgpurun"
)

// chargeSASS models a cell's launch in the SASS its compile counted for the GPU's architecture: a
// PTX line executed by 10⁸ warps that ptxas made two SASS instructions of issues 2·10⁸, the issue
// term (the bound of this launch) doubles and the rate halves with it. SASS counted for another
// architecture, or none, leaves the launch charged PTX instructions, and the cell's note says so
// and why.
func TestChargeSASS(t *testing.T) {
	g := gpumodel.GPUs[0] // H100 SXM, sm_90
	c := vgpu.Counts{WarpInstructions: 1e8, Warps: 1 << 20, Blocks: 1 << 17, GridBlocks: 1 << 17,
		Lines: []vgpu.LineCount{{Line: 3, Text: "add.s64 %rd1, %rd2, %rd3;", Warp: 1e8, Thread: 32e8}}}
	o := gpumodel.Occupancy{Result: gpumodel.OccupancyResult{BlocksPerSM: 8, WarpsPerSM: 64}}
	res := vgpurun.Result{Counts: c, Occupancy: o, Model: gpumodel.ModelAt(c, g, o), Rate: 100}
	lines := &kcuda.PTXLineSASS{Arch: "sm_90", Counts: []int{0, 0, 2}, Copies: []int{0, 0, 1}}

	got := chargeSASS(res, g, ptxasReport{Lines: lines})
	issue := func(m gpumodel.Time) float64 {
		for _, term := range m.Terms {
			if term.Name == "issue" {
				return term.Seconds
			}
		}
		return 0
	}
	if got.SASSInstructions != 2e8 || issue(got.Model) != 2*issue(res.Model) || got.Model.Bound != "issue" {
		t.Errorf("SASS %d, issue %.3g s (%s-bound), want 2e8 and twice the PTX's %.3g s", got.SASSInstructions, issue(got.Model), got.Model.Bound, issue(res.Model))
	}
	if want := res.Rate * res.Model.Seconds / got.Model.Seconds; got.Rate != want {
		t.Errorf("rate %g, want %g", got.Rate, want)
	}
	if note := chargedNote(g, ptxasReport{Lines: lines}); !strings.Contains(note, "charge the SASS instructions ptxas made of each PTX line for sm_90") {
		t.Errorf("note %q", note)
	}
	for _, p := range []ptxasReport{
		{Lines: &kcuda.PTXLineSASS{Arch: "sm_86", Counts: lines.Counts, Copies: lines.Copies}},
		{LinesWhy: "nvdisasm not found (tried here)"},
	} {
		if got := chargeSASS(res, g, p); got.Model.Seconds != res.Model.Seconds || got.SASS != nil {
			t.Errorf("%+v: modelled %.3g s, want the PTX's %.3g s", p, got.Model.Seconds, res.Model.Seconds)
		}
		if note := chargedNote(g, p); !strings.Contains(note, "charge PTX instructions, not SASS (") {
			t.Errorf("%+v: note %q, want it to say PTX and why", p, note)
		}
	}
	if note := chargedNote(g, ptxasReport{LinesWhy: "nvdisasm not found (tried here)"}); !strings.Contains(note, "nvdisasm not found") {
		t.Errorf("note %q, want the reason", note)
	}
}

// A cell compiled as the server compiles it (the confined compile worker with ptxas and nvdisasm:
// sassMachine) is charged the SASS of its own PTX for its datasheet GPU's architecture, and says so.
// nvdisasm and ptxas share gpu.DisassembleTimeout, as Show SASS's do.
func TestCellChargesSASSFromItsCompile(t *testing.T) {
	rec := runCellOn(t, tiledTransposeCell+pt.TiledTranspose, sassMachine(t))
	want := "charge the SASS instructions ptxas made of each PTX line for sm_90"
	for _, n := range rec.Notes {
		if strings.Contains(n.Message, want) {
			return
		}
	}
	t.Errorf("notes %+v: want one saying the model charges sm_90's SASS", rec.Notes)
}
