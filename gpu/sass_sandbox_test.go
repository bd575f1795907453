package gpu

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/gpuplayground/playground/gpu/nvidia"
)

// fakeNvdisasmName is the name that makes this test binary act as nvdisasm (fakeNvdisasm).
const fakeNvdisasmName = "nvdisasm"

// fakeNvdisasm, called otherwise than fakeNvdisasmName, refuses the cubin as nvdisasm refuses one;
// otherwise, run as a compile worker runs nvdisasm, it tries to read secret.txt beside itself and to
// write out.txt in the folder above its own, and lists one function named after what it could and
// its user, with one instruction on cell.cu's line 1.
func fakeNvdisasm() {
	exe, _ := filepath.Abs(os.Args[0])
	if filepath.Base(exe) != fakeNvdisasmName {
		fmt.Fprintln(os.Stderr, "nvdisasm fatal   : refused for the test")
		os.Exit(1)
	}
	outcome := func(err error) string {
		if err != nil {
			return "denied"
		}
		return "ok"
	}
	secret, err := os.ReadFile(filepath.Join(filepath.Dir(exe), "secret.txt"))
	read := outcome(err)
	if err == nil {
		read = "read:" + strings.TrimSpace(string(secret))
	}
	wrote := outcome(os.WriteFile(filepath.Join(filepath.Dir(filepath.Dir(exe)), "out.txt"), []byte("x"), 0o644))
	fmt.Printf("\t.section\t.text.uid=%d;secret=%s;write=%s,\"ax\",@progbits\n", os.Geteuid(), read, wrote)
	fmt.Println("\t//## File \"cell.cu\", line 1")
	fmt.Println("        /*0000*/                   EXIT ;")
}

// nvdisasm runs inside the compile worker's confinement, after ptxas: an nvdisasm in its place (a
// copy of this binary, named by nvidia.NvdisasmEnv) cannot read a secret planted beside it nor write
// outside its folder (with Landlock), and runs as nobody under root; what it lists comes back as SASS.
func TestNvdisasmRunsConfined(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the compiler is confined on Linux only")
	}
	needNVRTC(t)
	fakePtxasIn(t, fakePtxasName)
	root := fakeToolIn(t, fakeNvdisasmName, nvidia.NvdisasmEnv)
	if err := os.WriteFile(filepath.Join(root, "bin", "secret.txt"), []byte("TOP-SECRET-77cd"), 0o644); err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	_ = os.Chmod(tmp, 0o755)
	t.Setenv("TMPDIR", tmp)
	c, _ := realCompiler(t)
	got, err := c.Disassemble(context.Background(), `extern "C" __global__ void twice(float* x) { x[threadIdx.x] *= 2; }`, "ok.cu", "80", 90)
	if err != nil || !strings.Contains(got.PTX, ".entry twice(") {
		t.Fatalf("got %v and %.200q, want PTX with entry twice", err, got.PTX)
	}
	if got.SASS == nil || len(got.SASS.Functions) != 1 || got.SASS.Arch != "sm_90" {
		t.Fatalf("SASS %+v (%q), want the fake nvdisasm's one function", got.SASS, got.SASSError)
	}
	report := got.SASS.Functions[0].Name
	t.Logf("the fake nvdisasm saw: %s", report)
	if os.Geteuid() == 0 && !strings.Contains(report, fmt.Sprintf("uid=%d;", nobody)) {
		t.Errorf("nvdisasm started by a root server: %s, want uid=%d (nobody)", report, nobody)
	}
	if note := sandboxNote(); note != "" {
		t.Logf("no Landlock here (%s): the denials are not checked", note)
		return
	}
	if !strings.HasSuffix(report, ";secret=denied;write=denied") {
		t.Errorf("the fake nvdisasm saw %s, want secret=denied and write=denied", report)
	}
	if _, err := os.Stat(filepath.Join(root, "out.txt")); err == nil {
		t.Errorf("nvdisasm wrote outside its folder: %s", report)
	}
}

