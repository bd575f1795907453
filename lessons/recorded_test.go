package lessons

import (
	"strings"
	"testing"
	"testing/fstest"
)

func TestRecordings(t *testing.T) {
	lesson := &fstest.MapFile{Data: []byte("---\ntitle: T\nsummary: s\norder: 1\n---\n```matmul\nkernels: [ikj]\n```\n")}
	good := `{"cell":"t-0","device":"Test GPU","driver":"13.0","date":"2026-11-21T12:00:00Z","command":"record","results":[{"kernel":"cublas","n":64,"dtype":"float32","seconds":0.001,"gflops":0.5,"ok":true}]}`
	ls, err := Load(fstest.MapFS{"t.md": lesson, "recorded/t-0.json": {Data: []byte(good)}}, kinds)
	if err != nil {
		t.Fatal(err)
	}
	r, ok := ls[0].Recordings["t-0"]
	if !ok || r.Results[0].Kernel != "cublas" || !strings.Contains(r.Label(), "recorded on Test GPU (driver CUDA 13.0) at 2026-11-21T12:00:00Z") ||
		!strings.HasSuffix(r.Label(), "not measured now") {
		t.Errorf("got %+v, label %q", r, r.Label())
	}
	for name, tt := range map[string]struct{ file, data, want string }{
		"bad json":      {"recorded/t-0.json", `{`, "recorded/t-0.json:1: recording:"},
		"no provenance": {"recorded/t-0.json", `{"cell":"t-0","results":[{"kernel":"cublas"}]}`, "needs device, driver, date, command"},
		"wrong name":    {"recorded/x.json", good, `must be named t-0.json`},
		"unknown cell":  {"recorded/t-9.json", strings.Replace(good, "t-0", "t-9", 1), `cell "t-9", which no lesson has`},
	} {
		_, err := Load(fstest.MapFS{"t.md": lesson, tt.file: {Data: []byte(tt.data)}}, kinds)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: got %v, want %q", name, err, tt.want)
		}
	}
}
