kernel: transpose64
problem: transpose
show: [occupancy, modelled]
block: [64, 4]
grid: ["ceil(n/64)", "ceil(n/64)"]
sizes: [4096]
---
#define T 64
extern "C" __global__ void transpose64(const float* in, float* out, int rows, int cols) {
    __shared__ float t[T][T + 1];
    int c = blockIdx.x * T + threadIdx.x, r0 = blockIdx.y * T;
    for (int j = threadIdx.y; j < T; j += blockDim.y)
        if (r0 + j < rows && c < cols) t[j][threadIdx.x] = in[(r0 + j) * cols + c];
    __syncthreads();
    int oc = r0 + threadIdx.x, or0 = blockIdx.x * T;
    for (int j = threadIdx.y; j < T; j += blockDim.y)
        if (or0 + j < cols && oc < rows) out[(or0 + j) * rows + oc] = t[threadIdx.x][j];
}
