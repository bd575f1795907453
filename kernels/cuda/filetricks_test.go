package cuda_test

import (
	"errors"
	"testing"

	"github.com/gpuplayground/playground/internal/filetricks"
	"github.com/gpuplayground/playground/kernels/cuda"
)

// Every trick of the abuse suite is refused by the source rule alone, on its own line.
func TestFileTricksRefusedOnTheirLine(t *testing.T) {
	for _, tr := range filetricks.Tricks("/etc/passwd") {
		var ie *cuda.IncludeError
		if err := cuda.CheckIncludes(tr.Source, "cell.cu"); !errors.As(err, &ie) {
			t.Errorf("%s: got %v, want an *IncludeError", tr.Name, err)
			continue
		}
		if got, want := ie.Line, tr.Line; got != want {
			t.Errorf("%s: refused line %d, want %d (%v)", tr.Name, got, want, ie)
		}
	}
}
