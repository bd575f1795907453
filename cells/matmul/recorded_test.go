package matmul

import (
	"testing"

	"github.com/gpuplayground/playground/cells"
	"github.com/gpuplayground/playground/cells/cellstest"
	"github.com/gpuplayground/playground/gpu/nvidia"
	"github.com/gpuplayground/playground/harness"
	"github.com/gpuplayground/playground/kernels"
	"github.com/gpuplayground/playground/measure"
)

// A recording that timed the copies shows them, in the recorded table; one without has no such columns.
func TestRecordedShowsCopies(t *testing.T) {
	available := append(kernels.CPU(), nvidia.GEMMs("no CUDA device (test)")...)
	spec := harness.Spec{Kernels: []string{"cublas"}, Sizes: []int{256}, DType: "float32"}
	res := measure.Result{Kernel: "cublas", N: 256, DType: "float32", Seconds: 1e-5, GFLOPS: 3000, OK: true,
		H2DSeconds: 9e-5, D2HSeconds: 7e-5, TransferGBps: 4.9}
	rec := cells.Recording{Device: "H100", Driver: "13.0", Date: "2026-11-25", Command: "record", Results: []measure.Result{res}}
	e := &cellstest.Recorder{}
	showRecorded(e, rec, spec, available)
	if len(e.Tables) != 1 || len(e.Tables[0].Columns) != 9 {
		t.Fatalf("tables %+v, want one of 9 columns", e.Tables)
	}
	if got, want := e.Tables[0].Columns[6].Label+" "+e.Tables[0].Columns[8].Unit, "host→device GB/s"; got != want {
		t.Errorf("columns %q, want %q", got, want)
	}
	row := e.RowsOf("recorded")[0]
	if got, want := [3]any{row.Values[6], row.Values[7], row.Values[8]}, [3]any{9e-5, 7e-5, 4.9}; got != want {
		t.Errorf("copies %v, want %v", got, want)
	}
	res.H2DSeconds, res.D2HSeconds, res.TransferGBps = 0, 0, 0
	rec.Results = []measure.Result{res}
	e = &cellstest.Recorder{}
	showRecorded(e, rec, spec, available)
	if got := len(e.Tables[0].Columns); got != 6 {
		t.Errorf("without copies: %d columns, want 6", got)
	}
}

// A cell's show: key (tensor-cores-and-precision's [thread instructions, rel. error]) leaves every
// column of the recorded table shown: kernel, n and throughput as well as rel. error.
func TestRecordedKeepsColumnsUnderShow(t *testing.T) {
	available := append(kernels.CPU(), nvidia.GEMMs("no CUDA device (test)")...)
	spec := harness.Spec{Kernels: []string{"cublas"}, Sizes: []int{256}, DType: "float32"}
	res := measure.Result{Kernel: "cublas", N: 256, DType: "float32", Seconds: 1e-5, GFLOPS: 3000, OK: true}
	rec := cells.Recording{Device: "H100", Driver: "13.0", Date: "2026-11-25", Command: "record", Results: []measure.Result{res}}
	e := &cellstest.Recorder{}
	showRecorded(cells.Showing(e, []string{"thread instructions", "rel. error"}), rec, spec, available)
	if len(e.Tables) != 1 {
		t.Fatalf("tables %+v, want one", e.Tables)
	}
	tab := e.Tables[0]
	for i, shown := range tab.Shown() {
		if !shown {
			t.Errorf("column %q is folded away", tab.Columns[i].Label)
		}
	}
	// the named column the table has comes right after the ones that say what a row is, its
	// values with it
	if got, want := tab.Columns[3].Label, "rel. error"; got != want {
		t.Errorf("column 4 is %q, want %q", got, want)
	}
	if row := e.RowsOf("recorded")[0]; row.Values[0] != "cublas" || row.Values[3] != cells.ErrorValue(res.RelError) {
		t.Errorf("row %v, want the kernel first and its error fourth", row.Values)
	}
}
