package server

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuplayground/playground/gpu"
	"github.com/gpuplayground/playground/gpu/nvidia"
	"github.com/gpuplayground/playground/harness/peaks"
	"github.com/gpuplayground/playground/internal/fakecuda"
	"github.com/gpuplayground/playground/machine"
)

func fakeGPUServer(t *testing.T, cfg Config) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cfg.GPU = gpu.Exec{Path: exe, Args: []string{fakeGPUCommand}}
	_, base := startServer(t, cfg)
	return base
}

// With a device, GPU kernels are measured by the worker, in the cell's order beside the CPU ones.
func TestGPUKernelsRunInTheWorker(t *testing.T) {
	ws := dial(t, fakeGPUServer(t, Config{}))
	if err := ws.WriteJSON(runMsg("g", "kernels: [cublas, ikj, cuda-regblock]\nsizes: [16, 32]\nrepeats: 2\ntransfers: true")); err != nil {
		t.Fatal(err)
	}
	msgs := collect(t, ws, "g", 60*time.Second)
	var got []string
	for _, r := range rowsOf(t, msgs, "results") {
		got = append(got, r["kernel"].(string))
		if r["kernel"] != "ikj" && r["host→device"] != 1.0 {
			t.Errorf("%s: transfers were not asked for", r["kernel"])
		}
	}
	if notes := notesOf(msgs); len(notes) > 0 {
		t.Errorf("unexpected notes %q", notes)
	}
	if strings.Join(got, ",") != "cublas,ikj,cuda-regblock,cublas,ikj,cuda-regblock" || msgs[len(msgs)-1].Type != TypeDone {
		t.Errorf("got results %v ending %s", got, msgs[len(msgs)-1].Type)
	}
}

// A cuda cell's own kernel runs as "custom", launched with the grid its formulas give for each n,
// and its PTX then runs in the virtual GPU, so the counts stand beside the measured time.
func TestCUDACellRunsCustomKernelInTheWorker(t *testing.T) {
	requireNVRTC(t) // the fake worker compiles with the real compiler
	dir := t.TempDir()
	if err := os.WriteFile(dir+"/k.md", []byte(cudaLesson), 0o644); err != nil {
		t.Fatal(err)
	}
	ws := dial(t, fakeGPUServer(t, Config{LessonsDir: dir}))
	src := strings.Replace(cudaCellSrc, "sizes: [32]", "sizes: [32, 100]", 1)
	if err := ws.WriteJSON(Message{Type: TypeRun, ID: "c", RunRequest: &RunRequest{Lesson: "k", Cell: "k-0", Source: src}}); err != nil {
		t.Fatal(err)
	}
	msgs := collect(t, ws, "c", 60*time.Second)
	results := column(rowsOf(t, msgs, "results"), "kernel")
	notes, had := withoutModelNote(notesOf(msgs))
	if strings.Join(results, ",") != "custom,gonum,cublas,custom,gonum,cublas" || !had ||
		len(notes) != 1 || notes[0] != "info: custom: twice_mm compiles for compute_90" {
		t.Errorf("got results %v, notes %q", results, notes)
	}
	var emulated []string
	for _, r := range rowsOf(t, msgs, "emulated") {
		emulated = append(emulated, fmt.Sprintf("%s:%v:%v", r["kernel"], r["n"], r["bad"]))
	}
	if strings.Join(emulated, ",") != "custom:32:true,custom:100:true" { // twice_mm is not a matrix product
		t.Errorf("emulated rows %v, want custom at 32 and 100, both flagged wrong", emulated)
	}
}

