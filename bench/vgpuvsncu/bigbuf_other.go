//go:build !unix

package main

import "github.com/gpuplayground/playground/vgpu"

// bigBuffer is vgpu.NewBuffer where no anonymous mapping is at hand (its pages may all be touched
// when the runtime zeroes them).
func bigBuffer(name string, size int) (*vgpu.Buffer, func(), error) {
	return vgpu.NewBuffer(name, size), func() {}, nil
}
