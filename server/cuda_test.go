package server

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gpuplayground/playground/cells"
	"github.com/gpuplayground/playground/cells/systolic"
	"github.com/gpuplayground/playground/gpu/nvidia"
	"github.com/gpuplayground/playground/harness/peaks"
	"github.com/gpuplayground/playground/machine"
)

const cudaLesson = "---\ntitle: K\nsummary: s\norder: 1\n---\n\n```cuda\n" + cudaCellSrc + "```\n\n```matmul\nkernels: [ikj]\nsizes: [8]\n```\n"

const cudaCellSrc = `kernel: twice_mm
block: [16, 16]
grid: ["ceil(n/16)", "ceil(n/16)"]
sizes: [32]
compare: [gonum, cublas]
---
extern "C" __global__ void twice_mm(const float* A, const float* B, float* C, int M, int N, int K) {
    int row = blockIdx.y * blockDim.y + threadIdx.y, col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < M && col < N) C[row * N + col] = A[row * K] * B[col];
}
`

func requireNVRTC(t *testing.T) {
	t.Helper()
	if _, err := nvidia.LoadNVRTC(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("NVRTC is required in CI: %v", err)
		}
		t.Skipf("skipping: no NVRTC (%v)", err)
	}
}

func cudaServer(t *testing.T) string {
	t.Helper()
	_, base := startServer(t, cudaConfig(t))
	return base
}

// cudaConfig is cudaServer's configuration: lesson k with the cuda cell, no device.
func cudaConfig(t *testing.T) Config {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "k.md"), []byte(cudaLesson), 0o644); err != nil {
		t.Fatal(err)
	}
	// RunRate -1: these tests send many runs in a row, and are not about the rate limit.
	return Config{Config: machine.Config{Devices: func(ctx context.Context) nvidia.Report {
		return nvidia.Report{Unavailable: "no CUDA device: libcuda.so.1 not found"}
	}}, LessonsDir: dir, RunRate: -1}
}

func ptxMsg(id, source string) Message {
	return Message{Type: TypeRun, ID: id, RunRequest: &RunRequest{Lesson: "k", Cell: "k-0", Source: source, Action: "ptx"}}
}

// checkShowPTX checks msgs, a Show PTX of cudaCellSrc (run by TestAbuseCompileBomb, after its bomb,
// which shares the compile): queued, the PTX for sm_80 with entry twice_mm, done; the kernel's
// source lines get their counts, numbered as the cell's lines; the store carries the virtual GPU's
// counts.
func checkShowPTX(t *testing.T, msgs []Message) {
	t.Helper()
	var text *cells.Text
	for _, m := range msgs {
		if m.Type == TypeText {
			text = m.Text
		}
	}
	if msgs[0].Type != TypeQueued || msgs[len(msgs)-1].Type != TypeDone || text == nil ||
		!strings.Contains(text.Body, ".entry twice_mm(") || !strings.Contains(text.Body, ".target sm_80") {
		t.Fatalf("got %+v, want queued, started, text (PTX for sm_80, entry twice_mm), done", msgs)
	}
	// The kernel's source lines get their counts too, numbered as the cell's lines (the store: line 9).
	var stores []string
	for _, r := range rowsOf(t, msgs, "lines") {
		if r["cell line"] == 9.0 {
			stores = append(stores, fmt.Sprint(r["global requests"]))
		}
	}
	if len(stores) != 1 || stores[0] == "0" {
		t.Errorf("per-line counts of line 9 (the loads and store): %v", stores)
	}
	// The lines that ran carry the virtual GPU's counts; the store of C is one request per warp.
	if body := text.Body; !regexp.MustCompile(`st\.global\.f32[^\n]*// [\d,]+ thr; [\d,]+ req, \d+\.\d sectors/req`).MatchString(body) {
		t.Errorf("PTX lacks the counts beside its store:\n%.2000s", body)
	}
}

