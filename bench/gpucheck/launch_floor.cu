// launch_floor.cu: the time Nsight Compute's gpu__time_duration gives a launch that does (almost)
// nothing, the floor under every small launch (gpumodel.ModelAt's launch term): an empty kernel in one
// block of one warp, in 256 blocks of 256 threads (the copy's grid at n = 512), and in 2048 blocks,
// and a copy of one float per thread in one block of one warp (one DRAM round trip).
//
//   nvcc -O3 -arch=sm_90 -o /tmp/floor bench/gpucheck/launch_floor.cu   (launches each 3 times)
//   ncu --metrics gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second --csv --page raw /tmp/floor
#include <cstdio>
#include <cuda_runtime.h>

extern "C" __global__ void empty() {}
extern "C" __global__ void one_copy(const float* in, float* out) { out[threadIdx.x] = in[threadIdx.x]; }

int main() {
    float *in, *out;
    cudaMalloc(&in, 1 << 20);
    cudaMalloc(&out, 1 << 20);
    cudaMemset(in, 0, 1 << 20);
    for (int rep = 0; rep < 3; rep++) {
        empty<<<1, 32>>>();
        empty<<<256, 256>>>();
        empty<<<2048, 256>>>();
        one_copy<<<1, 32>>>(in, out);
    }
    cudaError_t err = cudaDeviceSynchronize();
    printf("%s\n", cudaGetErrorString(err));
    return err != cudaSuccess;
}
