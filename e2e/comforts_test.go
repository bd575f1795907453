package e2e

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// A challenge's verdict follows the cell's latest run (a later run that fails clears "Challenge
// met"), and the index marks the lesson with the experiments run and the challenges met in this
// browser.
func TestChallengeVerdictAndProgressMarksInBrowser(t *testing.T) {
	p := openPage(t, 1200, 1000)
	p.open("the-tpu-as-a-system")
	cell := `[data-cell="tpu-challenge"]`
	verdict := func() string {
		return p.str(`document.querySelector(".goal-challenge .goal-verdict").textContent`)
	}
	solution := "generation: v5p\nm: 8192\nk: 8192\nn: 8192\ndtype: bf16\nbm: 512\nbk: 1024\nbn: 1024\n"
	p.do("run the solution", setCellSource(cell, solution), chromedp.Click(chromedp.CSS(cell+" .cell-run")),
		waitVisible(chromedp.CSS(cell+`[data-state="ended"]`)))
	if got := verdict(); !strings.HasPrefix(got, "Challenge met") {
		t.Fatalf("after the solution: verdict %q, want Challenge met", got)
	}
	p.do("run a broken edit", setCellSource(cell, "generation: v99\n"), chromedp.Click(chromedp.CSS(cell+" .cell-run")),
		waitVisible(chromedp.CSS(cell+`[data-state="error"]`)))
	if got, want := verdict(), "Not yet: the run ended with an error."; got != want {
		t.Errorf("after a failed run: verdict %q, want %q", got, want)
	}

	p.do("open the index", chromedp.Navigate(p.base+"/"), waitVisible(chromedp.CSS(".lesson-search")))
	li := `.lessons li[data-slug="the-tpu-as-a-system"]`
	mark := p.str(`document.querySelector(` + strconv.Quote(li+" .progress-mark") + `).textContent`)
	cells := p.str(`document.querySelector(` + strconv.Quote(li) + `).dataset.cells`)
	if want := "1 of " + cells + " experiments run, 1 of 1 challenge met"; mark != want {
		t.Errorf("index mark %q, want %q", mark, want)
	}
	if got := p.str(`document.querySelector('.lessons li[data-slug="why-gpus"] .progress-mark').hidden + ""`); got != "true" {
		t.Errorf("a lesson never opened shows a mark (hidden=%s)", got)
	}
	p.errs.check(t, "challenge verdict and progress marks")
}

// The index page's search finds a lesson's section by words of its text and links to its heading;
// clearing the box brings the lesson list back.
func TestSearchInBrowser(t *testing.T) {
	p := openPage(t, 1200, 1000)
	p.do("open the index", chromedp.Navigate(p.base+"/"), waitVisible(chromedp.CSS(".lesson-search")),
		chromedp.SendKeys(chromedp.CSS("#lesson-search"), "bank conflicts"),
		// The search runs 120 ms after the last keystroke, and a slow machine types slower than
		// that: wait for the results of the whole query (a mark of the last word whole), not of a
		// prefix of it.
		pollUntil(`[...document.querySelectorAll(".search-results mark")].some((m) => m.textContent.toLowerCase() === "conflicts")`))
	links := p.str(`[...document.querySelectorAll(".search-results a")].map((a) => a.getAttribute("href")).join(" ")`)
	if !strings.Contains(links, "/lessons/shared-memory-tiling#") {
		t.Errorf("results %q, want a section of shared-memory-tiling", links)
	}
	if got := p.str(`document.querySelector(".search-results mark").textContent.toLowerCase()`); got != "bank" && got != "conflicts" {
		t.Errorf("marked %q, want a word searched for", got)
	}
	if got := p.str(`document.querySelector("ol.lessons").hidden + ""`); got != "true" {
		t.Error("the lesson list stays shown under the results")
	}
	p.do("clear", chromedp.SendKeys(chromedp.CSS("#lesson-search"), "\x1b"), waitVisible(chromedp.CSS("ol.lessons")))
	p.do("search for nothing", chromedp.SendKeys(chromedp.CSS("#lesson-search"), "zzqxv"),
		waitVisible(chromedp.CSS(".search-status")))
	// As above, a prefix of the query may be searched first: wait for the whole one's status.
	want := "No lesson mentions “zzqxv”."
	ctx, cancel := context.WithTimeout(p.ctx, time.Minute)
	defer cancel()
	if _, err := chromedp.Run(ctx, pollUntil(`document.querySelector(".search-status").textContent === `+strconv.Quote(want))); err != nil {
		t.Errorf("status %q, want %q", p.str(`document.querySelector(".search-status").textContent`), want)
	}
	p.errs.check(t, "search")
}
