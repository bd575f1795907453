// mma_rate.cu: what one SM's tensor cores and shared memory sustain for the instructions the
// tensor-core rungs use (gpu/nvidia/src/matmul.cu: cuda_mma to cuda_mma_warptile), to check the rates
// the virtual GPU's model prices them at (gpumodel: the "tensor" and "shared" terms):
//   mma     mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 (4,096 FLOPs each) in CH independent
//           accumulator chains per warp, W warps per SM: FLOPs per SM clock; with one warp and one
//           chain, the cycles between dependent mma.sync (their latency)
//   ldm     ldmatrix.sync.aligned.m8n8.x4.shared.b16 (512 bytes a warp, no bank conflict): bytes per
//           SM clock
//   mixed   the cuda_mma_warptile inner step from registers and shared memory alone: per step of 16
//           along K, 4 ldmatrix.x4 of A, 4 ldmatrix.x4.trans of B and 32 mma.sync (a 64×64 warp
//           tile), W warps per SM: FLOPs per SM clock, to compare with the larger (overlap) and the
//           sum (no overlap) of the two rates alone
// One block per SM (grid = the SM count), W·32 threads. Clocks are the clock64() span of each block's
// first warp (the longest is taken; the block's other warps may end a little later, so a rate may
// read about 1% high); seconds are CUDA events; clocks not locked.
//   nvcc -O3 -arch=sm_90 -o mma_rate bench/gpucheck/mma_rate.cu && ./mma_rate
#include <cstdio>
#include <cuda_runtime.h>

#define RK(x) do { cudaError_t r = (x); if (r != cudaSuccess) { fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(r)); return 1; } } while (0)

__device__ __forceinline__ void mma(float (&d)[4], unsigned a0, unsigned a1, unsigned a2, unsigned a3, unsigned b0, unsigned b1) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

__device__ __forceinline__ unsigned smem_addr(const void* p) {
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

template <int CH>
__global__ void mma_loop(float* out, long long* cycles, int iters) {
    const unsigned one = 0x3C003C00u; // two bf16 of 2^-7
    float d[CH][4] = {};
    long long t0 = clock64();
    for (int i = 0; i < iters; i++) {
#pragma unroll
        for (int c = 0; c < CH; c++) mma(d[c], one, one, one, one, one, one);
    }
    long long t1 = clock64();
    float s = 0;
#pragma unroll
    for (int c = 0; c < CH; c++) s += d[c][0] + d[c][1] + d[c][2] + d[c][3];
    out[blockIdx.x * blockDim.x + threadIdx.x] = s;
    if (threadIdx.x == 0) cycles[blockIdx.x] = t1 - t0;
}

__global__ void ldm_loop(unsigned* out, long long* cycles, int iters) {
    __shared__ __align__(16) unsigned short tile[8 * 256];
    for (int i = threadIdx.x; i < 8 * 256; i += blockDim.x) tile[i] = i;
    __syncthreads();
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    unsigned base = smem_addr(tile) + (warp % 8) * 512, x = 0;
    long long t0 = clock64();
    for (int i = 0; i < iters; i++) {
        unsigned r0, r1, r2, r3, a = base + ((lane + i) & 31) * 16; // 32 rows of 16 bytes: no conflict
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
                     : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3) : "r"(a));
        x ^= r0 ^ r1 ^ r2 ^ r3;
    }
    long long t1 = clock64();
    out[blockIdx.x * blockDim.x + threadIdx.x] = x;
    if (threadIdx.x == 0) cycles[blockIdx.x] = t1 - t0;
}

__global__ void mixed_loop(float* out, long long* cycles, int iters) {
    __shared__ __align__(16) unsigned short tile[8 * 256];
    for (int i = threadIdx.x; i < 8 * 256; i += blockDim.x) tile[i] = 0x3C00;
    __syncthreads();
    int lane = threadIdx.x & 31;
    unsigned base = smem_addr(tile) + lane * 16;
    float d[4][8][4] = {};
    long long t0 = clock64();
    for (int i = 0; i < iters; i++) {
        unsigned a[4][4], b[8][2];
#pragma unroll
        for (int m = 0; m < 4; m++)
            asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
                         : "=r"(a[m][0]), "=r"(a[m][1]), "=r"(a[m][2]), "=r"(a[m][3]) : "r"(base + (m & 3) * 512));
#pragma unroll
        for (int n = 0; n < 4; n++)
            asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
                         : "=r"(b[2 * n][0]), "=r"(b[2 * n][1]), "=r"(b[2 * n + 1][0]), "=r"(b[2 * n + 1][1]) : "r"(base + 2048 + n * 512));