func TestCompileErrorsUseCellLines(t *testing.T) {
	t.Parallel()
	requireNVRTC(t)
	ws := dial(t, cudaServer(t))
	broken := strings.Replace(cudaCellSrc, "A[row * K]", "A[row * K] * undefined_scale", 1)
	for _, action := range []string{"ptx", ""} {
		m := ptxMsg("bad-"+action, broken)
		m.Action = action
		if err := ws.WriteJSON(m); err != nil {
			t.Fatal(err)
		}
		msgs := collect(t, ws, m.ID, 30*time.Second)
		last := msgs[len(msgs)-1]
		// The source starts on cell line 7; the error is on its third line.
		if last.Type != TypeError || !strings.Contains(last.Message, "line 9: error") || !strings.Contains(last.Message, "undefined_scale") {
			t.Errorf("%q: got %+v, want an error at line 9 naming undefined_scale", action, last)
		}
	}
}

// Without a GPU a cuda cell compiles, runs the learner's kernel in the virtual GPU, says why cuBLAS
// did not run, and measures its CPU comparisons.
func TestCUDACellRunWithoutGPU(t *testing.T) {
	t.Parallel()
	requireNVRTC(t)
	ws := dial(t, cudaServer(t))
	if err := ws.WriteJSON(Message{Type: TypeRun, ID: "r", RunRequest: &RunRequest{Lesson: "k", Cell: "k-0", Source: cudaCellSrc}}); err != nil {
		t.Fatal(err)
	}
	msgs := collect(t, ws, "r", 60*time.Second)
	notes, had := withoutModelNote(notesOf(msgs))
	results := column(rowsOf(t, msgs, "results"), "kernel")
	if !had {
		t.Errorf("notes %q: none says what the model charges", notesOf(msgs))
	}
	want := []string{
		"info: custom: twice_mm compiles for compute_80",
		"error: cublas: not run, no NVIDIA GPU on this server (the page header links the details)",
	}
	if strings.Join(notes, "|") != strings.Join(want, "|") || strings.Join(results, ",") != "gonum" || msgs[len(msgs)-1].Type != TypeDone {
		t.Errorf("got notes %q, results %v, last %s; want %q, [gonum], done", notes, results, msgs[len(msgs)-1].Type, want)
	}
	// The learner's kernel ran in the virtual GPU: twice_mm is not a matrix product, and its row says so.
	if em := rowsOf(t, msgs, "emulated"); len(em) != 1 || em[0]["kernel"] != "custom" || em[0]["check"] != "WRONG: over tolerance" || em[0]["bad"] != true {
		t.Errorf("emulated rows %v, want custom, flagged wrong", em)
	}
}

func TestPTXOnlyForCUDACells(t *testing.T) {
	ws := dial(t, cudaServer(t))
	m := ptxMsg("x", "kernels: [ikj]\nsizes: [8]")
	m.Cell = "k-1"
	if err := ws.WriteJSON(m); err != nil {
		t.Fatal(err)
	}
	if msgs := collect(t, ws, "x", 10*time.Second); msgs[0].Type != TypeError || !strings.Contains(msgs[0].Message, `a matmul cell has no action "ptx"`) {
		t.Errorf("got %+v", msgs)
	}
}

