package tpucore

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gpuplayground/playground/sim/systolicarray"
)

func gen(t *testing.T, name string) Generation {
	t.Helper()
	g, err := LookupGeneration(name)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func dtype(t *testing.T, name string) DType {
	t.Helper()
	d, err := LookupDType(name)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func simulate(t *testing.T, p Matmul) Result {
	t.Helper()
	r, err := Simulate(context.Background(), p, nil)
	if err != nil {
		t.Fatalf("%+v: %v", p, err)
	}
	return r
}

// The clock the published peaks imply (peak / (MXUs × 2 × 128²)) is the published clock: 1,050 MHz for
// TPU v4 (Jouppi et al., "TPU v4", ISCA 2023) and 1.5 GHz for v5e (the scaling book, "How to Think
// About TPUs"), so the MXU count, array size and peak agree with each other.
func TestClockMatchesPublished(t *testing.T) {
	for name, want := range map[string]float64{"v4": 1050e6, "v5e": 1.5e9} {
		if got := gen(t, name).ClockHz(); math.Abs(got/want-1) > 0.005 {
			t.Errorf("%s: clock %g Hz, want %g within 0.5%%", name, got, want)
		}
	}
}

// One weight tile costs the model exactly what the cycle-by-cycle systolic simulator counts for it on a
// 128×128 array (weight load, fill, stream, drain); and the scaling book's critical intensity for TPU
// v5e, about 240 FLOP/byte, is the ridge of the model's roofline: a product far below it runs at
// intensity × HBM bandwidth, one far above it near the MXUs' peak.
func TestAgreesWithSystolicSimulatorAndScalingBook(t *testing.T) {
	v5e, bf16 := gen(t, "v5e"), dtype(t, "bf16")
	for _, r := range []int{8, 128, 200} {
		p := Matmul{Gen: v5e, DType: bf16, M: r, K: MXUSize, N: MXUSize, BM: r, BK: MXUSize, BN: MXUSize, Epilogue: "none"}
		a, b := random(r*MXUSize), random(MXUSize*MXUSize)
		_, st, err := systolicarray.Multiply(context.Background(), MXUSize, a, b, r, MXUSize, MXUSize, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := p.BlockCycles(); got != st.Cycles {
			t.Errorf("one %d-row tile: model %d cycles, systolic simulator %d", r, got, st.Cycles)
		}
	}
	if ci := v5e.CriticalIntensity(); math.Abs(ci-240) > 1 {
		t.Errorf("v5e critical intensity %.1f FLOP/byte, want about 240 (scaling book)", ci)
	}
	// Far below the ridge: 8 rows against a 8192×8192 B, about 8 FLOP per byte of B.
	low := simulate(t, Matmul{Gen: v5e, DType: bf16, M: 8, K: 8192, N: 8192, BM: 8, BK: 1024, BN: 1024, Epilogue: "none"})
	intensity := low.FLOPs / float64(low.HBMToVMEM+low.VMEMToHBM)
	if got, want := low.FLOPs/low.Seconds, intensity*v5e.HBM; math.Abs(got/want-1) > 0.05 {
		t.Errorf("memory-bound product: %.4g FLOP/s, want intensity %.3g × HBM = %.4g within 5%%", got, intensity, want)
	}
	if low.Dominant() != PartCopies {
		t.Errorf("memory-bound product dominated by %q, want %q", low.Dominant(), PartCopies)
	}
	high := simulate(t, Matmul{Gen: v5e, DType: bf16, M: 8192, K: 8192, N: 8192, BM: 512, BK: 1024, BN: 1024, Epilogue: "none"})
	if high.FLOPs/float64(high.HBMToVMEM+high.VMEMToHBM) < 240 || high.Utilisation < 0.9 || high.Utilisation > 1 {
		t.Errorf("compute-bound product: utilisation %.3f, want 0.9 to 1", high.Utilisation)
	}
	if high.Dominant() != PartUseful {
		t.Errorf("compute-bound product dominated by %q, want %q", high.Dominant(), PartUseful)
	}
}

func random(n int) []float32 {
	out := make([]float32, n)
	for i := range out {
		out[i] = rand.Float32()
	}
	return out
}

// The Pallas matmul guide (https://docs.jax.dev/en/latest/pallas/tpu/matmul.html, run on a TPU v5e, bf16,
// timed with timeit around jax.block_until_ready, so host dispatch included) measured these times. The
// model, which has no dispatch or per-step overhead, must come in under each and within 20% of it:
// with 128³ blocks the array's fill and drain on one busy MXU of four set the pace; with 512×1024×1024
// blocks the MXUs do.
func TestAgreesWithPublishedPallasMeasurements(t *testing.T) {
	v5e, bf16 := gen(t, "v5e"), dtype(t, "bf16")
	for _, c := range []struct {
		n, bm, bk, bn int
		measured      float64
	}{
		{4096, 128, 128, 128, 0.011771515250438824},
		{8192, 128, 128, 128, 0.09183577066054567},
		{4096, 512, 1024, 1024, 0.00088908776990138},
		{8192, 512, 1024, 1024, 0.006099433819763363},
	} {
		r := simulate(t, Matmul{Gen: v5e, DType: bf16, M: c.n, K: c.n, N: c.n, BM: c.bm, BK: c.bk, BN: c.bn, Epilogue: "none"})
		if r.Seconds > c.measured || r.Seconds < 0.8*c.measured {
			t.Errorf("%d³ with blocks %d×%d×%d: modelled %.4g s, published measurement %.4g s; want 80%% to 100%% of it", c.n, c.bm, c.bk, c.bn, r.Seconds, c.measured)
		}
	}
}

// A block is copied again only when its index changes: with k innermost, A is read once per column of
// blocks and B once per row of blocks; with one k block, A stays in VMEM across j.
func TestBytesMoved(t *testing.T) {
	v5e, bf16 := gen(t, "v5e"), dtype(t, "bf16")
	p := Matmul{Gen: v5e, DType: bf16, M: 256, K: 512, N: 384, BM: 128, BK: 256, BN: 128, Epilogue: "none"}
	r := simulate(t, p)
	if got, want := r.HBMToVMEM, int64(2*(256*512*3+512*384*2)); got != want {
		t.Errorf("HBM→VMEM %d bytes, want %d (A three times, B twice)", got, want)
	}
	if got, want := r.VMEMToHBM, int64(256*384*2); got != want {
		t.Errorf("VMEM→HBM %d bytes, want %d (C once)", got, want)
	}
	p.BK = 512
	r = simulate(t, p)
	if got, want := r.HBMToVMEM, int64(2*(256*512+512*384*2)); got != want {
		t.Errorf("one k block: HBM→VMEM %d bytes, want %d (A once, B twice)", got, want)
	}
}

// Dimensions are padded up to whole blocks, and the padded work is counted as waste.
func TestPadding(t *testing.T) {
	r := simulate(t, Matmul{Gen: gen(t, "v4"), DType: dtype(t, "bf16"), M: 100, K: 200, N: 130, BM: 128, BK: 256, BN: 256, Epilogue: "none"})
	if r.PaddedM != 128 || r.PaddedK != 256 || r.PaddedN != 256 {
		t.Errorf("padded %d×%d×%d, want 128×256×256", r.PaddedM, r.PaddedK, r.PaddedN)
	}
	var pad, useful float64
	for _, part := range r.Parts {
		switch part.Label {
		case PartPadding:
			pad = part.Seconds
		case PartUseful:
			useful = part.Seconds
		}
	}
	if want := useful * (128.0*256*256/(100*200*130) - 1); math.Abs(pad/want-1) > 1e-9 {
		t.Errorf("padding %g s, want %g", pad, want)
	}
}

// The timeline is a double-buffered pipeline: a step computes only once its inputs are in VMEM and the
// previous step has finished; copies never overlap each other; the next step's inputs are copied while
// this step computes; the kernel ends after the last copy and the last compute.
func TestTimelineIsAPipeline(t *testing.T) {
	p := Matmul{Gen: gen(t, "v5p"), DType: dtype(t, "f32"), M: 512, K: 1024, N: 512, BM: 256, BK: 256, BN: 256, Epilogue: "bias_relu"}
	var steps []Step
	r, err := Simulate(context.Background(), p, func(s Step) { steps = append(steps, s) })
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(steps)) != r.Steps || r.Steps != 2*2*4 {
		t.Fatalf("%d steps, want %d", len(steps), 16)
	}
	var copies []*Copy
	inputsReady, prevEnd := steps[0].First.End, 0.0
	for _, s := range steps {
		if s.Start < inputsReady-1e-15 || s.Start < prevEnd-1e-15 || s.End < s.MXUEnd || s.MXUEnd <= s.Start {
			t.Fatalf("step %d: %+v starts before its inputs (%g) or the previous step (%g)", s.Step, s, inputsReady, prevEnd)
		}
		if s.Next != nil {
			if s.Next.Start < s.Start {
				t.Errorf("step %d: next inputs copied at %g, before this step's compute starts", s.Step, s.Next.Start)
			}
			inputsReady = s.Next.End
			copies = append(copies, s.Next)
		}
		if s.Out != nil {
			copies = append(copies, s.Out)
		}
		if (s.Out != nil) != (s.K == 3) {
			t.Errorf("step %d (k %d): output copy %v, want one on the last k step only", s.Step, s.K, s.Out)
		}
		prevEnd = s.End
	}
	for i := 1; i < len(copies); i++ {
		if copies[i].Start < copies[i-1].End-1e-15 {
			t.Errorf("copy %d starts at %g before copy %d ends at %g", i, copies[i].Start, i-1, copies[i-1].End)
		}
	}
	if last := copies[len(copies)-1]; r.Seconds != math.Max(last.End, prevEnd) {
		t.Errorf("kernel ends at %g, want %g", r.Seconds, math.Max(last.End, prevEnd))
	}
}

// Each copy names the step it serves: the prologue's step 0, a step's next copy the step after it
// (whose block it brings), an output copy its own step.
func TestCopiesNameTheStepTheyServe(t *testing.T) {
	p := Matmul{Gen: gen(t, "v5p"), DType: dtype(t, "f32"), M: 512, K: 1024, N: 512, BM: 256, BK: 256, BN: 256, Epilogue: "none"}
	var steps []Step
	if _, err := Simulate(context.Background(), p, func(s Step) { steps = append(steps, s) }); err != nil {
		t.Fatal(err)
	}
	if f := steps[0].First; f.For != 0 || [3]int{f.I, f.J, f.K} != [3]int{0, 0, 0} {
		t.Errorf("prologue copy serves step %d block (%d, %d, %d), want step 0 block (0, 0, 0)", f.For, f.I, f.J, f.K)
	}
	for i, s := range steps {
		if s.Next != nil {
			after := steps[i+1]
			if got, want := [4]int64{s.Next.For, int64(s.Next.I), int64(s.Next.J), int64(s.Next.K)}, [4]int64{after.Step, int64(after.I), int64(after.J), int64(after.K)}; got != want {
				t.Errorf("step %d's next copy serves %v, want the next step %v", s.Step, got, want)
			}
		}
		if s.Out != nil && (s.Out.For != s.Step || s.Out.K != s.K) {
			t.Errorf("step %d's output copy serves step %d", s.Step, s.Out.For)
		}
	}
}

// Blocks that do not fit the core's VMEM are refused with the arithmetic; so are blocks that are not
// whole vregs and int8 where the generation has no int8 rate.
func TestChecks(t *testing.T) {
	v4, bf16 := gen(t, "v4"), dtype(t, "bf16")
	base := Matmul{Gen: v4, DType: bf16, M: 4096, K: 4096, N: 4096, BM: 2048, BK: 2048, BN: 2048, Epilogue: "none"}
	err := base.Check()
	if err == nil || !strings.Contains(err.Error(), "2×(2048×2048 + 2048×2048)×2 B") || !strings.Contains(err.Error(), "= 64 MiB") || !strings.Contains(err.Error(), "16 MiB of VMEM") {
		t.Errorf("got %v, want the VMEM arithmetic (64 MiB against 16 MiB)", err)
	}
	for _, c := range []struct {
		mod  func(*Matmul)
		want string
	}{
		{func(p *Matmul) { p.BM = 100 }, "multiple of 8"},
		{func(p *Matmul) { p.BK = 192 }, "bk is 192"},
		{func(p *Matmul) { p.DType, p.Gen.PeakInt8 = dtype(t, "int8"), 0 }, "no published int8 rate"},
		{func(p *Matmul) { p.Epilogue = "gelu" }, "unknown epilogue"},
		{func(p *Matmul) { p.BM, p.BK, p.BN, p.M = 8, 128, 128, 1<<20 }, "steps"},
		{func(p *Matmul) { p.BK = 0 }, "bk is 0"},
	} {
		p := base
		p.BM, p.BK, p.BN = 256, 256, 256
		c.mod(&p)
		if err := p.Check(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("got %v, want %q", err, c.want)
		}
	}
	// a size that is not positive is named, so that the cell marks its own line
	p := base
	p.BK = 0
	var ce *CheckError
	if err := p.Check(); !errors.As(err, &ce) || ce.Field != "bk" {
		t.Errorf("bk: 0 gave %v, want the field bk", err)
	}
}

func TestCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Simulate(ctx, Matmul{Gen: gen(t, "v5e"), DType: dtype(t, "bf16"), M: 128, K: 128, N: 128, BM: 128, BK: 128, BN: 128, Epilogue: "none"}, nil)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("got %v, want context.Canceled", err)
	}
}

