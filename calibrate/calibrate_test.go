package calibrate

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/gpuplayground/playground/estimate"
	"github.com/gpuplayground/playground/vgpurun"
)

// A small calibration measures the kernels asked for at the sizes asked for, in both precisions,
// with positive costs, and the harness's per-element and per-result costs.
func TestMeasureSmall(t *testing.T) {
	r, err := Measure(context.Background(), Options{Kernels: []string{"ikj", "simd"}, Sizes: []int{16, 48}, SkipSimulators: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"ikj/float32", "ikj/float64", "simd/float32", "simd/float64"} {
		pts := r.Kernels[key]
		if len(pts) != 2 || pts[0].N != 16 || pts[1].N != 48 || !(pts[0].SPF > 0) || !(pts[1].SPF > 0) {
			t.Errorf("%s: %+v", key, pts)
		}
	}
	if len(r.Kernels) != 4 {
		t.Errorf("measured %d series, want 4", len(r.Kernels))
	}
	if !(r.FillNs > 0) || !(r.PointSeconds > 0) || r.Source != "calibrated" || r.Procs < 1 {
		t.Errorf("rates %+v", r)
	}
}

// A ladder stops at the first size whose whole call is projected over the run time limit.
func TestLadderStopsOverTheLimit(t *testing.T) {
	r, err := Measure(context.Background(), Options{Kernels: []string{"naive"}, Sizes: []int{16, 32, 64}, RunTimeout: 1, SkipSimulators: true})
	if err != nil {
		t.Fatal(err)
	}
	if pts := r.Kernels["naive/float32"]; len(pts) != 1 {
		t.Errorf("with a 1 ns limit: %d points, want 1", len(pts))
	}
}

// The simulators' rates cover the emulated ladder kernels asked for, and no other, and both
// systolic regimes; without SIMTKernels, Measure times every ladder kernel. (Timing them all took
// 7.7 CPU s, 7 of them the three largest Hopper rungs at n = 512; TestSIMTRateOfAPaddedRung times a
// padded one.)
func TestMeasureSimulators(t *testing.T) {
	if got, want := (Options{}).simtKernels(), vgpurun.Ladder(); !slices.Equal(got, want) {
		t.Errorf("Measure's SIMT kernels by default: %v, want the ladder %v", got, want)
	}
	simt := []string{"naive", "coalesced", "smem", "regblock"}
	r, err := Measure(context.Background(), Options{Kernels: []string{}, Sizes: []int{16}, SIMTKernels: simt})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range simt {
		if !(r.SIMTSeconds(k, 64) > 0) {
			t.Errorf("SIMT %s: no rate (%v, n %v)", k, r.SIMT[k], r.SIMTN[k])
		}
	}
	if len(r.SIMT) != len(simt) {
		t.Errorf("SIMT rates of %d kernels, want the %d asked for: %v", len(r.SIMT), len(simt), r.SIMT)
	}
	if s := r.Systolic; !(s.PE > 0) || !(s.AnimPE > 0) || s.AnimatedN != 16 {
		t.Errorf("systolic %+v", s)
	}
}

// A cancelled calibration returns the context's error.
func TestMeasureCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Measure(ctx, Options{}); !errors.Is(err, context.Canceled) {
		t.Errorf("got %v, want context.Canceled", err)
	}
}

// Kept rates come back for this CPU and binary; a file from another key is stale, and Ensure then
// measures. Ensure installs what it returns.
func TestSaveLoadEnsure(t *testing.T) {
	current := &estimate.Current{}
	path := filepath.Join(t.TempDir(), "sub", "rates.json")
	r := &estimate.Rates{Source: "calibrated", Procs: 1, Kernels: map[string][]estimate.Point{"ikj/float32": {{N: 16, SPF: 7}}}}
	if err := Save(path, r); err != nil {
		t.Fatal(err)
	}
	got, err := Load(path)
	if err != nil || got.Kernels["ikj/float32"][0].SPF != 7 {
		t.Fatalf("Load: %+v, %v", got, err)
	}
	got, measured, err := Ensure(context.Background(), path, current, Options{})
	if err != nil || measured || got.Kernels["ikj/float32"][0].SPF != 7 || current.Get() != got {
		t.Fatalf("Ensure with kept rates: measured %v, %v", measured, err)
	}
	stale := filepath.Join(t.TempDir(), "stale.json")
	os.WriteFile(stale, []byte(`{"key":"another machine","rates":{"kernels":{"ikj/float32":[{"n":16,"spf":7}]}}}`), 0o644)
	if _, err := Load(stale); !errors.Is(err, ErrStale) {
		t.Errorf("Load of another key: %v, want ErrStale", err)
	}
	if _, err := Load(filepath.Join(t.TempDir(), "none.json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Load of no file: %v", err)
	}
}

// Ensure measures when nothing is kept, installs the result and keeps it; a cancelled Ensure installs
// nothing.
func TestEnsureMeasuresAndKeeps(t *testing.T) {
	current := &estimate.Current{}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	path := filepath.Join(t.TempDir(), "rates.json")
	if _, _, err := Ensure(ctx, path, current, Options{}); !errors.Is(err, context.Canceled) || current.Calibrated() {
		t.Fatalf("cancelled Ensure: %v, calibrated %v", err, current.Calibrated())
	}
	r, measured, err := Ensure(context.Background(), path, current, Options{Kernels: []string{"ikj"}, Sizes: []int{16}, SkipSimulators: true})
	if err != nil || !measured || current.Get() != r {
		t.Fatalf("Ensure: measured %v, %v", measured, err)
	}
	if kept, err := Load(path); err != nil || len(kept.Kernels) != 2 {
		t.Errorf("kept: %+v, %v", kept, err)
	}
}

// A Hopper rung, which pads n to whole tiles, is timed at its Pad and twice it, sizes whose padded
// launches differ, so its rate is known at the larger and grows with n.
func TestSIMTRateOfAPaddedRung(t *testing.T) {
	r, err := SIMT(context.Background(), []string{"wgmma-tma"})
	if err != nil {
		t.Fatal(err)
	}
	if r.SIMTN["wgmma-tma"] != 256 || !(r.SIMT["wgmma-tma"] > 0) || r.SIMTExp["wgmma-tma"] < 2.5 {
		t.Errorf("wgmma-tma: rate %g at n=%d, exponent %g; want a rate at 256", r.SIMT["wgmma-tma"], r.SIMTN["wgmma-tma"], r.SIMTExp["wgmma-tma"])
	}
}
