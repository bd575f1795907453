package roofline

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"

	"golang.org/x/sys/cpu"
)

// Peak is this CPU's theoretical arithmetic peak, computed, not measured: cores × FMA units per core
// × vector lanes × 2 FLOPs per FMA × clock.
type Peak struct {
	Cores    int     `json:"cores"`
	FMAUnits int     `json:"fma_units"`
	Lanes32  int     `json:"lanes32"`
	Lanes64  int     `json:"lanes64"`
	GHz      float64 `json:"ghz"`
	FP32     float64 `json:"fp32_gflops"`
	FP64     float64 `json:"fp64_gflops"`
	// Width names the vector unit, e.g. "AVX-512 (512-bit)".
	Width string `json:"width"`
}

// Explain spells out the peak for dtype ("float32" or "float64"), saying what was assumed.
func (p Peak) Explain(dtype string) string {
	lanes, g := p.Lanes32, p.FP32
	if dtype == "float64" {
		lanes, g = p.Lanes64, p.FP64
	}
	return fmt.Sprintf("%.0f GFLOP/s = %d cores × %d FMA units (assumed) × %d %s lanes (%s) × 2 FLOPs × %.2f GHz (cpu MHz now)",
		g, p.Cores, p.FMAUnits, lanes, dtype, p.Width, p.GHz)
}

// TheoreticalPeak computes the peak from what the OS reports: the logical CPUs Go may use, the widest
// vector unit the CPU flags offer (AVX-512: 16 float32 lanes; AVX2: 8; SSE: 4), and the clock in
// /proc/cpuinfo ("cpu MHz": the current clock, which turbo and power saving move). The number of FMA
// units per core is not reported anywhere; it is assumed to be 2, as on Intel cores since Haswell
// (Intel 64 and IA-32 Architectures Optimization Reference Manual) and AMD Zen 4 (AMD software
// optimization guide for family 19h), though some Xeon SKUs have one 512-bit FMA unit.
func TheoreticalPeak() (Peak, bool) {
	p := Peak{Cores: runtime.GOMAXPROCS(0), FMAUnits: 2, Lanes32: 4, Width: "SSE (128-bit)"}
	switch {
	case cpu.X86.HasAVX512F:
		p.Lanes32, p.Width = 16, "AVX-512 (512-bit)"
	case cpu.X86.HasAVX2 && cpu.X86.HasFMA:
		p.Lanes32, p.Width = 8, "AVX2 + FMA (256-bit)"
	case runtime.GOARCH == "arm64":
		p.Lanes32, p.Width = 4, "NEON (128-bit)"
	}
	p.Lanes64 = p.Lanes32 / 2
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return Peak{}, false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "cpu MHz" {
			if mhz, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil {
				p.GHz = mhz / 1000
				break
			}
		}
	}
	if p.GHz == 0 {
		return Peak{}, false
	}
	perCycle := float64(p.Cores * p.FMAUnits * 2)
	p.FP32 = perCycle * float64(p.Lanes32) * p.GHz
	p.FP64 = perCycle * float64(p.Lanes64) * p.GHz
	return p, true
}
