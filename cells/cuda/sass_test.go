package cuda

import (
	"context"
	"errors"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/gpuplayground/playground/cells"
	"github.com/gpuplayground/playground/cells/cellstest"
	"github.com/gpuplayground/playground/gpu"
	kcuda "github.com/gpuplayground/playground/gpu/nvidia"
	"github.com/gpuplayground/playground/harness"
	pt "github.com/gpuplayground/playground/problems/problemstest"
)

// showSASSOn runs the cell's Show SASS with g as the server's GPU.
func showSASSOn(t *testing.T, cell string, g cells.GPU) (*cellstest.Recorder, error) {
	t.Helper()
	k := New(cells.Env{Kernels: gpuAvailable(), Limits: harness.DefaultLimits(), GPU: g}).(cells.Actioner)
	var act *cells.Action
	for _, a := range k.Actions() {
		if a.Name == "sass" {
			act = &a
		}
	}
	if act == nil || act.Label != "Show SASS" {
		t.Fatalf("the cuda kind's actions %+v have no Show SASS", k.Actions())
	}
	r, err := act.Parse(cells.Cell{Source: cell})
	if err != nil {
		t.Fatal(err)
	}
	rec := &cellstest.Recorder{}
	return rec, r.Run(context.Background(), rec)
}

// Show SASS compiles the cell as the server does (a confined worker, this test binary, runs the
// compiler, ptxas and nvdisasm) and shows each line of the kernel with the SASS instructions it
// became, numbered as the cell's lines: the tiled transpose's __syncthreads() (the cell's line 14)
// has the barrier; its staging line loads from global and stores to shared memory; the table's
// counts add up to the listing's.
func TestShowSASSPerLine(t *testing.T) {
	rec, err := showSASSOn(t, tiledTransposeCell+pt.TiledTranspose, sassMachine(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Texts) != 1 || !strings.Contains(rec.Texts[0].Title, "sm_90") {
		t.Fatalf("texts %+v, want one SASS listing for sm_90", rec.Texts)
	}
	body := rec.Texts[0].Body
	t.Logf("%s", body)
	if !regexp.MustCompile(`(?m)^line 14 \(\d+ instructions?\): __syncthreads\(\);\n(\t.*\n)*?\t/\*[0-9a-f]{4}\*/ BAR\.SYNC`).MatchString(body) {
		t.Errorf("the listing has no line 14 with its BAR.SYNC")
	}
	total := regexp.MustCompile(`(?m)^// k: (\d+) instructions$`).FindStringSubmatch(body)
	if total == nil {
		t.Fatal("the listing does not say how many instructions k has")
	}
	sum, byLine := 0, map[string][]any{}
	for _, r := range rec.RowsOf("sass") {
		sum += r.Values[1].(int)
		byLine[r.Values[0].(string)] = r.Values
	}
	if want, _ := strconv.Atoi(total[1]); sum != want {
		t.Errorf("the table counts %d instructions, the listing %d", sum, want)
	}
	if got := byLine["line 14"]; len(got) != 3 || !strings.Contains(got[2].(string), "BAR ×1") {
		t.Errorf("line 14: %v, want BAR ×1 among its opcodes", got)
	}
	if got, _ := byLine["line 13"][2].(string); !strings.Contains(got, "LDG") || !strings.Contains(got, "STS") {
		t.Errorf("line 13 (tile[…] = in[…]): %q, want LDG and STS among its opcodes", got)
	}
	if len(rec.Notes) == 0 || !strings.Contains(rec.Notes[0].Message, "registers: ptxas sm_90") {
		t.Errorf("notes %+v, want ptxas's registers for sm_90", rec.Notes)
	}
}

// sassMachine is a server's GPU without a device whose compile worker (this test binary) has NVRTC,
// ptxas and nvdisasm; in CI a missing one fails the test, elsewhere it skips.
func sassMachine(t *testing.T) *keptCompiles {
	t.Helper()
	needPtxas(t)
	if kcuda.LookNvdisasm() == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("nvdisasm is required in CI (.ci/run unpacks CUDA 12.4's)")
		}
		t.Skip("skipping: no nvdisasm")
	}
	if _, err := kcuda.LoadNVRTC(); err != nil {
		t.Skipf("skipping: no NVRTC (%v)", err)
	}
	return workerMachine(t)
}

