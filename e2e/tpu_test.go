package e2e

import (
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// A tpu cell in a real browser: the kind's module plays the modelled pipeline as a timeline (copies
// against compute, the current step outlined), the product and time tables arrive, and the status says
// the numbers are modelled.
func TestTPUCellInBrowser(t *testing.T) {
	p := openPage(t, 1200, 1000)
	ctx := p.ctx
	cell := cellSel("the-tpu-as-a-system-0")
	p.open("the-tpu-as-a-system")
	p.do("running the tpu cell", chromedp.Click(chromedp.CSS(cell+" .cell-run")), chromedp.WaitVisible(chromedp.CSS(cell+`[data-state="ended"]`)),
		chromedp.WaitVisible(chromedp.CSS(cell+" svg.tpu-timeline rect")))
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
