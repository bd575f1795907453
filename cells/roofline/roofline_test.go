package roofline

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/gpuplayground/playground/cells"
	"github.com/gpuplayground/playground/cells/shared/kernelcell"
	"github.com/gpuplayground/playground/estimate"
	"github.com/gpuplayground/playground/harness"
	"github.com/gpuplayground/playground/kernels"
)

func TestParse(t *testing.T) {
	r, err := Parse("kernels: [naive, gonum]\nsizes: [64]\npredict: {naive: 2, gonum: 20.5}\ngpu: T4", kernels.CPU(), harness.DefaultLimits(), estimate.Defaults())
	if err != nil || r.Predict["gonum"] != 20.5 || r.GPU == nil || r.GPU.Name != "T4" || r.Kernels[1] != "gonum" {
		t.Fatalf("got %+v, %v", r, err)
	}
	for src, want := range map[string]string{
		"kernels: [naive]\nsizes: [64]\npredict: {ikj: 3}":                  "predict ikj",
		"kernels: [naive]\nsizes: [64]\npredict: {naive: -1}":               "positive GFLOP/s",
		"kernels: [naive]\nsizes: [64]\ngpu: V100":                          `line 3: unknown GPU "V100"`,
		"kernels: [naive]\nsizes: [64]\npredict: {" + predictions(33) + "}": "line 3: 33 predictions; a cell predicts at most 32 (one per kernel)",
		"kernels: [naive]\nsizes: [64]\nguess: 3":                           "known keys: id, machine, kernels, sizes, dtype, repeats, threads, transfers, peak, gpu, show, predict",
	} {
		_, err := Parse(src, kernels.CPU(), harness.DefaultLimits(), estimate.Defaults())
		var se *cells.SpecError
		if !errors.As(err, &se) || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: got %v, want %q", src, err, want)
		}
	}
	// Plain matmul cells still refuse the roofline keys.
	if _, err := kernelcell.Parse("kernels: [naive]\nsizes: [64]\npredict: {naive: 1}", kernels.CPU(), harness.DefaultLimits(), estimate.Defaults()); err == nil {
		t.Error("a matmul cell accepted predict")
	}
}

// predictions writes n predictions for distinct names.
func predictions(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "k%d: 1, ", i)
	}
	return strings.TrimSuffix(b.String(), ", ")
}

func TestPredictionsNote(t *testing.T) {
	if got, want := predictionsNote(map[string]float64{"naive": 2, "gonum": 20.5}), "Your predictions (hollow markers): gonum 20.5 GFLOP/s; naive 2 GFLOP/s."; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
