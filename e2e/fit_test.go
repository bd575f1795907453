package e2e

import (
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// A run refused as estimated over the run time limit offers the largest of the cell's sizes that
// fit as one button: pressed, it puts the source that asks for them in the editor and runs it.
func TestRefusedRunOffersTheSizesThatFitInBrowser(t *testing.T) {
	p := openPage(t, 1200, 1000)
	cell := cellSel("counting-flops-0")
	p.open("counting-flops")
	p.do("refused", setCellSource(cell, "kernels: [naive]\nsizes: [32, 4096, 16]\ndtype: float64\nrepeats: 1\n"),
		chromedp.Click(chromedp.CSS(cell+" .cell-run")),
		waitVisible(chromedp.CSS(cell+" .cell-fit")))
	if label := p.str(`document.querySelector(` + strconv.Quote(cell+" .cell-fit") + `).textContent`); !strings.HasPrefix(label, "Run at n = 32, 16") {
		t.Errorf("button %q, want it to name the sizes that fit, 32 and 16", label)
	}
	p.do("fit", chromedp.Click(chromedp.CSS(cell+" .cell-fit")),
		waitVisible(chromedp.CSS(cell+`[data-state="ended"]`)))
	if src := p.str(`document.querySelector(` + strconv.Quote(cell) + `).playground.getSource()`); !strings.Contains(src, "sizes: [32, 16]\n") {
		t.Errorf("source after the click %q, want sizes: [32, 16]", src)
	}
	if n := p.str(`String(document.querySelectorAll(` + strconv.Quote(cell+" .cell-fit") + `).length)`); n != "0" {
		t.Errorf("%s offer buttons after the run, want none", n)
	}
	p.errs.check(t, "fit")
}
