//go:build unix

package main

import (
	"syscall"

	"github.com/gpuplayground/playground/vgpu"
)

// bigBuffer is a zeroed buffer of size bytes in an anonymous private mapping, whose pages take
// memory only once touched: the transpose comparison's two 4 GiB matrices, of which the sampled
// blocks touch a few MB. free unmaps it (the buffer must not be used after).
func bigBuffer(name string, size int) (b *vgpu.Buffer, free func(), err error) {
	data, err := syscall.Mmap(-1, 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE|syscall.MAP_NORESERVE)
	if err != nil {
		return nil, nil, err
	}
	return &vgpu.Buffer{Name: name, Data: data}, func() { _ = syscall.Munmap(data) }, nil
}
