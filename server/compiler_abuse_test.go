package server

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuplayground/playground/gpu"
	"github.com/gpuplayground/playground/gpu/nvidia"
	"github.com/gpuplayground/playground/internal/filetricks"
)

// plantSecret writes a secret file that any user could read (so only the compiler's protections,
// not file permissions, keep it out) and returns its path and contents, a C identifier.
func plantSecret(t *testing.T) (path, secret string) {
	t.Helper()
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	secret = "PLAYGROUND_SECRET_" + hex.EncodeToString(b)
	dir := t.TempDir()
	path = filepath.Join(dir, "secret.h")
	if err := os.WriteFile(path, []byte(secret+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for d := dir; d != os.TempDir() && d != "/" && d != "."; d = filepath.Dir(d) {
		_ = os.Chmod(d, 0o755)
	}
	return path, secret
}

// leaked reports whether text holds secret: as it is, or as PTX writes a string's bytes (decimal,
// comma-separated).
func leaked(text, secret string) bool {
	var bytes []string
	for _, c := range []byte(secret) {
		bytes = append(bytes, fmt.Sprint(c))
	}
	squeezed := strings.NewReplacer(" ", "", "\t", "", "\n", "").Replace(text)
	return strings.Contains(text, secret) || strings.Contains(squeezed, strings.Join(bytes, ","))
}

// compilerGPU is the GPU transport of a server whose compile workers use only the compiler name
// ("nvrtc" or "clang"): env(1) sets nvidia.CompilerEnv for the worker on top of the environment that
// the compile's confinement gives it (gpu.Compiler), so that tests choosing different compilers run
// in parallel. A missing compiler skips the test (and fails it in CI, which must have both).
func compilerGPU(t *testing.T, name string) gpu.Transport {
	t.Helper()
	var err error
	switch name {
	case "nvrtc":
		_, err = nvidia.LoadNVRTC()
	case "clang":
		_, err = nvidia.FindClang()
	}
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is required in CI: %v", name, err)
		}
		t.Skipf("skipping: no %s (%v)", name, err)
	}
	env, err := exec.LookPath("env")
	if err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return gpu.Exec{Path: env, Args: []string{nvidia.CompilerEnv + "=" + name, exe, gpu.WorkerCommand}}
}

// A signed-in student's cuda cell tries every way of making the compiler read a planted secret file
// (filetricks), through Show PTX, Show SASS and a run, under NVRTC and under clang: each is refused, on its
// cell line, and the secret appears in no message of the run (PTX, notes, errors). Two controls show
// that a secret in the source itself would be seen, in the PTX and in an error.
func TestAbuseCompilerReadsNoFile(t *testing.T) {
	t.Parallel()
	path, secret := plantSecret(t)
	for _, compiler := range []string{"nvrtc", "clang"} {
		t.Run(compiler, func(t *testing.T) {
			t.Parallel()
			cfg := cudaConfig(t)
			cfg.GPU = compilerGPU(t, compiler)
			_, base := startServer(t, cfg)
			ws := dial(t, base)
			header := "kernel: twice_mm\nsizes: [32]\n---\n" // the source starts on cell line 4
			run := func(id, source, action string) []Message {
				t.Helper()
				m := ptxMsg(id, header+source)
				m.Action = action
				if err := ws.WriteJSON(m); err != nil {
					t.Fatal(err)
				}
				return collect(t, ws, id, 60*time.Second)
			}
			for _, tr := range filetricks.Tricks(path) {
				for _, action := range []string{"ptx", "sass", ""} {
					msgs := run(tr.Name+"/"+action, tr.Source, action)
					all, _ := json.Marshal(msgs)
					if leaked(string(all), secret) {
						t.Errorf("%s (%q): the secret leaked: %s", tr.Name, action, all)
					}
					last := msgs[len(msgs)-1]
					if want := fmt.Sprintf("line %d: ", 3+tr.Line); last.Type != TypeError || !strings.Contains(last.Message, want) {
						t.Errorf("%s (%q): ended with %s %q, want an error on cell %s…", tr.Name, action, last.Type, last.Message, want)
					}
				}
			}
			// Controls: the same secret written into the source is found in the PTX and in an error.
			ptx, _ := json.Marshal(run("control-ptx", "__device__ char leak[] = \""+secret+"\";\n"+
				"extern \"C\" __global__ void twice_mm(const float* A, const float* B, float* C, int M, int N, int K) { C[0] = leak[0]; }\n", "ptx"))
			if !leaked(string(ptx), secret) {
				t.Errorf("control: a string in the source is not found in its PTX: %.3000s", ptx)
			}
			// The PTX's first line names the compiler's back end: the one chosen made it.
			if producer := map[string]string{"nvrtc": "NVIDIA NVVM", "clang": "LLVM NVPTX"}[compiler]; !strings.Contains(string(ptx), producer) {
				t.Errorf("control: the PTX is not %s's (%q): %.300s", compiler, producer, ptx)
			}
			errMsgs, _ := json.Marshal(run("control-error", "extern \"C\" __global__ void twice_mm(const float* A, const float* B, float* C, int M, int N, int K) { C[0] = "+secret+"; }\n", "ptx"))
			if !leaked(string(errMsgs), secret) {
				t.Errorf("control: an undeclared name is not found in the compile error: %s", errMsgs)
			}
		})
	}
}
