// The playground's Hopper GEMM rungs (compute capability 9.0, PTX target sm_90a): C = A·B with A M×K,
// B K×N (BF16, row-major) and C M×N (FP32, row-major), on the tensor cores through wgmma.mma_async.
// `go generate ./gpu/nvidia` compiles this file for compute_90a only, with NVRTC 12.4 (sources.go:
// PTXBuilds), since NVRTC 11.8, which makes matmul.cu's PTX, knows no sm_90a. No headers: the
// tensor maps are passed as 128 opaque, 64-byte aligned bytes (CUtensorMap's layout, cuda.h), and
// every Hopper instruction is inline PTX (PTX ISA 8.x: "wgmma", "cp.async.bulk.tensor", "mbarrier",
// "setmaxnreg"). M, N and K must be multiples of 8: each 16-byte chunk of a row is then wholly inside
// the matrix or wholly out, and a tensor map's row stride a multiple of 16 bytes. The table pads them
// further for the TMA rungs, to whole tiles (its Pad), so that no box they copy lies wholly outside.
//
// The shared layouts are wgmma's canonical 128-byte-swizzled ones, which are also what a TMA copy
// with CU_TENSOR_MAP_SWIZZLE_128B writes: a stage of A is its tile's rows of 64 k (128 bytes each),
// the 16-byte chunk c of row r stored at chunk c ^ (r mod 8) ("K-major"); a stage of B is 64 rows of k,
// each 64 columns of n wide (128 bytes), the next 64 columns 8 KiB further on ("N-major", read with
// imm-trans-b = 1). Every tile base is 1024-byte aligned, so the swizzle pattern starts at row 0.
// The block and grid beside each kernel are those of the GPU kernel table, gpu/nvidia/ladder.go; a
// test checks them against it.

typedef unsigned short bf16_bits;
struct __align__(64) TensorMap { unsigned long long opaque[16]; };

// BK is the k of one stage: one 128-byte swizzle row of BF16.
#define BK 64

__device__ __forceinline__ unsigned smem_u32(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }

// desc is a wgmma shared-memory matrix descriptor (PTX ISA 8.x, "Matrix Descriptor Format") for the
// 128-byte swizzle: start address, leading and stride byte offsets, each in 16-byte units.
__device__ __forceinline__ unsigned long long desc(unsigned addr, unsigned lbo, unsigned sbo) {
    return (unsigned long long)((addr & 0x3FFFF) >> 4) | (unsigned long long)(lbo >> 4) << 16 |
           (unsigned long long)(sbo >> 4) << 32 | 1ull << 62;
}
// desc_a addresses step ks (k 16ks..16ks+15) of a K-major stage of A at tile: 32 bytes along each
// row; the next 8 rows 1024 bytes on. desc_b the same step of an N-major stage of B: 16 rows of k,
// 2 KiB on; the next 64 columns of n (LBO) 8 KiB on, the next 8 rows of k (SBO) 1 KiB on.
__device__ __forceinline__ unsigned long long desc_a(unsigned tile, int ks) { return desc(tile + 32 * ks, 16, 1024); }
__device__ __forceinline__ unsigned long long desc_b(unsigned tile, int ks) { return desc(tile + 2048 * ks, 8192, 1024); }

__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void wgmma_wait0() { asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory"); }
__device__ __forceinline__ void fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }

// wgmma_128: one m64n128k16 step of the calling warpgroup: d (FP32, 64 per thread) += A·B, with A
// (K-major) and B (N-major: imm-trans-b = 1) read from shared memory through the descriptors da, db.
__device__ __forceinline__ void wgmma_128(float* d, unsigned long long da, unsigned long long db) {
    asm volatile("{ .reg .pred p; setp.ne.b32 p, %66, 0; "
        "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, %64, %65, p, 1, 1, 0, 1; }"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
        : "l"(da), "l"(db), "r"(1) : "memory");
}

// wgmma_256: one m64n256k16 step of the calling warpgroup: d (FP32, 128 per thread) += A·B, with A
// (K-major) and B (N-major: imm-trans-b = 1) read from shared memory through the descriptors da, db.
__device__ __forceinline__ void wgmma_256(float* d, unsigned long long da, unsigned long long db) {
    asm volatile("{ .reg .pred p; setp.ne.b32 p, %130, 0; "
        "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, %128, %129, p, 1, 1, 0, 1; }"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]), "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]), "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
        : "l"(da), "l"(db), "r"(1) : "memory");
}

