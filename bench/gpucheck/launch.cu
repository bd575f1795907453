// launch: runs every one of the playground's own GPU kernels from their embedded PTX
// (gpu/nvidia/ptx), as the GPU worker launches them for a float32 cell (gpu/run.go, and
// gpu/hopper.go for the Hopper rungs: entry point for the device's compute capability, BF16/FP16
// inputs zero-padded for the tensor-core rungs, grid and block of the kernel table, dynamic shared
// memory opted in over 48 KiB, a persistent grid of one block per SM, thread-block clusters through
// cuLaunchKernelEx, tensor maps made by cuTensorMapEncodeTiled), plus a few memory-bound kernels
// that a course teaches (copy, transpose naive/tiled/padded, a reduction), so that Nsight Compute can
// read their hardware counters. The own kernels come from kernels.gen.h, generated from the one
// table (gpu/nvidia/ladder.go) by `go run ./gpu/nvidia/internal/genlaunch`: a new row of the table
// needs nothing here.
//
// Built on the GPU machine by bench/gpucheck/run.sh with nvcc:
//   nvcc -O3 -arch=sm_90a -o launch bench/gpucheck/launch.cu -lcuda
// The own kernels go through the driver API only (cuda.h), so the file also builds as plain C++
// without the memory-bound kernels (no __CUDACC__: g++ -x c++ launch.cu -lcuda), which is how
// TestLaunchCuRunsOnFakeCUDA (gpu/nvidia/internal/launchtable) runs it against the strict fake
// libcuda of internal/fakecuda without a GPU.
//   launch PTX N [repeats]    prints one line per kernel: entry, n, grid, block, median seconds of
//                             repeats launches after a warm-up (repeats 0: one launch, "untimed")
//                             (own kernels: then the dynamic shared bytes, the cluster, the tensor
//                             maps and a check of 32 sampled entries of C against a float64 dot
//                             product of the rounded inputs), or why an own kernel was skipped
//                             (compute capability below its MinCC, its entry point not in PTX, a
//                             grid that is not whole clusters); exits 3 when a check failed
//   launch -entries [tiled|hopper]   prints the own kernels' entry points (both of a kernel with an
//                             older one), joined by '|' for ncu's -k regex:; "tiled": only those with
//                             a fixed block (not AnyBlock) and no arch of their own; "hopper": only
//                             those with an arch (hopper.cu's). Needs no GPU.
#include <cuda.h>
#ifdef __CUDACC__
#include <cuda_runtime.h>
#endif
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "kernels.gen.h"

#define CK(x) do { CUresult r = (x); if (r != CUDA_SUCCESS) { const char* s = 0; cuGetErrorName(r, &s); fprintf(stderr, "%s: %s\n", #x, s ? s : "?"); exit(1); } } while (0)

#ifdef __CUDACC__
__global__ void mem_copy(const float* in, float* out, int rows, int cols) {
    int c = blockIdx.x * blockDim.x + threadIdx.x, r = blockIdx.y * blockDim.y + threadIdx.y;
    if (r < rows && c < cols) out[r * cols + c] = in[r * cols + c];
}
__global__ void transpose_naive(const float* in, float* out, int rows, int cols) {
    int c = blockIdx.x * blockDim.x + threadIdx.x, r = blockIdx.y * blockDim.y + threadIdx.y;
    if (r < rows && c < cols) out[c * rows + r] = in[r * cols + c];
}
template <int PAD>
__global__ void transpose_tiled(const float* in, float* out, int rows, int cols) {
    __shared__ float t[32][32 + PAD];
    int c = blockIdx.x * 32 + threadIdx.x, r0 = blockIdx.y * 32;
    for (int j = threadIdx.y; j < 32; j += blockDim.y)
        if (r0 + j < rows && c < cols) t[j][threadIdx.x] = in[(r0 + j) * cols + c];
    __syncthreads();
    int oc = r0 + threadIdx.x, or0 = blockIdx.x * 32;
    for (int j = threadIdx.y; j < 32; j += blockDim.y)
        if (or0 + j < cols && oc < rows) out[(or0 + j) * rows + oc] = t[threadIdx.x][j];
}
__global__ void reduce_smem(const float* in, float* out, int n) {
    __shared__ float s[256];
    float v = 0;
    for (int i = blockIdx.x * 256 + threadIdx.x; i < n; i += gridDim.x * 256) v += in[i];
    s[threadIdx.x] = v;
    __syncthreads();
    for (int k = 128; k > 0; k >>= 1) {
        if (threadIdx.x < k) s[threadIdx.x] += s[threadIdx.x + k];
        __syncthreads();
    }
    if (threadIdx.x == 0) atomicAdd(out, s[0]);
}
__global__ void reduce_shfl(const float* in, float* out, int n) {
    float v = 0;
    for (int i = blockIdx.x * 256 + threadIdx.x; i < n; i += gridDim.x * 256) v += in[i];
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
    if ((threadIdx.x & 31) == 0) atomicAdd(out, v);
}
#endif

