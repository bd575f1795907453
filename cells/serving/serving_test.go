package serving

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/gpuplayground/playground/cells"
	"github.com/gpuplayground/playground/cells/cellstest"
	"github.com/gpuplayground/playground/sim/inference"
)

const base = "model: llama3-8b\ngpu: H100 SXM\nrates: [1, 50]\nsystems: [static max, continuous paged]\nrequests: 60\nprompt: 128\noutput: 64\n"

func TestParseDefaultsAndErrors(t *testing.T) {
	s, err := Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	if s.Weights != "bf16" || s.KV != "bf16" || s.Block != 16 || s.MaxLen != 2048 || s.Prompt.Dist != "exponential" || s.MemoryGB != 72 {
		t.Errorf("defaults: %+v", s)
	}
	if got, want := s.Systems, []System{{"static", "max"}, {"continuous", "paged"}}; len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("systems = %v, want %v", got, want)
	}
	for src, want := range map[string]string{
		"model: llama3-8b\ngpu: H100 SXM\nrates: [1]":                           "needs model, gpu, rates and systems",
		strings.Replace(base, "llama3-8b", "llama9", 1):                         "line 1: unknown model",
		strings.Replace(base, "H100 SXM", "H900", 1):                            "line 2: unknown accelerator",
		strings.Replace(base, "[1, 50]", "[-1]", 1):                             "line 3: a rate is 0 (all at once) or 1e-06 to 10,000",
		strings.Replace(base, "[1, 50]", "[1,\n  1e-320]", 1):                   "line 4: a rate is 0 (all at once) or 1e-06 to 10,000",
		strings.Replace(base, "[1, 50]", "[5e-7]", 1):                           "line 3: a rate is 0",
		strings.Replace(base, "static max", "static buddy", 1):                  `line 4: a system is a batching`,
		strings.Replace(base, "static max", "batch max", 1):                     `line 4: a system is a batching`,
		base + "weights: fp6\n":                                                 "line 8: unknown format",
		base + "lengths: zipf\n":                                                "line 8: lengths is one of fixed, uniform, exponential",
		base + "draft_tokens: 4\n":                                              "needs draft_tokens, acceptance and draft_cost",
		base + "draft_tokens: 4\nacceptance: 1.5\ndraft_cost: 0.1\n":            "line 9: acceptance is a probability",
		base + "draft_tokens: 40\nacceptance: 0.5\ndraft_cost: 0.1\n":           "line 8: draft_tokens must be between 1 and 16",
		strings.Replace(base, "requests: 60", "requests: 9000", 1):              "line 5: requests must be between 1 and 5000",
		base + "memory_gb: 0\n":                                                 "line 8: memory_gb",
		strings.Replace(base, "[1, 50]", "["+strings.Repeat("1, ", 12)+"1]", 1): "line 3: 13 rates",
	} {
		_, err := Parse(src)
		var se *cells.SpecError
		if !errors.As(err, &se) || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: got %v, want %q", src, err, want)
		}
	}
}

// A run emits one row per system and rate, its figures the simulator's for the same spec, a note of
// the memory arithmetic, and a chart; at 50 requests/s continuous paged batching beats static
// max-length reservation in throughput and latency per token.
func TestRunRowsAreTheSimulatorsAndLabelledModelled(t *testing.T) {
	r, err := New(cells.Env{}).Parse(cells.Cell{ID: "c", Source: base + "draft_tokens: 4\nacceptance: 0.8\ndraft_cost: 0.05\n"})
	if err != nil {
		t.Fatal(err)
	}
	var rec cellstest.Recorder
	if err := r.Run(context.Background(), &rec); err != nil {
		t.Fatal(err)
	}
	if len(rec.Tables) != 1 || !strings.Contains(rec.Tables[0].Caption, "modelled") {
		t.Fatalf("tables %+v: want one, captioned modelled", rec.Tables)
	}
	for _, bad := range rec.Unreadable() {
		t.Errorf("written for machines: %s", bad)
	}
	rows := rec.RowsOf("runs")
	if len(rows) != 4 {
		t.Fatalf("%d rows, want 2 systems × 2 rates", len(rows))
	}
	s, _ := Parse(base + "draft_tokens: 4\nacceptance: 0.8\ndraft_cost: 0.05\n")
	want, err := inference.Simulate(context.Background(), s.Config(System{"continuous", "paged"}), s.Workload(50))
	if err != nil {
		t.Fatal(err)
	}
	last := rows[3].Values
	if last[0] != "continuous, paged" || last[1] != 50.0 || last[2] != want.Throughput || last[6] != want.Normalized.Mean {
		t.Errorf("row %v, want the simulator's %.6g tokens/s and %.6g s/token", last, want.Throughput, want.Normalized.Mean)
	}
	static := rows[1].Values
	if !(last[2].(float64) > static[2].(float64) && last[6].(float64) < static[6].(float64)) {
		t.Errorf("at 50 req/s: static %v, continuous paged %v; want continuous paged ahead", static, last)
	}
	var notes string
	for _, n := range rec.Notes {
		notes += n.Message + "\n"
	}
	for _, w := range []string{"Modelled memory", "16.1 GB of Llama 3 8B weights", "128 KiB", "3.36 tokens per target step", "Leviathan"} {
		if !strings.Contains(notes, w) {
			t.Errorf("notes lack %q:\n%s", w, notes)
		}
	}
	if rec.ChartErr != nil || !strings.Contains(rec.SVG, "modelled, not measured") {
		t.Errorf("chart: %v; want one labelled modelled", rec.ChartErr)
	}
}

