package inference

import (
	"context"
	"errors"
	"math"
	"testing"

	"github.com/gpuplayground/playground/sim/transformer"
)

func near(t *testing.T, what string, got, want, rel float64) {
	t.Helper()
	if math.Abs(got-want) > rel*math.Abs(want) {
		t.Errorf("%s = %.6g, want %.6g (±%g%%)", what, got, want, rel*100)
	}
}

// The scaling book's pop quiz (Austin et al. 2025, "All About Transformer Inference", "Theoretical
// estimates for LLM latency and throughput"): a 30B-parameter dense model in int8 on a TPU v5e 4x4
// slice (16 chips of 8.1e11 bytes/s and 1.97e14 bf16 FLOP/s), 8,192 tokens of context at 100 kB per
// token: "at least (4 * 819e6 + 30e9) / (16 * 8.1e11) = 2.5 ms" for a batch of 4 (2.57 ms before the
// book rounds it down), and "roughly (256 * 819e6) / (16 * 8.1e11) + (2 * 256 * 30e9) / (16 *
// 1.97e14) = 21ms" for 256.
func TestStepTimeMatchesTheScalingBookQuiz(t *testing.T) {
	slice := Chip{FLOPs: 16 * 1.97e14, Bandwidth: 16 * 8.1e11}
	step := func(batch float64) float64 {
		return StepTime(Work{LinearFLOPs: 2 * batch * 30e9, WeightBytes: 30e9, KVBytes: batch * 100e3 * 8192}, slice)
	}
	near(t, "batch 4 step (s)", step(4), 2.5676e-3, 0.001)
	near(t, "batch 256 step (s)", step(256), 21e-3, 0.02)
}

// llama2_13b is LLaMA 2-13B as the scaling book's "What about memory?" tabulates it: 40 layers,
// d_model 5,120, 40 heads and 40 KV heads of 128, vocabulary 32,000.
var llama2_13b = transformer.Model{Name: "llama2-13b", Layers: 40, DModel: 5120, Heads: 40, KVHeads: 40, DHead: 128, DFF: 13824, Vocab: 32000, Gated: true}

// The same chapter: "a KV cache for a single 8192 sequence at bf16 is 8192 × 40 × 128 × 40 × 2 × 2 =
// 6.7GB", and its table for 8 TPU v5es (6.56e12 bytes/s in all), 26 GB of bf16 parameters: a step
// of 4.98 ms and 200.61 tokens/s at batch 1, 12.13 ms and 659.30 at batch 8, 249.09 ms at 240.
func TestKVCacheAndStepMatchTheScalingBooksLlama2Table(t *testing.T) {
	e := Engine{Model: llama2_13b, WeightBytes: 2, KVBytes: 2}
	near(t, "KV bytes of 8,192 tokens", 8192*e.KVPerToken(), 6.7e9, 0.01)
	v5e8 := Chip{FLOPs: 8 * 1.97e14, Bandwidth: 8 * 0.82e12}
	for _, c := range []struct{ batch, ms, tokens float64 }{{1, 4.98, 200.61}, {8, 12.13, 659.30}, {240, 249.09, 963.53}} {
		// the book's table is the memory-bound bound: parameters and caches read once per step
		sec := StepTime(Work{WeightBytes: 26e9, KVBytes: c.batch * 6.7e9}, v5e8)
		near(t, "step (ms)", sec*1e3, c.ms, 0.005)
		near(t, "tokens/s", c.batch/sec, c.tokens, 0.005)
	}
}

// opt13b is OPT-13B (Zhang et al. 2022, Table 1: 40 layers, 40 heads, d_model 5,120), the model of
// the vLLM paper's single-GPU runs.
var opt13b = transformer.Model{Name: "opt-13b", Layers: 40, DModel: 5120, Heads: 40, KVHeads: 40, DHead: 128, DFF: 20480, Vocab: 50272, Positions: 2048, Biases: true, Tied: true}

