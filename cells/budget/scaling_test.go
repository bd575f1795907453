package budget

import (
	"math"
	"strings"
	"testing"

	"github.com/gpuplayground/playground/sim/parallel"
)

// params and tokens make a training run of 6·N·D FLOPs; they go together, and not with a preset.
func TestParamsAndTokens(t *testing.T) {
	w := mustParse(t, "params: 8.03e9\ntokens: 15e12").Workload
	if want := "training 8.03 billion parameters on 15 trillion tokens"; w.Label != want {
		t.Errorf("label %q, want %q", w.Label, want)
	}
	if !near(w.FLOPs, 6*8.03e9*15e12) || w.Params != 8.03e9 || w.Tokens != 15e12 {
		t.Errorf("params and tokens: %+v", w)
	}
	w = mustParse(t, "flops: 1e24\nparams: 1e9\ntokens: 1e12").Workload
	if w.FLOPs != 1e24 || w.Params != 1e9 {
		t.Errorf("flops with params and tokens keeps the typed-in FLOPs: %+v", w)
	}
	for src, want := range map[string]string{
		"params: 8e9": "line 1: params and tokens go together",
		"workload: gpt3-training\nparams: 1e9\ntokens: 1e12": "line 2: a preset workload has its own parameters and tokens",
		"params: 0\ntokens: 1e12":                            "line 1: params must be between 1 and 1e16",
		"flops: 1e20\nrooflines: [gpt-5]":                    "line 2: unknown model \"gpt-5\"",
		"flops: 1e20\nrooflines: [llama3-8b, llama3-8b]":     "line 2: llama3-8b is listed twice",
		"flops: 1e20\nnode: 4":                               "line 2: layout, recompute, sequence, overlap, node and node_gbs",
	} {
		if _, err := Parse(src); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", src, err, want)
		}
	}
	if s := mustParse(t, "flops: 1e20\nrooflines: [llama3-8b]\nnode: 256\nnode_gbs: 100"); s.Parallel.NodeChips != 256 || s.Parallel.NodeGBs != 100 {
		t.Errorf("node and node_gbs with rooflines: %+v", s.Parallel)
	}
}

// Llama 3 405B trained on 38.5 tokens per parameter, near the rule of thumb's 20 and far from
// Kaplan's frontier; Llama 3 8B on 15T tokens, 1,868 per parameter, 93 times the rule's.
func TestScalingRows(t *testing.T) {
	rows := ScalingRows(mustParse(t, "workload: llama3-405b-training\nscaling: true"))
	if len(rows) != 4 || !strings.HasPrefix(rows[0].Who, "this run") || !near(rows[0].TokensPerParam(), 15.6e12/405e9) {
		t.Fatalf("rows: %+v", rows)
	}
	if r := rows[2]; !within(r.Params, 562.7e9, 0.001) || r.TokensPerParam() != 20 {
		t.Errorf("20 tokens per parameter at 3.8e25 FLOPs: %+v", r)
	}
	if k := rows[3]; !(k.TokensPerParam() < 1) {
		t.Errorf("Kaplan at 3.8e25 FLOPs: %g tokens per parameter", k.TokensPerParam())
	}
	small := ScalingRows(mustParse(t, "params: 8.03e9\ntokens: 15e12"))
	if got := small[0].TokensPerParam() / small[2].TokensPerParam(); !within(got, 93.4, 0.01) {
		t.Errorf("Llama 3 8B: %g times the rule's tokens per parameter", got)
	}
}

