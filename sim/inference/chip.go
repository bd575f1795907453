package inference

import (
	"github.com/gpuplayground/playground/gpumodel"
)

// This file is the package's only use of the chip datasheet, so that moving the datasheet changes
// one import.

// Chip is what the step-time model needs of an accelerator: its dense 16-bit matrix peak in FLOP/s,
// its memory bandwidth in bytes/s and capacity in bytes, with where the figures come from.
type Chip struct {
	Name             string
	FLOPs, Bandwidth float64
	Memory           float64
	Source           string
}

// ChipNamed returns the datasheet's accelerator called name (ignoring case), or the datasheet's
// error naming the known ones.
func ChipNamed(name string) (Chip, error) {
	a, err := gpumodel.LookupAccelerator(name)
	if err != nil {
		return Chip{}, err
	}
	return Chip{Name: a.Name, FLOPs: a.Dense, Bandwidth: a.DRAM, Memory: a.Memory, Source: a.Source}, nil
}

// ChipNames are the accelerators ChipNamed knows, in the datasheet's order.
func ChipNames() []string {
	var names []string
	for _, a := range gpumodel.Accelerators {
		names = append(names, a.Name)
	}
	return names
}
