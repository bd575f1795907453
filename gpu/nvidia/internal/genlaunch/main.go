// Command genlaunch writes bench/gpucheck/kernels.gen.h, the list of the playground's own GPU kernels
// that bench/gpucheck/launch.cu launches for Nsight Compute, from the table in gpu/nvidia/ladder.go
// and the FP32 tile search's candidates (nvidia.LaunchRows).
// Run it from the repository root as `go run ./gpu/nvidia/internal/genlaunch` (bench/gpucheck/build.sh
// does); TestLaunchHeaderIsCurrent in gpu/nvidia fails when the file is stale.
package main

import (
	"flag"
	"log"
	"os"

	"github.com/gpuplayground/playground/gpu/nvidia"
	"github.com/gpuplayground/playground/gpu/nvidia/internal/launchtable"
)

func main() {
	out := flag.String("out", launchtable.Path, "file to write")
	flag.Parse()
	h, err := launchtable.Header(nvidia.LaunchRows())
	if err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(*out, []byte(h), 0o644); err != nil {
		log.Fatal(err)
	}
	log.Printf("wrote %s", *out)
}
