// Command genrungs writes gpu/nvidia/rungs.gen.go: what ptxas -v reports of the kernel table's
// embedded PTX for each architecture of nvidia.RungArchs (nvidia.GenerateRungResources). Run it
// through `go generate ./gpu/nvidia`; it needs ptxas (CUDA 12.4's, unpacked by .ci/run; or
// PLAYGROUND_PTXAS), and TestRungResourcesAreCurrent fails in CI when the file is stale.
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
	flag.Parse()
	px, err := nvidia.FindPtxas()
	if err != nil {
		log.Fatalf("genrungs: %v", err)
	}
	src, err := nvidia.GenerateRungResources(context.Background(), px)
	if err != nil {
		log.Fatalf("genrungs: %v", err)
	}
	if err := os.WriteFile(*out, src, 0o644); err != nil {
		log.Fatal(err)
	}
	log.Printf("wrote %s with ptxas %s (%s)", *out, px.Version, px.Path)
}
