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

// The rungs between cuda_smem and cuda_regblock and after it follow the steps of the best-known
// public SGEMM ladder (Simon Boehm, "How to Optimize a CUDA Matmul Kernel for cuBLAS-like
// Performance", 2022): 1-D blocktiling, vectorised (128-bit) loads with a transposed A tile, and
// warptiling. They are written for this file (and appended after the kernels above, so those keep
// their PTX); each keeps the table's tile and block beside it.

// vec4 is four floats that one 128-bit load or store moves (ld.global.v4.f32 / st.shared.v4.f32);
// a struct of our own so that neither compiler needs CUDA's vector_types.h.
struct alignas(16) vec4 { float x, y, z, w; };

// cuda_blocktile1d: 1-D blocktiling. A block of 512 threads computes a 64×64 tile of C from 64×8
// tiles of A and 8×64 tiles of B in shared memory; each thread keeps 8 accumulators for 8
// consecutive rows of one column, so one shared-memory load of B feeds 8 FMAs (cuda_smem: 1).
// A warp's 32 threads share their rows, so its loads of the A tile are broadcasts.
// Block 512; grid (ceil(N/64), ceil(M/64)).
#define B1_BM 64
#define B1_BN 64
#define B1_BK 8
#define B1_TM 8
extern "C" __global__ void __launch_bounds__(512) cuda_blocktile1d(const float* A, const float* B, float* C, int M, int N, int K) {
    __shared__ float As[B1_BM][B1_BK];
    __shared__ float Bs[B1_BK][B1_BN];
    const int tid = threadIdx.x;
    const int tRow = tid / B1_BN, tCol = tid % B1_BN;
    const int bRow = blockIdx.y * B1_BM, bCol = blockIdx.x * B1_BN;
    float acc[B1_TM];
    for (int i = 0; i < B1_TM; ++i) acc[i] = 0.0f;
    for (int k0 = 0; k0 < K; k0 += B1_BK) {
        int ar = tid / B1_BK, ac = tid % B1_BK; // 512 threads, 512 elements of each tile
        As[ar][ac] = (bRow + ar < M && k0 + ac < K) ? A[(bRow + ar) * K + k0 + ac] : 0.0f;
        int br = tid / B1_BN, bc = tid % B1_BN;
        Bs[br][bc] = (k0 + br < K && bCol + bc < N) ? B[(k0 + br) * N + bCol + bc] : 0.0f;
        __syncthreads();
        for (int kk = 0; kk < B1_BK; ++kk) {
            float b = Bs[kk][tCol];
            for (int i = 0; i < B1_TM; ++i) acc[i] += As[tRow * B1_TM + i][kk] * b;
        }
        __syncthreads();
    }
    for (int i = 0; i < B1_TM; ++i) {
        int r = bRow + tRow * B1_TM + i, c = bCol + tCol;
        if (r < M && c < N) C[r * N + c] = acc[i];
    }
}

// Both of the next kernels stage a 128×128 block tile the same way. Each of the 256 threads loads
// 4 consecutive floats of the 128×8 A tile, stored transposed (As[k][row], rows padded by 4 words:
// 132-word rows put the 32 lanes' scalar stores on 32 distinct banks), and 4 of the 8×128 B tile.
// When K and N are multiples of 4 (vec), every row starts 16-byte aligned and a group of 4 floats
// is wholly inside the matrix or wholly outside it, so each group is one 128-bit load; otherwise
// the same groups are loaded as 4 guarded scalars.
#define V_BM 128
#define V_BN 128
#define V_BK 8
#define V_PAD 4
__device__ __forceinline__ vec4 vec_load(const float* X, int rows, int cols, int r, int c, bool vec) {
    vec4 v = {0.0f, 0.0f, 0.0f, 0.0f};
    if (r >= rows) return v;
    if (vec) {
        if (c < cols) v = *reinterpret_cast<const vec4*>(&X[r * cols + c]);
        return v;
    }
    if (c < cols) v.x = X[r * cols + c];
    if (c + 1 < cols) v.y = X[r * cols + c + 1];
    if (c + 2 < cols) v.z = X[r * cols + c + 2];
    if (c + 3 < cols) v.w = X[r * cols + c + 3];
    return v;
}

__device__ __forceinline__ void vec_stage(const float* A, const float* B, float (*As)[V_BM + V_PAD], float (*Bs)[V_BN],
                                          int M, int N, int K, int bRow, int bCol, int k0, int tid, bool vec) {
    int ar = tid / 2, ac = (tid % 2) * 4;
    vec4 a = vec_load(A, M, K, bRow + ar, k0 + ac, vec);
    As[ac + 0][ar] = a.x;
    As[ac + 1][ar] = a.y;
    As[ac + 2][ar] = a.z;
    As[ac + 3][ar] = a.w;
    int br = tid / 32, bc = (tid % 32) * 4;
    *reinterpret_cast<vec4*>(&Bs[br][bc]) = vec_load(B, K, N, k0 + br, bCol + bc, vec);
}

// vec_store writes 4 accumulators v to C[r][c..c+3]: one 128-bit store when vec, else guarded scalars.
__device__ __forceinline__ void vec_store(float* C, int M, int N, int r, int c, const float* v, bool vec) {
    if (r >= M) return;
    if (vec) {
        if (c < N) *reinterpret_cast<vec4*>(&C[r * N + c]) = vec4{v[0], v[1], v[2], v[3]};
        return;
    }
    for (int j = 0; j < 4; ++j)
        if (c + j < N) C[r * N + c + j] = v[j];
}