// Kwon et al. 2023 (vLLM), §3: for OPT-13B "the KV cache of a single token demands 800 KB of space,
// calculated as 2 (key and value vectors) × 5120 (hidden state size) × 40 (number of layers) × 2
// (bytes per FP16)", and a 2,048-token request up to 1.6 GB.
func TestOPT13BKVCacheMatchesTheVLLMPaper(t *testing.T) {
	e := Engine{Model: opt13b, WeightBytes: 2, KVBytes: 2}
	if got, want := e.KVPerToken(), 2.0*5120*40*2; got != want {
		t.Errorf("KV per token = %g bytes, want %g", got, want)
	}
	near(t, "KV of 2,048 tokens", 2048*e.KVPerToken(), 1.6e9, 0.05)
}

// vllmSetup is the vLLM paper's OPT-13B on one A100 (40 GB) serving ShareGPT-like requests (§6.1:
// means of 161 prompt and 338 output tokens in Figure 11, whose ratios to Alpaca's, 8.4× and 5.8×, the
// text states; 2,048-token sequences at most): 12 GB of KV
// cache beside 26 GB of weights (Figure 1: parameters 65 % of the 40 GB, KV cache over 30 %). Lengths
// are exponential with those means (the real dataset's shape is not stored here). Requests all
// arrive at once: the server is saturated, as past the knee of the paper's Figure 12, and 2,000 of
// them make the start and the drain a small part of the run.
func vllmSetup(reservation string) (Config, Workload) {
	e := Engine{Model: opt13b, WeightBytes: 2, KVBytes: 2}
	a100 := Chip{Name: "A100 40GB", FLOPs: 312e12, Bandwidth: 1.555e12, Memory: 40e9}
	c := Config{Engine: e, Chip: a100, Memory: e.WeightMemory() + 12e9, Batching: "continuous",
		Reservation: reservation, Block: 16, MaxLen: 2048, MaxBatch: 256}
	return c, Workload{Requests: 2000, Prompt: Lengths{161, "exponential"}, Output: Lengths{338, "exponential"}, Seed: 1}
}

// The vLLM paper's headline gain is the batch that memory allows. Orca (Max) reserves 2,048 tokens
// per request: 12 GB holds 7 of 1.6 GB, and the paper's Figure 13a measures Orca (Max) batching 7.00
// requests on average. Paged, the simulator batches about 4× more and serves about 2.8× the tokens
// per second, at the low end of the paper's §6.2: "vLLM can sustain 1.7×–2.7× higher request rates
// compared to Orca (Oracle) and 2.7×–8× compared to Orca (Max)". Against Oracle the model gives less
// than the paper's 1.7× (about 1.3×): its contiguous pool has no external fragmentation, its
// exponential lengths are not ShareGPT's, and its roofline charges each batched request its KV-cache
// reads in full, which the real system's fixed overheads dilute. The test holds the ordering there.
func TestPagedOverContiguousMatchesTheVLLMPaper(t *testing.T) {
	res := map[string]Result{}
	for _, r := range Reservations {
		c, w := vllmSetup(r)
		got, err := Simulate(context.Background(), c, w)
		if err != nil {
			t.Fatal(err)
		}
		res[r] = got
	}
	if got := res["max"].MaxBatch; got != 7 {
		t.Errorf("Orca (Max)'s most requests at once = %d, want 7 (12 GB / 1.6 GB)", got)
	}
	near(t, "Orca (Max)'s mean batch", res["max"].MeanBatch, 7.00, 0.02)
	if ratio := res["paged"].Throughput / res["max"].Throughput; ratio < 2.7 || ratio > 8 {
		t.Errorf("paged over max throughput = %.2f×, want within the paper's 2.7×–8×", ratio)
	}
	for _, p := range [][2]string{{"pow2", "max"}, {"oracle", "pow2"}, {"paged", "oracle"}} {
		if a, b := res[p[0]], res[p[1]]; !(a.MeanBatch > b.MeanBatch && a.Throughput > b.Throughput) {
			t.Errorf("%s batches %.1f at %.0f tokens/s, %s %.1f at %.0f: want more of both", p[0], a.MeanBatch, a.Throughput, p[1], b.MeanBatch, b.Throughput)
		}
	}
	// §3 and §6: in the systems before vLLM "only 20.4% - 38.2% of the KV cache memory is used to
	// store the actual token states"; vLLM's waste is "near-zero".
	if u := res["max"].MeanHeld / res["max"].MeanReserved; u < 0.204 || u > 0.382 {
		t.Errorf("max reservation: %.1f%% of reserved KV holds tokens, want within the paper's 20.4%%–38.2%%", u*100)
	}
	if u := res["paged"].MeanHeld / res["paged"].MeanReserved; u < 0.95 {
		t.Errorf("paged: %.1f%% of allocated KV holds tokens, want near all (at most a block per request idle)", u*100)
	}
}

