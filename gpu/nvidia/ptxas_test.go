package nvidia

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// requirePtxas finds ptxas; in CI (CI=true, where .ci/run unpacks CUDA 12.4's) a missing one fails
// the test, elsewhere it skips.
func requirePtxas(t *testing.T) *Ptxas {
	t.Helper()
	p, err := sharedPtxas()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("ptxas is required in CI: %v", err)
		}
		t.Skipf("skipping: %v", err)
	}
	return p
}

// ptxas for sm_90 allocates the table's kernels (the embedded compute_80 PTX) the registers Nsight
// Compute measured for them on an H100 (Kernel.Registers; seen: all equal but cuda_regblock, 109
// against 111), and reports their static shared memory as the PTX declares it. Where ptxas is the
// release that made rungs.gen.go, TestRungResourcesAreCurrent shows that its sm_90 records are what
// this ptxas reports of that PTX and TestRungResourcesMatchTheH100s checks those records against
// the H100's, so the test runs ptxas only for another release (1.3 CPU s).
func TestPtxasRegistersMatchTheH100s(t *testing.T) {
	p := requirePtxas(t)
	if p.Version == RungPtxasVersion() {
		t.Skipf("ptxas %s made rungs.gen.go: TestRungResourcesAreCurrent and TestRungResourcesMatchTheH100s check this run", p.Version)
	}
	ptx, err := fs.ReadFile(PTX, PTXName("matmul.cu", 80))
	if err != nil {
		t.Fatal(err)
	}
	res, err := p.Resources(context.Background(), string(ptx), 90)
	if err != nil {
		t.Fatal(err)
	}
	byEntry := map[string]EntryResources{}
	for _, r := range res {
		if r.Arch != "sm_90" {
			t.Errorf("%s: arch %q, want sm_90", r.Entry, r.Arch)
		}
		byEntry[r.Entry] = r
	}
	checked := 0
	for _, k := range Kernels() {
		if k.Registers == 0 || k.BLAS != nil {
			continue
		}
		r, ok := byEntry[k.Entry]
		if !ok {
			t.Errorf("ptxas reported nothing for %s", k.Entry)
			continue
		}
		checked++
		// The H100's driver compiled with its own ptxas (another version): equal after rounding up to
		// the allocation unit (256 registers a warp, 8 a thread), hence the same occupancy.
		if (r.Registers+7)/8 != (k.Registers+7)/8 {
			t.Errorf("%s: ptxas allocated %d registers, Nsight measured %d", k.Entry, r.Registers, k.Registers)
		}
	}
	if checked == 0 {
		t.Fatal("no kernel of the table has measured registers")
	}
	if r := byEntry["cuda_mma_warptile"]; r.SharedBytes != 49152 {
		t.Errorf("cuda_mma_warptile: %d bytes of static shared memory, want 49152", r.SharedBytes)
	}
}

// A PTX ptxas refuses is an error with its message; so is an architecture it does not know.
func TestPtxasErrors(t *testing.T) {
	p := requirePtxas(t)
	bad := ".version 7.8\n.target sm_80\n.address_size 64\n.visible .entry k() { bogus.instruction; ret; }\n"
	if _, err := p.Resources(context.Background(), bad, 90); err == nil || !strings.Contains(err.Error(), "bogus") {
		t.Errorf("bad PTX: got %v, want ptxas's error naming it", err)
	}
	good := ".version 7.8\n.target sm_80\n.address_size 64\n.visible .entry k() { ret; }\n"
	if _, err := p.Resources(context.Background(), good, 1000); err == nil || !strings.Contains(err.Error(), "sm_1000") {
		t.Errorf("sm_1000: got %v, want an error naming it", err)
	}
}

// The report's lines: an entry's spills, stack, registers and shared memory; a device function's
// properties (not inlined) are not the kernel's.
func TestParsePtxasReport(t *testing.T) {
	report := `ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'big' for 'sm_80'
ptxas info    : Function properties for helper
    8 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Function properties for big
    96 bytes stack frame, 92 bytes spill stores, 88 bytes spill loads
ptxas info    : Used 32 registers, 96 bytes cumulative stack size, 4096 bytes smem, 360 bytes cmem[0]
ptxas info    : Compiling entry function 'small' for 'sm_80'
ptxas info    : Function properties for small
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 8 registers, 360 bytes cmem[0]
`
	got, err := ParsePtxasReport(report)
	if err != nil {
		t.Fatal(err)
	}
	want := []EntryResources{
		{Entry: "big", Arch: "sm_80", Registers: 32, SharedBytes: 4096, StackBytes: 96, SpillStores: 92, SpillLoads: 88},
		{Entry: "small", Arch: "sm_80", Registers: 8},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
	if _, err := ParsePtxasReport("ptxas info    : 0 bytes gmem\n"); err == nil {
		t.Error("a report without entries parsed")
	}
}

// PtxasEnv names the ptxas looked for first; LookPtxas finds it without running it, and PtxasAt
// refuses a program whose --version names no release.
func TestPtxasEnvFirst(t *testing.T) {
	fake := filepath.Join(t.TempDir(), "ptxas")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\necho not ptxas\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv(PtxasEnv, fake)
	if got := PtxasPaths()[0]; got != fake {
		t.Errorf("PtxasPaths()[0] = %q, want %q", got, fake)
	}
	if got := LookPtxas(); got != fake {
		t.Errorf("LookPtxas() = %q, want %q", got, fake)
	}
	if _, err := PtxasAt(fake); err == nil || !strings.Contains(err.Error(), "no version") {
		t.Errorf("PtxasAt: got %v, want no version", err)
	}
}