// The device: its context (the primary one, which the runtime also uses), the one stream every
// launch and event goes to, its compute capability (major*10 + minor) and SM count.
struct gc_device {
    CUcontext ctx;
    CUstream stream;
    int cc, sms;
};

static float median(std::vector<float> v) { std::sort(v.begin(), v.end()); return v[v.size() / 2]; }

// timed launches once to warm up (unless launched says the kernel has just run), then repeats times
// between two events, and prints the line (extra after the median, may be ""). With repeats 0 it
// launches at most once and prints "median_s=untimed": one launch per kernel for Nsight Compute.
template <typename F>
static void timed(const gc_device& d, const char* name, int n, const unsigned g[3], const unsigned b[3], int repeats,
                  bool launched, const std::string& extra, F launch) {
    if (!launched) { launch(); CK(cuCtxSynchronize()); }
    if (repeats == 0) {
        printf("%s n=%d grid=(%u,%u,%u) block=(%u,%u,%u) median_s=untimed%s\n", name, n, g[0], g[1], g[2], b[0], b[1], b[2], extra.c_str());
        return;
    }
    CUevent s, e;
    CK(cuEventCreate(&s, CU_EVENT_DEFAULT)); CK(cuEventCreate(&e, CU_EVENT_DEFAULT));
    std::vector<float> ms;
    for (int i = 0; i < repeats; i++) {
        CK(cuEventRecord(s, d.stream)); launch(); CK(cuEventRecord(e, d.stream)); CK(cuEventSynchronize(e));
        float t; CK(cuEventElapsedTime(&t, s, e)); ms.push_back(t);
    }
    CK(cuEventDestroy(s)); CK(cuEventDestroy(e));
    printf("%s n=%d grid=(%u,%u,%u) block=(%u,%u,%u) median_s=%.6e%s\n", name, n, g[0], g[1], g[2], b[0], b[1], b[2],
           median(ms) / 1e3, extra.c_str());
}

// entries prints the own kernels' entry points joined by '|' (only the fixed-block ones of matmul.cu
// when mode is "tiled", only those with an arch when it is "hopper").
static void entries(const char* mode) {
    const char* sep = "";
    for (int i = 0; i < GC_NKERNELS; i++) {
        const gc_kernel& k = gc_kernels[i];
        if (std::strcmp(mode, "tiled") == 0 && (k.any_block || k.arch[0])) continue;
        if (std::strcmp(mode, "hopper") == 0 && !k.arch[0]) continue;
        printf("%s%s", sep, k.entry); sep = "|";
        if (k.older_entry) printf("|%s", k.older_entry);
    }
    printf("\n");
}

// padded is n rounded up to a multiple of the kernel's pad, the size it runs on (nvidia.Kernel.Shape).
static int padded(const gc_kernel& k, int n) { return (n + k.pad - 1) / k.pad * k.pad; }

