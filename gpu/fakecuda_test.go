package gpu

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuplayground/playground/gpu/nvidia"
	"github.com/gpuplayground/playground/harness"
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

// On the fake libcuda (an sm_90 device, here of one SM) the worker runs each Hopper rung: it loads
// hopper.cu's compute_90a PTX, opts in to the row's dynamic shared memory where it exceeds 48 KiB
// (without which the fake refuses the launch), encodes the row's BF16 maps over the padded inputs,
// passes them by value after (A, B, C, M, N, K), cuts a persistent grid to the SMs and checks C. On a
// fake sm_100 the compute_90a PTX is refused with the reason.
func TestFakeCUDARunsHopperRungs(t *testing.T) {
	fakecuda.Setup(t)
	log := filepath.Join(t.TempDir(), "fakecuda.log")
	t.Setenv("FAKECUDA_LOG", log)
	t.Setenv("FAKECUDA_SMS", "1")
	s := realWorker(t)
	run := func(kernel string, n int) (*harness.Result, error) {
		var res *harness.Result
		err := s.Do(context.Background(), Request{Op: "run", Kernel: kernel, N: n, DType: "float32", Repeats: 1}, func(r Response) {
			if r.Result != nil {
				res = r.Result
			}
		})
		return res, err
	}
	for _, kernel := range []string{"cuda-wgmma", "cuda-wgmma-persistent"} {
		if res, err := run(kernel, 40); err != nil || res == nil || !res.OK {
			t.Fatalf("%s: got %+v, %v; want a checked result", kernel, res, err)
		}
	}
	data, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	got := string(data)
	for _, want := range []string{
		"cuLaunchKernel hopper_wgmma grid=1,1,1 block=256,1,1 shared=0\n", // 40 padded to 48: one 128×128 tile
		// padded to 256: two 256×128 tiles, looped over by one block on the one SM
		"cuLaunchKernel hopper_wgmma_persistent grid=1,1,1 block=384,1,1 shared=196672\n",
		"dtype=9 rank=2 dims=256,256 strides=512 box=64,128 elementStrides=1,1 interleave=0 swizzle=3 l2=2 oob=0\n",
		"dtype=9 rank=2 dims=256,256 strides=512 box=64,64 elementStrides=1,1 interleave=0 swizzle=3 l2=2 oob=0\n",
		"cuLaunchKernel hopper_wgmma_persistent param=6 map=",
		"cuLaunchKernel hopper_wgmma_persistent param=7 map=",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("log lacks %q:\n%s", want, got)
		}
	}
	t.Setenv("FAKECUDA_CC", "100")
	s100 := realWorker(t)
	err = s100.Do(context.Background(), Request{Op: "run", Kernel: "cuda-wgmma-ws", N: 40, DType: "float32", Repeats: 1}, func(Response) {})
	if err == nil || !strings.Contains(err.Error(), "runs on sm_90 only; this GPU is sm_100") {
		t.Errorf("sm_100: got %v, want the refusal", err)
	}
}
