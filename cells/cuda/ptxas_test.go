package cuda

import (
	"context"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	kcuda "github.com/gpuplayground/playground/gpu/nvidia"
	pt "github.com/gpuplayground/playground/problems/problemstest"
)

// needPtxas finds ptxas; in CI (CI=true, where .ci/run unpacks CUDA 12.4's) a missing one fails the
// test, elsewhere it skips.
func needPtxas(t *testing.T) *kcuda.Ptxas {
	t.Helper()
	p, err := kcuda.FindPtxas()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("ptxas is required in CI: %v", err)
		}
		t.Skipf("skipping: %v", err)
	}
	return p
}

// ptxasRegisters gives ptxas's report of the entry for the GPU's architecture, and nothing for an
// architecture below the PTX's target or an entry the PTX lacks (with more than one).
func TestPtxasRegisters(t *testing.T) {
	p := needPtxas(t)
	nv, err := kcuda.LoadNVRTC()
	if err != nil {
		t.Skipf("skipping: no NVRTC (%v)", err)
	}
	ptx, err := kcuda.CompileArch(nv, pt.TiledTranspose, "cell.cu", 80)
	if err != nil {
		t.Fatal(err)
	}
	want, err := p.Resources(context.Background(), ptx, 90)
	if err != nil {
		t.Fatal(err)
	}
	got, ok := ptxasRegisters(context.Background(), ptx, "k", "9.0")
	if !ok || got != want[0] || got.Registers == 0 || got.Arch != "sm_90" {
		t.Errorf("got %+v (%v), want %+v", got, ok, want[0])
	}
	if got, ok := ptxasRegisters(context.Background(), ptx, "k", "7.5"); ok {
		t.Errorf("compute_80 PTX for sm_75: got %+v, want nothing", got)
	}
	two := ptx + strings.Replace(ptx[strings.Index(ptx, ".visible .entry"):], ".entry k(", ".entry k2(", 1)
	if got, ok := ptxasRegisters(context.Background(), two, "other", "9.0"); ok {
		t.Errorf("an entry the PTX lacks: got %+v, want nothing", got)
	}
}

// Without registers:, a cell's emulated rows have the occupancy of the registers ptxas allocates for
// the datasheet GPU's architecture, labelled so, not the bound without registers.
func TestPtxasRegistersInTheRow(t *testing.T) {
	needPtxas(t)
	rec, _ := runCell(t, tiledTransposeCell+pt.TiledTranspose, false)
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
	form := regexp.MustCompile(`^[0-9.]+% \(\w[\w ]*; (\d+) registers: ptxas sm_90\)$`)
	for _, r := range rows {
		text, _ := r.Values[col].(string)
		m := form.FindStringSubmatch(text)
		if m == nil {
			t.Errorf("occupancy: got %v, want N%% (…; R registers: ptxas sm_90)", r.Values[col])
			continue
		}
		if regs, _ := strconv.Atoi(m[1]); regs < 1 || regs > MaxRegisters {
			t.Errorf("occupancy: %d registers", regs)
		}
	}
}
