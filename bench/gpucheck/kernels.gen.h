// Generated from gpu/nvidia/ladder.go by `go run ./gpu/nvidia/internal/genlaunch` (bench/gpucheck/build.sh
// runs it); DO NOT EDIT. TestLaunchHeaderIsCurrent (gpu/nvidia) fails when it is stale.
//
// The playground's own GPU kernels (the table's rows with an entry point; cuBLAS rows are left out),
// in ladder order, for bench/gpucheck/launch.cu. Each is launched as the GPU worker launches it for a
// float32 cell (gpu/run.go): on a device of compute capability cc (major*10 + minor) it runs
// entry with A and B of type input, or older_entry with older_input when cc < older_below; it is
// skipped when cc < min_cc. For size n it runs on n' = n rounded up to a multiple of pad (the host
// zero-pads A and B), with grid (ceil(n'/tile[0]), ceil(n'/tile[1]), 1) and block block, and the
// arguments (A, B, C, n', n', n'), C in float32. any_block: the kernel reads blockDim, so any block
// works with the grid ceil(n/block).
#ifndef GPUCHECK_KERNELS_GEN_H
#define GPUCHECK_KERNELS_GEN_H

enum gc_input { GC_F32, GC_BF16, GC_F16 };

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
};

static const struct gc_kernel gc_kernels[] = {
    {"cuda-naive", "cuda_naive", GC_F32, 0, 0, GC_F32, 0, {32, 8, 1}, {32, 8}, 1, 1},
    {"cuda-coalesced", "cuda_coalesced", GC_F32, 0, 0, GC_F32, 0, {32, 8, 1}, {32, 8}, 1, 1},
    {"cuda-smem", "cuda_smem", GC_F32, 0, 0, GC_F32, 0, {32, 32, 1}, {32, 32}, 1, 0},
    {"cuda-blocktile1d", "cuda_blocktile1d", GC_F32, 0, 0, GC_F32, 0, {512, 1, 1}, {64, 64}, 1, 0},
    {"cuda-regblock", "cuda_regblock", GC_F32, 0, 0, GC_F32, 0, {256, 1, 1}, {128, 128}, 1, 0},
    {"cuda-vectorized", "cuda_vectorized", GC_F32, 0, 0, GC_F32, 0, {256, 1, 1}, {128, 128}, 1, 0},
    {"cuda-warptile", "cuda_warptile", GC_F32, 0, 0, GC_F32, 0, {256, 1, 1}, {128, 128}, 1, 0},
    {"cuda-doublebuf", "cuda_doublebuf", GC_F32, 0, 0, GC_F32, 0, {256, 1, 1}, {128, 128}, 1, 0},
    {"cuda-autotuned", "cuda_tile_128x256x8_w64x64", GC_F32, 0, 0, GC_F32, 0, {256, 1, 1}, {256, 128}, 1, 0},
    {"cuda-wmma", "cuda_wmma_bf16", GC_BF16, "cuda_wmma_f16", 80, GC_F16, 0, {128, 4, 1}, {64, 64}, 16, 0},
    {"cuda-mma", "cuda_mma", GC_BF16, 0, 0, GC_F32, 80, {256, 1, 1}, {128, 128}, 8, 0},
    {"cuda-mma-async", "cuda_mma_async", GC_BF16, 0, 0, GC_F32, 80, {256, 1, 1}, {128, 128}, 8, 0},
    {"cuda-mma-swizzle", "cuda_mma_swizzle", GC_BF16, 0, 0, GC_F32, 80, {256, 1, 1}, {128, 128}, 8, 0},
    {"cuda-mma-warptile", "cuda_mma_warptile", GC_BF16, 0, 0, GC_F32, 80, {256, 1, 1}, {128, 256}, 8, 0},
    {"cuda-tile-128x64x16-w32x32", "cuda_tile_128x64x16_w32x32", GC_F32, 0, 0, GC_F32, 0, {256, 1, 1}, {64, 128}, 1, 0},
    {"cuda-tile-256x128x8-w64x64", "cuda_tile_256x128x8_w64x64", GC_F32, 0, 0, GC_F32, 0, {256, 1, 1}, {128, 256}, 1, 0},
};

#define GC_NKERNELS ((int)(sizeof gc_kernels / sizeof gc_kernels[0]))

#endif