// With a GPU, each emulated kernel gets the measured time of its cuda-* kernel beside the model.
func TestSIMTCellMeasuresOnTheGPU(t *testing.T) {
	ws := dial(t, fakeGPUServer(t, Config{}))
	src := "kernels: [naive, smem]\nn: 32\ngpu: T4"
	if err := ws.WriteJSON(Message{Type: TypeRun, ID: "sm", RunRequest: &RunRequest{Lesson: "why-coalescing-matters", Cell: "why-coalescing-matters-0", Source: src}}); err != nil {
		t.Fatal(err)
	}
	msgs := collect(t, ws, "sm", 60*time.Second)
	var got []string
	measured := "measured on Fake GPU (matmul.cu's launch shape)"
	for _, r := range rowsOf(t, msgs, "counts") {
		got = append(got, fmt.Sprintf("%s:%g", r["kernel"], r[measured]))
	}
	if strings.Join(got, " ") != "naive:1000 smem:1000" { // 0.001 s in µs
		t.Errorf("got %v", got)
	}
}

// With a GPU, the roofline also shows the device's own roofs, derived from its attributes.
func TestRooflineShowsTheDevice(t *testing.T) {
	t.Parallel()
	ws := dial(t, fakeGPUServer(t, Config{Config: machine.Config{Roofline: peaks.Options{PeakSizes: []int{64}, TriadMiB: 4, Repeats: 2}}}))
	src := "kernels: [ikj]\nsizes: [32]\nrepeats: 1"
	if err := ws.WriteJSON(Message{Type: TypeRun, ID: "rd", RunRequest: &RunRequest{Lesson: "the-roofline", Cell: "the-roofline-0", Source: src}}); err != nil {
		t.Fatal(err)
	}
	var svg string
	for _, m := range collect(t, ws, "rd", 60*time.Second) {
		if m.Type == TypeChart {
			svg = m.SVG
		}
	}
	if !strings.Contains(svg, "Fake GPU FP32, from the device") {
		t.Errorf("roofline chart lacks the device's roof")
	}
}

// The whole path with the real worker and the binding, on the fake CUDA library of internal/fakecuda
// (host memory, strict about buffers and streams): the probe names the device on /api/devices and
// the page, and a cell's GPU kernels come back checked, beside its CPU kernel, with no notes. The
// worker alone gets the library's folder (LD_LIBRARY_PATH), so that the test runs in parallel.
func TestFakeCUDAEndToEnd(t *testing.T) {
	t.Parallel()
	dir := fakecuda.Build(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "LD_LIBRARY_PATH="+dir) // exec keeps the last of a name
	_, base := startServer(t, Config{Config: machine.Config{GPU: gpu.Exec{Path: exe, Args: []string{gpu.WorkerCommand}, Env: env}}})
	var report nvidia.Report
	err = getJSON(t, base+"/api/devices", &report)
	if err != nil || report.Unavailable != "" || len(report.Devices) != 1 || report.Devices[0].Name != fakecuda.DeviceName ||
		len(report.Libraries) == 0 || report.Libraries[0].Path != filepath.Join(dir, "libcuda.so.1") {
		t.Fatalf("/api/devices: %+v, %v", report, err)
	}
	if !strings.Contains(getBody(t, base+"/"), fakecuda.DeviceName) {
		t.Error("the page header does not name the device")
	}

	ws := dial(t, base)
	if err := ws.WriteJSON(runMsg("f", "kernels: [cublas, ikj, cuda-regblock, cublas-bf16]\nsizes: [48]\nrepeats: 2\ntransfers: true")); err != nil {
		t.Fatal(err)
	}
	var got []string
	msgs := collect(t, ws, "f", 60*time.Second)
	for _, r := range rowsOf(t, msgs, "results") {
		got = append(got, r["kernel"].(string))
		if r["check"] != "ok" || !(r["median"].(float64) > 0) {
			t.Errorf("%s: %v, want a checked, timed result", r["kernel"], r)
		}
		if h2d, _ := r["host→device"].(float64); r["kernel"] != "ikj" && !(h2d > 0) {
			t.Errorf("%s: copies not timed", r["kernel"])
		}
	}
	if notes := notesOf(msgs); len(notes) > 0 || msgs[len(msgs)-1].Type != TypeDone {
		t.Errorf("unexpected notes %q, or end %+v", notes, msgs[len(msgs)-1])
	}
	if strings.Join(got, ",") != "cublas,ikj,cuda-regblock,cublas-bf16" {
		t.Errorf("got results %v", got)
	}
}