// Without a GPU, a cell with a recording shows the recorded numbers of its GPU kernels, labelled, and
// still says why they did not run now.
func TestRecordedResultsWithoutGPU(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "k.md"), []byte(cudaLesson), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "recorded"), 0o755); err != nil {
		t.Fatal(err)
	}
	rec := `{"cell":"k-1","source_sha256":"` + cells.SourceHash("kernels: [ikj]\nsizes: [8]\n") + `","device":"Test GPU","driver":"13.0","date":"2026-11-21T12:00:00Z","command":"record -cells k-1",
		"results":[{"kernel":"cublas","n":8,"dtype":"float32","seconds":0.001,"gflops":0.5,"ok":true},
		           {"kernel":"ikj","n":8,"dtype":"float32","seconds":0.002,"gflops":0.25,"ok":true}]}`
	if err := os.WriteFile(filepath.Join(dir, "recorded", "k-1.json"), []byte(rec), 0o644); err != nil {
		t.Fatal(err)
	}
	_, base := startServer(t, Config{Config: machine.Config{Devices: func(context.Context) nvidia.Report {
		return nvidia.Report{Unavailable: "no CUDA device: libcuda.so.1 not found"}
	}}, LessonsDir: dir})
	ws := dial(t, base)
	if err := ws.WriteJSON(Message{Type: TypeRun, ID: "r", RunRequest: &RunRequest{Lesson: "k", Cell: "k-1", Source: "kernels: [ikj, cublas]\nsizes: [8]\nrepeats: 1"}}); err != nil {
		t.Fatal(err)
	}
	msgs := collect(t, ws, "r", 30*time.Second)
	var types []string
	caption := ""
	for _, m := range msgs {
		types = append(types, m.Type)
		if m.Type == TypeTable && m.Table.ID == "recorded" {
			caption = m.Table.Caption
		}
	}
	if recd := rowsOf(t, msgs, "recorded"); len(recd) != 1 || recd[0]["kernel"] != "cublas" || !strings.Contains(caption, "recorded on Test GPU") {
		t.Fatalf("got %v, recorded %v (%q); want the recorded cublas result only, labelled", types, recd, caption)
	}
	if got := strings.Join(types[:5], ","); got != "queued,started,table,row,note" || types[len(types)-1] != TypeDone {
		t.Errorf("sequence %v: want queued, started, the recorded table and row, the note, then the measurements, done", types)
	}
	// Edited to another size, the recording has no row for it: nothing recorded is shown.
	if err := ws.WriteJSON(Message{Type: TypeRun, ID: "r2", RunRequest: &RunRequest{Lesson: "k", Cell: "k-1", Source: "kernels: [ikj, cublas]\nsizes: [16]\nrepeats: 1"}}); err != nil {
		t.Fatal(err)
	}
	if recd := rowsOf(t, collect(t, ws, "r2", 30*time.Second), "recorded"); len(recd) != 0 {
		t.Errorf("n=16: got recorded rows %v, want none (the recording is of n=8)", recd)
	}
}

func TestSIMTCell(t *testing.T) {
	t.Parallel()
	_, base := startServer(t, Config{})
	ws := dial(t, base)
	src := "kernels: [naive, smem]\nn: 32\ngpu: T4"
	if err := ws.WriteJSON(Message{Type: TypeRun, ID: "s", RunRequest: &RunRequest{Lesson: "why-coalescing-matters", Cell: "why-coalescing-matters-0", Source: src}}); err != nil {
		t.Fatal(err)
	}
	msgs := collect(t, ws, "s", 60*time.Second)
	rows := rowsOf(t, msgs, "counts")
	for _, r := range rows {
		if r["check"] != "ok" || r["sectors"].(float64) == 0 {
			t.Errorf("row %v", r)
		}
	}
	if strings.Join(column(rows, "kernel"), ",") != "naive,smem" || count(msgs, TypeChart) < 1 || msgs[len(msgs)-1].Type != TypeDone {
		t.Errorf("got rows %v", rows)
	}
}

func TestSystolicCell(t *testing.T) {
	_, base := startServer(t, Config{})
	ws := dial(t, base)
	src := "array: 3\nm: 4\nn: 3\nk: 3"
	if err := ws.WriteJSON(Message{Type: TypeRun, ID: "y", RunRequest: &RunRequest{Lesson: "tpus-and-systolic-arrays", Cell: "tpus-and-systolic-arrays-0", Source: src}}); err != nil {
		t.Fatal(err)
	}
	msgs := collect(t, ws, "y", 60*time.Second)
	frames := 0
	for _, m := range msgs {
		for _, f := range m.Frames {
			frames++
			fm := f.(map[string]any)
			if len(fm["a"].([]any)) != 3 || (fm["cycle"].(float64) == 0) != (fm["w"] != nil) {
				t.Fatalf("frame %+v: want a 3×3 array, weights on cycle 0 only", f)
			}
		}
	}
	rows := rowsOf(t, msgs, "product")
	if frames != 4+2*3-2 || len(rows) != 1 || rows[0]["check"] != "ok" || rows[0]["cycles"].(float64) != 3+4+2*3-2 || msgs[len(msgs)-1].Type != TypeDone {
		t.Errorf("got %d frames, result %v; want 8 frames, correct, 11 cycles, done", frames, rows)
	}
}

