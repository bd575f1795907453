package gpu

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/gpuplayground/playground/gpu/nvidia"
	"github.com/gpuplayground/playground/harness"
	"github.com/gpuplayground/playground/internal/fakecuda"
	"github.com/gpuplayground/playground/measure"
	"github.com/gpuplayground/playground/problems"
	"github.com/gpuplayground/playground/vgpu"
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

// signaturePTX is a module the driver takes but the virtual GPU cannot run: an indirect call through
// a .callprototype, a brx.idx over .branchtargets, a module-level .alias, a .pragma string, and
// comments and strings holding braces and a decoy entry; its kernel mm takes (A, B, n, a map).
const signaturePTX = `.version 8.4
.target sm_90a
.address_size 64
.file 1 "/tmp/a {b}/cell.cu // not a comment"

/* a block comment: .visible .entry mm( .param .u32 decoy ) { */
.visible .func (.param .b32 r) f(.param .b32 x)
{
	st.param.b32 [r], 1;
	ret;
}
.visible .func (.param .b32 r) g(.param .b32 x);
.alias g, f;

.visible .entry mm(
	.param .u64 .ptr .global .align 16 A, // "a pointer }"
	.param .u64 B,
	.param .u32 n,
	.param .align 64 .b8 tm[128]
)
.maxntid 256, 1, 1
{
	.reg .b32 %r<4>;
	.reg .b64 %rd<4>;
	.pragma "nounroll }";
	prototype_0 : .callprototype (.param .b32 _) _ (.param .b32 _);
	ts: .branchtargets L1, L2;
	ld.param.u32 %r1, [n];
	brx.idx %r1, ts;
L1:
	ret;
L2:
	ret;
}
`

// The parameter check reads only the entry's signature: PTX that the virtual GPU's parser refuses
// (signaturePTX) is checked as the driver would take it, a declaration of mm is not its definition,
// and the entry's own parameters (not the decoy in a comment) are the ones compared.
func TestCheckLaunchParamsReadsOnlyTheSignature(t *testing.T) {
	args := []any{nvidia.DevicePtr(1), nvidia.DevicePtr(2), int32(3), nvidia.TensorMap{}}
	if err := checkLaunchParams(signaturePTX, "mm", args); err != nil {
		t.Errorf("signaturePTX: got %v, want its mm accepted", err)
	}
	if err := checkLaunchParams(signaturePTX, "mm", args[:3]); err == nil || err.Error() != "the kernel mm takes 4 parameters; the run passes 3 (the problem's buffers and sizes, then its tensor maps)" {
		t.Errorf("signaturePTX with 3 arguments: got %v", err)
	}
	declared := strings.Replace(signaturePTX, ".alias g, f;", ".extern .entry mm(.param .u32 only);\n.alias g, f;", 1)
	if err := checkLaunchParams(declared, "mm", args); err != nil {
		t.Errorf("with a declaration of mm before it: got %v", err)
	}
	for _, name := range []string{"f", "g", "decoy"} {
		if err := checkLaunchParams(signaturePTX, name, args); err == nil || err.Error() != "the PTX has no kernel entry "+name {
			t.Errorf("entry %s: got %v", name, err)
		}
	}
	noParams := ".version 8.4\n.target sm_90\n.address_size 64\n.visible .entry k0\n{\n\tret;\n}\n"
	if err := checkLaunchParams(noParams, "k0", nil); err != nil {
		t.Errorf("an entry without a parameter list and no arguments: got %v", err)
	}
}

