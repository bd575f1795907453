kernel: softmax_block
problem: softmax
block: [256]
grid: ["n"]
sizes: [1024]
---
extern "C" __global__ void softmax_block(const float* in, float* out, int rows, int cols) {
    __shared__ float s[32];                  // one partial per warp
    const float* x = in + (size_t)blockIdx.x * cols;   // one block per row
    float* y = out + (size_t)blockIdx.x * cols;
    int t = threadIdx.x, lane = t & 31, warp = t >> 5, warps = blockDim.x >> 5;

    float m = -3.0e38f;                     // 1. the row's max: strided over the row, coalesced
    for (int j = t; j < cols; j += blockDim.x) m = fmaxf(m, x[j]);
    for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
    if (lane == 0) s[warp] = m;
    __syncthreads();
    m = s[0];
    for (int w = 1; w < warps; ++w) m = fmaxf(m, s[w]);
    __syncthreads();                         // everyone has read s before it is reused

    float sum = 0.0f;                        // 2. the sum of exp(x - max), the same way
    for (int j = t; j < cols; j += blockDim.x) sum += __expf(x[j] - m);
    for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
    if (lane == 0) s[warp] = sum;
    __syncthreads();
    sum = 0.0f;
    for (int w = 0; w < warps; ++w) sum += s[w];

    for (int j = t; j < cols; j += blockDim.x) y[j] = __expf(x[j] - m) / sum;   // 3. normalise
}
