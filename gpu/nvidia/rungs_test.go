package nvidia

import (
	"context"
	"fmt"
	"os"
	"testing"
)

// CI checks that rungs.gen.go is what `go generate ./gpu/nvidia` makes with ptxas now: where ptxas
// is missing (a laptop) or another release than the one that made it, it skips saying so; in CI
// (CI=true, where .ci/run unpacks CUDA 12.4's) both fail.
func TestRungResourcesAreCurrent(t *testing.T) {
	px := requirePtxas(t)
	if px.Version != RungPtxasVersion() {
		msg := fmt.Sprintf("ptxas %s (%s) is not %s, which made rungs.gen.go", px.Version, px.Path, RungPtxasVersion())
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip("skipping: " + msg)
	}
	want, err := GenerateRungResources(context.Background(), rungTools(px, LookNvdisasm()))
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("rungs.gen.go")
	if err != nil || string(got) != string(want) {
		t.Errorf("rungs.gen.go is stale or missing (%v): run go generate ./gpu/nvidia", err)
	}
}

// The recorded sm_90 registers are the ones Nsight Compute measured on an H100 (Kernel.Registers),
// up to ptxas's allocation unit of 8 per thread (the driver's own ptxas is another release), and
// every rung's entry has a record for every architecture whose PTX holds it: this needs no ptxas.
func TestRungResourcesMatchTheH100s(t *testing.T) {
	checked := 0
	for _, k := range Kernels() {
		if k.Registers == 0 || k.Entry == "" {
			continue
		}
		r, ok := RungResources(k.Entry, "9.0")
		if !ok {
			t.Errorf("%s: no record for 9.0", k.Entry)
			continue
		}
		checked++
		if got, want := (r.Registers+7)/8, (k.Registers+7)/8; got != want {
			t.Errorf("%s: %d registers recorded for sm_90, Nsight measured %d", k.Entry, r.Registers, k.Registers)
		}
	}
	if checked == 0 {
		t.Fatal("no kernel of the table has measured registers")
	}
	if r, _ := RungResources("cuda_mma_warptile", "9.0"); r.SharedBytes != 49152 || r.Arch != "sm_90" {
		t.Errorf("cuda_mma_warptile on 9.0: %+v, want 49152 bytes of static shared memory for sm_90", r)
	}
	for _, e := range Entries() {
		for _, cc := range RungArchs {
			ptxArch, _ := BestPTXArch(cc)
			if e.Source == "hopper.cu" {
				ptxArch = 90 // compute_90a, for sm_90 only
			}
			_, ok := RungResources(e.Entry, fmt.Sprintf("%d.%d", cc/10, cc%10))
			if want := ptxArch >= e.MinCC && (e.Source == "matmul.cu" || cc == 90); ok != want {
				t.Errorf("%s on sm_%d (compute_%d PTX): recorded %v, want %v", e.Entry, cc, ptxArch, ok, want)
			}
		}
	}
}

// An architecture outside RungArchs, or a capability that is no number, has no record.
func TestRungResourcesUnknown(t *testing.T) {
	for _, cc := range []string{"6.1", "10.0", "", "x"} {
		if r, ok := RungResources("cuda_naive", cc); ok {
			t.Errorf("cuda_naive on %q: got %+v, want none", cc, r)
		}
	}
	if _, ok := RungResources("no_such_kernel", "9.0"); ok {
		t.Error("an unknown entry has a record")
	}
	if r, ok := RungResources("cuda_mma", "7.5"); ok {
		t.Errorf("cuda_mma on a T4 (compute_70 PTX has no mma.sync kernel): got %+v", r)
	}
}