// The estimate prices every step a simulation may take (one per output token), at no less than
// perStep each: the reviewer's worst case, 5,000 requests of 23,000 tokens held one at a time
// (115 million steps, about 290 s here, once estimated at 115 s and accepted), is now over the
// 120 s run limit, and a small one runs as many steps as its estimate allows or fewer.
func TestEstimatePricesEveryStep(t *testing.T) {
	small, _ := Parse(base)
	if a := run(small).Estimate(); a > 100*time.Millisecond {
		t.Errorf("small cell estimated %v", a)
	}
	const src = "model: llama3-8b\ngpu: H100 SXM\nrequests: 5000\nrates: [0]\nprompt: 1\noutput: 23000\nlengths: fixed\nmax_len: 32768\nmemory_gb: 21\nsystems: [continuous max]\n"
	worst, err := Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := run(worst).Estimate(), time.Duration(5000*23000)*perStep; got < want || got <= 120*time.Second {
		t.Errorf("worst case estimated %v, want ≥ %v (115 million steps) and over 120 s", got, want)
	}
	// the same held one at a time, small enough to run: its estimate's steps cover the steps taken
	s, err := Parse(strings.Replace(strings.Replace(src, "requests: 5000", "requests: 3", 1), "rates: [0]", "rates: [0, 3]", 1))
	if err != nil {
		t.Fatal(err)
	}
	steps := 0
	for _, rate := range s.Rates {
		res, err := inference.Simulate(context.Background(), s.Config(s.Systems[0]), s.Workload(rate))
		if err != nil {
			t.Fatal(err)
		}
		if res.MaxBatch != 1 {
			t.Fatalf("batch of %d, want one request at a time", res.MaxBatch)
		}
		steps += res.Steps
	}
	if est := run(s).Estimate(); est < time.Duration(steps)*perStep {
		t.Errorf("estimated %v for %d steps: under %v a step", est, steps, perStep)
	}
}

// A run whose context ends mid-simulation (of 30 million steps, a minute's work) returns its error
// without finishing it: no row.
func TestRunEndsWithItsContext(t *testing.T) {
	r, err := New(cells.Env{}).Parse(cells.Cell{ID: "c", Source: "model: llama3-8b\ngpu: H100 SXM\nrequests: 5000\nrates: [0]\nprompt: 1\noutput: 6000\nlengths: fixed\nmax_len: 32768\nmemory_gb: 21\nsystems: [continuous max]\n"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var rec cellstest.Recorder
	done := make(chan error)
	go func() { done <- r.Run(ctx, &rec) }()
	time.AfterFunc(20*time.Millisecond, cancel)
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("run: %v, want context.Canceled", err)
	}
	if rows := rec.RowsOf("runs"); len(rows) != 0 {
		t.Errorf("cancelled run emitted rows %v", rows)
	}
}

// No row carries a figure JSON cannot encode: a rate so small its arrivals overflow is an error of
// the simulator, and a Result holding NaN makes no row.
func TestNoNonFiniteFigureReachesARow(t *testing.T) {
	s, _ := Parse(base)
	if _, err := inference.Simulate(context.Background(), s.Config(s.Systems[1]), s.Workload(1e-320)); err == nil {
		t.Error("rate 1e-320: no error")
	}
	res, err := inference.Simulate(context.Background(), s.Config(s.Systems[1]), s.Workload(1))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := rowOf(s.Systems[1], 1, res); !ok {
		t.Errorf("a finite result refused: %+v", res)
	}
	res.TTFT.P50 = math.NaN()
	if row, ok := rowOf(s.Systems[1], 1, res); ok {
		t.Errorf("NaN TTFT made row %v", row)
	}
	res.TTFT.P50, res.Throughput = 0, math.Inf(1)
	if row, ok := rowOf(s.Systems[1], 1, res); ok {
		t.Errorf("infinite throughput made row %v", row)
	}
}

// Sizes a learner reads: a byte in the singular, a model's weights past 1,000 GB with a thousands
// separator (Llama 3 405B in FP32 is 1,620 GB), never in exponent notation.
func TestMemoryNoteSizes(t *testing.T) {
	for src, want := range map[string]string{
		"model: llama3-8b\ngpu: H100 SXM\nweights: fp8\nkv: fp8\nrequests: 10\nrates: [0]\nsystems: [continuous paged]\n": "(fp8: 2 × 32 layers × 8 key/value heads × 128 × 1 byte)",
		"model: llama3-405b\ngpu: H100 SXM\nweights: fp32\nrequests: 10\nrates: [0]\nsystems: [continuous paged]\n":       "The 1,620 GB of Llama 3 405B weights do not fit in",
	} {
		s, err := Parse(src)
		if err != nil {
			t.Fatal(err)
		}
		if got := s.memoryNote(); !strings.Contains(got, want) {
			t.Errorf("memory note %q lacks %q", got, want)
		}
	}
}

// The memory note writes its counts with thousands separators, as the lesson's text does: the
// serving lesson's T4 cell holds 48,597 tokens, 23 reservations of max_len 2,048.
func TestMemoryNoteSeparatesThousands(t *testing.T) {
	s, err := Parse("model: llama3-8b\ngpu: T4\nweights: int8\nrequests: 10\nrates: [0]\nprompt: 256\noutput: 256\nsystems: [continuous paged]\n")
	if err != nil {
		t.Fatal(err)
	}
	got := s.memoryNote()
	for _, want := range []string{"48,597 tokens of 128 KiB", "23 requests of max_len 2,048", "(8.03 billion parameters × 1 byte)", "× 128 × 2 bytes)"} {
		if !strings.Contains(got, want) {
			t.Errorf("memory note %q lacks %q", got, want)
		}
	}
}