// The real ptxas and nvdisasm (CUDA 12.4's; in CI they must be there) work inside the confinement:
// the SASS of a kernel compiled with line information has its global load on the source's line 2.
func TestDisassembleThroughTheRealWorker(t *testing.T) {
	needNVRTC(t)
	if nvidia.LookPtxas() == "" || nvidia.LookNvdisasm() == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("ptxas and nvdisasm are required in CI (.ci/run unpacks CUDA 12.4's)")
		}
		t.Skip("skipping: no ptxas or no nvdisasm here")
	}
	c, _ := realCompiler(t)
	src := "extern \"C\" __global__ void twice(float* x) {\n  float v = x[threadIdx.x];\n  x[threadIdx.x] = v * 2;\n}\n"
	got, err := c.Disassemble(context.Background(), src, "cell.cu", "80", 90)
	if err != nil {
		t.Fatal(err)
	}
	if got.SASS == nil || len(got.SASS.Functions) != 1 {
		t.Fatalf("SASS %+v, error %q; want one function", got.SASS, got.SASSError)
	}
	var loads []string
	for _, i := range got.SASS.Functions[0].Instructions {
		if strings.HasPrefix(i.Text, "LDG") {
			loads = append(loads, fmt.Sprintf("%s:%d", filepath.Base(i.File), i.Line))
		}
	}
	if len(loads) != 1 || loads[0] != "cell.cu:2" {
		t.Errorf("global loads at %v, want one at cell.cu:2", loads)
	}
	if len(got.Resources) != 1 || got.Resources[0].Registers == 0 {
		t.Errorf("resources %+v (%q), want ptxas's report for sm_90 too", got.Resources, got.ResourcesError)
	}
}

// An nvdisasm that refuses the cubin leaves the compile its PTX and ptxas's report, and says why
// there is no SASS.
func TestDisassembleNvdisasmRefuses(t *testing.T) {
	needNVRTC(t)
	fakePtxasIn(t, fakePtxasName)
	fakeToolIn(t, fakeNvdisasmName+"-refusing", nvidia.NvdisasmEnv)
	c, _ := realCompiler(t)
	got, err := c.Disassemble(context.Background(), `extern "C" __global__ void twice(float* x) { x[threadIdx.x] *= 2; }`, "ok.cu", "80", 90)
	if err != nil || !strings.Contains(got.PTX, ".entry twice(") {
		t.Fatalf("got %v and %.200q, want the PTX", err, got.PTX)
	}
	if got.SASS != nil || !strings.Contains(got.SASSError, "nvdisasm -g: exit status 1") || !strings.Contains(got.SASSError, "refused for the test") {
		t.Errorf("got SASS %+v, error %q; want none and nvdisasm's message", got.SASS, got.SASSError)
	}
	if len(got.Resources) != 1 || got.Resources[0].Registers != 7 {
		t.Errorf("resources %+v (%q), want the fake ptxas's report", got.Resources, got.ResourcesError)
	}
}

// A compile worker's environment names the ptxas and nvdisasm the server was told to use, and
// nothing else of the server's.
func TestCompileEnvNamesTheTools(t *testing.T) {
	t.Setenv(nvidia.PtxasEnv, "/x/ptxas")
	t.Setenv(nvidia.NvdisasmEnv, "/x/nvdisasm")
	t.Setenv("PLAYGROUND_TEST_SECRET", "s3cret")
	env := strings.Join(compileEnv(), "\n")
	for _, want := range []string{nvidia.PtxasEnv + "=/x/ptxas", nvidia.NvdisasmEnv + "=/x/nvdisasm"} {
		if !strings.Contains(env, want) {
			t.Errorf("the compile worker's environment lacks %s:\n%s", want, env)
		}
	}
	if strings.Contains(env, "s3cret") {
		t.Errorf("the compile worker's environment has the server's other variables:\n%s", env)
	}
}

// A compile that asks for the SASS has DisassembleTimeout more than a compile's limit, for ptxas and
// nvdisasm after the compiler.
func TestDisassembleHasALongerLimit(t *testing.T) {
	c, clk := fakeCompiler(t)
	errc := make(chan error, 1)
	go func() {
		_, err := c.Disassemble(context.Background(), "anything", "cell.cu", "80", 90)
		errc <- err
	}()
	clk.waitTimers(t, 1)
	if clk.Advance(CompileTimeout + DisassembleTimeout - time.Nanosecond) {
		t.Fatal("the limit fired before it had passed")
	}
	if !clk.Advance(time.Nanosecond) {
		t.Fatal("the limit did not fire when it had passed")
	}
	want := &CompileTimeoutError{Limit: CompileTimeout + DisassembleTimeout}
	if err := await(t, errc); err == nil || err.Error() != want.Error() {
		t.Errorf("got %v, want %v", err, want)
	}
}
