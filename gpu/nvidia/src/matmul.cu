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

// The tensor-core rungs after cuda_wmma (appended here, so the kernels above keep their PTX):
// mma.sync instead of WMMA, with tiles staged in shared memory and fed to the tensor cores by
// ldmatrix, then the staging made asynchronous (cp.async, double-buffered), then the shared layout
// XOR-swizzled so that ldmatrix reads it without bank conflicts. The instructions and their fragment
// layouts are the PTX ISA's (sections "ldmatrix", "mma", "Matrix Fragments for mma.m16n8k16 with
// floating point type", "cp.async"); they need sm_80 (cp.async, bf16 mma.sync).
//
// One shape for the first three (the fourth, the warp-tiled rung at the end, doubles each warp's
// piece): a block of 256 threads (8 warps) computes a 128×128 tile of C, stepping
// along K by 32; warp w owns the 64×32 piece at rows 64·(w/4), columns 32·(w%4): 4×4 mma.sync
// m16n8k16 per step of 16, its A fragments from 4 ldmatrix.x4 and its B fragments from 2
// ldmatrix.x4.trans. The shared tiles are A 128×32 (rows of 64 bytes) and B 32×128 (rows of 256
// bytes), moved in 16-byte chunks of 8 bf16. M, N, K are multiples of 8 (the host pads), so a chunk
// is wholly inside the matrix or wholly outside, where it is zero. A and B hold raw bf16 words.
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
#define MMA_BM 128
#define MMA_BN 128
#define MMA_BK 32
#define MMA_THREADS 256

// mma_smem is the .shared address of a generic pointer into shared memory (what ldmatrix and
// cp.async take).
__device__ __forceinline__ unsigned mma_smem(const void* p) {
    unsigned r;
    asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(r) : "l"(p));
    return r;
}

// The byte offsets of chunk c of row r in the A and B tiles. Unswizzled, 8 rows of A at one chunk
// fall in 2 of the 8 16-byte bank groups (rows 64 bytes apart) and 8 rows of B in 1 (256 apart), so
// an ldmatrix of them is a 4-way and an 8-way bank conflict. Swizzled, the chunk is XORed with the
// row (A: with r/2 mod 4, the row's 128-byte line; B: with r mod 8), which puts 8 consecutive rows
// in 8 different bank groups and keeps each row's chunks in the row.
template <bool SWIZZLE> __device__ __forceinline__ unsigned mma_a_off(int r, int c) {
    return r * (MMA_BK * 2) + 16 * (SWIZZLE ? (c ^ ((r >> 1) & 3)) : c);
}
template <bool SWIZZLE> __device__ __forceinline__ unsigned mma_b_off(int r, int c) {
    return r * (MMA_BN * 2) + 16 * (SWIZZLE ? (c ^ (r & 7)) : c);
}

// mma_copy moves one 16-byte chunk from global to shared memory: with ASYNC a cp.async whose
// src-size 0 zero-fills a chunk outside the matrix; else a 128-bit load through registers.
template <bool ASYNC> __device__ __forceinline__ void mma_copy(unsigned dst, const unsigned short* src, bool in) {
    if (ASYNC) {
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" :: "r"(dst), "l"(src), "r"(in ? 16 : 0) : "memory");
    } else {
        unsigned x = 0, y = 0, z = 0, w = 0;
        if (in) asm volatile("ld.global.v4.u32 {%0,%1,%2,%3}, [%4];" : "=r"(x), "=r"(y), "=r"(z), "=r"(w) : "l"(src));
        asm volatile("st.shared.v4.u32 [%0], {%1,%2,%3,%4};" :: "r"(dst), "r"(x), "r"(y), "r"(z), "r"(w) : "memory");
    }
}

