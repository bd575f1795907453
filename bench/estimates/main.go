// Command estimates checks the run estimates against measurements on this machine: it calibrates
// (package calibrate, timing the calibration itself), then runs real cells through their kinds across
// each kind's accepted range (matmul cells of one CPU kernel and size, simt cells of one emulated
// kernel, systolic cells) and prints, per cell, the estimate, the measured wall-clock time of the
// whole run and their ratio (estimate / measured; the target is 0.5 to 2). Points whose estimate is
// over -max-point are skipped, so the sweep stays within a few minutes.
//
//	go run ./bench/estimates [-max-point 15s] [-kinds matmul,simt,systolic] [-large] [-kernels gonum] [-dtypes float64] [-repeats 1]
//	go run ./bench/estimates -write-defaults estimate/default_rates.json
//	go run ./bench/estimates -fill-defaults estimate/default_rates.json
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"runtime"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/gpuplayground/playground/calibrate"
	"github.com/gpuplayground/playground/cells"
	"github.com/gpuplayground/playground/cells/cellstest"
	"github.com/gpuplayground/playground/cells/matmul"
	"github.com/gpuplayground/playground/cells/simt"
	"github.com/gpuplayground/playground/cells/systolic"
	"github.com/gpuplayground/playground/estimate"
	"github.com/gpuplayground/playground/gpu"
	"github.com/gpuplayground/playground/gpu/nvidia"
	"github.com/gpuplayground/playground/harness"
	"github.com/gpuplayground/playground/harness/peaks"
	"github.com/gpuplayground/playground/kernels"
	"github.com/gpuplayground/playground/numeric"
	"github.com/gpuplayground/playground/vgpurun"
)