// A cell whose GPU is older than the compile's architecture (a T4, sm_75, where kernels compile for
// compute_80) is compiled for its own, so that ptxas can assemble it: its SASS is for sm_75.
func TestShowSASSForAnOlderGPU(t *testing.T) {
	rec, err := showSASSOn(t, "gpu: T4\n"+tiledTransposeCell+pt.TiledTranspose, sassMachine(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Texts) != 1 || !strings.Contains(rec.Texts[0].Title, "the T4 (sm_75;") || !strings.Contains(rec.Texts[0].Body, "BAR.SYNC") {
		t.Errorf("texts %+v, want the T4's sm_75 SASS with its barrier", rec.Texts)
	}
	if len(rec.Notes) == 0 || !strings.Contains(rec.Notes[0].Message, "registers: ptxas sm_75") {
		t.Errorf("notes %+v, want ptxas's registers for sm_75", rec.Notes)
	}
}

// disGPU is a testGPU whose compile answers Show SASS with sass, or err.
type disGPU struct {
	testGPU
	out gpu.Compiled
	err error
}

func (g *disGPU) Disassemble(ctx context.Context, src, name, arch string, sm int) (gpu.Compiled, error) {
	return g.out, g.err
}

// Where this server has no nvdisasm (or ptxas), Show SASS fails saying why and what it needs; a GPU
// without the compile worker cannot show SASS; a compile error reads on the cell's own lines.
func TestShowSASSSaysWhyNot(t *testing.T) {
	cell := tiledTransposeCell + pt.TiledTranspose
	_, err := showSASSOn(t, cell, &disGPU{out: gpu.Compiled{PTX: ".entry k(", SASSError: "nvdisasm not found (tried /x/nvdisasm)"}})
	if err == nil || !strings.Contains(err.Error(), "nvdisasm not found (tried /x/nvdisasm)") || !strings.Contains(err.Error(), "Show SASS needs NVIDIA's ptxas and nvdisasm") {
		t.Errorf("no nvdisasm: got %v", err)
	}
	if _, err := showSASSOn(t, cell, &testGPU{}); err == nil || !strings.Contains(err.Error(), "compile worker") {
		t.Errorf("a GPU without the compile worker: got %v", err)
	}
	compileErr := errors.New("nvrtcCompileProgram: NVRTC_ERROR_COMPILATION (6):\ncell.cu(2): error: identifier \"zz\" is undefined\n1 error detected in the compilation of \"cell.cu\".")
	if _, err := showSASSOn(t, cell, &disGPU{err: compileErr}); err == nil || !strings.Contains(err.Error(), "line 9: error: identifier \"zz\"") {
		t.Errorf("a compile error: got %v, want it on the cell's line 9", err)
	}
}

// An opcode is the instruction's operation without predicate or modifiers; the summary names the
// five most frequent, ties by name.
func TestOpcodes(t *testing.T) {
	for text, want := range map[string]string{"@!P0 LDG.E.128 R4, desc[UR4][R2.64]": "LDG", "FFMA R1, R2, R3, R4": "FFMA", "EXIT": "EXIT", "": ""} {
		if got := opcode(text); got != want {
			t.Errorf("opcode(%q) = %q, want %q", text, got, want)
		}
	}
	got := opcodeSummary(map[string]int{"FFMA": 8, "LDG": 4, "IMAD": 4, "S2R": 1, "BRA": 1, "EXIT": 1})
	if want := "FFMA ×8, IMAD ×4, LDG ×4, BRA ×1, EXIT ×1"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
