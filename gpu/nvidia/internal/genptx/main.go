// Command genptx compiles gpu/nvidia/src/*.cu to PTX as nvidia.PTXBuilds says (each file for its
// architectures, with its NVRTC) and writes gpu/nvidia/ptx/. Run it through `go generate
// ./gpu/nvidia`; it needs Debian's libnvrtc11.2 (CUDA 11.8) for matmul.cu and CUDA 12.4's
// libnvrtc.so.12 for hopper.cu, so that everyone generates the same bytes.
package main

import (
	"log"
	"os"

	"github.com/gpuplayground/playground/gpu/nvidia"
)

func main() {
	for _, b := range nvidia.PTXBuilds() {
		nv, err := nvidia.Loader{}.NVRTCFrom(b.NVRTC)
		if err != nil {
			log.Fatalf("genptx: %s: %v (Debian: enable the non-free component, then apt-get install libnvrtc11.2 libnvrtc-builtins11.8; CUDA 12.4's libnvrtc12 for hopper.cu)", b.Source, err)
		}
		src, err := nvidia.Sources.ReadFile("src/" + b.Source)
		if err != nil {
			log.Fatal(err)
		}
		for _, arch := range b.Archs {
			ptx, _, err := nv.Compile(string(src), b.Source, "compute_"+arch)
			if err != nil {
				log.Fatal(err)
			}
			out := nvidia.PTXFile(b.Source, arch)
			if err := os.WriteFile(out, []byte(ptx), 0o644); err != nil {
				log.Fatal(err)
			}
			log.Printf("wrote %s (%d bytes) with %s", out, len(ptx), nv.Lib.Path)
		}
	}
}
