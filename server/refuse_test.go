package server

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpuplayground/playground/cells"
	"github.com/gpuplayground/playground/gpu/nvidia"
	"github.com/gpuplayground/playground/harness"
	"github.com/gpuplayground/playground/machine"
	"github.com/gpuplayground/playground/measure"
)

// ladderCell emulates cuda-naive (no GPU here) and has recorded cublas rows at each of its sizes.
const ladderCell = "id: ladder\nkernels: [cuda-naive, cublas]\nsizes: [64, 512, 256]\ndtype: float32\nrepeats: 1\n"

// recordedServer serves one lesson, "k", whose cell ladderCell has a recording (cublas at 64, 256
// and 512), on a server without a GPU and with the run time limit limit (0: the default).
func recordedServer(t *testing.T, limit time.Duration) (*Server, string) {
	t.Helper()
	dir := t.TempDir()
	lesson := "---\ntitle: K\nsummary: s\norder: 1\n---\n\n```matmul\n" + ladderCell + "```\n"
	rec := cells.Recording{Cell: "ladder", SourceSHA256: cells.SourceHash(ladderCell), Device: "NVIDIA H200", Driver: "13.0",
		Date: "2026-11-26T00:00:00Z", Command: "record -cells ladder"}
	for _, n := range []int{64, 256, 512} {
		rec.Results = append(rec.Results, measure.Result{Kernel: "cublas", N: n, DType: "float32", Seconds: 1e-5, GFLOPS: 50, OK: true})
	}
	b, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "recorded"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"k.md": []byte(lesson), "recorded/ladder.json": b} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return startServer(t, Config{Config: machine.Config{Devices: func(context.Context) nvidia.Report {
		return nvidia.Report{Unavailable: "no CUDA device: libcuda.so.1 not found"}
	}, Limits: harness.Limits{RunTimeout: limit}}, LessonsDir: dir, RunRate: -1})
}

// A run refused as estimated over the run time limit still shows the cell's recorded GPU rows, and
// its error carries the largest of the cell's sizes that fit (in the cell's order, with the source
// that asks for them), which the server then accepts: one click on the page.
func TestRefusedRunShowsRecordedRowsAndTheSizesThatFit(t *testing.T) {
	// The limit falls between the cell's estimate without its largest size and with it.
	s, _ := recordedServer(t, 0)
	l := s.lesson("k")
	cell, _ := l.Cell("ladder")
	est := func(sizes string) time.Duration {
		_, d, err := s.parse(cell, "", strings.Replace(ladderCell, "[64, 512, 256]", sizes, 1), "")
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	fits, full := est("[64, 256]"), est("[64, 512, 256]")
	if fits >= full {
		t.Fatalf("estimates %v without n=512, %v with it: want less without", fits, full)
	}
	limit := (fits + full) / 2
	_, base := recordedServer(t, limit)
	ws := dial(t, base)
	if err := ws.WriteJSON(Message{Type: TypeRun, ID: "r", RunRequest: &RunRequest{Lesson: "k", Cell: "ladder", Source: ladderCell}}); err != nil {
		t.Fatal(err)
	}
	msgs := collect(t, ws, "r", 30*time.Second)
	end := msgs[len(msgs)-1]
	if end.Type != TypeError || !strings.Contains(end.Message, "over the "+limit.String()+" run time limit") {
		t.Fatalf("got %s %q, want refused over the %v limit", end.Type, end.Message, limit)
	}
	if got, want := column(rowsOf(t, msgs, "recorded"), "n"), []string{"64", "256", "512"}; !slices.Equal(got, want) {
		t.Errorf("recorded rows at n = %v, want %v", got, want)
	}
	wantSrc := strings.Replace(ladderCell, "sizes: [64, 512, 256]", "sizes: [64, 256]", 1)
	if f := end.Fit; f == nil || !slices.Equal(f.Sizes, []int{64, 256}) || f.Source != wantSrc || f.Estimate != fits.Seconds() {
		t.Fatalf("fit %+v, want sizes [64 256] with the source %q, estimated %v", f, wantSrc, fits)
	}
	if err := ws.WriteJSON(Message{Type: TypeRun, ID: "f", RunRequest: &RunRequest{Lesson: "k", Cell: "ladder", Source: end.Fit.Source}}); err != nil {
		t.Fatal(err)
	}
	// Accepted: queued, not refused (how long it then takes on this machine is not the point here).
	if err := ws.WriteJSON(Message{Type: TypeCancel, ID: "f"}); err != nil {
		t.Fatal(err)
	}
	if msgs := collect(t, ws, "f", 60*time.Second); msgs[0].Type != TypeQueued {
		t.Errorf("the fitting sizes: got %s %q first, want queued", msgs[0].Type, msgs[0].Message)
	}
}

// A cell the kind itself refuses at parse as estimated over the run time limit (its CPU kernels'
// price) gets the same offer: the largest of its sizes that fit, as the learner wrote them.
func TestKindsRefusalOffersTheSizesThatFit(t *testing.T) {
	_, base := startServer(t, Config{RunRate: -1})
	ws := dial(t, base)
	src := "kernels: [naive]\nsizes: [128, 4096, 64]\ndtype: float64\nrepeats: 3\n"
	if err := ws.WriteJSON(runMsg("r", src)); err != nil {
		t.Fatal(err)
	}
	msgs := collect(t, ws, "r", 30*time.Second)
	end := msgs[len(msgs)-1]
	if len(msgs) != 1 || end.Type != TypeError || !strings.Contains(end.Message, "use smaller sizes") {
		t.Fatalf("got %+v, want only the kind's refusal", msgs)
	}
	want := "kernels: [naive]\nsizes: [128, 64]\ndtype: float64\nrepeats: 3\n"
	if f := end.Fit; f == nil || !slices.Equal(f.Sizes, []int{128, 64}) || f.Source != want || f.Estimate <= 0 {
		t.Errorf("fit %+v, want sizes [128 64] with the source %q and its estimate", f, want)
	}
}
