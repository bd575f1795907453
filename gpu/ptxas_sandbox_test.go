package gpu

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/gpuplayground/playground/gpu/nvidia"
)

// fakePtxasName is the name that makes this test binary act as ptxas (fakePtxas): a copy of it is
// put in ptxas's place with nvidia.PtxasEnv.
const fakePtxasName = "ptxas"

// fakePtxas answers --version as ptxas 12.4 does, unless it runs as root (unconfined); called otherwise than fakePtxasName, it refuses
// everything else as ptxas refuses a PTX; otherwise, run as a compile worker runs ptxas, it
// tries to read secret.txt and to write out.txt in the folder above its own, and reports what it
// could, its user and whether it got the PTX, as the name of an entry in a ptxas -v report.
func fakePtxas(args []string) {
	if len(args) > 0 && args[0] == "--version" {
		if os.Geteuid() == 0 {
			fmt.Println("run as root: not confined") // no release: not taken for a ptxas
			return
		}
		fmt.Println("Cuda compilation tools, release 12.4, V12.4.131")
		return
	}
	if filepath.Base(os.Args[0]) != fakePtxasName {
		fmt.Println("ptxas fatal   : refused for the test")
		os.Exit(255)
	}
	outcome := func(err error) string {
		switch {
		case err == nil:
			return "ok"
		case errors.Is(err, fs.ErrPermission):
			return "denied"
		}
		return strings.ReplaceAll(err.Error(), "'", "")
	}
	exe, _ := filepath.Abs(os.Args[0])
	up := filepath.Dir(filepath.Dir(exe))
	secret, err := os.ReadFile(filepath.Join(filepath.Dir(exe), "secret.txt")) // beside the program
	read := outcome(err)
	if err == nil {
		read = "read:" + strings.TrimSpace(string(secret))
	}
	wrote := outcome(os.WriteFile(filepath.Join(up, "out.txt"), []byte("x"), 0o644))
	ptx, _ := os.ReadFile(args[len(args)-1])
	fmt.Printf("ptxas info    : Compiling entry function 'uid=%d secret=%s write=%s ptx=%v' for 'sm_90'\n",
		os.Geteuid(), read, wrote, strings.Contains(string(ptx), ".entry twice("))
	fmt.Println("ptxas info    : Used 7 registers, 0 bytes smem")
}

// ptxas runs inside the compile worker's confinement: a ptxas in its place (a copy of this binary,
// named by nvidia.PtxasEnv) is given the PTX, but cannot read a planted secret beside it that its
// user could read (Landlock grants the program file, not its folder), nor write outside its folder (with Landlock), and runs as nobody when the server is root,
// even for its --version; what it reports comes back with the PTX.
func TestPtxasRunsConfined(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the compiler is confined on Linux only")
	}
	needNVRTC(t)
	root := fakePtxasIn(t, fakePtxasName)
	if err := os.WriteFile(filepath.Join(root, "bin", "secret.txt"), []byte("TOP-SECRET-51ab"), 0o644); err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	_ = os.Chmod(tmp, 0o755)
	t.Setenv("TMPDIR", tmp)
	c, _ := realCompiler(t)
	got, err := c.CompileSass(context.Background(), `extern "C" __global__ void twice(float* x) { x[threadIdx.x] *= 2; }`, "ok.cu", "80", []int{90})
	if err != nil || !strings.Contains(got.PTX, ".entry twice(") {
		t.Fatalf("got %v and %.200q, want PTX with entry twice", err, got.PTX)
	}
	if len(got.Resources) != 1 || got.Resources[0].Registers != 7 || got.Resources[0].Arch != "sm_90" {
		t.Fatalf("resources %+v (%q), want the fake ptxas's one entry", got.Resources, got.ResourcesError)
	}
	report := got.Resources[0].Entry
	t.Logf("the fake ptxas saw: %s", report)
	if !strings.Contains(report, "ptx=true") {
		t.Errorf("ptxas was not given the PTX: %s", report)
	}
	if os.Geteuid() == 0 && !strings.Contains(report, fmt.Sprintf("uid=%d ", nobody)) {
		t.Errorf("ptxas started by a root server: %s, want uid=%d (nobody)", report, nobody)
	}
	if note := sandboxNote(); note != "" {
		t.Logf("no Landlock here (%s): the denials are not checked", note)
		return
	}
	if strings.Contains(report, "TOP-SECRET") {
		t.Errorf("ptxas read the secret planted beside it: %s", report)
	}
	if _, err := os.Stat(filepath.Join(root, "out.txt")); err == nil {
		t.Errorf("ptxas wrote outside its folder: %s", report)
	}
	if !strings.Contains(report, "secret=denied") || !strings.Contains(report, "write=denied") {
		t.Errorf("the fake ptxas saw %s, want secret=denied and write=denied", report)
	}
}

