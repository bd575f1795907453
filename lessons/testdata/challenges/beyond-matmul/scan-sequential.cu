kernel: scan_tiles
problem: scan
block: [1024]
grid: [1]
sizes: [65536]
---
extern "C" __global__ void scan_tiles(const float* in, float* out, int n) {
    __shared__ float s[1024];                // one tile: blockDim.x is 1024
    int t = threadIdx.x;
    float carry = 0.0f;                      // the sum of every tile before this one
    for (int base = 0; base < n; base += blockDim.x) {
        int i = base + t;
        s[t] = i < n ? in[i] : 0.0f;         // a coalesced load of the tile
        __syncthreads();
        for (int o = 1; o < blockDim.x; o <<= 1) {   // Hillis–Steele: log2(1024) = 10 steps
            float v = t >= o ? s[t - o] : 0.0f;
            __syncthreads();                 // all have read before anyone writes
            s[t] += v;
            __syncthreads();
        }
        if (i < n) out[i] = carry + s[t];    // a coalesced store
        carry += s[blockDim.x - 1];          // the tile's total, for the next tile
        __syncthreads();                     // all have read s before the next tile overwrites it
    }
}
