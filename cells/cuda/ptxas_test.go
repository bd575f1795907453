package cuda

import (
	"context"
	"fmt"
	"os"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/gpuplayground/playground/cells/cellstest"
	"github.com/gpuplayground/playground/gpu"
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

// ptxasRegisters picks from ptxas's report the entry for the GPU's architecture: by its name, by
// its C++ mangled name, or the only one; nothing for an architecture the report lacks (ptxas
// refused it: compute_80 PTX for sm_75) or an entry the report lacks (with more than one).
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
	res, err := p.Resources(context.Background(), ptx, 90)
	if err != nil {
		t.Fatal(err)
	}
	got, ok := ptxasRegisters(res, "k", "9.0")
	if !ok || got != res[0] || got.Registers == 0 || got.Arch != "sm_90" {
		t.Errorf("got %+v (%v), want %+v", got, ok, res[0])
	}
	if _, err := p.Resources(context.Background(), ptx, 75); err == nil {
		t.Error("ptxas assembled compute_80 PTX for sm_75")
	}
	if got, ok := ptxasRegisters(res, "k", "7.5"); ok {
		t.Errorf("a report for sm_90 read for sm_75: got %+v, want nothing", got)
	}
	two := append(res, kcuda.EntryResources{Entry: "k2", Arch: "sm_90", Registers: 99})
	if got, ok := ptxasRegisters(two, "other", "9.0"); ok {
		t.Errorf("an entry the report lacks: got %+v, want nothing", got)
	}
	if got, ok := ptxasRegisters(two, "k2", "9.0"); !ok || got.Registers != 99 {
		t.Errorf("k2: got %+v (%v), want its 99 registers", got, ok)
	}
	mangled := []kcuda.EntryResources{{Entry: "_Z1kPf", Arch: "sm_90", Registers: 12}, {Entry: "_Z2k2Pf", Arch: "sm_90", Registers: 99}}
	if got, ok := ptxasRegisters(mangled, "k", "9.0"); !ok || got.Registers != 12 {
		t.Errorf("k declared without extern \"C\": got %+v (%v), want _Z1kPf's 12 registers", got, ok)
	}
}

// sassGPU is a testGPU whose compile also asks for ptxas's report (as gpu.Machine's does), and
// keeps the architectures asked for; it answers with report.
type sassGPU struct {
	testGPU
	report []kcuda.EntryResources
	asked  [][]int
}

func (g *sassGPU) CompileSass(ctx context.Context, src, name, arch string, sass []int) (gpu.Compiled, error) {
	g.asked = append(g.asked, sass)
	ptx, err := g.Compile(ctx, src, name, arch)
	return gpu.Compiled{PTX: ptx, Resources: g.report}, err
}

// The cell asks the compile for ptxas's report for its datasheet GPU's architecture (sm_80 for an
// A100), and its rows read the registers from that report, never from a ptxas of their own.
func TestCellAsksTheCompileForPtxas(t *testing.T) {
	nv, err := kcuda.LoadNVRTC()
	if err != nil {
		t.Skipf("skipping: no NVRTC (%v)", err)
	}
	g := &sassGPU{testGPU: testGPU{nv: nv}, report: []kcuda.EntryResources{{Entry: "k", Arch: "sm_80", Registers: 40}}}
	rec := runCellOn(t, "gpu: A100 SXM\n"+tiledTransposeCell+pt.TiledTranspose, g)
	if len(g.asked) != 1 || !reflect.DeepEqual(g.asked[0], []int{80}) {
		t.Errorf("the compile was asked for %v, want once for [80]", g.asked)
	}
	rows := rec.RowsOf("emulated")
	if len(rows) == 0 {
		t.Fatal("no emulated rows")
	}
	col := occupancyColumn(rec)
	for _, r := range rows {
		if text, _ := r.Values[col].(string); !strings.HasSuffix(text, "; 40 registers: ptxas sm_80)") {
			t.Errorf("occupancy: got %q, want the report's 40 registers for sm_80", text)
		}
	}
}

func occupancyColumn(rec *cellstest.Recorder) int {
	col := -1
	for i, c := range rec.Tables[0].Columns {
		if strings.HasPrefix(c.Label, "occupancy") {
			col = i
		}
	}
	return col
}

// Without registers:, a cell's emulated rows have the occupancy of the registers ptxas allocates for
// the datasheet GPU's architecture, labelled so, not the bound without registers: compiled as the
// server compiles (gpu.Machine: a confined worker, this test binary, runs the compiler and ptxas).
func TestPtxasRegistersInTheRow(t *testing.T) {
	needPtxas(t)
	if _, err := kcuda.LoadNVRTC(); err != nil {
		t.Skipf("skipping: no NVRTC (%v)", err)
	}
	rec := runCellOn(t, tiledTransposeCell+pt.TiledTranspose, workerMachine(t))
	rows := rec.RowsOf("emulated")
	if len(rows) != 2 {
		t.Fatalf("got %d emulated rows, want 2", len(rows))
	}
	col := occupancyColumn(rec)
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

// workerMachine is a server without a device that compiles as the server does: through the confined
// compile worker, this test binary (TestMain). The tests share one (workers), which keeps its
// compiles with SASS per line.
func workerMachine(t *testing.T) *keptCompiles {
	t.Helper()
	workers.once.Do(func() {
		exe, err := os.Executable()
		workers.m, workers.err = &keptCompiles{Machine: &gpu.Machine{Worker: &gpu.Supervisor{Transport: gpu.Exec{Path: exe, Args: []string{gpu.WorkerCommand}}},
			Report: kcuda.Report{Unavailable: "no CUDA device (test)"}}}, err
	})
	if workers.err != nil {
		t.Fatal(workers.err)
	}
	return workers.m
}

// workers is the server's GPU the tests that compile through the compile worker share
// (workerMachine).
var workers struct {
	once sync.Once
	m    *keptCompiles
	err  error
}

// keptCompiles is a gpu.Machine whose compiles with SASS per PTX line (what a cell's run and its
// Show PTX ask of the server's worker: compileSass) are kept by request: tests that run the same
// cell through the worker share its one compile, NVRTC, ptxas and nvdisasm in the worker (about
// 0.5 CPU s a cell).
type keptCompiles struct {
	*gpu.Machine
	mu   sync.Mutex
	done map[string]keptCompile
}

// keptCompile is one compile's result and error.
type keptCompile struct {
	c   gpu.Compiled
	err error
}

// CompileSassLines is gpu.Machine's, or what the same request got before.
func (k *keptCompiles) CompileSassLines(ctx context.Context, source, name, arch string, sm int) (gpu.Compiled, error) {
	key := fmt.Sprintf("%q %q %q %d", source, name, arch, sm)
	k.mu.Lock()
	c, ok := k.done[key]
	k.mu.Unlock()
	if ok {
		return c.c, c.err
	}
	c.c, c.err = k.Machine.CompileSassLines(ctx, source, name, arch, sm)
	if ctx.Err() != nil {
		return c.c, c.err
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.done == nil {
		k.done = map[string]keptCompile{}
	}
	k.done[key] = c
	return c.c, c.err
}
