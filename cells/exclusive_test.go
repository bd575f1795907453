package cells_test

import (
	"context"
	"testing"
	"time"

	"github.com/gpuplayground/playground/cells"
)

type plainRun struct{}

func (plainRun) Estimate() time.Duration                  { return 0 }
func (plainRun) Run(context.Context, cells.Emitter) error { return nil }

type sharedRun struct{ plainRun }

func (sharedRun) Exclusive() bool { return false }

// A run is exclusive unless it says otherwise (the built-in kinds' runs: cells/builtin's TestExclusive).
func TestExclusive(t *testing.T) {
	if !cells.Exclusive(plainRun{}) || cells.Exclusive(sharedRun{}) {
		t.Fatal("Exclusive: want true by default, false when the run says so")
	}
}