// cuda_vectorized: cuda_regblock's 2-D blocktiling (128×128 tiles of C, 8×8 outputs per thread,
// 256 threads) with 128-bit loads: global loads of A and B, and shared-memory loads of each step's
// 8 values of A and 8 of B as two vec4 each, so a thread issues 4 shared loads per 64 FMAs
// instead of 16. A thread's 8 columns are two groups of 4 consecutive ones, 64 apart.
// Block 256; grid (ceil(N/128), ceil(M/128)).
extern "C" __global__ void __launch_bounds__(256) cuda_vectorized(const float* A, const float* B, float* C, int M, int N, int K) {
    __shared__ __align__(16) float As[V_BK][V_BM + V_PAD];
    __shared__ __align__(16) float Bs[V_BK][V_BN];
    const int tid = threadIdx.x;
    const int tRow = tid / 16, tCol = tid % 16;
    const int bRow = blockIdx.y * V_BM, bCol = blockIdx.x * V_BN;
    const bool vec = ((K | N) & 3) == 0; // the same for every thread: no divergence
    float acc[8][8];
    for (int i = 0; i < 8; ++i)
        for (int j = 0; j < 8; ++j) acc[i][j] = 0.0f;
    for (int k0 = 0; k0 < K; k0 += V_BK) {
        vec_stage(A, B, As, Bs, M, N, K, bRow, bCol, k0, tid, vec);
        __syncthreads();
        for (int kk = 0; kk < V_BK; ++kk) {
            vec4 a0 = *reinterpret_cast<const vec4*>(&As[kk][tRow * 8]);
            vec4 a1 = *reinterpret_cast<const vec4*>(&As[kk][tRow * 8 + 4]);
            vec4 b0 = *reinterpret_cast<const vec4*>(&Bs[kk][tCol * 4]);
            vec4 b1 = *reinterpret_cast<const vec4*>(&Bs[kk][64 + tCol * 4]);
            float ra[8] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
            float rb[8] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
            for (int i = 0; i < 8; ++i)
                for (int j = 0; j < 8; ++j) acc[i][j] += ra[i] * rb[j];
        }
        __syncthreads();
    }
    for (int i = 0; i < 8; ++i) {
        int r = bRow + tRow * 8 + i;
        vec_store(C, M, N, r, bCol + tCol * 4, &acc[i][0], vec);
        vec_store(C, M, N, r, bCol + 64 + tCol * 4, &acc[i][4], vec);
    }
}

// cuda_warptile: warptiling. The same 128×128 block tile and staging, but each of the 8 warps owns
// a 64×32 warp tile (2 warps down, 4 across), computed as 2×2 sub-tiles of 32×16 in which its
// lanes form an 8×4 grid of 4×4 outputs. A warp's shared loads then touch only its own 64 rows of
// A and 32 columns of B, as 8 and 4 distinct 16-byte words (broadcast to the other lanes), and
// each thread's 64 outputs come from 2 + 2 vec4 loads per step along K, as in cuda_vectorized, but
// arranged the way tensor-core kernels arrange warps. Block 256; grid (ceil(N/128), ceil(M/128)).
extern "C" __global__ void __launch_bounds__(256) cuda_warptile(const float* A, const float* B, float* C, int M, int N, int K) {
    __shared__ __align__(16) float As[V_BK][V_BM + V_PAD];
    __shared__ __align__(16) float Bs[V_BK][V_BN];
    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const int wRow = (warp / 4) * 64, wCol = (warp % 4) * 32; // the warp tile's corner in the block tile
    const int ly = lane / 4, lx = lane % 4;                    // the lane's place in a 32×16 sub-tile
    const int bRow = blockIdx.y * V_BM, bCol = blockIdx.x * V_BN;
    const bool vec = ((K | N) & 3) == 0; // the same for every thread: no divergence
    float acc[2][2][4][4]; // [sub-tile row][sub-tile column][row][column]
    for (int s = 0; s < 2; ++s)
        for (int t = 0; t < 2; ++t)
            for (int i = 0; i < 4; ++i)
                for (int j = 0; j < 4; ++j) acc[s][t][i][j] = 0.0f;
    for (int k0 = 0; k0 < K; k0 += V_BK) {
        vec_stage(A, B, As, Bs, M, N, K, bRow, bCol, k0, tid, vec);
        __syncthreads();
        for (int kk = 0; kk < V_BK; ++kk) {
            vec4 a[2], b[2];
            for (int s = 0; s < 2; ++s) a[s] = *reinterpret_cast<const vec4*>(&As[kk][wRow + s * 32 + ly * 4]);
            for (int t = 0; t < 2; ++t) b[t] = *reinterpret_cast<const vec4*>(&Bs[kk][wCol + t * 16 + lx * 4]);
            for (int s = 0; s < 2; ++s)
                for (int t = 0; t < 2; ++t) {
                    float ra[4] = {a[s].x, a[s].y, a[s].z, a[s].w}, rb[4] = {b[t].x, b[t].y, b[t].z, b[t].w};
                    for (int i = 0; i < 4; ++i)
                        for (int j = 0; j < 4; ++j) acc[s][t][i][j] += ra[i] * rb[j];
                }
        }
        __syncthreads();
    }
    for (int s = 0; s < 2; ++s)
        for (int t = 0; t < 2; ++t)
            for (int i = 0; i < 4; ++i)
                vec_store(C, M, N, bRow + wRow + s * 32 + ly * 4 + i, bCol + wCol + t * 16 + lx * 4, &acc[s][t][i][0], vec);
}
