//go:build !linux

package gpu

import "github.com/gpuplayground/playground/kernels/cuda"

// confine adds nothing off Linux: there the source rule (cuda.CheckIncludes) alone keeps the
// compiler to the playground's headers.
func confine(*cuda.NVRTC, *cuda.Clang, string) (dir, note string, err error) {
	return "", sandboxNote(), nil
}

// sandboxNote says that off Linux compiles are not confined.
func sandboxNote() string {
	return "compiles are not confined off Linux (only the source rule keeps the compiler to the playground's headers)"
}