// bits16 rounds x to nearest even in BF16 or FP16 and returns its bits (FP16: overflow to
// infinity, subnormals in units of 2^-24).
static uint16_t bits16(float x, gc_input in) {
    uint32_t u; std::memcpy(&u, &x, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return in == GC_BF16 ? 0x7fc0 : 0x7e00; // NaN
    if (in == GC_BF16) return uint16_t((u + 0x7fffu + ((u >> 16) & 1)) >> 16);
    uint16_t sign = uint16_t((u >> 16) & 0x8000u);
    float a = std::fabs(x);
    if (a < 6.103515625e-05f) return uint16_t(sign | unsigned(std::nearbyint(a * 16777216.0f)));
    int e = int((u >> 23) & 0xff) - 127 + 15;
    if (e >= 31) return uint16_t(sign | 0x7c00u);
    uint32_t mant = u & 0x7fffffu, h = (uint32_t(e) << 10) | (mant >> 13), rem = mant & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1))) h++; // a carry into the exponent is right, up to infinity
    return uint16_t(sign | h);
}

// value16 is the float a BF16 or FP16 bit pattern holds.
static float value16(uint16_t h, gc_input in) {
    if (in == GC_BF16) { uint32_t u = uint32_t(h) << 16; float f; std::memcpy(&f, &u, 4); return f; }
    int e = (h >> 10) & 0x1f, f = h & 0x3ff;
    float v = e == 0 ? std::ldexp(float(f), -24) : e == 31 ? INFINITY : std::ldexp(float(f | 0x400), e - 25);
    return (h & 0x8000) ? -v : v;
}

// rounded is x as the kernel reads it: x itself in FP32, else rounded to 16 bits.
static float rounded(float x, gc_input in) { return in == GC_F32 ? x : value16(bits16(x, in), in); }

// upload copies the n×n host matrix x to d as the kernel reads it: m×m (m = n padded) entries of
// type in, zero beyond n, as gpu/host.go's Pad does for the worker.
static void upload(CUdeviceptr d, const std::vector<float>& x, int n, int m, gc_input in) {
    if (in == GC_F32) {
        std::vector<float> p(size_t(m) * m, 0.f);
        for (int r = 0; r < n; r++) std::memcpy(&p[size_t(r) * m], &x[size_t(r) * n], n * sizeof(float));
        CK(cuMemcpyHtoD(d, p.data(), p.size() * sizeof(float)));
        return;
    }
    std::vector<uint16_t> p(size_t(m) * m, 0);
    for (int r = 0; r < n; r++)
        for (int c = 0; c < n; c++) p[size_t(r) * m + c] = bits16(x[size_t(r) * n + c], in);
    CK(cuMemcpyHtoD(d, p.data(), p.size() * sizeof(uint16_t)));
}

// encodeMaps makes k's tensor maps over the m×m inputs A and B of type in (rows m·size bytes
// apart), as gpu/hopper.go's rungMaps does: the row's box and swizzle, no interleave, 128-byte L2
// promotion, zero fill.
static void encodeMaps(const gc_kernel& k, int m, gc_input in, CUdeviceptr A, CUdeviceptr B, CUtensorMap* maps) {
    CUtensorMapDataType dt = in == GC_BF16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : in == GC_F16 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16
                                                                                    : CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
    cuuint64_t elem = in == GC_F32 ? 4 : 2, dims[2] = {cuuint64_t(m), cuuint64_t(m)}, strides[1] = {cuuint64_t(m) * elem};
    cuuint32_t es[2] = {1, 1};
    for (int i = 0; i < k.nmaps; i++) {
        const gc_map& g = k.maps[i];
        cuuint32_t box[2] = {cuuint32_t(g.box[0]), cuuint32_t(g.box[1])};
        CUtensorMapSwizzle sw = g.swizzle == 128 ? CU_TENSOR_MAP_SWIZZLE_128B : g.swizzle == 64 ? CU_TENSOR_MAP_SWIZZLE_64B
                                : g.swizzle == 32 ? CU_TENSOR_MAP_SWIZZLE_32B : CU_TENSOR_MAP_SWIZZLE_NONE;
        CK(cuTensorMapEncodeTiled(&maps[i], dt, 2, (void*)(g.of == 'A' ? A : B), dims, strides, box, es,
                                  CU_TENSOR_MAP_INTERLEAVE_NONE, sw, CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
                                  CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE));
    }
}