__device__ __forceinline__ void mb_init(unsigned bar, unsigned count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void mb_arrive(unsigned bar) {
    asm volatile("mbarrier.arrive.release.cta.shared::cta.b64 _, [%0];" :: "r"(bar) : "memory");
}
// mb_arrive_tx arrives on bar and announces bytes that TMA copies will complete on it.
__device__ __forceinline__ void mb_arrive_tx(unsigned bar, unsigned bytes) {
    asm volatile("mbarrier.arrive.expect_tx.release.cta.shared::cta.b64 _, [%0], %1;" :: "r"(bar), "r"(bytes) : "memory");
}
// mb_wait waits until the phase of bar with the given parity has completed.
__device__ __forceinline__ void mb_wait(unsigned bar, unsigned parity) {
    unsigned done = 0;
    while (!done) {
        asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.acquire.cta.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
            : "=r"(done) : "r"(bar), "r"(parity) : "memory");
    }
}
// cluster_rank is the CTA's rank in its cluster (%cluster_ctarank: x fastest).
__device__ __forceinline__ unsigned cluster_rank() {
    unsigned r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
    return r;
}
// cluster_sync is cluster.sync(): every running thread of every CTA of the cluster arrives
// (release) and waits (acquire); the non-.aligned forms, since a warp may arrive with one lane.
__device__ __forceinline__ void cluster_sync() {
    asm volatile("barrier.cluster.arrive.release;\n\tbarrier.cluster.wait.acquire;" ::: "memory");
}
// mb_arrive_remote arrives on the mbarrier at bar (an offset of the CTA's own shared memory) in the
// CTA of the given rank of the cluster: mapa maps the offset to that CTA's, and the arrive
// releases at cluster scope, so the owner's wait acquires the arriving thread's earlier reads.
__device__ __forceinline__ void mb_arrive_remote(unsigned bar, unsigned rank) {
    asm volatile("{ .reg .b32 remote; mapa.shared::cluster.u32 remote, %0, %1; mbarrier.arrive.release.cluster.shared::cluster.b64 _, [remote]; }"
        :: "r"(bar), "r"(rank) : "memory");
}
// tma_2d_multicast is tma_2d into every CTA of the cluster whose rank is set in mask: the box lands
// at dst in each one's shared memory and completes its bytes on the mbarrier at bar in each.
__device__ __forceinline__ void tma_2d_multicast(unsigned dst, const TensorMap* map, int x, int y, unsigned bar, unsigned short mask) {
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster [%0], [%1, {%2, %3}], [%4], %5;"
        :: "r"(dst), "l"(map), "r"(x), "r"(y), "r"(bar), "h"(mask) : "memory");
}
// tma_2d copies the box of map at (x, y) (x innermost: columns) to shared memory at dst, completing
// its bytes on bar.
__device__ __forceinline__ void tma_2d(unsigned dst, const TensorMap* map, int x, int y, unsigned bar) {
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
        :: "r"(dst), "l"(map), "r"(x), "r"(y), "r"(bar) : "memory");
}

// store_tile writes a warpgroup's m64nN accumulators (NF = N/2 per thread) to C at (row0, col0):
// thread t's warp w = t/32 holds rows 16w + t%32/4 and 8 below, two adjacent columns per 8
// (PTX ISA, "Matrix Fragments for wgmma.mma_async m64nNk16"), stored as float2.
template <int NF>
__device__ __forceinline__ void store_tile(const float* d, float* C, int M, int N, int row0, int col0, int t) {
    int w = t / 32, g = t % 32 / 4, q = t % 4;
#pragma unroll
    for (int j = 0; j < NF; j += 2) {
        int row = row0 + 16 * w + g + 8 * ((j >> 1) & 1), col = col0 + 8 * (j >> 2) + 2 * q;
        if (row < M && col < N) *reinterpret_cast<float2*>(&C[(size_t)row * N + col]) = make_float2(d[j], d[j + 1]);
    }
}

