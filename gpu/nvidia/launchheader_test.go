package nvidia_test

// go generate ./gpu/nvidia runs this with ladder.go's and sources.go's directives (it reads test files too).
//go:generate go run ./internal/genlaunch -out ../../bench/gpucheck/kernels.gen.h

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/gpuplayground/playground/gpu/nvidia"
	"github.com/gpuplayground/playground/gpu/nvidia/internal/launchtable"
)

// bench/gpucheck/kernels.gen.h, the own kernels that launch.cu runs for Nsight Compute, is what the
// table renders to now: a row added to (or changed in) ladder.go without regenerating fails here.
func TestLaunchHeaderIsCurrent(t *testing.T) {
	want, err := launchtable.Header(nvidia.LaunchRows())
	if err != nil {
		t.Fatalf("the table does not render for launch.cu: %v", err)
	}
	got, err := os.ReadFile(filepath.Join("../..", launchtable.Path))
	if err != nil || string(got) != want {
		t.Errorf("%s is stale or missing (%v): run go run ./gpu/nvidia/internal/genlaunch from the repository root (bench/gpucheck/build.sh does)", launchtable.Path, err)
	}
}
