package gpu

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/gpuplayground/playground/gpu/nvidia"
	"github.com/gpuplayground/playground/internal/filetricks"
)

// The compile worker applies the source rule itself, whatever the caller checked: each trick of the
// abuse suite aimed at a planted secret comes back as a compile error on its own line, under NVRTC
// and clang, with the secret in neither the error nor the PTX. The worker, started as the server
// starts it (an Exec), leaves nothing in the temporary folder.
func TestCompileWorkerRefusesFileTricks(t *testing.T) {
	secretDir := t.TempDir()
	secret := "PLAYGROUND_SECRET_7f3a91"
	path := filepath.Join(secretDir, "secret.h")
	if err := os.WriteFile(path, []byte(secret+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, compiler := range []string{"nvrtc", "clang"} {
		t.Run(compiler, func(t *testing.T) {
			if compiler == "nvrtc" {
				needNVRTC(t)
			} else {
				needClang(t)
			}
			t.Setenv(nvidia.CompilerEnv, compiler)
			tmp := t.TempDir()
			t.Setenv("TMPDIR", tmp)
			c := &Compiler{Transport: Exec{Path: mustExe(t), Args: []string{WorkerCommand}}}
			for _, tr := range filetricks.Tricks(path) {
				ptx, err := c.Compile(context.Background(), tr.Source, "cell.cu", 80)
				if err == nil || strings.Contains(err.Error(), secret) || strings.Contains(ptx, secret) {
					t.Errorf("%s: got %q, %v; want a refusal without the secret", tr.Name, ptx, err)
					continue
				}
				if want := "cell.cu(" + strconv.Itoa(tr.Line) + "): error: "; !strings.Contains(err.Error(), want) {
					t.Errorf("%s: got %v, want %s…", tr.Name, err, want)
				}
			}
			if _, err := c.Compile(context.Background(), `extern "C" __global__ void k(float* p) { p[0] = 1; }`, "cell.cu", 80); err != nil {
				t.Errorf("a plain kernel: %v", err)
			}
			if left, _ := os.ReadDir(tmp); len(left) != 0 {
				t.Errorf("the compiles left %d entries in the temporary folder: %v", len(left), left)
			}
		})
	}
}
