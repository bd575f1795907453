package gpu

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuplayground/playground/gpu/nvidia"
	"github.com/gpuplayground/playground/internal/fakecuda"
)

// A persistent row's grid is one block per SM, at most one per tile, rounded down to whole clusters;
// another row's grid must already be whole clusters.
func TestHopperGrid(t *testing.T) {
	row, _ := nvidia.LookupKernel("cuda-wgmma-persistent") // 256×128 tiles
	l := row.LaunchFor(1024, 90, "float32")                // 4×8 = 32 tiles
	row.Cluster = [3]int{2, 1, 1}
	for _, tt := range []struct{ sms, want int }{{132, 32}, {7, 6}, {1, 2}} {
		if got, err := hopperGrid(row, l, tt.sms); err != nil || got != [3]int{tt.want, 1, 1} {
			t.Errorf("%d SMs: got %v, %v; want (%d, 1, 1)", tt.sms, got, err, tt.want)
		}
	}
	tma, _ := nvidia.LookupKernel("cuda-wgmma-tma") // 128×128 tiles: at n = 384, a 3×3 grid
	tma.Cluster = [3]int{2, 1, 1}
	if _, err := hopperGrid(tma, tma.LaunchFor(384, 90, "float32"), 132); err == nil || !strings.Contains(err.Error(), "not a whole number of [2 1 1] clusters") {
		t.Errorf("a 3×3 grid in 2×1×1 clusters: got %v", err)
	}
}

// A row with a Cluster is launched through cuLaunchKernelEx with that cluster dimension (on the fake
// libcuda, opened in this process, which logs the cluster and refuses a grid of partial clusters).
func TestHopperLauncherClusters(t *testing.T) {
	drv := fakecuda.Driver(t)
	log := filepath.Join(t.TempDir(), "fakecuda.log")
	t.Setenv("FAKECUDA_LOG", log)
	ctx, err := drv.Use(0)
	if err != nil {
		t.Fatal(err)
	}
	d := &device{ctx: ctx, cc: 90, sms: 4}
	row, _ := nvidia.LookupKernel("cuda-wgmma-persistent")
	row.Cluster = [3]int{2, 1, 1}
	l := row.LaunchFor(256, d.cc, "float32") // 2 tiles
	in := l.N * l.N * 2
	var dA, dB, dC nvidia.DevicePtr
	free, err := d.allocABC(&dA, &dB, &dC, in, l.N*l.N*4)
	if err != nil {
		t.Fatal(err)
	}
	defer free()
	launch, err := d.hopperLauncher(row, l, &dA, &dB, &dC, in)
	if err != nil {
		t.Fatal(err)
	}
	if err := launch(); err != nil {
		t.Fatal(err)
	}
	if err := ctx.Synchronize(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	if want := "cuLaunchKernelEx hopper_wgmma_persistent cluster=2,1,1\n"; !strings.Contains(string(b), want) ||
		!strings.Contains(string(b), "cuLaunchKernel hopper_wgmma_persistent grid=2,1,1 block=384,1,1 shared=196672\n") {
		t.Errorf("log %q: want %q and the launch", b, want)
	}
}
