package vgpu

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"
)

// decodeOne parses a kernel whose body is the one instruction in and returns the kernel's decode
// error and, without one, the decoded instruction.
func decodeOne(t *testing.T, in string) (inst, error) {
	t.Helper()
	src := ".version 8.0\n.target sm_90\n.address_size 64\n\n" + `.visible .entry k(.param .u64 out)
{
	.reg .pred %p<4>;
	.reg .b32 %r<8>;
	.reg .b64 %rd<4>;
	.reg .f32 %f<9>;
	.shared .align 8 .b64 bar;
	` + in + `;
done:
	ret;
}
`
	m, err := ParseModule(src)
	if err != nil {
		t.Fatalf("%s: %v", in, err)
	}
	prog, err := m.Function("k").decoded()
	if err != nil {
		return inst{}, err
	}
	return prog.code[0], nil
}

// TestOpRowsDecodeTheirForms decodes each opRows row's form: it must be of the row's names, and
// decode through the table into an instruction the interpreter can run.
func TestOpRowsDecodeTheirForms(t *testing.T) {
	for _, r := range opRows {
		base := strings.SplitN(strings.Fields(r.form)[0], ".", 2)[0]
		if !strings.Contains(" "+strings.Join(r.names, " ")+" ", " "+base+" ") {
			t.Errorf("the form %q of row %v is not of its names", r.form, r.names)
			continue
		}
		in, err := decodeOne(t, r.form)
		if err != nil {
			t.Errorf("%s: %v", r.form, err)
			continue
		}
		if in.exec == nil && in.ctl == ctlNone {
			t.Errorf("%s: decoded to an instruction with no exec function and no control kind", r.form)
		}
	}
}

// TestOpIndexRejectsADuplicate: a base name in two rows is a mistake in the table.
func TestOpIndexRejectsADuplicate(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("indexOps accepted mov in two rows")
		}
	}()
	indexOps([]opRow{{names: []string{"mov"}}, {names: []string{"cvt", "mov"}}})
}

// TestALURowsDecodeByKind decodes each aluOps row on .s32 (.b32 for prmt) and .f32 with its
// number of sources: it decodes where the row has a builder for the kind and is an
// *UnsupportedError where it has none.
func TestALURowsDecodeByKind(t *testing.T) {
	names := make([]string, 0, len(aluOps))
	for n := range aluOps {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		row := aluOps[n]
		if row.decode != nil {
			continue
		}
		for _, kind := range []struct {
			typ, reg string
			has      bool
		}{{"s32", "%r", row.intOp != nil}, {"f32", "%f", row.floatOp != nil}} {
			typ := kind.typ
			if n == "prmt" && typ == "s32" {
				typ = "b32"
			}
			ops := []string{kind.reg + "1"}
			for i := range row.nsrc {
				ops = append(ops, fmt.Sprintf("%s%d", kind.reg, i+2))
			}
			form := n + "." + typ + " " + strings.Join(ops, ", ")
			_, err := decodeOne(t, form)
			var u *UnsupportedError
			switch {
			case kind.has && err != nil:
				t.Errorf("%s: %v", form, err)
			case !kind.has && !errors.As(err, &u):
				t.Errorf("%s: got %v, want an *UnsupportedError", form, err)
			}
		}
	}
}