#pragma unroll
        for (int m = 0; m < 4; m++)
#pragma unroll
            for (int n = 0; n < 8; n++) mma(d[m][n], a[m][0], a[m][1], a[m][2], a[m][3], b[n][0], b[n][1]);
    }
    long long t1 = clock64();
    float s = 0;
#pragma unroll
    for (int m = 0; m < 4; m++)
#pragma unroll
        for (int n = 0; n < 8; n++) s += d[m][n][0] + d[m][n][1] + d[m][n][2] + d[m][n][3];
    out[blockIdx.x * blockDim.x + threadIdx.x] = s;
    if (threadIdx.x == 0) cycles[blockIdx.x] = t1 - t0;
}

template <typename T>
static int measure(const char* what, void (*k)(T*, long long*, int), int grid, int warps, int iters, double warpWork,
                   const char* unit, T* out, long long* cycles, long long* host) {
    cudaEvent_t s, e;
    RK(cudaEventCreate(&s));
    RK(cudaEventCreate(&e));
    k<<<grid, warps * 32>>>(out, cycles, iters / 10 + 1); // warm-up
    RK(cudaGetLastError());
    RK(cudaDeviceSynchronize());
    RK(cudaEventRecord(s));
    k<<<grid, warps * 32>>>(out, cycles, iters);
    RK(cudaGetLastError()); // a block too large for the registers fails here, not silently
    RK(cudaEventRecord(e));
    RK(cudaEventSynchronize(e));
    float ms = 0;
    RK(cudaEventElapsedTime(&ms, s, e));
    RK(cudaMemcpy(host, cycles, grid * sizeof(long long), cudaMemcpyDeviceToHost));
    long long span = 0;
    for (int i = 0; i < grid; i++) span = host[i] > span ? host[i] : span;
    double perSM = warpWork * warps * iters; // one block per SM
    printf("%-6s warps/SM %2d  %9.1f %s per SM clock  %7.1f T%s/s  %6.2f cycles/iter/warp  clock %.3f GHz\n",
           what, warps, perSM / span, unit, perSM * grid / (ms * 1e-3) / 1e12, unit, double(span) / iters,
           span / (ms * 1e-3) / 1e9);
    return 0;
}

int main() {
    int dev = 0, sms = 0;
    RK(cudaSetDevice(dev));
    RK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    cudaDeviceProp p;
    RK(cudaGetDeviceProperties(&p, dev));
    printf("device %s, sm_%d%d, %d SMs\n", p.name, p.major, p.minor, sms);
    float* outf;
    unsigned* outu;
    long long *cycles, host[4096];
    RK(cudaMalloc(&outf, sms * 1024 * sizeof(float)));
    RK(cudaMalloc(&outu, sms * 1024 * sizeof(unsigned)));
    RK(cudaMalloc(&cycles, sms * sizeof(long long)));
    const double mmaFLOPs = 2.0 * 16 * 8 * 16;
    if (measure("mma1", mma_loop<1>, 1, 1, 1 << 16, mmaFLOPs, "FLOP", outf, cycles, host)) return 1; // latency
    for (int w : {1, 2, 4, 8, 16, 32}) {
        if (measure("mma4", mma_loop<4>, sms, w, 1 << 15, 4 * mmaFLOPs, "FLOP", outf, cycles, host)) return 1;
        if (measure("mma8", mma_loop<8>, sms, w, 1 << 14, 8 * mmaFLOPs, "FLOP", outf, cycles, host)) return 1;
    }
    for (int w : {1, 4, 8, 16, 32})
        if (measure("ldm", ldm_loop, sms, w, 1 << 16, 512.0, "B", outu, cycles, host)) return 1;
    for (int w : {4, 8}) // 16 warps of 64×64 warp tiles need more registers than an SM has
        if (measure("mixed", mixed_loop, sms, w, 1 << 12, 32 * mmaFLOPs, "FLOP", outf, cycles, host)) return 1;
    return 0;
}
