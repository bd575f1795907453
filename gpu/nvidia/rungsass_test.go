package nvidia

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// CI checks that rungsass.gen.go is what `go generate ./gpu/nvidia` makes with ptxas and nvdisasm
// now: where either is missing (a laptop) or ptxas is another release, it skips saying so; in CI
// (CI=true, where .ci/run unpacks CUDA 12.4's) each of those fails.
func TestRungSASSIsCurrent(t *testing.T) {
	px, nvd := requirePtxas(t), requireNvdisasm(t)
	if px.Version != rungSASSPtxasVersion {
		msg := fmt.Sprintf("ptxas %s (%s) is not %s, which made rungsass.gen.go", px.Version, px.Path, rungSASSPtxasVersion)
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip("skipping: " + msg)
	}
	want, err := GenerateRungSASS(context.Background(), rungTools(px, nvd))
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("rungsass.gen.go")
	if err != nil || string(got) != string(want) {
		t.Errorf("rungsass.gen.go is stale or missing (%v): run go generate ./gpu/nvidia", err)
	}
}

// The recorded counts need no tools: each architecture of RungSASSArchs has one count per line of
// the compute_80 PTX, none on a line that is no instruction, and each entry's SASS for one run of
// its code (each line's count over its block's copies) is from half to three times its PTX
// instructions (ptxas fuses and splits; a wmma.load becomes several loads: cuda_wmma's 2.2–2.3×,
// where Nsight Compute counted 3.2× the PTX's executions); an architecture outside RungSASSArchs
// has none.
func TestRungSASSPerLine(t *testing.T) {
	src, err := fs.ReadFile(PTX, PTXName("matmul.cu", rungSASSPTXArch))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(src), "\n")
	for _, cc := range RungSASSArchs {
		cap := fmt.Sprintf("%d.%d", cc/10, cc%10)
		perLine, ok := RungSASSPerLine(cap)
		if !ok {
			t.Fatalf("%s: no record", cap)
		}
		ptx, sass := map[string]int{}, map[string]float64{}
		entry := ""
		for i, l := range lines {
			s := strings.TrimSpace(l)
			if f := strings.Fields(s); len(f) >= 3 && f[0] == ".visible" && f[1] == ".entry" {
				entry = strings.TrimSuffix(f[2], "(")
			}
			n := perLine(i + 1)
			if n > 0 && (s == "" || !ptxInstructionLine(s)) {
				t.Errorf("%s: line %d (%q) is no instruction, %g SASS recorded", cap, i+1, s, n)
			}
			if s != "" && ptxInstructionLine(s) {
				ptx[entry]++
			}
			sass[entry] += n
		}
		if perLine(0) != 0 || perLine(len(lines)+1) != 0 {
			t.Errorf("%s: lines outside the PTX have counts", cap)
		}
		for e, n := range ptx {
			if e == "" {
				continue
			}
			if r := float64(sass[e]) / float64(n); r < 0.5 || r > 3 {
				t.Errorf("%s: %s has %.0f SASS instructions a run for %d PTX (×%.2f)", cap, e, sass[e], n, r)
			}
		}
		t.Logf("%s: %d entries", cap, len(ptx))
	}
	for _, cc := range []string{"7.5", "7.0", "10.0", "x"} {
		if _, ok := RungSASSPerLine(cc); ok {
			t.Errorf("%s: a record for an architecture that does not load the compute_80 PTX", cc)
		}
	}
}

// WithLineTable puts a ".loc 1 N 0" naming the instruction's own line before each instruction, and
// nothing before directives, labels and braces.
func TestWithLineTable(t *testing.T) {
	ptx := ".version 8.4\n.target sm_80\n.address_size 64\n.visible .entry k()\n{\n\t.reg .b32 %r<2>;\n$L1:\n\tmov.u32 %r1, 1;\n\t@%p1 bra $L1;\n\tret;\n}"
	want := ".version 8.4\n.target sm_80\n.address_size 64\n.file 1 \"matmul.ptx\"\n.visible .entry k()\n{\n\t.reg .b32 %r<2>;\n$L1:\n" +
		"\t.loc 1 8 0\n\tmov.u32 %r1, 1;\n\t.loc 1 9 0\n\t@%p1 bra $L1;\n\t.loc 1 10 0\n\tret;\n}"
	if got := WithLineTable(ptx); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

// Every entry point of the table and of the tile search has SASS attributed to its PTX lines on
// every architecture that loads the compute_80 PTX: a disassembly cut to a cell's JSON budget
// (MaxSASSBytes) once left out the kernels listed after the largest ones, whose issue term the
// model then priced at zero.
func TestRungSASSCoversEveryEntry(t *testing.T) {
	ptx, err := PTX.ReadFile(PTXName("matmul.cu", 80))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(ptx), "\n")
	for _, cc := range []string{"8.0", "9.0"} {
		per, ok := RungSASSPerLine(cc)
		if !ok {
			t.Fatalf("no SASS for %s", cc)
		}
		sums, entry := map[string]float64{}, ""
		for i, l := range lines {
			if f := strings.Fields(l); strings.Contains(l, ".entry ") && len(f) > 0 {
				entry = strings.TrimSuffix(f[len(f)-1], "(")
			}
			sums[entry] += per(i + 1)
		}
		for _, e := range Entries() {
			if e.MinCC <= 80 && sums[e.Entry] == 0 {
				t.Errorf("sm_%s: no SASS attributed to %s", strings.ReplaceAll(cc, ".", ""), e.Entry)
			}
		}
	}
}

// A RungTools assembles the compute_80 PTX's line table once per architecture, with -v and
// -lineinfo: GenerateRungResources and GenerateRungSASS given the same tools share that run, its
// report and its cubin (checked with a stand-in ptxas that logs its runs).
func TestRungToolsAssembleOncePerArch(t *testing.T) {
	dir := t.TempDir()
	runs := filepath.Join(dir, "runs")
	script := "#!/bin/sh\necho \"$@\" >> " + runs + "\necho cubin > kernel.cubin\n" +
		"echo \"ptxas info    : Compiling entry function 'k' for 'sm_80'\"\necho 'ptxas info    : Used 8 registers'\n"
	if err := os.WriteFile(filepath.Join(dir, "ptxas"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	tools := &RungTools{Ptxas: &Ptxas{Path: filepath.Join(dir, "ptxas"), Version: "12.4"}}
	for range 2 {
		cubin, res, err := tools.lined(context.Background(), 80)
		if err != nil || string(cubin) != "cubin\n" || len(res) != 1 || res[0].Entry != "k" || res[0].Registers != 8 {
			t.Fatalf("got cubin %q, report %+v, %v; want the stand-in's", cubin, res, err)
		}
	}
	log, err := os.ReadFile(runs)
	if got := strings.Split(strings.TrimSpace(string(log)), "\n"); err != nil || len(got) != 1 || !strings.Contains(got[0], "-v -lineinfo") {
		t.Errorf("ptxas ran %q (%v), want once, with -v -lineinfo", log, err)
	}
}
