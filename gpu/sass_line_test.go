package gpu

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/gpuplayground/playground/gpu/nvidia"
)

// Show SASS's Done line carries the PTX and the SASS: with a kernel whose #line directives give
// every instruction its own 300-byte file name of '<' (six bytes each in JSON), beside 256 KiB of
// PTX, it still fits the supervisor's line (maxLine), so the worker is not taken for broken.
func TestSASSDoneLineFitsWithLongFileNames(t *testing.T) {
	var b strings.Builder
	b.WriteString("\t.section\t.text.k,\"ax\",@progbits\n")
	for i := range 2 * nvidia.MaxSASSInstructions {
		fmt.Fprintf(&b, "\t//## File \"%s\", line %d\n\t/*%04x*/ MOV R1, c[0x0][0x28] ;\n", strings.Repeat("<", 300), i+1, 16*i)
	}
	s := nvidia.ParseSASS(b.String(), "sm_90", nvidia.MaxSASSInstructions)
	line, err := json.Marshal(Response{ID: 1, PTX: strings.Repeat("\tmov.u32 %r1, %r2;\n", 256<<10/19), SASS: &s, Done: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := len(line); got >= maxLine {
		t.Errorf("Done line %d bytes, want under %d", got, maxLine)
	}
	if !s.Cut {
		t.Errorf("the SASS is not marked cut")
	}
}
