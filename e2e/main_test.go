package e2e

import (
	"os"
	"testing"

	"github.com/gpuplayground/playground/gpu"
)

// TestMain lets this test binary serve as the GPU worker that the servers under test start, and
// stops the browser the tests shared (newTab).
func TestMain(m *testing.M) {
	if gpu.ServeChild(os.Args, os.Stdin, os.Stdout) {
		os.Exit(0)
	}
	code := m.Run()
	stopSharedBrowser()
	os.Exit(code)
}
