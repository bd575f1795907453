// Command genptx compiles gpu/nvidia/src/*.cu to PTX for every nvidia.PTXArchs entry with NVRTC and
// writes gpu/nvidia/ptx/. Run it through `go generate ./gpu/nvidia`; it needs Debian's
// libnvrtc11.2 (CUDA 11.8) so that everyone generates the same bytes.
package main

import (
	"io/fs"
	"log"
	"os"
	"path"

	"github.com/gpuplayground/playground/gpu/nvidia"
)

func main() {
	nv, err := nvidia.Loader{}.NVRTCFrom(nvidia.GenerateNVRTC)
	if err != nil {
		log.Fatalf("genptx: %v (Debian: enable the non-free component, then apt-get install libnvrtc11.2 libnvrtc-builtins11.8)", err)
	}
	names, err := fs.Glob(nvidia.Sources, "src/*.cu")
	if err != nil {
		log.Fatal(err)
	}
	for _, name := range names {
		src, err := fs.ReadFile(nvidia.Sources, name)
		if err != nil {
			log.Fatal(err)
		}
		for _, arch := range nvidia.PTXArchs {
			ptx, err := nvidia.CompileArch(nv, string(src), path.Base(name), arch)
			if err != nil {
				log.Fatal(err)
			}
			out := nvidia.PTXName(path.Base(name), arch)
			if err := os.WriteFile(out, []byte(ptx), 0o644); err != nil {
				log.Fatal(err)
			}
			log.Printf("wrote %s (%d bytes) with %s", out, len(ptx), nv.Lib.Path)
		}
	}
}
