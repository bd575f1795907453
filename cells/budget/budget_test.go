package budget

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/gpuplayground/playground/cells"
	"github.com/gpuplayground/playground/cells/cellstest"
	"github.com/gpuplayground/playground/cells/shared/webgpu"
	"github.com/gpuplayground/playground/harness/peaks"
	"github.com/gpuplayground/playground/sim/collectives"
	"github.com/gpuplayground/playground/sim/parallel"
)

func near(got, want float64) bool { return math.Abs(got-want) <= 1e-9*math.Abs(want) }

func mustParse(t *testing.T, src string) Spec {
	t.Helper()
	s, err := Parse(src)
	if err != nil {
		t.Fatalf("%q: %v", src, err)
	}
	return s
}

// The presets' FLOPs, steps and gradients, computed by hand from the published inputs.
func TestPresetsByHand(t *testing.T) {
	for _, tt := range []struct {
		name                       string
		flops, steps, grad, nbytes float64
	}{
		// 3 × 2 × 3.8e9 × 1,281,167 = 2.92106076e16; ⌈1,281,167 / 256⌉ = 5,005; 4 × 25,557,032 bytes.
		{"resnet50-epoch", 2.92106076e16, 5005, 102228128, 0},
		// As published; 300e9 / 3.2e6 = 93,750 steps; 2 bytes × 175e9.
		{"gpt3-training", 3.14e23, 93750, 3.5e11, 0},
		// 2 × 175e9 FLOPs; 2 bytes × 175e9 weights read.
		{"llm-token", 3.5e11, 0, 0, 3.5e11},
	} {
		w := mustParse(t, "workload: "+tt.name).Workload
		if !near(w.FLOPs, tt.flops) || w.Steps != tt.steps || !near(w.GradientBytes, tt.grad) || w.Bytes != tt.nbytes {
			t.Errorf("%s: got %g FLOPs, %g steps, %g gradient bytes, %g bytes; want %g, %g, %g, %g",
				tt.name, w.FLOPs, w.Steps, w.GradientBytes, w.Bytes, tt.flops, tt.steps, tt.grad, tt.nbytes)
		}
	}
	// GPT-3's published count agrees with Kaplan et al.'s 6·N·D within 1%.
	if r := 6 * GPT3Params * GPT3Tokens / GPT3FLOPs; r < 0.99 || r > 1.01 {
		t.Errorf("6·N·D / published = %g, want about 1", r)
	}
}

// Times against hand-computed values.
func TestModelByHand(t *testing.T) {
	// GPT-3's numbers typed in, so that clusters are modelled as plain data parallelism (the preset
	// is split by layout instead: TestRefusesPureDataParallel).
	const gpt3 = "flops: 3.14e23\nsteps: 93750\ngradient_mb: 350000\n"
	s := mustParse(t, gpt3+"utilisation: 1")
	petaflop := Rate{Name: "1 PFLOP/s", FLOPs: 1e15, Clusters: true}
	// 3.14e23 FLOP at 1e15 FLOP/s = 3.14e8 s.
	if got := Model(s, petaflop, 1).Seconds(); !near(got, 3.14e8) {
		t.Errorf("GPT-3 at 1 PFLOP/s: %g s, want 3.14e8", got)
	}
	// At 50% utilisation on 1000 chips: 3.14e23 / (1000 × 0.5e15) = 628,000 s of compute, plus 93,750
	// all-reduces of 350 GB on a 1000-chip ring of 100 GB/s links with no latency:
	// 2·999·(350e9 / 1000 / 100e9) = 6.993 s each.
	s = mustParse(t, gpt3+"utilisation: 0.5\nlink_gbs: 100\nlatency_us: 0")
	e := Model(s, petaflop, 1000)
	if !near(e.Compute, 628000) || !near(e.Communication, 93750*6.993) || !near(e.Seconds(), 628000+93750*6.993) || e.Dominant() != "communication" {
		t.Errorf("1000 chips: got %+v, want 628,000 s compute, %g s communication", e, 93750*6.993)
	}
	// One token on a chip of 1e15 FLOP/s and 2e12 B/s at 40%: compute 3.5e11 / 4e14 = 875 µs,
	// memory 3.5e11 / 2e12 = 0.175 s, which dominates; a batch of 64 multiplies only the FLOPs.
	tok := mustParse(t, "workload: llm-token")
	chip := Rate{Name: "chip", FLOPs: 1e15, Bandwidth: 2e12}
	if e := Model(tok, chip, 1); !near(e.Compute, 875e-6) || !near(e.Seconds(), 0.175) || e.Dominant() != "memory" {
		t.Errorf("one token: got %+v", e)
	}
	tok = mustParse(t, "workload: llm-token\nbatch: 1024")
	if e := Model(tok, chip, 1); !near(e.Compute, 0.896) || !near(e.Seconds(), 0.896) || e.Dominant() != "arithmetic" {
		t.Errorf("1024 tokens: got %+v, want 0.896 s of arithmetic", e)
	}
	// A typed-in workload: 1e18 FLOPs at 40% of 1e12 = 2.5e6 s = 28.9 days.
	own := mustParse(t, "flops: 1e18")
	if e := Model(own, Rate{FLOPs: 1e12}, 1); !near(e.Seconds(), 2.5e6) || Readable(e.Seconds()) != "28.9 days" {
		t.Errorf("1e18 FLOPs: got %g s (%s)", e.Seconds(), Readable(e.Seconds()))
	}
	// The communication term is the all-reduce model's, step for step.
	own = mustParse(t, "flops: 1e18\nsteps: 10\ngradient_mb: 100\nlink_gbs: 10\nlatency_us: 3")
	if got, want := Model(own, Rate{FLOPs: 1e12}, 8).Communication, 10*collectives.RingAllReduce(100e6, 8, 10e9, 3e-6); !near(got, want) {
		t.Errorf("communication: %g, want %g", got, want)
	}
}

