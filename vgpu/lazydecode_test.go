package vgpu

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// A .func is decoded into every kernel that calls it, so a module of 500 kernels calling one
// function of 2,000 instructions (about 64 KiB of PTX) would decode a million instructions if every
// kernel were decoded when the module is parsed (1.2 GB allocated, measured on the old code). Only
// the kernels launched are decoded: parsing the module and launching one of its kernels allocates
// a small fraction of that.
func TestOnlyLaunchedKernelsAreDecoded(t *testing.T) {
	var b strings.Builder
	b.WriteString(".version 8.4\n.target sm_80\n.address_size 64\n")
	b.WriteString(".visible .func f() { .reg .b32 %r<4>;\n")
	for range 2000 {
		b.WriteString("add.s32 %r1, %r2, %r3;\n")
	}
	b.WriteString("ret; }\n")
	for i := range 500 {
		fmt.Fprintf(&b, ".visible .entry e%d() { call f; ret; }\n", i)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	mod, err := ParseModule(b.String())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Launch(context.Background(), mod, "e7", LaunchConfig{Grid: [3]int{1, 1, 1}, Block: [3]int{32, 1, 1}}); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	if got, limit := after.TotalAlloc-before.TotalAlloc, uint64(100<<20); got > limit {
		t.Errorf("parsing the module and launching one kernel allocated %d MiB, want under %d MiB", got>>20, limit>>20)
	}
	for _, name := range []string{"e0", "e499"} {
		if mod.Function(name).prog != nil {
			t.Errorf("%s was decoded without being launched", name)
		}
	}
}