// hopper_wgmma: wgmma from shared memory. A block's two warpgroups compute a 128×128 tile of C, each
// a 64×128 half with m64n128k16 (4 per stage of 64 along K), reading both operands from shared
// memory through descriptors instead of registers. The stages are loaded as cuda_mma's were, every
// thread copying 16-byte chunks from global memory (to the swizzled places), one stage at a time:
// load, fence.proxy.async (the generic proxy's writes before the async proxy's reads), barrier,
// wgmma, wait. Block 256; grid (ceil(N/128), ceil(M/128)).
extern "C" __global__ void __launch_bounds__(256) hopper_wgmma(const bf16_bits* A, const bf16_bits* B, float* C, int M, int N, int K) {
    __shared__ __align__(1024) unsigned char sA[128 * 128];
    __shared__ __align__(1024) unsigned char sB[2 * 8192];
    int t = threadIdx.x, wg = t / 128;
    int m0 = blockIdx.y * 128, n0 = blockIdx.x * 128;
    float d[64];
#pragma unroll
    for (int j = 0; j < 64; j++) d[j] = 0.0f;
    for (int k0 = 0; k0 < K; k0 += BK) {
        for (int i = t; i < 128 * 8; i += 256) { // A: 128 rows of 8 chunks
            int r = i / 8, c = i % 8;
            uint4 v = make_uint4(0, 0, 0, 0);
            if (m0 + r < M && k0 + 8 * c < K) v = *reinterpret_cast<const uint4*>(&A[(size_t)(m0 + r) * K + k0 + 8 * c]);
            *reinterpret_cast<uint4*>(&sA[r * 128 + ((c ^ (r % 8)) * 16)]) = v;
        }
        for (int i = t; i < BK * 16; i += 256) { // B: 64 rows of k, 16 chunks of n
            int k = i / 16, c = i % 16;
            uint4 v = make_uint4(0, 0, 0, 0);
            if (k0 + k < K && n0 + 8 * c < N) v = *reinterpret_cast<const uint4*>(&B[(size_t)(k0 + k) * N + n0 + 8 * c]);
            *reinterpret_cast<uint4*>(&sB[(c / 8) * 8192 + k * 128 + ((c % 8) ^ (k % 8)) * 16]) = v;
        }
        fence_proxy_async();
        __syncthreads();
        wgmma_fence();
        unsigned a = smem_u32(sA) + wg * 64 * 128, b = smem_u32(sB);
#pragma unroll
        for (int ks = 0; ks < BK / 16; ks++) wgmma_128(d, desc_a(a, ks), desc_b(b, ks));
        wgmma_commit();
        wgmma_wait0();
        __syncthreads();
    }
    store_tile<64>(d, C, M, N, m0 + 64 * wg, n0, t % 128);
}

// TMA_STAGES stages of 32 KiB (A 128×64, B 64×128) ring the TMA rung's shared memory, followed by
// one mbarrier per stage: 4·32 KiB + 32 bytes of dynamic shared memory.
#define TMA_STAGES 4
#define TMA_STAGE_BYTES 32768

// hopper_wgmma_tma: hopper_wgmma with its stages loaded by the Tensor Memory Accelerator. One thread
// issues three TMA copies per stage (A's 128×64 box and two 64×64 boxes of B, the tensor maps
// swizzling them as wgmma reads them), announcing their 32 KiB on the stage's mbarrier
// (arrive.expect_tx), up to TMA_STAGES stages ahead; the warpgroups wait on the stage's phase, run
// their wgmma, and after a block barrier the thread refills the stage they finished. The copies
// cost no registers and no instructions per byte. Block 256; grid (ceil(N/128), ceil(M/128)).
extern "C" __global__ void __launch_bounds__(256) hopper_wgmma_tma(const bf16_bits* A, const bf16_bits* B, float* C, int M, int N, int K,
                                                                   const __grid_constant__ TensorMap tmA, const __grid_constant__ TensorMap tmB) {
    extern __shared__ __align__(1024) unsigned char smem[];
    unsigned base = smem_u32(smem), full = base + TMA_STAGES * TMA_STAGE_BYTES;
    int t = threadIdx.x, wg = t / 128;
    int m0 = blockIdx.y * 128, n0 = blockIdx.x * 128, steps = (K + BK - 1) / BK;
    if (t == 0)
        for (int s = 0; s < TMA_STAGES; s++) mb_init(full + 8 * s, 1);
    __syncthreads();
    if (t == 0)
        for (int s = 0; s < TMA_STAGES && s < steps; s++) {
            unsigned st = base + s * TMA_STAGE_BYTES, bar = full + 8 * s;
            mb_arrive_tx(bar, TMA_STAGE_BYTES);
            tma_2d(st, &tmA, s * BK, m0, bar);
            tma_2d(st + 16384, &tmB, n0, s * BK, bar);
            tma_2d(st + 16384 + 8192, &tmB, n0 + 64, s * BK, bar);
        }
    float d[64];
#pragma unroll
    for (int j = 0; j < 64; j++) d[j] = 0.0f;
    for (int kt = 0; kt < steps; kt++) {
        int s = kt % TMA_STAGES;
        unsigned st = base + s * TMA_STAGE_BYTES, bar = full + 8 * s;
        mb_wait(bar, (kt / TMA_STAGES) & 1);
        wgmma_fence();
#pragma unroll
        for (int ks = 0; ks < BK / 16; ks++) wgmma_128(d, desc_a(st + wg * 64 * 128, ks), desc_b(st + 16384, ks));
        wgmma_commit();
        wgmma_wait0();
        __syncthreads();
        if (t == 0 && kt + TMA_STAGES < steps) {
            int k0 = (kt + TMA_STAGES) * BK;
            mb_arrive_tx(bar, TMA_STAGE_BYTES);
            tma_2d(st, &tmA, k0, m0, bar);
            tma_2d(st + 16384, &tmB, n0, k0, bar);
            tma_2d(st + 16384 + 8192, &tmB, n0 + 64, k0, bar);
        }
    }
    store_tile<64>(d, C, M, N, m0 + 64 * wg, n0, t % 128);
}

