package vgpurun

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/gpuplayground/playground/gpu/nvidia"
	"github.com/gpuplayground/playground/vgpu"
)

// Without the remote arrivals (each block's "empty" mbarriers counting only its own 256 consumers), a
// producer refills a stage while its partner's copy into it is still in flight: the virtual GPU's
// hazard check across the cluster's shared memory faults, naming the multicast. The rung itself,
// in TestHopperRungsExact, runs with no fault.
func TestHopperMulticastNeedsBothBlocksEmpty(t *testing.T) {
	src, _ := nvidia.PTX.ReadFile(nvidia.PTXFile("hopper.cu", nvidia.HopperArch))
	s := string(src)
	i := strings.Index(s, ".entry hopper_wgmma_multicast")
	body := s[i:]
	if !strings.Contains(body, ", 512;") {
		t.Fatal("no empty mbarrier of 512 arrivals in hopper_wgmma_multicast's PTX")
	}
	body = strings.Replace(body, ", 512;", ", 256;", 1) // the count the empty mbarriers are initialised with
	lines := strings.Split(body, "\n")
	for j, l := range lines {
		if strings.Contains(l, "mbarrier.arrive.release.cluster.shared::cluster") {
			lines[j] = ""
		}
	}
	if strings.Join(lines, "\n") == body {
		t.Fatal("no remote mbarrier arrive in hopper_wgmma_multicast's PTX")
	}
	mod, err := vgpu.ParseModule(s[:i] + strings.Join(lines, "\n"))
	if err != nil {
		t.Fatal(err)
	}
	row, _ := nvidia.LookupKernel("cuda-wgmma-multicast")
	const m, n, k = 256, 256, 384
	a, b := quarters(m*k, 1), quarters(k*n, 2)
	A, B, C := vgpu.Uint16Buffer("A", bf16Bits(a)), vgpu.Uint16Buffer("B", bf16Bits(b)), vgpu.NewOutput("C", 4*m*n, vgpu.Poisoned)
	params := append([]vgpu.Arg{vgpu.Ptr(A), vgpu.Ptr(B), vgpu.Ptr(C), vgpu.S32(int32(m)), vgpu.S32(int32(n)), vgpu.S32(int32(k))},
		tableTensorMaps(row.TensorMaps, A, B, m, n, k)...)
	_, err = vgpu.Launch(context.Background(), mod, row.Entry, vgpu.LaunchConfig{Grid: [3]int{1, 2, 1}, Block: row.Block,
		DynamicShared: row.SharedBytes, Params: params, Buffers: []*vgpu.Buffer{A, B, C}})
	var f *vgpu.Fault
	if !errors.As(err, &f) || f.Kind != "hazard" || !strings.Contains(f.Instr+f.OtherInstr, "multicast::cluster") {
		t.Fatalf("got %v, want a hazard naming the multicast copy", err)
	}
}
