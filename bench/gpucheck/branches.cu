// branches.cu: vgpu/counts_test.go's branch kernel (branchPTX: a 4-trip loop, a branch on tid < split
// and a store guarded by tid < 16), JIT-compiled from its PTX and launched for split 0, 32 and 16,
// to read Nsight Compute's branch and lane counts for it (docs/vgpu-metrics.md):
//
//	nvcc -o /tmp/branches bench/gpucheck/branches.cu -lcuda
//	ncu --csv --metrics smsp__sass_average_branch_targets_threads_uniform.pct,smsp__sass_branch_targets.sum,smsp__inst_executed.sum,smsp__thread_inst_executed.sum,smsp__thread_inst_executed_pred_on.sum /tmp/branches
//
// It also writes the PTX to /tmp/k.ptx, for `ptxas -arch=sm_90 /tmp/k.ptx -o /tmp/k.cubin && cuobjdump -sass /tmp/k.cubin`.
#include <cstdio>
#include <cuda.h>
const char *ptx = R"(.version 7.8
.target sm_80
.address_size 64
.visible .entry k(.param .u64 out, .param .u32 split)
{
	.reg .pred %p<4>;
	.reg .b32 %r<10>;
	.reg .b64 %rd<6>;
	ld.param.u64 %rd1, [out];
	ld.param.u32 %r1, [split];
	mov.u32 %r2, %tid.x;
	mov.u32 %r3, 0;
LOOP:
	add.s32 %r3, %r3, 1;
	setp.lt.u32 %p1, %r3, 4;
	@%p1 bra LOOP;
	setp.lt.u32 %p2, %r2, %r1;
	@%p2 bra SKIP;
	add.s32 %r3, %r3, 10;
SKIP:
	setp.lt.u32 %p3, %r2, 16;
	mul.wide.u32 %rd2, %r2, 4;
	add.s64 %rd3, %rd1, %rd2;
	@%p3 st.global.u32 [%rd3], %r3;
	ret;
}
)";
int main() {
  FILE *fp = fopen("/tmp/k.ptx", "w"); fputs(ptx, fp); fclose(fp);
  cuInit(0); CUdevice d; cuDeviceGet(&d, 0); CUcontext c; cuDevicePrimaryCtxRetain(&c, d); cuCtxSetCurrent(c);
  CUmodule m; CUresult e = cuModuleLoadData(&m, ptx); if (e) { printf("load %d\n", e); return 1; }
  CUfunction f; cuModuleGetFunction(&f, m, "k");
  CUdeviceptr out; cuMemAlloc(&out, 4096);
  for (unsigned split : {0u, 32u, 16u}) {
    void *args[] = {&out, &split};
    cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, 0, args, 0);
  }
  printf("sync %d\n", cuCtxSynchronize());
}
