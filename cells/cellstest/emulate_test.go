package cellstest

import (
	"context"
	"reflect"
	"testing"

	"github.com/gpuplayground/playground/gpumodel"
	"github.com/gpuplayground/playground/problems"
	"github.com/gpuplayground/playground/vgpu"
	"github.com/gpuplayground/playground/vgpurun"
)

// A launch asked for again gets the first one's result, not a fresh draw (each launch draws its own
// inputs, so a second run's error would differ); another size runs; a traced launch, whose trace is
// its point, always runs. NoGPU with Emulations runs through the memo.
func TestEmulationMemoRunsEachLaunchOnce(t *testing.T) {
	var m EmulationMemo
	g := NoGPU{Emulations: &m}
	req := vgpurun.Request{Kernel: "cuda-naive", N: 16, DType: "float32", GPU: gpumodel.GPUs[0]}
	first, err := g.Emulate(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	again, err := g.Emulate(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if m.Runs() != 1 || again.RelError != first.RelError || again.Counts.ThreadInstructions != first.Counts.ThreadInstructions {
		t.Errorf("%d runs, errors %g and %g: want one run whose result both got", m.Runs(), first.RelError, again.RelError)
	}
	fresh, err := vgpurun.Run(context.Background(), req)
	if err != nil || fresh.RelError == first.RelError {
		t.Errorf("a fresh run's error %g (%v), want other inputs' than %g", fresh.RelError, err, first.RelError)
	}
	req.N = 32
	if _, err := m.Emulate(context.Background(), req); err != nil || m.Runs() != 2 {
		t.Errorf("n=32: %d runs (%v), want 2", m.Runs(), err)
	}
	traced := 0
	req.Trace = func(vgpu.TraceEvent) { traced++ }
	if _, err := m.Emulate(context.Background(), req); err != nil || traced == 0 || m.Runs() != 2 {
		t.Errorf("traced: %d events, %d runs kept (%v); want events, and 2 kept", traced, m.Runs(), err)
	}
}

// The memo's key tells apart requests that differ in any field but Trace (a field added to
// vgpurun.Request fails here until the key has it), and takes a problem by its name
// (problems.Lookup makes a new one each time).
func TestEmulationKeyTellsEveryFieldApart(t *testing.T) {
	var base vgpurun.Request
	for i := range reflect.TypeFor[vgpurun.Request]().NumField() {
		req := base
		f := reflect.ValueOf(&req).Elem().Field(i)
		name := reflect.TypeFor[vgpurun.Request]().Field(i).Name
		switch {
		case name == "Trace":
			continue
		case name == "Problem":
			req.Problem, _ = problems.Lookup("transpose")
		case name == "GPU":
			req.GPU = gpumodel.GPUs[0]
		case name == "Precision":
			req.Precision = problems.Precisions()[1]
		case name == "TensorMaps":
			req.TensorMaps = []vgpurun.TensorMap{{Of: "in"}}
		case f.Kind() == reflect.String:
			f.SetString("x")
		case f.CanInt():
			f.SetInt(3)
		case f.CanUint():
			f.SetUint(3)
		case f.Kind() == reflect.Array && f.Index(0).CanInt():
			f.Index(0).SetInt(3)
		default:
			t.Errorf("field %s: the test cannot change it", name)
			continue
		}
		if emulationKey(req) == emulationKey(base) {
			t.Errorf("two requests differing in %s have the same key", name)
		}
	}
	a, _ := problems.Lookup("transpose")
	b, _ := problems.Lookup("transpose")
	if emulationKey(vgpurun.Request{Problem: a}) != emulationKey(vgpurun.Request{Problem: b}) {
		t.Error("the same problem looked up twice: two keys")
	}
}
