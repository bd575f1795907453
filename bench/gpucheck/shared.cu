// shared.cu: one warp per kernel, each making one shared-memory access of the patterns that
// vgpu/counts_test.go counts (scalar, 64- and 128-bit, strided, broadcast; a wmma tile; ldmatrix), to read
// Nsight Compute's shared wavefronts and bank conflicts for them (docs/vgpu-metrics.md):
//
//	nvcc -O3 -arch=sm_90 -o /tmp/shared bench/gpucheck/shared.cu
//	ncu --csv --metrics l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum /tmp/shared
//
// The loads are inline PTX, so that ptxas keeps each one as written (one LDS of the given width).
#include <cstdio>
#include <cuda_bf16.h>
#include <mma.h>

__device__ float sink[32 * 4];

__device__ __forceinline__ unsigned smem(const void *p) { return (unsigned)__cvta_generic_to_shared(p); }

// ld.shared.f32 at tid·stride words
__global__ void ld_f32(int stride) {
  __shared__ __align__(16) float s[4096];
  int t = threadIdx.x;
  for (int i = t; i < 4096; i += 32) s[i] = i;
  __syncthreads();
  float a;
  asm volatile("ld.shared.f32 %0, [%1];" : "=f"(a) : "r"(smem(&s[t * stride])));
  sink[t] = a;
}

// ld.shared.v2.f32 at tid·stride float2s
__global__ void ld_v2(int stride) {
  __shared__ __align__(16) float s[4096];
  int t = threadIdx.x;
  for (int i = t; i < 4096; i += 32) s[i] = i;
  __syncthreads();
  float a, b;
  asm volatile("ld.shared.v2.f32 {%0, %1}, [%2];" : "=f"(a), "=f"(b) : "r"(smem(&s[2 * t * stride])));
  sink[t] = a + b;
}

// ld.shared.v4.f32 at tid·stride float4s (stride 0: a broadcast)
__global__ void ld_v4(int stride) {
  __shared__ __align__(16) float s[4096];
  int t = threadIdx.x;
  for (int i = t; i < 4096; i += 32) s[i] = i;
  __syncthreads();
  float a, b, c, d;
  asm volatile("ld.shared.v4.f32 {%0, %1, %2, %3}, [%4];" : "=f"(a), "=f"(b), "=f"(c), "=f"(d) : "r"(smem(&s[4 * t * stride])));
  sink[t] = a + b + c + d;
}

// ld.shared.v4.f32: lanes 0–7 read float4 0, lanes 8–15 float4 8 (the same banks), lanes 16–31
// float4 1: 4 wavefronts if quarter-warps are served apart, 3 if half-warps, 2 if the whole warp
__global__ void ld_v4_mix() {
  __shared__ __align__(16) float s[4096];
  int t = threadIdx.x;
  for (int i = t; i < 4096; i += 32) s[i] = i;
  __syncthreads();
  int k = t < 8 ? 0 : t < 16 ? 8 : 1;
  float a, b, c, d;
  asm volatile("ld.shared.v4.f32 {%0, %1, %2, %3}, [%4];" : "=f"(a), "=f"(b), "=f"(c), "=f"(d) : "r"(smem(&s[4 * k])));
  sink[t] = a + b + c + d;
}

// wmma.load.b (row-major) of a 16×16 bf16 tile from shared memory, rows ld elements apart
__global__ void wmma_b(int ld) {
  using namespace nvcuda;
  __shared__ __align__(32) __nv_bfloat16 s[16 * 128];
  int t = threadIdx.x;
  for (int i = t; i < 16 * 128; i += 32) s[i] = __float2bfloat16((float)(i % 7));
  __syncthreads();
  wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::row_major> b;
  wmma::load_matrix_sync(b, s, ld);
  float sum = 0;
  for (int i = 0; i < b.num_elements; i++) sum += __bfloat162float(b.x[i]);
  sink[t] = sum;
}

// wmma.load.a of a 16×16 bf16 tile from shared memory, rows ld elements apart
__global__ void wmma_a(int ld) {
  using namespace nvcuda;
  __shared__ __align__(32) __nv_bfloat16 s[16 * 128];
  int t = threadIdx.x;
  for (int i = t; i < 16 * 128; i += 32) s[i] = __float2bfloat16((float)(i % 7));
  __syncthreads();
  wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> a;
  wmma::load_matrix_sync(a, s, ld);
  float sum = 0;
  for (int i = 0; i < a.num_elements; i++) sum += __bfloat162float(a.x[i]);
  sink[t] = sum;
}

// st.shared.v4.f32 at tid·stride float4s
__global__ void st_v4(int stride) {
  __shared__ __align__(16) float s[4096];
  int t = threadIdx.x;
  float v = t;
  asm volatile("st.shared.v4.f32 [%0], {%1, %2, %3, %4};" ::"r"(smem(&s[4 * t * stride])), "f"(v), "f"(v), "f"(v), "f"(v) : "memory");
  __syncthreads();
  sink[t] = s[(t * 5) % 4096];
}

// ldmatrix.sync.aligned.m8n8.x4.shared.b16: lane l names row l%8 of matrix l/8 at byte
// row_bytes·(l%8) + mat_bytes·(l/8), the matrix index XORed with the row when swizzle is set. The
// virtual GPU counts (vgpu/mma_test.go, TestLdmatrixBankConflicts) 4, 32, 16 and 4 wavefronts for
// (16, 128, 0), (128, 16, 0), (64, 16, 0) and (128, 16, 1): not yet measured (2026-11-25).
__global__ void ldmatrix_x4(int row_bytes, int mat_bytes, int swizzle) {
  __shared__ __align__(16) unsigned short s[4096];
  int t = threadIdx.x;
  for (int i = t; i < 4096; i += 32) s[i] = i;
  __syncthreads();
  int r = t % 8, m = t / 8;
  unsigned off = row_bytes * r + mat_bytes * (swizzle ? (m ^ r) : m);
  unsigned a, b, c, d;
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(a), "=r"(b), "=r"(c), "=r"(d) : "r"(smem(s) + off));
  sink[t] = a + b + c + d;
}

int main() {
  for (int s : {1, 2, 0}) ld_f32<<<1, 32>>>(s);
  for (int s : {1, 2, 0}) ld_v2<<<1, 32>>>(s);
  for (int s : {1, 2, 0}) ld_v4<<<1, 32>>>(s);
  for (int ld : {16, 24, 64}) wmma_a<<<1, 32>>>(ld);
  for (int ld : {16, 24}) wmma_b<<<1, 32>>>(ld);
  ld_v4_mix<<<1, 32>>>();
  for (int s : {1, 2}) st_v4<<<1, 32>>>(s);
  ldmatrix_x4<<<1, 32>>>(16, 128, 0);
  ldmatrix_x4<<<1, 32>>>(128, 16, 0);
  ldmatrix_x4<<<1, 32>>>(64, 16, 0);
  ldmatrix_x4<<<1, 32>>>(128, 16, 1);
  cudaError_t e = cudaDeviceSynchronize();
  printf("%s\n", cudaGetErrorString(e));
  return e != cudaSuccess;
}
