// Generated from gpu/nvidia/ladder.go by `go run ./gpu/nvidia/internal/genlaunch` (bench/gpucheck/build.sh
// runs it); DO NOT EDIT. TestLaunchHeaderIsCurrent (gpu/nvidia) fails when it is stale.
//
// The playground's own GPU kernels (the table's rows with an entry point; cuBLAS rows are left out),
// in ladder order, for bench/gpucheck/launch.cu. Each is launched as the GPU worker launches it for a
// float32 cell (gpu/run.go; gpu/hopper.go for a row with an arch): on a device of compute capability
// cc (major*10 + minor) it runs entry with A and B of type input, or older_entry with older_input
// when cc < older_below; it is skipped when cc < min_cc. For size n it runs on n' = n rounded up to
// a multiple of pad (the host zero-pads A and B), with grid (ceil(n'/tile[0]), ceil(n'/tile[1]), 1)
// and block block, and the arguments (A, B, C, n', n', n'), C in float32, then one CUtensorMap per
// map. any_block: the kernel reads blockDim, so any block works with the grid ceil(n/block).
// arch: the one virtual architecture of its PTX ("90a": hopper.cu's compute_90a PTX, which loads on
// sm_90 only), "" for matmul.cu's. shared_bytes: its dynamic shared memory (over 48 KiB the kernel
// opts in with cuFuncSetAttribute first). persistent: when over 0 the grid is one block per SM
// (fewer where there are fewer tiles). cluster: when not all 0, the thread-block cluster it is
// launched in by cuLaunchKernelEx (a persistent grid rounded down to whole clusters; any other must
// be whole clusters). maps: nmaps tensor maps, each cuTensorMapEncodeTiled over the n'×n' input of
// (A or B) in its input type (rows n'·size bytes apart), box elements (innermost first) and swizzle
// bytes, no interleave, 128-byte L2 promotion, zero fill.
#ifndef GPUCHECK_KERNELS_GEN_H
#define GPUCHECK_KERNELS_GEN_H

#define GC_MAXMAPS 2

enum gc_input { GC_F32, GC_BF16, GC_F16 };

struct gc_map {
    char of;
    int box[2];
    int swizzle;
};

struct gc_kernel {
    const char* name;
    const char* entry;
    enum gc_input input;
    const char* older_entry;
    int older_below;
    enum gc_input older_input;
    int min_cc;
    int block[3];
    int tile[2];
    int pad;
    int any_block;
    const char* arch;
    int shared_bytes;
    int persistent;
    int cluster[3];
    int nmaps;
    struct gc_map maps[GC_MAXMAPS];
};

