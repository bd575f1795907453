package server

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuplayground/playground/experiment"
	"github.com/gpuplayground/playground/kernels/cuda"
	"github.com/gpuplayground/playground/roofline"
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
	if _, err := cuda.LoadNVRTC(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("NVRTC is required in CI: %v", err)
		}
		t.Skipf("skipping: no NVRTC (%v)", err)
	}
}

func cudaServer(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "k.md"), []byte(cudaLesson), 0o644); err != nil {
		t.Fatal(err)
	}
	_, base := startServer(t, Config{LessonsDir: dir, Devices: func(ctx context.Context) cuda.Report {
		return cuda.Report{Unavailable: "no CUDA device: libcuda.so.1 not found"}
	}})
	return base
}

func ptxMsg(id, source string) Message {
	return Message{Type: TypePTX, ID: id, RunRequest: &RunRequest{Lesson: "k", Cell: "k-0", Source: source}}
}

func TestShowPTX(t *testing.T) {
	requireNVRTC(t)
	ws := dial(t, cudaServer(t))
	if err := ws.WriteJSON(ptxMsg("p", cudaCellSrc)); err != nil {
		t.Fatal(err)
	}
	msgs := collect(t, ws, "p", 30*time.Second)
	if len(msgs) != 2 || msgs[0].Type != TypePTX || msgs[1].Type != TypeDone ||
		!strings.Contains(msgs[0].PTX, ".entry twice_mm(") || !strings.Contains(msgs[0].PTX, ".target sm_80") {
		t.Fatalf("got %+v, want ptx (sm_80, entry twice_mm) then done", msgs)
	}
}

func TestCompileErrorsUseCellLines(t *testing.T) {
	requireNVRTC(t)
	ws := dial(t, cudaServer(t))
	broken := strings.Replace(cudaCellSrc, "A[row * K]", "A[row * K] * undefined_scale", 1)
	for _, typ := range []string{TypePTX, TypeRun} {
		m := ptxMsg("bad-"+typ, broken)
		m.Type = typ
		if err := ws.WriteJSON(m); err != nil {
			t.Fatal(err)
		}
		msgs := collect(t, ws, m.ID, 30*time.Second)
		last := msgs[len(msgs)-1]
		// The source starts on cell line 7; the error is on its third line.
		if last.Type != TypeError || !strings.Contains(last.Message, "line 9: error") || !strings.Contains(last.Message, "undefined_scale") {
			t.Errorf("%s: got %+v, want an error at line 9 naming undefined_scale", typ, last)
		}
	}
}

// Without a GPU a cuda cell compiles, says why the kernel did not run, and measures its CPU comparisons.
func TestCUDACellRunWithoutGPU(t *testing.T) {
	requireNVRTC(t)
	ws := dial(t, cudaServer(t))
	if err := ws.WriteJSON(Message{Type: TypeRun, ID: "r", RunRequest: &RunRequest{Lesson: "k", Cell: "k-0", Source: cudaCellSrc}}); err != nil {
		t.Fatal(err)
	}
	msgs := collect(t, ws, "r", 30*time.Second)
	var notes []string
	var results []string
	for _, m := range msgs {
		if m.Type == TypeNote {
			notes = append(notes, m.Note.Level+" "+m.Note.Message)
		}
		if m.Type == TypeResult {
			results = append(results, m.Result.Kernel)
		}
	}
	want := []string{
		"info custom: twice_mm compiles for compute_80",
		"error custom: no CUDA device: libcuda.so.1 not found",
		"error cublas: no CUDA device: libcuda.so.1 not found",
	}
	if strings.Join(notes, "|") != strings.Join(want, "|") || strings.Join(results, ",") != "gonum" || msgs[len(msgs)-1].Type != TypeDone {
		t.Errorf("got notes %q, results %v, last %s; want %q, [gonum], done", notes, results, msgs[len(msgs)-1].Type, want)
	}
}

