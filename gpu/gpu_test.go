package gpu

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuplayground/playground/kernels/cuda"
)

// TestMain lets this test binary act as the child, as cmd/playground does.
func TestMain(m *testing.M) {
	if ServeChild(os.Args, os.Stdout) {
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestProbeInChildReturnsTheChildsReport(t *testing.T) {
	got := ProbeSelf(context.Background())
	want := cuda.Probe() // the same probe, in this process
	if got.Unavailable != want.Unavailable || len(got.Devices) != len(want.Devices) {
		t.Errorf("child report %+v, want %+v", got, want)
	}
}

func TestServeChildIgnoresOtherArgs(t *testing.T) {
	var out bytes.Buffer
	if ServeChild([]string{"playground", "-addr", ":0"}, &out) || out.Len() != 0 {
		t.Error("ServeChild handled ordinary arguments")
	}
	if !ServeChild([]string{"playground", ProbeCommand}, &out) {
		t.Fatal("ServeChild did not handle gpu-probe")
	}
	var r cuda.Report
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Errorf("gpu-probe printed %q: %v", out.String(), err)
	}
}

func TestBrokenChildIsReported(t *testing.T) {
	dir := t.TempDir()
	for name, script := range map[string]string{
		"crash":   "#!/bin/sh\necho 'segmentation fault' >&2\nexit 139\n",
		"garbage": "#!/bin/sh\necho not json\n",
	} {
		exe := filepath.Join(dir, name)
		if err := os.WriteFile(exe, []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
		r := ProbeInChild(context.Background(), exe)
		if !strings.HasPrefix(r.Unavailable, "no CUDA device: the GPU probe") {
			t.Errorf("%s: got %q, want the probe's failure", name, r.Unavailable)
		}
	}
}

func TestHungChildIsKilled(t *testing.T) {
	exe := filepath.Join(t.TempDir(), "hang")
	if err := os.WriteFile(exe, []byte("#!/bin/sh\nexec sleep 60\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	r := ProbeInChild(ctx, exe)
	if time.Since(start) > 5*time.Second || !strings.Contains(r.Unavailable, "did not answer") {
		t.Errorf("after %v got %q, want the hung probe reported promptly", time.Since(start), r.Unavailable)
	}
}