static const struct gc_kernel gc_kernels[] = {
    {"cuda-naive", "cuda_naive", GC_F32, 0, 0, GC_F32, 0, {32, 8, 1}, {32, 8}, 1, 1,
     "", 0, 0, {0, 0, 0}, 0, {{0, {0, 0}, 0}, {0, {0, 0}, 0}}},
    {"cuda-coalesced", "cuda_coalesced", GC_F32, 0, 0, GC_F32, 0, {32, 8, 1}, {32, 8}, 1, 1,
     "", 0, 0, {0, 0, 0}, 0, {{0, {0, 0}, 0}, {0, {0, 0}, 0}}},
    {"cuda-smem", "cuda_smem", GC_F32, 0, 0, GC_F32, 0, {32, 32, 1}, {32, 32}, 1, 0,
     "", 0, 0, {0, 0, 0}, 0, {{0, {0, 0}, 0}, {0, {0, 0}, 0}}},
    {"cuda-blocktile1d", "cuda_blocktile1d", GC_F32, 0, 0, GC_F32, 0, {512, 1, 1}, {64, 64}, 1, 0,
     "", 0, 0, {0, 0, 0}, 0, {{0, {0, 0}, 0}, {0, {0, 0}, 0}}},
    {"cuda-regblock", "cuda_regblock", GC_F32, 0, 0, GC_F32, 0, {256, 1, 1}, {128, 128}, 1, 0,
     "", 0, 0, {0, 0, 0}, 0, {{0, {0, 0}, 0}, {0, {0, 0}, 0}}},
    {"cuda-vectorized", "cuda_vectorized", GC_F32, 0, 0, GC_F32, 0, {256, 1, 1}, {128, 128}, 1, 0,
     "", 0, 0, {0, 0, 0}, 0, {{0, {0, 0}, 0}, {0, {0, 0}, 0}}},
    {"cuda-warptile", "cuda_warptile", GC_F32, 0, 0, GC_F32, 0, {256, 1, 1}, {128, 128}, 1, 0,
     "", 0, 0, {0, 0, 0}, 0, {{0, {0, 0}, 0}, {0, {0, 0}, 0}}},
    {"cuda-doublebuf", "cuda_doublebuf", GC_F32, 0, 0, GC_F32, 0, {256, 1, 1}, {128, 128}, 1, 0,
     "", 0, 0, {0, 0, 0}, 0, {{0, {0, 0}, 0}, {0, {0, 0}, 0}}},
    {"cuda-autotuned", "cuda_tile_128x256x8_w64x64", GC_F32, 0, 0, GC_F32, 0, {256, 1, 1}, {256, 128}, 1, 0,
     "", 0, 0, {0, 0, 0}, 0, {{0, {0, 0}, 0}, {0, {0, 0}, 0}}},
    {"cuda-wmma", "cuda_wmma_bf16", GC_BF16, "cuda_wmma_f16", 80, GC_F16, 0, {128, 4, 1}, {64, 64}, 16, 0,
     "", 0, 0, {0, 0, 0}, 0, {{0, {0, 0}, 0}, {0, {0, 0}, 0}}},
    {"cuda-mma", "cuda_mma", GC_BF16, 0, 0, GC_F32, 80, {256, 1, 1}, {128, 128}, 8, 0,
     "", 0, 0, {0, 0, 0}, 0, {{0, {0, 0}, 0}, {0, {0, 0}, 0}}},
    {"cuda-mma-async", "cuda_mma_async", GC_BF16, 0, 0, GC_F32, 80, {256, 1, 1}, {128, 128}, 8, 0,
     "", 0, 0, {0, 0, 0}, 0, {{0, {0, 0}, 0}, {0, {0, 0}, 0}}},
    {"cuda-mma-swizzle", "cuda_mma_swizzle", GC_BF16, 0, 0, GC_F32, 80, {256, 1, 1}, {128, 128}, 8, 0,
     "", 0, 0, {0, 0, 0}, 0, {{0, {0, 0}, 0}, {0, {0, 0}, 0}}},
    {"cuda-mma-warptile", "cuda_mma_warptile", GC_BF16, 0, 0, GC_F32, 80, {256, 1, 1}, {128, 256}, 8, 0,
     "", 0, 0, {0, 0, 0}, 0, {{0, {0, 0}, 0}, {0, {0, 0}, 0}}},
    {"cuda-wgmma", "hopper_wgmma", GC_BF16, 0, 0, GC_F32, 90, {256, 1, 1}, {128, 128}, 8, 0,
     "90a", 0, 0, {0, 0, 0}, 0, {{0, {0, 0}, 0}, {0, {0, 0}, 0}}},
    {"cuda-wgmma-tma", "hopper_wgmma_tma", GC_BF16, 0, 0, GC_F32, 90, {256, 1, 1}, {128, 128}, 128, 0,
     "90a", 131104, 0, {0, 0, 0}, 2, {{'A', {64, 128}, 128}, {'B', {64, 64}, 128}}},
    {"cuda-wgmma-ws", "hopper_wgmma_ws", GC_BF16, 0, 0, GC_F32, 90, {384, 1, 1}, {256, 128}, 256, 0,
     "90a", 196672, 0, {0, 0, 0}, 2, {{'A', {64, 128}, 128}, {'B', {64, 64}, 128}}},
    {"cuda-wgmma-persistent", "hopper_wgmma_persistent", GC_BF16, 0, 0, GC_F32, 90, {384, 1, 1}, {256, 128}, 256, 0,
     "90a", 196672, 132, {0, 0, 0}, 2, {{'A', {64, 128}, 128}, {'B', {64, 64}, 128}}},
    {"cuda-wgmma-multicast", "hopper_wgmma_multicast", GC_BF16, 0, 0, GC_F32, 90, {384, 1, 1}, {256, 128}, 256, 0,
     "90a", 196672, 0, {0, 0, 0}, 2, {{'A', {64, 128}, 128}, {'B', {64, 64}, 128}}},
    {"cuda-tile-128x64x16-w32x32", "cuda_tile_128x64x16_w32x32", GC_F32, 0, 0, GC_F32, 0, {256, 1, 1}, {64, 128}, 1, 0,
     "", 0, 0, {0, 0, 0}, 0, {{0, {0, 0}, 0}, {0, {0, 0}, 0}}},
    {"cuda-tile-256x128x8-w64x64", "cuda_tile_256x128x8_w64x64", GC_F32, 0, 0, GC_F32, 0, {256, 1, 1}, {128, 256}, 1, 0,
     "", 0, 0, {0, 0, 0}, 0, {{0, {0, 0}, 0}, {0, {0, 0}, 0}}},
};

#define GC_NKERNELS ((int)(sizeof gc_kernels / sizeof gc_kernels[0]))

#endif