// A big animation is capped and batched: it must never overflow a client's send buffer by itself.
func TestSystolicAnimationIsCappedAndBatched(t *testing.T) {
	t.Parallel()
	_, base := startServer(t, Config{})
	ws := dial(t, base)
	src := "array: 16\nm: 64\nn: 64\nk: 64"
	if err := ws.WriteJSON(Message{Type: TypeRun, ID: "big", RunRequest: &RunRequest{Lesson: "tpus-and-systolic-arrays", Cell: "tpus-and-systolic-arrays-1", Source: src}}); err != nil {
		t.Fatal(err)
	}
	msgs := collect(t, ws, "big", 60*time.Second)
	frames, batches := 0, 0
	for _, m := range msgs {
		if m.Type == TypeFrames {
			batches++
			frames += len(m.Frames)
		}
	}
	if frames != systolic.MaxAnimatedFrames || batches != systolic.MaxAnimatedFrames/cells.FramesPerBatch || msgs[len(msgs)-1].Type != TypeDone {
		t.Errorf("got %d frames in %d messages, last %s; want %d in %d, done", frames, batches, msgs[len(msgs)-1].Type,
			systolic.MaxAnimatedFrames, systolic.MaxAnimatedFrames/cells.FramesPerBatch)
	}
}

func TestRooflineCell(t *testing.T) {
	t.Parallel()
	_, base := startServer(t, Config{Config: machine.Config{Roofline: peaks.Options{PeakSizes: []int{64}, TriadMiB: 4, Repeats: 2}}})
	var c peaks.Ceilings
	if resp, err := http.Get(base + "/api/roofline"); err != nil || resp.StatusCode != http.StatusNotFound {
		t.Fatalf("/api/roofline before any run: %v, %v; want 404 (not measured yet, and it never measures)", resp, err)
	}
	ws := dial(t, base)
	src := "kernels: [ikj, gonum]\nsizes: [32]\nrepeats: 1\npredict: {gonum: 5}\ngpu: T4"
	if err := ws.WriteJSON(Message{Type: TypeRun, ID: "rf", RunRequest: &RunRequest{Lesson: "the-roofline", Cell: "the-roofline-0", Source: src}}); err != nil {
		t.Fatal(err)
	}
	msgs := collect(t, ws, "rf", 60*time.Second)
	var lastSVG string
	for _, m := range msgs {
		if m.Type == TypeChart {
			lastSVG = m.SVG
		}
	}
	notes := strings.Join(notesOf(msgs), "\n")
	for _, want := range []string{"This machine's roofline, measured", "Byte model:", "T4: from its datasheet", "gonum 5 GFLOP/s"} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes lack %q:\n%s", want, notes)
		}
	}
	for _, want := range []string{"Roofline", "this machine", "T4 FP32, datasheet (not measured)", "hollow: your prediction"} {
		if !strings.Contains(lastSVG, want) {
			t.Errorf("chart lacks %q", want)
		}
	}
	if err := getJSON(t, base+"/api/roofline", &c); err != nil || !(c.PeakGFLOPS > 0) || !strings.Contains(notes, c.Measured) {
		t.Errorf("/api/roofline %+v (%v), want the ceilings the cell measured", c, err)
	}
}