func main() {
	maxPoint := flag.Duration("max-point", 15*time.Second, "skip cells estimated longer than this")
	kinds := flag.String("kinds", "matmul,simt,systolic", "kinds to sweep")
	large := flag.Bool("large", false, "also the large matmul points (n = 1500 to 4096)")
	only := flag.String("kernels", "", "matmul: only these CPU kernels (comma-separated)")
	dtypes := flag.String("dtypes", "float32,float64", "matmul: these dtypes")
	repeats := flag.Int("repeats", 1, "matmul: repeats per cell")
	writeDefaults := flag.String("write-defaults", "", "calibrate, raise every cost by half, write the default rates here, and exit")
	fillDefaults := flag.String("fill-defaults", "", "add to the default rates here the emulator rates of the ladder kernels they lack (fillDefaultRates), and exit")
	flag.Parse()
	ctx := context.Background()
	if *fillDefaults != "" {
		if err := fillDefaultRates(ctx, *fillDefaults); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}

	start := time.Now()
	r, err := calibrate.Measure(ctx, calibrate.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("calibration: %.2f s on %s, GOMAXPROCS %d, %s\n", time.Since(start).Seconds(), r.CPU, r.Procs, time.Now().UTC().Format(time.DateTime))
	if *writeDefaults != "" {
		if err := writeDefaultRates(r, *writeDefaults); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	rates := &estimate.Current{}
	rates.Set(r)
	env := cells.Env{Kernels: kernels.CPU(), Limits: harness.DefaultLimits(), Rates: rates, GPU: &gpu.Machine{Report: nvidia.Report{Unavailable: "no CUDA device (bench)"}},
		Roofline: &peaks.Cache{}}
	sw := &sweep{ctx: ctx, maxPoint: *maxPoint, ratios: map[string][]float64{}}
	if strings.Contains(*kinds, "matmul") {
		sw.matmul(env, *only, *dtypes, *repeats, *large)
	}
	if strings.Contains(*kinds, "simt") {
		sw.simt(env)
	}
	if strings.Contains(*kinds, "systolic") {
		sw.systolic(rates)
	}
	sw.printSummary()
}

// writeDefaultRates raises every cost in r by half (slow) and writes r as indented JSON to path: the
// default rates, for machines that have not calibrated.
func writeDefaultRates(r *estimate.Rates, path string) error {
	slow(r, 1.5)
	data, _ := json.MarshalIndent(r, "", " ")
	return os.WriteFile(path, append(data, '\n'), 0o644)
}

// fillDefaultRates adds to the default rates at path the emulator's rates (SIMT, SIMTN, SIMTExp) of
// the ladder kernels they lack: kernels added after the defaults' calibration, which estimates
// would otherwise price as naive. Each is measured here between two measurements of naive, nine times, and kept as the
// median of its cost over naive's times the defaults' naive cost, so that it carries the defaults'
// machine and margin whatever this machine's speed or load; its growth exponent is the median
// measured. The rates the defaults have are left as they are.
func fillDefaultRates(ctx context.Context, path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var d estimate.Rates
	if err := json.Unmarshal(data, &d); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	var missing []string
	for _, k := range vgpurun.Ladder() {
		if d.SIMT[k] == 0 {
			missing = append(missing, k)
		}
	}
	if len(missing) == 0 || d.SIMT["naive"] == 0 {
		return fmt.Errorf("%s: nothing to fill (missing %v; naive's rate %g)", path, missing, d.SIMT["naive"])
	}
	ratios, exps, ns := map[string][]float64{}, map[string][]float64{}, map[string]int{}
	for range 9 {
		for _, k := range missing { // naive just before and just after k: the load of the moment cancels
			var m [3]*estimate.Rates
			for i, name := range []string{"naive", k, "naive"} {
				if m[i], err = calibrate.SIMT(ctx, []string{name}); err != nil {
					return err
				}
			}
			if m[0].SIMTN["naive"] != d.SIMTN["naive"] {
				return fmt.Errorf("naive measured at n=%d, the defaults' at n=%d", m[0].SIMTN["naive"], d.SIMTN["naive"])
			}
			ratios[k] = append(ratios[k], 2*m[1].SIMT[k]/(m[0].SIMT["naive"]+m[2].SIMT["naive"]))
			exps[k] = append(exps[k], m[1].SIMTExp[k])
			ns[k] = m[1].SIMTN[k]
		}
	}
	for _, k := range missing {
		d.SIMT[k], d.SIMTN[k], d.SIMTExp[k] = numeric.Median(ratios[k])*d.SIMT["naive"], ns[k], numeric.Median(exps[k])
		fmt.Printf("%-14s %.3g × naive, exponent %.2f (ratios %.3g)\n", k, numeric.Median(ratios[k]), d.SIMTExp[k], ratios[k])
	}
	out, _ := json.MarshalIndent(&d, "", " ")
	return os.WriteFile(path, append(out, '\n'), 0o644)
}

// sweep runs cells one at a time and collects, per group, each cell's ratio of estimate to measured
// wall-clock time. Cells estimated over maxPoint are skipped.
type sweep struct {
	ctx      context.Context
	maxPoint time.Duration
	ratios   map[string][]float64
}

// point parses src as a cell of kind, runs it unless its estimate is over s.maxPoint, prints its
// estimate, measured time and ratio (flagged outside [0.5, 2]), and adds the ratio to group's.
func (s *sweep) point(group string, kind cells.Kind, src string) {
	run, err := kind.Parse(cells.Cell{ID: "bench", Source: src})
	if err != nil {
		fmt.Printf("%-40s refused: %v\n", strings.ReplaceAll(src, "\n", " "), err)
		return
	}
	est := run.Estimate()
	label := strings.Join(strings.Fields(strings.ReplaceAll(src, "\n", " ")), " ")
	if est > s.maxPoint {
		fmt.Printf("%-60s estimate %8.3f s  skipped (over -max-point)\n", label, est.Seconds())
		return
	}
	runtime.GC()
	t := time.Now()
	if err := run.Run(s.ctx, &cellstest.Recorder{}); err != nil {
		fmt.Printf("%-60s error: %v\n", label, err)
		return
	}
	took := time.Since(t).Seconds()
	ratio := est.Seconds() / took
	flag := ""
	if ratio < 0.5 || ratio > 2 {
		flag = "  OUTSIDE [0.5, 2]"
	}
	fmt.Printf("%-60s estimate %8.3f s  measured %8.3f s  ratio %5.2f%s\n", label, est.Seconds(), took, ratio, flag)
	s.ratios[group] = append(s.ratios[group], ratio)
}

// matmul sweeps matmul cells of one CPU kernel (those in only, comma-separated, or all where it is
// empty), one dtype of dtypes and one size (n = 64 to 1024; to 4096 with large).
func (s *sweep) matmul(env cells.Env, only, dtypes string, repeats int, large bool) {
	mm := matmul.New(env)
	sizes := []int{64, 128, 256, 500, 512, 1000, 1024}
	if large {
		sizes = append(sizes, 1500, 2048, 3000, 4096)
	}
	for _, k := range kernels.CPU() {
		if only != "" && !slices.Contains(strings.Split(only, ","), k.Name) {
			continue
		}
		for _, dt := range strings.Split(dtypes, ",") {
			for _, n := range sizes {
				s.point("matmul "+k.Name+" "+dt, mm, fmt.Sprintf("kernels: [%s]\nsizes: [%d]\ndtype: %s\nrepeats: %d", k.Name, n, dt, repeats))
			}
		}
	}
}

// simt sweeps simt cells of each emulated kernel at n = 32 to 512.
func (s *sweep) simt(env cells.Env) {
	sk := simt.New(env)
	for _, k := range []string{"naive", "coalesced", "smem", "regblock"} {
		for _, n := range []int{32, 64, 128, 192, 256, 384, 512} {
			s.point("simt "+k, sk, fmt.Sprintf("kernels: [%s]\nn: %d", k, n))
		}
	}
}

// systolic sweeps systolic cells, priced from rates: array sizes 4 to 256 on a range of shapes, two of them animated.
func (s *sweep) systolic(rates *estimate.Current) {
	for _, c := range [][4]int{{4, 64, 64, 64}, {8, 256, 256, 256}, {16, 256, 256, 256}, {16, 1024, 512, 512}, {32, 512, 512, 512},
		{64, 1024, 512, 512}, {128, 512, 512, 512}, {256, 512, 256, 256}, {256, 1024, 256, 512},
		{8, 1024, 512, 512}, {4, 1024, 1024, 256}} { // the last two: animated, near the work limit
		s.point(fmt.Sprintf("systolic array %d", c[0]), systolic.New(cells.Env{Rates: rates}), fmt.Sprintf("array: %d\nm: %d\nn: %d\nk: %d", c[0], c[1], c[2], c[3]))
	}
}

// printSummary prints each group's median ratio, its smallest and largest, and its points, by group.
func (s *sweep) printSummary() {
	fmt.Println("\nmedian ratio (estimate / measured) per group, [min, max]:")
	var groups []string
	for g := range s.ratios {
		groups = append(groups, g)
	}
	sort.Strings(groups)
	for _, g := range groups {
		rs := s.ratios[g]
		fmt.Printf("%-32s %5.2f  [%5.2f, %5.2f]  (%d points)\n", g, numeric.Median(rs), slices.Min(rs), slices.Max(rs), len(rs))
	}
}

// slow multiplies every cost in r by f.
func slow(r *estimate.Rates, f float64) {
	for key, pts := range r.Kernels {
		for i := range pts {
			pts[i].SPF *= f
		}
		r.Kernels[key] = pts
	}
	r.FillNs *= f
	for k := range r.SIMT {
		r.SIMT[k] *= f
	}
	for k := range r.SIMTLaunch {
		r.SIMTLaunch[k] *= f
	}
	s := &r.Systolic
	s.Cycle, s.PE, s.AnimCycle, s.AnimPE = s.Cycle*f, s.PE*f, s.AnimCycle*f, s.AnimPE*f
	r.Measured, r.Source = time.Time{}, "defaults"
}
