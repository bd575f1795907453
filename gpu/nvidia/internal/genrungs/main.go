// Command genrungs writes gpu/nvidia/rungs.gen.go: what ptxas -v reports of the kernel table's
// embedded PTX for each architecture of nvidia.RungArchs (nvidia.GenerateRungResources); with
// -sass, gpu/nvidia/rungsass.gen.go instead: the SASS instructions per line of that PTX
// (nvidia.GenerateRungSASS, which needs nvdisasm too). Run it through `go generate ./gpu/nvidia`;
// it needs ptxas (CUDA 12.4's, unpacked by .ci/run; or PLAYGROUND_PTXAS), and
// TestRungResourcesAreCurrent and TestRungSASSIsCurrent fail in CI when a file is stale.
package main

import (
	"context"
	"flag"
	"log"
	"os"

	"github.com/gpuplayground/playground/gpu/nvidia"
)

func main() {
	out := flag.String("out", "rungs.gen.go", "file to write")
	sass := flag.Bool("sass", false, "write the SASS instructions per PTX line (rungsass.gen.go) instead of the resources")
	flag.Parse()
	px, err := nvidia.FindPtxas()
	if err != nil {
		log.Fatalf("genrungs: %v", err)
	}
	var src []byte
	tools := &nvidia.RungTools{Ptxas: px}
	if *sass {
		nvd := nvidia.LookNvdisasm()
		if nvd == "" {
			log.Fatalf("genrungs: no nvdisasm (%v)", nvidia.NvdisasmPaths())
		}
		tools.Nvdisasm = nvd
		src, err = nvidia.GenerateRungSASS(context.Background(), tools)
	} else {
		src, err = nvidia.GenerateRungResources(context.Background(), tools)
	}
	if err != nil {
		log.Fatalf("genrungs: %v", err)
	}
	if err := os.WriteFile(*out, src, 0o644); err != nil {
		log.Fatal(err)
	}
	log.Printf("wrote %s with ptxas %s (%s)", *out, px.Version, px.Path)
}