// On more chips the compute shrinks and the all-reduce overhead only grows.
func TestClusterOverheadMonotonic(t *testing.T) {
	for _, src := range []string{"workload: gpt3-training", "workload: resnet50-epoch\nlatency_us: 50", "flops: 1e20\nsteps: 1000\ngradient_mb: 1\nlink_gbs: 1000"} {
		s := mustParse(t, src)
		r := Rate{FLOPs: 1e15, Clusters: true}
		prev := Model(s, r, 1)
		if prev.Communication != 0 {
			t.Errorf("%q: one chip has %g s of communication", src, prev.Communication)
		}
		for n := 2; n <= 1<<16; n *= 2 {
			e := Model(s, r, n)
			if !(e.Communication > prev.Communication) || !(e.Compute < prev.Compute) {
				t.Errorf("%q at %d chips: communication %g (was %g), compute %g (was %g)", src, n, e.Communication, prev.Communication, e.Compute, prev.Compute)
			}
			if share, was := e.Communication/e.Seconds(), prev.Communication/prev.Seconds(); share < was {
				t.Errorf("%q at %d chips: communication share fell from %g to %g", src, n, was, share)
			}
			prev = e
		}
	}
}

func TestTimesAndBytes(t *testing.T) {
	for r, want := range map[float64]string{95.1: "95.1", 3784.4: "3,780", 1.75e6: "1.75 million", 2e9: "2 billion", 1000: "1,000", 999.7: "1,000", 4.2e13: "42 trillion"} {
		if got := Times(r); got != want {
			t.Errorf("Times(%g) = %q, want %q", r, got, want)
		}
	}
	for b, want := range map[float64]string{999.9e9: "1,000 GB", 1: "1 byte", 3.5e11: "350 GB", 102228128: "102 MB", 12: "12 bytes"} {
		if got := Bytes(b); got != want {
			t.Errorf("Bytes(%g) = %q, want %q", b, got, want)
		}
	}
}

func TestReadable(t *testing.T) {
	for sec, want := range map[float64]string{999.9 * 365.25 * 86400: "1,000 years", 59.99e3 * 365.25 * 86400: "60 millennia", 3.14e8: "9.95 years", 0.175: "175 ms", 90: "1.5 minutes", 3.5e11: "11.1 millennia", 2.23e14: "7.07 million years", 3.69e16: "1.17 billion years", 5e-8: "50 ns", 7200: "2 hours"} {
		if got := Readable(sec); got != want {
			t.Errorf("Readable(%g) = %q, want %q", sec, got, want)
		}
	}
}