// mma_stage stages the A tile (BM rows × 4 chunks, BM 128 or 256) and the B tile (32 rows × 16
// chunks) of step k0 at the shared addresses sa and sb: two chunks of each per thread (and, with BM
// 256, two more of A, rows 128 to 255), consecutive threads on consecutive chunks of a row
// (coalesced global reads).
template <bool ASYNC, bool SWIZZLE, int BM = MMA_BM>
__device__ __forceinline__ void mma_stage(const unsigned short* A, const unsigned short* B, unsigned sa, unsigned sb,
                                          int M, int N, int K, int bRow, int bCol, int k0, int tid) {
    for (int i = 0; i < 2; ++i) {
        int q = tid + i * MMA_THREADS;
        int r = q / 4, c = q % 4;
        bool in = bRow + r < M && k0 + c * 8 < K;
        mma_copy<ASYNC>(sa + mma_a_off<SWIZZLE>(r, c), in ? A + (size_t)(bRow + r) * K + k0 + c * 8 : A, in);
        r = q / 16, c = q % 16;
        in = k0 + r < K && bCol + c * 8 < N;
        mma_copy<ASYNC>(sb + mma_b_off<SWIZZLE>(r, c), in ? B + (size_t)(k0 + r) * N + bCol + c * 8 : B, in);
    }
    for (int i = 2; i < BM / 64; ++i) {
        int q = tid + i * MMA_THREADS;
        int r = q / 4, c = q % 4;
        bool in = bRow + r < M && k0 + c * 8 < K;
        mma_copy<ASYNC>(sa + mma_a_off<SWIZZLE>(r, c), in ? A + (size_t)(bRow + r) * K + k0 + c * 8 : A, in);
    }
}

// mma_compute is one step of 32 along K for the warp's (16·MI)×(8·NI) piece (64×32 by default): per
// 16, MI ldmatrix.x4 of A (lane l names row l%16 of the 16×16 tile at chunk l/16), NI/2
// ldmatrix.x4.trans of B (lane l names row l%8 + 8·(l/8%2) at chunk l/16 of the 16×16 tile: two n8
// fragments), and MI·NI mma.sync.
template <bool SWIZZLE, int MI = 4, int NI = 4>
__device__ __forceinline__ void mma_compute(unsigned sa, unsigned sb, int wRow, int wCol, int lane, float (&acc)[MI][NI][4]) {
    for (int kk = 0; kk < MMA_BK; kk += 16) {
        unsigned a[MI][4], b[NI][2];
        for (int mi = 0; mi < MI; ++mi)
            asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
                         : "=r"(a[mi][0]), "=r"(a[mi][1]), "=r"(a[mi][2]), "=r"(a[mi][3])
                         : "r"(sa + mma_a_off<SWIZZLE>(wRow + mi * 16 + lane % 16, kk / 8 + lane / 16)) : "memory");
        for (int nj = 0; nj < NI / 2; ++nj)
            asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
                         : "=r"(b[2 * nj][0]), "=r"(b[2 * nj][1]), "=r"(b[2 * nj + 1][0]), "=r"(b[2 * nj + 1][1])
                         : "r"(sb + mma_b_off<SWIZZLE>(kk + lane % 8 + (lane / 8 % 2) * 8, (wCol + nj * 16) / 8 + lane / 16)) : "memory");
        for (int mi = 0; mi < MI; ++mi)
            for (int ni = 0; ni < NI; ++ni)
                asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                             : "+f"(acc[mi][ni][0]), "+f"(acc[mi][ni][1]), "+f"(acc[mi][ni][2]), "+f"(acc[mi][ni][3])
                             : "r"(a[mi][0]), "r"(a[mi][1]), "r"(a[mi][2]), "r"(a[mi][3]), "r"(b[ni][0]), "r"(b[ni][1]));
    }
}

struct alignas(8) mma_f2 { float x, y; };

