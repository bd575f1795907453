package gpu

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gpuplayground/playground/gpu/nvidia"
	"github.com/gpuplayground/playground/harness"
	"github.com/gpuplayground/playground/measure"
	"github.com/gpuplayground/playground/problems"
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

// A tensor map never declares more than its buffer holds: over every problem's matrices in each
// dtype, a map of the buffer as allocated at n is made, one over a buffer allocated at n-1 (or of a
// size whose n·n·elem overflows) is refused, and the worker takes no n above the problem's MaxN.
func TestTensorMapFitsBuffer(t *testing.T) {
	const n = 32
	for _, p := range problems.All() {
		for _, dtype := range []string{"float32", "float64"} {
			for i, b := range p.Buffers {
				if !b.Matrix {
					continue
				}
				req := Request{N: n, DType: dtype, TensorMaps: []measure.TensorMap{{Param: "tm", Of: b.Name, Box: [2]int{8, 8}}}}
				db := &deviceBuffers{ptrs: make([]nvidia.DevicePtr, len(p.Buffers)), bytes: make([]int, len(p.Buffers))}
				for j, bj := range p.Buffers {
					db.bytes[j] = bj.Bytes(n, dtype)
				}
				if _, err := tiledMaps(p, req, db); err != nil {
					t.Errorf("%s %s %s: got %v", p.Name, dtype, b.Name, err)
				}
				db.bytes[i] = b.Bytes(n-1, dtype)
				want := fmt.Sprintf("tensor map tm: a 32×32 tensor of %d-byte elements is larger than its %d-byte buffer", b.ElemBytes(dtype), db.bytes[i])
				if _, err := tiledMaps(p, req, db); err == nil || err.Error() != want {
					t.Errorf("%s %s %s in a smaller buffer: got %v, want %q", p.Name, dtype, b.Name, err, want)
				}
			}
		}
		d := &device{}
		if _, err := d.runCustom(Request{Problem: p.Name, N: p.MaxN + 1, DType: "float32"}, harness.Result{}, nil); err == nil || !strings.Contains(err.Error(), "takes n from 1 to") {
			t.Errorf("%s at n=%d: got %v", p.Name, p.MaxN+1, err)
		}
	}
	if err := tensorFits("tm", 1<<33, 8, 1<<62); err == nil {
		t.Error("an n·n·elem past 2⁶⁴ fits")
	}
}

// A box size past uint32 is refused as it is, not truncated into a size Check accepts (2^32+32 would
// become 32).
func TestTensorMapBoxNotTruncated(t *testing.T) {
	p, err := problems.Lookup("matmul")
	if err != nil {
		t.Fatal(err)
	}
	db := &deviceBuffers{ptrs: make([]nvidia.DevicePtr, len(p.Buffers)), bytes: make([]int, len(p.Buffers))}
	for j, b := range p.Buffers {
		db.bytes[j] = b.Bytes(64, "float32")
	}
	for _, box := range [][2]int{{1<<32 + 32, 32}, {32, -1}} {
		req := Request{N: 64, DType: "float32", TensorMaps: []measure.TensorMap{{Param: "tm", Of: "A", Box: box}}}
		if _, err := tiledMaps(p, req, db); err == nil || !strings.Contains(err.Error(), "is out of range") {
			t.Errorf("box %v: got %v", box, err)
		}
	}
}
