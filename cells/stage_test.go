package cells_test

import (
	"testing"

	"github.com/gpuplayground/playground/cells"
	"github.com/gpuplayground/playground/cells/cellstest"
)

// Two passes with totals of their own report one bar that only moves forward and ends full.
func TestStageProgressMovesForward(t *testing.T) {
	var rec cellstest.Recorder
	last := -1.0
	check := func() {
		t.Helper()
		d, tot := rec.Done[0], rec.Done[1]
		f := float64(d) / float64(tot)
		if f < last {
			t.Fatalf("progress went back to %d/%d", d, tot)
		}
		last = f
	}
	for i := 1; i <= 30; i++ {
		cells.Stage(&rec, 0, 2).Progress(i, 30)
		check()
	}
	for i := 1; i <= 4; i++ {
		cells.Stage(&rec, 1, 2).Progress(i, 4)
		check()
	}
	if rec.Done[0] != rec.Done[1] {
		t.Errorf("ended at %v, want full", rec.Done)
	}
}