func TestAllReduceCell(t *testing.T) {
	_, base := startServer(t, Config{})
	ws := dial(t, base)
	src := "gradient_mb: 100\ngpus: [2, 8]\nlinks: {a: 10, b: 100}"
	if err := ws.WriteJSON(Message{Type: TypeRun, ID: "ar", RunRequest: &RunRequest{Lesson: "many-gpus", Cell: "many-gpus-0", Source: src}}); err != nil {
		t.Fatal(err)
	}
	msgs := collect(t, ws, "ar", 30*time.Second)
	var pts []string // the model is a grid: a row per link, a column per GPU count
	for _, r := range rowsOf(t, msgs, "model") {
		for _, g := range []string{"2 GPUs", "8 GPUs"} {
			if _, ok := r[g].(float64); ok {
				pts = append(pts, fmt.Sprintf("%s/%s", r["link"], strings.TrimSuffix(g, " GPUs")))
			}
		}
	}
	charts := 0
	for _, m := range msgs {
		if m.Type == TypeChart && strings.Contains(m.SVG, "modelled, not measured") {
			charts++
		}
	}
	if strings.Join(pts, ",") != "a/2,a/8,b/2,b/8" || charts != 1 || msgs[len(msgs)-1].Type != TypeDone {
		t.Errorf("got points %v, %d charts, last %s", pts, charts, msgs[len(msgs)-1].Type)
	}
}

func TestSIMTWatch(t *testing.T) {
	t.Parallel()
	_, base := startServer(t, Config{})
	ws := dial(t, base)
	src := "kernels: [naive]\nn: 16\nwatch: true"
	if err := ws.WriteJSON(Message{Type: TypeRun, ID: "w", RunRequest: &RunRequest{Lesson: "why-coalescing-matters", Cell: "why-coalescing-matters-1", Source: src}}); err != nil {
		t.Fatal(err)
	}
	frames, rowAt, lastFramesAt := 0, -1, -1
	for i, m := range collect(t, ws, "w", 60*time.Second) {
		switch m.Type {
		case TypeFrames:
			frames += len(m.Frames)
			lastFramesAt = i
			if len(m.Frames) > cells.FramesPerBatch {
				t.Errorf("a frames message of %d frames", len(m.Frames))
			}
		case TypeRow:
			rowAt = i
		}
	}
	// naive at n=16, block 32×8, grid 1×2: block (0,0) has 8 warps (16 of their lanes active), each with
	// 16 loads of A, 16 of B and 1 store of C.
	if frames != 8*33 || lastFramesAt > rowAt {
		t.Errorf("got %d frames (last batch at %d, counts at %d), want 264 before the counts", frames, lastFramesAt, rowAt)
	}
}

// Without a GPU a learner's kernel that writes out of bounds is stopped by the virtual GPU's
// sanitizer, the note naming the cell's own line; its printf output is shown as text.
func TestCUDACellSanitizerAndPrintf(t *testing.T) {
	t.Parallel()
	requireNVRTC(t)
	ws := dial(t, cudaServer(t))
	oob := strings.Replace(cudaCellSrc, "C[row * N + col] = A[row * K] * B[col];", "C[row * N + col + N * N] = 1.0f;", 1)
	if err := ws.WriteJSON(Message{Type: TypeRun, ID: "oob", RunRequest: &RunRequest{Lesson: "k", Cell: "k-0", Source: oob}}); err != nil {
		t.Fatal(err)
	}
	notes := strings.Join(notesOf(collect(t, ws, "oob", 60*time.Second)), "\n")
	if !strings.Contains(notes, "custom at n=32 faulted in the virtual GPU: out of bounds: thread (") || !strings.Contains(notes, ", line 9: 4-byte global store past the end of buffer \"C\" (32×32 floats): element ") {
		t.Errorf("notes %q, want the sanitizer's out-of-bounds fault at the cell's line 9, naming C's element", notes)
	}
	hello := strings.Replace(cudaCellSrc, "    int row", "    if (threadIdx.x == 0 && threadIdx.y == 0 && blockIdx.x == 0 && blockIdx.y == 0) printf(\"hello from %d\\n\", M);\n    int row", 1)
	if err := ws.WriteJSON(Message{Type: TypeRun, ID: "hi", RunRequest: &RunRequest{Lesson: "k", Cell: "k-0", Source: hello}}); err != nil {
		t.Fatal(err)
	}
	var text string
	for _, m := range collect(t, ws, "hi", 60*time.Second) {
		if m.Type == TypeText {
			text = m.Text.Title + ": " + m.Text.Body
		}
	}
	if !strings.Contains(text, "printf output of custom at n=32") || !strings.Contains(text, "hello from 32") {
		t.Errorf("text %q, want the kernel's printf output", text)
	}
}

