package cuda

import (
	"context"
	"strings"
	"testing"

	"github.com/gpuplayground/playground/cells"
	"github.com/gpuplayground/playground/cells/cellstest"
	kcuda "github.com/gpuplayground/playground/gpu/nvidia"
	"github.com/gpuplayground/playground/harness"
)

// clusterSumCell sums with two-block clusters (__cluster_dims__, which NVRTC refuses below
// compute_90) and fences the tensor-core proxy (wgmma.fence: sm_90a only): a cell naming the H100
// compiles it for compute_90a.
const clusterSumCell = `kernel: k
problem: reduce
gpu: H100 SXM
block: [128]
grid: ["2*ceil(n/256)"]
sizes: [1024]
---
extern "C" __global__ void __cluster_dims__(2, 1, 1) k(const float* in, float* out, int n) {
	asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) atomicAdd(out, in[i]);
}
`

// noteWith is the first note of rec that contains s, or "".
func noteWith(rec *cellstest.Recorder, s string) string {
	for _, n := range rec.Notes {
		if strings.Contains(n.Message, s) {
			return n.Message
		}
	}
	return ""
}

// A cell whose datasheet GPU is the H100 compiles for compute_90a, as the server compiles (the
// confined compile worker), ptxas reports sm_90a's registers, and the virtual GPU runs it; the
// same cell naming the A100 compiles for its server's compute_80, where __cluster_dims__ is an
// error on its line.
func TestHopperCellCompilesFor90a(t *testing.T) {
	needPtxas(t)
	if nv, err := kcuda.LoadNVRTC(); err != nil || !nv.ArchSpecific() {
		t.Skipf("skipping: no NVRTC 12 as the default (%v)", err)
	}
	m := workerMachine(t)
	rec := runCellOn(t, clusterSumCell, m)
	if noteWith(rec, "custom: k compiles for compute_90a") == "" {
		t.Errorf("notes %+v: want compute_90a", rec.Notes)
	}
	rows := rec.RowsOf("emulated")
	if len(rows) != 1 || rows[0].Bad {
		t.Fatalf("emulated rows %+v, want one ok", rows)
	}
	if text, _ := rows[0].Values[occupancyColumn(rec)].(string); !strings.Contains(text, "ptxas sm_90a") {
		t.Errorf("occupancy %q: want ptxas's sm_90a registers", text)
	}
	p := newShowPTX(cells.Env{Kernels: gpuAvailable(), Limits: harness.DefaultLimits(), GPU: m}, mustParse(t, clusterSumCell))
	prec := &cellstest.Recorder{}
	if err := p.Run(context.Background(), prec); err != nil || len(prec.Texts) == 0 || !strings.HasPrefix(prec.Texts[0].Title, "PTX of k for compute_90a") {
		t.Errorf("Show PTX: %v, %+v", err, prec.Texts)
	}
	a100 := strings.Replace(clusterSumCell, "gpu: H100 SXM", "gpu: A100 SXM", 1)
	_, err := (&run{env: cells.Env{GPU: m}, spec: mustParse(t, a100)}).compile(context.Background())
	if err == nil || !strings.Contains(err.Error(), "line 8: error") {
		t.Errorf("the A100 cell: got %v, want __cluster_dims__ refused on line 8 (compute_80)", err)
	}
}

func mustParse(t *testing.T, cell string) Spec {
	t.Helper()
	s, err := Parse(cell, gpuAvailable(), harness.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// deviceGPU is a server with a GPU of compute capability cc, whose compiles are NVRTC 12's here.
type deviceGPU struct {
	testGPU
	cc int
}

func (g *deviceGPU) Device() *kcuda.Device {
	return &kcuda.Device{Name: "test GPU", ComputeCapability: g.cc}
}

// On a server whose GPU is not a Hopper, compute_90a PTX is never launched there: the cell says so
// and the virtual GPU runs it; on an sm_90 GPU it is measured.
func TestHopperCellNotLaunchedOnOtherGPUs(t *testing.T) {
	nv, err := kcuda.LoadNVRTCFrom([]string{"libnvrtc.so.12"})
	if err != nil {
		t.Skipf("skipping: no NVRTC 12 (%v)", err)
	}
	ampere := &deviceGPU{testGPU{nv: nv, device: true}, 80}
	rec := runCellOn(t, clusterSumCell, ampere)
	if len(ampere.requests) != 0 {
		t.Errorf("sm_80: %d worker requests, want none", len(ampere.requests))
	}
	if noteWith(rec, "compute_90a PTX, which runs on sm_90 GPUs only, and this server's GPU (test GPU) is sm_80") == "" {
		t.Errorf("sm_80: notes %+v, want why it is emulated only", rec.Notes)
	}
	if rows := rec.RowsOf("emulated"); len(rows) != 1 || rows[0].Bad {
		t.Errorf("sm_80: emulated rows %+v, want one ok", rows)
	}
	hopper := &deviceGPU{testGPU{nv: nv, device: true}, 90}
	runCellOn(t, clusterSumCell, hopper)
	if len(hopper.requests) != 1 {
		t.Errorf("sm_90: %d worker requests, want one", len(hopper.requests))
	}
}

// A compiler without compute_90a (NVRTC 11.8) compiles the H100's cell for compute_90, and the cell
// warns what that loses.
func TestHopperCellOnNVRTC11(t *testing.T) {
	nv, err := kcuda.LoadNVRTCFrom([]string{"libnvrtc.so.11.2"})
	if err != nil {
		t.Skipf("skipping: no NVRTC 11 (%v)", err)
	}
	rec := runCellOn(t, clusterSumCell, &testGPU{nv: nv})
	if noteWith(rec, "compiles for compute_90, not the H100 SXM's compute_90a") == "" {
		t.Errorf("notes %+v: want the compute_90 warning", rec.Notes)
	}
}
