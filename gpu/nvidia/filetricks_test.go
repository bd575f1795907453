package nvidia_test

import (
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