// Without a GPU a roofline cell's CUDA kernels run in the virtual GPU and stand on the chart at the
// intensity their counts give, under the datasheet GPU's roof, labelled emulated and modelled.
func TestRooflineCellEmulatesCUDAKernels(t *testing.T) {
	t.Parallel()
	_, base := startServer(t, Config{Config: machine.Config{Devices: noDevice, Roofline: peaks.Options{PeakSizes: []int{64}, TriadMiB: 4, Repeats: 2}}})
	ws := dial(t, base)
	src := "kernels: [ikj, cuda-naive, cuda-smem]\nsizes: [64]\nrepeats: 1\ngpu: T4"
	if err := ws.WriteJSON(Message{Type: TypeRun, ID: "re", RunRequest: &RunRequest{Lesson: "the-roofline", Cell: "the-roofline-0", Source: src}}); err != nil {
		t.Fatal(err)
	}
	msgs := collect(t, ws, "re", 60*time.Second)
	var lastSVG string
	for _, m := range msgs {
		if m.Type == TypeChart {
			lastSVG = m.SVG
		}
	}
	if em := rowsOf(t, msgs, "emulated"); len(em) != 2 || msgs[len(msgs)-1].Type != TypeDone {
		t.Fatalf("emulated rows %v, last %+v", em, msgs[len(msgs)-1])
	}
	for _, want := range []string{"cuda-naive (emulated, modelled)", "cuda-smem (emulated, modelled)", "T4 FP32, datasheet (not measured)"} {
		if !strings.Contains(lastSVG, want) {
			t.Errorf("the last chart lacks %q", want)
		}
	}
}

// A cell whose run the server refuses as too costly, after the compile from a probe of one block
// (a launch of 2·10¹² threads), has its Show PTX refused with the same reason: every action that
// launches the virtual GPU goes through the run's guard, not only Run.
func TestShowPTXRefusedAsTheRunIs(t *testing.T) {
	t.Parallel()
	requireNVRTC(t)
	huge := strings.Replace(strings.Replace(cudaCellSrc, `grid: ["ceil(n/16)", "ceil(n/16)"]`, `grid: ["2000000", "4000"]`, 1),
		"compare: [gonum, cublas]\n", "", 1)
	ws := dial(t, cudaServer(t))
	var ends []Message
	for _, m := range []Message{
		{Type: TypeRun, ID: "r", RunRequest: &RunRequest{Lesson: "k", Cell: "k-0", Source: huge}},
		ptxMsg("p", huge),
	} {
		if err := ws.WriteJSON(m); err != nil {
			t.Fatal(err)
		}
		msgs := collect(t, ws, m.ID, 60*time.Second)
		ends = append(ends, msgs[len(msgs)-1])
	}
	const want = "its emulation is estimated, from one thread block of it at each size"
	if run := ends[0]; run.Type != TypeError || !strings.Contains(run.Message, want) {
		t.Fatalf("run: got %s %q, want an error saying %q", run.Type, run.Message, want)
	}
	if ptx := ends[1]; ptx.Type != TypeError || ptx.Message != ends[0].Message {
		t.Errorf("Show PTX: got %s %q, want the run's refusal %q", ptx.Type, ptx.Message, ends[0].Message)
	}
}
