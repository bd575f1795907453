package gpumodel

import (
	"strings"
	"testing"
)

// Every accelerator has figures and a source, a GPU that is also in GPUs shares its bandwidth, and
// lookups ignore case and name the known chips when they fail.
func TestAccelerators(t *testing.T) {
	for _, a := range Accelerators {
		if !(a.Dense > 0 && a.DRAM > 0 && a.Memory >= 1e9) || a.Source == "" || a.Format == "" || (a.Kind != "GPU" && a.Kind != "TPU") || a.Year < 2010 {
			t.Errorf("%s: incomplete: %+v", a.Name, a)
		}
		if g, err := LookupGPU(a.Name); err == nil {
			if g.DRAM != a.DRAM {
				t.Errorf("%s: %g B/s here, %g in GPUs", a.Name, a.DRAM, g.DRAM)
			}
			if a.Dense <= g.FP32 {
				t.Errorf("%s: tensor rate %g not above the FP32 rate %g", a.Name, a.Dense, g.FP32)
			}
		}
	}
	if a, err := LookupAccelerator("tpu V4"); err != nil || a.Name != "TPU v4" {
		t.Errorf("tpu V4: got %+v, %v", a, err)
	}
	if _, err := LookupAccelerator("B200"); err == nil || !strings.Contains(err.Error(), "known: H100 SXM") {
		t.Errorf("B200: got %v", err)
	}
}
