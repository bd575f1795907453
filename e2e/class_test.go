package e2e

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/gpuplayground/playground/server"
)

// The instructor's /class in a real browser at 1,280 px: nothing wider than the window outside the
// tables' own scroll boxes, buttons in the app's accent style (not the browser's), the cell picker
// filled with the chosen lesson's cells (Show enabled once one is picked), no phantom student (the
// local user of a server without sign-in is not one), the progress grid drawn, no script error.
func TestClassPageInBrowser(t *testing.T) {
	p := openPageWith(t, 1280, 900, server.Config{})
	p.do("the class page", chromedp.Navigate(p.base+"/class"), chromedp.WaitVisible(chromedp.CSS(`#machines tr`)),
		chromedp.WaitVisible(chromedp.CSS(`#progress tr`)), chromedp.WaitVisible(chromedp.CSS(`#students tr`)))
	wide := p.str(`[...document.querySelectorAll("body *")].filter((e) => e.getBoundingClientRect().right > window.innerWidth + 1 && !e.closest(".class-scroll")).slice(0, 5).map((e) => e.tagName + "." + e.className + " " + Math.round(e.getBoundingClientRect().right)).join(", ")`)
	if wide != "" || p.str(`String(document.documentElement.scrollWidth <= window.innerWidth)`) != "true" {
		t.Errorf("wider than the 1,280 px window: %s (page %s px)", wide, p.str(`String(document.documentElement.scrollWidth)`))
	}
	accent := p.str(`(() => { const d = document.createElement("div"); d.style.color = "var(--accent)"; document.body.append(d); const c = getComputedStyle(d).color; d.remove(); return c; })()`)
	if got := p.str(`getComputedStyle(document.getElementById("pause")).backgroundColor`); got != accent {
		t.Errorf("the Pause button's background: got %s, want the accent %s", got, accent)
	}
	cells := p.str(`[...document.querySelectorAll("#cell-pick option")].map((o) => o.value).join(" ")`)
	if !strings.HasPrefix(cells, " ") || len(strings.Fields(cells)) == 0 {
		t.Errorf("the cell picker: got %q, want all cells then the first lesson's cell ids", cells)
	}
	if p.str(`String(document.getElementById("show-board").disabled)`) != "true" {
		t.Error("Show is enabled with no cell picked")
	}
	p.do("picking a cell", evalDo(`const s = document.getElementById("cell-pick"); s.selectedIndex = 1; s.dispatchEvent(new Event("change"))`))
	if p.str(`String(document.getElementById("show-board").disabled)`) != "false" {
		t.Error("Show stays disabled with a cell picked")
	}
	if got := p.str(`document.getElementById("students").textContent`); !strings.Contains(got, "No student has joined yet") || strings.Contains(got, "this computer") {
		t.Errorf("the students without sign-in: %q, want none (no phantom local user)", got)
	}
	if got := p.str(`document.querySelectorAll("#progress-head th").length > 1 ? "ok" : document.getElementById("progress").textContent`); got != "ok" {
		t.Errorf("the progress grid has no lesson columns: %s", got)
	}
	p.errs.check(t, "class page")
}