// gridFor is k's grid at m on d (gpu/hopper.go's hopperGrid): ⌈m/tile⌉ per dimension, or one block
// per SM (fewer where there are fewer tiles) for a persistent kernel, rounded down to whole clusters
// (at least one); false where a non-persistent grid is not whole clusters.
static bool gridFor(const gc_kernel& k, int m, const gc_device& d, unsigned g[3]) {
    g[0] = (m + k.tile[0] - 1) / k.tile[0], g[1] = (m + k.tile[1] - 1) / k.tile[1], g[2] = 1;
    if (k.persistent > 0 && d.sms > 0) g[0] = std::min<unsigned>(d.sms, g[0] * g[1]), g[1] = 1;
    for (int i = 0; i < 3; i++) {
        unsigned c = k.cluster[i];
        if (c <= 1) continue;
        if (k.persistent > 0) g[i] = std::max(g[i] / c, 1u) * c;
        else if (g[i] % c) return false;
    }
    return true;
}

// check compares 32 sampled entries of the n×n product in C (rows m floats apart) with float64
// dot products of the inputs as the kernel read them; it returns "" or what is wrong.
static std::string check(CUdeviceptr C, int n, int m, gc_input in, const std::vector<float>& ha, const std::vector<float>& hb) {
    std::vector<float> row(n);
    char msg[160];
    for (int s = 0; s < 32; s++) {
        int i = int((uint64_t(s) * 2654435761u) % unsigned(n)), j = int((uint64_t(s) * 40503u + 7) % unsigned(n));
        float got;
        CK(cuMemcpyDtoH(&got, C + (size_t(i) * m + j) * sizeof(float), sizeof got));
        double want = 0, mag = 0;
        for (int p = 0; p < n; p++) {
            double t = double(rounded(ha[size_t(i) * n + p], in)) * rounded(hb[size_t(p) * n + j], in);
            want += t, mag += std::fabs(t);
        }
        if (!(std::fabs(got - want) <= 2e-4 * mag + 1e-6)) {
            snprintf(msg, sizeof msg, " check=WRONG C[%d][%d]=%g want %g", i, j, got, want);
            return msg;
        }
    }
    return "";
}

