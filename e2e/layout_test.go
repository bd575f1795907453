package e2e

import (
	"encoding/json"
	"github.com/chromedp/chromedp"
	"strconv"
	"strings"
	"testing"
)

// fillOutput draws into a cell's output, through the page's own CellView, what a run with many
// notes, two tables (one of 14 columns) and a chart sends.
const fillOutput = `(async () => {
  const { CellView } = await import("/static/view.js");
  const view = new CellView(document.querySelector(".cell"));
  for (let i = 0; i < 4; i++) view.addNote({ level: "info", message: "note " + i });
  const cols = [...Array(14).keys()].map((i) => ({ label: "column number " + i, unit: "GFLOP/s" }));
  view.addTable({ id: "wide", caption: "A wide table", columns: cols });
  view.addRow({ table: "wide", values: cols.map((_, i) => 1234567.5 + i) });
  view.addTable({ id: "small", caption: "A small table", columns: [{ label: "kernel" }, { label: "n" }] });
  view.addRow({ table: "small", values: ["naive", 64] });
  view.setChart('<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 400 300" width="400" height="300"><title>t</title><rect width="400" height="300"/></svg>');
  await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
  return "";
})()`

// boxes are the output's parts top to bottom, with their edges in CSS pixels.
const boxes = `JSON.stringify([...document.querySelector(".cell .cell-output").children].map((e) => {
  const r = e.getBoundingClientRect();
  return { cls: e.className, top: r.top, bottom: r.bottom };
}))`

// A cell's notes, their "more notes" button, its tables and its chart stack, each below the one
// before (a table never sits beside the button or another table); at 390 px a table wider than
// the screen says it scrolls (a hint and a shadow on the edge that hides columns) until scrolled to
// its end.
func TestOutputStacksAndTablesSayTheyScrollInBrowser(t *testing.T) {
	p := openPage(t, 1280, 900)
	for _, width := range []int{1280, 390} {
		// Each width's page is loaded at that width, in the one tab (a second tab would be a
		// browser context of its own, about 1 CPU s of chromium).
		p.do("viewport", chromedp.EmulateViewport(int64(width), 900))
		p.open("counting-flops")
		if got := p.str(`String(innerWidth)`); got != strconv.Itoa(width) {
			t.Fatalf("the page for %d px loaded %s px wide", width, got)
		}
		p.str(fillOutput)
		var parts []struct {
			Cls         string
			Top, Bottom float64
		}
		if err := json.Unmarshal([]byte(p.str(boxes)), &parts); err != nil {
			t.Fatal(err)
		}
		if len(parts) != 5 {
			t.Fatalf("at %d px: %d parts, want notes, button, two tables and a chart: %+v", width, len(parts), parts)
		}
		for i := 1; i < len(parts); i++ {
			if parts[i].Top < parts[i-1].Bottom {
				t.Errorf("at %d px: %q (top %.0f) is beside %q (bottom %.0f), not below it", width, parts[i].Cls, parts[i].Top, parts[i-1].Cls, parts[i-1].Bottom)
			}
		}
		frame := `document.querySelector(".cell-table-box:has([data-table=wide]) .cell-table-frame")`
		hint := `document.querySelector(".cell-table-box:has([data-table=wide]) .cell-table-hint")`
		state := func() string { return p.str(frame + `.dataset.overflow + "|" + ` + hint + `.hidden`) }
		if width == 390 {
			if got, want := state(), "end|false"; got != want {
				t.Errorf("a wide table at 390 px: overflow|hint hidden %q, want %q", got, want)
			}
			p.do("scroll to the end", evalDo(`const s = document.querySelector(".cell-table-box:has([data-table=wide]) .cell-table-scroll"); s.scrollLeft = s.scrollWidth; s.dispatchEvent(new Event("scroll"))`))
			if got, want := state(), "start|false"; got != want {
				t.Errorf("scrolled to its end: %q, want %q", got, want)
			}
		}
		if got, want := p.str(`document.querySelector(".cell-table-box:has([data-table=small]) .cell-table-frame").dataset.overflow + "|" + document.querySelector(".cell-table-box:has([data-table=small]) .cell-table-hint").hidden`), "|true"; got != want {
			t.Errorf("a narrow table at %d px: %q, want no overflow and no hint", width, got)
		}
		p.errs.check(t, "layout")
	}
}

// A lesson's own wide table (parallelism's Table 4) at 390 px scrolls in its frame with a shadow on
// the edge that hides columns, and the page itself does not scroll sideways.
func TestTextTablesSayTheyScrollInBrowser(t *testing.T) {
	p := openPage(t, 390, 900)
	p.open("parallelism")
	frames := `[...document.querySelectorAll("article > .table-frame")]`
	if got := p.str(`String(` + frames + `.length)`); got == "0" {
		t.Fatal("no lesson table is framed")
	}
	if got := p.str(frames + `.map((f) => f.dataset.overflow).join(" ")`); !strings.Contains(got, "end") {
		t.Errorf("the frames' overflow %q: want a wide table to say it hides columns on its end", got)
	}
	if got := p.str(`String(document.documentElement.scrollWidth)`); got != "390" {
		t.Errorf("the page is %s px wide at 390", got)
	}
	p.errs.check(t, "text tables")
}

// wordyTable draws, through the page's CellView, a table like the FlashAttention lesson's: a phrase
// in its last text column and numbers wide enough that at 390 px the table scrolls; it returns the
// phrase's cell height over its line height.
const wordyTable = `(async () => {
  const { CellView } = await import("/static/view.js");
  const view = new CellView(document.querySelector(".cell"));
  const cols = [{ label: "kernel" }, { label: "n" }, { label: "inputs" }, { label: "check" }]
    .concat([...Array(5).keys()].map((i) => ({ label: "counter " + i, unit: "sectors" })), [{ label: "modelled time (bound)", unit: "µs" }]);
  view.addTable({ id: "wordy", caption: "Wordy", columns: cols });
  view.addRow({ table: "wordy", values: ["custom", 256, "float32", "ok", 13312, 53248, 100, 137216, 0, "190 (latency; limit shared memory 19)"] });
  await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
  const td = document.querySelector("[data-table=wordy] tbody td:last-child");
  return String(td.getBoundingClientRect().height / parseFloat(getComputedStyle(td).lineHeight));
})()`

// At 390 px a table that scrolls sideways does not squeeze a phrase into a word a line: the
// FlashAttention lesson's "190 (latency; limit shared memory 19)" took six lines, a row 120 px tall.
func TestTablePhraseNotSqueezedInBrowser(t *testing.T) {
	p := openPage(t, 390, 900)
	p.open("counting-flops")
	lines, err := strconv.ParseFloat(p.str(wordyTable), 64)
	if err != nil {
		t.Fatal(err)
	}
	if lines > 3.5 {
		t.Errorf("the phrase's cell is %.1f lines tall at 390 px, want 3 at most", lines)
	}
	p.errs.check(t, "wordy table")
}
