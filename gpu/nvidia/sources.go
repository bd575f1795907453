package nvidia

import (
	"embed"
	"fmt"
	"sort"
	"strconv"
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

// PTX holds the same kernels precompiled by `go generate` (ptx/<file>.compute_<arch>.ptx, one per
// PTXBuilds entry and architecture), for machines that have the driver but no NVRTC. PTX is forward
// compatible: the driver JIT-compiles compute_80 PTX for sm_80, sm_86, sm_89 and sm_90 (but
// compute_90a PTX, which uses sm_90a's wgmma and setmaxnreg, for sm_90 only).
// TestEmbeddedPTXIsCurrent fails when it is stale.
//
//go:embed ptx/*.ptx
var PTX embed.FS

// PTXArchs are the virtual architectures go generate compiles for: compute_70 (Volta, Turing: no
// bf16) and compute_80 (Ampere and newer).
var PTXArchs = []int{70, 80}

// PTXName is the embedded file for source file src (e.g. "matmul.cu") and virtual architecture arch.
func PTXName(src string, arch int) string { return PTXFile(src, strconv.Itoa(arch)) }

// PTXFile is PTXName for an architecture written as PTX writes it after "compute_" ("80", "90a").
func PTXFile(src, arch string) string { return fmt.Sprintf("ptx/%s.compute_%s.ptx", src, arch) }

// GenerateNVRTC is the NVRTC that go generate uses for matmul.cu (Debian's libnvrtc11.2 package,
// CUDA 11.8), so that the embedded PTX is the same on every machine that regenerates it.
var GenerateNVRTC = []string{"libnvrtc.so.11.2"}

// GenerateNVRTC12 is the NVRTC that go generate uses for hopper.cu (CUDA 12.4's libnvrtc.so.12,
// under /opt/playground-nvidia here): NVRTC 11.8 knows no compute_90a.
var GenerateNVRTC12 = []string{"libnvrtc.so.12"}

// HopperArch is the virtual architecture of the Hopper rungs (Kernel.Arch): compute_90a, whose
// "a" admits the architecture-specific wgmma and setmaxnreg (PTX ISA 8.x, "Target ISA notes").
const HopperArch = "90a"

// PTXBuild is one source file of src/ and the virtual architectures `go generate` compiles it for,
// with the NVRTC that compiles it.
type PTXBuild struct {
	// Source is the file's name in src/ ("matmul.cu").
	Source string
	// Archs are the architectures as PTX writes them after "compute_" ("70", "80", "90a").
	Archs []string
	// NVRTC are the library names to load it from (LoadNVRTCFrom).
	NVRTC []string
}

// PTXBuilds are the embedded PTX files, per source: matmul.cu for each of PTXArchs with CUDA 11.8's
// NVRTC, hopper.cu for HopperArch with CUDA 12.4's. The slice is new on every call.
func PTXBuilds() []PTXBuild {
	var archs []string
	for _, a := range PTXArchs {
		archs = append(archs, strconv.Itoa(a))
	}
	return []PTXBuild{
		{Source: "matmul.cu", Archs: archs, NVRTC: GenerateNVRTC},
		{Source: "hopper.cu", Archs: []string{HopperArch}, NVRTC: GenerateNVRTC12},
	}
}

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
