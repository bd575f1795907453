package gpu

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/gpuplayground/playground/gpu/nvidia"
	"github.com/gpuplayground/playground/harness"
)

// requireGPU skips (always, CI included: CI has no GPU) when this machine has no CUDA device.
func requireGPU(t *testing.T) {
	t.Helper()
	r := nvidia.Probe()
	if r.Unavailable != "" {
		t.Skipf("skipping GPU test: %s", r.Unavailable)
	}
	t.Logf("GPU: %s; libraries %+v", r.Summary(), r.Libraries)
}

// On a GPU machine: every GPU kernel, through the real worker, at an even and a ragged size, in
// each precision it supports, gives a correct result and a positive time.
// Build here, run there: CGO_ENABLED=0 go test -c -o build/gpu.test ./gpu; build/gpu.test -test.run GPU -test.v
func TestGPURunsEveryKernel(t *testing.T) {
	requireGPU(t)
	checkEveryKernel(t, realWorker(t), []int{256, 100, 1100})
}

// checkEveryKernel runs every GPU kernel of the table (gpu/nvidia/ladder.go) through s at each
// size, in each dtype it takes, and wants a correct, timed result with one progress line per launch
// and the copies timed. The Hopper rungs (compute_90a PTX) run where the device is sm_90; on any
// other the worker refuses them (TestHopperRungsRefusedOffSM90).
func checkEveryKernel(t *testing.T, s *Supervisor, sizes []int) {
	t.Helper()
	r := Probe(context.Background(), s)
	for _, row := range nvidia.Kernels() {
		kernel := row.Name
		if row.Arch != "" && (len(r.Devices) == 0 || r.Devices[0].ComputeCapability != 90) {
			continue
		}
		for _, n := range sizes {
			for _, dtype := range row.DTypes {
				t.Run(fmt.Sprintf("%s/%s/n=%d", kernel, dtype, n), func(t *testing.T) {
					var res *harness.Result
					progress := 0
					err := s.Do(context.Background(), Request{Op: "run", Kernel: kernel, N: n, DType: dtype, Repeats: 3, Transfers: true},
						func(r Response) {
							if r.Progress != nil {
								progress++
							}
							if r.Result != nil {
								res = r.Result
							}
						})
					if err != nil {
						t.Fatal(err)
					}
					if res == nil || !res.OK || !(res.Seconds > 0) || progress != 4 || !(res.H2DSeconds > 0) {
						t.Errorf("got %+v after %d progress lines, want ok, timed, 4 progress lines, copies timed", res, progress)
					}
					t.Logf("%s n=%d %s: %.1f GFLOP/s, rel error %.2g, copies %.2f GB/s", kernel, n, dtype, res.GFLOPS, res.RelError, res.TransferGBps)
				})
			}
		}
	}
}

// On a GPU machine: a learner's kernel runs as custom; one that writes out of bounds is reported,
// and the next run still works (the worker restarts).
func TestGPUCustomKernelAndFault(t *testing.T) {
	requireGPU(t)
	checkCustomAndFault(t, realWorker(t), func(good string) string {
		return strings.Replace(good, "C[r * N + c] = s;", "C[r * N + c + (1 << 28)] = s;", 1)
	})
}

// checkCustomAndFault runs a learner's kernel as custom, then faulty(kernel), one that writes out of
// bounds, which must come back as a CUDA error, then the good kernel again, which must work in the
// restarted worker.
func checkCustomAndFault(t *testing.T, s *Supervisor, faulty func(good string) string) {
	t.Helper()
	good := `extern "C" __global__ void mm(const float* A, const float* B, float* C, int M, int N, int K) {
    int r = blockIdx.y * blockDim.y + threadIdx.y, c = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < M && c < N) { float s = 0; for (int p = 0; p < K; ++p) s += A[r * K + p] * B[p * N + c]; C[r * N + c] = s; }
}`
	report := Probe(context.Background(), s)
	if report.Unavailable != "" {
		t.Fatal(report.Unavailable)
	}
	nv, err := nvidia.LoadNVRTC()
	if err != nil {
		t.Fatal(err)
	}
	arch, err := nv.ArchFor(report.Devices[0].ComputeCapability)
	if err != nil {
		t.Fatal(err)
	}
	// As a cell does: the source is compiled first (here with NVRTC in the test; in a cell by the
	// sandboxed Compiler), and the worker gets the PTX, never the source.
	run := func(src string, n int) error {
		ptx, err := nvidia.CompileArch(nv, src, "cell.cu", arch)
		if err != nil {
			return err
		}
		g := (n + 15) / 16
		entry := regexp.MustCompile(`void (\w+)\(`).FindStringSubmatch(src)[1]
		return s.Do(context.Background(), Request{Op: "run", Kernel: "custom", N: n, DType: "float32", Repeats: 2,
			PTX: ptx, Entry: entry, Block: [3]int{16, 16, 1}, Grid: [3]int{g, g, 1}}, func(Response) {})
	}
	if err := run(good, 200); err != nil {
		t.Fatalf("correct custom kernel: %v", err)
	}
	err = run(faulty(good), 200)
	if err == nil || !strings.Contains(err.Error(), "CUDA_ERROR") {
		t.Errorf("out-of-bounds kernel: got %v, want a CUDA error", err)
	}
	if err := run(good, 64); err != nil {
		t.Errorf("the run after a fault: %v", err)
	}
}