// mma_gemm is the four rungs' body: a block computes a BM×128 tile of C, each of its 8 warps a
// (16·MI)×(8·NI) piece of it (64×32 by default). Without ASYNC one shared buffer: stage, barrier, compute,
// barrier. With ASYNC two: the copies of step t+1 are issued before step t is computed and waited
// for (cp.async.wait_group 1: all but the newest group) only after, so the loads overlap the math.
template <bool ASYNC, bool SWIZZLE, int BM = MMA_BM, int MI = 4, int NI = 4>
__device__ __forceinline__ void mma_gemm(const unsigned short* A, const unsigned short* B, float* C, int M, int N, int K) {
    __shared__ __align__(128) unsigned short As[ASYNC ? 2 : 1][BM * MMA_BK];
    __shared__ __align__(128) unsigned short Bs[ASYNC ? 2 : 1][MMA_BK * MMA_BN];
    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const int wRow = (warp / (MMA_BN / (8 * NI))) * (16 * MI), wCol = (warp % (MMA_BN / (8 * NI))) * (8 * NI);
    const int bRow = blockIdx.y * BM, bCol = blockIdx.x * MMA_BN;
    const unsigned sa = mma_smem(&As[0][0]), sb = mma_smem(&Bs[0][0]);
    const unsigned stepA = BM * MMA_BK * 2, stepB = MMA_BK * MMA_BN * 2;
    float acc[MI][NI][4];
    for (int mi = 0; mi < MI; ++mi)
        for (int ni = 0; ni < NI; ++ni)
            for (int j = 0; j < 4; ++j) acc[mi][ni][j] = 0.0f;
    const int steps = (K + MMA_BK - 1) / MMA_BK;
    if (!ASYNC) {
        for (int t = 0; t < steps; ++t) {
            mma_stage<false, SWIZZLE, BM>(A, B, sa, sb, M, N, K, bRow, bCol, t * MMA_BK, tid);
            __syncthreads();
            mma_compute<SWIZZLE, MI, NI>(sa, sb, wRow, wCol, lane, acc);
            __syncthreads();
        }
    } else {
        mma_stage<true, SWIZZLE, BM>(A, B, sa, sb, M, N, K, bRow, bCol, 0, tid);
        asm volatile("cp.async.commit_group;" ::: "memory");
        for (int t = 0; t < steps; ++t) {
            const unsigned cur = t & 1;
            if (t + 1 < steps)
                mma_stage<true, SWIZZLE, BM>(A, B, sa + (cur ^ 1) * stepA, sb + (cur ^ 1) * stepB, M, N, K, bRow, bCol, (t + 1) * MMA_BK, tid);
            asm volatile("cp.async.commit_group;" ::: "memory");
            asm volatile("cp.async.wait_group 1;" ::: "memory");
            __syncthreads();
            mma_compute<SWIZZLE, MI, NI>(sa + cur * stepA, sb + cur * stepB, wRow, wCol, lane, acc);
            __syncthreads();
        }
    }
    // the accumulators' layout: lane 4g+t holds rows g and g+8, columns 2t and 2t+1 of each 16×8 tile
    const int g = lane / 4, tq = lane % 4;
    for (int mi = 0; mi < MI; ++mi)
        for (int ni = 0; ni < NI; ++ni)
            for (int h = 0; h < 2; ++h) {
                int r = bRow + wRow + mi * 16 + g + 8 * h, c = bCol + wCol + ni * 8 + 2 * tq;
                if (r < M && c < N) {
                    mma_f2 v = {acc[mi][ni][2 * h], acc[mi][ni][2 * h + 1]};
                    *reinterpret_cast<mma_f2*>(C + (size_t)r * N + c) = v;
                }
            }
}

// cuda_mma: tiles staged through shared memory by 128-bit loads and stores, fed to mma.sync by
// ldmatrix. Block 256; grid (ceil(N/128), ceil(M/128)).
extern "C" __global__ void __launch_bounds__(256) cuda_mma(const unsigned short* A, const unsigned short* B, float* C, int M, int N, int K) {
    mma_gemm<false, false>(A, B, C, M, N, K);
}

// cuda_mma_async: cuda_mma with the staging done by cp.async into two shared buffers, the next step's
// copies in flight while the tensor cores work on this one. Block 256; grid (ceil(N/128), ceil(M/128)).
extern "C" __global__ void __launch_bounds__(256) cuda_mma_async(const unsigned short* A, const unsigned short* B, float* C, int M, int N, int K) {
    mma_gemm<true, false>(A, B, C, M, N, K);
}

// cuda_mma_swizzle: cuda_mma_async with the XOR-swizzled shared layout: its ldmatrix reads have no
// bank conflicts. Block 256; grid (ceil(N/128), ceil(M/128)).
extern "C" __global__ void __launch_bounds__(256) cuda_mma_swizzle(const unsigned short* A, const unsigned short* B, float* C, int M, int N, int K) {
    mma_gemm<true, true>(A, B, C, M, N, K);
}

// cuda_mma_warptile: cuda_mma_swizzle with twice the work per warp. A block computes a 256×128 tile
// of C and each of its 8 warps a 64×64 piece (4 m16 tiles by 8 n8 tiles): per step of 16 along K a
// warp loads its A fragments (4 ldmatrix.x4) and B fragments (4 ldmatrix.x4.trans) once and issues
// 32 mma.sync, 131,072 FLOPs for 32 wavefronts of ldmatrix, where the 64×32 piece has 65,536 for 24;
// the bigger block tile also stages fewer bytes per FLOP. The price: 128 FP32 accumulators per
// thread, and 48 KiB of shared memory for the two buffers (A 256×32 and B 32×128 each), the most a
// block may declare statically. Block 256; grid (ceil(N/128), ceil(M/256)).
extern "C" __global__ void __launch_bounds__(256) cuda_mma_warptile(const unsigned short* A, const unsigned short* B, float* C, int M, int N, int K) {
    mma_gemm<true, true, 256, 4, 8>(A, B, C, M, N, K);
}
#endif

