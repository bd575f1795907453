package kernels

import (
	"testing"

	"github.com/gpuplayground/playground/estimate"
)

// Until a calibration is installed, every CPU kernel is priced from the embedded defaults, in both
// precisions and at every size a cell may ask for; installed rates replace them, and nil restores them.
func TestDefaultsAndInstalledRates(t *testing.T) {
	c := &estimate.Current{}
	if c.Calibrated() || c.Get().Source != "defaults" {
		t.Fatalf("before calibration: %q", c.Get().Source)
	}
	for _, k := range CPU() {
		for _, dt := range []string{"float32", "float64"} {
			prev := 0.0
			for _, n := range []int{1, 16, 100, 1000, 4096} {
				s := k.EstimateSeconds(c.Get(), n, dt, 2)
				if !(s > 0) || s < prev {
					t.Errorf("%s %s n=%d: default estimate %g s (previous size %g)", k.Name, dt, n, s, prev)
				}
				prev = s
			}
		}
	}
	for _, k := range []string{"naive", "coalesced", "smem", "regblock"} {
		if estimate.Defaults().SIMTSeconds(k, 64) <= 0 {
			t.Errorf("no default SIMT rate for %s", k)
		}
	}
	if s := estimate.Defaults().Systolic; s.PE <= 0 || s.AnimPE <= 0 || s.AnimatedN == 0 {
		t.Errorf("default systolic rates %+v", s)
	}
	mine := &estimate.Rates{Source: "calibrated", Procs: 1, Kernels: map[string][]estimate.Point{"tiled/float32": {{N: 8, SPF: 1}}}}
	c.Set(mine)
	tiled, _ := Lookup(CPU(), "tiled")
	if got := tiled.EstimateSeconds(c.Get(), 2, "float32", 1); got != 8 || !c.Calibrated() {
		t.Errorf("with installed rates: %g s, want 8", got)
	}
	c.Set(nil)
	if c.Get() != estimate.Defaults() {
		t.Errorf("Set(nil) did not restore the defaults")
	}
}
