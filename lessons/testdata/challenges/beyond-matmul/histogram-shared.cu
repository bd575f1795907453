kernel: hist_aggregated
problem: histogram
show: [atomic requests]
block: [256]
grid: ["min(ceil(n/256), 528)"]
sizes: [1048576]
---
extern "C" __global__ void hist_aggregated(const unsigned int* in, unsigned int* bins, int n) {
    __shared__ unsigned int s[256];
    s[threadIdx.x] = 0;
    __syncthreads();
    int lane = threadIdx.x & 31;
    for (int i0 = blockIdx.x * blockDim.x; i0 < n; i0 += gridDim.x * blockDim.x) {
        int i = i0 + threadIdx.x;
        unsigned int bin = i < n ? in[i] & 255 : 256;
        unsigned int same = __match_any_sync(0xffffffffu, bin);   // the lanes with my bin
        if (bin < 256 && (same & ((1u << lane) - 1)) == 0)               // the first of them adds them all
            atomicAdd(&s[bin], __popc(same));
    }
    __syncthreads();
    if (s[threadIdx.x] > 0) atomicAdd(&bins[threadIdx.x], s[threadIdx.x]);
}
