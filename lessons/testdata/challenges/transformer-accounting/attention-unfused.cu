#define D 64
#define B 64                                         // queries per block, and keys per tile
extern "C" __global__ void attention(const float* Q, const float* K, const float* V, float* S, float* out, int n, int d) {
    __shared__ float Kt[B * (D + 1)], Vt[B * D];     // one tile of keys and of values (Kt also stages Q and out)
    int t = threadIdx.x, i = blockIdx.x * B + t, base = blockIdx.x * B * D;
    int mine = min(B, n - blockIdx.x * B);           // query rows in this block
    for (int e = t; e < mine * D; e += B) Kt[(e / D) * (D + 1) + e % D] = Q[base + e];  // coalesced
    __syncthreads();
    float q[D], acc[D];
    #pragma unroll
    for (int c = 0; c < D; c++) { q[c] = t < mine ? Kt[t * (D + 1) + c] * rsqrtf((float)D) : 0; acc[c] = 0; }
    float m = -3.0e38f, l = 0;                       // running max and running sum
    for (int j0 = 0; j0 < n; j0 += B) {
        int rows = min(B, n - j0);
        __syncthreads();                             // everyone is done with the last tile
        for (int e = t; e < rows * D; e += B) { Kt[e] = K[j0 * D + e]; Vt[e] = V[j0 * D + e]; }
        __syncthreads();
        for (int jj = 0; jj < rows; jj++) {          // the score never leaves a register
            float s = 0;
            #pragma unroll
            for (int c = 0; c < D; c++) s += q[c] * Kt[jj * D + c];   // one word for the whole warp
            float mj = fmaxf(m, s), fix = expf(m - mj), p = expf(s - mj);
            l = l * fix + p;                         // rescale what was summed under the old max
            #pragma unroll
            for (int c = 0; c < D; c++) acc[c] = acc[c] * fix + p * Vt[jj * D + c];
            m = mj;
        }
    }
    __syncthreads();
    #pragma unroll
    for (int c = 0; c < D; c++) Kt[t * (D + 1) + c] = acc[c] / l;
    __syncthreads();
    for (int e = t; e < mine * D; e += B) out[base + e] = Kt[(e / D) * (D + 1) + e % D];   // coalesced
}