// The FP32 rungs after cuda_warptile (appended here, so the kernels above keep their PTX): the
// same warptiling, double-buffered, then its tile sizes searched (S. Boehm's worklog, kernels 10, 11, 9:
// warptiling, double buffering, autotuning). tile_gemm is one template for all of them: a block
// computes a BM×BN tile of C, each warp a WM×WN piece of it in sub-tiles of 32×16, its lanes an 8×4
// grid of 4×4 outputs (as cuda_warptile), stepping along K by BK. Double buffering, the register
// prefetch variant: two shared-memory stages; at the top of each step a thread issues its global
// loads of the next step's tiles into registers, computes this step from one stage while they are in
// flight, then stores them into the other stage, with one __syncthreads per step (the stage it
// stores into was last read in the step before, which every thread finished before that step's
// barrier). The A tile is stored transposed with rows padded by 4 words, as cuda_vectorized's.
template <int BM, int BN, int BK, int WM, int WN>
struct TileGemm {
    static constexpr int THREADS = (BM / WM) * (BN / WN) * 32;
    static constexpr int LA = BM * BK / 4 / THREADS; // vec4 groups of the A tile per thread
    static constexpr int LB = BK * BN / 4 / THREADS; // and of the B tile
    static constexpr int MI = WM / 32, NI = WN / 16; // sub-tiles per warp down and across
    static_assert(LA >= 1 && LB >= 1 && LA * 4 * THREADS == BM * BK && LB * 4 * THREADS == BK * BN, "whole vec4 groups per thread");
    static_assert(WM % 32 == 0 && WN % 16 == 0 && BK % 4 == 0, "warp tiles of whole 32×16 sub-tiles");
};

template <int BM, int BN, int BK, int WM, int WN>
__device__ __forceinline__ void tile_fetch(const float* A, const float* B, vec4* ra, vec4* rb, int M, int N, int K,
                                           int bRow, int bCol, int k0, int tid, bool vec) {
    typedef TileGemm<BM, BN, BK, WM, WN> G;
    for (int i = 0; i < G::LA; ++i) {
        int g = tid + i * G::THREADS;
        ra[i] = vec_load(A, M, K, bRow + g / (BK / 4), k0 + (g % (BK / 4)) * 4, vec);
    }
    for (int i = 0; i < G::LB; ++i) {
        int g = tid + i * G::THREADS;
        rb[i] = vec_load(B, K, N, k0 + g / (BN / 4), bCol + (g % (BN / 4)) * 4, vec);
    }
}

template <int BM, int BN, int BK, int WM, int WN>
__device__ __forceinline__ void tile_put(float (*As)[BM + 4], float (*Bs)[BN], const vec4* ra, const vec4* rb, int tid) {
    typedef TileGemm<BM, BN, BK, WM, WN> G;
    for (int i = 0; i < G::LA; ++i) {
        int g = tid + i * G::THREADS, r = g / (BK / 4), c = (g % (BK / 4)) * 4;
        As[c + 0][r] = ra[i].x;
        As[c + 1][r] = ra[i].y;
        As[c + 2][r] = ra[i].z;
        As[c + 3][r] = ra[i].w;
    }
    for (int i = 0; i < G::LB; ++i) {
        int g = tid + i * G::THREADS;
        *reinterpret_cast<vec4*>(&Bs[g / (BN / 4)][(g % (BN / 4)) * 4]) = rb[i];
    }
}

