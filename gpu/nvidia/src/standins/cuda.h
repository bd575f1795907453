// <cuda.h>: the playground's stand-in. The driver API it declares serves host code, which the GPU
// compilers leave out; device code uses one type of it: CUDA 12's tensor map (the 128-byte, 64-byte
// aligned CUtensorMap that TMA kernels take as a `const __grid_constant__` parameter). CUDA 11.8's
// cuda.h has none; the layout is CUDA 12's (CU_TENSOR_MAP_NUM_QWORDS 16).
#pragma once
typedef struct CUtensorMap_st {
	alignas(64) unsigned long long opaque[16];
} CUtensorMap;
namespace std {} // for a source's using namespace std;
