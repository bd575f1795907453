kernel: attention
problem: attention
block: [128]
grid: ["ceil(n/128)"]
sizes: [128, 256]
---
#define D 64
#define BR 128                                     // queries per tile: one per thread
#define BC 16                                      // keys per tile
extern "C" __global__ void attention(const float* Q, const float* K, const float* V, float* S, float* out, int n, int d) {
    __shared__ __align__(16) float Kt[BC * D], Vt[BC * D], T[BR * (D + 1)];   // T stages Q and O
    int t = threadIdx.x, i0 = blockIdx.x * BR, rows = min(BR, n - i0);   // outer loop: one tile of Q per block
    for (int e = t; e < rows * D; e += BR) T[(e / D) * (D + 1) + e % D] = Q[i0 * D + e];
    __syncthreads();
    float q[D], o[D], m = -3.0e38f, l = 0;         // O, m and ℓ stay in registers
    #pragma unroll
    for (int c = 0; c < D; c++) { q[c] = t < rows ? T[t * (D + 1) + c] * rsqrtf((float)D) : 0; o[c] = 0; }
    for (int j0 = 0; j0 < n; j0 += BC) {           // inner loop: every tile of K and V
        int keys = min(BC, n - j0);
        __syncthreads();
        for (int e = t; e < keys * D; e += BR) { Kt[e] = K[j0 * D + e]; Vt[e] = V[j0 * D + e]; }
        __syncthreads();
        if (t >= rows) continue;
        float s[BC], mt = m;
        for (int jj = 0; jj < keys; jj++) {
            s[jj] = 0;
            #pragma unroll
            for (int c = 0; c < D; c++) s[jj] += q[c] * Kt[jj * D + c];
            mt = fmaxf(mt, s[jj]);
        }
        float a = expf(m - mt);                    // rescale once per tile, not normalised
        l *= a;
        #pragma unroll
        for (int c = 0; c < D; c++) o[c] *= a;
        for (int jj = 0; jj < keys; jj++) {
            float p = expf(s[jj] - mt);
            l += p;
            #pragma unroll
            for (int c = 0; c < D; c++) o[c] += p * Vt[jj * D + c];
        }
        m = mt;
    }
    __syncthreads();
    #pragma unroll
    for (int c = 0; c < D; c++) T[t * (D + 1) + c] = o[c] / l;   // divide by ℓ once, at the end
    __syncthreads();
    for (int e = t; e < rows * D; e += BR) out[i0 * D + e] = T[(e / D) * (D + 1) + e % D];
}
