package nvidia

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"
)

// requireNvdisasm finds nvdisasm; in CI (CI=true, where .ci/run unpacks CUDA 12.4's) a missing one
// fails the test, elsewhere it skips.
func requireNvdisasm(t *testing.T) string {
	t.Helper()
	p := LookNvdisasm()
	if p == "" {
		msg := "nvdisasm not found (tried " + strings.Join(NvdisasmPaths(), ", ") + ")"
		if os.Getenv("CI") == "true" {
			t.Fatalf("nvdisasm is required in CI: %s", msg)
		}
		t.Skip("skipping: " + msg)
	}
	return p
}

// nvdisasm -g's listing of an NVRTC 12.4 kernel for sm_90 (testdata/sass/inlined.sm_90.txt: cell.cu
// lines 3 to 9, line 2 a device function inlined into line 7): every instruction up to the
// function's closing branch to itself is counted under the line the comment before it names; the
// branch and the NOPs after it are not.
func TestParseSASS(t *testing.T) {
	listing, err := os.ReadFile("testdata/sass/inlined.sm_90.txt")
	if err != nil {
		t.Fatal(err)
	}
	s := ParseSASS(string(listing), "sm_90", MaxSASSInstructions)
	if len(s.Functions) != 1 || s.Functions[0].Name != "h" || s.Cut || s.Arch != "sm_90" {
		t.Fatalf("got %+v, want one function h, not cut", s)
	}
	f := s.Functions[0]
	want := []SASSLine{{"cell.cu", 3, 1}, {"cell.cu", 4, 4}, {"cell.cu", 5, 3}, {"cell.cu", 6, 4}, {"cell.cu", 7, 5}, {"cell.cu", 2, 2}, {"cell.cu", 9, 1}}
	if !reflect.DeepEqual(f.Lines, want) {
		t.Errorf("lines %+v, want %+v", f.Lines, want)
	}
	if n := len(f.Instructions); n != 20 {
		t.Errorf("%d instructions, want 20 (the closing BRA and NOPs left out)", n)
	}
	if i := f.Instructions[2]; i != (SASSInstruction{Offset: 0x20, File: "cell.cu", Line: 4, Text: "S2UR UR4, SR_CTAID.X"}) {
		t.Errorf("third instruction %+v", i)
	}
	if last := f.Instructions[len(f.Instructions)-1]; last.Text != "EXIT" || last.Line != 9 {
		t.Errorf("last instruction %+v, want EXIT on line 9", last)
	}
	if i := f.Instructions[7]; i.Text != "@P0 EXIT" {
		t.Errorf("a predicated instruction reads %q, want @P0 EXIT", i.Text)
	}
}

// Past max instructions the rest are left out of the listing but still counted per line.
func TestParseSASSCut(t *testing.T) {
	listing, _ := os.ReadFile("testdata/sass/inlined.sm_90.txt")
	s := ParseSASS(string(listing), "sm_90", 5)
	if !s.Cut || len(s.Functions) != 1 || len(s.Functions[0].Instructions) != 5 {
		t.Fatalf("got cut %v, %d functions, want cut with 5 instructions", s.Cut, len(s.Functions))
	}
	total := 0
	for _, l := range s.Functions[0].Lines {
		total += l.Count
	}
	if total != 20 {
		t.Errorf("lines count %d instructions, want all 20", total)
	}
	if s := ParseSASS("junk\n/*0000*/ NOP ;\n", "sm_90", 5); len(s.Functions) != 0 {
		t.Errorf("instructions outside a .text section made %+v", s)
	}
}

