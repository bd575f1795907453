package roofline

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
)

func TestMeasureGivesSaneCeilings(t *testing.T) {
	c, err := Measure(context.Background(), Options{PeakSizes: []int{64, 128}, TriadMiB: 16, Repeats: 3})
	if err != nil {
		t.Fatal(err)
	}
	// Any CPU of the last twenty years: between 0.1 and 10,000 GFLOP/s, 0.5 and 2,000 GB/s.
	if !(c.PeakGFLOPS > 0.1 && c.PeakGFLOPS < 1e4) || c.PeakKernel == "" || c.PeakKernel == "naive" {
		t.Errorf("peak %g GFLOP/s by %q", c.PeakGFLOPS, c.PeakKernel)
	}
	if !(c.BandwidthGBs > 0.5 && c.BandwidthGBs < 2000) {
		t.Errorf("bandwidth %g GB/s", c.BandwidthGBs)
	}
	if r := c.Ridge(); math.Abs(r-c.PeakGFLOPS/c.BandwidthGBs) > 1e-12 || r <= 0 {
		t.Errorf("ridge %g", r)
	}
	t.Logf("%+v (ridge %.2f FLOP/byte)", c, c.Ridge())
}

func TestBoundAndIntensity(t *testing.T) {
	c := Ceilings{PeakGFLOPS: 100, BandwidthGBs: 10}
	for _, tt := range []struct{ ai, want float64 }{{1, 10}, {10, 100}, {1000, 100}, {0.5, 5}} {
		if got := c.Bound(tt.ai); got != tt.want {
			t.Errorf("Bound(%g) = %g, want %g", tt.ai, got, tt.want)
		}
	}
	// n = 1024 in float32: 2·1024³ / (3·1024²·4) = 170.67 FLOP/byte.
	if got := MatmulIntensity(1024, 4); math.Abs(got-2048.0/12) > 1e-9 {
		t.Errorf("MatmulIntensity(1024, 4) = %g", got)
	}
}

func TestCacheMeasuresOnceAndRetriesFailures(t *testing.T) {
	k := Cache{Options: Options{PeakSizes: []int{64}, TriadMiB: 4, Repeats: 2}}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := k.Get(cancelled); err == nil {
		t.Fatal("a cancelled measurement succeeded")
	}
	a, err := k.Get(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	b, _ := k.Get(context.Background())
	if a != b {
		t.Errorf("second Get measured again: %+v vs %+v", a, b)
	}
}

func TestTheoreticalPeak(t *testing.T) {
	p, ok := TheoreticalPeak()
	if !ok {
		t.Skip("no cpu MHz in /proc/cpuinfo here")
	}
	if p.FP32 != float64(p.Cores*p.FMAUnits*2*p.Lanes32)*p.GHz || p.FP64*2 != p.FP32 || p.FMAUnits != 2 {
		t.Errorf("got %+v", p)
	}
	if e := p.Explain("float64"); !strings.Contains(e, fmt.Sprintf("× %d float64 lanes", p.Lanes64)) {
		t.Errorf("Explain(float64) = %q", e)
	}
	t.Logf("%+v", p)
}
