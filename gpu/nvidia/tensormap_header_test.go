package nvidia

import (
	"strings"
	"testing"
)

// tensorMapKernel takes a tensor map the way CUDA 12's TMA kernels do: cuda.h's CUtensorMap,
// passed by value as a __grid_constant__ parameter, its address handed to cp.async.bulk.tensor.
const tensorMapKernel = `#include <cuda.h>
extern "C" __global__ void k(const __grid_constant__ CUtensorMap tmap, float* out) {
	__shared__ alignas(128) float tile[64];
	__shared__ unsigned long long bar;
	unsigned dst = (unsigned)__cvta_generic_to_shared(tile), b = (unsigned)__cvta_generic_to_shared(&bar);
	asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
		:: "r"(dst), "l"(&tmap), "r"(0), "r"(0), "r"(b) : "memory");
	out[threadIdx.x] = tile[threadIdx.x] + (float)sizeof(CUtensorMap);
}
`

// NVRTC 12.4 compiles against CUDA 12.4's headers, and <cuda.h> (a stand-in: the real one is host
// API) declares CUtensorMap with CUDA 12's layout: a kernel with `#include <cuda.h>` and a
// `const __grid_constant__ CUtensorMap` parameter compiles to a 128-byte, 64-aligned parameter.
func TestNVRTC12HeaderCUtensorMap(t *testing.T) {
	n := requireNVRTCVersion(t, "libnvrtc.so.12")
	headers := FindHeaders(n)
	if got, want := HeadersVersion(headers), 12040; got != want {
		t.Fatalf("NVRTC 12.4's headers %s are CUDA %d's, want %d", headers, got, want)
	}
	ptx, err := CompileWithHeaders(t.Context(), n, nil, headers, tensorMapKernel, "k.cu", 90)
	if err != nil {
		t.Fatalf("compile: %v", err)
	}
	if !strings.Contains(ptx, "cp.async.bulk.tensor.2d") || !strings.Contains(ptx, ".param .align 64 .b8 k_param_0[128]") {
		t.Errorf("PTX lacks the TMA copy or the 128-byte, 64-aligned tensor map parameter:\n%.2000s", ptx)
	}
}

// NVRTC 11.8 (whose CUDA 11.8 cuda.h has no CUtensorMap) gets the type from the stand-in too: a
// kernel taking one as a parameter compiles to the same 128-byte, 64-aligned parameter.
func TestNVRTC11HeaderCUtensorMapType(t *testing.T) {
	n := requireNVRTCVersion(t, "libnvrtc.so.11.2")
	src := "#include <cuda.h>\nextern \"C\" __global__ void k(const CUtensorMap m, unsigned long long* out) { out[0] = m.opaque[0]; }\n"
	ptx, err := CompileWithHeaders(t.Context(), n, nil, FindHeaders(n), src, "k.cu", 80)
	if err != nil {
		t.Fatalf("compile: %v", err)
	}
	if !strings.Contains(ptx, ".param .align 64 .b8 k_param_0[128]") {
		t.Errorf("PTX lacks the 128-byte, 64-aligned tensor map parameter:\n%.1500s", ptx)
	}
}
