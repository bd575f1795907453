package nvidia_test

import (
	"context"
	"errors"
	"testing"

	"github.com/gpuplayground/playground/gpu/nvidia"
	"github.com/gpuplayground/playground/internal/filetricks"
)

// Every trick of the abuse suite is refused by the source rule alone, on its own line.
func TestFileTricksRefusedOnTheirLine(t *testing.T) {
	for _, tr := range filetricks.Tricks("/etc/passwd") {
		var ie *nvidia.IncludeError
		if err := nvidia.CheckIncludes(tr.Source, "cell.cu"); !errors.As(err, &ie) {
			t.Errorf("%s: got %v, want an *IncludeError", tr.Name, err)
			continue
		}
		if got, want := ie.Line, tr.Line; got != want {
			t.Errorf("%s: refused line %d, want %d (%v)", tr.Name, got, want, ie)
		}
	}
}

// Each compiler refuses every trick itself, before it compiles, whatever its caller checked (the
// compile worker refuses first, nvidia.Refuse, so its tests never reach these): NVRTC's Compile,
// clang's CompileHeaders and CompileFor (with no compiler at all: its own refusal comes first). A
// refusal unwraps to the *IncludeError on the trick's line; a compile that ran instead would fail
// without one, or pass.
func TestCompilersRefuseFileTricksThemselves(t *testing.T) {
	nv, cl := needNVRTC(t), needClang(t)
	paths := map[string]func(src string) error{
		"NVRTC.Compile": func(src string) error { _, _, err := nv.Compile(src, "cell.cu", "compute_80"); return err },
		"Clang.CompileHeaders": func(src string) error {
			_, _, err := cl.CompileHeaders(context.Background(), src, "cell.cu", 80, "")
			return err
		},
		"CompileFor": func(src string) error {
			_, err := nvidia.CompileFor(context.Background(), nil, nil, "", src, "cell.cu", "80")
			return err
		},
	}
	for name, compile := range paths {
		for _, tr := range filetricks.Tricks("/etc/passwd") {
			var ie *nvidia.IncludeError
			if err := compile(tr.Source); !errors.As(err, &ie) || ie.Line != tr.Line {
				t.Errorf("%s, %s: got %v, want the source rule's refusal on line %d", name, tr.Name, err, tr.Line)
			}
		}
	}
}
