package kernelcell

import (
	"testing"

	"github.com/gpuplayground/playground/chart"
	"github.com/gpuplayground/playground/harness"
)

// RatePoints hands chart its own points: each result's GFLOP/s, or the rate a problem cell
// measures in (GB/s from its bytes and seconds), with the kernel, size and precision kept.
func TestRatePoints(t *testing.T) {
	rs := []harness.Result{{Kernel: "naive", N: 64, DType: "float32", GFLOPS: 1.5, Seconds: 2}}
	if got, want := RatePoints(rs, nil), []chart.RatePoint{{Kernel: "naive", N: 64, DType: "float32", Rate: 1.5}}; got[0] != want[0] || len(got) != 1 {
		t.Errorf("GFLOP/s points %+v, want %+v", got, want)
	}
	perSecond := func(r harness.Result) float64 { return float64(r.N) / r.Seconds }
	if got := RatePoints(rs, perSecond); got[0].Rate != 32 || got[0].Kernel != "naive" {
		t.Errorf("rated points %+v, want a rate of 32", got)
	}
}
