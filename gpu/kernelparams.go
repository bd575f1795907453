package gpu

import (
	"fmt"

	"github.com/gpuplayground/playground/gpu/nvidia"
	"github.com/gpuplayground/playground/vgpu"
)

// argLayout is the size and alignment in bytes a launch argument takes in a kernel's parameter block
// (PTX ISA 8.x, section 5.1.6.1 "Kernel Function Parameters"), and what the worker calls it.
func argLayout(a any) (size, align int, what string) {
	switch a.(type) {
	case nvidia.DevicePtr:
		return 8, 8, "a device pointer"
	case int32:
		return 4, 4, "an int"
	case float32:
		return 4, 4, "a float"
	case float64:
		return 8, 8, "a double"
	case nvidia.TensorMap:
		return 128, 64, "a CUtensorMap"
	}
	return 0, 0, fmt.Sprintf("a %T", a)
}

// checkLaunchParams checks that the kernel entry of ptx declares exactly one parameter for each of
// args, in order, each of the argument's size and alignment (argLayout): cuLaunchKernel copies each
// argument's size from the Go value it points at as the kernel declares it, so a kernel that declares
// more, larger or reordered parameters would read past the worker's values. It parses the whole
// module (vgpu.ParseModule), so that comments and other functions cannot stand in for the entry. An
// error names the entry and the first parameter that does not match.
func checkLaunchParams(ptx, entry string, args []any) error {
	mod, err := vgpu.ParseModule(ptx)
	if err != nil {
		return fmt.Errorf("cannot check the kernel's parameters: %w", err)
	}
	f := mod.Function(entry)
	if f == nil || !f.Entry {
		return fmt.Errorf("the PTX has no kernel entry %s", entry)
	}
	if len(f.Params) != len(args) {
		return fmt.Errorf("the kernel %s takes %d parameters; the run passes %d (the problem's buffers and sizes, then its tensor maps)",
			entry, len(f.Params), len(args))
	}
	for i, a := range args {
		size, align, what := argLayout(a)
		p := f.Params[i]
		// A pointer's .ptr .align N (which newer NVRTCs emit) is its pointee's alignment, which the
		// parser records as the parameter's: a pointer's 8 bytes are always 8-aligned.
		_, ptr := a.(nvidia.DevicePtr)
		if p.Size != size || p.Align != align && !ptr {
			return fmt.Errorf("the kernel %s's parameter %d (%s) is %d bytes aligned %d; the run passes %s there (%d bytes aligned %d)",
				entry, i, p.Name, p.Size, p.Align, what, size, align)
		}
	}
	return nil
}