func TestSpecErrors(t *testing.T) {
	for src, want := range map[string]string{
		"utilisation: 0.5":                                     "line 1: a budget cell needs workload",
		"workload: gpt4":                                       `line 1: unknown workload "gpt4"; presets: resnet50-epoch, gpt3-training, llama3-405b-training, llm-token`,
		"workload: gpt3-training\nflops: 1e9":                  "line 2: write either workload",
		"flops: -3":                                            "line 1: flops must be between 1 and 1e30",
		"flops: lots":                                          "line 1: expected a number, got lots",
		"workload: llm-token\nbytes: 10":                       "line 2: bytes, steps and gradient_mb describe a typed-in workload",
		"flops: 1e9\nsteps: 10":                                "line 2: steps and gradient_mb go together",
		"flops: 1e9\nsteps: 1.5\ngradient_mb: 1":               "line 2: steps must be a whole number",
		"flops: 1e9\nsteps: 10\ngradient_mb: 0":                "line 3: gradient_mb must be between",
		"workload: gpt3-training\nbatch: 8":                    "line 2: batch shares one read",
		"workload: llm-token\nbatch: 0":                        "line 2: batch must be from 1",
		"flops: 1e9\nutilisation: 1.5":                         "line 2: utilisation is a fraction",
		"flops: 1e9\nutilisation: 0":                           "line 2: utilisation is a fraction",
		"flops: 1e9\ndevices:\n  - H100 SXM\n  - B200":         `line 4: unknown accelerator "B200"`,
		"flops: 1e9\ndevices: []":                              "line 2: devices lists 1 to 8",
		"flops: 1e9\ndevices: [T4,\n  t4]":                     "line 3: T4 is listed twice",
		"flops: 1e9\ncluster: [8, 1]":                          "line 2: a cluster of 1 chips",
		"flops: 1e9\ncluster: [2, 4, 8, 16, 32]":               "line 2: 5 cluster sizes",
		"flops: 1e9\nlink_gbs: 0":                              "line 2: link_gbs must be",
		"flops: 1e9\nlatency_us: -1":                           "line 2: latency_us must be",
		"flops: 1e9\nspeed: 3":                                 `line 2: unknown key "speed"`,
		"flops: 1e9\ncluster: [1e3]":                           "line 2: 1e3 is not a whole number",
		"workload: gpt3-training\nworkload: gpt3-training":     `line 2: key "workload" appears twice`,
		"workload: resnet50-epoch\nlayout: {tp: 2}":            "line 2: layout, recompute, sequence, overlap, node and node_gbs split a transformer's training",
		"flops: 1e9\nrecompute: full":                          "line 2: layout, recompute",
		"workload: gpt3-training\nlayout: {tp: 0}":             "line 2: layout's tp must be from 1 to 65536",
		"workload: gpt3-training\nlayout:\n  pp: 2\n  zero: 4": "line 4: layout's zero is a ZeRO stage",
		"workload: gpt3-training\nlayout: {dp: 4}":             `line 2: layout has tp, pp, cp and zero, not "dp"`,
		"workload: gpt3-training\nlayout: {}":                  "line 2: layout is a map",
		"workload: gpt3-training\nlayout: {tp: 1.5}":           "line 2: 1.5 is not a whole number",
		"workload: gpt3-training\nrecompute: some":             "line 2: recompute is none, selective or full",
		"workload: gpt3-training\nsequence: 0":                 "line 2: sequence must be from 1",
		"workload: gpt3-training\nnode: 0":                     "line 2: node is the chips of one node",
		"workload: gpt3-training\nnode_gbs: -1":                "line 2: node_gbs must be",
	} {
		_, err := Parse(src)
		var se *cells.SpecError
		if !errors.As(err, &se) || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: got %v, want a *cells.SpecError with %q", src, err, want)
		}
	}
	s := mustParse(t, "flops: 1e9\ndevices: [t4, TPU V4]\ncluster: []")
	if len(s.Devices) != 2 || s.Devices[0].Name != "T4" || s.Devices[1].Name != "TPU v4" || len(s.Cluster) != 0 || s.Utilisation != 0.4 {
		t.Errorf("got %+v", s)
	}
}

