package vgpurun

import (
	"bytes"
	"context"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/gpuplayground/playground/gpumodel"
)

// A seeded draw kept by the cache comes back as the draw itself: the same a and b (shared), A and
// B's bytes in buffers of the launch's own (a kernel's writes to one never reach the next), and
// the generator where the draw left it, so what the launch draws next is what it drew the first
// time. A draw without a seed is not kept; a draw beyond the cache's bytes drops the oldest.
func TestSeededDrawKept(t *testing.T) {
	c := inputCache{budget: 2*4*8*8 + 2*2*8*8} // a float32 draw and a bf16 draw of 8×8
	draw := func(seed uint64, precision string) (*launchInputs, uint64) {
		t.Helper()
		src := Request{Seed: seed}.source()
		in := c.draw(seed, src, rand.New(src), 5, 8, precision)
		return in, src.Uint64()
	}
	for _, precision := range []string{"float32", "bf16"} {
		first, next := draw(7, precision)
		again, nextAgain := draw(7, precision)
		if &again.a[0] != &first.a[0] || &again.b[0] != &first.b[0] {
			t.Errorf("%s: a and b drawn again, want the kept ones", precision)
		}
		if again.A == first.A || &again.A.Data[0] == &first.A.Data[0] || &again.B.Data[0] == &first.B.Data[0] || again.C == first.C {
			t.Errorf("%s: a launch got another launch's buffer", precision)
		}
		if !bytes.Equal(again.A.Data, first.A.Data) || !bytes.Equal(again.B.Data, first.B.Data) || again.A.Shape != first.A.Shape || again.elem != first.elem {
			t.Errorf("%s: the kept A and B differ from the draw's", precision)
		}
		if nextAgain != next {
			t.Errorf("%s: the generator after the kept draw gives %d, after the draw %d", precision, nextAgain, next)
		}
		clear(again.A.Data)
		if third, _ := draw(7, precision); !bytes.Equal(third.A.Data, first.A.Data) {
			t.Errorf("%s: a launch's write to A reached the next launch's", precision)
		}
	}
	draw(0, "float32")
	if len(c.draws) != 2 {
		t.Errorf("kept %d draws after two seeded ones and an unseeded one, want 2", len(c.draws))
	}
	draw(8, "bf16")
	if len(c.draws) != 2 || c.draws[0].key.seed != 8 || c.draws[1].key.precision != "bf16" {
		t.Errorf("after a third seed kept %+v, want seed 8 and the bf16 draw of seed 7", c.draws)
	}
	draw(9, "float32")
	if len(c.draws) != 2 || c.draws[0].key.seed != 9 || c.draws[1].key.seed != 8 {
		t.Errorf("after a float32 draw kept %+v, want it and the bf16 draw of seed 8", c.draws)
	}
}

// A seeded sampled launch whose inputs the cache kept counts, checks and models bit for bit as the
// launch that drew them: float32 (cuda-coalesced) and bf16 (cuda-mma) at MaxN + 128.
func TestSeededInputsKept(t *testing.T) {
	for _, kernel := range []string{"cuda-coalesced", "cuda-mma"} {
		req := Request{Kernel: kernel, N: MaxN + 128, DType: "float32", GPU: gpumodel.GPUs[0], Seed: 3}
		seededInputs.mu.Lock()
		seededInputs.draws = nil
		seededInputs.mu.Unlock()
		first, err := Run(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		if len(seededInputs.draws) != 1 || seededInputs.draws[0].key.n != req.N {
			t.Fatalf("%s: the draw was not kept", kernel)
		}
		keptA := &seededInputs.draws[0].a[0]
		kept, err := Run(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		if len(seededInputs.draws) != 1 || &seededInputs.draws[0].a[0] != keptA {
			t.Fatalf("%s: the second launch drew its inputs again, want the kept ones", kernel) // (a draw replaces the kept one)
		}
		if !first.Sampled || first.Checked == 0 || first.Wave.Why != "" {
			t.Fatalf("%s: sampled %v, checked %d, wave estimate %q", kernel, first.Sampled, first.Checked, first.Wave.Why)
		}
		first.SASS, kept.SASS = nil, nil // functions (OwnSASS): SASSInstructions is what they gave
		kept.EmulationSeconds = first.EmulationSeconds
		if !reflect.DeepEqual(kept, first) {
			t.Errorf("%s (%s): from kept inputs %d warp instructions, error %g over %d entries, model %+v; drawn %d, %g over %d, %+v",
				kernel, first.Precision, kept.Counts.WarpInstructions, kept.RelError, kept.Checked, kept.Model,
				first.Counts.WarpInstructions, first.RelError, first.Checked, first.Model)
		}
	}
}