// ptxas -v -lineinfo and nvdisasm -g turn a PTX with .loc lines into SASS whose instructions carry
// them: the load of line 3 is an LDG, the store of line 5 an STG; an architecture below the PTX's
// target is ptxas's error.
func TestDisassemble(t *testing.T) {
	px, nvdisasm := requirePtxas(t), requireNvdisasm(t)
	ptx, err := os.ReadFile("testdata/sass/lines.ptx")
	if err != nil {
		t.Fatal(err)
	}
	s, res, err := linesSASS(px, nvdisasm) // what TestSASSPerPTXLine compares with
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 1 || res[0].Entry != "k" || res[0].Arch != "sm_90" || res[0].Registers == 0 {
		t.Errorf("resources %+v, want ptxas -v's report of k for sm_90", res)
	}
	if len(s.Functions) != 1 || s.Functions[0].Name != "k" || !strings.Contains(s.Tool, "ptxas "+px.Version) {
		t.Fatalf("got %+v, want the one function k", s)
	}
	byLine := map[int][]string{}
	for _, i := range s.Functions[0].Instructions {
		if i.File != "cell.cu" {
			t.Errorf("%+v: file %q, want cell.cu", i, i.File)
		}
		byLine[i.Line] = append(byLine[i.Line], i.Text)
	}
	if got := strings.Join(byLine[3], "; "); !strings.Contains(got, "LDG") {
		t.Errorf("line 3: %q, want an LDG", got)
	}
	if got := strings.Join(byLine[5], "; "); !strings.HasPrefix(got, "STG") {
		t.Errorf("line 5: %q, want an STG", got)
	}
	if got := byLine[6]; len(got) != 1 || got[0] != "EXIT" {
		t.Errorf("line 6: %q, want EXIT alone", got)
	}
	if _, _, err := px.Disassemble(context.Background(), string(ptx), 75, nvdisasm); err == nil || !strings.Contains(err.Error(), "-arch=sm_75") {
		t.Errorf("sm_75 for compute_80 PTX: got %v, want ptxas's refusal", err)
	}
}

// hostileListing is an nvdisasm -g listing of fns functions of n instructions each, every
// instruction under its own line of a file named by a #line directive of 300 '<' (each written
// \u003c in JSON, clipped to 256 bytes by ParseSASS).
func hostileListing(fns, n int) string {
	var b strings.Builder
	name := strings.Repeat("<", 300)
	for f := range fns {
		fmt.Fprintf(&b, "\t.section\t.text.k%d,\"ax\",@progbits\n", f)
		for i := range n {
			fmt.Fprintf(&b, "\t//## File \"%s\", line %d\n", name, i+1)
			fmt.Fprintf(&b, "        /*%04x*/                   IMAD.MOV.U32 R1, RZ, RZ, c[0x0][0x28] ;\n", 16*i)
		}
	}
	return b.String()
}

// Long #line file names cannot make the SASS's JSON larger than about MaxSASSBytes (the compile
// worker's response line is 1 MiB): what does not fit is left out, with Cut, and what is kept is
// the listing's start, each kept instruction's line listed.
func TestParseSASSBoundsItsJSON(t *testing.T) {
	for _, tc := range []struct{ fns, n int }{{1, MaxSASSInstructions}, {40000, 1}} {
		s := ParseSASS(hostileListing(tc.fns, tc.n), "sm_90", MaxSASSInstructions)
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := len(b), MaxSASSBytes+1024; got > want {
			t.Errorf("%d functions of %d: JSON %d bytes, want at most %d", tc.fns, tc.n, got, want)
		}
		if !s.Cut || len(s.Functions) == 0 || len(s.Functions[0].Instructions) == 0 {
			t.Fatalf("%d functions of %d: cut %v, %d functions, want cut with the first kept", tc.fns, tc.n, s.Cut, len(s.Functions))
		}
		f := s.Functions[0]
		if got, want := f.Name, "k0"; got != want {
			t.Errorf("first function %q, want %q", got, want)
		}
		listed := map[int]bool{}
		for _, l := range f.Lines {
			listed[l.Line] = true
			if l.Count != 1 || len(l.File) != 256 {
				t.Errorf("line %+v, want count 1 and a 256-byte file name", l)
			}
		}
		for _, in := range f.Instructions {
			if !listed[in.Line] {
				t.Fatalf("instruction %d of line %d kept, its line not listed", in.Offset, in.Line)
			}
		}
	}
	if s := ParseSASS(hostileListing(2, 3), "sm_90", MaxSASSInstructions); s.Cut || len(s.Functions) != 2 || len(s.Functions[1].Instructions) != 3 {
		t.Errorf("a small listing: cut %v, %d functions, want all of it", s.Cut, len(s.Functions))
	}
}