// A run: the CPU's rate measured now (no roofline cache), a row per rate and per cluster, a chart on
// the log time axis, and the sentence saying what dominates.
func TestRun(t *testing.T) {
	run, err := New(cells.Env{}).Parse(cells.Cell{Source: "workload: gpt3-training\ndevices: [H100 SXM, TPU v4]\ncluster: [8, 1024]"})
	if err != nil {
		t.Fatal(err)
	}
	var rec cellstest.Recorder
	if err := run.Run(context.Background(), &rec); err != nil {
		t.Fatal(err)
	}
	rows := rec.RowsOf("budget")
	// No layout of 8 chips holds GPT-3's 2.8 TB of training state: those rows are refused.
	if len(rows) != 1+2+2 {
		t.Fatalf("%d rows, want 5 (CPU, 2 chips, 2 clusters of 1024)", len(rows))
	}
	// Every number in a sentence is written for people (46.7 billion, not 4.67e+10).
	for _, bad := range rec.Unreadable() {
		t.Errorf("written for machines: %s", bad)
	}
	if rows[0].Values[0] != "this machine's CPU" || rows[0].Values[1] != "measured peak, modelled at 40%" || rows[1].Values[1] != "datasheet, modelled at 40%" || rows[4].Values[0] != "1,024 × TPU v4" {
		t.Errorf("rows: %v", rows)
	}
	// H100 SXM at 40% of 989 TFLOP/s: 3.14e23 / 3.956e14 s.
	if got := rows[1].Values[4].(float64); !near(got, 3.14e23/(0.4*989e12)) {
		t.Errorf("H100 SXM: %g s", got)
	}
	// "1 h" is not asked for: the axis drops a label that would crowd its neighbours, and its span
	// depends on this machine's CPU row, measured now (slower on a busy machine).
	for _, want := range []string{"1 year", "1,000 years", "1 day", "modelled", "1,024 × H100 SXM"} {
		if !strings.Contains(rec.SVG, want) {
			t.Errorf("chart lacks %q", want)
		}
	}
	var notes []string
	for _, n := range rec.Notes {
		notes = append(notes, n.Message)
	}
	all := strings.Join(notes, "\n")
	for _, want := range []string{"this machine's CPU, measured:", "H100 SXM, published, not measured", "dominates on", "Slowest: this machine's CPU"} {
		if !strings.Contains(all, want) {
			t.Errorf("notes lack %q:\n%s", want, all)
		}
	}
}

// One token has no clusters, and memory dominates on the chips.
func TestRunToken(t *testing.T) {
	run, err := New(cells.Env{}).Parse(cells.Cell{Source: "workload: llm-token\ndevices: [H100 SXM]"})
	if err != nil {
		t.Fatal(err)
	}
	var rec cellstest.Recorder
	if err := run.Run(context.Background(), &rec); err != nil {
		t.Fatal(err)
	}
	rows := rec.RowsOf("budget")
	if len(rows) != 2 || rows[1].Values[6] != "memory" {
		t.Fatalf("rows: %v", rows)
	}
	if got := rows[1].Values[4].(float64); !near(got, 3.5e11/3.35e12) {
		t.Errorf("H100 SXM, one token: %g s, want the weights' read, %g", got, 3.5e11/3.35e12)
	}
}

func FuzzParseBudget(f *testing.F) {
	for _, s := range []string{"workload: gpt3-training", "flops: 1e18\nsteps: 10\ngradient_mb: 1", "workload: llm-token\nbatch: 64\ndevices: [T4]", "flops: 1e9\ncluster: [2, 4]\nutilisation: 1",
		"workload: llama3-405b-training\nlayout: {tp: 8, pp: 16, cp: 2, zero: 3}\nsequence: 16384\nrecompute: full\nnode: 4\nnode_gbs: 100\ncluster: [64, 3]"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		s, err := Parse(src)
		if err != nil {
			var se *cells.SpecError
			if !errors.As(err, &se) {
				t.Fatalf("%q: error %v is not a *cells.SpecError", src, err)
			}
			return
		}
		// A valid spec models finite, positive times on every row.
		for _, e := range Estimates(s, append([]Rate{{Name: "cpu", FLOPs: 1e11, Bandwidth: 1e10}}, Datasheet(s)...)) {
			if p := e.Plan; p != nil && (!p.Fits || p.Memory.Total() > p.Capacity) {
				if p.Fits || p.Why == "" {
					t.Fatalf("%q: %+v fits %v with %g of %g bytes", src, e, p.Fits, p.Memory.Total(), p.Capacity)
				}
				continue // refused, no layout fits: no row
			}
			if sec := e.Seconds(); !(sec > 0) || math.IsInf(sec, 0) {
				t.Fatalf("%q: %+v models %g s", src, e, sec)
			}
		}
	})
}

