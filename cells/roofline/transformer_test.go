package roofline

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/gpuplayground/playground/cells"
	"github.com/gpuplayground/playground/cells/cellstest"
	"github.com/gpuplayground/playground/estimate"
	"github.com/gpuplayground/playground/harness"
	"github.com/gpuplayground/playground/kernels"
	"github.com/gpuplayground/playground/measure"
	"github.com/gpuplayground/playground/sim/transformer"
)

// fixedRoof is a roofline cache holding ceilings already measured.
type fixedRoof struct{ c measure.Ceilings }

func (f fixedRoof) Get(context.Context) (measure.Ceilings, error) { return f.c, nil }
func (f fixedRoof) Peek() (measure.Ceilings, bool)                { return f.c, true }

func parseModel(t *testing.T, src string) Spec {
	t.Helper()
	s, err := Parse(src, kernels.CPU(), harness.DefaultLimits(), estimate.Defaults())
	if err != nil {
		t.Fatalf("%q: %v", src, err)
	}
	return s
}

func TestParseModel(t *testing.T) {
	s := parseModel(t, "model: llama3-70b\nbatch: [1, 32]\nprompt: 512\ncontext: 8192\ngpu: A100 SXM\nfused: false")
	m := s.Transformer
	if m.Model.Name != "llama3-70b" || len(m.Batch) != 2 || m.Batch[1] != 32 || m.Prompt != 512 || m.Context != 8192 || m.GPU.Name != "A100 SXM" || m.Fused {
		t.Errorf("got %+v", m)
	}
	if d := parseModel(t, "model: LLAMA3-8B").Transformer; d.GPU.Name != "H100 SXM" || !d.Fused || d.Prompt != 2048 || len(d.Batch) != 4 {
		t.Errorf("defaults: got %+v", d)
	}
	for src, want := range map[string]string{
		"model: gpt4":                               `line 1: unknown model "gpt4"`,
		"model: llama3-8b\nkernels: [naive]":        "line 2: a cell with model:",
		"model: llama3-8b\npredict: {naive: 1}":     "line 2: a cell with model:",
		"model: llama3-8b\npeak: true":              "line 1: transfers and peak",
		"model: llama3-8b\nbatch: []":               "line 2: batch lists 1 to 8",
		"model: llama3-8b\nbatch: [1,\n  0]":        "line 3: a batch of 0",
		"model: llama3-8b\nprompt: 0":               "line 2: prompt is 0 tokens",
		"model: llama3-8b\ncontext: 2000000":        "line 2: context is 2000000 tokens",
		"model: llama3-8b\ngpu: RTX A6000":          `line 2: unknown accelerator "RTX A6000"`,
		"kernels: [naive]\nsizes: [64]\nbatch: [4]": "line 3: batch, prompt, context and fused describe a transformer",
		"model: llama3-8b\nbatch: 4":                "line 2",
	} {
		_, err := Parse(src, kernels.CPU(), harness.DefaultLimits(), estimate.Defaults())
		var se *cells.SpecError
		if !errors.As(err, &se) || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: got %v, want a *cells.SpecError with %q", src, err, want)
		}
	}
}

