package nvidia

import (
	"embed"
	"fmt"
	"sort"
)

// go generate ./gpu/nvidia, in this order: the PTX from src/*.cu, ptxas's records of it
// (rungs.gen.go), the FP32 tile search modelled in the virtual GPU (tune.gen.go, a few minutes),
// then docs/gpu-kernels.md from the table (ladder.go) and those records.
//
//go:generate go run ./internal/genptx
//go:generate go run ./internal/genrungs -out rungs.gen.go
//go:generate go run ./internal/genrungs -sass -out rungsass.gen.go
//go:generate go run ./internal/gentune -out tune.gen.go
//go:generate go run ./internal/gendoc -out ../../docs/gpu-kernels.md

// Sources holds the playground's CUDA C++ kernels (src/*.cu), compiled at run time by NVRTC.
//
//go:embed src/*.cu
var Sources embed.FS

// PTX holds the same kernels precompiled by `go generate` (ptx/<file>.<arch>.ptx), for machines that
// have the driver but no NVRTC. PTX is forward compatible: the driver JIT-compiles compute_80 PTX for
// sm_80, sm_86, sm_89 and sm_90. TestEmbeddedPTXIsCurrent fails when it is stale.
//
//go:embed ptx/*.ptx
var PTX embed.FS

// PTXArchs are the virtual architectures go generate compiles for: compute_70 (Volta, Turing: no
// bf16) and compute_80 (Ampere and newer).
var PTXArchs = []int{70, 80}

// PTXName is the embedded file for source file src (e.g. "matmul.cu") and virtual architecture arch.
func PTXName(src string, arch int) string { return fmt.Sprintf("ptx/%s.compute_%d.ptx", src, arch) }

// GenerateNVRTC is the NVRTC that go generate uses (Debian's libnvrtc11.2 package, CUDA 11.8), so
// that the embedded PTX is the same on every machine that regenerates it.
var GenerateNVRTC = []string{"libnvrtc.so.11.2"}

// BestPTXArch returns the highest of PTXArchs not above the device's compute capability (e.g. 90
// → 80), or false when the device is older than all of them.
func BestPTXArch(cc int) (int, bool) {
	archs := append([]int(nil), PTXArchs...)
	sort.Sort(sort.Reverse(sort.IntSlice(archs)))
	for _, a := range archs {
		if a <= cc {
			return a, true
		}
	}
	return 0, false
}
