package gpu

import (
	"strings"
	"testing"

	"github.com/gpuplayground/playground/gpu/nvidia"
)

// An entry-scope .pragma between an entry's directives and its body (PTX ISA 8.x, ".pragma": it
// may stand at module scope, at entry scope or as a statement) leaves the entry a definition: its
// parameters are checked, not "no kernel entry". A module-scope .pragma before the entry, and a
// declaration ended by ';' after one, keep their meaning.
func TestCheckLaunchParamsEntryScopePragma(t *testing.T) {
	args := []any{nvidia.DevicePtr(1), nvidia.DevicePtr(2), int32(3), nvidia.TensorMap{}}
	withPragma := strings.Replace(signaturePTX, ".maxntid 256, 1, 1\n{", ".maxntid 256, 1, 1\n.pragma \"nounroll\";\n{", 1)
	if withPragma == signaturePTX {
		t.Fatal("signaturePTX changed: no .maxntid line before mm's body")
	}
	if err := checkLaunchParams(withPragma, "mm", args); err != nil {
		t.Errorf("mm with an entry-scope .pragma: got %v, want it accepted", err)
	}
	if err := checkLaunchParams(withPragma, "mm", args[:3]); err == nil || !strings.Contains(err.Error(), "takes 4 parameters") {
		t.Errorf("mm with an entry-scope .pragma, 3 arguments: got %v, want its 4 parameters counted", err)
	}
	moduleScope := strings.Replace(signaturePTX, ".alias g, f;", ".alias g, f;\n.pragma \"nounroll\";", 1)
	if err := checkLaunchParams(moduleScope, "mm", args); err != nil {
		t.Errorf("mm after a module-scope .pragma: got %v, want it accepted", err)
	}
	declaredThenPragma := strings.Replace(signaturePTX, ".visible .entry mm(", ".extern .entry only(.param .u32 x);\n.pragma \"nounroll\";\n.visible .entry mm(", 1)
	if err := checkLaunchParams(declaredThenPragma, "only", args[:1]); err == nil || err.Error() != "the PTX has no kernel entry only" {
		t.Errorf("a declaration, then a module-scope .pragma: got %v, want no definition of only", err)
	}
}