// ownKernel times own kernel k at size n on d, from mod, with A and B holding the inputs ha and hb as
// k reads them (uploaded here) and C the output; it returns false when its check failed.
static bool ownKernel(const gc_device& d, CUmodule mod, const gc_kernel& k, int n, int repeats, CUdeviceptr A,
                      CUdeviceptr B, CUdeviceptr C, const std::vector<float>& ha, const std::vector<float>& hb) {
    if (d.cc < k.min_cc) {
        printf("%s skipped: needs compute capability %d.%d, this device is %d.%d\n", k.entry, k.min_cc / 10, k.min_cc % 10, d.cc / 10, d.cc % 10);
        return true;
    }
    bool older = k.older_entry && d.cc < k.older_below;
    const char* entry = older ? k.older_entry : k.entry;
    gc_input in = older ? k.older_input : k.input;
    CUfunction fn;
    CUresult got = cuModuleGetFunction(&fn, mod, entry);
    if (got == CUDA_ERROR_NOT_FOUND) { printf("%s skipped: not in this PTX\n", entry); return true; }
    CK(got);
    int m = padded(k, n);
    unsigned g[3], b[3] = {unsigned(k.block[0]), unsigned(k.block[1]), unsigned(k.block[2])};
    if (!gridFor(k, m, d, g)) {
        printf("%s skipped: grid (%u,%u,%u) at n=%d is not whole (%d,%d,%d) clusters\n", entry, g[0], g[1], g[2], m, k.cluster[0], k.cluster[1], k.cluster[2]);
        return true;
    }
    if (k.shared_bytes > 48 << 10) CK(cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, k.shared_bytes));
    upload(A, ha, n, m, in); upload(B, hb, n, m, in);
    CK(cuMemsetD32(C, 0, size_t(m) * m));
    CUtensorMap maps[GC_MAXMAPS];
    encodeMaps(k, m, in, A, B, maps);
    void* args[6 + GC_MAXMAPS] = {&A, &B, &C, &m, &m, &m};
    for (int i = 0; i < k.nmaps; i++) args[6 + i] = &maps[i];
    bool cluster = k.cluster[0] || k.cluster[1] || k.cluster[2];
    CUlaunchAttribute attr;
    std::memset(&attr, 0, sizeof attr);
    attr.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    attr.value.clusterDim.x = k.cluster[0], attr.value.clusterDim.y = k.cluster[1], attr.value.clusterDim.z = k.cluster[2];
    CUlaunchConfig cfg;
    std::memset(&cfg, 0, sizeof cfg);
    cfg.gridDimX = g[0], cfg.gridDimY = g[1], cfg.gridDimZ = g[2], cfg.blockDimX = b[0], cfg.blockDimY = b[1], cfg.blockDimZ = b[2];
    cfg.sharedMemBytes = k.shared_bytes, cfg.hStream = d.stream, cfg.attrs = &attr, cfg.numAttrs = 1;
    std::string extra;
    if (k.arch[0] || k.shared_bytes || cluster || k.nmaps) {
        char s[128];
        snprintf(s, sizeof s, " shared=%d cluster=(%d,%d,%d) maps=%d", k.shared_bytes, k.cluster[0], k.cluster[1], k.cluster[2], k.nmaps);
        extra = s;
    }
    // One launch to check C first (the warm-up; timed's repeats then overwrite C with the same product).
    auto launch = [&] {
        if (cluster) CK(cuLaunchKernelEx(&cfg, fn, args, 0));
        else CK(cuLaunchKernel(fn, g[0], g[1], g[2], b[0], b[1], b[2], k.shared_bytes, d.stream, args, 0));
    };
    launch(); CK(cuCtxSynchronize());
    std::string bad = check(C, n, m, in, ha, hb);
    extra += bad.empty() ? " check=ok" : bad;
    timed(d, entry, n, g, b, repeats, true, extra, launch);
    return bad.empty();
}

// openDevice makes the first device's primary context current (the runtime's too) with one stream, and
// reads its compute capability and SM count.
static gc_device openDevice() {
    gc_device d;
    CUdevice dev;
    int major, minor;
    CK(cuInit(0));
    CK(cuDeviceGet(&dev, 0));
    CK(cuDevicePrimaryCtxRetain(&d.ctx, dev));
    CK(cuCtxSetCurrent(d.ctx));
    CK(cuStreamCreate(&d.stream, 0));
    CK(cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev));
    CK(cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev));
    CK(cuDeviceGetAttribute(&d.sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev));
    d.cc = major * 10 + minor;
    return d;
}