// WS_STAGES stages of 48 KiB (A 128×64, B 64×256) ring the warp-specialised rungs' shared memory,
// followed by a "full" and an "empty" mbarrier per stage: 4·48 KiB + 64 bytes.
#define WS_STAGES 4
#define WS_STAGE_BYTES 49152

// ws_gemm is the warp-specialised GEMM of 128×256 tiles: warpgroup 0 is the producer, which gives up
// registers (setmaxnreg.dec to 40) and whose one elected thread only issues TMA copies, a stage as soon
// as the consumers have emptied it (its "empty" mbarrier); warpgroups 1 and 2 are consumers, which take
// the registers (setmaxnreg.inc to 232: 128·40 + 256·232 ≤ 64K) for their 64×256 halves, 128 FP32
// accumulators a thread, wait on a stage's "full" mbarrier, multiply with m64n256k16 and release the
// stage. No block barrier in the loop: the two sides meet only at the mbarriers. With persistent, the
// grid is a fixed number of blocks that loop over the tiles (tile = blockIdx.x, += gridDim.x), the
// producer running ahead into the next tile while the consumers store this one's C.
//
// With multicast, the blocks are 1×2 clusters (__cluster_dims__(1, 2, 1)): the two CTAs of a cluster
// compute the tiles at rows m0 and m0 + 128 of the same 256 columns, so they read the same B. Each
// CTA's producer copies its own A (16 KiB) and half of B (two of its four 64×64 boxes, the half of
// its rank), multicast into both CTAs: a CTA reads 32 KiB of a 48 KiB stage from global memory
// instead of 48. Each CTA's "full" mbarrier still expects the whole stage (arrive.expect_tx of
// 48 KiB by its own producer: its A, its half of B, and the peer's half, which the peer's copies
// complete on it). A stage is refilled only when the consumers of both CTAs have finished with it,
// since each producer writes into both: the "empty" mbarriers count 512 arrivals, every consumer
// thread arriving on its own CTA's and (mapa, release at cluster scope) on the peer's. A cluster
// barrier after the mbarrier.init (before any copy can reach the peer) and another before exit (no
// CTA leaves while the peer may still arrive on its barriers) close the cluster.
template <bool persistent, bool multicast = false>
__device__ __forceinline__ void ws_gemm(const bf16_bits* A, const bf16_bits* B, float* C, int M, int N, int K,
                                        const TensorMap* tmA, const TensorMap* tmB) {
    extern __shared__ __align__(1024) unsigned char smem[];
    unsigned base = smem_u32(smem), full = base + WS_STAGES * WS_STAGE_BYTES, empty = full + 8 * WS_STAGES;
    int t = threadIdx.x, wg = t / 128;
    int tilesN = (N + 255) / 256, tiles = tilesN * ((M + 127) / 128), steps = (K + BK - 1) / BK;
    int first = persistent ? blockIdx.x : blockIdx.y * gridDim.x + blockIdx.x, stride = persistent ? gridDim.x : tiles;
    if (t == 0)
        for (int s = 0; s < WS_STAGES; s++) {
            mb_init(full + 8 * s, 1);
            mb_init(empty + 8 * s, multicast ? 512 : 256);
        }
    unsigned rank = multicast ? cluster_rank() : 0;
    if (multicast) {
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
        cluster_sync();
    } else {
        __syncthreads();
    }
    if (wg == 0) {
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
        if (t != 0) return;
        int it = 0;
        for (int tile = first; tile < tiles; tile += stride) {
            int m0 = tile / tilesN * 128, n0 = tile % tilesN * 256;
            for (int kt = 0; kt < steps; kt++, it++) {
                int s = it % WS_STAGES;
                unsigned st = base + s * WS_STAGE_BYTES, bar = full + 8 * s;
                mb_wait(empty + 8 * s, ((it / WS_STAGES) & 1) ^ 1);
                mb_arrive_tx(bar, WS_STAGE_BYTES);
                tma_2d(st, tmA, kt * BK, m0, bar);
                if (multicast)
                    for (int q = 2 * rank; q < 2 * rank + 2; q++) tma_2d_multicast(st + 16384 + 8192 * q, tmB, n0 + 64 * q, kt * BK, bar, 0x3);
                else
                    for (int q = 0; q < 4; q++) tma_2d(st + 16384 + 8192 * q, tmB, n0 + 64 * q, kt * BK, bar);
            }
        }
        if (multicast) cluster_sync();
        return;
    }
    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");
    int half = wg - 1, it = 0;
    for (int tile = first; tile < tiles; tile += stride) {
        int m0 = tile / tilesN * 128, n0 = tile % tilesN * 256;
        float d[128];
#pragma unroll
        for (int j = 0; j < 128; j++) d[j] = 0.0f;
        for (int kt = 0; kt < steps; kt++, it++) {
            int s = it % WS_STAGES;
            unsigned st = base + s * WS_STAGE_BYTES;
            mb_wait(full + 8 * s, (it / WS_STAGES) & 1);
            wgmma_fence();
#pragma unroll
            for (int ks = 0; ks < BK / 16; ks++) wgmma_256(d, desc_a(st + half * 64 * 128, ks), desc_b(st + 16384, ks));
            wgmma_commit();
            wgmma_wait0();
            mb_arrive(empty + 8 * s);
            if (multicast) mb_arrive_remote(empty + 8 * s, rank ^ 1);
        }
        store_tile<128>(d, C, M, N, m0 + 64 * half, n0, t % 128);
    }
    if (multicast) cluster_sync();
}