// A typed-in workload without steps has no cluster rows, and a note says how to get them.
func TestRunTypedIn(t *testing.T) {
	run, err := New(cells.Env{}).Parse(cells.Cell{Source: "flops: 1e21\ndevices: [T4]"})
	if err != nil {
		t.Fatal(err)
	}
	var rec cellstest.Recorder
	if err := run.Run(context.Background(), &rec); err != nil {
		t.Fatal(err)
	}
	if rows := rec.RowsOf("budget"); len(rows) != 2 {
		t.Errorf("rows: %v, want this CPU's and the T4's", rows)
	}
	for _, bad := range rec.Unreadable() {
		t.Errorf("written for machines: %s", bad)
	}
	found := false
	for _, n := range rec.Notes {
		found = found || strings.Contains(n.Message, "write steps and gradient_mb")
	}
	if !found {
		t.Errorf("no note on how to model clusters: %v", rec.Notes)
	}
}

// Where the roofline's ceilings are measured already, the CPU's rate is theirs, and says so.
func TestCPURateFromTheRoofline(t *testing.T) {
	cache := &peaks.Cache{Options: peaks.Options{PeakSizes: []int{64}, TriadMiB: 8, Repeats: 3,
		Peak: peaks.PeakOptions{Trials: 1, Trial: 10 * time.Millisecond}}}
	r, err := CPURate(context.Background(), cache)
	if err != nil {
		t.Fatal(err)
	}
	if r.Level != "measured" || !strings.Contains(r.How, "now") || !(r.FLOPs > 0 && r.Bandwidth > 0) {
		t.Errorf("before the roofline is measured: got %+v, want a quick measurement made now", r)
	}
	c, err := cache.Get(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	r, err = CPURate(context.Background(), cache)
	if err != nil {
		t.Fatal(err)
	}
	if r.FLOPs != c.FP32.GFLOPS*1e9 || r.Bandwidth != c.BandwidthGBs*1e9 || !strings.Contains(r.How, "roofline measurement of "+c.Measured) {
		t.Errorf("after: got %+v, want the roofline's %g GFLOP/s and %g GB/s", r, c.FP32.GFLOPS, c.BandwidthGBs)
	}
}

// page is a Recorder with a browser behind it whose GPU times every matmul at 10 ms per repeat.
type page struct {
	cellstest.Recorder
	tasks []webgpu.Task
}

func (p *page) Ask(_ context.Context, task any) (json.RawMessage, error) {
	t := task.(webgpu.Task)
	adapter := `{"vendor":"apple","architecture":"metal-3","device":"","description":"Apple M2","fallback":false,"f16":true,"timestamps":true}`
	if t.Op == "adapter" {
		return json.RawMessage(`{"adapter":` + adapter + `}`), nil
	}
	p.tasks = append(p.tasks, t)
	secs := strings.TrimSuffix(strings.Repeat("0.01,", t.Repeats), ",")
	return json.RawMessage(fmt.Sprintf(`{"adapter":%s,"results":[{"kernel":%q,"n":%d,"method":"timestamp-query","batch":1,"seconds":[%s],"rel_error":1e-7,"checked":%d}]}`,
		adapter, t.Kernels[0].Name, t.N, secs, t.N*t.N)), nil
}

// Where the page measured the learner's GPU, it is a measured row at the rate it reached (no
// utilisation applied); `your_gpu: false` asks the page nothing.
func TestRunYourGPU(t *testing.T) {
	run, err := New(cells.Env{}).Parse(cells.Cell{Source: "workload: gpt3-training\ndevices: [H100 SXM]\ncluster: [1024]"})
	if err != nil {
		t.Fatal(err)
	}
	p := &page{}
	if err := run.Run(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	if len(p.tasks) != 1 || p.tasks[0].N != BrowserN || p.tasks[0].Kernels[0].Name != BrowserKernel {
		t.Fatalf("tasks %+v", p.tasks)
	}
	rows := p.RowsOf("budget")
	if len(rows) != 1+1+1+1 { // CPU, your GPU, H100, 1024 × H100
		t.Fatalf("%d rows: %v", len(rows), rows)
	}
	gflops := 2 * math.Pow(BrowserN, 3) / 0.01 / 1e9 // 26.8 GFLOP/s
	if rows[1].Values[0] != BrowserKernel+" (your GPU)" || rows[1].Values[1] != "measured (achieved)" || !near(rows[1].Values[4].(float64), 3.14e23/(gflops*1e9)) {
		t.Errorf("your GPU's row %v, want %g s at %g GFLOP/s", rows[1].Values, 3.14e23/(gflops*1e9), gflops)
	}
	if len(p.RowsOf("browser")) != 1 {
		t.Errorf("the measurement's own row is missing")
	}

	run, _ = New(cells.Env{}).Parse(cells.Cell{Source: "workload: gpt3-training\ndevices: [H100 SXM]\nyour_gpu: false"})
	p = &page{}
	if err := run.Run(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	if len(p.tasks) != 0 || len(p.RowsOf("budget")) != 3 {
		t.Errorf("your_gpu: false: %d tasks, rows %v", len(p.tasks), p.RowsOf("budget"))
	}
}

func notesOf(rec *cellstest.Recorder) string {
	var notes []string
	for _, n := range rec.Notes {
		notes = append(notes, n.Level+": "+n.Message)
	}
	return strings.Join(notes, "\n")
}

func runCell(t *testing.T, src string) *cellstest.Recorder {
	t.Helper()
	run, err := New(cells.Env{}).Parse(cells.Cell{Source: src})
	if err != nil {
		t.Fatal(err)
	}
	var rec cellstest.Recorder
	if err := run.Run(context.Background(), &rec); err != nil {
		t.Fatal(err)
	}
	return &rec
}

// GPT-3 as plain data parallelism needs 16 bytes × 175e9 parameters on every chip: the cell refuses
// it with the arithmetic and models the smallest layout that fits instead.
func TestRefusesPureDataParallel(t *testing.T) {
	rec := runCell(t, "workload: gpt3-training\ndevices: [H100 SXM]\ncluster: [1024]\nyour_gpu: false")
	notes := notesOf(rec)
	for _, want := range []string{"warning: Refused: 1,024 × H100 SXM, TP 1 · PP 1 · CP 1 · DP 1024, ZeRO 0 needs 2,871 GB per chip: 16 bytes × 175 billion parameters / (TP 1 × PP 1) = 2.79 TB",
		"2,048 tokens per microbatch", "against the H100 SXM's 80 GB", "The smallest layout that fits: TP 8 · PP 8 · CP 1 · DP 16, ZeRO 0", "One chip: GPT-3 175B's training state alone is 16 bytes"} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes lack %q:\n%s", want, notes)
		}
	}
	rows := rec.RowsOf("layout")
	if len(rows) != 1 || rows[0].Values[1] != "TP 8 · PP 8 · CP 1 · DP 16, ZeRO 0" || rows[0].Values[2] != "offered (asked layout refused)" {
		t.Fatalf("layout rows: %v", rows)
	}
	if mem, chip := rows[0].Values[3].(float64), rows[0].Values[6].(float64); !(mem <= chip) || chip != 80 {
		t.Errorf("offered layout needs %g GB of the chip's %g", mem, chip)
	}
	// The budget row's time is 93,750 steps of the layout's step.
	s := mustParse(t, "workload: gpt3-training\ndevices: [H100 SXM]")
	p := PlanFor(s, Datasheet(s)[0], 1024)
	if got := rec.RowsOf("budget")[2].Values[4].(float64); !near(got, 93750*p.Step.Seconds()) {
		t.Errorf("1024 × H100: %g s, want 93,750 × %g", got, p.Step.Seconds())
	}
	// A layout that fits is modelled as asked; 8 chips fit no layout at all.
	s = mustParse(t, "workload: gpt3-training\nlayout: {tp: 8, pp: 16, zero: 1}")
	if p := PlanFor(s, Datasheet(s)[0], 1024); p.Offered || !p.Fits || p.Used.DP != 8 || p.Why != "" {
		t.Errorf("TP 8 · PP 16 on 1024: %+v", p)
	}
	if p := PlanFor(s, Datasheet(s)[0], 8); p.Fits || !strings.Contains(p.Why, "8 chips do not split into groups of TP 8 × PP 16 × CP 1 = 128") {
		t.Errorf("8 chips: %+v", p)
	}
}

// Llama 3 405B's published layouts (Table 4), modelled beside their published MFU.
func TestLlama3Reproduction(t *testing.T) {
	rec := runCell(t, "workload: llama3-405b-training\ndevices: [H100 SXM]\ncluster: [8192, 16384]\nlayout: {tp: 8, pp: 16, zero: 3}\nutilisation: 1\nyour_gpu: false")
	rows := rec.RowsOf("layout")
	if len(rows) != 2 {
		t.Fatalf("layout rows: %v", rows)
	}
	for i, want := range []struct {
		layout    string
		published float64
	}{{"TP 8 · PP 16 · CP 1 · DP 64, ZeRO 3", 43}, {"TP 8 · PP 16 · CP 1 · DP 128, ZeRO 3", 41}} {
		v := rows[i].Values
		if v[1] != want.layout || v[2] != "as asked" || v[15] != want.published {
			t.Errorf("row %d: %v, want %s beside a published %g%%", i, v, want.layout, want.published)
		}
		step, sum := v[7].(float64), v[8].(float64)+v[9].(float64)+v[10].(float64)+v[11].(float64)+v[12].(float64)+v[13].(float64)
		if !near(step, sum) || !(v[14].(float64) > 0 && v[14].(float64) < 100) {
			t.Errorf("row %d: step %g is not its terms' %g, or MFU %v out of range", i, step, sum, v[14])
		}
	}
	// The long-context layout: 131,072 tokens, CP 16, the same 16M tokens per step.
	s := mustParse(t, "workload: llama3-405b-training\nsequence: 131072\nlayout: {tp: 8, pp: 16, cp: 16, zero: 3}")
	if j := s.Job(); j.Seq != 131072 || j.Sequences != 128 {
		t.Errorf("job %+v, want 128 sequences of 131,072", j)
	}
	p := PlanFor(s, Datasheet(s)[0], 16384)
	if _, ok := parallel.FindPublished(p.Used, 131072); !ok || p.Offered {
		t.Errorf("long context: %+v", p)
	}
}

// The chart's title says what bounds its bars: arithmetic at the utilisation, memory, or either.
func TestChartTitle(t *testing.T) {
	arith, mem := Estimate{Compute: 2, Memory: 1}, Estimate{Compute: 1, Memory: 2}
	for _, c := range []struct {
		ests []Estimate
		want string
	}{
		{[]Estimate{arith}, "w: modelled at 40% of peak"},
		{[]Estimate{mem, mem}, "w: modelled, every row bound by memory at full bandwidth"},
		{[]Estimate{arith, mem}, "w: modelled, arithmetic at 40% of peak or memory at full bandwidth, whichever is slower"},
	} {
		if got := chartTitle("w", 0.4, c.ests); got != c.want {
			t.Errorf("got %q, want %q", got, c.want)
		}
	}
}

// Where the model's FLOPs over the run differ from the workload's stated total (Llama 3 405B: 3.94e25
// against 3.8e25), a note says why the modelled MFU and the time table's effective rate disagree.
func TestLayoutFLOPsNote(t *testing.T) {
	rec := runCell(t, "workload: llama3-405b-training\ndevices: [H100 SXM]\ncluster: [16384]\nlayout: {tp: 8, pp: 16, zero: 3}\nutilisation: 1\nyour_gpu: false")
	var note string
	for _, n := range rec.Notes {
		if strings.HasPrefix(n.Message, "Modelled MFU counts the model's FLOPs") {
			note = n.Message
		}
	}
	if !strings.Contains(note, "against the 3.8·10²⁵ the workload states") || !strings.Contains(note, "lower than the MFU implies") {
		t.Errorf("note %q, want the model's FLOPs against the stated 3.8e25", note)
	}
	s := mustParse(t, "workload: llama3-405b-training")
	st := parallel.Step{ModelFLOPs: s.TotalFLOPs() / s.Workload.Steps}
	if got := flopsNote(s, st); got != "" {
		t.Errorf("FLOPs that agree: note %q, want none", got)
	}
}
