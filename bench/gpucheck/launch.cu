// launch: runs every one of the playground's own GPU kernels from their embedded PTX
// (gpu/nvidia/ptx), as the GPU worker launches them for a float32 cell (gpu/run.go: entry point for
// the device's compute capability, BF16/FP16 inputs zero-padded for the tensor-core rungs, grid and
// block of the kernel table), plus a few memory-bound kernels that a course teaches (copy, transpose
// naive/tiled/padded, a reduction), so that Nsight Compute can read their hardware counters. The own
// kernels come from kernels.gen.h, generated from the one table (gpu/nvidia/ladder.go) by
// `go run ./gpu/nvidia/internal/genlaunch`: a new row of the table needs nothing here.
// Built on the GPU machine by bench/gpucheck/run.sh with nvcc:
//   nvcc -O3 -arch=sm_90 -o launch bench/gpucheck/launch.cu -lcuda
//   launch PTX N [repeats]    prints one line per kernel: entry, n, grid, block, median seconds (or
//                             why an own kernel was skipped: compute capability below its MinCC, or
//                             its entry point not in PTX)
//   launch -entries [tiled]   prints the own kernels' entry points (both of a kernel with an older
//                             one), joined by '|' for ncu's -k regex:; "tiled": only those with a
//                             fixed block (not AnyBlock). Needs no GPU.
#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "kernels.gen.h"

#define CK(x) do { CUresult r = (x); if (r != CUDA_SUCCESS) { const char* s; cuGetErrorName(r, &s); fprintf(stderr, "%s: %s\n", #x, s); exit(1); } } while (0)
#define RK(x) do { cudaError_t r = (x); if (r != cudaSuccess) { fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(r)); exit(1); } } while (0)

__global__ void mem_copy(const float* in, float* out, int rows, int cols) {
    int c = blockIdx.x * blockDim.x + threadIdx.x, r = blockIdx.y * blockDim.y + threadIdx.y;
    if (r < rows && c < cols) out[r * cols + c] = in[r * cols + c];
}
__global__ void transpose_naive(const float* in, float* out, int rows, int cols) {
    int c = blockIdx.x * blockDim.x + threadIdx.x, r = blockIdx.y * blockDim.y + threadIdx.y;
    if (r < rows && c < cols) out[c * rows + r] = in[r * cols + c];
}
template <int PAD>
__global__ void transpose_tiled(const float* in, float* out, int rows, int cols) {
    __shared__ float t[32][32 + PAD];
    int c = blockIdx.x * 32 + threadIdx.x, r0 = blockIdx.y * 32;
    for (int j = threadIdx.y; j < 32; j += blockDim.y)
        if (r0 + j < rows && c < cols) t[j][threadIdx.x] = in[(r0 + j) * cols + c];
    __syncthreads();
    int oc = r0 + threadIdx.x, or0 = blockIdx.x * 32;
    for (int j = threadIdx.y; j < 32; j += blockDim.y)
        if (or0 + j < cols && oc < rows) out[(or0 + j) * rows + oc] = t[threadIdx.x][j];
}
__global__ void reduce_smem(const float* in, float* out, int n) {
    __shared__ float s[256];
    float v = 0;
    for (int i = blockIdx.x * 256 + threadIdx.x; i < n; i += gridDim.x * 256) v += in[i];
    s[threadIdx.x] = v;
    __syncthreads();
    for (int k = 128; k > 0; k >>= 1) {
        if (threadIdx.x < k) s[threadIdx.x] += s[threadIdx.x + k];
        __syncthreads();
    }
    if (threadIdx.x == 0) atomicAdd(out, s[0]);
}
__global__ void reduce_shfl(const float* in, float* out, int n) {
    float v = 0;
    for (int i = blockIdx.x * 256 + threadIdx.x; i < n; i += gridDim.x * 256) v += in[i];
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
    if ((threadIdx.x & 31) == 0) atomicAdd(out, v);
}

static float median(std::vector<float> v) { std::sort(v.begin(), v.end()); return v[v.size() / 2]; }

template <typename F>
static void timed(const char* name, int n, dim3 g, dim3 b, int repeats, F launch) {
    cudaEvent_t s, e; cudaEventCreate(&s); cudaEventCreate(&e);
    launch(); RK(cudaDeviceSynchronize());
    std::vector<float> ms;
    for (int i = 0; i < repeats; i++) {
        cudaEventRecord(s); launch(); cudaEventRecord(e); RK(cudaEventSynchronize(e));
        float t; cudaEventElapsedTime(&t, s, e); ms.push_back(t);
    }
    printf("%s n=%d grid=(%u,%u,%u) block=(%u,%u,%u) median_s=%.6e\n", name, n, g.x, g.y, g.z, b.x, b.y, b.z, median(ms) / 1e3);
}

// entries prints the own kernels' entry points joined by '|' (only the fixed-block ones when tiled).
static void entries(bool tiled) {
    const char* sep = "";
    for (int i = 0; i < GC_NKERNELS; i++) {
        const gc_kernel& k = gc_kernels[i];
        if (tiled && k.any_block) continue;
        printf("%s%s", sep, k.entry); sep = "|";
        if (k.older_entry) printf("|%s", k.older_entry);
    }
    printf("\n");
}

// padded is n rounded up to a multiple of the kernel's pad, the size it runs on (nvidia.Kernel.Shape).
static int padded(const gc_kernel& k, int n) { return (n + k.pad - 1) / k.pad * k.pad; }

static unsigned short bits16(float x, gc_input in) {
    if (in == GC_BF16) { __nv_bfloat16_raw r = __float2bfloat16_rn(x); return r.x; }
    __half_raw r = __float2half_rn(x); return r.x;
}

