//go:build !linux

package gpu

import "github.com/gpuplayground/playground/gpu/nvidia"

// confine adds nothing off Linux: there the source rule (nvidia.CheckIncludes) alone keeps the
// compiler to the playground's headers.
func confine(*nvidia.NVRTC, *nvidia.Clang, string, ...string) (dir, note string, err error) {
	return "", sandboxNote(), nil
}

// sandboxNote says that off Linux compiles are not confined.
func sandboxNote() string {
	return "compiles are not confined off Linux (only the source rule keeps the compiler to the playground's headers)"
}
