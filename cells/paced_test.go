package cells_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gpuplayground/playground/cells"
	"github.com/gpuplayground/playground/cells/cellstest"
)

// Paced keeps the events' order, batches frames, throttles progress (the last always goes out) and
// charts (the last offered is drawn by Flush), on a fake clock.
func TestPaced(t *testing.T) {
	var out cellstest.Recorder
	at := time.Unix(1e9, 0)
	p := &cells.Paced{Out: &out, Now: func() time.Time { return at }}
	for i := range cells.FramesPerBatch + 5 {
		p.Frames(i)
	}
	p.Note("info", "after the frames")
	p.Progress(1, 10)
	p.Progress(2, 10) // same instant: dropped
	p.Progress(10, 10)
	drawn := 0
	for i := range 3 {
		p.Chart(func() (string, error) { drawn++; return fmt.Sprint(i), nil })
	}
	p.Flush()
	if len(out.Animation) != cells.FramesPerBatch+5 || len(out.Notes) != 1 || out.Done != [2]int{10, 10} || drawn != 2 || out.SVG != "2" {
		t.Errorf("frames %d, notes %v, progress %v, charts drawn %d (last %q); want all frames, 1 note, 10/10, 2 drawn ending with 2",
			len(out.Animation), out.Notes, out.Done, drawn, out.SVG)
	}
	if _, err := cells.Ask(context.Background(), p, "task"); err != cells.ErrNoBrowser || !strings.Contains(err.Error(), "no browser page") {
		t.Errorf("Ask with no page behind Out: %v, want ErrNoBrowser", err)
	}
}

// placer is a recorder that keeps where its run was placed.
type placer struct {
	cellstest.Recorder
	placed []string
}

func (p *placer) Placed(name, summary string) { p.placed = append(p.placed, name+" | "+summary) }

// Placed reaches the Placer behind Paced and a staged emitter, after the frames batched before it;
// with none behind, it is the note "Ran on SUMMARY.".
func TestPlaced(t *testing.T) {
	var pl placer
	p := &cells.Paced{Out: &pl}
	p.Frames(1)
	cells.Placed(cells.Stage(p, 0, 2), "gpu-box", "gpu-box (class h100; 16 cores; GPU H100)")
	if len(pl.placed) != 1 || pl.placed[0] != "gpu-box | gpu-box (class h100; 16 cores; GPU H100)" || len(pl.Animation) != 1 || len(pl.Notes) != 0 {
		t.Errorf("placed %q, frames %d, notes %v; want one placement after the frame, no note", pl.placed, len(pl.Animation), pl.Notes)
	}
	var out cellstest.Recorder
	cells.Placed(&cells.Paced{Out: &out}, "gpu-box", "gpu-box (16 cores)")
	if len(out.Notes) != 1 || !strings.Contains(fmt.Sprint(out.Notes[0]), "Ran on gpu-box (16 cores).") {
		t.Errorf("notes %v, want the Ran on note", out.Notes)
	}
}

// A chart that draws "" (nothing to show) is not sent.
func TestPacedSkipsEmptyChart(t *testing.T) {
	var out cellstest.Recorder
	p := &cells.Paced{Out: &out, Now: func() time.Time { return time.Unix(1e9, 0) }}
	p.Chart(func() (string, error) { return "", nil })
	p.Flush()
	if out.Charts != 0 || out.SVG != "" {
		t.Errorf("got %d charts (%q), want none", out.Charts, out.SVG)
	}
}

// progressCounter counts the progress events it gets.
type progressCounter struct {
	cellstest.Recorder
	n int
}

func (c *progressCounter) Progress(done, total int) { c.n++; c.Recorder.Progress(done, total) }

// With Slack, events a little sooner than the intervals apart (a paced stream's network jitter)
// pass; with none, every other one is throttled.
func TestPacedSlack(t *testing.T) {
	for _, tt := range []struct {
		slack       float64
		want, drawn int
	}{{0, 3, 3}, {0.5, 5, 5}} {
		var out progressCounter
		at := time.Unix(1e9, 0)
		p := &cells.Paced{Out: &out, Now: func() time.Time { return at }, Slack: tt.slack}
		for i := range 5 {
			p.Progress(i, 10)
			at = at.Add(cells.ProgressEvery * 3 / 4)
		}
		drawn := 0
		for i := range 5 {
			p.Chart(func() (string, error) { drawn++; return fmt.Sprint(i), nil })
			at = at.Add(cells.ChartEvery * 3 / 4)
		}
		if out.n != tt.want || drawn != tt.drawn {
			t.Errorf("slack %v: %d progress events and %d charts drawn of 5 each 3/4 of the interval apart, want %d and %d",
				tt.slack, out.n, drawn, tt.want, tt.drawn)
		}
	}
}
