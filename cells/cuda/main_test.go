package cuda

import (
	"os"
	"testing"

	"github.com/gpuplayground/playground/gpu"
)

// TestMain lets this test binary serve as the compile worker (gpu.WorkerCommand), so that tests
// compile through gpu.Machine as the server does: confined, with ptxas run in the confinement.
func TestMain(m *testing.M) {
	if gpu.ServeChild(os.Args, os.Stdin, os.Stdout) {
		os.Exit(0)
	}
	os.Exit(m.Run())
}
