package datasheet

import (
	"testing"

	"github.com/gpuplayground/playground/occupancy"
)

// Every GPU names a compute capability whose occupancy limits are known.
func TestGPUsComputeCapability(t *testing.T) {
	for _, g := range GPUs {
		if _, err := occupancy.Lookup(g.CC); err != nil {
			t.Errorf("%s: %v", g.Name, err)
		}
	}
}