// What the signature read refuses it says plainly: PTX over the limit, an unclosed comment, string
// or brace, a '}' closing nothing, a parameter list not closed or too long, a second definition of
// the entry, and a parameter the parser refuses, with its line. Text with many .entry directives
// and no body is read once (no definition), not once per directive.
func TestCheckLaunchParamsRefusesHostilePTX(t *testing.T) {
	args := []any{nvidia.DevicePtr(1)}
	head := ".version 8.4\n.target sm_90\n.address_size 64\n"
	for _, tt := range []struct{ name, ptx, want string }{
		{"oversized", head + strings.Repeat("// padding\n", maxSignaturePTXBytes/11+1), "over the 16777216-byte limit"},
		{"open comment", head + "/* .entry mm(.param .u64 p) {}", "line 4: the comment is not closed"},
		{"open string", head + ".file 1 \"a\n.entry mm(.param .u64 p) {}", "line 4: the string is not closed on its line"},
		{"open brace", head + ".entry mm(.param .u64 p) {\n{\n}", "1 '{' not closed at the end of the PTX"},
		{"stray brace", head + "}\n.entry mm(.param .u64 p) {}", "line 4: a '}' closes no '{'"},
		{"open list", head + ".entry mm(.param .u64 p {}", "line 4: the parameter list of .entry mm is not closed within 65536 bytes"},
		{"long list", head + ".entry mm(" + strings.Repeat(".param .u32 x, ", 5000) + ") {}", "the parameter list of .entry mm is not closed within 65536 bytes"},
		{"twice", head + ".entry mm(.param .u64 p) {}\n.entry mm(.param .u64 q) {}", "the PTX defines the kernel entry mm 2 times (lines 4 and 5)"},
		{"bad type", head + "\n\n.entry mm(\n.param .u77 p) {}", "PTX line 7: unknown parameter type .u77"},
		{"huge array", head + ".entry mm(.param .b8 p[99999999999999999999]) {}", "cannot check the kernel's parameters: PTX line 4"},
		{"many entries", head + strings.Repeat(".entry mm ", 200000), "the PTX has no kernel entry mm"},
	} {
		err := checkLaunchParams(tt.ptx, "mm", args)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: got %v, want %q", tt.name, err, tt.want)
		}
	}
}

// FuzzEntryParams: the signature read never panics and, wherever the virtual GPU's parser reads
// the whole module and finds the kernel mm that the signature read finds once, both read the same
// parameters (names, types, sizes, alignments, offsets and lines; the signature read may refuse
// more, never accept a different list). The kept corpus is testdata/fuzz/FuzzEntryParams.
func FuzzEntryParams(f *testing.F) {
	for _, params := range []string{"", ".param .u64 p0, .param .u64 .ptr .global .align 1 p1, .param .u32 n, .param .align 64 .b8 tm[128]",
		".param .align 8 .b8 big[4096]", ".param .v2 .f32 v, .param .b8 a[3]"} {
		f.Add(entryPTX(params))
	}
	f.Add(signaturePTX)
	f.Add(".version 8.4\n.target sm_90\n.address_size 64\n.entry mm /* ( */ (.param .u64 a) // {\n{ \"}\" }\n")
	f.Fuzz(func(t *testing.T, ptx string) {
		got, err := entryParams(ptx, "mm")
		mod, perr := vgpu.ParseModule(ptx)
		if err != nil || perr != nil {
			return
		}
		fn := mod.Function("mm")
		if fn == nil || !fn.Entry {
			t.Fatalf("the signature read found mm (%+v); the parser, which read the module, did not", got)
		}
		want := fn.Params
		if len(got) != len(want) {
			t.Fatalf("the signature read found %d parameters, the parser %d: %+v against %+v", len(got), len(want), got, want)
		}
		for i := range got {
			if g, w := got[i], want[i]; g != w {
				t.Fatalf("parameter %d: the signature read %+v, the parser %+v", i, g, w)
			}
		}
	})
}

// Through the real worker on the strict fake libcuda (which loads any PTX text and computes a
// matmul entry on the host), a learner's matmul kernel whose PTX the virtual GPU's parser refuses
// (signaturePTX's .callprototype, .branchtargets and .alias) runs and is judged, as the driver would
// take it: only its signature is read.
func TestFakeCUDARunsPTXTheVirtualGPUCannotParse(t *testing.T) {
	fakecuda.Setup(t)
	ptx := strings.Replace(signaturePTX, `	.param .u32 n,
	.param .align 64 .b8 tm[128]`, `	.param .u64 C,
	.param .u32 M,
	.param .u32 N,
	.param .u32 K`, 1)
	if _, err := vgpu.ParseModule(ptx); err == nil {
		t.Log("the virtual GPU now parses the module: this no longer shows PTX it cannot")
	}
	res, err := Run(context.Background(), realWorker(t), Request{Kernel: "custom", N: 40, DType: "float32", Repeats: 1,
		PTX: ptx, Entry: "mm", Block: [3]int{16, 16, 1}, Grid: [3]int{3, 3, 1}}, nil)
	if err != nil || !res.OK {
		t.Errorf("got %+v, %v; want the kernel run and its C checked", res, err)
	}
}