// A run: the layer's GEMMs, a prefill and a decode row per batch, each modelled on both roofs from
// the counts of package transformer, and a chart.
func TestRunModel(t *testing.T) {
	c := measure.Ceilings{FP32: measure.Peak{GFLOPS: 100, Method: "test"}, BandwidthGBs: 20, Measured: "in a test"}
	env := cells.Env{Kernels: kernels.CPU(), Limits: harness.DefaultLimits(), Roofline: fixedRoof{c}}
	run, err := New(env).Parse(cells.Cell{Source: "model: llama3-8b\nbatch: [1, 1024]\nprompt: 2048\ncontext: 4096"})
	if err != nil {
		t.Fatal(err)
	}
	var rec cellstest.Recorder
	if err := run.Run(context.Background(), &rec); err != nil {
		t.Fatal(err)
	}
	if n := len(rec.RowsOf("layer")); n != 6 {
		t.Errorf("%d GEMMs in the layer table, want 6 (QKV, scores, values, output, MLP gate+up, MLP down)", n)
	}
	rows := rec.RowsOf("steps")
	if len(rows) != 3 {
		t.Fatalf("%d step rows, want a prefill and two decodes", len(rows))
	}
	m, _ := transformer.Lookup("llama3-8b")
	decode1 := m.Cost(transformer.Step{Batch: 1, Tokens: 1, Context: 4096}, 2, true)
	// Decode at batch 1 on the H100: memory-bound, bytes / 3.35e12 B/s.
	if v := rows[1].Values; v[0] != "decode" || v[12] != "memory" || math.Abs(v[11].(float64)-decode1.Bytes()/3.35e12) > 1e-15 {
		t.Errorf("decode at batch 1: %v, want memory-bound at %g s", v, decode1.Bytes()/3.35e12)
	}
	// The prefill of 2,048 tokens is compute-bound on the H100 (far past its ridge of 295 FLOP/byte),
	// and on this machine's roof of 100 GFLOP/s and 20 GB/s (ridge 5) too.
	if v := rows[0].Values; v[0] != "prefill" || v[12] != "compute" || v[10] != "compute" || v[8].(float64) < 300 {
		t.Errorf("prefill: %v, want compute-bound on both roofs", v)
	}
	// At batch 1,024 the weights are shared, but each sequence reads its own 4,096 tokens of KV
	// cache (512 MiB): the cache's bytes dominate and the step stays memory-bound.
	if v := rows[2].Values; v[12] != "memory" || v[6].(float64) < 30*v[5].(float64) {
		t.Errorf("decode at batch 1,024: %v, want memory-bound with the KV cache 30× the weights", v)
	}
	if rec.Charts == 0 {
		t.Error("no chart")
	}
	// Every number in a sentence is written for people: "8.03 billion parameters", not 8.03e+09.
	for _, bad := range rec.Unreadable() {
		t.Errorf("written for machines: %s", bad)
	}
	if first := rec.Notes[0].Message; !strings.Contains(first, "From this shape: 8.03 billion parameters (published 8.03 billion), 15.55 billion FLOPs per token forward") {
		t.Errorf("first note %q, want the counts in words", first)
	}
	// The shape is written as the lesson writes numbers, with thousands separators.
	if first := rec.Notes[0].Message; !strings.Contains(first, "d_model 4,096") || !strings.Contains(first, "d_ff 14,336, vocabulary 128,256") || !strings.Contains(first, "at a 2,048-token prompt") {
		t.Errorf("first note %q, want the shape with thousands separators", first)
	}
	last := rec.Notes[len(rec.Notes)-1].Message
	if !strings.Contains(last, "H100 SXM 295 FLOP/byte") {
		t.Errorf("last note %q, want the H100's ridge", last)
	}
}

// Any source either parses or fails with a line-numbered *cells.SpecError; a transformer cell that
// parses models finite, positive FLOPs and bytes for every step.
func FuzzParseRoofline(f *testing.F) {
	for _, s := range []string{"model: llama3-8b", "model: gpt3-175b\nbatch: [1, 65536]\nprompt: 1048576\ncontext: 1", "kernels: [naive]\nsizes: [64]\npredict: {naive: 2}",
		"model: llama3-405b\nfused: false\ngpu: TPU v5e", "model: [x]", "batch: [1]"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		s, err := Parse(src, kernels.CPU(), harness.DefaultLimits(), estimate.Defaults())
		if err != nil {
			var se *cells.SpecError
			if !errors.As(err, &se) {
				t.Fatalf("%q: error %v is not a *cells.SpecError", src, err)
			}
			return
		}
		if s.Transformer.Model.Name == "" {
			return
		}
		_, steps := s.Transformer.Steps()
		for _, st := range steps {
			c := s.Transformer.Model.Cost(st, ElemBytes, s.Transformer.Fused)
			if ai := c.Intensity(); !(c.FLOPs > 0) || math.IsInf(c.FLOPs, 0) || !(ai > 0) || math.IsInf(ai, 0) {
				t.Fatalf("%q: step %+v costs %+v", src, st, c)
			}
		}
	})
}
