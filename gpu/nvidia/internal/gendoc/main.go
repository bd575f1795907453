// Command gendoc writes docs/gpu-kernels.md from the table of GPU kernels in gpu/nvidia/ladder.go.
// Run it through `go generate ./gpu/nvidia`, or from the repository root as
// `go run ./gpu/nvidia/internal/gendoc -out docs/gpu-kernels.md`; TestKernelsDocIsCurrent fails when
// the file is stale.
package main

import (
	"flag"
	"log"
	"os"

	"github.com/gpuplayground/playground/gpu/nvidia"
)

func main() {
	out := flag.String("out", "docs/gpu-kernels.md", "file to write")
	flag.Parse()
	if err := os.WriteFile(*out, []byte(nvidia.KernelsMarkdown()), 0o644); err != nil {
		log.Fatal(err)
	}
	log.Printf("wrote %s", *out)
}