// hopper_wgmma_ws: warp specialisation (ws_gemm), one 128×256 tile per block.
// Block 384; grid (ceil(N/256), ceil(M/128)).
extern "C" __global__ void __launch_bounds__(384, 1) hopper_wgmma_ws(const bf16_bits* A, const bf16_bits* B, float* C, int M, int N, int K,
                                                                     const __grid_constant__ TensorMap tmA, const __grid_constant__ TensorMap tmB) {
    ws_gemm<false>(A, B, C, M, N, K, &tmA, &tmB);
}

// hopper_wgmma_persistent: ws_gemm with a persistent tile scheduler: as many blocks as the H100's and
// H200's SMs (132), or tiles if fewer, each looping over the tiles blockIdx.x, + gridDim.x, …, so
// that one block's epilogue overlaps its next tile's first copies and no wave of blocks is left
// partly empty. Block 384; grid (min(132, ceil(N/256)·ceil(M/128)), 1).
extern "C" __global__ void __launch_bounds__(384, 1) hopper_wgmma_persistent(const bf16_bits* A, const bf16_bits* B, float* C, int M, int N, int K,
                                                                             const __grid_constant__ TensorMap tmA, const __grid_constant__ TensorMap tmB) {
    ws_gemm<true>(A, B, C, M, N, K, &tmA, &tmB);
}

// hopper_wgmma_multicast: warp specialisation (ws_gemm) in 1×2 clusters, B multicast: the two CTAs
// of a cluster share their tiles' B, each CTA's producer copying half of it into both.
// Block 384; grid (ceil(N/256), ceil(M/128)), M padded to 256 so that the clusters fill it.
extern "C" __global__ void __cluster_dims__(1, 2, 1) __launch_bounds__(384, 1) hopper_wgmma_multicast(const bf16_bits* A, const bf16_bits* B, float* C, int M, int N, int K,
                                                                                                      const __grid_constant__ TensorMap tmA, const __grid_constant__ TensorMap tmB) {
    ws_gemm<false, true>(A, B, C, M, N, K, &tmA, &tmB);
}