func TestPTXOnlyForCUDACells(t *testing.T) {
	ws := dial(t, cudaServer(t))
	m := ptxMsg("x", "kernels: [ikj]\nsizes: [8]")
	m.Cell = "k-1"
	if err := ws.WriteJSON(m); err != nil {
		t.Fatal(err)
	}
	if msgs := collect(t, ws, "x", 5*time.Second); msgs[0].Type != TypeError || !strings.Contains(msgs[0].Message, "only cuda cells have PTX") {
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
	rec := `{"cell":"k-1","device":"Test GPU","driver":"13.0","date":"2026-11-21T12:00:00Z","command":"record -cells k-1",
		"results":[{"kernel":"cublas","n":8,"dtype":"float32","seconds":0.001,"gflops":0.5,"ok":true},
		           {"kernel":"ikj","n":8,"dtype":"float32","seconds":0.002,"gflops":0.25,"ok":true}]}`
	if err := os.WriteFile(filepath.Join(dir, "recorded", "k-1.json"), []byte(rec), 0o644); err != nil {
		t.Fatal(err)
	}
	_, base := startServer(t, Config{LessonsDir: dir, Devices: func(context.Context) cuda.Report {
		return cuda.Report{Unavailable: "no CUDA device: libcuda.so.1 not found"}
	}})
	ws := dial(t, base)
	if err := ws.WriteJSON(Message{Type: TypeRun, ID: "r", RunRequest: &RunRequest{Lesson: "k", Cell: "k-1", Source: "kernels: [ikj, cublas]\nsizes: [8]\nrepeats: 1"}}); err != nil {
		t.Fatal(err)
	}
	msgs := collect(t, ws, "r", 10*time.Second)
	var types []string
	var recd *Recorded
	for _, m := range msgs {
		types = append(types, m.Type)
		if m.Type == TypeRecorded {
			recd = m.Recorded
		}
	}
	if recd == nil || len(recd.Results) != 1 || recd.Results[0].Kernel != "cublas" || !strings.Contains(recd.Label, "recorded on Test GPU") {
		t.Fatalf("got %v, recorded %+v; want the recorded cublas result only, labelled", types, recd)
	}
	if got := strings.Join(types[:4], ","); got != "queued,started,recorded,note" || types[len(types)-1] != TypeDone {
		t.Errorf("sequence %v: want queued, started, recorded, note, then the measurements, done", types)
	}
}

func TestSIMTCell(t *testing.T) {
	_, base := startServer(t, Config{})
	ws := dial(t, base)
	src := "kernels: [naive, smem]\nn: 32\ngpu: T4"
	if err := ws.WriteJSON(Message{Type: TypeRun, ID: "s", RunRequest: &RunRequest{Lesson: "09-why-coalescing-matters", Cell: "09-why-coalescing-matters-0", Source: src}}); err != nil {
		t.Fatal(err)
	}
	msgs := collect(t, ws, "s", 20*time.Second)
	var kinds, kernels []string
	for _, m := range msgs {
		kinds = append(kinds, m.Type)
		if m.Type == TypeSIMT {
			kernels = append(kernels, m.SIMT.Kernel)
			if !m.SIMT.Correct || m.SIMT.GPU != "T4" || m.SIMT.BytesMoved == 0 {
				t.Errorf("result %+v", *m.SIMT)
			}
		}
	}
	if strings.Join(kernels, ",") != "naive,smem" || !strings.Contains(strings.Join(kinds, ","), "simt,chart") || kinds[len(kinds)-1] != TypeDone {
		t.Errorf("got %v", kinds)
	}
}

func TestSystolicCell(t *testing.T) {
	_, base := startServer(t, Config{})
	ws := dial(t, base)
	src := "array: 3\nm: 4\nn: 3\nk: 3"
	if err := ws.WriteJSON(Message{Type: TypeRun, ID: "y", RunRequest: &RunRequest{Lesson: "10-tpus-and-systolic-arrays", Cell: "10-tpus-and-systolic-arrays-0", Source: src}}); err != nil {
		t.Fatal(err)
	}
	msgs := collect(t, ws, "y", 20*time.Second)
	frames := 0
	var res *experiment.SystolicResult
	var last string
	for _, m := range msgs {
		switch m.Type {
		case TypeFrames:
			for _, f := range m.Frames {
				frames++
				if len(f.A) != 3 || (f.Cycle == 0) != (f.W != nil) {
					t.Fatalf("frame %+v: want a 3×3 array, weights on cycle 0 only", f)
				}
			}
		case TypeSystolic:
			res = m.Systolic
		}
		last = m.Type
	}
	if frames != 4+2*3-2 || res == nil || !res.Correct || res.Cycles != 3+4+2*3-2 || last != TypeDone {
		t.Errorf("got %d frames, result %+v, last %s; want 8 frames, correct, 11 cycles, done", frames, res, last)
	}
}

// A big animation is capped and batched: it must never overflow a client's send buffer by itself.
func TestSystolicAnimationIsCappedAndBatched(t *testing.T) {
	_, base := startServer(t, Config{})
	ws := dial(t, base)
	src := "array: 16\nm: 64\nn: 64\nk: 64"
	if err := ws.WriteJSON(Message{Type: TypeRun, ID: "big", RunRequest: &RunRequest{Lesson: "10-tpus-and-systolic-arrays", Cell: "10-tpus-and-systolic-arrays-1", Source: src}}); err != nil {
		t.Fatal(err)
	}
	msgs := collect(t, ws, "big", 30*time.Second)
	frames, batches := 0, 0
	for _, m := range msgs {
		if m.Type == TypeFrames {
			batches++
			frames += len(m.Frames)
		}
	}
	if frames != experiment.MaxAnimatedFrames || batches != experiment.MaxAnimatedFrames/framesPerMessage || msgs[len(msgs)-1].Type != TypeDone {
		t.Errorf("got %d frames in %d messages, last %s; want %d in %d, done", frames, batches, msgs[len(msgs)-1].Type,
			experiment.MaxAnimatedFrames, experiment.MaxAnimatedFrames/framesPerMessage)
	}
}

func TestRooflineCell(t *testing.T) {
	_, base := startServer(t, Config{Roofline: roofline.Options{PeakSizes: []int{64}, TriadMiB: 4, Repeats: 2}})
	ws := dial(t, base)
	src := "kernels: [ikj, gonum]\nsizes: [32]\nrepeats: 1\npredict: {gonum: 5}\ngpu: T4"
	if err := ws.WriteJSON(Message{Type: TypeRun, ID: "rf", RunRequest: &RunRequest{Lesson: "11-the-roofline", Cell: "11-the-roofline-0", Source: src}}); err != nil {
		t.Fatal(err)
	}
	msgs := collect(t, ws, "rf", 30*time.Second)
	var info *RooflineInfo
	var lastSVG string
	for _, m := range msgs {
		if m.Type == TypeRoofline {
			info = m.Roofline
		}
		if m.Type == TypeChart {
			lastSVG = m.SVG
		}
	}
	if info == nil || !(info.Ceilings.PeakGFLOPS > 0) || !(info.Ceilings.BandwidthGBs > 0) || info.Predict["gonum"] != 5 || info.GPU.Name != "T4" {
		t.Fatalf("roofline info %+v", info)
	}
	for _, want := range []string{"Roofline", "this machine", "T4 FP32, datasheet (not measured)", "hollow: your prediction"} {
		if !strings.Contains(lastSVG, want) {
			t.Errorf("chart lacks %q", want)
		}
	}
	var c roofline.Ceilings
	err := getJSON(t, base+"/api/roofline", &c)
	if err != nil || c != info.Ceilings {
		t.Errorf("/api/roofline %+v (%v), want the same ceilings as the cell %+v", c, err, info.Ceilings)
	}
}

func TestAllReduceCell(t *testing.T) {
	_, base := startServer(t, Config{})
	ws := dial(t, base)
	src := "gradient_mb: 100\ngpus: [2, 8]\nlinks: {a: 10, b: 100}"
	if err := ws.WriteJSON(Message{Type: TypeRun, ID: "ar", RunRequest: &RunRequest{Lesson: "12-many-gpus", Cell: "12-many-gpus-0", Source: src}}); err != nil {
		t.Fatal(err)
	}
	msgs := collect(t, ws, "ar", 10*time.Second)
	var pts []string
	charts := 0
	for _, m := range msgs {
		if m.Type == TypeAllReduce {
			pts = append(pts, fmt.Sprintf("%s/%d", m.AllReduce.Link, m.AllReduce.GPUs))
		}
		if m.Type == TypeChart && strings.Contains(m.SVG, "modelled, not measured") {
			charts++
		}
	}
	if strings.Join(pts, ",") != "a/2,a/8,b/2,b/8" || charts != 1 || msgs[len(msgs)-1].Type != TypeDone {
		t.Errorf("got points %v, %d charts, last %s", pts, charts, msgs[len(msgs)-1].Type)
	}
}

func TestSIMTWatch(t *testing.T) {
	_, base := startServer(t, Config{})
	ws := dial(t, base)
	src := "kernels: [naive]\nn: 16\nwatch: true"
	if err := ws.WriteJSON(Message{Type: TypeRun, ID: "w", RunRequest: &RunRequest{Lesson: "09-why-coalescing-matters", Cell: "09-why-coalescing-matters-1", Source: src}}); err != nil {
		t.Fatal(err)
	}
	frames, simtAt, lastWarpsAt := 0, -1, -1
	for i, m := range collect(t, ws, "w", 20*time.Second) {
		switch m.Type {
		case TypeWarps:
			frames += len(m.Warps)
			lastWarpsAt = i
			if len(m.Warps) > framesPerMessage {
				t.Errorf("a warps message of %d frames", len(m.Warps))
			}
		case TypeSIMT:
			simtAt = i
		}
	}
	// naive at n=16, block 32×8, grid 1×2: block (0,0) has 8 warps (16 of their lanes active), each with
	// 16 loads of A, 16 of B and 1 store of C.
	if frames != 8*33 || lastWarpsAt > simtAt {
		t.Errorf("got %d frames (last batch at %d, counts at %d), want 264 before the counts", frames, lastWarpsAt, simtAt)
	}
}
