package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// A run's status line is honest about time: past its estimate it says the estimate was too short
// instead of "13 s of about 3.5 s", and a queued run's expected start counts down.
func TestStatusRevisesEstimatesInBrowser(t *testing.T) {
	p := openPage(t, 1200, 900)
	p.open("counting-flops")
	cell := `document.querySelector(".cell").playground`
	status := func(js string) string {
		return p.str(`(() => { const c = ` + cell + `; ` + js + `; return c.status.textContent; })()`)
	}
	if got, want := status(`c.runId = "test#1"; c.t0 = performance.now() - 2000; c.estimate = 3.5; c.tick()`), "running… 2.0 s of about 3.5 s"; got != want {
		t.Errorf("within the estimate: %q, want %q", got, want)
	}
	if got, want := status(`c.t0 = performance.now() - 13000; c.tick()`), "running… 13 s; taking longer than the 3.5 s estimate"; got != want {
		t.Errorf("past the estimate: %q, want %q", got, want)
	}
	first := status(`c.queuedStatus(3, 29)`)
	if want := "queued: 2 run(s) ahead of yours, starts in about 29 s (estimate)"; first != want {
		t.Errorf("queued: %q, want %q", first, want)
	}
	// The clock ticks each second: wait for the wait shown to go down (a hang guard, not a budget).
	countedDown := func(s string) bool {
		var left int
		_, err := fmt.Sscanf(strings.TrimPrefix(s, "queued: 2 run(s) ahead of yours, starts in about "), "%d s", &left)
		return err == nil && left < 29
	}
	later := status(``)
	for deadline := time.Now().Add(time.Minute); !countedDown(later) && time.Now().Before(deadline); later = status(``) {
		time.Sleep(100 * time.Millisecond)
	}
	if !countedDown(later) {
		t.Errorf("a minute later: %q, want the wait counted down", later)
	}
	if got, want := status(`c.queuedStatus(1, 0.5)`), "queued: next to run"; got != want {
		t.Errorf("next, no wait: %q, want %q", got, want)
	}
	p.str(cell + `.end("done", false); ""`)
	p.errs.check(t, "status")
}

// Results of an earlier run (shared, or shown again) say when they were measured instead of "just
// now"; the "Run anyway" button beside shared results has the cell's button style.
func TestEarlierResultsSayWhenInBrowser(t *testing.T) {
	p := openPage(t, 1200, 900)
	p.open("counting-flops")
	caption := p.str(`(async () => {
  const { CellView } = await import("/static/view.js");
  const view = new CellView(document.querySelector(".cell"));
  view.earlier = "2026-11-25T20:53:09Z";
  view.addTable({ id: "results", caption: "Measured on this server just now (median of the timed repeats, after a warm-up)", columns: [{ label: "kernel" }] });
  return view.output.querySelector("caption").textContent;
})()`)
	if strings.Contains(caption, "just now") || !strings.Contains(caption, "Measured on this server in the run that ended ") || !strings.Contains(caption, "2026") {
		t.Errorf("an earlier run's caption: %q", caption)
	}
	status := p.str(`(async () => {
  const { CellView } = await import("/static/view.js");
  const { measuredDone } = await import("/static/measured.js");
  const view = new CellView(document.querySelector(".cell"));
  view.earlier = "2026-11-25T20:53:09Z";
  view.shared = true;
  view.addTable({ id: "results", caption: "Measured on this server just now", columns: [{ label: "kernel" }] });
  view.addRow({ table: "results", values: ["naive"] });
  return measuredDone(view);
})()`)
	if !strings.HasPrefix(status, "1 result, measured on this server in the run that ended ") || !strings.Contains(status, "2026") {
		t.Errorf("shared results' status: %q, want when they were measured", status)
	}
	style := p.str(`(() => {
  document.querySelector(".cell").playground.offerRunAnyway();
  const b = document.querySelector(".cell .cell-run-anyway"), run = document.querySelector(".cell .cell-run");
  const s = getComputedStyle(b), r = getComputedStyle(run);
  return [s.borderTopColor === r.borderTopColor, s.borderTopLeftRadius === r.borderTopLeftRadius, s.fontWeight === r.fontWeight, s.cursor].join(" ");
})()`)
	if want := "true true true pointer"; style != want {
		t.Errorf("Run anyway against Run (border colour, radius, weight; cursor): %q, want %q", style, want)
	}
	p.errs.check(t, "earlier results")
}
