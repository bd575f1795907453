package nvidia

import (
	"context"
	"os"
	"reflect"
	"strings"
	"testing"
)

// A learner's PTX comes with its source's line table (.file 1 "cell.cu", a .loc before each
// statement: testdata/sass/lines.ptx); SASSPerPTXLine replaces it with one of the PTX's own lines,
// so every SASS instruction ptxas made for sm_90 is counted on the PTX line it came from: the
// ld.global (line 15) has its LDG (and the constant loads of its address), the add.f32 (17) is one
// FADD, the st.global (19) one STG, the ret (21) the EXIT, no count lands on a directive, and the counts add up to the listing's instructions. PerLine gives those counts
// (each block is one copy here) and 0 outside the PTX; ptxas's report of that run is the one of the
// PTX as it came.
func TestSASSPerPTXLine(t *testing.T) {
	px, nvdisasm := requirePtxas(t), requireNvdisasm(t)
	ptx, err := os.ReadFile("testdata/sass/lines.ptx")
	if err != nil {
		t.Fatal(err)
	}
	s, res, err := SASSPerPTXLine(context.Background(), px, nvdisasm, string(ptx), 90)
	if err != nil {
		t.Fatal(err)
	}
	whole, want, err := linesSASS(px, nvdisasm) // TestDisassemble's run of the same PTX
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(res, want) {
		t.Errorf("ptxas's report with the PTX's line table %+v, with the source's %+v", res, want)
	}
	listed := 0
	for _, f := range whole.Functions {
		for _, l := range f.Lines {
			listed += l.Count
		}
	}
	lines := strings.Split(string(ptx), "\n")
	sum := 0
	for i, n := range s.Counts {
		sum += n
		if n > 0 && !ptxInstructionLine(strings.TrimSpace(lines[i])) {
			t.Errorf("line %d (%q): %d SASS instructions, want none on a directive", i+1, lines[i], n)
		}
	}
	if s.Arch != "sm_90" || sum != listed {
		t.Errorf("%s: %d SASS instructions over the PTX lines, the listing has %d", s.Arch, sum, listed)
	}
	if got := s.PerLine(15); got < 1 {
		t.Errorf("PerLine(15) = %g, want the LDG at least (%q)", got, strings.TrimSpace(lines[14]))
	}
	for _, line := range []int{17, 19, 21} {
		if got := s.PerLine(line); got != 1 {
			t.Errorf("PerLine(%d) = %g, want 1 (%q)", line, got, strings.TrimSpace(lines[line-1]))
		}
	}
	if s.PerLine(0) != 0 || s.PerLine(len(lines)+1) != 0 {
		t.Error("lines outside the PTX have counts")
	}
}
