package gpu

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuplayground/playground/gpu/nvidia"
	"github.com/gpuplayground/playground/internal/fakecuda"
)

// The GPU worker's whole run path on a machine without a GPU, through purego, against
// internal/fakecuda: a strict stand-in for libcuda.so.1 and libcublas.so.13 that computes
// on the host (see its header). It checks what a GPU would check only by crashing: buffer sizes,
// argument order, streams, entry names, cuBLAS's column-major roles, sticky errors and the restart.
// It proves the binding and the worker, not the kernels' speed or their CUDA code (the NVRTC tests
// and the SIMT emulator cover that).

func TestFakeCUDAProbe(t *testing.T) {
	dir := fakecuda.Setup(t)
	r := Probe(context.Background(), realWorker(t))
	if r.Unavailable != "" || len(r.Devices) != 1 {
		t.Fatalf("got %+v, want the fake device", r)
	}
	d := r.Devices[0]
	if d.Name != fakecuda.DeviceName || d.ComputeCapability != 90 || d.SMs != 4 || d.MemoryBytes != 1<<30 || r.Driver != "13.0" {
		t.Errorf("got %+v, driver %s", d, r.Driver)
	}
	// The report names the files loaded: found by the dynamic loader, resolved to the real path.
	paths := map[string]string{}
	for _, l := range r.Libraries {
		paths[l.Name] = l.Path + " via " + l.Via
	}
	for _, name := range []string{"libcuda.so.1", "libcublas.so.13"} {
		if want := filepath.Join(dir, name); !strings.HasPrefix(paths[name], want+" via ") {
			t.Errorf("%s: got %q, want %s", name, paths[name], want)
		}
	}
}

func TestFakeCUDARunsEveryKernel(t *testing.T) {
	fakecuda.Setup(t)
	checkEveryKernel(t, realWorker(t), []int{64, 33})
}

// The worker refuses, before launching, a dtype the table's row does not take and a name not in the
// table.
func TestFakeCUDARefusesWhatTheTableDoesNot(t *testing.T) {
	fakecuda.Setup(t)
	w := realWorker(t)
	for _, tt := range []struct{ kernel, dtype, want string }{
		{"cuda-naive", "float64", "cuda-naive takes float32 matrices only"},
		{"cublas-bf16", "float64", "cublas-bf16 takes float32 matrices only"},
		{"cuda-nonesuch", "float32", `unknown GPU kernel "cuda-nonesuch"`},
	} {
		err := w.Do(context.Background(), Request{Op: "run", Kernel: tt.kernel, N: 32, DType: tt.dtype, Repeats: 1}, func(Response) {})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s in %s: got %v, want %q", tt.kernel, tt.dtype, err, tt.want)
		}
	}
}

func TestFakeCUDACustomKernelAndFault(t *testing.T) {
	fakecuda.Setup(t)
	if _, err := nvidia.LoadNVRTC(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("NVRTC is required in CI: %v", err)
		}
		t.Skipf("skipping: custom kernels need NVRTC (%v)", err)
	}
	// The stand-in faults on a kernel whose name ends in _oob, as a GPU does on a stray store.
	checkCustomAndFault(t, realWorker(t), func(good string) string {
		return strings.Replace(good, "void mm(", "void mm_oob(", 1)
	})
}
