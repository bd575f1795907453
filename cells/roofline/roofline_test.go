package roofline

import (
	"errors"
	"strings"
	"testing"

	"github.com/gpuplayground/playground/cells"
	"github.com/gpuplayground/playground/cells/matmul"
	"github.com/gpuplayground/playground/experiment"
	"github.com/gpuplayground/playground/kernels"
)

func TestParse(t *testing.T) {
	r, err := Parse("kernels: [naive, gonum]\nsizes: [64]\npredict: {naive: 2, gonum: 20.5}\ngpu: T4", kernels.CPU(), experiment.DefaultLimits())
	if err != nil || r.Predict["gonum"] != 20.5 || r.GPU == nil || r.GPU.Name != "T4" || r.Kernels[1] != "gonum" {
		t.Fatalf("got %+v, %v", r, err)
	}
	for src, want := range map[string]string{
		"kernels: [naive]\nsizes: [64]\npredict: {ikj: 3}":    "predict ikj",
		"kernels: [naive]\nsizes: [64]\npredict: {naive: -1}": "positive GFLOP/s",
		"kernels: [naive]\nsizes: [64]\ngpu: V100":            `line 3: unknown GPU "V100"`,
		"kernels: [naive]\nsizes: [64]\nguess: 3":             "known keys: id, kernels, sizes, dtype, repeats, threads, transfers, peak, predict, gpu",
	} {
		_, err := Parse(src, kernels.CPU(), experiment.DefaultLimits())
		var se *cells.SpecError
		if !errors.As(err, &se) || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: got %v, want %q", src, err, want)
		}
	}
	// Plain matmul cells still refuse the roofline keys.
	if _, err := matmul.Parse("kernels: [naive]\nsizes: [64]\npredict: {naive: 1}", kernels.CPU(), experiment.DefaultLimits()); err == nil {
		t.Error("a matmul cell accepted predict")
	}
}