#ifdef __CUDACC__
// memoryKernels times the memory-bound kernels on the n×n floats A, writing C.
static void memoryKernels(const gc_device& d, int n, int repeats, CUdeviceptr dA, CUdeviceptr dC) {
    float *A = (float*)dA, *C = (float*)dC;
    cudaStream_t s = (cudaStream_t)d.stream;
    // One thread per element for copy and the naive transpose; a 32×32 tile per 32×8 block for the
    // tiled ones (each thread loops over 4 rows).
    dim3 b2(32, 8), g1((n + 31) / 32, (n + 7) / 8), g2((n + 31) / 32, (n + 31) / 32);
    unsigned b2u[3] = {32, 8, 1}, g1u[3] = {g1.x, g1.y, 1}, g2u[3] = {g2.x, g2.y, 1};
    timed(d, "mem_copy", n, g1u, b2u, repeats, false, "", [&] { mem_copy<<<g1, b2, 0, s>>>(A, C, n, n); });
    timed(d, "transpose_naive", n, g1u, b2u, repeats, false, "", [&] { transpose_naive<<<g1, b2, 0, s>>>(A, C, n, n); });
    timed(d, "transpose_tiled", n, g2u, b2u, repeats, false, "", [&] { transpose_tiled<0><<<g2, b2, 0, s>>>(A, C, n, n); });
    timed(d, "transpose_padded", n, g2u, b2u, repeats, false, "", [&] { transpose_tiled<1><<<g2, b2, 0, s>>>(A, C, n, n); });
    int total = n * n;
    dim3 g3(std::min((total + 255) / 256, 132 * 8)), b3(256);
    unsigned g3u[3] = {g3.x, 1, 1}, b3u[3] = {256, 1, 1};
    timed(d, "reduce_smem", n, g3u, b3u, repeats, false, "", [&] { reduce_smem<<<g3, b3, 0, s>>>(A, C, total); });
    timed(d, "reduce_shfl", n, g3u, b3u, repeats, false, "", [&] { reduce_shfl<<<g3, b3, 0, s>>>(A, C, total); });
    if (cudaStreamSynchronize(s) != cudaSuccess) { fprintf(stderr, "memory kernels: %s\n", cudaGetErrorString(cudaGetLastError())); exit(1); }
}
#endif

int main(int argc, char** argv) {
    if (argc >= 2 && std::strcmp(argv[1], "-entries") == 0) { entries(argc > 2 ? argv[2] : ""); return 0; }
    if (argc < 3) { fprintf(stderr, "usage: launch PTX N [repeats] | launch -entries [tiled|hopper]\n"); return 2; }
    int n = atoi(argv[2]), repeats = argc > 3 ? atoi(argv[3]) : 5;
    if (n < 1 || n > 32768 || repeats < 0) { fprintf(stderr, "launch: N is 1 to 32768, repeats 0 or more\n"); return 2; }
    gc_device d = openDevice();
    std::ifstream f(argv[1]); std::stringstream ss; ss << f.rdbuf(); std::string ptx = ss.str();
    if (ptx.empty()) { fprintf(stderr, "launch: cannot read PTX %s\n", argv[1]); return 2; }
    CUmodule mod; CK(cuModuleLoadData(&mod, ptx.c_str()));
    int mp = n; // the largest size any own kernel runs on
    for (int i = 0; i < GC_NKERNELS; i++) mp = std::max(mp, padded(gc_kernels[i], n));
    size_t bytes = size_t(mp) * mp * sizeof(float);
    std::vector<float> ha(size_t(n) * n), hb(size_t(n) * n);
    for (auto& x : ha) x = float(rand()) / float(RAND_MAX) * 2 - 1;
    for (auto& x : hb) x = float(rand()) / float(RAND_MAX) * 2 - 1;
    CUdeviceptr A, B, C;
    CK(cuMemAlloc(&A, bytes)); CK(cuMemAlloc(&B, bytes)); CK(cuMemAlloc(&C, bytes));
    bool ok = true;
    for (int i = 0; i < GC_NKERNELS; i++) ok = ownKernel(d, mod, gc_kernels[i], n, repeats, A, B, C, ha, hb) && ok;
#ifdef __CUDACC__
    upload(A, ha, n, n, GC_F32); // the memory-bound kernels read A as n×n floats
    memoryKernels(d, n, repeats, A, C);
#endif
    CK(cuCtxSynchronize());
    return ok ? 0 : 3;
}
