// atomics.cu: the rate of global atomicAdd on an H100 for three patterns, timed with events (the
// third of three launches), for gpumodel.Model's atomics term (docs/vgpu-metrics.md):
//
//	nvcc -O3 -arch=sm_90 -o /tmp/atomics bench/gpucheck/atomics.cu && /tmp/atomics
//
// kernel 0: every thread adds to one float (all updates serialise at one address); 1: the same
// with ints (the compiler reduces each warp first); 2: every thread its own float; 3: each warp's
// 32 lanes add to one float of their own. 1024 blocks of 256 threads, 16 adds each.
#include <cstdio>
__global__ void same(float *x, int reps) { for (int r = 0; r < reps; r++) atomicAdd(x, 1.0f); }
__global__ void sameInt(int *x, int reps) { for (int r = 0; r < reps; r++) atomicAdd(x, threadIdx.x); }
__global__ void distinct(float *x, int reps) { int i = blockIdx.x * blockDim.x + threadIdx.x; for (int r = 0; r < reps; r++) atomicAdd(&x[i], 1.0f); }
__global__ void perWarp(float *x, int reps) { int i = (blockIdx.x * blockDim.x + threadIdx.x) / 32; for (int r = 0; r < reps; r++) atomicAdd(&x[i * 32], 1.0f); }
int main() {
  float *x; cudaMalloc(&x, 64 << 20); cudaMemset(x, 0, 64 << 20);
  cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
  const int B = 1024, T = 256, R = 16;
  for (int k = 0; k < 4; k++) for (int it = 0; it < 3; it++) {
    cudaEventRecord(a);
    if (k == 0) same<<<B, T>>>(x, R);
    if (k == 1) sameInt<<<B, T>>>((int *)x, R);
    if (k == 2) distinct<<<B, T>>>(x, R);
    if (k == 3) perWarp<<<B, T>>>(x, R);
    cudaEventRecord(b); cudaEventSynchronize(b);
    float ms; cudaEventElapsedTime(&ms, a, b);
    double ops = (double)B * T * R;
    if (it == 2) printf("kernel %d: %.1f us, %.3g atomics, %.3g atomics/s\n", k, ms * 1e3, ops, ops / (ms * 1e-3));
  }
  printf("%s\n", cudaGetErrorString(cudaGetLastError()));
}
