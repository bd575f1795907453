// The playground's own CUDA GEMM kernels: C = A·B with A M×K, B K×N and C M×N, all row-major.
// Compiled at run time by NVRTC for the device's compute capability (or loaded from the PTX that
// `go generate ./gpu/nvidia` made from this file). No headers: NVRTC on a driver-only machine has
// none, so half/bf16 data travels as raw 16-bit words and the tensor-core kernel writes its WMMA
// instructions as inline PTX (PTX ISA, "Warp Level Matrix Multiply-Accumulate Instructions").
// The block and grid beside each kernel are those of the GPU kernel table, gpu/nvidia/ladder.go
// (rendered in docs/gpu-kernels.md), which the worker launches with; a test checks them against it.

// cuda_naive: one thread per element of C, with threadIdx.x running down a COLUMN of C. The 32
// threads of a warp read 32 different rows of A (K floats apart) and write 32 different rows of C,
// so no access is coalesced. Block (32, 8); grid (ceil(M/32), ceil(N/8)).
extern "C" __global__ void cuda_naive(const float* A, const float* B, float* C, int M, int N, int K) {
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    int col = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < M && col < N) {
        float sum = 0.0f;
        for (int p = 0; p < K; ++p) sum += A[row * K + p] * B[p * N + col];
        C[row * N + col] = sum;
    }
}

// cuda_coalesced: the same arithmetic with threadIdx.x running along a ROW of C. A warp now reads 32
// consecutive floats of a row of B and writes 32 consecutive floats of C (one 128-byte transaction
// each), and all its threads read the same element of A (a broadcast).
// Block (32, 8); grid (ceil(N/32), ceil(M/8)).
extern "C" __global__ void cuda_coalesced(const float* A, const float* B, float* C, int M, int N, int K) {
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < M && col < N) {
        float sum = 0.0f;
        for (int p = 0; p < K; ++p) sum += A[row * K + p] * B[p * N + col];
        C[row * N + col] = sum;
    }
}

// cuda_smem: shared-memory tiling. Each 32×32 thread block stages a 32×32 tile of A and of B in
// shared memory, then every thread reads them 32 times from there instead of from global memory.
// Out-of-range elements load as zero, so any M, N, K works. Block (32, 32); grid (ceil(N/32), ceil(M/32)).
#define SMEM_TILE 32
extern "C" __global__ void cuda_smem(const float* A, const float* B, float* C, int M, int N, int K) {
    __shared__ float As[SMEM_TILE][SMEM_TILE];
    __shared__ float Bs[SMEM_TILE][SMEM_TILE];
    int tx = threadIdx.x, ty = threadIdx.y;
    int row = blockIdx.y * SMEM_TILE + ty;
    int col = blockIdx.x * SMEM_TILE + tx;
    float sum = 0.0f;
    for (int k0 = 0; k0 < K; k0 += SMEM_TILE) {
        As[ty][tx] = (row < M && k0 + tx < K) ? A[row * K + k0 + tx] : 0.0f;
        Bs[ty][tx] = (k0 + ty < K && col < N) ? B[(k0 + ty) * N + col] : 0.0f;
        __syncthreads();
        for (int p = 0; p < SMEM_TILE; ++p) sum += As[ty][p] * Bs[p][tx];
        __syncthreads();
    }
    if (row < M && col < N) C[row * N + col] = sum;
}

