package lessons

import (
	"strings"
	"testing"
	"testing/fstest"

	"github.com/gpuplayground/playground/cells"
)

func TestRecordings(t *testing.T) {
	lesson := &fstest.MapFile{Data: []byte("---\ntitle: T\nsummary: s\norder: 1\n---\n```matmul\nkernels: [ikj]\n```\n")}
	hash := cells.SourceHash("kernels: [ikj]\n")
	good := `{"cell":"t-0","source_sha256":"` + hash + `","device":"Test GPU","driver":"13.0","date":"2026-11-21T12:00:00Z","command":"record","results":[{"kernel":"cublas","n":64,"dtype":"float32","seconds":0.001,"gflops":0.5,"ok":true}]}`
	ls, err := Load(fstest.MapFS{"t.md": lesson, "recorded/t-0.json": {Data: []byte(good)}}, kinds)
	if err != nil {
		t.Fatal(err)
	}
	r := ls[0].Cells[0].Recording
	if r == nil || r.Results[0].Kernel != "cublas" || !strings.Contains(r.Label(), "recorded on Test GPU (driver CUDA 13.0) at 2026-11-21T12:00:00Z") ||
		!strings.HasSuffix(r.Label(), "not measured now") {
		t.Errorf("got %+v, label %q", r, r.Label())
	}
	for name, tt := range map[string]struct{ file, data, want string }{
		"bad json":      {"recorded/t-0.json", `{`, "recorded/t-0.json:1: recording:"},
		"no provenance": {"recorded/t-0.json", `{"cell":"t-0","results":[{"kernel":"cublas"}]}`, "needs device, driver, date, command, source_sha256"},
		"cell changed":  {"recorded/t-0.json", strings.Replace(good, hash, cells.SourceHash("kernels: [naive]\n"), 1), "t.md:7: cell t-0 has changed since recorded/t-0.json was recorded"},
		"wrong name":    {"recorded/x.json", good, `must be named t-0.json`},
		"unknown cell":  {"recorded/t-9.json", strings.Replace(good, "t-0", "t-9", 1), `cell "t-9", which no lesson has`},
	} {
		_, err := Load(fstest.MapFS{"t.md": lesson, tt.file: {Data: []byte(tt.data)}}, kinds)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: got %v, want %q", name, err, tt.want)
		}
	}
}
