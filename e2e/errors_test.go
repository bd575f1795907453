package e2e

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// errorBelowButtons reports where cell's error status lies against its buttons, "" when it lies
// below every button on a line of its own, starting where the controls start.
func errorBelowButtons(p *browserPage, cell string) string {
	return p.str(`(() => {
		const cell = document.querySelector(` + strconv.Quote(cell) + `);
		const st = cell.querySelector(".cell-status").getBoundingClientRect();
		const ctl = cell.querySelector(".cell-controls").getBoundingClientRect();
		const low = Math.max(...[...cell.querySelectorAll(".cell-controls button")].map((b) => b.getBoundingClientRect().bottom));
		if (st.top < low - 0.5) return "the error starts at y " + st.top + ", beside the buttons (their bottom at " + low + ")";
		if (Math.abs(st.left - ctl.left) > 1) return "the error starts at x " + st.left + ", not at the controls' left " + ctl.left;
		return "";
	})()`)
}

// A run's error lies on its own line below the buttons, never beside them; a compiler's error
// (Your first CUDA kernel's cuda cell, where this machine has a compiler) shows the learner's line and message
// first, and the compiler's name and code after, at its end.
func TestErrorsBelowTheButtonsInBrowser(t *testing.T) {
	p := openPage(t, 1200, 1000)
	cell := cellSel("counting-flops-0")
	p.open("counting-flops")
	p.do("unknown kernel", setCellSource(cell, "kernels: [fast]\nsizes: [8]\n"),
		chromedp.Click(chromedp.CSS(cell+" .cell-run")),
		waitVisible(chromedp.CSS(cell+`[data-state="error"]`)))
	status := p.str(`document.querySelector(` + strconv.Quote(cell+" .cell-status") + `).textContent`)
	if !strings.Contains(status, `unknown kernel "fast"`) || !strings.Contains(status, "webgpu-tiled") {
		t.Errorf("unknown kernel: status %q, want every valid kernel named, webgpu-tiled among them", status)
	}
	// A short error, which would fit beside the buttons, goes below them too.
	p.do("short error", setCellSource(cell, "kernels: [ikj]\nsizes: [0]\n"),
		chromedp.Click(chromedp.CSS(cell+" .cell-run")),
		waitVisible(chromedp.CSS(cell+`[data-state="error"]`)))
	if where := errorBelowButtons(p, cell); where != "" {
		t.Errorf("short error %q: %s", p.str(`document.querySelector(`+strconv.Quote(cell+" .cell-status")+`).textContent`), where)
	}

	kcell := cellSel("first-cuda-kernel-0")
	p.open("first-cuda-kernel")
	src := p.str(`document.querySelector(` + strconv.Quote(kcell) + `).playground.getSource()`)
	broken := strings.Replace(src, "float sum = 0.0f;", "float sum = 0.0f + undefined_x;", 1)
	if broken == src {
		t.Fatalf("first-cuda-kernel's cuda cell has no line %q to break", "float sum = 0.0f;")
	}
	p.do("compile error", setCellSource(kcell, broken),
		chromedp.Click(chromedp.CSS(kcell+" .cell-action[data-action=ptx]")),
		waitVisible(chromedp.CSS(kcell+`[data-state="error"]`)))
	status = p.str(`document.querySelector(` + strconv.Quote(kcell+" .cell-status") + `).textContent`)
	if !strings.Contains(status, "does not compile") {
		t.Skipf("no compiler here: %q", status)
	}
	want := 0 // the broken line's number in the cell
	for i, l := range strings.Split(broken, "\n") {
		if strings.Contains(l, "undefined_x") {
			want = i + 1
		}
	}
	lines := strings.Split(status, "\n")
	if !strings.HasPrefix(lines[0], fmt.Sprintf("line %d: error: ", want)) || !strings.Contains(lines[0], "undefined_x") ||
		!strings.HasPrefix(lines[len(lines)-1], "The kernel does not compile (") {
		t.Errorf("compile error %q: want the cell's line %d and the compiler's message first, the compiler's name and code in the last line", status, want)
	}
	if where := errorBelowButtons(p, kcell); where != "" {
		t.Errorf("compile error: %s", where)
	}
	p.errs.check(t, "errors")
}
