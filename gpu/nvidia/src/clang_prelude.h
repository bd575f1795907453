// The playground's prelude for compiling CUDA C++ with clang (package gpu, gpu/nvidia/clang.go).
//
// NVRTC has CUDA's device-side declarations built in; clang, run with -nocudainc -nocudalib (no CUDA
// toolkit, no libdevice), has only its NVPTX builtins. This file, passed to clang with -include
// before the learner's source, declares what a kernel written for NVRTC without any #include uses:
//
//   - the execution-space and launch attributes (__global__, __device__, __host__, __shared__,
//     __constant__, __launch_bounds__, __forceinline__, __noinline__);
//   - size_t and ptrdiff_t;
//   - the vector types char1..double4 (with CUDA's alignments), their make_ functions, uint3, dim3;
//   - the built-in variables threadIdx, blockIdx, blockDim, gridDim and warpSize;
//   - __syncthreads (a clang builtin) and its _count/_and/_or forms, __syncwarp, __threadfence*;
//   - warp shuffles (__shfl_sync, __shfl_up_sync, __shfl_down_sync, __shfl_xor_sync), votes
//     (__all_sync, __any_sync, __uni_sync, __ballot_sync), __activemask;
//   - atomics (atomicAdd, Sub, Exch, Min, Max, Inc, Dec, CAS, And, Or, Xor) on global and shared
//     memory;
//   - __ldg for the scalar types and float2/float4/int2/int4/uint2/uint4/double2;
//   - integer intrinsics (__popc, __clz, __ffs, __brev, __mulhi, __mul24, min, max, abs) and bit casts;
//   - float math: exact operations mapped to PTX instructions (sqrtf, fabsf, fmaf, fminf, floorf,
//     rintf, …, and the __f*_rn intrinsics), the fast intrinsics (__expf, __logf, __sinf, __cosf,
//     __fdividef, __powf, rsqrtf) mapped to PTX's .approx instructions, and the transcendental
//     functions implemented here, since there is no libdevice (expf, exp2f, exp10f, expm1f, logf,
//     log2f, log10f, powf, sinf, cosf, tanf, sincosf, tanhf, sinhf, coshf, atanf, atan2f, asinf,
//     acosf, hypotf), within 3 ulp of the correctly rounded result in the tests (sinf, cosf, tanf for
//     |x| up to 10^6); double: sqrt, fabs, fma, fmin, fmax, floor, ceil, trunc, round, rint,
//     copysign, exp, exp2, log, log2, log10, pow;
//   - printf (clang lowers it to vprintf);
//   - __align__(n), and what CUDA's own headers (cuda_fp16.h, cuda_bf16.h, mma.h; CUDA 11.8, given
//     with -isystem when the server has them) need beyond the above: __CUDACC_RTC__ (they then
//     include no system header, as under NVRTC), std::move, the rounding int/float conversions,
//     a 16-bit atomicCAS, atomicAdd_block, address-space tests, __trap, __nanosleep, the clocks,
//     memcpy, and what cooperative groups use.
//
// Not here: half and bfloat16 types, WMMA fragments and cooperative groups (CUDA's cuda_fp16.h,
// cuda_bf16.h, mma.h and cooperative_groups.h declare them, as for NVRTC, with what this file adds
// for them). Written for this project; clang's own CUDA headers are not used.

#define __global__ __attribute__((global))
#define __device__ __attribute__((device))
#define __host__ __attribute__((host))
#define __shared__ __attribute__((shared))
#define __constant__ __attribute__((constant))
#define __forceinline__ __inline__ __attribute__((always_inline))
#define __noinline__ __attribute__((noinline))
#define __align__(n) __attribute__((aligned(n)))
#define __launch_bounds__(...) __attribute__((launch_bounds(__VA_ARGS__)))
#define __CUDACC__ 1
// CUDA's headers, read as NVRTC reads them: without system headers (there are none here); those
// that declare what this file does are skipped (their include guards), or empty for clang
// (ClangStubHeaders, gpu/nvidia/clang.go).
#define __CUDACC_RTC__ 1
#undef __x86_64__ // as in NVRTC's device compile (cooperative groups then use their own type traits)
#undef __aarch64__
#define __VECTOR_TYPES_H__
#define __VECTOR_FUNCTIONS_H__
#define __VECTOR_FUNCTIONS_HPP__

// __PG_FN marks the prelude's device functions: inlined, and local to the translation unit.
#define __PG_FN static __inline__ __attribute__((device, always_inline))
#define __PG_HD static __inline__ __attribute__((host, device, always_inline))

typedef __SIZE_TYPE__ size_t;
typedef __PTRDIFF_TYPE__ ptrdiff_t;

// ---- vector types (CUDA C++ Programming Guide, "Built-in Vector Types": sizes and alignments) ----

#define __PG_VEC1(T, N, A)                                                                         \
    struct __attribute__((aligned(A))) N##1 { T x; };                                              \
    __PG_HD N##1 make_##N##1(T x) { N##1 v; v.x = x; return v; }
#define __PG_VEC2(T, N, A)                                                                         \
    struct __attribute__((aligned(A))) N##2 { T x, y; };                                           \
    __PG_HD N##2 make_##N##2(T x, T y) { N##2 v; v.x = x; v.y = y; return v; }
#define __PG_VEC3(T, N, A)                                                                         \
    struct __attribute__((aligned(A))) N##3 { T x, y, z; };                                        \
    __PG_HD N##3 make_##N##3(T x, T y, T z) { N##3 v; v.x = x; v.y = y; v.z = z; return v; }
#define __PG_VEC4(T, N, A)                                                                         \
    struct __attribute__((aligned(A))) N##4 { T x, y, z, w; };                                     \
    __PG_HD N##4 make_##N##4(T x, T y, T z, T w) { N##4 v; v.x = x; v.y = y; v.z = z; v.w = w; return v; }
#define __PG_VECS(T, N, A1, A2, A3, A4) __PG_VEC1(T, N, A1) __PG_VEC2(T, N, A2) __PG_VEC3(T, N, A3) __PG_VEC4(T, N, A4)

__PG_VECS(signed char, char, 1, 2, 1, 4)
__PG_VECS(unsigned char, uchar, 1, 2, 1, 4)
__PG_VECS(short, short, 2, 4, 2, 8)
__PG_VECS(unsigned short, ushort, 2, 4, 2, 8)
__PG_VECS(int, int, 4, 8, 4, 16)
__PG_VECS(unsigned int, uint, 4, 8, 4, 16)
__PG_VECS(long, long, 8, 16, 8, 16)
__PG_VECS(unsigned long, ulong, 8, 16, 8, 16)
__PG_VECS(long long, longlong, 8, 16, 8, 16)
__PG_VECS(unsigned long long, ulonglong, 8, 16, 8, 16)
__PG_VECS(float, float, 4, 8, 4, 16)
__PG_VECS(double, double, 8, 16, 8, 16)

struct dim3 {
    unsigned int x, y, z;
    __host__ __device__ constexpr dim3(unsigned int vx = 1, unsigned int vy = 1, unsigned int vz = 1) : x(vx), y(vy), z(vz) {}
    __host__ __device__ constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
    __host__ __device__ constexpr operator uint3() const { return uint3{x, y, z}; }
};

// ---- built-in variables: each member reads its PTX special register ----