// The rooflines of Llama 3 70B and DeepSeek-V3 on an H100: ridge 989e12 / 450e9 in a node and, for
// DP across nodes, over 8 × 50 GB/s; TP 1.5 × 28,672 / ridge (gated); DeepSeek's 2,048-wide experts
// within the NVLink bound and far outside one 50 GB/s NIC's.
func TestRooflineRows(t *testing.T) {
	s := mustParse(t, "workload: llama3-405b-training\ndevices: [H100 SXM]\ncluster: [16384]\nrooflines: [llama3-70b, deepseek-v3]")
	rows := RooflineRows(s)
	if len(rows) != 4 {
		t.Fatalf("%d rows, want 2 models × 1 device × 2 links", len(rows))
	}
	in, across := rows[0], rows[1]
	if !near(in.Ridge, 989e12/450e9) || !near(across.Ridge, 989e12/50e9) || !within(across.DP, 989e12/400e9, 1e-6) {
		t.Errorf("Llama 3 70B rows: %+v, %+v", in, across)
	}
	if !near(in.TP, 1.5*28672/(989e12/450e9)) || in.ExpertDFF != 0 {
		t.Errorf("Llama 3 70B TP: %+v", in)
	}
	ds, dsNet := rows[2], rows[3]
	if !(ds.EP < 2048 && dsNet.EP > 2048) || !near(ds.EP, parallel.MinExpertDFF(*shape("deepseek-v3"), 8, ds.Ridge)) || !within(dsNet.EP, 2.0/3*989e12/50e9, 1e-6) {
		t.Errorf("DeepSeek-V3 EP: in a node %+v, across %+v", ds, dsNet)
	}
	if !(ds.DP > 10*in.DP) {
		t.Errorf("DeepSeek-V3's DP minimum %g, Llama 3 70B's %g: an MoE needs Params/Active times more", ds.DP, in.DP)
	}
}

// A run with scaling and rooflines emits both tables and says the workload's tokens per chip.
func TestRunScalingAndRooflines(t *testing.T) {
	rec := runCell(t, "workload: llama3-405b-training\ndevices: [H100 SXM]\ncluster: []\nscaling: true\nrooflines: [mixtral-8x7b]\nyour_gpu: false")
	for _, bad := range rec.Unreadable() {
		t.Errorf("written for machines: %s", bad)
	}
	if got := len(rec.RowsOf("scaling")); got != 4 {
		t.Errorf("%d scaling rows, want 4", got)
	}
	if got := len(rec.RowsOf("rooflines")); got != 2 {
		t.Errorf("%d roofline rows, want 2", got)
	}
	rec = runCell(t, "workload: llama3-405b-training\ndevices: [H100 SXM]\ncluster: [16384]\nlayout: {tp: 8, pp: 16, zero: 2}\nrooflines: [llama3-405b]\nyour_gpu: false")
	if notes := notesOf(rec); !strings.Contains(notes, "on 16384 chips that is 1024 tokens per chip") {
		t.Errorf("notes lack the tokens per chip:\n%s", notes)
	}
}

func within(got, want, rel float64) bool { return math.Abs(got-want) <= rel*math.Abs(want) }

// overlap: true hides the data-parallel communication of Llama 3's 8,192-GPU layout behind the last
// microbatch's backward pass as parallel.Overlapped says, and leaves the rest of the step alone.
func TestOverlapKey(t *testing.T) {
	src := "workload: llama3-405b-training\ndevices: [H100 SXM]\ncluster: [8192]\nlayout: {tp: 8, pp: 16, zero: 3}\nutilisation: 1\nyour_gpu: false"
	off, on := mustParse(t, src), mustParse(t, src+"\noverlap: true")
	if off.Parallel.Overlap || !on.Parallel.Overlap {
		t.Fatalf("overlap parsed as %v and %v", off.Parallel.Overlap, on.Parallel.Overlap)
	}
	r := Datasheet(off)[0]
	a, b := PlanFor(off, r, 8192), PlanFor(on, r, 8192)
	want := parallel.Overlapped(a.Step, off.Job(), a.Used)
	if b.Step != want || !(b.Step.DP < a.Step.DP) || b.Step.Compute != a.Step.Compute || b.Step.TP != a.Step.TP {
		t.Errorf("overlapped step %+v, want %+v (from %+v)", b.Step, want, a.Step)
	}
	if _, err := Parse("flops: 1e20\noverlap: true"); err == nil || !strings.Contains(err.Error(), "line 2:") {
		t.Errorf("overlap on a workload without a shape: %v", err)
	}
}
