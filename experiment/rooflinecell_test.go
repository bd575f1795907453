package experiment

import (
	"errors"
	"strings"
	"testing"

	"github.com/gpuplayground/playground/kernels"
)

func TestParseRoofline(t *testing.T) {
	r, err := ParseRoofline("kernels: [naive, gonum]\nsizes: [64]\npredict: {naive: 2, gonum: 20.5}\ngpu: T4", kernels.CPU(), DefaultLimits())
	if err != nil || r.Predict["gonum"] != 20.5 || r.GPU == nil || r.GPU.Name != "T4" || r.Kernels[1] != "gonum" {
		t.Fatalf("got %+v, %v", r, err)
	}
	for src, want := range map[string]string{
		"kernels: [naive]\nsizes: [64]\npredict: {ikj: 3}":    "predict ikj",
		"kernels: [naive]\nsizes: [64]\npredict: {naive: -1}": "positive GFLOP/s",
		"kernels: [naive]\nsizes: [64]\ngpu: V100":            `line 3: unknown GPU "V100"`,
		"kernels: [naive]\nsizes: [64]\nguess: 3":             "known keys: kernels, sizes, dtype, repeats, threads, transfers, peak, gpu, predict",
	} {
		_, err := ParseRoofline(src, kernels.CPU(), DefaultLimits())
		var se *SpecError
		if !errors.As(err, &se) || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: got %v, want %q", src, err, want)
		}
	}
	// Plain matmul cells still refuse the roofline keys.
	if _, err := Parse("kernels: [naive]\nsizes: [64]\npredict: {naive: 1}", kernels.CPU(), DefaultLimits()); err == nil {
		t.Error("a matmul cell accepted predict")
	}
}