// upload copies the n×n host matrix x to d as the kernel reads it: m×m (m = n padded) entries of
// type in, zero beyond n, as gpu/host.go's Pad does for the worker.
static void upload(void* d, const std::vector<float>& x, int n, int m, gc_input in) {
    if (in == GC_F32) {
        std::vector<float> p(size_t(m) * m, 0.f);
        for (int r = 0; r < n; r++) std::memcpy(&p[size_t(r) * m], &x[size_t(r) * n], n * sizeof(float));
        RK(cudaMemcpy(d, p.data(), p.size() * sizeof(float), cudaMemcpyHostToDevice));
        return;
    }
    std::vector<unsigned short> p(size_t(m) * m, 0);
    for (int r = 0; r < n; r++)
        for (int c = 0; c < n; c++) p[size_t(r) * m + c] = bits16(x[size_t(r) * n + c], in);
    RK(cudaMemcpy(d, p.data(), p.size() * sizeof(unsigned short), cudaMemcpyHostToDevice));
}

// ownKernels times every own kernel of kernels.gen.h at size n on this device (compute capability cc).
static void ownKernels(CUmodule mod, int cc, int n, int repeats, void* A, void* B, float* C,
                       const std::vector<float>& ha, const std::vector<float>& hb) {
    for (int i = 0; i < GC_NKERNELS; i++) {
        const gc_kernel& k = gc_kernels[i];
        if (cc < k.min_cc) {
            printf("%s skipped: needs compute capability %d.%d, this device is %d.%d\n", k.entry, k.min_cc / 10, k.min_cc % 10, cc / 10, cc % 10);
            continue;
        }
        bool older = k.older_entry && cc < k.older_below;
        const char* entry = older ? k.older_entry : k.entry;
        gc_input in = older ? k.older_input : k.input;
        CUfunction fn;
        CUresult got = cuModuleGetFunction(&fn, mod, entry);
        if (got == CUDA_ERROR_NOT_FOUND) { printf("%s skipped: not in this PTX\n", entry); continue; }
        CK(got);
        int m = padded(k, n);
        upload(A, ha, n, m, in); upload(B, hb, n, m, in);
        dim3 g((m + k.tile[0] - 1) / k.tile[0], (m + k.tile[1] - 1) / k.tile[1]), b(k.block[0], k.block[1], k.block[2]);
        void* args[] = {&A, &B, &C, &m, &m, &m};
        timed(entry, n, g, b, repeats, [&] { CK(cuLaunchKernel(fn, g.x, g.y, g.z, b.x, b.y, b.z, 0, 0, args, 0)); });
    }
}

int main(int argc, char** argv) {
    if (argc >= 2 && std::strcmp(argv[1], "-entries") == 0) { entries(argc > 2 && std::strcmp(argv[2], "tiled") == 0); return 0; }
    if (argc < 3) { fprintf(stderr, "usage: launch PTX N [repeats] | launch -entries [tiled]\n"); return 2; }
    int n = atoi(argv[2]), repeats = argc > 3 ? atoi(argv[3]) : 5;
    if (n < 1 || repeats < 1) { fprintf(stderr, "launch: N and repeats must be positive\n"); return 2; }
    RK(cudaFree(0));
    int dev, major, minor;
    RK(cudaGetDevice(&dev));
    RK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
    RK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev));
    std::ifstream f(argv[1]); std::stringstream ss; ss << f.rdbuf(); std::string ptx = ss.str();
    CUmodule mod; CK(cuModuleLoadData(&mod, ptx.c_str()));
    int mp = n; // the largest size any own kernel runs on
    for (int i = 0; i < GC_NKERNELS; i++) mp = std::max(mp, padded(gc_kernels[i], n));
    size_t bytes = size_t(mp) * mp * sizeof(float);
    std::vector<float> ha(size_t(n) * n), hb(size_t(n) * n);
    for (auto& x : ha) x = float(rand()) / float(RAND_MAX) * 2 - 1;
    for (auto& x : hb) x = float(rand()) / float(RAND_MAX) * 2 - 1;
    float *A, *B, *C; RK(cudaMalloc(&A, bytes)); RK(cudaMalloc(&B, bytes)); RK(cudaMalloc(&C, bytes));
    ownKernels(mod, major * 10 + minor, n, repeats, A, B, C, ha, hb);
    upload(A, ha, n, n, GC_F32); // the memory-bound kernels read A as n×n floats
    // One thread per element for copy and the naive transpose; a 32×32 tile per 32×8 block for the
    // tiled ones (each thread loops over 4 rows).
    dim3 b2(32, 8), g1((n + 31) / 32, (n + 7) / 8), g2((n + 31) / 32, (n + 31) / 32);
    timed("mem_copy", n, g1, b2, repeats, [&] { mem_copy<<<g1, b2>>>(A, C, n, n); });
    timed("transpose_naive", n, g1, b2, repeats, [&] { transpose_naive<<<g1, b2>>>(A, C, n, n); });
    timed("transpose_tiled", n, g2, b2, repeats, [&] { transpose_tiled<0><<<g2, b2>>>(A, C, n, n); });
    timed("transpose_padded", n, g2, b2, repeats, [&] { transpose_tiled<1><<<g2, b2>>>(A, C, n, n); });
    int total = n * n; dim3 g3(std::min((total + 255) / 256, 132 * 8)), b3(256);
    timed("reduce_smem", n, g3, b3, repeats, [&] { reduce_smem<<<g3, b3>>>(A, C, total); });
    timed("reduce_shfl", n, g3, b3, repeats, [&] { reduce_shfl<<<g3, b3>>>(A, C, total); });
    RK(cudaDeviceSynchronize());
    return 0;
}
