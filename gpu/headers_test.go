package gpu

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuplayground/playground/gpu/nvidia"
)

// The confined compile worker reads CUDA's headers (its sandbox allows their folder) with either
// compiler: the one that nvidia.IncludeEnv names first, else the one nvidia.FindHeaders finds.

// compilers runs f once with each compiler: NVRTC 12.4 (the default), NVRTC 11.8 and clang (forced
// with nvidia.CompilerEnv, which the worker inherits), each skipping (failing in CI) without it.
func compilers(t *testing.T, f func(t *testing.T)) {
	t.Helper()
	for _, force := range []string{"nvrtc12", "nvrtc11"} {
		t.Run(force, func(t *testing.T) { needNVRTCVersion(t, force); t.Setenv(nvidia.CompilerEnv, force); f(t) })
	}
	t.Run("clang", func(t *testing.T) { needClang(t); t.Setenv(nvidia.CompilerEnv, "clang"); f(t) })
}

// needNVRTCVersion skips (fails in CI, where .ci/run installs both) without the NVRTC that force
// (one of nvidia.NVRTCVersions' keys) names.
func needNVRTCVersion(t *testing.T, force string) {
	t.Helper()
	if _, err := nvidia.LoadNVRTCFrom([]string{nvidia.NVRTCVersions()[force]}); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is required in CI: %v", force, err)
		}
		t.Skipf("skipping: no %s (%v)", force, err)
	}
}

// A folder named by nvidia.IncludeEnv is searched first: its cuda_fp16.h (here a test's own) is the
// one the worker's compiler reads, through the sandbox.
func TestCompileWorkerReadsTheHeadersFolderFirst(t *testing.T) {
	dir := t.TempDir()
	header := "__device__ int fromTheTestFolder() { return 7; }\n"
	if err := os.WriteFile(filepath.Join(dir, "cuda_fp16.h"), []byte(header), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{dir, filepath.Dir(dir)} { // readable by nobody, whom a root worker becomes
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv(nvidia.IncludeEnv, dir)
	compilers(t, func(t *testing.T) {
		c, _ := realCompiler(t)
		src := "#include <cuda_fp16.h>\nextern \"C\" __global__ void k(int* x) { x[0] = fromTheTestFolder(); }\n"
		ptx, err := c.Compile(context.Background(), src, "cell.cu", "80")
		if err != nil || !strings.Contains(ptx, ".entry k(") {
			t.Fatalf("got %v and %.200q, want PTX with entry k", err, ptx)
		}
	})
}

// mma.h (nvcuda::wmma) compiles in the confined worker with CUDA's real headers.
func TestCompileWorkerWithCUDAHeaders(t *testing.T) {
	if nvidia.FindHeaders(nil) == "" {
		why := "no CUDA headers (cuda_fp16.h) in " + strings.Join(nvidia.HeaderDirs(os.Getenv(nvidia.IncludeEnv), nil), ", ")
		if os.Getenv("CI") == "true" {
			t.Fatal(why)
		}
		t.Skip("skipping: " + why)
	}
	src := `#include <mma.h>
using namespace nvcuda;
extern "C" __global__ void mm(const half* a, const half* b, float* c) {
    wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::col_major> fb;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> fc;
    wmma::fill_fragment(fc, 0.0f);
    wmma::load_matrix_sync(fa, a, 16);
    wmma::load_matrix_sync(fb, b, 16);
    wmma::mma_sync(fc, fa, fb, fc);
    wmma::store_matrix_sync(c, fc, 16, wmma::mem_row_major);
}
`
	compilers(t, func(t *testing.T) {
		c, _ := realCompiler(t)
		dir := nvidia.FindHeaders(nil)
		if v := nvidia.HeadersVersion(dir); os.Getenv(nvidia.CompilerEnv) == "clang" && v != 11080 && os.Getenv("CI") != "true" {
			t.Skipf("skipping: clang with CUDA's headers is tested with CUDA 11.8's (CI's); %s holds CUDA %d's", dir, v)
		}
		ptx, err := c.Compile(context.Background(), src, "cell.cu", "80")
		if err != nil || !strings.Contains(ptx, "wmma.mma.sync") {
			t.Fatalf("got %v and %.300q, want PTX with wmma.mma.sync", err, ptx)
		}
		// Each NVRTC compiles with its own PTX ISA (and its own version's headers).
		if isa := map[string]string{"nvrtc12": ".version 8.4\n", "nvrtc11": ".version 7.8\n"}[os.Getenv(nvidia.CompilerEnv)]; !strings.Contains(ptx, isa) {
			t.Errorf("%s=%s: PTX without %q", nvidia.CompilerEnv, os.Getenv(nvidia.CompilerEnv), isa)
		}
		if strings.Contains(ptx, "/include/") || strings.Contains(ptx, "clang_prelude") {
			t.Errorf("the PTX names a header's folder or the prelude:\n%s", ptx)
		}
	})
}