#define __PG_SREG(T, NAME, REG, EXTRA)                                                             \
    struct __pg_##NAME##_t {                                                                       \
        __declspec(property(get = __get_x)) unsigned int x;                                        \
        __declspec(property(get = __get_y)) unsigned int y;                                        \
        __declspec(property(get = __get_z)) unsigned int z;                                        \
        static __inline__ __device__ __attribute__((always_inline)) unsigned int __get_x() { return __nvvm_read_ptx_sreg_##REG##_x(); } \
        static __inline__ __device__ __attribute__((always_inline)) unsigned int __get_y() { return __nvvm_read_ptx_sreg_##REG##_y(); } \
        static __inline__ __device__ __attribute__((always_inline)) unsigned int __get_z() { return __nvvm_read_ptx_sreg_##REG##_z(); } \
        __device__ operator T() const { return T(__get_x(), __get_y(), __get_z()); }               \
        EXTRA                                                                                      \
        __pg_##NAME##_t() = delete;                                                                \
        __pg_##NAME##_t(const __pg_##NAME##_t&) = delete;                                          \
        void operator=(const __pg_##NAME##_t&) const = delete;                                     \
    };                                                                                             \
    extern const __device__ __pg_##NAME##_t NAME;

struct __pg_uint3 : uint3 {
    __device__ __pg_uint3(unsigned int a, unsigned int b, unsigned int c) { x = a; y = b; z = c; }
};
// threadIdx and blockIdx convert to dim3 too (cooperative groups pass them as dim3).
#define __PG_TO_DIM3 __device__ operator dim3() const { return dim3(__get_x(), __get_y(), __get_z()); }
__PG_SREG(__pg_uint3, threadIdx, tid, __PG_TO_DIM3)
__PG_SREG(__pg_uint3, blockIdx, ctaid, __PG_TO_DIM3)
__PG_SREG(dim3, blockDim, ntid, )
__PG_SREG(dim3, gridDim, nctaid, )
#undef __PG_TO_DIM3
static constexpr int warpSize = 32;

// ---- synchronization ----

__PG_FN int __syncthreads_count(int p) { return __nvvm_bar0_popc(p); }
__PG_FN int __syncthreads_and(int p) { return __nvvm_bar0_and(p); }
__PG_FN int __syncthreads_or(int p) { return __nvvm_bar0_or(p); }
__PG_FN void __syncwarp(unsigned int mask = 0xffffffffu) { __nvvm_bar_warp_sync(mask); }
__PG_FN void __threadfence_block() { __nvvm_membar_cta(); }
__PG_FN void __threadfence() { __nvvm_membar_gl(); }
__PG_FN void __threadfence_system() { __nvvm_membar_sys(); }

// ---- bit casts and integer intrinsics ----

__PG_FN int __float_as_int(float x) { return __builtin_bit_cast(int, x); }
__PG_FN unsigned int __float_as_uint(float x) { return __builtin_bit_cast(unsigned int, x); }
__PG_FN float __int_as_float(int x) { return __builtin_bit_cast(float, x); }
__PG_FN float __uint_as_float(unsigned int x) { return __builtin_bit_cast(float, x); }
__PG_FN long long __double_as_longlong(double x) { return __builtin_bit_cast(long long, x); }
__PG_FN double __longlong_as_double(long long x) { return __builtin_bit_cast(double, x); }
__PG_FN int __double2hiint(double x) { return (int)(__double_as_longlong(x) >> 32); }
__PG_FN int __double2loint(double x) { return (int)__double_as_longlong(x); }
__PG_FN double __hiloint2double(int hi, int lo) { return __longlong_as_double((long long)((unsigned long long)(unsigned int)hi << 32 | (unsigned int)lo)); }

__PG_FN int __popc(unsigned int x) { return __builtin_popcount(x); }
__PG_FN int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
__PG_FN int __clz(int x) { return x == 0 ? 32 : __builtin_clz((unsigned int)x); }
__PG_FN int __clzll(long long x) { return x == 0 ? 64 : __builtin_clzll((unsigned long long)x); }
__PG_FN int __ffs(int x) { return x == 0 ? 0 : __builtin_ctz((unsigned int)x) + 1; }
__PG_FN int __ffsll(long long x) { return x == 0 ? 0 : __builtin_ctzll((unsigned long long)x) + 1; }
__PG_FN unsigned int __brev(unsigned int x) { return __builtin_bitreverse32(x); }
__PG_FN unsigned long long __brevll(unsigned long long x) { return __builtin_bitreverse64(x); }
__PG_FN int __mulhi(int a, int b) { return __nvvm_mulhi_i(a, b); }
__PG_FN unsigned int __umulhi(unsigned int a, unsigned int b) { return __nvvm_mulhi_ui(a, b); }
__PG_FN long long __mul64hi(long long a, long long b) { return __nvvm_mulhi_ll(a, b); }
__PG_FN unsigned long long __umul64hi(unsigned long long a, unsigned long long b) { return __nvvm_mulhi_ull(a, b); }
__PG_FN int __mul24(int a, int b) { return __nvvm_mul24_i(a, b); }
__PG_FN unsigned int __umul24(unsigned int a, unsigned int b) { return __nvvm_mul24_ui(a, b); }

__PG_FN int abs(int x) { return x < 0 ? -x : x; }
__PG_FN long labs(long x) { return x < 0 ? -x : x; }
__PG_FN long long llabs(long long x) { return x < 0 ? -x : x; }
__PG_FN int min(int a, int b) { return a < b ? a : b; }
__PG_FN int max(int a, int b) { return a > b ? a : b; }
__PG_FN unsigned int min(unsigned int a, unsigned int b) { return a < b ? a : b; }
__PG_FN unsigned int max(unsigned int a, unsigned int b) { return a > b ? a : b; }
__PG_FN long long min(long long a, long long b) { return a < b ? a : b; }
__PG_FN long long max(long long a, long long b) { return a > b ? a : b; }
__PG_FN unsigned long long min(unsigned long long a, unsigned long long b) { return a < b ? a : b; }
__PG_FN unsigned long long max(unsigned long long a, unsigned long long b) { return a > b ? a : b; }
__PG_FN long min(long a, long b) { return a < b ? a : b; }
__PG_FN long max(long a, long b) { return a > b ? a : b; }
__PG_FN unsigned long min(unsigned long a, unsigned long b) { return a < b ? a : b; }
__PG_FN unsigned long max(unsigned long a, unsigned long b) { return a > b ? a : b; }
__PG_FN unsigned int min(int a, unsigned int b) { return min((unsigned int)a, b); }
__PG_FN unsigned int min(unsigned int a, int b) { return min(a, (unsigned int)b); }
__PG_FN unsigned int max(int a, unsigned int b) { return max((unsigned int)a, b); }
__PG_FN unsigned int max(unsigned int a, int b) { return max(a, (unsigned int)b); }
__PG_FN unsigned int umin(unsigned int a, unsigned int b) { return a < b ? a : b; }
__PG_FN unsigned int umax(unsigned int a, unsigned int b) { return a > b ? a : b; }

// ---- warp shuffles and votes (PTX shfl.sync: c = ((32 - width) << 8) | clamp) ----

__PG_FN int __pg_shfl(int kind, unsigned int mask, int v, int lane, int c) {
    switch (kind) {
    case 0: return __nvvm_shfl_sync_idx_i32(mask, v, lane, c);
    case 1: return __nvvm_shfl_sync_up_i32(mask, v, lane, c);
    case 2: return __nvvm_shfl_sync_down_i32(mask, v, lane, c);
    default: return __nvvm_shfl_sync_bfly_i32(mask, v, lane, c);
    }
}
__PG_FN float __pg_shfl(int kind, unsigned int mask, float v, int lane, int c) {
    switch (kind) {
    case 0: return __nvvm_shfl_sync_idx_f32(mask, v, lane, c);
    case 1: return __nvvm_shfl_sync_up_f32(mask, v, lane, c);
    case 2: return __nvvm_shfl_sync_down_f32(mask, v, lane, c);
    default: return __nvvm_shfl_sync_bfly_f32(mask, v, lane, c);
    }
}
__PG_FN long long __pg_shfl(int kind, unsigned int mask, long long v, int lane, int c) {
    int lo = __pg_shfl(kind, mask, (int)v, lane, c);
    int hi = __pg_shfl(kind, mask, (int)(v >> 32), lane, c);
    return (long long)((unsigned long long)(unsigned int)hi << 32 | (unsigned int)lo);
}
#define __PG_SHFL_TYPES(F)                                                                         \
    F(int, int) F(unsigned int, int) F(float, float) F(long long, long long)                       \
    F(unsigned long long, long long) F(long, long long) F(unsigned long, long long)
#define __PG_SHFL_DEF(T, U)                                                                        \
    __PG_FN T __shfl_sync(unsigned int m, T v, int l, int w = 32) { return (T)__pg_shfl(0, m, (U)v, l, ((32 - w) << 8) | 0x1f); } \
    __PG_FN T __shfl_up_sync(unsigned int m, T v, unsigned int d, int w = 32) { return (T)__pg_shfl(1, m, (U)v, (int)d, (32 - w) << 8); } \
    __PG_FN T __shfl_down_sync(unsigned int m, T v, unsigned int d, int w = 32) { return (T)__pg_shfl(2, m, (U)v, (int)d, ((32 - w) << 8) | 0x1f); } \
    __PG_FN T __shfl_xor_sync(unsigned int m, T v, int l, int w = 32) { return (T)__pg_shfl(3, m, (U)v, l, ((32 - w) << 8) | 0x1f); }
__PG_SHFL_TYPES(__PG_SHFL_DEF)
#define __PG_SHFL_DOUBLE(NAME, L)                                                                  \
    __PG_FN double NAME(unsigned int m, double v, L l, int w = 32) { return __longlong_as_double(NAME(m, __double_as_longlong(v), l, w)); }
__PG_SHFL_DOUBLE(__shfl_sync, int)
__PG_SHFL_DOUBLE(__shfl_up_sync, unsigned int)
__PG_SHFL_DOUBLE(__shfl_down_sync, unsigned int)
__PG_SHFL_DOUBLE(__shfl_xor_sync, int)

__PG_FN int __all_sync(unsigned int mask, int p) { return __nvvm_vote_all_sync(mask, p); }
__PG_FN int __any_sync(unsigned int mask, int p) { return __nvvm_vote_any_sync(mask, p); }
__PG_FN int __uni_sync(unsigned int mask, int p) { return __nvvm_vote_uni_sync(mask, p); }
__PG_FN unsigned int __ballot_sync(unsigned int mask, int p) { return __nvvm_vote_ballot_sync(mask, p); }
__PG_FN unsigned int __activemask() {
    unsigned int m;
    asm volatile("activemask.b32 %0;" : "=r"(m));
    return m;
}
__PG_FN unsigned int __lanemask_lt() { return __nvvm_read_ptx_sreg_lanemask_lt(); }

// ---- atomics (PTX atom; generic addresses, so global and shared memory alike) ----

__PG_FN int atomicAdd(int* p, int v) { return __nvvm_atom_add_gen_i(p, v); }
__PG_FN unsigned int atomicAdd(unsigned int* p, unsigned int v) { return (unsigned int)__nvvm_atom_add_gen_i((int*)p, (int)v); }
__PG_FN unsigned long long atomicAdd(unsigned long long* p, unsigned long long v) { return (unsigned long long)__nvvm_atom_add_gen_ll((long long*)p, (long long)v); }
__PG_FN float atomicAdd(float* p, float v) { return __nvvm_atom_add_gen_f(p, v); }
__PG_FN double atomicAdd(double* p, double v) { return __nvvm_atom_add_gen_d(p, v); }
__PG_FN int atomicSub(int* p, int v) { return __nvvm_atom_add_gen_i(p, -v); }
__PG_FN unsigned int atomicSub(unsigned int* p, unsigned int v) { return (unsigned int)__nvvm_atom_add_gen_i((int*)p, -(int)v); }
__PG_FN int atomicExch(int* p, int v) { return __nvvm_atom_xchg_gen_i(p, v); }
__PG_FN unsigned int atomicExch(unsigned int* p, unsigned int v) { return (unsigned int)__nvvm_atom_xchg_gen_i((int*)p, (int)v); }
__PG_FN unsigned long long atomicExch(unsigned long long* p, unsigned long long v) { return (unsigned long long)__nvvm_atom_xchg_gen_ll((long long*)p, (long long)v); }
__PG_FN float atomicExch(float* p, float v) { return __int_as_float(__nvvm_atom_xchg_gen_i((int*)p, __float_as_int(v))); }
__PG_FN int atomicMin(int* p, int v) { return __nvvm_atom_min_gen_i(p, v); }
__PG_FN unsigned int atomicMin(unsigned int* p, unsigned int v) { return __nvvm_atom_min_gen_ui(p, v); }
__PG_FN long long atomicMin(long long* p, long long v) { return __nvvm_atom_min_gen_ll(p, v); }
__PG_FN unsigned long long atomicMin(unsigned long long* p, unsigned long long v) { return __nvvm_atom_min_gen_ull(p, v); }
__PG_FN int atomicMax(int* p, int v) { return __nvvm_atom_max_gen_i(p, v); }
__PG_FN unsigned int atomicMax(unsigned int* p, unsigned int v) { return __nvvm_atom_max_gen_ui(p, v); }
__PG_FN long long atomicMax(long long* p, long long v) { return __nvvm_atom_max_gen_ll(p, v); }
__PG_FN unsigned long long atomicMax(unsigned long long* p, unsigned long long v) { return __nvvm_atom_max_gen_ull(p, v); }
__PG_FN unsigned int atomicInc(unsigned int* p, unsigned int v) { return __nvvm_atom_inc_gen_ui(p, v); }
__PG_FN unsigned int atomicDec(unsigned int* p, unsigned int v) { return __nvvm_atom_dec_gen_ui(p, v); }
__PG_FN int atomicCAS(int* p, int cmp, int v) { return __nvvm_atom_cas_gen_i(p, cmp, v); }
__PG_FN unsigned int atomicCAS(unsigned int* p, unsigned int cmp, unsigned int v) { return (unsigned int)__nvvm_atom_cas_gen_i((int*)p, (int)cmp, (int)v); }
__PG_FN unsigned long long atomicCAS(unsigned long long* p, unsigned long long cmp, unsigned long long v) { return (unsigned long long)__nvvm_atom_cas_gen_ll((long long*)p, (long long)cmp, (long long)v); }
__PG_FN int atomicAdd_block(int* p, int v) { return __nvvm_atom_cta_add_gen_i(p, v); }
__PG_FN unsigned int atomicAdd_block(unsigned int* p, unsigned int v) { return (unsigned int)__nvvm_atom_cta_add_gen_i((int*)p, (int)v); }
__PG_FN float atomicAdd_block(float* p, float v) { return __nvvm_atom_cta_add_gen_f(p, v); }
__PG_FN unsigned short atomicCAS(unsigned short* p, unsigned short cmp, unsigned short v) {
  unsigned short old;
  asm volatile("atom.cas.b16 %0, [%1], %2, %3;" : "=h"(old) : "l"(p), "h"(cmp), "h"(v) : "memory");
  return old;
}
#define __PG_ATOM_BITS(NAME, OP)                                                                   \
    __PG_FN int NAME(int* p, int v) { return __nvvm_atom_##OP##_gen_i(p, v); }                     \
    __PG_FN unsigned int NAME(unsigned int* p, unsigned int v) { return (unsigned int)__nvvm_atom_##OP##_gen_i((int*)p, (int)v); } \
    __PG_FN unsigned long long NAME(unsigned long long* p, unsigned long long v) { return (unsigned long long)__nvvm_atom_##OP##_gen_ll((long long*)p, (long long)v); }
__PG_ATOM_BITS(atomicAnd, and)
__PG_ATOM_BITS(atomicOr, or)
__PG_ATOM_BITS(atomicXor, xor)

// ---- __ldg: loads through the read-only data cache (PTX ld.global.nc) ----

__PG_FN char __ldg(const char* p) { return __nvvm_ldg_c(p); }
__PG_FN signed char __ldg(const signed char* p) { return (signed char)__nvvm_ldg_c((const char*)p); }
__PG_FN short __ldg(const short* p) { return __nvvm_ldg_s(p); }
__PG_FN int __ldg(const int* p) { return __nvvm_ldg_i(p); }
__PG_FN long __ldg(const long* p) { return __nvvm_ldg_l(p); }
__PG_FN long long __ldg(const long long* p) { return __nvvm_ldg_ll(p); }
__PG_FN unsigned char __ldg(const unsigned char* p) { return __nvvm_ldg_uc(p); }
__PG_FN unsigned short __ldg(const unsigned short* p) { return __nvvm_ldg_us(p); }
__PG_FN unsigned int __ldg(const unsigned int* p) { return __nvvm_ldg_ui(p); }
__PG_FN unsigned long __ldg(const unsigned long* p) { return __nvvm_ldg_ul(p); }
__PG_FN unsigned long long __ldg(const unsigned long long* p) { return __nvvm_ldg_ull(p); }
__PG_FN float __ldg(const float* p) { return __nvvm_ldg_f(p); }
__PG_FN double __ldg(const double* p) { return __nvvm_ldg_d(p); }
typedef float __pg_f2 __attribute__((ext_vector_type(2)));
typedef float __pg_f4 __attribute__((ext_vector_type(4)));
typedef int __pg_i2 __attribute__((ext_vector_type(2)));
typedef int __pg_i4 __attribute__((ext_vector_type(4)));
typedef unsigned int __pg_u2 __attribute__((ext_vector_type(2)));
typedef unsigned int __pg_u4 __attribute__((ext_vector_type(4)));
typedef double __pg_d2 __attribute__((ext_vector_type(2)));
__PG_FN float2 __ldg(const float2* p) { __pg_f2 v = __nvvm_ldg_f2((const __pg_f2*)p); return make_float2(v.x, v.y); }
__PG_FN float4 __ldg(const float4* p) { __pg_f4 v = __nvvm_ldg_f4((const __pg_f4*)p); return make_float4(v.x, v.y, v.z, v.w); }
__PG_FN int2 __ldg(const int2* p) { __pg_i2 v = __nvvm_ldg_i2((const __pg_i2*)p); return make_int2(v.x, v.y); }
__PG_FN int4 __ldg(const int4* p) { __pg_i4 v = __nvvm_ldg_i4((const __pg_i4*)p); return make_int4(v.x, v.y, v.z, v.w); }
__PG_FN uint2 __ldg(const uint2* p) { __pg_u2 v = __nvvm_ldg_ui2((const __pg_u2*)p); return make_uint2(v.x, v.y); }
__PG_FN uint4 __ldg(const uint4* p) { __pg_u4 v = __nvvm_ldg_ui4((const __pg_u4*)p); return make_uint4(v.x, v.y, v.z, v.w); }
__PG_FN double2 __ldg(const double2* p) { __pg_d2 v = __nvvm_ldg_d2((const __pg_d2*)p); return make_double2(v.x, v.y); }

// ---- float math: operations that are one PTX instruction ----

__PG_FN float sqrtf(float x) { return __nvvm_sqrt_rn_f(x); }
__PG_FN float rsqrtf(float x) { return __nvvm_rsqrt_approx_f(x); }
__PG_FN float fabsf(float x) { return __nvvm_fabs_f(x); }
__PG_FN float fmaf(float a, float b, float c) { return __nvvm_fma_rn_f(a, b, c); }
__PG_FN float fminf(float a, float b) { return __nvvm_fmin_f(a, b); }
__PG_FN float fmaxf(float a, float b) { return __nvvm_fmax_f(a, b); }
__PG_FN float floorf(float x) { return __nvvm_floor_f(x); }
__PG_FN float ceilf(float x) { return __nvvm_ceil_f(x); }
__PG_FN float truncf(float x) { return __nvvm_trunc_f(x); }
__PG_FN float rintf(float x) { return __builtin_rintf(x); } // cvt.rni: to nearest, ties to even
__PG_FN float nearbyintf(float x) { return __builtin_rintf(x); }
__PG_FN float roundf(float x) { return __builtin_roundf(x); } // ties away from zero
__PG_FN float copysignf(float x, float y) { return __builtin_copysignf(x, y); }
__PG_FN float fdimf(float x, float y) { return x > y ? x - y : (x != x || y != y ? x + y : 0.0f); }
__PG_FN int isnan(float x) { return x != x; }
__PG_FN int isinf(float x) { return __nvvm_fabs_f(x) == __int_as_float(0x7f800000); }
__PG_FN int isfinite(float x) { return __nvvm_fabs_f(x) < __int_as_float(0x7f800000); }
__PG_FN int signbit(float x) { return (int)(__float_as_uint(x) >> 31); }
__PG_FN float __saturatef(float x) { return __nvvm_saturate_f(x); }
__PG_FN float __fadd_rn(float a, float b) { return __nvvm_add_rn_f(a, b); }
__PG_FN float __fsub_rn(float a, float b) { return __nvvm_add_rn_f(a, -b); }
__PG_FN float __fmul_rn(float a, float b) { return __nvvm_mul_rn_f(a, b); }
__PG_FN float __fdiv_rn(float a, float b) { return __nvvm_div_rn_f(a, b); }
__PG_FN float __fmaf_rn(float a, float b, float c) { return __nvvm_fma_rn_f(a, b, c); }
__PG_FN float __frcp_rn(float x) { return __nvvm_rcp_rn_f(x); }
__PG_FN float __fsqrt_rn(float x) { return __nvvm_sqrt_rn_f(x); }
__PG_FN float __fdividef(float a, float b) { return __nvvm_div_approx_f(a, b); }
__PG_FN float __expf(float x) { return __nvvm_ex2_approx_f(x * 1.44269504f); }
__PG_FN float __exp10f(float x) { return __nvvm_ex2_approx_f(x * 3.32192809f); }
__PG_FN float __logf(float x) { return __nvvm_lg2_approx_f(x) * 0.693147181f; }
__PG_FN float __log2f(float x) { return __nvvm_lg2_approx_f(x); }
__PG_FN float __log10f(float x) { return __nvvm_lg2_approx_f(x) * 0.301029996f; }
__PG_FN float __powf(float x, float y) { return __nvvm_ex2_approx_f(y * __nvvm_lg2_approx_f(x)); }
__PG_FN float __sinf(float x) { return __nvvm_sin_approx_f(x); }
__PG_FN float __cosf(float x) { return __nvvm_cos_approx_f(x); }
__PG_FN float __tanf(float x) { return __nvvm_div_approx_f(__nvvm_sin_approx_f(x), __nvvm_cos_approx_f(x)); }
__PG_FN int __float2int_rn(float x) { return __nvvm_f2i_rn(x); }
__PG_FN int __float2int_rz(float x) { return __nvvm_f2i_rz(x); }
__PG_FN int __float2int_rd(float x) { return __nvvm_f2i_rm(x); }
__PG_FN int __float2int_ru(float x) { return __nvvm_f2i_rp(x); }
__PG_FN float __int2float_rn(int x) { return __nvvm_i2f_rn(x); }
__PG_FN float __int2float_rz(int x) { return __nvvm_i2f_rz(x); }
__PG_FN float __int2float_rd(int x) { return __nvvm_i2f_rm(x); }
__PG_FN float __int2float_ru(int x) { return __nvvm_i2f_rp(x); }
__PG_FN float __uint2float_rn(unsigned int x) { return __nvvm_ui2f_rn(x); }
__PG_FN float __uint2float_rz(unsigned int x) { return __nvvm_ui2f_rz(x); }
__PG_FN float __uint2float_rd(unsigned int x) { return __nvvm_ui2f_rm(x); }
__PG_FN float __uint2float_ru(unsigned int x) { return __nvvm_ui2f_rp(x); }
__PG_FN unsigned int __float2uint_rn(float x) { return __nvvm_f2ui_rn(x); }
__PG_FN unsigned int __float2uint_rz(float x) { return __nvvm_f2ui_rz(x); }
__PG_FN unsigned int __float2uint_rd(float x) { return __nvvm_f2ui_rm(x); }
__PG_FN unsigned int __float2uint_ru(float x) { return __nvvm_f2ui_rp(x); }
__PG_FN long long __float2ll_rn(float x) { return __nvvm_f2ll_rn(x); }
__PG_FN long long __float2ll_rz(float x) { return __nvvm_f2ll_rz(x); }
__PG_FN long long __float2ll_rd(float x) { return __nvvm_f2ll_rm(x); }
__PG_FN long long __float2ll_ru(float x) { return __nvvm_f2ll_rp(x); }
__PG_FN unsigned long long __float2ull_rn(float x) { return __nvvm_f2ull_rn(x); }
__PG_FN unsigned long long __float2ull_rz(float x) { return __nvvm_f2ull_rz(x); }
__PG_FN unsigned long long __float2ull_rd(float x) { return __nvvm_f2ull_rm(x); }
__PG_FN unsigned long long __float2ull_ru(float x) { return __nvvm_f2ull_rp(x); }
__PG_FN float __ll2float_rn(long long x) { return __nvvm_ll2f_rn(x); }
__PG_FN float __ll2float_rz(long long x) { return __nvvm_ll2f_rz(x); }
__PG_FN float __ll2float_rd(long long x) { return __nvvm_ll2f_rm(x); }
__PG_FN float __ll2float_ru(long long x) { return __nvvm_ll2f_rp(x); }
__PG_FN float __ull2float_rn(unsigned long long x) { return __nvvm_ull2f_rn(x); }
__PG_FN float __ull2float_rz(unsigned long long x) { return __nvvm_ull2f_rz(x); }
__PG_FN float __ull2float_rd(unsigned long long x) { return __nvvm_ull2f_rm(x); }
__PG_FN float __ull2float_ru(unsigned long long x) { return __nvvm_ull2f_rp(x); }

// ---- double math: exact operations ----

__PG_FN double sqrt(double x) { return __nvvm_sqrt_rn_d(x); }
__PG_FN double fabs(double x) { return __nvvm_fabs_d(x); }
__PG_FN double fma(double a, double b, double c) { return __nvvm_fma_rn_d(a, b, c); }
__PG_FN double fmin(double a, double b) { return __nvvm_fmin_d(a, b); }
__PG_FN double fmax(double a, double b) { return __nvvm_fmax_d(a, b); }
__PG_FN double floor(double x) { return __nvvm_floor_d(x); }
__PG_FN double ceil(double x) { return __nvvm_ceil_d(x); }
__PG_FN double trunc(double x) { return __nvvm_trunc_d(x); }
__PG_FN double rint(double x) { return __builtin_rint(x); }
__PG_FN double round(double x) { return __builtin_round(x); }
__PG_FN double copysign(double x, double y) { return __builtin_copysign(x, y); }
__PG_FN int isnan(double x) { return x != x; }
__PG_FN int isinf(double x) { return __nvvm_fabs_d(x) == __longlong_as_double(0x7ff0000000000000ll); }
__PG_FN int isfinite(double x) { return __nvvm_fabs_d(x) < __longlong_as_double(0x7ff0000000000000ll); }
__PG_FN double min(double a, double b) { return __nvvm_fmin_d(a, b); }
__PG_FN double max(double a, double b) { return __nvvm_fmax_d(a, b); }
__PG_FN float min(float a, float b) { return __nvvm_fmin_f(a, b); }
__PG_FN float max(float a, float b) { return __nvvm_fmax_f(a, b); }

// ---- float transcendental functions (no libdevice): range reduction, then a Taylor polynomial
// short enough that its truncation error is far below FP32's unit roundoff. ----

// __pg_scalef returns x·2^e without overflow in the factor: e is split into three parts of one sign,
// each a normal power of two, so x is rounded at most once (at the last product).
__PG_FN float __pg_scalef(float x, int e) {
    e = e > 300 ? 300 : (e < -300 ? -300 : e);
    int a = e / 3, b = (e - a) / 2, c = e - a - b;
    return x * __int_as_float((a + 127) << 23) * __int_as_float((b + 127) << 23) * __int_as_float((c + 127) << 23);
}
__PG_FN float ldexpf(float x, int e) { return __pg_scalef(x, e); }
__PG_FN float scalbnf(float x, int e) { return __pg_scalef(x, e); }

#define __PG_INFF __int_as_float(0x7f800000)
#define __PG_NANF __int_as_float(0x7fffffff)
#define __PG_LN2F_HI 0.693145751953125f       // ln 2 to 16 bits: k·HI is exact for |k| < 2^8
#define __PG_LN2F_LO 1.42860682030941723e-06f // ln 2 − HI

// e^r − 1 for |r| ≤ 1/2 (Taylor to r^8; the next term is below 2^-27 relative).
__PG_FN float __pg_expm1_poly(float r) {
    float p = 2.48015873e-05f;
    p = __nvvm_fma_rn_f(p, r, 1.98412698e-04f);
    p = __nvvm_fma_rn_f(p, r, 1.38888889e-03f);
    p = __nvvm_fma_rn_f(p, r, 8.33333333e-03f);
    p = __nvvm_fma_rn_f(p, r, 4.16666667e-02f);
    p = __nvvm_fma_rn_f(p, r, 1.66666667e-01f);
    p = __nvvm_fma_rn_f(p, r, 0.5f);
    return __nvvm_fma_rn_f(p * r, r, r);
}

__PG_FN float expf(float x) {
    if (x != x) return x;
    if (x > 88.7228394f) return __PG_INFF;
    if (x < -103.972084f) return 0.0f;
    float k = __builtin_rintf(x * 1.44269504f);
    float r = __nvvm_fma_rn_f(k, -__PG_LN2F_HI, x);
    r = __nvvm_fma_rn_f(k, -__PG_LN2F_LO, r);
    return __pg_scalef(1.0f + __pg_expm1_poly(r), (int)k);
}

__PG_FN float exp2f(float x) {
    if (x != x) return x;
    if (x >= 128.0f) return __PG_INFF;
    if (x < -150.0f) return 0.0f;
    float k = __builtin_rintf(x);
    return __pg_scalef(1.0f + __pg_expm1_poly((x - k) * 0.693147181f), (int)k);
}

__PG_FN float exp10f(float x) {
    if (x != x) return x;
    if (x > 38.5318394f) return __PG_INFF;
    if (x < -45.1544994f) return 0.0f;
    float t = x * 2.30258512f;                                              // ln 10 rounded
    float err = __nvvm_fma_rn_f(x, 2.30258512f, -t) + x * -3.19754365e-08f; // the rest of x·ln 10
    float e = expf(t);
    return __nvvm_fma_rn_f(e, err, e);
}

__PG_FN float expm1f(float x) {
    if (x != x) return x;
    if (__nvvm_fabs_f(x) <= 0.5f) return __pg_expm1_poly(x);
    if (x < -17.0f) return -1.0f;
    return expf(x) - 1.0f;
}

// __pg_logf_parts splits ln x (x finite, > 0) into e·ln 2 + m with |m| ≤ ln √2.
__PG_FN float __pg_logf_parts(float x, int* e) {
    int k = 0;
    if (x < 1.17549435e-38f) { x *= 8388608.0f; k = -23; }
    unsigned int bits = __float_as_uint(x);
    k += (int)((bits >> 23) & 0xff) - 127;
    float m = __uint_as_float((bits & 0x7fffffu) | 0x3f800000u);
    if (m > 1.41421354f) { m *= 0.5f; k += 1; }
    *e = k;
    float f = m - 1.0f; // exact (Sterbenz)
    float s = f / (2.0f + f);
    float s2 = s * s;
    // ln m = 2 atanh s = 2s (1 + s²/3 + s⁴/5 + …), |s| ≤ 0.172
    float p = 2.0f / 11.0f;
    p = __nvvm_fma_rn_f(p, s2, 2.0f / 9.0f);
    p = __nvvm_fma_rn_f(p, s2, 2.0f / 7.0f);
    p = __nvvm_fma_rn_f(p, s2, 2.0f / 5.0f);
    p = __nvvm_fma_rn_f(p, s2, 2.0f / 3.0f);
    return __nvvm_fma_rn_f(p * s2, s, 2.0f * s);
}
// __pg_logf_special is ln x for x that is not finite and positive: NaN, negative, zero or ∞.
__PG_FN float __pg_logf_special(float x) {
    if (x != x) return x;
    if (x < 0.0f) return __PG_NANF;
    if (x == 0.0f) return -__PG_INFF;
    return x;
}
__PG_FN float logf(float x) {
    if (!(x > 0.0f && x < __PG_INFF)) return __pg_logf_special(x);
    int e;
    float m = __pg_logf_parts(x, &e);
    return __nvvm_fma_rn_f((float)e, __PG_LN2F_HI, __nvvm_fma_rn_f((float)e, __PG_LN2F_LO, m));
}
__PG_FN float log2f(float x) {
    if (!(x > 0.0f && x < __PG_INFF)) return __pg_logf_special(x);
    int e;
    float m = __pg_logf_parts(x, &e);
    return __nvvm_fma_rn_f(m, 1.44269504f, (float)e);
}
__PG_FN float log10f(float x) {
    if (!(x > 0.0f && x < __PG_INFF)) return __pg_logf_special(x);
    int e;
    float m = __pg_logf_parts(x, &e);
    return __nvvm_fma_rn_f((float)e, 0.301029996f, m * 0.434294482f);
}
__PG_FN float log1pf(float x) {
    float u = 1.0f + x;
    if (u == 1.0f) return x;
    if (!(u > 0.0f && u < __PG_INFF)) return __pg_logf_special(u);
    return logf(u) * (x / (u - 1.0f)); // corrects for the rounding of 1 + x
}

// sin and cos of r for |r| ≤ π/4 (Taylor to r^9 and r^10).
__PG_FN float __pg_sin_poly(float r) {
    float r2 = r * r;
    float p = 2.75573192e-06f;
    p = __nvvm_fma_rn_f(p, r2, -1.98412698e-04f);
    p = __nvvm_fma_rn_f(p, r2, 8.33333333e-03f);
    p = __nvvm_fma_rn_f(p, r2, -1.66666667e-01f);
    return __nvvm_fma_rn_f(p * r2, r, r);
}
__PG_FN float __pg_cos_poly(float r) {
    float r2 = r * r;
    float p = -2.75573192e-07f;
    p = __nvvm_fma_rn_f(p, r2, 2.48015873e-05f);
    p = __nvvm_fma_rn_f(p, r2, -1.38888889e-03f);
    p = __nvvm_fma_rn_f(p, r2, 4.16666667e-02f);
    p = __nvvm_fma_rn_f(p, r2, -0.5f);
    return __nvvm_fma_rn_f(p, r2, 1.0f);
}
// __pg_reduce returns r = x − q·π/2 with |r| ≤ π/4 (about) and q mod 4 in *quadrant: Cody–Waite in
// FP32 with a 3-part π/2 for |x| < 4000, in FP64 with a 3-part π/2 above (accurate to |x| ≈ 10^6).
__PG_FN float __pg_reduce(float x, int* quadrant) {
    if (__nvvm_fabs_f(x) < 4000.0f) {
        float q = __builtin_rintf(x * 0.636619747f);
        float r = __nvvm_fma_rn_f(q, -1.5703125f, x);
        r = __nvvm_fma_rn_f(q, -4.83751296997070312e-04f, r);
        r = __nvvm_fma_rn_f(q, -7.54978995489188216e-08f, r);
        *quadrant = (int)q & 3;
        return r;
    }
    double q = __builtin_rint((double)x * 0.63661977236758138);
    double r = __nvvm_fma_rn_d(q, -1.5707963267341256, (double)x);
    r = __nvvm_fma_rn_d(q, -6.077100506506192e-11, r);
    r = __nvvm_fma_rn_d(q, -3.5215598651832e-27, r);
    *quadrant = (int)(long long)q & 3;
    return (float)r;
}
__PG_FN void sincosf(float x, float* s, float* c) {
    if (x - x != 0.0f) { *s = *c = __PG_NANF; if (x != x) *s = *c = x; return; }
    int q;
    float r = __pg_reduce(x, &q);
    float sr = __pg_sin_poly(r), cr = __pg_cos_poly(r);
    switch (q) {
    case 0: *s = sr; *c = cr; break;
    case 1: *s = cr; *c = -sr; break;
    case 2: *s = -sr; *c = -cr; break;
    default: *s = -cr; *c = sr; break;
    }
}
__PG_FN float sinf(float x) { float s, c; sincosf(x, &s, &c); return s; }
__PG_FN float cosf(float x) { float s, c; sincosf(x, &s, &c); return c; }
__PG_FN float tanf(float x) {
    if (x - x != 0.0f) return x != x ? x : __PG_NANF;
    int q;
    float r = __pg_reduce(x, &q);
    float sr = __pg_sin_poly(r), cr = __pg_cos_poly(r);
    int odd = q & 1;
    return (odd ? -cr : sr) / (odd ? sr : cr);
}
__PG_FN float tanhf(float x) {
    float a = __nvvm_fabs_f(x);
    if (a != a) return x;
    if (a > 9.1f) return copysignf(1.0f, x);
    if (a < 1e-4f) return x;
    float e = expm1f(2.0f * a);
    return copysignf(e / (e + 2.0f), x);
}
// __pg_exp_half is e^a / 2 for a ≥ 88, where e^a alone would overflow: e^(a − ln2_hi) is exact in
// its argument (a − ln2_hi needs no rounding below 128), then times e^(−ln2_lo) ≈ 1 − ln2_lo.
__PG_FN float __pg_exp_half(float a) {
    if (a > 89.5f) return __PG_INFF;
    float e = expf(a - __PG_LN2F_HI);
    return __nvvm_fma_rn_f(e, -__PG_LN2F_LO, e);
}
__PG_FN float sinhf(float x) {
    float a = __nvvm_fabs_f(x);
    if (a != a) return x;
    float r;
    if (a < 1.0f) {
        float e = expm1f(a);
        r = 0.5f * (e + e / (e + 1.0f));
    } else if (a < 88.0f) {
        float e = expf(a);
        r = 0.5f * (e - 1.0f / e);
    } else {
        r = __pg_exp_half(a);
    }
    return copysignf(r, x);
}
__PG_FN float coshf(float x) {
    float a = __nvvm_fabs_f(x);
    if (a != a) return a;
    if (a < 88.0f) {
        float e = expf(a);
        return 0.5f * (e + 1.0f / e);
    }
    return __pg_exp_half(a);
}

// atan of t for |t| ≤ tan(π/12) ≈ 0.268 (Taylor to t^13).
__PG_FN float __pg_atan_poly(float t) {
    float t2 = t * t;
    float p = 1.0f / 13.0f;
    p = __nvvm_fma_rn_f(p, t2, -1.0f / 11.0f);
    p = __nvvm_fma_rn_f(p, t2, 1.0f / 9.0f);
    p = __nvvm_fma_rn_f(p, t2, -1.0f / 7.0f);
    p = __nvvm_fma_rn_f(p, t2, 1.0f / 5.0f);
    p = __nvvm_fma_rn_f(p, t2, -1.0f / 3.0f);
    return __nvvm_fma_rn_f(p * t2, t, t);
}
__PG_FN float atanf(float x) {
    float a = __nvvm_fabs_f(x);
    if (a != a) return x;
    float off = 0.0f, sign = 1.0f;
    if (a > 1.0f) { a = 1.0f / a; off = 1.57079637f; sign = -1.0f; } // atan a = π/2 − atan(1/a)
    float r;
    if (a > 0.267949194f) { // atan a = π/6 + atan((a√3 − 1)/(a + √3))
        float t = __nvvm_fma_rn_f(a, 1.73205081f, -1.0f) / (a + 1.73205081f);
        r = 0.523598776f + __pg_atan_poly(t);
    } else {
        r = __pg_atan_poly(a);
    }
    r = __nvvm_fma_rn_f(sign, r, off);
    return copysignf(r, x);
}
__PG_FN float atan2f(float y, float x) {
    if (x != x || y != y) return x + y;
    const float pi = 3.14159265f;
    float ax = __nvvm_fabs_f(x), ay = __nvvm_fabs_f(y);
    float r;
    if (ay == 0.0f) {
        r = signbit(x) ? pi : 0.0f;
    } else if (ax == 0.0f) {
        r = pi / 2.0f;
    } else if (ax == __PG_INFF) {
        r = ay == __PG_INFF ? (signbit(x) ? 3.0f * pi / 4.0f : pi / 4.0f) : (signbit(x) ? pi : 0.0f);
    } else if (ay == __PG_INFF) {
        r = pi / 2.0f;
    } else {
        r = atanf(ay / ax); // ay/ax may be 0 or ∞ after rounding; atanf handles both
        if (signbit(x)) r = pi - r;
    }
    return copysignf(r, y);
}
__PG_FN float asinf(float x) {
    if (__nvvm_fabs_f(x) > 1.0f) return __PG_NANF;
    return atan2f(x, sqrtf((1.0f - x) * (1.0f + x)));
}
__PG_FN float acosf(float x) {
    if (__nvvm_fabs_f(x) > 1.0f) return __PG_NANF;
    return atan2f(sqrtf((1.0f - x) * (1.0f + x)), x);
}
__PG_FN float hypotf(float x, float y) {
    float a = __nvvm_fabs_f(x), b = __nvvm_fabs_f(y);
    if (a == __PG_INFF || b == __PG_INFF) return __PG_INFF;
    if (a != a || b != b) return a + b;
    float hi = a > b ? a : b, lo = a > b ? b : a;
    if (hi == 0.0f) return 0.0f;
    float t = lo / hi;
    return hi * sqrtf(__nvvm_fma_rn_f(t, t, 1.0f));
}

// ---- double exp and log (Taylor polynomials below FP64's unit roundoff), and powf through them ----

__PG_FN double __pg_scale(double x, int e) {
    e = e > 2200 ? 2200 : (e < -2200 ? -2200 : e);
    int a = e / 3, b = (e - a) / 2, c = e - a - b;
    return x * __longlong_as_double((long long)(a + 1023) << 52) * __longlong_as_double((long long)(b + 1023) << 52) *
           __longlong_as_double((long long)(c + 1023) << 52);
}
#define __PG_LN2_HI 0.6931471803691238 // ln 2 to 32 bits
#define __PG_LN2_LO 1.9082149292705877e-10
#define __PG_INF __longlong_as_double(0x7ff0000000000000ll)
#define __PG_NAN __longlong_as_double(0x7fffffffffffffffll)
__PG_FN double exp(double x) {
    if (x != x) return x;
    if (x > 709.782712893384) return __PG_INF;
    if (x < -745.2) return 0.0;
    double k = __builtin_rint(x * 1.4426950408889634);
    double r = __nvvm_fma_rn_d(k, -__PG_LN2_HI, x);
    r = __nvvm_fma_rn_d(k, -__PG_LN2_LO, r);
    // e^r − 1 for |r| ≤ ln2/2: Taylor to r^13 (coefficients 1/n!)
    double p = 1.6059043836821613e-10;
    p = __nvvm_fma_rn_d(p, r, 2.08767569878681e-09);
    p = __nvvm_fma_rn_d(p, r, 2.505210838544172e-08);
    p = __nvvm_fma_rn_d(p, r, 2.755731922398589e-07);
    p = __nvvm_fma_rn_d(p, r, 2.7557319223985893e-06);
    p = __nvvm_fma_rn_d(p, r, 2.48015873015873e-05);
    p = __nvvm_fma_rn_d(p, r, 1.984126984126984e-04);
    p = __nvvm_fma_rn_d(p, r, 1.388888888888889e-03);
    p = __nvvm_fma_rn_d(p, r, 8.333333333333333e-03);
    p = __nvvm_fma_rn_d(p, r, 4.1666666666666664e-02);
    p = __nvvm_fma_rn_d(p, r, 1.6666666666666666e-01);
    p = __nvvm_fma_rn_d(p, r, 0.5);
    return __pg_scale(1.0 + __nvvm_fma_rn_d(p * r, r, r), (int)k);
}
__PG_FN double __pg_log_parts(double x, int* e) {
    int k = 0;
    if (x < 2.2250738585072014e-308) { x *= 4503599627370496.0; k = -52; }
    unsigned long long bits = (unsigned long long)__double_as_longlong(x);
    k += (int)((bits >> 52) & 0x7ff) - 1023;
    double m = __longlong_as_double((long long)((bits & 0xfffffffffffffull) | 0x3ff0000000000000ull));
    if (m > 1.4142135623730951) { m *= 0.5; k += 1; }
    *e = k;
    double f = m - 1.0;
    double s = f / (2.0 + f);
    double s2 = s * s;
    double p = 2.0 / 23.0; // 2 atanh s, to s^23
    for (int i = 21; i >= 3; i -= 2) p = __nvvm_fma_rn_d(p, s2, 2.0 / i);
    return __nvvm_fma_rn_d(p * s2, s, 2.0 * s);
}
__PG_FN double __pg_log_special(double x) {
    if (x != x) return x;
    if (x < 0.0) return __PG_NAN;
    if (x == 0.0) return -__PG_INF;
    return x;
}
__PG_FN double log(double x) {
    if (!(x > 0.0 && x < __PG_INF)) return __pg_log_special(x);
    int e;
    double m = __pg_log_parts(x, &e);
    return __nvvm_fma_rn_d((double)e, __PG_LN2_HI, __nvvm_fma_rn_d((double)e, __PG_LN2_LO, m));
}
__PG_FN double log2(double x) {
    if (!(x > 0.0 && x < __PG_INF)) return __pg_log_special(x);
    int e;
    double m = __pg_log_parts(x, &e);
    return __nvvm_fma_rn_d(m, 1.4426950408889634, (double)e);
}
__PG_FN double log10(double x) { return log(x) * 0.43429448190325176; }
__PG_FN double exp2(double x) { return exp(x * 0.6931471805599453); }
__PG_FN double __pg_pow(double x, double y) {
    if (y == 0.0 || x == 1.0) return 1.0;
    if (x != x || y != y) return x + y;
    double ay = __nvvm_fabs_d(y);
    int yint = __nvvm_trunc_d(y) == y;
    int yodd = yint && ay < 9007199254740992.0 && __nvvm_fabs_d(y - 2.0 * __nvvm_trunc_d(0.5 * y)) == 1.0;
    if (x < 0.0 && !yint && __nvvm_fabs_d(x) != __PG_INF) return __PG_NAN;
    double ax = __nvvm_fabs_d(x);
    double r;
    if (ax == 0.0) r = y < 0.0 ? __PG_INF : 0.0;
    else if (ax == __PG_INF) r = y < 0.0 ? 0.0 : __PG_INF;
    else if (ay == __PG_INF) r = ax == 1.0 ? 1.0 : ((ax > 1.0) == (y > 0.0) ? __PG_INF : 0.0);
    else r = exp(y * log(ax));
    return (x < 0.0 || (x == 0.0 && signbit((float)x))) && yodd ? -r : r;
}
__PG_FN double pow(double x, double y) { return __pg_pow(x, y); }
__PG_FN float powf(float x, float y) { return (float)__pg_pow((double)x, (double)y); }

// C++ overloads of the math functions for float, as CUDA declares them.
__PG_FN float sqrt(float x) { return sqrtf(x); }
__PG_FN float fabs(float x) { return fabsf(x); }
__PG_FN float fma(float a, float b, float c) { return fmaf(a, b, c); }
__PG_FN float fmin(float a, float b) { return fminf(a, b); }
__PG_FN float fmax(float a, float b) { return fmaxf(a, b); }
__PG_FN float floor(float x) { return floorf(x); }
__PG_FN float ceil(float x) { return ceilf(x); }
__PG_FN float trunc(float x) { return truncf(x); }
__PG_FN float round(float x) { return roundf(x); }
__PG_FN float rint(float x) { return rintf(x); }
__PG_FN float exp(float x) { return expf(x); }
__PG_FN float exp2(float x) { return exp2f(x); }
__PG_FN float log(float x) { return logf(x); }
__PG_FN float log2(float x) { return log2f(x); }
__PG_FN float log10(float x) { return log10f(x); }
__PG_FN float pow(float x, float y) { return powf(x, y); }
__PG_FN float sin(float x) { return sinf(x); }
__PG_FN float cos(float x) { return cosf(x); }
__PG_FN float tan(float x) { return tanf(x); }
__PG_FN float tanh(float x) { return tanhf(x); }
__PG_FN float atan(float x) { return atanf(x); }
__PG_FN float atan2(float y, float x) { return atan2f(y, x); }

extern "C" __device__ int printf(const char* format, ...);


// What CUDA's pipeline, barrier and fp8 headers use: address-space tests, the shared-memory address
// of a generic pointer, __trap, __nanosleep, the clocks, and memcpy.
__PG_FN unsigned int __isGlobal(const void* p) { return __nvvm_isspacep_global(p); }
__PG_FN unsigned int __isShared(const void* p) { return __nvvm_isspacep_shared(p); }
__PG_FN unsigned int __isConstant(const void* p) { return __nvvm_isspacep_const(p); }
__PG_FN unsigned int __isLocal(const void* p) { return __nvvm_isspacep_local(p); }
__PG_FN unsigned int __nvvm_get_smem_pointer(void* p) {
  unsigned long long a;
  asm("cvta.to.shared.u64 %0, %1;" : "=l"(a) : "l"(p));
  return (unsigned int)a;
}
__PG_FN void __trap() { __builtin_trap(); }
__PG_FN void __nanosleep(unsigned int ns) { asm volatile("nanosleep.u32 %0;" ::"r"(ns)); }
__PG_FN long long clock64() {
  long long t;
  asm volatile("mov.u64 %0, %%clock64;" : "=l"(t));
  return t;
}
__PG_FN int clock() {
  int t;
  asm volatile("mov.u32 %0, %%clock;" : "=r"(t));
  return t;
}
// What cooperative groups use: NULL, __barrier_sync, __fns, the sm_80 warp reductions, and the
// device runtime's declarations for multi-grid groups (which need relocatable device code and the
// device runtime library: declared here, never defined).
#ifndef NULL
#define NULL __null
#endif
__PG_FN void __barrier_sync(unsigned int id) { __nvvm_barrier_sync(id); }
__PG_FN unsigned int __fns(unsigned int mask, unsigned int base, int offset) {
  unsigned int r;
  asm("fns.b32 %0, %1, %2, %3;" : "=r"(r) : "r"(mask), "r"(base), "r"(offset));
  return r;
}
#if __CUDA_ARCH__ >= 800
__PG_FN unsigned int __reduce_add_sync(unsigned int m, unsigned int v) { return __nvvm_redux_sync_add(v, m); }
__PG_FN int __reduce_add_sync(unsigned int m, int v) { return __nvvm_redux_sync_add(v, m); }
__PG_FN unsigned int __reduce_min_sync(unsigned int m, unsigned int v) { return __nvvm_redux_sync_umin(v, m); }
__PG_FN int __reduce_min_sync(unsigned int m, int v) { return __nvvm_redux_sync_min(v, m); }
__PG_FN unsigned int __reduce_max_sync(unsigned int m, unsigned int v) { return __nvvm_redux_sync_umax(v, m); }
__PG_FN int __reduce_max_sync(unsigned int m, int v) { return __nvvm_redux_sync_max(v, m); }
__PG_FN unsigned int __reduce_and_sync(unsigned int m, unsigned int v) { return __nvvm_redux_sync_and(v, m); }
__PG_FN unsigned int __reduce_or_sync(unsigned int m, unsigned int v) { return __nvvm_redux_sync_or(v, m); }
__PG_FN unsigned int __reduce_xor_sync(unsigned int m, unsigned int v) { return __nvvm_redux_sync_xor(v, m); }
#endif
#if __has_include(<driver_types.h>) // CUDA's headers are here: their declarations, not a second set
#include <driver_types.h>
#else
enum cudaError { cudaSuccess = 0 };
typedef enum cudaError cudaError_t;
enum cudaCGScope { cudaCGScopeInvalid = 0, cudaCGScopeGrid = 1, cudaCGScopeMultiGrid = 2 };
#endif
extern "C" __device__ unsigned long long cudaCGGetIntrinsicHandle(enum cudaCGScope scope);
extern "C" __device__ cudaError_t cudaCGSynchronize(unsigned long long handle, unsigned int flags);
extern "C" __device__ cudaError_t cudaCGGetSize(unsigned int* numThreads, unsigned int* numGrids, unsigned long long handle);
extern "C" __device__ cudaError_t cudaCGGetRank(unsigned int* threadRank, unsigned int* gridRank, unsigned long long handle);
extern "C" __device__ inline void* memcpy(void* d, const void* s, size_t n) { return __builtin_memcpy(d, s, n); }

// std::move, which NVRTC has built in and CUDA's headers use (cuda_fp16.hpp, cuda_bf16.hpp).
namespace std {
template <class T> struct remove_reference { typedef T type; };
template <class T> struct remove_reference<T &> { typedef T type; };
template <class T> struct remove_reference<T &&> { typedef T type; };
template <class T> __host__ __device__ constexpr typename remove_reference<T>::type &&move(T &&t) noexcept {
  return static_cast<typename remove_reference<T>::type &&>(t);
}
}  // namespace std

#undef __PG_FN
#undef __PG_HD
