package cells_test

import (
	"context"
	"testing"
	"time"

	"github.com/gpuplayground/playground/cells"
	"github.com/gpuplayground/playground/cells/builtin"
	"github.com/gpuplayground/playground/experiment"
	"github.com/gpuplayground/playground/gpu"
	"github.com/gpuplayground/playground/kernels"
)

type plainRun struct{}

func (plainRun) Estimate() time.Duration                  { return 0 }
func (plainRun) Run(context.Context, cells.Emitter) error { return nil }

type sharedRun struct{ plainRun }

func (sharedRun) Exclusive() bool { return false }

// A run is exclusive unless it says otherwise; on a machine without a GPU the simulators, models and
// the virtual GPU say otherwise, and the measuring kinds do not.
func TestExclusive(t *testing.T) {
	if !cells.Exclusive(plainRun{}) || cells.Exclusive(sharedRun{}) {
		t.Fatal("Exclusive: want true by default, false when the run says so")
	}
	m := &gpu.Machine{}
	m.Report.Unavailable = "no GPU in this test"
	env := cells.Env{Kernels: kernels.CPU(), Limits: experiment.DefaultLimits(), GPU: m}
	srcs := map[string]string{
		"systolic":  "array: 4\nm: 4\nn: 4\nk: 4\nclock_mhz: 700\n",
		"allreduce": "gradient_mb: 1\ngpus: [2]\nlinks: {a: 1}\n",
		"simt":      "kernels: [naive]\nn: 32\n",
		"matmul":    "kernels: [naive]\nsizes: [8]\n",
	}
	want := map[string]bool{"systolic": false, "allreduce": false, "simt": false, "matmul": true}
	for _, k := range builtin.Kinds(env) {
		src, ok := srcs[k.Name()]
		if !ok {
			continue
		}
		r, err := k.Parse(cells.Cell{ID: "x", Source: src})
		if err != nil {
			t.Fatalf("%s: %v", k.Name(), err)
		}
		if got := cells.Exclusive(r); got != want[k.Name()] {
			t.Errorf("%s: Exclusive %v, want %v", k.Name(), got, want[k.Name()])
		}
	}
}