// Compute-bound, f32 (three bf16 passes) takes about three times bf16's time; int8's MXU passes take
// half of bf16's on v5e (394 against 197 TOP/s), but its int32 output blocks are twice bf16's, and
// their copies out now stall the pipeline at each block's end, so it takes a little over half the time.
// The bytes copied in follow the element size.
func TestDTypes(t *testing.T) {
	v5e := gen(t, "v5e")
	run := func(d string) Result {
		return simulate(t, Matmul{Gen: v5e, DType: dtype(t, d), M: 4096, K: 4096, N: 4096, BM: 512, BK: 1024, BN: 1024, Epilogue: "none"})
	}
	bf16, f32, int8 := run("bf16"), run("f32"), run("int8")
	if r := f32.Seconds / bf16.Seconds; r < 2.8 || r > 3.2 {
		t.Errorf("f32 takes %.2f× bf16's time, want about 3", r)
	}
	if r := int8.Seconds / bf16.Seconds; r < 0.5 || r > 0.7 {
		t.Errorf("int8 takes %.2f× bf16's time, want a little over a half", r)
	}
	for name, r := range map[string]Result{"bf16": bf16, "f32": f32, "int8": int8} {
		if r.Utilisation < 0.75 || r.Utilisation > 1 {
			t.Errorf("%s: utilisation %.3f of its own peak, want 0.75 to 1", name, r.Utilisation)
		}
	}
	if int8.VMEMToHBM != 2*bf16.VMEMToHBM {
		t.Errorf("VMEM→HBM bytes int8 %d, bf16 %d: want int32 blocks twice bf16's", int8.VMEMToHBM, bf16.VMEMToHBM)
	}
	if f32.HBMToVMEM != 2*bf16.HBMToVMEM || 2*int8.HBMToVMEM != bf16.HBMToVMEM {
		t.Errorf("HBM→VMEM bytes bf16 %d, f32 %d, int8 %d: want 2:4:1 by element size", bf16.HBMToVMEM, f32.HBMToVMEM, int8.HBMToVMEM)
	}
}
