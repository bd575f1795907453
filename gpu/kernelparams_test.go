package gpu

import (
	"strings"
	"testing"

	"github.com/gpuplayground/playground/gpu/nvidia"
)

// entryPTX is a module whose kernel mm declares params (PTX parameter declarations, comma-separated)
// after a device function whose inline-asm comment looks like mm's entry.
func entryPTX(params string) string {
	return `.version 8.0
.target sm_90a
.address_size 64

// .entry mm( .param .u64 x )
.visible .entry mm(` + params + `)
{
	ret;
}
`
}

// The worker launches a custom kernel only where its entry declares exactly the launch's arguments,
// each of the argument's size and alignment: a map first where the worker passes it last, a decoy
// entry in a comment, an extra struct parameter or a missing one is refused, naming the parameter.
func TestCheckLaunchParams(t *testing.T) {
	args := []any{nvidia.DevicePtr(1), nvidia.DevicePtr(2), int32(3), nvidia.TensorMap{}}
	const (
		ptr = ".param .u64 p"
		i32 = ".param .u32 n"
		tm  = ".param .align 64 .b8 tm[128]"
	)
	join := func(ps ...string) string { return strings.Join(ps, ",\n") }
	for _, tt := range []struct {
		name, params, want string
	}{
		{"matching", join(ptr+"0", ".param .u64 .ptr .global .align 1 p1", i32, tm), ""},
		{"map first", join(tm, ptr+"0", ptr+"1", i32), "the kernel mm's parameter 0 (tm) is 128 bytes aligned 64; the run passes a device pointer there (8 bytes aligned 8)"},
		{"map misaligned", join(ptr+"0", ptr+"1", i32, ".param .b8 tm[128]"), "parameter 3 (tm) is 128 bytes aligned 1; the run passes a CUtensorMap"},
		{"extra struct", join(ptr+"0", ptr+"1", i32, tm, ".param .align 8 .b8 big[4096]"), "the kernel mm takes 5 parameters; the run passes 4"},
		{"one fewer", join(ptr+"0", ptr+"1", i32), "the kernel mm takes 3 parameters; the run passes 4"},
		{"int as long", join(ptr+"0", ptr+"1", ".param .u64 n", tm), "parameter 2 (n) is 8 bytes aligned 8; the run passes an int there"},
	} {
		err := checkLaunchParams(entryPTX(tt.params), "mm", args)
		if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("%s: got %v, want %q", tt.name, err, tt.want)
		}
	}
	if err := checkLaunchParams(entryPTX(ptr+"0"), "other", args); err == nil || err.Error() != "the PTX has no kernel entry other" {
		t.Errorf("a missing entry: got %v", err)
	}
}