// Leviathan et al. 2023, equation 1 and Theorem 3.8, by hand: α = 0.8 and k = 4 give (1 − 0.8⁵) /
// 0.2 = 3.3616 tokens per verification step; with a draft costing c = 0.05 of the target, 3.3616 /
// 1.2 = 2.8013×.
func TestSpeculativeArithmetic(t *testing.T) {
	near(t, "E[tokens] α=0.8 k=4", ExpectedTokens(0.8, 4), 3.3616, 1e-9)
	near(t, "speed-up c=0.05", Speedup(0.8, 4, 0.05), 3.3616/1.2, 1e-9)
	if got := ExpectedTokens(0, 4); got != 1 {
		t.Errorf("α = 0: %g tokens per step, want 1 (only the target's own)", got)
	}
	if got := ExpectedTokens(1, 4); got != 5 {
		t.Errorf("α = 1: %g tokens per step, want k + 1 = 5", got)
	}
}

// One request of 1,001 output tokens decoded speculatively takes about 1,000 / E[tokens] decode
// steps: the simulator's seeded acceptances average what the formula says.
func TestSpeculativeStepsAverageTheFormula(t *testing.T) {
	e := Engine{Model: llama3(t, "llama3-8b"), WeightBytes: 2, KVBytes: 2}
	c := Config{Engine: e, Chip: h100(t), Memory: 80e9, Batching: "continuous", Reservation: "paged", Block: 16, MaxLen: 4096, MaxBatch: 1,
		Speculative: Speculative{K: 4, Alpha: 0.8, Cost: 0.05}}
	res, err := Simulate(context.Background(), c, Workload{Requests: 1, Prompt: Lengths{16, "fixed"}, Output: Lengths{1001, "fixed"}, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	near(t, "decode steps", float64(res.Steps-1), 1000/ExpectedTokens(0.8, 4), 0.06)
}

func llama3(t testing.TB, name string) transformer.Model {
	t.Helper()
	m, err := transformer.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func h100(t testing.TB) Chip {
	t.Helper()
	c, err := ChipNamed("H100 SXM")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// A decode step of Llama 3 8B, batch 1, 1,000 tokens cached, on an H100, by hand: 2 FLOPs per GEMM
// weight, the GEMM weights read once in BF16, 1,001 tokens of 128 KiB of KV (2 × 32 layers × 8 heads ×
// 128 × 2 bytes), 4 × 32 × 4,096 × 1,001 attention FLOPs; bandwidth-bound in both halves.
func TestDecodeStepByHand(t *testing.T) {
	m := llama3(t, "llama3-8b")
	e := Engine{Model: m, WeightBytes: 2, KVBytes: 2}
	w := e.Work([]Seq{{New: 1, Past: 1000}})
	gemm := m.GEMMWeights()
	want := Work{LinearFLOPs: 2 * gemm, WeightBytes: 2 * gemm, AttentionFLOPs: 4 * 32 * 4096 * 1001, KVBytes: 1001 * 131072}
	if w != want {
		t.Fatalf("work = %+v, want %+v", w, want)
	}
	c := h100(t)
	near(t, "step (s)", StepTime(w, c), (2*gemm+1001*131072)/c.Bandwidth, 1e-12)
	// int8 weights and an fp8 cache read half the bytes: the step takes half as long
	q := Engine{Model: m, WeightBytes: 1, KVBytes: 1}
	near(t, "quantised step (s)", StepTime(q.Work([]Seq{{New: 1, Past: 1000}}), c), StepTime(w, c)/2, 1e-12)
}

// A prefill is compute-bound: 2,048 prompt tokens of Llama 3 8B do 2 × GEMM weights × 2,048 FLOPs,
// far more than the H100 moves bytes for in the same time.
func TestPrefillIsComputeBound(t *testing.T) {
	m := llama3(t, "llama3-8b")
	e := Engine{Model: m, WeightBytes: 2, KVBytes: 2}
	w := e.Work([]Seq{{New: 2048}})
	c := h100(t)
	if w.LinearFLOPs/c.FLOPs <= w.WeightBytes/c.Bandwidth {
		t.Errorf("prefill: %.3g s of FLOPs ≤ %.3g s of bytes; want compute-bound", w.LinearFLOPs/c.FLOPs, w.WeightBytes/c.Bandwidth)
	}
	near(t, "attention FLOPs", w.AttentionFLOPs, 4*32*4096*(2048.0*2049/2), 1e-12)
}

// One request of a 100-token prompt and 3 output tokens: a prefill (which yields the first token)
// and two decode steps, timed by hand from StepTime.
func TestOneRequestByHand(t *testing.T) {
	e := Engine{Model: llama3(t, "llama3-8b"), WeightBytes: 2, KVBytes: 2}
	c := Config{Engine: e, Chip: h100(t), Memory: 80e9, Batching: "continuous", Reservation: "paged", Block: 16, MaxLen: 2048, MaxBatch: 8}
	res, err := Simulate(context.Background(), c, Workload{Requests: 1, Prompt: Lengths{100, "fixed"}, Output: Lengths{3, "fixed"}})
	if err != nil {
		t.Fatal(err)
	}
	step := func(s Seq) float64 { return StepTime(e.Work([]Seq{s}), c.Chip) }
	prefill := step(Seq{New: 100})
	want := prefill + step(Seq{New: 1, Past: 101}) + step(Seq{New: 1, Past: 102})
	near(t, "seconds", res.Seconds, want, 1e-12)
	near(t, "TTFT", res.TTFT.P50, prefill, 1e-12)
	near(t, "TPOT", res.TPOT.P50, (want-prefill)/2, 1e-12)
	if res.Steps != 3 || res.OutputTokens != 3 {
		t.Errorf("%d steps, %d tokens; want 3 and 3", res.Steps, res.OutputTokens)
	}
}

// Static batching holds a finished request's place until its whole batch is done; continuous
// batching gives it to a waiting request at the next step: more throughput and a shorter wait.
func TestContinuousBatchingBeatsStatic(t *testing.T) {
	e := Engine{Model: llama3(t, "llama3-8b"), WeightBytes: 2, KVBytes: 2}
	w := Workload{Requests: 200, Rate: 20, Prompt: Lengths{200, "uniform"}, Output: Lengths{200, "exponential"}, Seed: 3}
	run := func(batching string) Result {
		c := Config{Engine: e, Chip: h100(t), Memory: 72e9, Batching: batching, Reservation: "paged", Block: 16, MaxLen: 2048, MaxBatch: 16}
		res, err := Simulate(context.Background(), c, w)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	st, co := run("static"), run("continuous")
	if !(co.Throughput > st.Throughput && co.TTFT.P50 < st.TTFT.P50) {
		t.Errorf("continuous %.0f tokens/s, TTFT %.3g s; static %.0f, %.3g: want continuous ahead in both", co.Throughput, co.TTFT.P50, st.Throughput, st.TTFT.P50)
	}
}

// A pool too small for the batch preempts (and recomputes), and every request still finishes with
// all its tokens; the same seed gives the same result, another seed another.
func TestPreemptionAndDeterminism(t *testing.T) {
	c, w := vllmSetup("paged")
	c.Memory = c.Engine.WeightMemory() + 3e9
	w.Requests = 100
	a, err := Simulate(context.Background(), c, w)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Simulate(context.Background(), c, w)
	if a != b {
		t.Errorf("same seed, different results:\n%+v\n%+v", a, b)
	}
	if a.Preemptions == 0 {
		t.Errorf("no preemption in a pool of %d tokens", a.PoolTokens)
	}
	if a.PeakReserved > a.KVCapacity {
		t.Errorf("reserved %.3g bytes of a %.3g-byte pool", a.PeakReserved, a.KVCapacity)
	}
	w.Seed = 2
	if other, _ := Simulate(context.Background(), c, w); other.OutputTokens == a.OutputTokens {
		t.Errorf("seeds 1 and 2 drew the same %d output tokens", a.OutputTokens)
	}
}

func TestErrors(t *testing.T) {
	c, w := vllmSetup("max")
	c.Memory = c.Engine.WeightMemory() + 1e9 // less than one 2,048-token reservation
	if _, err := Simulate(context.Background(), c, w); !errors.Is(err, ErrTooBig) {
		t.Errorf("a pool smaller than one reservation: %v, want ErrTooBig", err)
	}
	for _, bad := range []func(*Config, *Workload){
		func(c *Config, _ *Workload) { c.Batching = "dynamic" },
		func(c *Config, _ *Workload) { c.Reservation = "buddy" },
		func(c *Config, _ *Workload) { c.Memory = 1e9 },
		func(c *Config, _ *Workload) { c.Speculative.Alpha = 1.5 },
		func(_ *Config, w *Workload) { w.Prompt.Dist = "zipf" },
		func(_ *Config, w *Workload) { w.Requests = 0 },
	} {
		c, w := vllmSetup("paged")
		bad(&c, &w)
		if _, err := Simulate(context.Background(), c, w); err == nil {
			t.Errorf("%+v %+v: no error", c, w)
		}
	}
	if _, err := FormatBytes("fp6"); err == nil {
		t.Error("fp6: no error")
	}
	if b, err := FormatBytes("INT4"); err != nil || b != 0.5 {
		t.Errorf("int4 = %g, %v; want 0.5 bytes", b, err)
	}
}

func TestPercentilesNearestRank(t *testing.T) {
	xs := []float64{5, 1, 4, 2, 3, 10, 9, 8, 7, 6}
	if got, want := percentiles(xs), (Percentiles{Mean: 5.5, P50: 5, P90: 9, P99: 10}); got != want {
		t.Errorf("percentiles = %+v, want %+v", got, want)
	}
}

// Paged admission that fills every free block thrashes: requests admitted on their prompts grow,
// the pool runs out and the newest are preempted and recomputed. vLLM's rules (no admission in the
// step after a preemption, 1 % of blocks kept free) keep a paged pool ahead of an exact contiguous
// reservation: Llama 3 8B in int8 on a T4 (14.4 GB of its 16), 1,000 requests at once.
func TestPagedAdmissionKeepsAheadOfOracle(t *testing.T) {
	t4, err := ChipNamed("T4")
	if err != nil {
		t.Fatal(err)
	}
	e := Engine{Model: llama3(t, "llama3-8b"), WeightBytes: 1, KVBytes: 2}
	w := Workload{Requests: 1000, Prompt: Lengths{256, "exponential"}, Output: Lengths{256, "exponential"}, Seed: 1}
	res := map[string]Result{}
	for _, r := range []string{"oracle", "paged"} {
		c := Config{Engine: e, Chip: t4, Memory: 14.4e9, Batching: "continuous", Reservation: r, Block: 16, MaxLen: 2048, MaxBatch: 256}
		if res[r], err = Simulate(context.Background(), c, w); err != nil {
			t.Fatal(err)
		}
	}
	if p, o := res["paged"], res["oracle"]; !(p.Throughput > o.Throughput && p.Preemptions < w.Requests/4) {
		t.Errorf("paged %.0f tokens/s with %d preemptions, oracle %.0f: want paged ahead, preempting under a quarter of the requests", p.Throughput, p.Preemptions, o.Throughput)
	}
}

// batchOne is a server whose memory holds one request of 8,000 tokens at a time (a max reservation
// of max_len 8,192, Llama 3 8B in bf16: 1 GiB a request): every output token is a step of a batch
// of one, the simulator's slowest case per token.
func batchOne(t testing.TB, requests int) (Config, Workload) {
	t.Helper()
	e := Engine{Model: llama3(t, "llama3-8b"), WeightBytes: 2, KVBytes: 2}
	c := Config{Engine: e, Chip: h100(t), Memory: e.WeightMemory() + 1.5*8192*e.KVPerToken(), Batching: "continuous", Reservation: "max", Block: 16, MaxLen: 8192, MaxBatch: 256}
	return c, Workload{Requests: requests, Prompt: Lengths{1, "fixed"}, Output: Lengths{8000, "fixed"}, Seed: 1}
}

// MaxSteps bounds the steps Simulate takes: in the reviewer's worst cases (a batch of one, a
// preemption thrash, speculation) the steps reach it or stay under it, and a batch of one takes a
// step per token.
func TestMaxStepsBoundsTheSimulatedSteps(t *testing.T) {
	one, w1 := batchOne(t, 3)
	thrash, wt := vllmSetup("paged")
	thrash.Memory = thrash.Engine.WeightMemory() + 1.5e9
	wt.Requests, wt.Prompt, wt.Output = 100, Lengths{100, "fixed"}, Lengths{1500, "fixed"}
	spec, ws := vllmSetup("paged")
	spec.Speculative = Speculative{K: 4, Alpha: 0.1, Cost: 0.05}
	for _, c := range []struct {
		name string
		c    Config
		w    Workload
	}{{"batch of one", one, w1}, {"thrash", thrash, wt}, {"speculative", spec, ws}} {
		res, err := Simulate(context.Background(), c.c, c.w)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		bound, err := c.w.MaxSteps(c.c.MaxLen)
		if err != nil {
			t.Fatal(err)
		}
		if res.Steps > bound {
			t.Errorf("%s: %d steps, over the bound of %d", c.name, res.Steps, bound)
		}
		if c.name == "batch of one" && (res.MaxBatch != 1 || res.Steps != bound) {
			t.Errorf("batch of one: %d steps at a batch of at most %d; want %d steps, one per token", res.Steps, res.MaxBatch, bound)
		}
		if c.name == "thrash" && res.Preemptions == 0 {
			t.Errorf("thrash: no preemption")
		}
	}
}

// Simulate ends with the context's error: at once when it has ended, and within ctxEvery steps of
// a cancellation mid-run (the frame counts the steps taken before it returns).
func TestSimulateEndsWithItsContext(t *testing.T) {
	c, w := batchOne(t, 1000) // 8 million steps: minutes, if the context were not checked
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Simulate(ctx, c, w); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled context: %v, want context.Canceled", err)
	}
	ctx, cancel = context.WithCancel(context.Background())
	done := make(chan error)
	go func() { _, err := Simulate(ctx, c, w); done <- err }()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled mid-run: %v, want context.Canceled", err)
	}
}

// BenchmarkStepBatchOne is the simulator's cost of a step of a batch of one on this machine (ns/step):
// the price cells/serving's estimate puts on every step MaxSteps allows.
func BenchmarkStepBatchOne(b *testing.B) { benchSteps(b, Speculative{}) }

// BenchmarkStepSpeculative is the same with speculative decoding, which works out a draft step too.
func BenchmarkStepSpeculative(b *testing.B) { benchSteps(b, Speculative{K: 4, Alpha: 0, Cost: 0.05}) }

func benchSteps(b *testing.B, sp Speculative) {
	c, w := batchOne(b, 20)
	c.Speculative = sp
	steps := 0
	for b.Loop() {
		res, err := Simulate(context.Background(), c, w)
		if err != nil {
			b.Fatal(err)
		}
		steps += res.Steps
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(steps), "ns/step")
}