// A ptxas that refuses leaves the compile as it was: its PTX, with no resources and the reason.
func TestCompileSassPtxasRefuses(t *testing.T) {
	needNVRTC(t)
	fakePtxasIn(t, fakePtxasName+"-refusing")
	c, _ := realCompiler(t)
	got, err := c.CompileSass(context.Background(), `extern "C" __global__ void twice(float* x) { x[threadIdx.x] *= 2; }`, "ok.cu", "80", []int{90})
	if err != nil || !strings.Contains(got.PTX, ".entry twice(") {
		t.Fatalf("got %v and %.200q, want PTX with entry twice", err, got.PTX)
	}
	if len(got.Resources) != 0 || !strings.Contains(got.ResourcesError, "refused for the test") {
		t.Errorf("resources %+v, error %q; want none and ptxas's message", got.Resources, got.ResourcesError)
	}
}

// fakePtxasIn copies this test binary to ROOT/bin/name, names it as the ptxas to use
// (nvidia.PtxasEnv), and returns ROOT, a fresh folder that nobody can enter, as can this user.
func fakePtxasIn(t *testing.T, name string) string {
	t.Helper()
	return fakeToolIn(t, name, nvidia.PtxasEnv)
}

// fakeToolIn is fakePtxasIn for the tool that the environment variable env names.
func fakeToolIn(t *testing.T, name, env string) string {
	t.Helper()
	root := t.TempDir()
	for d := root; d != os.TempDir() && d != "/"; d = filepath.Dir(d) {
		_ = os.Chmod(d, 0o755) // so that only Landlock, not the user, keeps nobody out
	}
	exe, err := os.ReadFile(mustExe(t))
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(root, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, name), exe, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv(env, filepath.Join(bin, name))
	return root
}

// A compile whose ptxas outran the compile's time limit after the PTX came keeps the PTX, without
// resources; a timeout before the PTX, another error, or a compile that asked for no ptxas stays the
// compile's error.
func TestPtxasOutranKeepsThePTX(t *testing.T) {
	limit := &CompileTimeoutError{Limit: CompileTimeout}
	got, ok := ptxasOutran(Compiled{PTX: ".entry k("}, limit, []int{90})
	if !ok || got.PTX != ".entry k(" || got.Resources != nil || !strings.Contains(got.ResourcesError, "took too long") {
		t.Errorf("ptxas too slow: got %+v, %v; want the PTX and why there are no resources", got, ok)
	}
	for _, c := range []struct {
		ptx  string
		err  error
		sass []int
	}{
		{"", limit, []int{90}},
		{".entry k(", errors.New("the compiler's process crashed"), []int{90}},
		{".entry k(", limit, nil},
	} {
		if got, ok := ptxasOutran(Compiled{PTX: c.ptx}, c.err, c.sass); ok {
			t.Errorf("%q, %v, sass %v: got %+v, want the compile's error", c.ptx, c.err, c.sass, got)
		}
	}
}

// bounded cuts a string at a rune's start, marking the cut.
func TestBounded(t *testing.T) {
	if got, want := bounded("abc", 3), "abc"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if got, want := bounded("aé", 2), "a…"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// A compile worker asked for sass sends the PTX on a line of its own before it runs ptxas, then the
// Done line with ptxas's report (the PTX is not repeated: a PTX near the line limit would push it over).
func TestCompileWorkerSendsThePTXBeforePtxas(t *testing.T) {
	needNVRTC(t)
	fakePtxasIn(t, fakePtxasName)
	tr := &killOnCleanup{Transport: Exec{Path: mustExe(t), Args: []string{WorkerCommand}}}
	t.Cleanup(tr.killAll)
	s := &Supervisor{Transport: tr}
	defer s.Close()
	var lines []Response
	err := s.Do(context.Background(), Request{Op: "compile", Source: `extern "C" __global__ void twice(float* x) { x[threadIdx.x] *= 2; }`,
		Name: "ok.cu", Arch: "80", MemoryLimit: CompileMemory, Sass: []int{90}}, func(r Response) { lines = append(lines, r) })
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) != 2 {
		t.Fatalf("got %d lines, want 2: %+v", len(lines), lines)
	}
	if first := lines[0]; first.Done || !strings.Contains(first.PTX, ".entry twice(") || first.Resources != nil {
		t.Errorf("first line %+v, want the PTX alone, not done", first)
	}
	if last := lines[1]; !last.Done || last.PTX != "" || len(last.Resources) != 1 {
		t.Errorf("last line %+v, want done with the report and not the PTX again", last)
	}
}
