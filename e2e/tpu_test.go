package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"image/color"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/gpuplayground/playground/chart"
)

// A tpu cell in a real browser: the kind's module plays the modelled pipeline as a timeline (copies
// against compute, the current step outlined), the product and time tables arrive, and the status says
// the numbers are modelled.
func TestTPUCellInBrowser(t *testing.T) {
	p := openPage(t, 1200, 1000)
	ctx := p.ctx
	cell := cellSel("the-tpu-as-a-system-0")
	p.open("the-tpu-as-a-system")
	p.do("running the tpu cell", chromedp.Click(chromedp.CSS(cell+" .cell-run")), waitVisible(chromedp.CSS(cell+`[data-state="ended"]`)),
		waitVisible(chromedp.CSS(cell+" svg.tpu-timeline rect")))
	count := func(sel string) int {
		t.Helper()
		n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll(`+strconv.Quote(sel)+`).length`))
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	text := func(sel string) string {
		t.Helper()
		s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
		if err != nil {
			t.Fatalf("reading %s: %v", sel, err)
		}
		return s
	}
	if rows, times := count(cell+" .cell-table[data-table=tpu] tbody tr"), count(cell+" .cell-table[data-table=time] tbody tr"); rows != 1 || times != 5 {
		t.Errorf("%d tpu rows, %d time rows; want 1 and 5", rows, times)
	}
	if bars := count(cell + " svg.tpu-timeline rect"); bars < 2 {
		t.Errorf("timeline has %d bars, want copies and compute", bars)
	}
	if status := text(cell + " .cell-status"); !strings.Contains(status, "modelled") {
		t.Errorf("status %q, want it to say modelled", status)
	}
	if pos := text(cell + " .player-pos"); !strings.Contains(pos, "of 64") {
		t.Errorf("player position %q, want the first 64 grid steps", pos)
	}
	// The timeline's axis covers only those steps: its legend says so, not a folded note.
	if part := text(cell + " .tpu-legend .tpu-part"); !strings.Contains(part, "The timeline shows the first 64 of the kernel's") || !strings.Contains(part, "axis ends with the last of them") {
		t.Errorf("the legend's note on the steps shown: %q", part)
	}
	if n := count(cell + " .cell-notes li"); strings.Contains(text(cell+" .cell-notes"), "The timeline shows the first") {
		t.Errorf("the note on the steps shown is still among the %d notes", n)
	}
	p.errs.check(t, "tpu cell")
}

// The TPU timeline on a 390 px phone in the dark theme: it is laid out for its width (lane names
// above the lanes, nothing wider than its box), every text is 11 px or more on screen, and each
// meets WCAG AA contrast (4.5:1) on the background behind it. CHART_SHOTS=dir saves a screenshot
// of it there.
func TestTPUTimelineReadableNarrowAndDark(t *testing.T) {
	p := openPage(t, 390, 844)
	p.do("dark theme", chromedp.EmulateViewport(390, 844), chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "dark"}}})
		return err
	}))
	cell := cellSel("the-tpu-as-a-system-0")
	p.open("the-tpu-as-a-system")
	p.do("running the tpu cell", chromedp.Click(chromedp.CSS(cell+" .cell-run")), waitVisible(chromedp.CSS(cell+`[data-state="ended"]`)),
		waitVisible(chromedp.CSS(cell+" svg.tpu-timeline rect")))
	var texts []struct {
		Text, Fill, Bg string
		Px, Right      float64
	}
	js := `(() => {
  const svg = document.querySelector(` + strconv.Quote(cell+" svg.tpu-timeline") + `);
  const box = svg.getBoundingClientRect(), scale = box.width / svg.viewBox.baseVal.width;
  let bg = "", e = svg;
  while (e && (!bg || bg === "rgba(0, 0, 0, 0)")) { bg = getComputedStyle(e).backgroundColor; e = e.parentElement; }
  const stage = svg.parentElement.getBoundingClientRect();
  return JSON.stringify([...svg.querySelectorAll("text")].map(t => ({text: t.textContent, fill: getComputedStyle(t).fill, bg,
    px: parseFloat(getComputedStyle(t).fontSize) * scale, right: t.getBoundingClientRect().right - stage.right})));
})()`
	if err := json.Unmarshal([]byte(p.str(js)), &texts); err != nil {
		t.Fatal(err)
	}
	if len(texts) < 5 {
		t.Fatalf("%d texts in the timeline, want the lane names and the axis", len(texts))
	}
	for _, tx := range texts {
		fg, bg := cssRGB(t, tx.Fill), cssRGB(t, tx.Bg)
		if r := chart.Contrast(fg, bg); r < 4.5 {
			t.Errorf("%q: %s on %s, contrast %.2f:1, want ≥ 4.5:1", tx.Text, tx.Fill, tx.Bg, r)
		}
		if tx.Px < 11 {
			t.Errorf("%q: %.1f px on screen, want ≥ 11", tx.Text, tx.Px)
		}
		if tx.Right > 0.5 {
			t.Errorf("%q: ends %.1f px right of the timeline's box", tx.Text, tx.Right)
		}
	}
	if dir := os.Getenv("CHART_SHOTS"); dir != "" {
		png, err := chromedp.Run(p.ctx, chromedp.Screenshot(chromedp.CSS(cell+" .cell-tpu")))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "390-dark-tpu-timeline.png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	p.errs.check(t, "tpu cell")
}

// cssRGB reads a computed CSS colour, rgb(r, g, b) or rgba(r, g, b, a) (opaque).
func cssRGB(t *testing.T, s string) color.RGBA {
	t.Helper()
	var r, g, b uint8
	if _, err := fmt.Sscanf(strings.TrimPrefix(strings.TrimPrefix(s, "rgba("), "rgb("), "%d, %d, %d", &r, &g, &b); err != nil {
		t.Fatalf("colour %q: %v", s, err)
	}
	return color.RGBA{r, g, b, 0xff}
}
