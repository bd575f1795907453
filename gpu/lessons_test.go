package gpu

import (
	"testing"

	"github.com/gpuplayground/playground/experiment"
	"github.com/gpuplayground/playground/kernels"
	"github.com/gpuplayground/playground/lessons"
)

// On a GPU machine the server knows the GPU kernels with the table's pessimistic run-time estimates
// (kernels/cuda/ladder.go), and checks every lesson cell against the default run time limit at
// start-up: the estimates must not make it refuse its own lessons.
func TestLessonsFitTheRunLimitWithGPUEstimates(t *testing.T) {
	available := append(kernels.CPU(), kernels.GPU("")...)
	if _, err := lessons.Load(lessons.Embedded, experiment.Checkers(available)); err != nil {
		t.Fatalf("with the GPU kernels' estimates a GPU server would not start: %v", err)
	}
}