template <int BM, int BN, int BK, int WM, int WN>
__device__ __forceinline__ void tile_gemm(const float* A, const float* B, float* C, int M, int N, int K) {
    typedef TileGemm<BM, BN, BK, WM, WN> G;
    __shared__ __align__(16) float As[2][BK][BM + 4];
    __shared__ __align__(16) float Bs[2][BK][BN];
    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const int wRow = (warp / (BN / WN)) * WM, wCol = (warp % (BN / WN)) * WN;
    const int ly = lane / 4, lx = lane % 4;
    const int bRow = blockIdx.y * BM, bCol = blockIdx.x * BN;
    const bool vec = ((K | N) & 3) == 0; // the same for every thread: no divergence
    float acc[G::MI][G::NI][4][4];
    for (int s = 0; s < G::MI; ++s)
        for (int t = 0; t < G::NI; ++t)
            for (int i = 0; i < 4; ++i)
                for (int j = 0; j < 4; ++j) acc[s][t][i][j] = 0.0f;
    vec4 ra[G::LA], rb[G::LB];
    tile_fetch<BM, BN, BK, WM, WN>(A, B, ra, rb, M, N, K, bRow, bCol, 0, tid, vec);
    tile_put<BM, BN, BK, WM, WN>(As[0], Bs[0], ra, rb, tid);
    __syncthreads();
    for (int k0 = 0, stage = 0; k0 < K; k0 += BK, stage ^= 1) {
        const bool more = k0 + BK < K;
        if (more) tile_fetch<BM, BN, BK, WM, WN>(A, B, ra, rb, M, N, K, bRow, bCol, k0 + BK, tid, vec);
        for (int kk = 0; kk < BK; ++kk) {
            vec4 a[G::MI], b[G::NI];
            for (int s = 0; s < G::MI; ++s) a[s] = *reinterpret_cast<const vec4*>(&As[stage][kk][wRow + s * 32 + ly * 4]);
            for (int t = 0; t < G::NI; ++t) b[t] = *reinterpret_cast<const vec4*>(&Bs[stage][kk][wCol + t * 16 + lx * 4]);
            for (int s = 0; s < G::MI; ++s)
                for (int t = 0; t < G::NI; ++t) {
                    float xa[4] = {a[s].x, a[s].y, a[s].z, a[s].w}, xb[4] = {b[t].x, b[t].y, b[t].z, b[t].w};
                    for (int i = 0; i < 4; ++i)
                        for (int j = 0; j < 4; ++j) acc[s][t][i][j] += xa[i] * xb[j];
                }
        }
        if (more) tile_put<BM, BN, BK, WM, WN>(As[stage ^ 1], Bs[stage ^ 1], ra, rb, tid);
        __syncthreads();
    }
    // Unrolled, so that acc's indices are constants and it stays in registers (without it ptxas
    // copies it to a stack frame for the stores: local memory).
#pragma unroll
    for (int s = 0; s < G::MI; ++s)
#pragma unroll
        for (int t = 0; t < G::NI; ++t)
#pragma unroll
            for (int i = 0; i < 4; ++i)
                vec_store(C, M, N, bRow + wRow + s * 32 + ly * 4 + i, bCol + wCol + t * 16 + lx * 4, &acc[s][t][i][0], vec);
}

// cuda_doublebuf: cuda_warptile double-buffered (tile_gemm with cuda_warptile's tiles: 128×128, BK
// 8, 64×32 warp tiles): the global loads of the next step are in flight while this one computes, and
// a step has one barrier instead of two. Block 256; grid (ceil(N/128), ceil(M/128)).
extern "C" __global__ void __launch_bounds__(256) cuda_doublebuf(const float* A, const float* B, float* C, int M, int N, int K) {
    tile_gemm<128, 128, 8, 64, 32>(A, B, C, M, N, K);
}

// The candidates of the tile search (nvidia.TuneCandidates; cuda_doublebuf is the first), named
// cuda_tile_BMxBNxBK_wWMxWN. `go generate` models each on the target GPUs and the cuda-autotuned
// row launches the one the model puts fastest on the H100 SXM. (Few: clang's PTX, which the tests
// also run in the virtual GPU, gives every kernel all of the module's static shared memory.)
// cuda_tile_128x64x16_w32x32: smaller block tiles, twice as many blocks. Block 256; grid (ceil(N/64), ceil(M/128)).
extern "C" __global__ void __launch_bounds__(256) cuda_tile_128x64x16_w32x32(const float* A, const float* B, float* C, int M, int N, int K) {
    tile_gemm<128, 64, 16, 32, 32>(A, B, C, M, N, K);
}
// cuda_tile_128x256x8_w64x64: 64×64 warp tiles, 128 accumulators a thread. Block 256; grid (ceil(N/256), ceil(M/128)).
extern "C" __global__ void __launch_bounds__(256) cuda_tile_128x256x8_w64x64(const float* A, const float* B, float* C, int M, int N, int K) {
    tile_gemm<128, 256, 8, 64, 64>(A, B, C, M, N, K);
}
// cuda_tile_256x128x8_w64x64: the same warp tiles, the block tile the other way. Block 256; grid (ceil(N/128), ceil(M/256)).
extern "C" __global__ void __launch_bounds__(256) cuda_tile_256x128x8_w64x64(const float* A, const float* B, float* C, int M, int N, int K) {
    tile_gemm<256, 128, 8, 64, 64>(A, B, C, M, N, K);
}
