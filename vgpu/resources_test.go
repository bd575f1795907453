package vgpu

import "testing"

// A kernel's static shared memory (module-level and its own, aligned), its declared registers
// (64-bit ones twice, predicates not) and its tuning directives.
func TestResources(t *testing.T) {
	src := header + `
.shared .align 8 .b8 table[12];
.visible .entry k(.param .u64 p)
.maxntid 128, 1, 1
.minnctapersm 4
.maxnreg 64
{
	.reg .pred %p<3>;
	.reg .b32 %r<5>;
	.reg .b64 %rd<2>;
	.reg .f16 %h1;
	.shared .align 16 .b8 tile[100];
	ret;
}
.visible .entry plain()
{
	ret;
}
`
	m := mustParse(t, src)
	got, err := m.Resources("k")
	if err != nil {
		t.Fatal(err)
	}
	want := Resources{StaticShared: 16 + 100, DeclaredRegisters: 5 + 2*2 + 1, MaxNReg: 64, MinNCTAPerSM: 4, MaxNTID: [3]int{128, 1, 1}}
	if got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
	if got, err := m.Resources("plain"); err != nil || got != (Resources{StaticShared: 12}) {
		t.Errorf("plain: got %+v, %v; want only the module's 12 shared bytes", got, err)
	}
	if _, err := m.Resources("none"); err == nil {
		t.Error("no kernel: got no error")
	}
	if _, err := ParseModule(header + ".visible .entry bad()\n.maxnreg 0\n{\n\tret;\n}\n"); err == nil {
		t.Error(".maxnreg 0: got no error")
	}
}