// cuda_regblock: 2-D register blocking. A block of 256 threads computes a 128×128 tile of C; each
// thread keeps 8×8 accumulators in registers: 8 consecutive rows, and 8 columns 16 apart (so a warp
// reads 16 consecutive words of the B tile: consecutive columns per thread would put them on 4 banks). Per step of 8 along K, the block stages
// A (128×8, stored transposed) and B (8×128) in shared memory; each thread then loads 8 values of A
// and 8 of B into registers and does 64 FMAs with them: 4 FLOPs per shared-memory load instead of
// cuda_smem's 1. Block 256; grid (ceil(N/128), ceil(M/128)).
#define RB_BM 128
#define RB_BN 128
#define RB_BK 8
#define RB_TM 8
#define RB_TN 8
#define RB_THREADS 256
// Rows of the transposed A tile are padded by 4 words: unpadded, a warp's 32 stores As[c][r] fall on
// only 4 of the 32 banks (8-way conflicts, found with the playground's SIMT emulator); with 132-word
// rows the bank is (4c + r) mod 32, distinct for every lane.
#define RB_PAD 4
extern "C" __global__ void __launch_bounds__(RB_THREADS) cuda_regblock(const float* A, const float* B, float* C, int M, int N, int K) {
    __shared__ float As[RB_BK][RB_BM + RB_PAD];
    __shared__ float Bs[RB_BK][RB_BN];
    const int tid = threadIdx.x;
    const int tRow = tid / (RB_BN / RB_TN);
    const int tCol = tid % (RB_BN / RB_TN);
    const int bRow = blockIdx.y * RB_BM;
    const int bCol = blockIdx.x * RB_BN;
    float acc[RB_TM][RB_TN];
    for (int i = 0; i < RB_TM; ++i)
        for (int j = 0; j < RB_TN; ++j) acc[i][j] = 0.0f;
    float regA[RB_TM], regB[RB_TN];
    for (int k0 = 0; k0 < K; k0 += RB_BK) {
        for (int i = tid; i < RB_BM * RB_BK; i += RB_THREADS) {
            int r = i / RB_BK, c = i % RB_BK;
            int gr = bRow + r, gc = k0 + c;
            As[c][r] = (gr < M && gc < K) ? A[gr * K + gc] : 0.0f;
        }
        for (int i = tid; i < RB_BK * RB_BN; i += RB_THREADS) {
            int r = i / RB_BN, c = i % RB_BN;
            int gr = k0 + r, gc = bCol + c;
            Bs[r][c] = (gr < K && gc < N) ? B[gr * N + gc] : 0.0f;
        }
        __syncthreads();
        for (int kk = 0; kk < RB_BK; ++kk) {
            for (int i = 0; i < RB_TM; ++i) regA[i] = As[kk][tRow * RB_TM + i];
            for (int j = 0; j < RB_TN; ++j) regB[j] = Bs[kk][tCol + j * (RB_BN / RB_TN)];
            for (int i = 0; i < RB_TM; ++i)
                for (int j = 0; j < RB_TN; ++j) acc[i][j] += regA[i] * regB[j];
        }
        __syncthreads();
    }
    for (int i = 0; i < RB_TM; ++i) {
        int r = bRow + tRow * RB_TM + i;
        if (r >= M) break;
        for (int j = 0; j < RB_TN; ++j) {
            int c = bCol + tCol + j * (RB_BN / RB_TN);
            if (c < N) C[r * N + c] = acc[i][j];
        }
    }
}

// cuda_wmma_f16 and cuda_wmma_bf16: tensor cores through WMMA. Each warp computes one 16×16 tile of
// C with m16n16k16 matrix multiply-accumulates: 16-bit inputs (IEEE half, or bfloat16 on sm_80 and
// newer), fp32 accumulation. M, N and K must be multiples of 16 (the host pads). Block (128, 4):
// 4×4 warps, a 64×64 tile of C; grid (ceil(N/64), ceil(M/64)). A and B hold raw 16-bit words.
#define WMMA_TILE_ADDR(base, row, col, ld) ((base) + (size_t)(row) * (ld) + (col))

