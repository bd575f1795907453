// launch: runs the playground's own GPU kernels from their embedded PTX (gpu/nvidia/ptx), with the
// launch shapes of the kernel table (gpu/nvidia/ladder.go), plus a few memory-bound kernels that a
// course teaches (copy, transpose naive/tiled/padded, a reduction), so that Nsight Compute can read
// their hardware counters. Built on the GPU machine by bench/gpucheck/run.sh with nvcc:
//   nvcc -O3 -arch=sm_90 -o launch bench/gpucheck/launch.cu -lcuda
//   launch PTX N [repeats]    prints one line per kernel: name, n, grid, block, median seconds
#include <cuda.h>
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

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

int main(int argc, char** argv) {
    if (argc < 3) { fprintf(stderr, "usage: launch PTX N [repeats]\n"); return 2; }
    int n = atoi(argv[2]), repeats = argc > 3 ? atoi(argv[3]) : 5;
    RK(cudaFree(0));
    std::ifstream f(argv[1]); std::stringstream ss; ss << f.rdbuf(); std::string ptx = ss.str();
    CUmodule mod; CK(cuModuleLoadData(&mod, ptx.c_str()));
    int np = (n + 15) / 16 * 16;
    size_t bytes = size_t(np) * np * sizeof(float);
    std::vector<float> h(size_t(np) * np);
    for (auto& x : h) x = float(rand()) / RAND_MAX * 2 - 1;
    float *A, *B, *C; RK(cudaMalloc(&A, bytes)); RK(cudaMalloc(&B, bytes)); RK(cudaMalloc(&C, bytes));
    RK(cudaMemcpy(A, h.data(), bytes, cudaMemcpyHostToDevice)); RK(cudaMemcpy(B, h.data(), bytes, cudaMemcpyHostToDevice));
    unsigned short *Ah, *Bh; RK(cudaMalloc(&Ah, bytes / 2)); RK(cudaMalloc(&Bh, bytes / 2));
    std::vector<unsigned short> hb(size_t(np) * np, 0x3f00); // bf16 0.5
    RK(cudaMemcpy(Ah, hb.data(), bytes / 2, cudaMemcpyHostToDevice)); RK(cudaMemcpy(Bh, hb.data(), bytes / 2, cudaMemcpyHostToDevice));
    struct K { const char* name; int t0, t1; dim3 b; bool half; } ks[] = {
        {"cuda_naive", 32, 8, dim3(32, 8), false}, {"cuda_coalesced", 32, 8, dim3(32, 8), false},
        {"cuda_smem", 32, 32, dim3(32, 32), false}, {"cuda_blocktile1d", 64, 64, dim3(512), false},
        {"cuda_regblock", 128, 128, dim3(256), false}, {"cuda_vectorized", 128, 128, dim3(256), false},
        {"cuda_warptile", 128, 128, dim3(256), false}, {"cuda_wmma_bf16", 64, 64, dim3(128, 4), true},
    };
    for (auto& k : ks) {
        CUfunction fn; CK(cuModuleGetFunction(&fn, mod, k.name));
        int m = k.half ? np : n;
        dim3 g((m + k.t0 - 1) / k.t0, (m + k.t1 - 1) / k.t1);
        void* a = k.half ? (void*)Ah : (void*)A; void* bb = k.half ? (void*)Bh : (void*)B;
        void* args[] = {&a, &bb, &C, &m, &m, &m};
        timed(k.name, n, g, k.b, repeats, [&] { CK(cuLaunchKernel(fn, g.x, g.y, 1, k.b.x, k.b.y, k.b.z, 0, 0, args, 0)); });
    }
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