extern "C" __global__ void cuda_wmma_f16(const unsigned short* A, const unsigned short* B, float* C, int M, int N, int K) {
    int tileRow = blockIdx.y * blockDim.y + threadIdx.y;
    int tileCol = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
    if (tileRow * 16 >= M || tileCol * 16 >= N) return; // uniform per warp
    float d0 = 0, d1 = 0, d2 = 0, d3 = 0, d4 = 0, d5 = 0, d6 = 0, d7 = 0;
    for (int k0 = 0; k0 < K; k0 += 16) {
        unsigned a0, a1, a2, a3, a4, a5, a6, a7, b0, b1, b2, b3, b4, b5, b6, b7;
        const unsigned short* pa = WMMA_TILE_ADDR(A, tileRow * 16, k0, K);
        const unsigned short* pb = WMMA_TILE_ADDR(B, k0, tileCol * 16, N);
        asm volatile("wmma.load.a.sync.aligned.row.m16n16k16.global.f16 {%0,%1,%2,%3,%4,%5,%6,%7}, [%8], %9;"
                     : "=r"(a0), "=r"(a1), "=r"(a2), "=r"(a3), "=r"(a4), "=r"(a5), "=r"(a6), "=r"(a7)
                     : "l"(pa), "r"(K));
        asm volatile("wmma.load.b.sync.aligned.row.m16n16k16.global.f16 {%0,%1,%2,%3,%4,%5,%6,%7}, [%8], %9;"
                     : "=r"(b0), "=r"(b1), "=r"(b2), "=r"(b3), "=r"(b4), "=r"(b5), "=r"(b6), "=r"(b7)
                     : "l"(pb), "r"(N));
        asm volatile("wmma.mma.sync.aligned.row.row.m16n16k16.f32.f32 "
                     "{%0,%1,%2,%3,%4,%5,%6,%7}, {%8,%9,%10,%11,%12,%13,%14,%15}, "
                     "{%16,%17,%18,%19,%20,%21,%22,%23}, {%0,%1,%2,%3,%4,%5,%6,%7};"
                     : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3), "+f"(d4), "+f"(d5), "+f"(d6), "+f"(d7)
                     : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(a4), "r"(a5), "r"(a6), "r"(a7),
                       "r"(b0), "r"(b1), "r"(b2), "r"(b3), "r"(b4), "r"(b5), "r"(b6), "r"(b7));
    }
    float* pc = WMMA_TILE_ADDR(C, tileRow * 16, tileCol * 16, N);
    asm volatile("wmma.store.d.sync.aligned.row.m16n16k16.global.f32 [%0], {%1,%2,%3,%4,%5,%6,%7,%8}, %9;"
                 :: "l"(pc), "f"(d0), "f"(d1), "f"(d2), "f"(d3), "f"(d4), "f"(d5), "f"(d6), "f"(d7), "r"(N)
                 : "memory");
}

#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
extern "C" __global__ void cuda_wmma_bf16(const unsigned short* A, const unsigned short* B, float* C, int M, int N, int K) {
    int tileRow = blockIdx.y * blockDim.y + threadIdx.y;
    int tileCol = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
    if (tileRow * 16 >= M || tileCol * 16 >= N) return; // uniform per warp
    float d0 = 0, d1 = 0, d2 = 0, d3 = 0, d4 = 0, d5 = 0, d6 = 0, d7 = 0;
    for (int k0 = 0; k0 < K; k0 += 16) {
        unsigned a0, a1, a2, a3, b0, b1, b2, b3;
        const unsigned short* pa = WMMA_TILE_ADDR(A, tileRow * 16, k0, K);
        const unsigned short* pb = WMMA_TILE_ADDR(B, k0, tileCol * 16, N);
        asm volatile("wmma.load.a.sync.aligned.row.m16n16k16.global.bf16 {%0,%1,%2,%3}, [%4], %5;"
                     : "=r"(a0), "=r"(a1), "=r"(a2), "=r"(a3) : "l"(pa), "r"(K));
        asm volatile("wmma.load.b.sync.aligned.row.m16n16k16.global.bf16 {%0,%1,%2,%3}, [%4], %5;"
                     : "=r"(b0), "=r"(b1), "=r"(b2), "=r"(b3) : "l"(pb), "r"(N));
        asm volatile("wmma.mma.sync.aligned.row.row.m16n16k16.f32.bf16.bf16.f32 "
                     "{%0,%1,%2,%3,%4,%5,%6,%7}, {%8,%9,%10,%11}, {%12,%13,%14,%15}, {%0,%1,%2,%3,%4,%5,%6,%7};"
                     : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3), "+f"(d4), "+f"(d5), "+f"(d6), "+f"(d7)
                     : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1), "r"(b2), "r"(b3));
    }
    float* pc = WMMA_TILE_ADDR(C, tileRow * 16, tileCol * 16, N);
    asm volatile("wmma.store.d.sync.aligned.row.m16n16k16.global.f32 [%0], {%1,%2,%3,%4,%5,%6,%7,%8}, %9;"
                 :: "l"(pc), "f"(d0), "f"(d1), "f"(d2), "f"(d3), "f"(d4), "f"(d5), "f"(d6), "f"(d7), "r"(N)
                 : "memory");
}
#endif
